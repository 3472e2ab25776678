// Importers: profiles written by other tools, turned into runs (or into
// metrics attached to a run). One file per format (folded.cc, hatchet.cc,
// hpctoolkit.cc, ncu.cc, cupti_raw.cc); importers/registry.h lists them for
// cct-import and other front ends.
//
// The format readers return a Tree (the store writes it); a malformed input
// yields kBadInput naming the file and line. They are pure functions of their
// inputs, safe to call from several threads on different inputs. The import
// flows (ImportRequest below) also open the database and write the run.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "output/progress.h"
#include "store/lmdb_env.h"  // kDatabaseFileMode

namespace importers {

struct ImportOptions {
  std::string metric;              // folded: the metric the numbers are (default "samples")
  std::optional<std::string> unit;  // ns|us|ms|s|bytes|count|percent|1; time units are stored as ns
  bool skip_bad_lines = false;
};

struct ImportResult {
  cct::Tree tree;
  size_t records = 0;  // lines (folded) or nodes (hatchet) read
  size_t skipped = 0;  // malformed records skipped (--skip-bad-lines)
  std::string first_skip;  // where the first skipped record was, for the report
  std::vector<std::string> notes;  // what the reader left out and why (ImportNewRun prints them)
  // What the file says about the run (Caliper's globals and Adiak values):
  // `tags` join the run's tags (--tag wins), `user` and `start_time_ns`
  // (0: unknown) its metadata, `globals` are kept whole in its metadata's
  // "import_globals" object.
  std::map<std::string, std::string> tags;
  std::map<std::string, std::string> globals;
  std::string user;
  int64_t start_time_ns = 0;
};

cct::Result<ImportResult> ImportFolded(const std::string& path, const ImportOptions& options);
cct::Result<ImportResult> ImportHatchet(const std::string& path, const ImportOptions& options);
// An HPCToolkit database directory (experiment.xml + *.metric-db): one run;
// each metric-db file (rank, thread) becomes a thread node; metrics keep
// HPCToolkit's names without the " (I)"/" (E)" suffix. --metric/--unit
// convert one metric's numbers (e.g. "CPUTIME (usec)" with unit us).
cct::Result<ImportResult> ImportHpctoolkit(const std::string& dir, const ImportOptions& options);
// An HPCToolkit database directory in the sparse format of hpcprof 2022.10
// on (meta.db + profile.db; cct.db and trace.db are not read): one run, a
// thread node per non-summary profile, labelled as ImportHpctoolkit does.
// ImportHpctoolkit calls it for a directory holding a meta.db.
cct::Result<ImportResult> ImportHpctoolkitSparse(const std::string& dir, const ImportOptions& options);
// Linux perf: a perf.data file (by its magic; `perf script` runs on it in a
// child process, streamed) or the text of `perf script` (its default layout
// or -F comm,[pid,]tid,[time,][period,]event,ip,sym,dso[,srcline]). Threads
// become thread nodes named by comm; callchains (leaf first) are reversed;
// each event's periods a metric (cpu-clock/task-clock: cputime in ns), and
// "samples" counts samples. Streams: memory is the tree plus one line.
cct::Result<ImportResult> ImportPerf(const std::string& path, const ImportOptions& options);
// The same parser over `perf script` text in memory (`name` names it in
// messages); never runs perf.
cct::Result<ImportResult> ParsePerfScript(std::string_view text, const std::string& name,
                                          const ImportOptions& options);
// An Nsight Systems report exported to SQLite (`nsys export --type sqlite`):
// threads, NVTX ranges, the CUDA calls that launched GPU work with their
// kernels, copies, memsets and syncs below them (the collector's GPU
// metrics), CPU samples. nsys.cc describes the tree.
cct::Result<ImportResult> ImportNsys(const std::string& path, const ImportOptions& options);

// pprof's profile.proto, gzipped or not (importers/pprof.cc describes the
// mapping): one metric per sample type, inlined frames as kFrameInlined
// functions, the leaf's line as a source-line node, thread labels as thread
// nodes. A profile decompressing to more than `max_bytes` is refused before
// it is decompressed whole. `where` names the input in messages.
// 256 MiB: Go's largest heap profiles are tens of MiB, and the parsed
// message takes a few times its encoded size.
inline constexpr size_t kMaxPprofBytes = size_t{256} << 20;
cct::Result<ImportResult> ImportPprof(const std::string& path, const ImportOptions& options);
cct::Result<ImportResult> ImportPprofBytes(std::string_view bytes, const std::string& where,
                                           const ImportOptions& options, size_t max_bytes = kMaxPprofBytes);
// speedscope's JSON (speedscope.cc): each profile a thread node; the unit
// picks the metric (time in ns, bytes, or samples), --metric renames it.
cct::Result<ImportResult> ImportSpeedscope(const std::string& path, const ImportOptions& options);
// Caliper's json-split and json output (caliper.cc): ranks and threads as
// thread nodes, times in ns, globals as run metadata and tags.
cct::Result<ImportResult> ImportCaliper(const std::string& path, const ImportOptions& options);

// Nsight Compute: attaches the per-launch metrics of an `ncu --csv --page raw`
// export (also the long `--page details` layout) to the kernel nodes of a
// run's tree, matched by normalized kernel name, NVTX context and launch
// order (ncu.cc describes the rule). Each ncu metric M becomes an
// additive accumulator "M:acc" plus a derived per-launch average "M" =
// M:acc / ncu:count; attaching again replaces the previous values.
struct NcuAttachOptions {
  std::string metric_regex;  // ncu metrics to attach (empty: every numeric one but device__attribute_*)
};
struct NcuAttachResult {
  size_t launches = 0;                 // rows (kernel launches) in the file
  size_t matched = 0;                  // rows attached to a kernel node
  size_t kernel_nodes = 0;             // kernel nodes that received metrics
  std::vector<std::string> unmatched;  // kernel names (as ncu wrote them) with no node, each once
  std::vector<std::string> metrics;    // ncu metric names attached
};
cct::Result<NcuAttachResult> AttachNcuMetrics(const std::string& csv_path, cct::Tree& tree,
                                              const NcuAttachOptions& options);

// Registers an imported additive metric in `tree`: the catalog's description
// (and display settings) when `name` is an additive metric of the catalog,
// else `description`; `unit` as resolved (ResolveImportUnit).
cct::Result<cct::MetricId> RegisterImportedMetric(cct::Tree& tree, const std::string& name, cct::Unit unit,
                                                  const std::string& description);

// Resolves --unit for a metric: the catalog's unit for known names, else the
// given unit (default: count). `scale` converts input numbers to stored ones.
cct::Status ResolveImportUnit(const std::string& metric, const std::optional<std::string>& unit, cct::Unit& out,
                              double& scale);

// What one piece of an input may not exceed, checked while it is read:
//   kLines       a line (folded stacks, CSV)
//   kJsonTokens  a JSON string or number (Hatchet): a document is often one
//                line, so lines mean nothing there; a token is what the
//                parser must hold whole
//   kXmlMarkup   the bytes between two '<' or '>' (HPCToolkit's XML): a tag
//                with its attributes, or a text run, which expat buffers whole
// A longer piece is kBadInput naming it and where it starts, found before
// it is read whole: a 1 GB piece costs at most the bytes before it plus the
// limit.
enum class PieceKind { kLines, kJsonTokens, kXmlMarkup };
struct PieceLimit {
  PieceKind kind = PieceKind::kLines;
  size_t max_bytes = 0;
};

// The longest piece an importer takes (a folded stack of 4096 frames of
// 4 KiB names is 16 MiB; names are stored cut at 64 KiB anyway).
inline constexpr size_t kMaxLineBytes = size_t{16} << 20;

// Opens an input file for reading: its descriptor (the caller closes it), or
// kNotFound / kIo naming the path (a directory is "not a regular file").
cct::Result<int> OpenInputFile(const std::string& path);

// Reads a whole file (kIo / kNotFound on failure), with `limit` when given.
cct::Result<std::string> ReadFile(const std::string& path, std::optional<PieceLimit> limit = std::nullopt);

// Checks pieces of a stream fed to it chunk by chunk (ReadFile's check, for
// importers that read as they parse). Not thread-safe; one per stream.
class PieceChecker {
 public:
  PieceChecker(std::string path, PieceLimit limit) : path_(std::move(path)), limit_(limit) {}
  // The next `len` bytes of the stream; an error once a piece is too long.
  cct::Status Feed(const char* data, size_t len);

 private:
  std::string path_;
  PieceLimit limit_;
  uint64_t offset_ = 0;       // bytes fed so far
  uint64_t lines_ = 1;        // the line `offset_` is on
  uint64_t piece_start_ = 0;  // offset of the piece being read
  uint64_t piece_line_ = 1;   // its line
  bool in_piece_ = true;      // lines and markup: always; JSON: inside a token
  bool in_string_ = false, escaped_ = false;  // JSON
};

// An input file as a std::streambuf read in 1 MiB chunks, for parsers that
// take a std::istream (nlohmann's SAX parser) or pull chunks (Next()). Each
// chunk passes a PieceChecker when a limit is given, and counts toward the
// progress line "importing PATH" on a terminal: a bar against the file's
// size, so a multi-gigabyte import shows how far it is. Owns the descriptor
// and the progress line (erased when the import ends). Not thread-safe.
class InputFileBuf : public std::streambuf {
 public:
  static cct::Result<std::unique_ptr<InputFileBuf>> Open(const std::string& path,
                                                         std::optional<PieceLimit> limit = std::nullopt);
  ~InputFileBuf() override;
  InputFileBuf(const InputFileBuf&) = delete;
  InputFileBuf& operator=(const InputFileBuf&) = delete;

  // The next chunk, empty at the end of the file (pull readers; do not mix
  // with reading through a std::istream).
  cct::Result<std::string_view> Next();
  // Ok, or what ended the stream early: a read error (kIo naming the path)
  // or a piece over the limit (kBadInput). A parser reading through a
  // std::istream sees only the end of the stream; check this first.
  const cct::Status& status() const { return status_; }
  uint64_t size() const { return size_; }  // the file's size when opened (0: unknown)
  // The bytes handed out so far: where a parser reading through a
  // std::istream stands (nlohmann's takes one byte at a time).
  uint64_t offset() const { return done_ - static_cast<uint64_t>(egptr() - gptr()); }
  output::Progress& progress() { return progress_; }

 protected:
  int_type underflow() override;

 private:
  InputFileBuf(int fd, std::string path, uint64_t size, std::optional<PieceLimit> limit);
  bool Fill();

  int fd_;
  std::string path_;
  uint64_t size_, done_ = 0;
  std::optional<PieceChecker> checker_;
  output::Progress progress_;
  std::vector<char> buf_;
  cct::Status status_ = cct::Status::Ok();
};

// Splits a stream fed chunk by chunk into lines (without the '\n') for a
// line-based parser: at most one line is held besides the chunk, and a line
// over kMaxLineBytes is kBadInput naming `name` and the line (PieceChecker).
// The last line needs no '\n'. Not thread-safe.
class LineSplitter {
 public:
  using LineFn = std::function<cct::Status(std::string_view line)>;
  LineSplitter(const std::string& name, LineFn line)
      : checker_(name, PieceLimit{PieceKind::kLines, kMaxLineBytes}), line_(std::move(line)) {}
  cct::Status Feed(std::string_view chunk);
  cct::Status End();  // the last line, when it has no '\n'
  // Every chunk of `file`, then End().
  cct::Status FeedAll(InputFileBuf& file);

 private:
  PieceChecker checker_;
  LineFn line_;
  std::string carry_;
};

// kBadInput "PATH: not valid JSON at byte N (syntax error ...)" from what
// nlohmann's parse_error says (its message trimmed to the syntax error):
// the one message every JSON importer gives for broken JSON.
cct::Status JsonSyntaxError(const std::string& path, size_t byte, const std::string& what);

// What a front end asks of an import flow (importers/registry.h): the
// command line's values, already parsed.
struct ImportRequest {
  std::string tool;     // names the program in fault messages (store::FaultGuard)
  std::string file;     // the input file or directory
  std::string db_path;  // the database (store::DefaultDatabasePath applied)
  std::set<std::string> given;  // the options given, by cct-import name: each flow rejects those it does not take
  ImportOptions options;        // --metric, --unit, --skip-bad-lines
  std::optional<std::string> name;          // --name
  std::map<std::string, std::string> tags;  // --tag
  std::optional<std::string> run;           // --run (importers that attach to a run)
  unsigned db_mode = store::kDatabaseFileMode;  // --db-mode: permissions of a database created here
};

// What an import flow did, for the front end to print: `notes` are
// diagnostics (cct-import prints each as "cct-import: <note>" on stderr,
// before the summary), `summary` the result (stdout, newline-terminated).
struct ImportReport {
  std::vector<std::string> notes;
  std::string summary;
};

// The flows behind the registry (one per format file). A flow fails with
// kInvalidArgument for options that do not apply to its format.
cct::Result<ImportReport> ImportFoldedRun(const ImportRequest& request);
cct::Result<ImportReport> ImportHatchetRun(const ImportRequest& request);
cct::Result<ImportReport> ImportHpctoolkitRun(const ImportRequest& request);
cct::Result<ImportReport> AttachNcuRun(const ImportRequest& request);
cct::Result<ImportReport> ImportCuptiRawRun(const ImportRequest& request);
cct::Result<ImportReport> ImportPerfRun(const ImportRequest& request);
cct::Result<ImportReport> ImportNsysRun(const ImportRequest& request);
cct::Result<ImportReport> ImportPprofRun(const ImportRequest& request);
cct::Result<ImportReport> ImportSpeedscopeRun(const ImportRequest& request);
cct::Result<ImportReport> ImportCaliperRun(const ImportRequest& request);

// The flow of folded, hatchet and hpctoolkit: reads the input with `read`
// and stores the tree as a new run named after the file (or --name), source
// "import:<format>".
using ReadImport = cct::Result<ImportResult> (*)(const std::string& path, const ImportOptions& options);
cct::Result<ImportReport> ImportNewRun(const ImportRequest& request, const std::string& format, ReadImport read);
// kInvalidArgument "--<option> does not apply to --from <format>" for the
// first of `options` that was given.
cct::Status RejectOptions(const ImportRequest& request, const std::vector<std::string>& options,
                          const std::string& format);

}  // namespace importers
