// Raw GPU dumps: what the collector received from the GPU tracing adapter,
// written as it arrived (`cct-record --gpu-raw DIR`), so a run can be rebuilt
// from it later (`cct-import --from cupti-raw FILE`) and CI can replay
// records recorded on a real GPU. docs/format.md ("Raw GPU dumps") has the
// byte layout; it is versioned separately from the database.
//
// A dump is a sequence of records, each framed with its type, length and a
// CRC-32, appended with one write(2) each to a file opened O_APPEND, so a
// crash leaves at most one torn record at the end:
//   header       — format version, pid, the run's metadata JSON at start;
//   correlations — correlation id → launch-site handle (the runtime's) and
//                  the iteration open at the launch, in launch order;
//   batch        — one adapter delivery: the activity buffer's bytes exactly
//                  as CUPTI wrote them, the adapter's own kMemoryApi
//                  activities that followed them, and the dropped count;
//   pc samples   — decoded PC samples (CUPTI hands them over as pointer-rich
//                  structs, not a buffer);
//   snapshot     — at every checkpoint: the run's tree before GPU metrics
//                  (store's tree sections, and its iterations section with
//                  their CPU values when the run has iterations), the run
//                  metadata JSON, and the tree node of every launch-site handle.
// Replaying decodes every batch with the same ActivityDecoder, attributes
// with the same GpuAttributor against the correlations, and writes the
// metrics with the same GpuMetricWriter onto the last snapshot's tree and
// its iterations: the run the collector stored.
//
// Thread-safety: RawDumpWriter may be called from any threads (a mutex
// orders its records). Readers are single-threaded. No exception escapes.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "collector/gpu/gpu_activity.h"
#include "collector/gpu/gpu_metrics.h"
#include "store/iterations.h"
#include "store/tree_codec.h"

namespace collector {

// The format this code writes (docs/format.md, "Raw GPU dumps"); it reads
// this and every earlier one (format 1: correlations without iterations).
inline constexpr uint32_t kRawDumpFormat = 2;
// The header record's payload starts with these 12 bytes.
inline constexpr std::string_view kRawDumpMagic = "cctdb-gpuraw";
// Every record: type u8, 3 zero bytes, payload length u32, payload CRC-32
// u32, CRC-32 of the preceding 12 bytes u32; then the payload.
inline constexpr size_t kRawRecordHeaderSize = 16;
inline constexpr uint32_t kRawMaxPayload = uint32_t{1} << 30;

enum class RawRecordType : uint8_t {
  kHeader = 1,
  kCorrelations = 2,
  kBatch = 3,
  kPcSamples = 4,
  kSnapshot = 5,
};

struct RawCorrelation {
  uint32_t correlation_id = 0;
  uint32_t handle = 0;                   // launch-site handle (the runtime's)
  uint8_t kind = 0;                      // cct::GpuOpKind
  uint32_t iteration = kNoIteration;     // the iteration open at the launch (0-based)
};

struct RawSiteNode {
  uint32_t handle = 0;
  // Writing: a node id of the tree given to Snapshot (the writer stores its
  // preorder id, the id it has once decoded); out of range = none.
  // Reading (RawSnapshot): the stored id, 0xFFFFFFFF for none.
  cct::NodeId node = 0;
};

class RawDumpWriter {
 public:
  // Creates (truncates) `path` and writes the header.
  static cct::Result<std::unique_ptr<RawDumpWriter>> Create(const std::string& path, uint32_t pid,
                                                            const std::string& meta_json);
  ~RawDumpWriter();

  void Correlations(std::span<const RawCorrelation> records);
  // `raw` may be null (a batch of adapter timings only). Pass the WHOLE
  // delivery as `delivered` (on_activity's activities, decoded from
  // `raw` and followed by the kMemoryApi ones): the writer stores only the
  // kMemoryApi activities, plus the names of the kKernel activities in
  // order. CUPTI's kernel records hold a pointer to their name, which means
  // nothing outside the recording process; the replay puts these names in
  // its place (the i-th kernel activity names the buffer's i-th kernel
  // record). Given only the kMemoryApi activities, a dump's kernels replay
  // without names (their metrics land on the launch site's node and
  // gpu_raw_unnamed_kernels counts them).
  void Batch(const uint8_t* raw, size_t raw_bytes, std::span<const GpuActivity> delivered, uint64_t dropped);
  void PcSamples(std::span<const GpuPcSample> samples);
  // The tree before GPU metrics, with the node of every launch-site handle
  // and, when given, the run's iterations so far (their values on `tree`).
  void Snapshot(const cct::Tree& tree, const std::string& meta_json, std::span<const RawSiteNode> sites,
                const store::RunIterations* iterations = nullptr);

  // The first write error, if any (later records are then skipped).
  cct::Status status() const;
  uint64_t bytes_written() const;

 private:
  RawDumpWriter() = default;
  void Write(uint8_t type, const std::string& payload);  // caller holds mu_
  void Fail(const cct::Status& s);                        // caller holds mu_
  void OutOfMemory() noexcept;                            // takes mu_
  uint32_t NameId(std::string_view name, std::vector<std::string_view>& fresh);  // caller holds mu_
  mutable std::mutex mu_;
  int fd_ = -1;
  cct::Status status_;
  bool broken_ = false;  // out of memory (status_ may not have been set)
  uint64_t bytes_ = 0;
  // Kernel names defined so far → their ids (1, 2, ... in order of definition).
  std::unordered_map<std::string, uint32_t> names_;
  const std::string* last_name_ = nullptr;  // the previous kernel name (a key of names_), and its id
  uint32_t last_id_ = 0;
};

// ------------------------------------------------------------ reading

// One record of a dump: its type and payload (a view into the reader's
// mapping of the file, valid while the reader lives).
struct RawRecord {
  uint8_t type = 0;
  uint64_t offset = 0;  // of the record's header in the file
  std::string_view payload;
};

// Reads a dump's framing: opens the file, checks the header record (magic,
// format version) and iterates the records after it, checking each CRC.
// Single-threaded.
class RawDumpReader {
 public:
  // kCorrupt (one line naming the file) for an empty file, a file that is
  // not a dump, another format version, or a damaged header record;
  // kIo/kNotFound when the file cannot be read.
  static cct::Result<std::unique_ptr<RawDumpReader>> Open(const std::string& path);
  ~RawDumpReader();
  RawDumpReader(const RawDumpReader&) = delete;
  RawDumpReader& operator=(const RawDumpReader&) = delete;

  // The next record: true and `out` filled; false at the end of the file
  // (truncated() tells whether it ended inside a record); kCorrupt for a
  // damaged record (a header or payload CRC mismatch, nonzero reserved
  // bytes), naming its offset.
  cct::Result<bool> Next(RawRecord* out);
  // The file ended inside a record (a torn write at a crash): the bytes
  // from that record on were ignored. Zero bytes at the end (what a file
  // system leaves of an unfinished append after a power loss) count as torn too.
  bool truncated() const { return truncated_; }
  uint32_t format_version() const { return version_; }
  uint32_t pid() const { return pid_; }
  const std::string& header_meta_json() const { return meta_; }
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

 private:
  RawDumpReader() = default;
  std::string path_;
  const char* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  bool truncated_ = false;
  uint32_t version_ = 0, pid_ = 0;
  std::string meta_;
};

// Record payloads, decoded. Views point into the payload (keep the reader).
struct RawHeader {
  uint32_t format_version = 0;
  uint32_t pid = 0;
  std::string_view meta_json;
};
cct::Result<RawHeader> ParseRawHeader(std::string_view payload);

// `format_version`: the dump's (RawDumpReader::format_version()).
cct::Status ParseRawCorrelations(std::string_view payload, uint32_t format_version, std::vector<RawCorrelation>* out);

// The kernel names a dump defines, by id (id 0 = none): batches define
// names as they first appear and refer to them by id.
using RawNameTable = std::deque<std::string>;
struct RawBatch {
  uint64_t dropped = 0;
  std::vector<uint32_t> kernel_names;  // the name id of each kKernel activity of the buffer, in order
  std::string_view raw;                // the buffer's bytes (unaligned)
  // The kMemoryApi (in practice) activities; a kKernel among them has its
  // name from `names` and kernel_name_id = kRawNameIdBase + the name's id.
  std::vector<GpuActivity> api;
};
inline constexpr uint32_t kRawNameIdBase = uint32_t{1} << 31;
// Appends the names the batch defines to `names` (which must hold those of
// the earlier batches) and fills `out`.
cct::Status ParseRawBatch(std::string_view payload, RawNameTable& names, RawBatch* out);

// Strings view the payload.
cct::Status ParseRawPcSamples(std::string_view payload, std::vector<GpuPcSample>* out);

struct RawSnapshot {
  // store's tree sections (decode with store::DecodeTree), and the
  // iterations section when the run had iterations (store::DecodeIterations)
  std::vector<store::Section> sections;
  std::string_view meta_json;
  std::vector<RawSiteNode> sites;        // nodes are stored (preorder) ids of the decoded tree
};
cct::Status ParseRawSnapshot(std::string_view payload, RawSnapshot* out);

// The fixed little-endian layout of one GpuActivity in a dump (148 bytes;
// the kernel name as an id into the dump's names, given and returned).
inline constexpr size_t kRawActivitySize = 148;
void AppendRawActivity(store::ByteWriter& out, const GpuActivity& a, uint32_t name_id);
// Reads one from `in` (at least kRawActivitySize bytes); the name id in
// `*name_id`. False when an enum field is out of range (damaged input).
bool ReadRawActivity(const char* in, GpuActivity* a, uint32_t* name_id);

// The result of replaying a dump: the run's tree with GPU metrics, its
// metadata JSON (from the last snapshot, with the replay's GPU diagnostics
// merged in) and what the reader had to say.
struct RawReplay {
  cct::Tree tree;
  store::RunIterations iterations;  // the run's iterations (none: empty), CPU and GPU values on `tree`
  std::string meta_json;
  // batches: batch records; records: CUPTI records walked in their buffers;
  // activities: operations attributed; pc_samples: PC samples (the sum of
  // GpuPcSample::samples, as the adapter counts them).
  uint64_t batches = 0, records = 0, activities = 0, pc_samples = 0;
  uint64_t dropped = 0;    // records CUPTI reported dropped (sum of the batches')
  uint64_t unknown = 0;    // activities attributed to `<gpu unknown>`
  uint64_t snapshots = 0;  // snapshot records (the last one is the tree)
  bool truncated = false;  // the file ended inside a record (a crash while writing): the rest was used
  // The CUPTI API version whose record layouts the dump's buffers have (the
  // run's gpu.facts.cupti_layout_api: the adapter's headers, for which it
  // lays out again the records of a libcupti whose sizes differ; in older
  // dumps gpu.facts.cupti_api, the libcupti's; 0: not recorded) and the one
  // whose record structs this replay decodes with: when they differ, record
  // layouts may differ (the tools warn; gpu_raw_unparsed_bytes and
  // gpu_skipped_records show it).
  uint32_t recorded_cupti_api = 0, decoder_cupti_api = 0;
};

// Reads and replays a dump. kCorrupt (one-line message) for a file that is
// not a dump, has another format version, or a damaged record; a torn last
// record is tolerated (RawReplay::truncated).
cct::Result<RawReplay> ReplayRawDump(const std::string& path);

}  // namespace collector
