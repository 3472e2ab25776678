// HPCToolkit databases in the experiment.xml + metric-db format (hpcprof's
// output up to its 2020 releases); a directory with a meta.db goes to the
// sparse reader (hpctoolkit_sparse.cc), which shares metric naming, units
// and thread labels with this one (hpctoolkit_common.h).
//
// experiment.xml holds the tables (load modules, files, procedures, metric
// DBs) and the calling-context tree: PF (procedure frame), Pr (inlined
// procedure), C (call site), L (loop), S (statement), each with an id `i`.
// Each `*.metric-db` file holds one (rank, thread)'s values: a 24-byte
// magic ("HPCPROF-metricdb__" + version + endianness 'b'), big-endian int32
// node count and metric count, then big-endian float64 values, one row of
// `metric count` values per node id 1..node count.
//
// What a run gets: a thread node per metric-db file ("rank R", or "rank R
// thread T" when a rank has several threads, from the file name's
// -RANK-THREAD- fields), under it the tree with PF as functions, Pr as
// inlined functions (kFrameInlined), L as loops, S as source lines; call sites
// add no node (their line is where the parent called). Identical calling
// contexts that HPCToolkit keeps apart (two call sites on the same line)
// become one node, so node counts can be lower than hpcprof's; values add.
// Metrics keep HPCToolkit's names without the " (I)"/" (E)" suffix and its
// numbers (dimensionless unless --metric/--unit say otherwise). Exclusive
// values are derived from the inclusive ones (own inclusive minus the
// children's), which hpcprof computed exactly; a metric without an inclusive
// partner takes its exclusive values, minus those of statements below each
// procedure or loop, as Hatchet does (hpcprof attributes a statement's cost
// to its enclosing scope as well).
//
// experiment.xml is read with expat as a stream (bounded memory besides the
// tree); metric-db files are read one at a time.
#include <expat.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

#include "cct/node_values.h"
#include "cct/pattern.h"
#include "cct/tree_ops.h"
#include "importers/hpctoolkit_common.h"
#include "importers/importer.h"

namespace importers {

using cct::FrameKind;
using cct::NodeId;
using cct::Result;
using cct::Status;

namespace {

// One scope of the XML tree as it is read.
struct Scope {
  char tag = 0;              // 'P' PF, 'r' Pr, 'C', 'L', 'S', 'R' root
  uint32_t xml_id = 0;       // `i`
  NodeId node = cct::kRootNode;  // our node (for C: the enclosing scope's)
  size_t hnode = 0;          // index into HpcNode list; 0 = none
};

// A node of HPCToolkit's tree that becomes ours (template: no thread yet).
struct HpcNode {
  uint32_t xml_id = 0;
  size_t parent = 0;  // index of the nearest non-call-site ancestor node (0: top)
  cct::FrameId frame = 0;
  char tag = 0;
};

struct ParseState {
  std::string path;
  XML_Parser parser = nullptr;
  Status error;
  std::map<std::string, std::string> modules, files, procedures;
  struct MetricDb {
    std::string name;
    bool inclusive = false;
    int partner = -1;
    int db_id = -1;
  };
  std::map<int, MetricDb> metric_dbs;  // by `i`
  bool in_profile_data = false;
  bool seen_profile = false;
  std::vector<Scope> stack;
  std::vector<HpcNode> nodes{HpcNode{}};  // [0] is the top
  cct::Tree* tree = nullptr;              // frames are interned into it

  void Fail(const std::string& why) {
    if (!error.ok()) return;
    error = cct::BadInput(path + ":" + std::to_string(XML_GetCurrentLineNumber(parser)) + ": " + why);
    XML_StopParser(parser, XML_FALSE);
  }
};

const char* Attr(const char** attrs, const char* name) {
  for (size_t i = 0; attrs[i]; i += 2)
    if (std::strcmp(attrs[i], name) == 0) return attrs[i + 1];
  return nullptr;
}

bool ParseU32(const char* s, uint32_t& out) {
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > UINT32_MAX) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

// "l" may be "12" or a range "12-15": the first line.
uint32_t LineOf(const char* s) {
  if (!s) return 0;
  uint32_t v = 0;
  std::string t(s);
  const size_t dash = t.find('-');
  if (dash != std::string::npos) t.resize(dash);
  return ParseU32(t.c_str(), v) ? v : 0;
}

// Table references are ids, or (in some writers) the string itself.
std::string Lookup(const std::map<std::string, std::string>& table, const char* key) {
  if (!key) return "";
  auto it = table.find(key);
  return it != table.end() ? it->second : std::string(key);
}

void XMLCALL OnStart(void* data, const char* el, const char** attrs) {
  auto& st = *static_cast<ParseState*>(data);
  if (!st.error.ok()) return;
  const std::string_view tag(el);
  if (!st.in_profile_data) {
    if (tag == "LoadModule") {
      if (const char* i = Attr(attrs, "i")) st.modules[i] = Attr(attrs, "n") ? Attr(attrs, "n") : "";
    } else if (tag == "File") {
      if (const char* i = Attr(attrs, "i")) st.files[i] = Attr(attrs, "n") ? Attr(attrs, "n") : "";
    } else if (tag == "Procedure") {
      if (const char* i = Attr(attrs, "i")) st.procedures[i] = Attr(attrs, "n") ? Attr(attrs, "n") : "";
    } else if (tag == "MetricDB") {
      uint32_t i = 0, db = 0;
      if (!ParseU32(Attr(attrs, "i"), i)) return st.Fail("MetricDB without a numeric i");
      ParseState::MetricDb m;
      m.name = Attr(attrs, "n") ? Attr(attrs, "n") : "";
      const char* t = Attr(attrs, "t");
      m.inclusive = t && std::strcmp(t, "inclusive") == 0;
      uint32_t partner = 0;
      if (ParseU32(Attr(attrs, "partner"), partner)) m.partner = static_cast<int>(partner);
      m.db_id = ParseU32(Attr(attrs, "db-id"), db) ? static_cast<int>(db) : static_cast<int>(i);
      st.metric_dbs[static_cast<int>(i)] = m;
    } else if (tag == "SecCallPathProfileData") {
      if (st.seen_profile) return st.Fail("more than one call path profile");
      st.in_profile_data = true;
      st.seen_profile = true;
      st.stack.clear();
      st.stack.push_back(Scope{'R', 0, cct::kRootNode, 0});
    }
    return;
  }
  if (tag == "M") return;  // metric values in the XML are rounded; metric-db files hold the exact ones
  char kind = 0;
  if (tag == "PF") kind = 'P';
  else if (tag == "Pr") kind = 'r';
  else if (tag == "C") kind = 'C';
  else if (tag == "L") kind = 'L';
  else if (tag == "S") kind = 'S';
  else if (tag == "A") kind = 'r';  // alien (inlined code), older writers
  else return st.Fail("unexpected element <" + std::string(tag) + "> in the call path profile");
  uint32_t id = 0;
  if (!ParseU32(Attr(attrs, "i"), id) || id == 0) return st.Fail("<" + std::string(tag) + "> without a node id i");
  // An inlined procedure without a name adds no node (as in Hatchet).
  if (kind == 'r' && Lookup(st.procedures, Attr(attrs, "n")).empty()) kind = 'C';
  Scope& parent = st.stack.back();
  Scope s{kind, id, parent.node, parent.hnode};
  if (kind != 'C') {
    cct::Tree& t = *st.tree;
    const std::string file = Lookup(st.files, Attr(attrs, "f"));
    const uint32_t line = LineOf(Attr(attrs, "l"));
    cct::FrameId frame = 0;
    if (kind == 'P' || kind == 'r') {
      const char* n = Attr(attrs, "n");
      std::string name = Lookup(st.procedures, n);
      if (name.empty()) name = "<unknown procedure>";
      frame = t.InternFrame(FrameKind::kFunction, name, Lookup(st.modules, Attr(attrs, "lm")), file, line,
                            kind == 'r' ? cct::kFrameInlined : 0);
    } else if (kind == 'L') {
      frame = t.InternFrame(FrameKind::kLoop, cct::LoopName(file, line), "", file, line);
    } else {  // S: the file is the enclosing scope's
      std::string sfile = file;
      for (size_t k = st.stack.size(); sfile.empty() && k-- > 0;) {
        const size_t h = st.stack[k].hnode;
        if (h) sfile = std::string(t.str(t.frames().Get(st.nodes[h].frame).file));
      }
      frame = t.InternFrame(FrameKind::kLine, cct::LineName(sfile, line), "", sfile, line);
    }
    HpcNode h;
    h.xml_id = id;
    h.parent = parent.hnode;
    h.frame = frame;
    h.tag = kind;
    st.nodes.push_back(h);
    s.hnode = st.nodes.size() - 1;
  }
  st.stack.push_back(s);
}

void XMLCALL OnEnd(void* data, const char* el) {
  auto& st = *static_cast<ParseState*>(data);
  if (!st.error.ok() || !st.in_profile_data) return;
  const std::string_view tag(el);
  if (tag == "SecCallPathProfileData") {
    st.in_profile_data = false;
    return;
  }
  if (tag == "M") return;
  if (st.stack.size() <= 1) return st.Fail("unbalanced </" + std::string(tag) + ">");
  st.stack.pop_back();
}

Status ParseExperiment(const std::string& path, ParseState& st) {
  // expat holds a tag (with its attributes) or a text run whole until it
  // ends: a 1 GB attribute would be 1 GB of buffer, hence the piece limit.
  auto file = InputFileBuf::Open(path, PieceLimit{PieceKind::kXmlMarkup, kMaxLineBytes});
  if (!file.ok() && file.status().code() == cct::ErrorCode::kNotFound)
    return cct::NotFound(path + ": no such file (not an HPCToolkit database directory?)");
  CCT_RETURN_IF_ERROR(file.status());
  XML_Parser p = XML_ParserCreate(nullptr);
  st.parser = p;
  st.path = path;
  XML_SetUserData(p, &st);
  XML_SetElementHandler(p, OnStart, OnEnd);
  Status result;
  for (;;) {
    Result<std::string_view> chunk = (*file)->Next();
    if (!chunk.ok()) {
      result = chunk.status();
      break;
    }
    const bool last = chunk->empty();
    if (XML_Parse(p, chunk->data(), static_cast<int>(chunk->size()), last) == XML_STATUS_ERROR) {
      result = st.error.ok() ? cct::BadInput(path + ":" + std::to_string(XML_GetCurrentLineNumber(p)) +
                                              ": not well-formed XML (" + XML_ErrorString(XML_GetErrorCode(p)) + ")")
                             : st.error;
      break;
    }
    if (!st.error.ok()) {
      result = st.error;
      break;
    }
    if (last) break;
  }
  XML_ParserFree(p);
  st.parser = nullptr;
  CCT_RETURN_IF_ERROR(result);
  if (!st.seen_profile) return cct::BadInput(path + ": no call path profile (SecCallPathProfileData)");
  if (st.metric_dbs.empty()) return cct::BadInput(path + ": no MetricDBTable: the database has no metric-db files");
  return Status::Ok();
}

uint32_t BigU32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
double BigF64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}

struct MetricDbFile {
  std::string path;
  uint32_t rank = 0, thread = 0;
};

}  // namespace

Result<ImportResult> ImportHpctoolkit(const std::string& dir, const ImportOptions& options) {
  std::error_code ec;
  if (std::filesystem::exists(dir + "/meta.db", ec)) return ImportHpctoolkitSparse(dir, options);
  if (!std::filesystem::is_directory(dir, ec)) return cct::NotFound(dir + ": not a directory");

  ImportResult result;
  cct::Tree& tree = result.tree;
  ParseState st;
  st.tree = &tree;
  CCT_RETURN_IF_ERROR(ParseExperiment(dir + "/experiment.xml", st));
  if (st.nodes.size() <= 1) return cct::BadInput(dir + "/experiment.xml: the call path profile is empty");

  // Metric-db files, by (rank, thread) from "...-RANK-THREAD-HOSTID-PID-N.metric-db".
  std::vector<MetricDbFile> dbs;
  CCT_ASSIGN_OR_RETURN(const cct::Pattern name_pattern,
                       cct::Pattern::Compile(R"(-(\d+)-(\d+)-([0-9A-Za-z]+)-(\d+)-\d+\.metric-db$)", "metric-db name pattern"));
  std::vector<std::string_view> m;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 10 || name.substr(name.size() - 10) != ".metric-db") continue;
    MetricDbFile f;
    f.path = e.path().string();
    if (name_pattern.Search(name, m)) {
      f.rank = static_cast<uint32_t>(std::stoul(std::string(m[0])));
      f.thread = static_cast<uint32_t>(std::stoul(std::string(m[1])));
    } else {
      return cct::BadInput(f.path + ": cannot tell rank and thread from the file name");
    }
    dbs.push_back(f);
  }
  if (ec) return cct::IoError(dir + ": " + ec.message());
  if (dbs.empty()) return cct::BadInput(dir + ": no *.metric-db files");
  std::sort(dbs.begin(), dbs.end(),
            [](const MetricDbFile& a, const MetricDbFile& b) { return std::tie(a.rank, a.thread) < std::tie(b.rank, b.thread); });
  std::vector<std::pair<uint32_t, uint32_t>> rank_thread;
  for (const MetricDbFile& f : dbs) rank_thread.emplace_back(f.rank, f.thread);
  const bool multi_thread = hpc::RanksHaveThreads(rank_thread);

  // Our metrics: one per exclusive/inclusive pair (or lone metric-db).
  struct Metric : hpc::Metric {
    int inc_col = -1, exc_col = -1;
  };
  std::vector<Metric> metrics;
  std::map<int, size_t> by_db;  // MetricDB i -> metrics index
  for (const auto& [i, m] : st.metric_dbs) {
    if (by_db.count(i)) continue;
    Metric mt;
    mt.name = hpc::MetricBaseName(m.name);
    (m.inclusive ? mt.inc_col : mt.exc_col) = m.db_id;
    by_db[i] = metrics.size();
    if (m.partner >= 0) {
      auto p = st.metric_dbs.find(m.partner);
      if (p != st.metric_dbs.end() && p->second.inclusive != m.inclusive) {
        (p->second.inclusive ? mt.inc_col : mt.exc_col) = p->second.db_id;
        by_db[m.partner] = metrics.size();
      }
    }
    metrics.push_back(mt);
  }
  std::vector<hpc::Metric> registered(metrics.begin(), metrics.end());
  CCT_RETURN_IF_ERROR(hpc::RegisterMetrics(tree, registered, options, dir + "/experiment.xml"));
  for (size_t i = 0; i < metrics.size(); ++i) static_cast<hpc::Metric&>(metrics[i]) = registered[i];

  // The tree of each thread, and its values.
  const std::vector<HpcNode>& hn = st.nodes;
  std::vector<NodeId> ours(hn.size());
  std::vector<double> inc_vals(hn.size());
  output::Progress progress = output::Progress::ForStderr("importing " + dir);
  progress.SetTotal(dbs.size());
  for (const MetricDbFile& f : dbs) {
    progress.Update(static_cast<uint64_t>(&f - dbs.data()));
    progress.Tick();
    const std::string label = hpc::ThreadLabel(f.rank, f.thread, multi_thread);
    const NodeId thread = tree.InternChild(cct::kRootNode, tree.InternFrame(FrameKind::kThread, label));
    ours[0] = thread;
    for (size_t i = 1; i < hn.size(); ++i) ours[i] = tree.InternChild(ours[hn[i].parent], hn[i].frame);

    CCT_ASSIGN_OR_RETURN(std::string data, ReadFile(f.path));
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    if (data.size() < 32 || data.compare(0, 16, "HPCPROF-metricdb") != 0)
      return cct::BadInput(f.path + ": not an HPCToolkit metric-db file");
    if (data[23] != 'b')
      return cct::BadInput(f.path + ": metric-db endianness '" + std::string(1, data[23]) + "' is not supported");
    const uint32_t n_nodes = BigU32(p + 24), n_metrics = BigU32(p + 28);
    if (n_metrics == 0 || n_nodes == 0 || data.size() != 32 + uint64_t{n_nodes} * n_metrics * 8)
      return cct::BadInput(f.path + ": " + std::to_string(data.size()) + " bytes do not hold " +
                           std::to_string(n_nodes) + " nodes x " + std::to_string(n_metrics) + " metrics");
    auto value = [&](uint32_t xml_id, int col) -> double {
      if (xml_id == 0 || xml_id > n_nodes || col < 0 || static_cast<uint32_t>(col) >= n_metrics) return 0.0;
      const double v = BigF64(p + 32 + (uint64_t{xml_id - 1} * n_metrics + static_cast<uint32_t>(col)) * 8);
      return std::isfinite(v) ? v : 0.0;
    };
    for (size_t i = 1; i < hn.size(); ++i)
      if (hn[i].xml_id > n_nodes)
        return cct::BadInput(f.path + ": holds " + std::to_string(n_nodes) + " nodes but experiment.xml has node " +
                             std::to_string(hn[i].xml_id));
    for (const Metric& m : metrics) {
      if (m.inc_col >= 0) {
        // exclusive = inclusive - children's inclusive
        for (size_t i = 1; i < hn.size(); ++i) inc_vals[i] = value(hn[i].xml_id, m.inc_col) * m.scale;
        for (size_t i = 1; i < hn.size(); ++i) {
          if (inc_vals[i] != 0) tree.AddValue(ours[i], m.id, inc_vals[i]);
          if (hn[i].parent != 0 && inc_vals[i] != 0) tree.AddValue(ours[hn[i].parent], m.id, -inc_vals[i]);
        }
      } else {
        for (size_t i = 1; i < hn.size(); ++i) {
          const double v = value(hn[i].xml_id, m.exc_col) * m.scale;
          if (v == 0) continue;
          tree.AddValue(ours[i], m.id, v);
          if (hn[i].tag == 'S' && hn[i].parent != 0) tree.AddValue(ours[hn[i].parent], m.id, -v);
        }
      }
    }
    ++result.records;
  }
  hpc::ClearDust(tree, registered);
  return result;
}

cct::Result<ImportReport> ImportHpctoolkitRun(const ImportRequest& request) {
  return ImportNewRun(request, "hpctoolkit", &ImportHpctoolkit);
}

}  // namespace importers
