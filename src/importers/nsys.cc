// --from nsys: an Nsight Systems report exported to SQLite (`nsys export
// --type sqlite`), read through importers/sqlite_db.h. The schema is NVIDIA's
// ("SQLite Export Schema Reference" of the Nsight Systems documentation);
// it changes between versions, so each table's columns are looked up
// (PRAGMA table_info) and what is missing is left out with a note.
//
// The tree is the collector's (docs/metrics.md, "GPU metrics as
// attributed"), built from the report's events instead of live callbacks:
//
//   <root> ─ thread ─ [nvtx push/pop ranges, nested by time] ─ ...
//     ... ─ [launch call stack, CUDA_CALLCHAINS] ─ cudaLaunchKernel ─ <gpu kernel> ─ kernel
//     ... ─ cudaMemcpyAsync ─ <gpu copyin>        (copies, memsets, syncs:
//                                                    metrics on the placeholder)
//     ... ─ [sample's call stack, SAMPLING_CALLCHAINS]   (samples)
//   <root> ─ thread ─ [nvtx start/end range]      (not nested: one level)
//   <root> ─ <gpu unknown> ─ kernel               GPU work without its API call
//
// A CUDA runtime call sits in the innermost push/pop range open on its
// thread when it started; the GPU activity with its correlation id (within
// its process) hangs below it. Only calls that launched GPU work become
// nodes. NVTX ranges come first and CPU frames after them (the collector's
// "prefix" placement): the report has no call stack of a range's push to
// interleave them with.
//
// Pure function of the file; memory: the NVTX push/pop ranges (to place
// calls and samples in them), one entry per GPU correlation id, the strings
// used, and the tree. Rows are streamed.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "importers/importer.h"
#include "importers/sqlite_db.h"

namespace importers {

namespace {

// NVTX_EVENTS.eventType (ENUM_NSYS_EVENT_TYPE).
constexpr int64_t kNsysNvtxMark = 34;
constexpr int64_t kNsysNvtxPushPop = 59;
constexpr int64_t kNsysNvtxStartEnd = 60;
constexpr int64_t kNsysNvtxDomainCreate = 75;

constexpr int64_t kNsysNoEnd = INT64_MAX;  // a range never closed

// Serialized GlobalId (the user guide's "globalTid / 0x1000000 % 0x1000000
// AS PID, globalTid % 0x1000000 AS TID").
uint64_t NsysPid(int64_t global_id) { return (static_cast<uint64_t>(global_id) >> 24) & 0xffffff; }
uint64_t NsysTid(int64_t global_id) { return static_cast<uint64_t>(global_id) & 0xffffff; }
uint64_t NsysCorrelationKey(int64_t global_id, int64_t correlation) {
  return (NsysPid(global_id) << 40) ^ static_cast<uint64_t>(correlation);
}

// "cudaLaunchKernel_v7000" → "cudaLaunchKernel": nsys names runtime
// functions with the CUDA version that introduced them; the symbol (and so
// the collector's frame) has no suffix.
std::string_view NsysApiName(std::string_view name) {
  const size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v == 0 || v + 2 == name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

std::string NsysDangling(const char* column, int64_t id) {
  return std::string(column) + " " + std::to_string(id) + " is not in StringIds";
}

// Selected last in the GPU tables' queries: whether start and end are both
// integers (a NULL or a text reads as 0).
constexpr const char* kNsysSpanTyped = ", typeof(start) = 'integer' AND typeof(\"end\") = 'integer'";

// Why a span is bad, or "" when it is not.
std::string NsysBadSpan(int64_t start, int64_t end) {
  if (end >= start) return {};
  return "end " + std::to_string(end) + " is before start " + std::to_string(start);
}

// end - start as a value (without signed overflow: end >= start is checked).
double NsysDuration(int64_t start, int64_t end) {
  return static_cast<double>(static_cast<uint64_t>(end) - static_cast<uint64_t>(start));
}

// An NVTX push/pop range instance on its thread, in start order.
struct NsysRange {
  int64_t start = 0, end = 0;
  cct::NodeId node = cct::kNoNode;
  int32_t parent = -1;  // index of the enclosing range, -1 for none
};

struct NsysThread {
  cct::NodeId node = cct::kNoNode;
  std::vector<NsysRange> ranges;
};

class NsysReader {
 public:
  NsysReader(SqliteDb& db, const ImportOptions& options, ImportResult& out)
      : db_(db), options_(options), out_(out), tree_(out.tree) {}

  cct::Status Read();

 private:
  using Columns = std::set<std::string>;
  // The columns of `table`, or nullopt (with a note) when it lacks one of
  // `required` (lower case).
  cct::Result<std::optional<Columns>> TableColumns(const std::string& table, std::vector<std::string> required);
  // A row that breaks the format: an error, or with --skip-bad-lines a
  // skip (Ok; the caller drops the row).
  cct::Status Reject(const std::string& table, int64_t rowid, const std::string& what);
  // StringIds' value for `id`; nullopt when there is none (the row that
  // refers to it is bad: NsysDangling says why).
  cct::Result<std::optional<std::string_view>> String(int64_t id);
  cct::MetricId Metric(std::string_view name);
  void Add(cct::NodeId node, std::string_view metric, double value) {
    if (value != 0) tree_.AddValue(node, Metric(metric), value);
  }

  cct::Status ReadThreadNames();
  NsysThread& Thread(int64_t gtid);
  cct::Status ReadNvtx();
  cct::Status CollectGpuKeys();
  cct::Status ReadRuntime();
  cct::Status ReadKernels();
  cct::Status ReadCopies();
  cct::Status ReadMemsets();
  cct::Status ReadSyncs();
  cct::Status ReadSamples();
  // The innermost push/pop range node open on the thread at `t`, else the
  // thread's node.
  cct::NodeId Context(int64_t gtid, int64_t t);
  // The node GPU work with this correlation goes below: its CUDA call's
  // node, else <gpu unknown> (counted for the note).
  cct::NodeId Site(int64_t global_pid, bool has_correlation, int64_t correlation);
  // The <gpu …> placeholder child of a call's node where the operation's
  // metrics (or its kernel node) go; <gpu unknown> holds them itself, as
  // the collector's (collector/gpu/gpu_nodes.h).
  cct::NodeId Placeholder(cct::NodeId site, cct::GpuOpKind kind) {
    if (site == unknown_) return site;
    return tree_.InternChild(site, tree_.InternFrame(cct::FrameKind::kGpuOp, cct::GpuOpPlaceholder(kind)));
  }
  cct::NodeId FunctionNode(cct::NodeId parent, std::string_view name, std::string_view module);
  // q.Step(), counted for the progress line.
  cct::Result<bool> StepRow(SqliteStatement& q) {
    progress_.Update(++rows_);
    return q.Step();
  }
  // The rows Read() steps through, about: each table's largest rowid, once
  // per pass over it.
  uint64_t RowsToRead();

  SqliteDb& db_;
  const ImportOptions& options_;
  ImportResult& out_;
  cct::Tree& tree_;
  std::optional<SqliteStatement> string_query_;
  std::unordered_map<int64_t, std::string> strings_;
  std::map<std::string, cct::MetricId, std::less<>> metrics_;
  std::map<int64_t, std::string> thread_names_;  // globalTid → ThreadNames' name
  std::map<int64_t, NsysThread> threads_;
  std::unordered_set<uint64_t> gpu_keys_;               // correlation keys of GPU activity
  std::unordered_map<uint64_t, cct::NodeId> launches_;  // correlation key → API call node
  cct::NodeId unknown_ = cct::kNoNode;
  size_t unknown_ops_ = 0;
  bool any_kernel_ = false;
  output::Progress progress_{output::Progress::ForStderr("importing " + db_.path())};
  uint64_t rows_ = 0;
};

cct::Result<std::optional<NsysReader::Columns>> NsysReader::TableColumns(const std::string& table,
                                                                         std::vector<std::string> required) {
  if (!db_.HasTable(table)) return std::optional<Columns>();
  CCT_ASSIGN_OR_RETURN(Columns cols, db_.Columns(table));
  std::string missing;
  for (const std::string& c : required)
    if (!cols.count(c)) missing += (missing.empty() ? "" : ", ") + c;
  if (!missing.empty()) {
    out_.notes.push_back(db_.path() + ": table " + table + " has no column " + missing + " (another nsys version?): " +
                         "its rows are left out");
    return std::optional<Columns>();
  }
  return std::optional<Columns>(std::move(cols));
}

cct::Status NsysReader::Reject(const std::string& table, int64_t rowid, const std::string& what) {
  std::string where = db_.path() + ": " + table + " row " + std::to_string(rowid) + ": " + what;
  if (!options_.skip_bad_lines) return cct::BadInput(std::move(where));
  if (out_.skipped++ == 0) out_.first_skip = std::move(where);
  return cct::Status::Ok();
}

cct::Result<std::optional<std::string_view>> NsysReader::String(int64_t id) {
  auto it = strings_.find(id);
  if (it != strings_.end()) return std::optional<std::string_view>(it->second);
  if (!string_query_) {
    CCT_ASSIGN_OR_RETURN(SqliteStatement q, db_.Prepare("SELECT value FROM StringIds WHERE id = ?1"));
    string_query_.emplace(std::move(q));
  }
  CCT_RETURN_IF_ERROR(string_query_->Reset(1, id));
  CCT_ASSIGN_OR_RETURN(bool found, string_query_->Step());
  if (!found || string_query_->IsNull(0)) return std::optional<std::string_view>();
  return std::optional<std::string_view>(strings_.emplace(id, std::string(string_query_->Text(0))).first->second);
}

cct::MetricId NsysReader::Metric(std::string_view name) {
  auto it = metrics_.find(name);
  if (it != metrics_.end()) return it->second;
  const cct::MetricId id = tree_.metrics().RegisterStandard(name).value();  // catalog names only
  metrics_.emplace(std::string(name), id);
  return id;
}

cct::Status NsysReader::ReadThreadNames() {
  CCT_ASSIGN_OR_RETURN(auto cols, TableColumns("ThreadNames", {"nameid", "globaltid"}));
  if (!cols) return cct::Status::Ok();
  CCT_ASSIGN_OR_RETURN(SqliteStatement q,
                       db_.Prepare("SELECT rowid, nameId, globalTid FROM ThreadNames WHERE globalTid IS NOT NULL "
                                   "ORDER BY rowid"));
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
    if (!row) break;
    ++out_.records;
    CCT_ASSIGN_OR_RETURN(auto name, String(q.Int(1)));
    if (!name) {
      CCT_RETURN_IF_ERROR(Reject("ThreadNames", q.Int(0), NsysDangling("nameId", q.Int(1))));
      continue;
    }
    thread_names_[q.Int(2)] = std::string(*name);  // a later name replaces an earlier one, as in nsys's timeline
  }
  return cct::Status::Ok();
}

NsysThread& NsysReader::Thread(int64_t gtid) {
  NsysThread& t = threads_[gtid];
  if (t.node != cct::kNoNode) return t;
  const uint64_t pid = NsysPid(gtid), tid = NsysTid(gtid);
  std::string name;
  if (auto it = thread_names_.find(gtid); it != thread_names_.end() && !it->second.empty()) {
    name = it->second;
    // Two threads of one name stay two nodes, as the collector keeps them.
    for (const auto& [other, other_name] : thread_names_)
      if (other != gtid && other_name == name) {
        name += " (thread " + std::to_string(tid) + ")";
        break;
      }
  } else {
    name = tid == pid ? "main thread" : "thread " + std::to_string(tid);
  }
  t.node = tree_.InternChild(cct::kRootNode, tree_.InternFrame(cct::FrameKind::kThread, name));
  return t;
}

cct::Status NsysReader::ReadNvtx() {
  CCT_ASSIGN_OR_RETURN(auto cols, TableColumns("NVTX_EVENTS", {"start", "eventtype", "globaltid"}));
  if (!cols) return cct::Status::Ok();
  auto col = [&](const char* name, const char* lower) { return cols->count(lower) ? name : "NULL"; };
  const std::string select = std::string("SELECT rowid, start, ") + col("\"end\"", "end") + ", eventType, " +
                             col("text", "text") + ", " + col("textId", "textid") + ", " +
                             col("domainId", "domainid") + ", " + col("globalTid", "globaltid") +
                             // Placing calls and samples in ranges needs the ranges in
                             // time order per thread: SQL's order is C++'s only for integers.
                             ", typeof(start) = 'integer' AND typeof(" + col("\"end\"", "end") +
                             ") IN ('integer', 'null') AND typeof(" + col("globalTid", "globaltid") +
                             ") = 'integer' FROM NVTX_EVENTS";
  // Domain names: NvtxDomainCreate events, per process.
  std::map<std::pair<uint64_t, int64_t>, std::string> domains;
  if (cols->count("domainid")) {
    CCT_ASSIGN_OR_RETURN(SqliteStatement q, db_.Prepare(select + " WHERE eventType = " +
                                                        std::to_string(kNsysNvtxDomainCreate) + " ORDER BY rowid"));
    for (;;) {
      CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
      if (!row) break;
      ++out_.records;
      std::string name(q.Text(4));
      if (q.IsNull(4) && !q.IsNull(5)) {
        CCT_ASSIGN_OR_RETURN(auto s, String(q.Int(5)));
        if (!s) {
          CCT_RETURN_IF_ERROR(Reject("NVTX_EVENTS", q.Int(0), NsysDangling("textId", q.Int(5))));
          continue;
        }
        name = *s;
      }
      domains[{NsysPid(q.Int(7)), q.Int(6)}] = name;
    }
  }
  // Ranges before marks at the same time; of ranges starting together the
  // longer (the enclosing one) first, a range never closed first of all.
  CCT_ASSIGN_OR_RETURN(
      SqliteStatement q,
      db_.Prepare(select + " WHERE eventType IN (" + std::to_string(kNsysNvtxMark) + ", " +
                  std::to_string(kNsysNvtxPushPop) + ", " + std::to_string(kNsysNvtxStartEnd) +
                  ") ORDER BY globalTid, start, eventType = " + std::to_string(kNsysNvtxMark) + ", " +
                  col("\"end\"", "end") + " IS NULL DESC, " + col("\"end\"", "end") + " DESC, rowid"));
  const int64_t no_thread = INT64_MIN;
  int64_t current = no_thread;
  std::vector<int32_t> stack;  // open push/pop ranges of the current thread (indices)
  std::map<std::string, int64_t> covered;  // start/end ranges of the current thread: name → covered until
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
    if (!row) break;
    ++out_.records;
    const int64_t rowid = q.Int(0), start = q.Int(1), type = q.Int(3), gtid = q.Int(7);
    const bool open_ended = q.IsNull(2);
    const int64_t end = open_ended ? kNsysNoEnd : q.Int(2);
    if (q.Int(8) == 0) {
      CCT_RETURN_IF_ERROR(Reject("NVTX_EVENTS", rowid, "start, end or globalTid is not an integer"));
      continue;
    }
    if (type != kNsysNvtxMark && end < start) {
      CCT_RETURN_IF_ERROR(Reject("NVTX_EVENTS", rowid, NsysBadSpan(start, end)));
      continue;
    }
    std::string text(q.Text(4));
    if (q.IsNull(4)) {
      if (!q.IsNull(5)) {
        CCT_ASSIGN_OR_RETURN(auto s, String(q.Int(5)));
        if (!s) {
          CCT_RETURN_IF_ERROR(Reject("NVTX_EVENTS", rowid, NsysDangling("textId", q.Int(5))));
          continue;
        }
        text = *s;
      } else {
        text = "<unnamed nvtx range>";
      }
    }
    if (!q.IsNull(6) && q.Int(6) != 0) {
      auto d = domains.find({NsysPid(gtid), q.Int(6)});
      text = (d != domains.end() ? d->second : "<domain " + std::to_string(q.Int(6)) + ">") + "::" + text;
    }
    if (gtid != current) {
      current = gtid;
      stack.clear();
      covered.clear();
    }
    NsysThread& thread = Thread(gtid);
    while (!stack.empty() && thread.ranges[stack.back()].end <= start) stack.pop_back();
    if (type == kNsysNvtxMark) {
      const cct::NodeId at = stack.empty() ? thread.node : thread.ranges[stack.back()].node;
      Add(at, "nvtx:marks", 1);
      continue;
    }
    const cct::FrameId frame = tree_.InternFrame(cct::FrameKind::kNvtx, text);
    if (type == kNsysNvtxStartEnd) {
      // Not nested: one level under the thread; overlapping instances of a
      // name count their common time once (docs/metrics.md).
      const cct::NodeId node = tree_.InternChild(thread.node, frame);
      Add(node, "nvtx:count", 1);
      if (open_ended) continue;
      auto [it, added] = covered.try_emplace(text, start);
      const int64_t from = std::max(start, it->second);
      if (end > from) Add(node, "nvtx:time", NsysDuration(from, end));
      it->second = std::max(it->second, end);
      continue;
    }
    NsysRange r;
    r.start = start;
    r.end = end;
    r.parent = stack.empty() ? -1 : stack.back();
    r.node = tree_.InternChild(r.parent < 0 ? thread.node : thread.ranges[r.parent].node, frame);
    Add(r.node, "nvtx:count", 1);
    if (!open_ended) {
      // Its own node holds the time not spent in ranges nested in it.
      Add(r.node, "nvtx:time", NsysDuration(start, end));
      if (r.parent >= 0 && thread.ranges[r.parent].end != kNsysNoEnd) {
        const int64_t inside = std::min(end, thread.ranges[r.parent].end);
        Add(thread.ranges[r.parent].node, "nvtx:time", -NsysDuration(start, inside));
      }
    }
    stack.push_back(static_cast<int32_t>(thread.ranges.size()));
    thread.ranges.push_back(r);
  }
  return cct::Status::Ok();
}

cct::NodeId NsysReader::Context(int64_t gtid, int64_t t) {
  NsysThread& thread = Thread(gtid);
  const std::vector<NsysRange>& r = thread.ranges;
  // The last range started at or before t, then out through the ranges
  // enclosing it: every range open at t encloses that one.
  auto it = std::upper_bound(r.begin(), r.end(), t, [](int64_t v, const NsysRange& x) { return v < x.start; });
  int32_t i = static_cast<int32_t>(it - r.begin()) - 1;
  while (i >= 0 && r[i].end <= t) i = r[i].parent;
  return i >= 0 ? r[i].node : thread.node;
}

cct::NodeId NsysReader::FunctionNode(cct::NodeId parent, std::string_view name, std::string_view module) {
  return tree_.InternChild(parent, tree_.InternFrame(cct::FrameKind::kFunction, name, module));
}

cct::Status NsysReader::CollectGpuKeys() {
  for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"}) {
    if (!db_.HasTable(table)) continue;
    CCT_ASSIGN_OR_RETURN(Columns cols, db_.Columns(table));
    if (!cols.count("globalpid") || !cols.count("correlationid")) continue;
    CCT_ASSIGN_OR_RETURN(SqliteStatement q, db_.Prepare(std::string("SELECT globalPid, correlationId FROM ") + table +
                                                        " WHERE correlationId IS NOT NULL"));
    for (;;) {
      CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
      if (!row) break;
      gpu_keys_.insert(NsysCorrelationKey(q.Int(0), q.Int(1)));
    }
  }
  return cct::Status::Ok();
}

cct::Status NsysReader::ReadRuntime() {
  CCT_ASSIGN_OR_RETURN(auto cols,
                       TableColumns("CUPTI_ACTIVITY_KIND_RUNTIME", {"start", "globaltid", "correlationid", "nameid"}));
  if (!cols) {
    if (!gpu_keys_.empty())
      out_.notes.push_back(db_.path() + ": no CUDA runtime calls (CUPTI_ACTIVITY_KIND_RUNTIME): the GPU work is " +
                           "under <gpu unknown>");
    return cct::Status::Ok();
  }
  const std::string end = cols->count("end") ? "r.\"end\"" : "NULL";
  // The launch's call stack where nsys recorded one (--cudabacktrace),
  // outermost frame first.
  bool chains = false, modules = false;
  if (cols->count("callchainid")) {
    CCT_ASSIGN_OR_RETURN(auto cc, TableColumns("CUDA_CALLCHAINS", {"id", "symbol", "stackdepth"}));
    chains = cc.has_value();
    modules = chains && cc->count("module");
  }
  const std::string sql =
      chains ? "SELECT r.rowid, r.globalTid, r.start, " + end + ", r.correlationId, r.nameId, c.symbol, " +
                   (modules ? "c.module" : "NULL") + ", c.stackDepth FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                   "LEFT JOIN CUDA_CALLCHAINS c ON c.id = r.callchainId ORDER BY r.rowid, c.stackDepth DESC"
             : "SELECT r.rowid, r.globalTid, r.start, " + end +
                   ", r.correlationId, r.nameId, NULL, NULL, NULL FROM CUPTI_ACTIVITY_KIND_RUNTIME r ORDER BY r.rowid";
  CCT_ASSIGN_OR_RETURN(SqliteStatement q, db_.Prepare(sql));
  const std::string table = "CUPTI_ACTIVITY_KIND_RUNTIME";
  bool any = false;     // a call has been read
  int64_t current = 0;  // rowid of the call whose frames are being read
  bool skip = true;     // its rows are not wanted
  cct::NodeId at = cct::kNoNode;
  uint64_t key = 0;
  std::string api;
  std::string leaf;  // the last frame's name
  auto finish = [&]() {
    if (!any || skip) return;
    if (NsysApiName(leaf) != api) at = FunctionNode(at, api, {});
    launches_.emplace(key, at);
  };
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
    if (!row) break;
    const int64_t rowid = q.Int(0);
    if (!any || rowid != current) {
      finish();
      any = true;
      current = rowid;
      ++out_.records;
      skip = true;
      const int64_t start = q.Int(2);
      if (!q.IsNull(3) && q.Int(3) < start) {
        CCT_RETURN_IF_ERROR(Reject(table, rowid, NsysBadSpan(start, q.Int(3))));
        continue;
      }
      CCT_ASSIGN_OR_RETURN(auto name, String(q.Int(5)));
      if (!name) {
        CCT_RETURN_IF_ERROR(Reject(table, rowid, NsysDangling("nameId", q.Int(5))));
        continue;
      }
      if (q.IsNull(4)) continue;
      key = NsysCorrelationKey(q.Int(1), q.Int(4));
      if (!gpu_keys_.count(key) || launches_.count(key)) continue;  // launched nothing (or a duplicate id)
      skip = false;
      api = std::string(NsysApiName(*name));
      leaf.clear();
      at = Context(q.Int(1), start);
    }
    if (skip || q.IsNull(6)) continue;
    CCT_ASSIGN_OR_RETURN(auto symbol, String(q.Int(6)));
    if (!symbol) {
      CCT_RETURN_IF_ERROR(Reject(table, rowid, NsysDangling("symbol", q.Int(6))));
      skip = true;
      continue;
    }
    std::string frame(*symbol);
    std::string_view module;
    if (!q.IsNull(7)) {
      CCT_ASSIGN_OR_RETURN(auto m, String(q.Int(7)));
      if (!m) {
        CCT_RETURN_IF_ERROR(Reject(table, rowid, NsysDangling("module", q.Int(7))));
        skip = true;
        continue;
      }
      module = *m;
    }
    at = FunctionNode(at, frame, module);
    leaf = std::move(frame);
  }
  finish();
  return cct::Status::Ok();
}

cct::NodeId NsysReader::Site(int64_t global_pid, bool has_correlation, int64_t correlation) {
  if (has_correlation) {
    auto it = launches_.find(NsysCorrelationKey(global_pid, correlation));
    if (it != launches_.end()) return it->second;
  }
  ++unknown_ops_;
  if (unknown_ == cct::kNoNode)
    unknown_ = tree_.InternChild(cct::kRootNode, tree_.InternFrame(cct::FrameKind::kGpuOp, "<gpu unknown>"));
  return unknown_;
}

cct::Status NsysReader::ReadKernels() {
  const std::string table = "CUPTI_ACTIVITY_KIND_KERNEL";
  CCT_ASSIGN_OR_RETURN(auto cols, TableColumns(table, {"start", "end"}));
  if (!cols) return cct::Status::Ok();
  const char* name_col = cols->count("demangledname") ? "demangledName"
                         : cols->count("shortname")   ? "shortName"
                                                      : nullptr;
  if (name_col == nullptr) {
    out_.notes.push_back(db_.path() + ": table " + table + " has no demangledName or shortName column: its rows are " +
                         "left out");
    return cct::Status::Ok();
  }
  auto col = [&](const char* name) {
    std::string lower(name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return cols->count(lower) ? std::string(name) : std::string("NULL");
  };
  CCT_ASSIGN_OR_RETURN(
      SqliteStatement q,
      db_.Prepare("SELECT rowid, start, \"end\", " + col("globalPid") + ", " + col("correlationId") + ", " + name_col +
                  ", " + col("gridX") + ", " + col("gridY") + ", " + col("gridZ") + ", " + col("blockX") + ", " +
                  col("blockY") + ", " + col("blockZ") + ", " + col("registersPerThread") + ", " +
                  col("staticSharedMemory") + ", " + col("dynamicSharedMemory") + ", " + col("localMemoryPerThread") +
                  kNsysSpanTyped + " FROM " + table + " ORDER BY rowid"));
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
    if (!row) break;
    ++out_.records;
    const int64_t rowid = q.Int(0), start = q.Int(1), end = q.Int(2);
    if (q.Int(16) == 0 || end < start) {
      CCT_RETURN_IF_ERROR(
          Reject(table, rowid, q.Int(16) == 0 ? "start or end is not an integer" : NsysBadSpan(start, end)));
      continue;
    }
    CCT_ASSIGN_OR_RETURN(auto name, String(q.Int(5)));
    if (!name) {
      CCT_RETURN_IF_ERROR(Reject(table, rowid, NsysDangling(name_col, q.Int(5))));
      continue;
    }
    const cct::NodeId site = Placeholder(Site(q.Int(3), !q.IsNull(4), q.Int(4)), cct::GpuOpKind::kKernel);
    const cct::NodeId node = tree_.InternChild(site, tree_.InternFrame(cct::FrameKind::kKernel, *name));
    any_kernel_ = true;
    Add(node, "gker", NsysDuration(start, end));
    Add(node, "gker:count", 1);
    // Launch configuration, as the collector sums it (in doubles: a
    // damaged file's dimensions may overflow any integer).
    auto dim = [&](int c) { return q.IsNull(c) ? 0.0 : std::max(0.0, static_cast<double>(q.Int(c))); };
    auto dim3 = [&](int c) { return dim(c) * (q.IsNull(c + 1) ? 1 : dim(c + 1)) * (q.IsNull(c + 2) ? 1 : dim(c + 2)); };
    if (!q.IsNull(6)) Add(node, "gker:blks_acc", dim3(6));
    if (!q.IsNull(9)) Add(node, "gker:blk_thr_acc", dim3(9));
    Add(node, "gker:thr_reg_acc", dim(12));
    Add(node, "gker:stmem_acc", dim(13));
    Add(node, "gker:dymem_acc", dim(14));
    Add(node, "gker:lmem_acc", dim(15));
  }
  return cct::Status::Ok();
}

cct::Status NsysReader::ReadCopies() {
  const std::string table = "CUPTI_ACTIVITY_KIND_MEMCPY";
  CCT_ASSIGN_OR_RETURN(auto cols, TableColumns(table, {"start", "end", "bytes"}));
  if (!cols) return cct::Status::Ok();
  CCT_ASSIGN_OR_RETURN(SqliteStatement q,
                       db_.Prepare(std::string("SELECT rowid, start, \"end\", ") +
                                   (cols->count("globalpid") ? "globalPid" : "NULL") + ", " +
                                   (cols->count("correlationid") ? "correlationId" : "NULL") + ", bytes, " +
                                   (cols->count("copykind") ? "copyKind" : "NULL") + kNsysSpanTyped + " FROM " + table +
                                   " ORDER BY rowid"));
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
    if (!row) break;
    ++out_.records;
    const int64_t rowid = q.Int(0), start = q.Int(1), end = q.Int(2), bytes = q.Int(5);
    std::string what = q.Int(7) == 0 ? "start or end is not an integer" : NsysBadSpan(start, end);
    if (what.empty() && bytes < 0) what = "bytes " + std::to_string(bytes) + " is negative";
    if (!what.empty()) {
      CCT_RETURN_IF_ERROR(Reject(table, rowid, what));
      continue;
    }
    // ENUM_CUDA_MEMCPY_OPER: CUPTI's memcpy kinds (1..10) and nsys's
    // unified-memory migrations (11..13); directions as the collector's
    // decoder gives them.
    const char* direction = nullptr;
    cct::GpuOpKind op = cct::GpuOpKind::kCopy;
    switch (q.IsNull(6) ? 0 : q.Int(6)) {
      case 1: case 3: case 11: direction = "gxcopy:h2d"; op = cct::GpuOpKind::kCopyIn; break;
      case 2: case 4: case 12: direction = "gxcopy:d2h"; op = cct::GpuOpKind::kCopyOut; break;
      case 5: case 6: case 7: case 8: case 13: direction = "gxcopy:d2d"; break;
      case 9: direction = "gxcopy:h2h"; break;
      case 10: direction = "gxcopy:p2p"; break;
      default: break;
    }
    const cct::NodeId node = Placeholder(Site(q.Int(3), !q.IsNull(4), q.Int(4)), op);
    Add(node, "gxcopy", NsysDuration(start, end));
    Add(node, "gxcopy:count", 1);
    if (direction) Add(node, direction, static_cast<double>(bytes));
  }
  return cct::Status::Ok();
}

cct::Status NsysReader::ReadMemsets() {
  const std::string table = "CUPTI_ACTIVITY_KIND_MEMSET";
  CCT_ASSIGN_OR_RETURN(auto cols, TableColumns(table, {"start", "end", "bytes"}));
  if (!cols) return cct::Status::Ok();
  CCT_ASSIGN_OR_RETURN(SqliteStatement q,
                       db_.Prepare(std::string("SELECT rowid, start, \"end\", ") +
                                   (cols->count("globalpid") ? "globalPid" : "NULL") + ", " +
                                   (cols->count("correlationid") ? "correlationId" : "NULL") + ", bytes" +
                                   kNsysSpanTyped + " FROM " + table + " ORDER BY rowid"));
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
    if (!row) break;
    ++out_.records;
    const int64_t rowid = q.Int(0), start = q.Int(1), end = q.Int(2), bytes = q.Int(5);
    std::string what = q.Int(6) == 0 ? "start or end is not an integer" : NsysBadSpan(start, end);
    if (what.empty() && bytes < 0) what = "bytes " + std::to_string(bytes) + " is negative";
    if (!what.empty()) {
      CCT_RETURN_IF_ERROR(Reject(table, rowid, what));
      continue;
    }
    const cct::NodeId node = Placeholder(Site(q.Int(3), !q.IsNull(4), q.Int(4)), cct::GpuOpKind::kMemset);
    Add(node, "gmset", NsysDuration(start, end));
    Add(node, "gmset:count", 1);
    Add(node, "gmset:bytes", static_cast<double>(bytes));
  }
  return cct::Status::Ok();
}

cct::Status NsysReader::ReadSyncs() {
  const std::string table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
  CCT_ASSIGN_OR_RETURN(auto cols, TableColumns(table, {"start", "end"}));
  if (!cols) return cct::Status::Ok();
  CCT_ASSIGN_OR_RETURN(SqliteStatement q,
                       db_.Prepare(std::string("SELECT rowid, start, \"end\", ") +
                                   (cols->count("globalpid") ? "globalPid" : "NULL") + ", " +
                                   (cols->count("correlationid") ? "correlationId" : "NULL") + ", " +
                                   (cols->count("synctype") ? "syncType" : "NULL") + kNsysSpanTyped + " FROM " + table +
                                   " ORDER BY rowid"));
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
    if (!row) break;
    ++out_.records;
    const int64_t rowid = q.Int(0), start = q.Int(1), end = q.Int(2);
    std::string what = q.Int(6) == 0 ? "start or end is not an integer" : NsysBadSpan(start, end);
    if (!what.empty()) {
      CCT_RETURN_IF_ERROR(Reject(table, rowid, what));
      continue;
    }
    const cct::NodeId node = Placeholder(Site(q.Int(3), !q.IsNull(4), q.Int(4)), cct::GpuOpKind::kSync);
    const double dur = NsysDuration(start, end);
    Add(node, "gsync", dur);
    Add(node, "gsync:count", 1);
    // ENUM_CUPTI_SYNC_TYPE: 1 event, 2 stream wait event, 3 stream, 4 context.
    static constexpr const char* kKinds[] = {"gsync:evt", "gsync:stre", "gsync:str", "gsync:ctx"};
    const int64_t kind = q.IsNull(5) ? 0 : q.Int(5);
    if (kind >= 1 && kind <= 4) Add(node, kKinds[kind - 1], dur);
  }
  return cct::Status::Ok();
}

cct::Status NsysReader::ReadSamples() {
  CCT_ASSIGN_OR_RETURN(auto events, TableColumns("COMPOSITE_EVENTS", {"id", "start", "globaltid"}));
  if (!events) return cct::Status::Ok();
  CCT_ASSIGN_OR_RETURN(auto chains, TableColumns("SAMPLING_CALLCHAINS", {"id", "symbol", "stackdepth"}));
  const bool modules = chains && chains->count("module");
  const std::string sql =
      // Grouped by rowid (id is the rowid in nsys's schema; a file without
      // that key may repeat ids or leave them NULL).
      chains ? std::string("SELECT e.rowid, e.globalTid, e.start, c.symbol, ") + (modules ? "c.module" : "NULL") +
                   " FROM COMPOSITE_EVENTS e LEFT JOIN SAMPLING_CALLCHAINS c ON c.id = e.id "
                   "ORDER BY e.rowid, c.stackDepth DESC"
             : "SELECT e.rowid, e.globalTid, e.start, NULL, NULL FROM COMPOSITE_EVENTS e ORDER BY e.rowid";
  CCT_ASSIGN_OR_RETURN(SqliteStatement q, db_.Prepare(sql));
  const std::string table = "COMPOSITE_EVENTS";
  bool first = true, skip = false;
  int64_t current = 0;
  cct::NodeId at = cct::kNoNode;
  auto finish = [&]() {
    if (!first && !skip) Add(at, "samples", 1);
  };
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, StepRow(q));
    if (!row) break;
    const int64_t id = q.Int(0);
    if (first || id != current) {
      finish();
      first = false;
      current = id;
      skip = false;
      ++out_.records;
      at = Context(q.Int(1), q.Int(2));
    }
    if (skip || q.IsNull(3)) continue;
    CCT_ASSIGN_OR_RETURN(auto symbol, String(q.Int(3)));
    if (!symbol) {
      CCT_RETURN_IF_ERROR(Reject(table, id, NsysDangling("symbol", q.Int(3))));
      skip = true;
      continue;
    }
    std::string frame(*symbol);
    std::string_view module;
    if (!q.IsNull(4)) {
      CCT_ASSIGN_OR_RETURN(auto m, String(q.Int(4)));
      if (!m) {
        CCT_RETURN_IF_ERROR(Reject(table, id, NsysDangling("module", q.Int(4))));
        skip = true;
        continue;
      }
      module = *m;
    }
    at = FunctionNode(at, frame, module);
  }
  finish();
  return cct::Status::Ok();
}

cct::Status NsysReader::Read() {
  if (!db_.HasTable("StringIds"))
    return cct::BadInput(db_.path() + ": not an Nsight Systems export (an SQLite database without a StringIds table)");
  static const char* const kEventTables[] = {"NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                             "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                                             "CUPTI_ACTIVITY_KIND_RUNTIME", "COMPOSITE_EVENTS"};
  if (std::none_of(std::begin(kEventTables), std::end(kEventTables), [&](const char* t) { return db_.HasTable(t); }))
    return cct::BadInput(db_.path() +
                         ": an Nsight Systems export without events (none of NVTX_EVENTS, CUPTI_ACTIVITY_KIND_*, "
                         "COMPOSITE_EVENTS): was the report collected with tracing on?");
  progress_.SetTotal(RowsToRead());
  for (cct::Status (NsysReader::*stage)() :
       {&NsysReader::ReadThreadNames, &NsysReader::ReadNvtx, &NsysReader::CollectGpuKeys, &NsysReader::ReadRuntime,
        &NsysReader::ReadKernels, &NsysReader::ReadCopies, &NsysReader::ReadMemsets, &NsysReader::ReadSyncs,
        &NsysReader::ReadSamples}) {
    CCT_RETURN_IF_ERROR((this->*stage)());
    progress_.Tick();  // Update() draws every 4096 rows; small tables end stages sooner
  }
  if (any_kernel_)
    for (std::string_view avg : {"gker:blk_thr", "gker:blks", "gker:thr_reg", "gker:stmem", "gker:dymem", "gker:lmem"})
      (void)tree_.metrics().RegisterStandard(avg);
  for (std::string_view t : {"gker", "gxcopy", "gmset", "gsync"})
    if (metrics_.count(t)) {
      (void)tree_.metrics().RegisterStandard("gpuop");
      break;
    }
  if (unknown_ops_ > 0)
    out_.notes.push_back(db_.path() + ": " + std::to_string(unknown_ops_) +
                         " GPU operation(s) without their CUDA runtime call in the report: under <gpu unknown>");
  progress_.Finish();
  return cct::Status::Ok();
}

uint64_t NsysReader::RowsToRead() {
  // NVTX_EVENTS and the GPU activity tables are read twice (ranges and
  // marks; correlation keys, then the activities).
  static const std::pair<const char*, int> kPasses[] = {
      {"ThreadNames", 1}, {"NVTX_EVENTS", 2}, {"CUPTI_ACTIVITY_KIND_RUNTIME", 1}, {"CUPTI_ACTIVITY_KIND_KERNEL", 2},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", 2}, {"CUPTI_ACTIVITY_KIND_MEMSET", 2}, {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", 2},
      {"SAMPLING_CALLCHAINS", 1}};
  uint64_t total = 0;
  for (const auto& [table, passes] : kPasses)
    if (db_.HasTable(table)) total += db_.MaxRowid(table) * static_cast<uint64_t>(passes);
  return total;
}

}  // namespace

cct::Result<ImportResult> ImportNsys(const std::string& path, const ImportOptions& options) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::OpenReadOnly(path));
  ImportResult out;
  NsysReader reader(*db, options, out);
  CCT_RETURN_IF_ERROR(reader.Read());
  return out;
}

cct::Result<ImportReport> ImportNsysRun(const ImportRequest& request) {
  CCT_RETURN_IF_ERROR(RejectOptions(request, {"metric", "unit"}, "nsys"));
  return ImportNewRun(request, "nsys", &ImportNsys);
}

}  // namespace importers
