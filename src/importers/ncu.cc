// Nsight Compute CSV: attaching ncu's per-launch metrics to a run's kernels.
//
// Input: `ncu --csv --page raw` (one header row of column names, a row of
// units, then one row per profiled kernel launch, metrics as columns), or the
// long `--page details` layout (one row per launch and metric, with "Metric
// Name", "Metric Unit" and "Metric Value" columns). Lines before the header
// (==PROF== messages, program output) are skipped. Numbers may carry
// thousands separators ("1,234.5"); "n/a" and other text are no value.
//
// Units: times become nanoseconds, sizes bytes ("Kbyte" = 1000 bytes, as ncu
// prints), "%" stays percent; other units (cycle, inst, byte/second, ...)
// keep their numbers scaled to the unprefixed unit, named in the metric's
// description.
//
// Matching a launch (row) to kernel nodes (FrameKind::kKernel):
//  1. by name, at the finest level where any node matches: the name as
//     written; without return type and parameters; also without template
//     arguments (NormalizeKernelName); the last name component only (ncu's
//     default --kernel-name-base function);
//  2. when the row has NVTX context (a column named "NVTX" or containing
//     "nvtx" or "Push/Pop"; the range stack outermost first, '/'-separated,
//     domains as "domain:range" or "domain::range"), only nodes whose NVTX
//     ranges end with that stack stay candidates (if none does, all stay);
//  3. several candidates left: launches are dealt out in ncu's launch order
//     (ID) to the candidates in the order the run first launched them (node
//     order), each launch going to the candidate with the smallest share of
//     its own launch count (gker:count) received so far (ties: the earlier
//     node) - the order in which an iterative program repeats its launches.
// Launches whose name matches no kernel node are reported as unmatched.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "cct/node_values.h"
#include "cct/pattern.h"
#include "importers/importer.h"
#include "query/gpu_kernels.h"
#include "store/database.h"
#include "store/fault_guard.h"
#include "store/selector.h"

namespace importers {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;
using cct::Result;
using cct::Status;
using query::kNcuDescriptionPrefix;

namespace {

// RFC 4180 records: quoted fields may hold commas, quotes ("") and newlines.
struct CsvReader {
  std::string_view text;
  size_t pos = 0;
  size_t line = 0;  // 1-based line of the record last read

  bool Next(std::vector<std::string>& fields) {
    fields.clear();
    if (pos >= text.size()) return false;
    ++line;
    std::string field;
    bool quoted = false, any = false;
    while (pos < text.size()) {
      const char c = text[pos++];
      if (quoted) {
        if (c == '"') {
          if (pos < text.size() && text[pos] == '"') {
            field.push_back('"');
            ++pos;
          } else {
            quoted = false;
          }
        } else {
          if (c == '\n') ++line;
          field.push_back(c);
        }
      } else if (c == '"') {
        quoted = true;
        any = true;
      } else if (c == ',') {
        fields.push_back(std::move(field));
        field.clear();
        any = true;
      } else if (c == '\n') {
        break;
      } else if (c != '\r') {
        field.push_back(c);
        any = true;
      }
    }
    if (any || !field.empty()) fields.push_back(std::move(field));
    return true;
  }
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// "1,234.5" -> 1234.5; empty, "n/a" and text -> nullopt.
std::optional<double> ParseNumber(std::string_view s) {
  std::string t;
  for (char c : s)
    if (c != ',' && c != ' ') t.push_back(c);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

struct UnitInfo {
  cct::Unit unit = cct::Unit::kNone;
  double scale = 1;
  std::string base;  // the unprefixed unit, for descriptions ("cycle", "byte/second")
};

UnitInfo ParseNcuUnit(std::string_view u) {
  UnitInfo info;
  const std::string s = Trim(u);
  if (s.empty()) return info;
  if (s == "%") {
    info.unit = cct::Unit::kPercent;
    info.base = "%";
    return info;
  }
  static const std::map<std::string, double> kPrefix = {{"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3}, {"K", 1e3},
                                                        {"k", 1e3},  {"M", 1e6},  {"G", 1e9},  {"T", 1e12}};
  auto with_prefix = [&](const std::string& base) -> std::optional<double> {
    if (s == base) return 1.0;
    if (s.size() == base.size() + 1 && s.compare(1, std::string::npos, base) == 0) {
      auto p = kPrefix.find(s.substr(0, 1));
      if (p != kPrefix.end()) return p->second;
    }
    return std::nullopt;
  };
  if (auto f = with_prefix("second")) {
    info.unit = cct::Unit::kNanoseconds;
    info.scale = *f * 1e9;
    info.base = "second";
    return info;
  }
  if (s == "ns" || s == "us" || s == "ms" || s == "s") {
    info.unit = cct::Unit::kNanoseconds;
    info.scale = s == "ns" ? 1 : s == "us" ? 1e3 : s == "ms" ? 1e6 : 1e9;
    info.base = "second";
    return info;
  }
  if (auto f = with_prefix("byte")) {
    info.unit = cct::Unit::kBytes;
    info.scale = *f;
    info.base = "byte";
    return info;
  }
  // Other units: scale an SI prefix away ("Gbyte/second" -> byte/second).
  const size_t slash = s.find('/');
  const std::string head = s.substr(0, slash);
  for (const char* base : {"byte", "hz", "cycle", "inst", "warp", "sector", "request", "thread", "block", "register"}) {
    const std::string b = base;
    if (head.size() == b.size() + 1 && head.compare(1, std::string::npos, b) == 0 && kPrefix.count(head.substr(0, 1))) {
      info.scale = kPrefix.at(head.substr(0, 1));
      info.base = b + (slash == std::string::npos ? "" : s.substr(slash));
      return info;
    }
  }
  info.base = s;
  return info;
}

// The columns that describe a launch rather than measure it.
bool IsIdentityColumn(const std::string& name) {
  static const std::set<std::string> kIdentity = {
      "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream",
      "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value",
      "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup", "Function Name"};
  return kIdentity.count(name) > 0;
}

bool IsNvtxColumn(const std::string& name) {
  const std::string l = Lower(name);
  return l == "nvtx" || l.find("nvtx") != std::string::npos || l.find("push/pop") != std::string::npos;
}

// NVTX range names without a domain prefix.
std::string RangeName(std::string_view r) {
  std::string s = Trim(r);
  const size_t dc = s.rfind("::");
  if (dc != std::string::npos) return s.substr(dc + 2);
  const size_t c = s.find(':');
  if (c != std::string::npos) return s.substr(c + 1);
  return s;
}

struct Launch {
  int64_t id = 0;
  std::string kernel;
  std::vector<std::string> nvtx;                 // outermost first
  std::map<std::string, double> values;          // metric -> value in stored units
  size_t line = 0;
};

struct MetricUnits {
  UnitInfo info;
  bool seen_number = false;
};

struct KernelNode {
  NodeId node;
  std::string names[4];            // as written, signature, normalized, base
  std::vector<std::string> nvtx;   // range names on the path, outermost first
  double launches = 1;
};

}  // namespace

Result<NcuAttachResult> AttachNcuMetrics(const std::string& path, cct::Tree& tree, const NcuAttachOptions& options) {
  std::optional<cct::Pattern> select;
  if (!options.metric_regex.empty()) {
    CCT_ASSIGN_OR_RETURN(select, cct::Pattern::Compile(options.metric_regex, "metric pattern"));
  }
  CCT_ASSIGN_OR_RETURN(std::string text, ReadFile(path, PieceLimit{PieceKind::kLines, kMaxLineBytes}));
  CsvReader csv{text};
  std::vector<std::string> header, row;
  // The header: the first record whose first field is "ID".
  while (csv.Next(row)) {
    if (!row.empty() && Trim(row[0]) == "ID") {
      header = row;
      break;
    }
  }
  if (header.empty())
    return cct::BadInput(path + ": not an Nsight Compute CSV export (no header row starting with \"ID\"; "
                                "export with ncu --csv --page raw)");
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col.emplace(Trim(header[i]), i);
  if (!col.count("Kernel Name")) return cct::BadInput(path + ": the header has no \"Kernel Name\" column");
  const bool long_layout = col.count("Metric Name") && col.count("Metric Value");
  std::vector<size_t> nvtx_cols;
  for (size_t i = 0; i < header.size(); ++i)
    if (IsNvtxColumn(Trim(header[i]))) nvtx_cols.push_back(i);
  auto wanted = [&](const std::string& metric) {
    if (metric.empty() || IsIdentityColumn(metric) || IsNvtxColumn(metric)) return false;
    if (select) return select->Search(metric);
    return metric.rfind("device__attribute_", 0) != 0 && metric.rfind("profiler__", 0) != 0;
  };

  std::map<std::string, MetricUnits> units;  // metric -> unit (first seen)
  std::vector<std::string> raw_units;        // raw layout: the units row
  std::vector<Launch> launches;
  std::map<int64_t, size_t> by_id;           // long layout: launch id -> index
  auto field = [&](const std::vector<std::string>& r, const char* name) -> std::string {
    auto it = col.find(name);
    return it != col.end() && it->second < r.size() ? r[it->second] : std::string();
  };
  auto bad = [&](const std::string& why) { return cct::BadInput(path + ":" + std::to_string(csv.line) + ": " + why); };

  while (csv.Next(row)) {
    if (row.empty() || (row.size() == 1 && Trim(row[0]).empty())) continue;
    const std::string id_text = Trim(row[0]);
    const std::optional<double> id = ParseNumber(id_text);
    if (!id) {
      // The raw page's units row (empty ID), or stray output lines.
      if (!long_layout && raw_units.empty() && launches.empty() && id_text.empty()) raw_units = row;
      else if (id_text.rfind("==", 0) == 0) continue;  // ==PROF==, ==WARNING== lines
      else if (!id_text.empty()) return bad("launch ID '" + id_text + "' is not a number");
      continue;
    }
    // IDs count launches; converting 1e25 (or NaN) to an integer is undefined.
    if (!(*id >= 0 && *id <= 9007199254740992.0 && *id == std::floor(*id)))
      return bad("launch ID '" + id_text + "' is not a launch number");
    if (row.size() != header.size())
      return bad("the row has " + std::to_string(row.size()) + " fields, the header " + std::to_string(header.size()));
    const std::string kernel = Trim(field(row, "Kernel Name"));
    if (kernel.empty()) return bad("no kernel name");
    Launch* l;
    if (long_layout) {
      auto [it, inserted] = by_id.emplace(static_cast<int64_t>(*id), launches.size());
      if (inserted) launches.push_back(Launch{});
      l = &launches[it->second];
    } else {
      launches.push_back(Launch{});
      l = &launches.back();
    }
    if (l->kernel.empty()) {
      l->id = static_cast<int64_t>(*id);
      l->kernel = kernel;
      l->line = csv.line;
      for (size_t c : nvtx_cols) {
        const std::string v = Trim(row[c]);
        if (v.empty()) continue;
        for (size_t start = 0; start <= v.size();) {
          size_t slash = v.find('/', start);
          if (slash == std::string::npos) slash = v.size();
          const std::string r = RangeName(std::string_view(v).substr(start, slash - start));
          if (!r.empty()) l->nvtx.push_back(r);
          start = slash + 1;
        }
      }
    }
    auto record = [&](const std::string& metric, const std::string& unit_text, const std::string& value_text) {
      if (!wanted(metric)) return;
      const std::optional<double> v = ParseNumber(value_text);
      if (!v) return;
      const UnitInfo u = ParseNcuUnit(unit_text);
      auto [it, inserted] = units.emplace(metric, MetricUnits{u, true});
      const UnitInfo& first = it->second.info;
      // A metric printed with another prefix in another row: same base unit, rescaled.
      if (!inserted && (u.unit != first.unit || u.base != first.base)) return;
      l->values[metric] = *v * u.scale;
    };
    if (long_layout) {
      record(Trim(field(row, "Metric Name")), field(row, "Metric Unit"), field(row, "Metric Value"));
    } else {
      for (size_t c = 0; c < header.size(); ++c)
        record(Trim(header[c]), c < raw_units.size() ? raw_units[c] : std::string(), row[c]);
    }
  }
  if (launches.empty()) return cct::BadInput(path + ": no kernel launches after the header");
  std::stable_sort(launches.begin(), launches.end(), [](const Launch& a, const Launch& b) { return a.id < b.id; });

  // The run's kernel nodes.
  std::vector<KernelNode> kernels;
  const MetricId count_metric = tree.metrics().Find("gker:count");
  cct::NodeValues values(tree);
  const std::vector<double>* counts = count_metric != cct::kNoMetric ? &values.Inclusive(count_metric) : nullptr;
  for (NodeId n = 1; n < tree.size(); ++n) {
    if (tree.kind(n) != FrameKind::kKernel) continue;
    KernelNode k;
    k.node = n;
    const std::string_view name = tree.name(n);
    k.names[0] = Trim(name);
    k.names[1] = query::KernelSignatureName(name);
    k.names[2] = query::NormalizeKernelName(name);
    k.names[3] = query::KernelBaseName(name);
    for (NodeId p = tree.parent(n); p != cct::kRootNode && p != cct::kNoNode; p = tree.parent(p))
      if (tree.kind(p) == FrameKind::kNvtx) k.nvtx.push_back(RangeName(tree.name(p)));
    std::reverse(k.nvtx.begin(), k.nvtx.end());
    if (counts && (*counts)[n] > 0) k.launches = (*counts)[n];
    kernels.push_back(std::move(k));
  }
  if (kernels.empty())
    return cct::InvalidArgument("the run has no GPU kernel nodes to attach Nsight Compute metrics to "
                                "(record it with GPU tracing on)");

  // Register metrics: ncu:count, then per ncu metric "M:acc" and "M".
  NcuAttachResult result;
  result.launches = launches.size();
  cct::MetricDesc count_desc{std::string(query::kNcuCount), cct::Unit::kCount, cct::MetricKind::kAdditive,
                             std::string(kNcuDescriptionPrefix) + "kernel launches profiled", ""};
  CCT_ASSIGN_OR_RETURN(const MetricId ncu_count, tree.metrics().Register(count_desc));
  // Attaching again replaces: clear every accumulator an earlier attach wrote.
  for (MetricId m = 0; m < tree.metrics().size(); ++m) {
    const cct::MetricDesc& d = tree.metrics().Get(m);
    if (d.kind == cct::MetricKind::kAdditive && d.description.rfind(kNcuDescriptionPrefix, 0) == 0)
      tree.SetColumn(m, cct::SparseColumn());
  }
  std::map<std::string, MetricId> acc_ids;
  for (const auto& [metric, mu] : units) {
    const std::string unit_note = mu.info.base.empty() ? "" : " (" + mu.info.base + ")";
    cct::MetricDesc acc{metric + ":acc", mu.info.unit, cct::MetricKind::kAdditive,
                        std::string(kNcuDescriptionPrefix) + "sum over profiled launches of " + metric + unit_note, ""};
    auto id = tree.metrics().Register(acc);
    if (!id.ok()) return id.status().WithContext("attaching " + metric);
    acc_ids[metric] = *id;
    cct::MetricDesc avg{metric, mu.info.unit, cct::MetricKind::kDerived,
                        std::string(kNcuDescriptionPrefix) + metric + unit_note + ", average per profiled launch",
                        "{" + metric + ":acc} / {" + std::string(query::kNcuCount) + "}"};
    auto aid = tree.metrics().Register(avg);
    if (!aid.ok()) return aid.status().WithContext("attaching " + metric);
    result.metrics.push_back(metric);
  }

  // Match launches to nodes.
  std::map<std::string, std::vector<size_t>> by_name[4];
  for (size_t i = 0; i < kernels.size(); ++i)
    for (int level = 0; level < 4; ++level) by_name[level][kernels[i].names[level]].push_back(i);
  std::vector<double> received(kernels.size(), 0);
  std::set<NodeId> touched;
  std::set<std::string> unmatched_seen;
  for (const Launch& l : launches) {
    const std::string keys[4] = {l.kernel, query::KernelSignatureName(l.kernel), query::NormalizeKernelName(l.kernel),
                                 query::KernelBaseName(l.kernel)};
    const std::vector<size_t>* found = nullptr;
    for (int level = 0; level < 4 && !found; ++level) {
      auto it = by_name[level].find(keys[level]);
      if (it != by_name[level].end()) found = &it->second;
    }
    if (!found) {
      if (unmatched_seen.insert(l.kernel).second) result.unmatched.push_back(l.kernel);
      continue;
    }
    std::vector<size_t> cands = *found;
    if (!l.nvtx.empty()) {
      std::vector<size_t> in_context;
      for (size_t c : cands) {
        const std::vector<std::string>& path = kernels[c].nvtx;
        if (path.size() >= l.nvtx.size() && std::equal(l.nvtx.begin(), l.nvtx.end(), path.end() - static_cast<long>(l.nvtx.size())))
          in_context.push_back(c);
      }
      if (!in_context.empty()) cands = std::move(in_context);
    }
    size_t pick = cands.front();
    for (size_t c : cands)
      if (received[c] / kernels[c].launches < received[pick] / kernels[pick].launches) pick = c;
    received[pick] += 1;
    const NodeId node = kernels[pick].node;
    touched.insert(node);
    tree.AddValue(node, ncu_count, 1);
    for (const auto& [metric, v] : l.values) tree.AddValue(node, acc_ids.at(metric), v);
    ++result.matched;
  }
  result.kernel_nodes = touched.size();
  if (result.matched == 0) {
    std::string ours;
    std::set<std::string> seen;
    for (const KernelNode& k : kernels)
      if (seen.insert(k.names[2]).second && seen.size() <= 5) ours += (ours.empty() ? "" : ", ") + k.names[2];
    return cct::BadInput(path + ": none of its " + std::to_string(launches.size()) +
                         " launches matches a kernel of the run (ncu's first: '" + launches.front().kernel +
                         "'; the run's: " + ours + ")");
  }
  return result;
}

// --from ncu-csv: reads the run's tree, attaches the metrics and writes the
// tree back as the run's new version (one write transaction).
cct::Result<ImportReport> AttachNcuRun(const ImportRequest& request) {
  if (!request.run) return cct::InvalidArgument("--from ncu-csv needs --run RUN (the run whose kernels ncu profiled)");
  CCT_RETURN_IF_ERROR(RejectOptions(request, {"name", "tag", "unit", "skip-bad-lines"}, "ncu-csv"));
  const std::string& file = request.file;
  store::FaultGuard guard(request.tool, request.db_path);
  CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(*request.run, request.db_path));
  if (sel.is_group() || sel.iteration)
    return cct::InvalidArgument("--run must name one run, not a group or an iteration");
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(sel.db_path, store::Database::Mode::kWrite));
  CCT_ASSIGN_OR_RETURN(std::vector<store::RunMeta> runs, store::SelectRuns(*db, sel));
  store::RunMeta meta = runs.back();
  if (store::EffectiveState(meta) == store::RunState::kRecording)
    return cct::InvalidArgument("run " + std::to_string(meta.id) +
                                " is still recording; attach ncu metrics when it is complete");
  CCT_ASSIGN_OR_RETURN(cct::Tree tree, db->ReadTree(meta.id));
  NcuAttachOptions options;
  options.metric_regex = request.options.metric;
  CCT_ASSIGN_OR_RETURN(NcuAttachResult attached, AttachNcuMetrics(file, tree, options));
  nlohmann::json record = {{"file", file},
                           {"launches", attached.launches},
                           {"matched", attached.matched},
                           {"kernel_nodes", attached.kernel_nodes},
                           {"unmatched", attached.unmatched},
                           {"metrics", attached.metrics.size()}};
  meta.extra["ncu"] = record;
  meta.diagnostics["ncu_unmatched_launches"] = static_cast<int64_t>(attached.launches - attached.matched);
  // The new tree has the same nodes, so the run's iterations and trace
  // (whose node ids refer to them) are written back with it rather than
  // dropped.
  auto iterations = db->ReadIterations(meta.id);
  if (!iterations.ok())
    return iterations.status().WithContext("keeping run " + std::to_string(meta.id) + "'s iterations");
  auto trace = db->ReadTrace(meta.id);
  if (!trace.ok()) return trace.status().WithContext("keeping run " + std::to_string(meta.id) + "'s trace");
  CCT_RETURN_IF_ERROR(
      db->UpdateRun(meta, &tree, *iterations ? &**iterations : nullptr, *trace ? &**trace : nullptr));
  ImportReport report;
  report.summary = "attached " + std::to_string(attached.metrics.size()) + " ncu metrics from " + file + " to run " +
                   std::to_string(meta.id) + (meta.name.empty() ? "" : " '" + meta.name + "'") + ": " +
                   std::to_string(attached.matched) + " of " + std::to_string(attached.launches) +
                   " launches matched " + std::to_string(attached.kernel_nodes) + " kernel node(s)\n";
  if (!attached.unmatched.empty()) {
    report.summary += "unmatched kernels (" + std::to_string(attached.unmatched.size()) + "):\n";
    for (const std::string& k : attached.unmatched) report.summary += "  " + k + '\n';
  }
  return report;
}

}  // namespace importers
