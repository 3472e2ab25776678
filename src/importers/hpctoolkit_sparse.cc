// HPCToolkit databases in the sparse format hpcprof writes from its 2022.10
// release on: meta.db (tables, metrics, the context tree) and profile.db
// (each profile's non-zero values), laid out as HPCToolkit's FORMATS.md
// (format version 4) describes. cct.db holds the same values arranged by
// context and trace.db the traces: neither is read.
//
// Every field is read at a checked offset: a damaged file is one kBadInput
// "PATH: at byte N: why", never a read past the end; counts are checked
// against the file size before anything is allocated from them. meta.db is
// read whole (it is the tree); profile.db one profile at a time, so memory
// is the tree plus the largest profile.
//
// What a run gets (the mapping the experiment.xml reader makes, so one
// program's database imports alike from either format):
//   - each non-summary profile is a thread node, "rank R" or "rank R thread T"
//     (hpc::ThreadLabel) from the RANK and THREAD identifiers of its tuple,
//     other identifiers appended ("rank 0 gpucontext 0 gpustream 7"); NODE
//     and CORE are physical ids and left out; the summary profiles are not
//     threads;
//   - function contexts are functions (module, file, line of the function's
//     definition; flagged inlined when reached by an inlined call), loops are
//     loop frames, source lines line frames; a function reached by a call
//     sits under the nearest enclosing function or loop (the call's line adds
//     no node, as call sites in experiment.xml); instruction contexts add no
//     node: their values go to the enclosing context's node;
//   - entry points add no node, except "unknown entry" (an unwind that
//     failed), which is the <partial call path> frame.
// Values: a metric's "execution" scope (inclusive) less its children's is
// our exclusive value; a metric without one takes its "point" scope (values
// as measured, no propagation) as is. Execution comes first because hpcprof
// leaves contexts out of meta.db (the instructions where samples landed, in
// a database it wrote) while profile.db keeps their values: only inclusive
// values carry them to a context meta.db lists. Other scopes (function,
// custom) and summary statistics are not read, and a metric with neither
// scope is left out. Names keep
// HPCToolkit's, without " (I)"/" (E)" (hpctoolkit_common.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "cct/tree_ops.h"
#include "importers/hpctoolkit_common.h"
#include "importers/importer.h"

namespace importers {

using cct::FrameKind;
using cct::NodeId;
using cct::Result;
using cct::Status;

namespace {

static_assert(std::endian::native == std::endian::little, "the sparse format is read by memcpy");

// A file's bytes (or a window of them) and the checked reads the format
// needs. The first failure is kept; reads after it return 0, so a parser
// checks `ok()` where a bad value would mislead it (a count, a loop bound).
class SparseBytes {
 public:
  SparseBytes(const std::string& path, std::string_view data, uint64_t base, uint64_t file_size)
      : path_(path), data_(data), base_(base), file_size_(file_size) {}

  bool ok() const { return error_.ok(); }
  const Status& error() const { return error_; }
  uint64_t file_size() const { return file_size_; }

  void Fail(uint64_t at, const std::string& why) {
    if (error_.ok()) error_ = cct::BadInput(path_ + ": at byte " + std::to_string(at) + ": " + why);
  }
  // Whether [at, at+len) lies in this window (and fails naming `what` if not).
  bool Has(uint64_t at, uint64_t len, const char* what) {
    if (at >= base_ && at - base_ <= data_.size() && len <= data_.size() - (at - base_)) return true;
    Fail(at, std::string(what) + " (" + std::to_string(len) + " bytes) runs past the end of " +
                 (data_.size() == file_size_ ? "the file (" + std::to_string(file_size_) + " bytes)"
                                             : std::string("the block read")));
    return false;
  }
  template <typename T>
  T Get(uint64_t at, const char* what) {
    T v{};
    if (!ok() || !Has(at, sizeof(T), what)) return v;
    std::memcpy(&v, data_.data() + (at - base_), sizeof(T));  // the format is little-endian, as are our hosts
    return v;
  }
  uint8_t U8(uint64_t at, const char* what) { return Get<uint8_t>(at, what); }
  uint16_t U16(uint64_t at, const char* what) { return Get<uint16_t>(at, what); }
  uint32_t U32(uint64_t at, const char* what) { return Get<uint32_t>(at, what); }
  uint64_t U64(uint64_t at, const char* what) { return Get<uint64_t>(at, what); }
  double F64(uint64_t at, const char* what) { return Get<double>(at, what); }
  // A NUL-terminated string at `at` (0: none, "").
  std::string Str(uint64_t at, const char* what) {
    if (!ok() || at == 0) return {};
    if (!Has(at, 1, what)) return {};
    const std::string_view rest = data_.substr(at - base_);
    const size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) {
      Fail(at, std::string(what) + " has no terminating NUL");
      return {};
    }
    return std::string(rest.substr(0, nul));
  }
  // An array of `count` elements of `stride` bytes at `at`: checked whole
  // before a loop runs over it (a damaged count is one error, not a long loop).
  bool HasArray(uint64_t at, uint64_t count, uint64_t stride, const char* what) {
    if (!ok()) return false;
    if (stride != 0 && count > file_size_ / stride) {
      Fail(at, std::string(what) + ": " + std::to_string(count) + " elements of " + std::to_string(stride) +
                   " bytes cannot fit in a file of " + std::to_string(file_size_) + " bytes");
      return false;
    }
    return Has(at, count * stride, what);
  }

 private:
  const std::string& path_;
  std::string_view data_;
  uint64_t base_;  // file offset of data_[0]
  uint64_t file_size_;
  Status error_;
};

// The common header: "HPCTOOLKIT", the format's 4 letters, version 4.x,
// and the footer every file ends with.
Status CheckSparseHeader(const std::string& path, std::string_view head, uint64_t size, std::string_view format,
                         std::string_view tail) {
  if (head.size() < 16 || head.substr(0, 10) != "HPCTOOLKIT")
    return cct::BadInput(path + ": at byte 0: not an HPCToolkit database file (no HPCTOOLKIT magic)");
  if (head.substr(10, 4) != format)
    return cct::BadInput(path + ": at byte 10: format '" + std::string(head.substr(10, 4)) + "', expected '" +
                         std::string(format) + "'");
  const int major = static_cast<unsigned char>(head[14]), minor = static_cast<unsigned char>(head[15]);
  if (major != 4)
    return cct::BadInput(path + ": at byte 14: format version " + std::to_string(major) + "." + std::to_string(minor) +
                         " (cct-import reads version 4.x)");
  (void)size;
  if (tail.size() != 8 || tail != (format == "meta" ? "_meta.db" : "_prof.db"))
    return cct::BadInput(path + ": at byte " + std::to_string(size < 8 ? 0 : size - 8) +
                         ": no '" + std::string(format == "meta" ? "_meta.db" : "_prof.db") +
                         "' footer (a truncated file?)");
  return Status::Ok();
}

// meta.db, parsed.
struct SparseContext {
  uint32_t ctx_id = 0;
  uint32_t parent = 0;      // index in contexts (0: the top, the thread)
  uint32_t attach = 0;      // index whose node this one's node hangs under
  cct::FrameId frame = 0;   // 0: no node of its own (values go to attach's node)
  bool has_frame = false;
};
struct SparseMetricScope {
  int32_t metric = -1;  // index into the metrics
  bool point = false;   // point scope: exclusive as is; else execution: inclusive (preferred)
};
struct SparseMeta {
  std::vector<SparseContext> contexts{SparseContext{}};  // [0]: the top
  std::unordered_map<uint32_t, uint32_t> by_ctx_id;      // ctxId -> index
  std::vector<hpc::Metric> metrics;
  std::vector<SparseMetricScope> prop_ids = std::vector<SparseMetricScope>(65536);  // propMetricId -> what it is
  std::vector<bool> known_ids = std::vector<bool>(65536);  // any propMetricId of meta.db
  std::vector<std::string> kind_names;                    // identifier kinds, lower case
};

std::string SparseHex(std::string prefix, uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return prefix + buf;
}

struct SparseFunction {
  std::string name, module, file;
  uint32_t line = 0;
  uint64_t offset = 0;
  bool has_module = false;
};

Status SparseParseMetaDb(const std::string& path, const std::string& data, cct::Tree& tree, const ImportOptions& options,
                   SparseMeta& meta) {
  const uint64_t size = data.size();
  CCT_RETURN_IF_ERROR(CheckSparseHeader(path, std::string_view(data).substr(0, 16), size, "meta",
                                        size >= 8 ? std::string_view(data).substr(size - 8) : std::string_view()));
  SparseBytes b(path, data, 0, size);
  // Section pointers: {size, pointer} pairs from 0x10.
  struct Section {
    uint64_t size = 0, at = 0;
  };
  auto section = [&](uint64_t hdr, const char* what) {
    Section s{b.U64(hdr, what), b.U64(hdr + 8, what)};
    if (b.ok()) b.Has(s.at, s.size, what);
    return s;
  };
  const Section id_names = section(0x20, "the identifier names section");
  const Section metrics_sec = section(0x30, "the metrics section");
  const Section ctx_sec = section(0x40, "the context tree section");
  const Section modules_sec = section(0x60, "the load modules section");
  const Section files_sec = section(0x70, "the source files section");
  const Section funcs_sec = section(0x80, "the functions section");
  CCT_RETURN_IF_ERROR(b.error());

  // Identifier kind names (RANK, THREAD, ...).
  if (id_names.size >= 9) {
    const uint64_t pp = b.U64(id_names.at, "ppNames");
    const uint8_t n = b.U8(id_names.at + 8, "nKinds");
    if (b.HasArray(pp, n, 8, "the identifier names"))
      for (uint8_t k = 0; k < n && b.ok(); ++k) {
        std::string name = b.Str(b.U64(pp + 8u * k, "an identifier name pointer"), "an identifier name");
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        meta.kind_names.push_back(name);
      }
  }
  // Load modules, files, functions: keyed by the offset contexts point at.
  auto table = [&](const Section& s, uint64_t min_stride, const char* what, auto&& each) {
    if (s.size == 0) return;
    const uint64_t p = b.U64(s.at, what);
    const uint32_t n = b.U32(s.at + 8, what);
    const uint16_t stride = b.U16(s.at + 12, what);
    if (!b.ok()) return;
    if (n != 0 && stride < min_stride)
      return b.Fail(s.at + 12, std::string(what) + ": element size " + std::to_string(stride) + " < " +
                                   std::to_string(min_stride));
    if (!b.HasArray(p, n, stride, what)) return;
    for (uint32_t i = 0; i < n && b.ok(); ++i) each(p + uint64_t{stride} * i);
  };
  std::unordered_map<uint64_t, std::string> modules, files;
  table(modules_sec, 16, "the load modules", [&](uint64_t at) { modules[at] = b.Str(b.U64(at + 8, "pPath"), "a module path"); });
  table(files_sec, 16, "the source files", [&](uint64_t at) { files[at] = b.Str(b.U64(at + 8, "pPath"), "a file path"); });
  auto lookup = [&](const std::unordered_map<uint64_t, std::string>& t, uint64_t p, uint64_t field, const char* what) {
    if (p == 0) return std::string();
    auto it = t.find(p);
    if (it == t.end()) {
      b.Fail(field, std::string(what) + " " + std::to_string(p) + " is not an entry of its section");
      return std::string();
    }
    return it->second;
  };
  std::unordered_map<uint64_t, SparseFunction> functions;
  table(funcs_sec, 40, "the functions", [&](uint64_t at) {
    SparseFunction f;
    f.name = b.Str(b.U64(at, "pName"), "a function name");
    const uint64_t pm = b.U64(at + 8, "pModule");
    f.module = lookup(modules, pm, at + 8, "pModule");
    f.has_module = pm != 0;
    f.offset = b.U64(at + 16, "offset");
    f.file = lookup(files, b.U64(at + 24, "pFile"), at + 24, "pFile");
    f.line = b.U32(at + 32, "line");
    functions[at] = f;
  });
  CCT_RETURN_IF_ERROR(b.error());

  // Metrics: each one's point and execution scope instances.
  if (metrics_sec.size < 0x1b) return cct::BadInput(path + ": at byte " + std::to_string(metrics_sec.at) + ": the metrics section is too short");
  {
    const uint64_t p = b.U64(metrics_sec.at, "pMetrics");
    const uint32_t n = b.U32(metrics_sec.at + 8, "nMetrics");
    const uint8_t sz_metric = b.U8(metrics_sec.at + 12, "szMetric");
    const uint8_t sz_inst = b.U8(metrics_sec.at + 13, "szScopeInst");
    if (b.ok() && n && sz_metric < 0x1c) b.Fail(metrics_sec.at + 12, "szMetric " + std::to_string(sz_metric) + " < 28");
    if (b.ok() && n && sz_inst < 0x0a) b.Fail(metrics_sec.at + 13, "szScopeInst " + std::to_string(sz_inst) + " < 10");
    if (b.HasArray(p, n, sz_metric, "the metrics"))
      for (uint32_t i = 0; i < n && b.ok(); ++i) {
        const uint64_t at = p + uint64_t{sz_metric} * i;
        const std::string name = hpc::MetricBaseName(b.Str(b.U64(at, "pName"), "a metric name"));
        const uint64_t insts = b.U64(at + 8, "pScopeInsts");
        const uint16_t n_insts = b.U16(at + 0x18, "nScopeInsts");
        if (!b.HasArray(insts, n_insts, sz_inst, "a metric's scope instances")) break;
        int point = -1, exec = -1;
        for (uint16_t k = 0; k < n_insts && b.ok(); ++k) {
          const uint64_t ia = insts + uint64_t{sz_inst} * k;
          const uint64_t scope = b.U64(ia, "pScope");
          const uint16_t id = b.U16(ia + 8, "propMetricId");
          const uint8_t type = b.U8(scope + 8, "a propagation scope's type");
          const std::string scope_name = b.Str(b.U64(scope, "pScopeName"), "a propagation scope's name");
          meta.known_ids[id] = true;
          // Type 1 is "point", 2 "execution"; a writer that left them custom
          // (type 0) is still read by the canonical names.
          if (type == 1 || (type == 0 && scope_name == "point")) point = id;
          else if (type == 2 || (type == 0 && scope_name == "execution")) exec = id;
        }
        if (point < 0 && exec < 0) continue;
        const auto same = std::find_if(meta.metrics.begin(), meta.metrics.end(),
                                       [&](const hpc::Metric& m) { return m.name == name; });
        if (same != meta.metrics.end()) {
          b.Fail(at, "metric '" + name + "' is listed twice");
          break;
        }
        const int32_t index = static_cast<int32_t>(meta.metrics.size());
        meta.metrics.push_back(hpc::Metric{name, 0, 1});
        if (exec >= 0) meta.prop_ids[static_cast<size_t>(exec)] = {index, false};
        else meta.prop_ids[static_cast<size_t>(point)] = {index, true};
      }
    CCT_RETURN_IF_ERROR(b.error());
  }
  if (meta.metrics.empty()) return cct::BadInput(path + ": no metric with a point or execution scope");
  CCT_RETURN_IF_ERROR(hpc::RegisterMetrics(tree, meta.metrics, options, path));

  // The context tree, depth first. Each context takes at least 32 bytes of
  // the section, so more contexts than that is a loop of child pointers.
  if (ctx_sec.size < 0x0b) return cct::BadInput(path + ": at byte " + std::to_string(ctx_sec.at) + ": the context tree section is too short");
  const uint64_t max_contexts = ctx_sec.size / 32 + 1;
  const uint64_t p_entries = b.U64(ctx_sec.at, "pEntryPoints");
  const uint16_t n_entries = b.U16(ctx_sec.at + 8, "nEntryPoints");
  const uint8_t sz_entry = b.U8(ctx_sec.at + 10, "szEntryPoint");
  if (b.ok() && n_entries && sz_entry < 0x20) b.Fail(ctx_sec.at + 10, "szEntryPoint " + std::to_string(sz_entry) + " < 32");
  if (!b.HasArray(p_entries, n_entries, sz_entry, "the entry points")) return b.error();
  struct Pending {
    uint64_t at, end;  // the rest of a child array
    uint32_t parent;   // its parent's index
  };
  std::vector<Pending> work;
  auto add_context = [&](uint64_t field, uint32_t ctx_id, uint32_t parent, uint32_t attach, cct::FrameId frame,
                         bool has_frame) -> uint32_t {
    if (ctx_id == 0) {
      b.Fail(field, "context id 0 (reserved for the global context)");
      return 0;
    }
    if (meta.contexts.size() > max_contexts) {
      b.Fail(field, "more contexts than the context tree section can hold (a loop of child pointers?)");
      return 0;
    }
    const uint32_t index = static_cast<uint32_t>(meta.contexts.size());
    if (!meta.by_ctx_id.emplace(ctx_id, index).second) {
      b.Fail(field, "context id " + std::to_string(ctx_id) + " appears twice");
      return 0;
    }
    meta.contexts.push_back(SparseContext{ctx_id, parent, attach, frame, has_frame});
    return index;
  };
  auto children = [&](uint64_t at, uint32_t index) {
    const uint64_t sz = b.U64(at, "szChildren");
    const uint64_t p = b.U64(at + 8, "pChildren");
    if (!b.ok() || sz == 0) return;
    if (p < ctx_sec.at || p - ctx_sec.at > ctx_sec.size || sz > ctx_sec.size - (p - ctx_sec.at))
      return b.Fail(at, "child contexts outside the context tree section");
    work.push_back(Pending{p, p + sz, index});
  };
  for (uint16_t e = 0; e < n_entries && b.ok(); ++e) {
    const uint64_t at = p_entries + uint64_t{sz_entry} * e;
    const uint32_t ctx_id = b.U32(at + 0x10, "ctxId");
    const uint16_t kind = b.U16(at + 0x14, "entryPoint");
    cct::FrameId frame = 0;
    if (kind == 0) frame = tree.InternFrame(FrameKind::kUnknown, cct::kPartialCallPathName);
    const uint32_t index = add_context(at + 0x10, ctx_id, 0, 0, frame, kind == 0);
    children(at, index);
  }
  // Whether a context's node can hold a callee (functions and loops do;
  // lines and instructions are where a call was made, no scope of their own).
  // Entry points: only "unknown entry" has a node.
  std::vector<bool> scope_like{true};  // [0]: the top
  std::vector<bool> owns_node{true};
  for (size_t i = 1; i < meta.contexts.size(); ++i) {
    scope_like.push_back(meta.contexts[i].has_frame);
    owns_node.push_back(meta.contexts[i].has_frame);
  }
  while (!work.empty() && b.ok()) {
    Pending& w = work.back();
    if (w.at >= w.end) {
      work.pop_back();
      continue;
    }
    const uint64_t at = w.at;
    const uint32_t parent = w.parent;
    if (!b.Has(at, 0x20, "a context")) break;
    const uint32_t ctx_id = b.U32(at + 0x10, "ctxId");
    const uint8_t flags = b.U8(at + 0x14, "flags");
    const uint8_t relation = b.U8(at + 0x15, "relation");
    const uint8_t lexical = b.U8(at + 0x16, "lexicalType");
    const uint8_t n_flex = b.U8(at + 0x17, "nFlexWords");
    const uint64_t next = at + 0x20 + 8u * n_flex;
    if (next > w.end) {
      b.Fail(at, "a context runs past its parent's child array");
      break;
    }
    w.at = next;  // before `work` grows below
    // The flex words: pFunction, then pFile and line, then pModule and
    // offset, each present by its flag, packed in that order.
    uint64_t word = 0;
    auto flex64 = [&](const char* what) -> uint64_t {
      if (word >= n_flex) {
        b.Fail(at + 0x17, std::string("nFlexWords ") + std::to_string(n_flex) + " leaves no room for " + what);
        return 0;
      }
      return b.U64(at + 0x20 + 8 * word++, what);
    };
    uint64_t p_function = 0, p_file = 0, p_module = 0;
    uint32_t line = 0;
    if (flags & 1) p_function = flex64("pFunction");
    if (flags & 2) {
      p_file = flex64("pFile");
      if (word >= n_flex) b.Fail(at + 0x17, "nFlexWords " + std::to_string(n_flex) + " leaves no room for line");
      else line = b.U32(at + 0x20 + 8 * word++, "line");
    }
    if (flags & 4) {
      p_module = flex64("pModule");
      (void)flex64("offset");
    }
    if (!b.ok()) break;
    const std::string file = lookup(files, p_file, at + 0x20, "pFile");
    std::string module = lookup(modules, p_module, at + 0x20, "pModule");
    const SparseFunction* fn = nullptr;
    if (p_function) {
      auto it = functions.find(p_function);
      if (it == functions.end()) {
        b.Fail(at + 0x20, "pFunction " + std::to_string(p_function) + " is not an entry of the functions section");
        break;
      }
      fn = &it->second;
    }
    // Where its node hangs: a callee under the nearest function or loop, a
    // lexical child under its parent's node (or the parent's own target).
    uint32_t attach = parent;
    const bool callee = lexical == 0 && relation != 0;
    while (attach != 0 && (callee ? !scope_like[attach] : !owns_node[attach])) attach = meta.contexts[attach].attach;
    cct::FrameId frame = 0;
    bool has_frame = true, scope = false;
    switch (lexical) {
      case 0: {  // a function
        std::string name = fn ? fn->name : "";
        if (fn && fn->has_module) module = fn->module;
        if (name.empty())
          name = fn && fn->has_module ? SparseHex("<unknown procedure 0x", fn->offset) + ">" : "<unknown procedure>";
        const std::string ffile = fn && !fn->file.empty() ? fn->file : file;
        const uint32_t fline = fn && !fn->file.empty() ? fn->line : line;
        frame = tree.InternFrame(FrameKind::kFunction, name, module, ffile, fline, relation == 2 ? cct::kFrameInlined : 0);
        scope = true;
        break;
      }
      case 1:  // a loop
        frame = tree.InternFrame(FrameKind::kLoop, cct::LoopName(file, line), "", file, line);
        scope = true;
        break;
      case 2:  // a source line
        frame = tree.InternFrame(FrameKind::kLine, cct::LineName(file, line), "", file, line);
        break;
      default:  // an instruction (3) or a type added later: no node of its own
        has_frame = false;
        break;
    }
    const uint32_t index = add_context(at + 0x10, ctx_id, parent, attach, frame, has_frame);
    if (!b.ok()) break;
    scope_like.push_back(scope);
    owns_node.push_back(has_frame);
    children(at, index);
  }
  CCT_RETURN_IF_ERROR(b.error());
  if (meta.contexts.size() <= 1) return cct::BadInput(path + ": the context tree is empty");
  return Status::Ok();
}

// pread of exactly `len` bytes at `at`.
Status SparseReadAt(int fd, const std::string& path, uint64_t at, uint64_t len, std::string& out) {
  out.resize(len);
  uint64_t done = 0;
  while (done < len) {
    const ssize_t n = ::pread(fd, out.data() + done, len - done, static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return cct::IoError(path + ": " + std::strerror(errno));
    if (n == 0) return cct::BadInput(path + ": at byte " + std::to_string(at + done) + ": unexpected end of file");
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

struct SparseFd {
  int fd = -1;
  ~SparseFd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<ImportResult> ImportHpctoolkitSparse(const std::string& dir, const ImportOptions& options) {
  ImportResult result;
  cct::Tree& tree = result.tree;
  SparseMeta meta;
  {
    const std::string path = dir + "/meta.db";
    CCT_ASSIGN_OR_RETURN(const std::string data, ReadFile(path));
    CCT_RETURN_IF_ERROR(SparseParseMetaDb(path, data, tree, options, meta));
  }

  const std::string path = dir + "/profile.db";
  SparseFd file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) {
    if (errno == ENOENT) return cct::NotFound(path + ": no such file (the database has meta.db but no profile.db)");
    return cct::IoError(path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return cct::IoError(path + ": " + std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  std::string head, tail;
  if (size < 0x30 + 8) return cct::BadInput(path + ": at byte 0: " + std::to_string(size) + " bytes are too few for a profile.db");
  CCT_RETURN_IF_ERROR(SparseReadAt(file.fd, path, 0, 0x30, head));
  CCT_RETURN_IF_ERROR(SparseReadAt(file.fd, path, size - 8, 8, tail));
  CCT_RETURN_IF_ERROR(CheckSparseHeader(path, head, size, "prof", tail));

  // The profile infos and identifier tuples sections, read whole.
  auto read_section = [&](uint64_t hdr, const char* what, std::string& out, uint64_t& at) -> Status {
    SparseBytes h(path, head, 0, size);
    const uint64_t sz = h.U64(hdr, what), p = h.U64(hdr + 8, what);
    if (p > size || sz > size - p)
      return cct::BadInput(path + ": at byte " + std::to_string(hdr) + ": " + what + " (" + std::to_string(sz) +
                           " bytes at " + std::to_string(p) + ") runs past the end of the file (" + std::to_string(size) +
                           " bytes)");
    at = p;
    return SparseReadAt(file.fd, path, p, sz, out);
  };
  std::string infos, tuples;
  uint64_t infos_at = 0, tuples_at = 0;
  CCT_RETURN_IF_ERROR(read_section(0x10, "the profile infos section", infos, infos_at));
  CCT_RETURN_IF_ERROR(read_section(0x20, "the identifier tuples section", tuples, tuples_at));
  SparseBytes ib(path, infos, infos_at, size);
  SparseBytes tb(path, tuples, tuples_at, size);
  const uint64_t p_profiles = ib.U64(infos_at, "pProfiles");
  const uint32_t n_profiles = ib.U32(infos_at + 8, "nProfiles");
  const uint8_t sz_profile = ib.U8(infos_at + 12, "szProfile");
  if (ib.ok() && n_profiles && sz_profile < 0x2c)
    ib.Fail(infos_at + 12, "szProfile " + std::to_string(sz_profile) + " < 44");
  ib.HasArray(p_profiles, n_profiles, sz_profile, "the profile infos");
  CCT_RETURN_IF_ERROR(ib.error());

  // Each profile's identifiers: rank, thread, the rest as a label suffix.
  struct Profile {
    uint64_t at = 0;
    uint32_t rank = 0, thread = 0;
    bool has_thread = false;
    std::string extra;
  };
  std::vector<Profile> profiles;
  for (uint32_t i = 0; i < n_profiles; ++i) {
    const uint64_t at = p_profiles + uint64_t{sz_profile} * i;
    const uint32_t flags = ib.U32(at + 0x28, "flags");
    if (flags & 1) continue;  // a summary profile: statistics over threads, not a thread
    Profile pr;
    pr.at = at;
    const uint64_t tuple = ib.U64(at + 0x20, "pIdTuple");
    if (!ib.ok()) break;
    const uint16_t n_ids = tb.U16(tuple, "an identifier tuple");
    if (!tb.HasArray(tuple + 8, n_ids, 16, "an identifier tuple's ids")) break;
    for (uint16_t k = 0; k < n_ids; ++k) {
      const uint64_t ia = tuple + 8 + 16u * k;
      const uint8_t kind = tb.U8(ia, "an identifier's kind");
      const uint32_t logical = tb.U32(ia + 4, "logicalId");
      const std::string name =
          kind < meta.kind_names.size() && !meta.kind_names[kind].empty() ? meta.kind_names[kind] : "kind" + std::to_string(kind);
      if (name == "rank") pr.rank = logical;
      else if (name == "thread") pr.thread = logical, pr.has_thread = true;
      else if (name != "node" && name != "core") pr.extra += " " + name + " " + std::to_string(logical);
    }
    profiles.push_back(pr);
  }
  CCT_RETURN_IF_ERROR(ib.error());
  CCT_RETURN_IF_ERROR(tb.error());
  if (profiles.empty()) return cct::BadInput(path + ": no profile but the summary");
  std::vector<std::pair<uint32_t, uint32_t>> rank_thread;
  for (const Profile& p : profiles) rank_thread.emplace_back(p.rank, p.thread);
  const bool show_thread = hpc::RanksHaveThreads(rank_thread);

  // Each profile's values: (context, metric) pairs, exclusive after the
  // execution scope's children are taken off.
  const std::vector<SparseContext>& ctx = meta.contexts;
  std::vector<NodeId> node_of(ctx.size(), cct::kNoNode);
  std::vector<uint32_t> touched, chain;
  struct Value {
    uint32_t ctx;
    int32_t metric;
    double v;
  };
  std::vector<Value> values;
  std::string vals, idxs;
  // One profile's values into `values`; the tree is not touched, so a
  // damaged profile is skipped whole (--skip-bad-lines) or refused.
  auto read_values = [&](const Profile& pr) -> Status {
    const uint64_t n_values = ib.U64(pr.at, "nValues");
    const uint64_t p_values = ib.U64(pr.at + 8, "pValues");
    const uint32_t n_ctxs = ib.U32(pr.at + 0x10, "nCtxs");
    const uint64_t p_idx = ib.U64(pr.at + 0x18, "pCtxIndices");
    CCT_RETURN_IF_ERROR(ib.error());
    auto fits = [&](uint64_t at, uint64_t count, uint64_t stride, const char* what) -> Status {
      if (count > size / stride || at > size || count * stride > size - at)
        return cct::BadInput(path + ": at byte " + std::to_string(pr.at) + ": " + what + " (" + std::to_string(count) +
                             " x " + std::to_string(stride) + " bytes at " + std::to_string(at) +
                             ") runs past the end of the file (" + std::to_string(size) + " bytes)");
      return Status::Ok();
    };
    CCT_RETURN_IF_ERROR(fits(p_values, n_values, 10, "the profile's values"));
    CCT_RETURN_IF_ERROR(fits(p_idx, n_ctxs, 12, "the profile's context indices"));
    CCT_RETURN_IF_ERROR(SparseReadAt(file.fd, path, p_values, n_values * 10, vals));
    CCT_RETURN_IF_ERROR(SparseReadAt(file.fd, path, p_idx, uint64_t{n_ctxs} * 12, idxs));
    SparseBytes vb(path, vals, p_values, size), xb(path, idxs, p_idx, size);
    values.clear();
    for (uint32_t i = 0; i < n_ctxs; ++i) {
      const uint64_t xa = p_idx + 12u * i;
      const uint32_t ctx_id = xb.U32(xa, "ctxId");
      const uint64_t start = xb.U64(xa + 4, "startIndex");
      const uint64_t end = i + 1 < n_ctxs ? xb.U64(xa + 16, "startIndex") : n_values;
      CCT_RETURN_IF_ERROR(xb.error());
      if (start > end || end > n_values)
        return cct::BadInput(path + ": at byte " + std::to_string(xa + 4) + ": value range " + std::to_string(start) +
                             ".." + std::to_string(end) + " is not within the profile's " + std::to_string(n_values) +
                             " values");
      if (ctx_id == 0) continue;  // the global context: an aggregate of the roots
      // hpcprof leaves contexts out of meta.db (the instructions where
      // samples landed) but keeps their values: their ancestors' execution
      // values hold them.
      auto it = meta.by_ctx_id.find(ctx_id);
      if (it == meta.by_ctx_id.end()) continue;
      const uint32_t c = it->second;
      for (uint64_t k = start; k < end; ++k) {
        const uint64_t va = p_values + 10 * k;
        const uint16_t metric_id = vb.U16(va, "metricId");
        const double v = vb.F64(va + 2, "value");
        CCT_RETURN_IF_ERROR(vb.error());
        if (!meta.known_ids[metric_id])
          return cct::BadInput(path + ": at byte " + std::to_string(va) + ": metric id " + std::to_string(metric_id) +
                               " is not in meta.db");
        const SparseMetricScope& s = meta.prop_ids[metric_id];
        if (s.metric < 0 || !std::isfinite(v) || v == 0) continue;
        const double scaled = v * meta.metrics[static_cast<size_t>(s.metric)].scale;
        values.push_back(Value{c, s.metric, scaled});
        // Inclusive: less the children's (an entry point's parent is no context).
        if (!s.point && ctx[c].parent != 0) values.push_back(Value{ctx[c].parent, s.metric, -scaled});
      }
    }
    return Status::Ok();
  };
  output::Progress progress = output::Progress::ForStderr("importing " + dir);
  progress.SetTotal(profiles.size());
  for (size_t pi = 0; pi < profiles.size(); ++pi) {
    const Profile& pr = profiles[pi];
    progress.Update(pi);
    progress.Tick();
    if (Status read = read_values(pr); !read.ok()) {
      if (!options.skip_bad_lines || read.code() != cct::ErrorCode::kBadInput) return read;
      if (result.skipped++ == 0) result.first_skip = read.message();
      continue;
    }
    // Parents come before children in `ctx`: sorted, nodes are made top-down.
    std::sort(values.begin(), values.end(), [](const Value& a, const Value& b) {
      return a.ctx != b.ctx ? a.ctx < b.ctx : a.metric < b.metric;
    });
    const NodeId thread = tree.InternChild(
        cct::kRootNode, tree.InternFrame(FrameKind::kThread, hpc::ThreadLabel(pr.rank, pr.thread, show_thread && pr.has_thread, pr.extra)));
    auto node_for = [&](uint32_t c) {
      // The context that owns the node its values go to, then its chain up
      // to a node already made.
      while (c != 0 && !ctx[c].has_frame) c = ctx[c].attach;
      chain.clear();
      for (uint32_t a = c; a != 0 && node_of[a] == cct::kNoNode; a = ctx[a].attach) chain.push_back(a);
      for (size_t k = chain.size(); k-- > 0;) {
        const uint32_t a = chain[k];
        const uint32_t up = ctx[a].attach;
        node_of[a] = tree.InternChild(up == 0 ? thread : node_of[up], ctx[a].frame);
        touched.push_back(a);
      }
      return c == 0 ? thread : node_of[c];
    };
    for (size_t i = 0; i < values.size();) {
      double sum = 0;
      size_t j = i;
      for (; j < values.size() && values[j].ctx == values[i].ctx && values[j].metric == values[i].metric; ++j)
        sum += values[j].v;
      if (sum != 0) tree.AddValue(node_for(values[i].ctx), meta.metrics[static_cast<size_t>(values[i].metric)].id, sum);
      i = j;
    }
    for (uint32_t a : touched) node_of[a] = cct::kNoNode;
    touched.clear();
    ++result.records;
  }
  progress.Finish();
  if (result.records == 0) return cct::BadInput(path + ": every profile is damaged (" + result.first_skip + ")");
  hpc::ClearDust(tree, meta.metrics);
  return result;
}

}  // namespace importers
