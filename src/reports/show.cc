// `cct-query show RUN`: what is known about a run: its metadata,
// diagnostics, storage and metric totals.
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "output/format.h"
#include "query/derive.h"
#include "reports/reports.h"
#include "reports/run_text.h"

namespace reports {

using cct::Status;
using store::RunMeta;

namespace {

std::string_view SectionName(store::SectionKind k) {
  switch (k) {
    case store::SectionKind::kStrings: return "strings";
    case store::SectionKind::kFrames: return "frames";
    case store::SectionKind::kNodes: return "nodes";
    case store::SectionKind::kMetrics: return "metrics";
    case store::SectionKind::kValues: return "values";
    case store::SectionKind::kIterations: return "iterations";
    case store::SectionKind::kTrace: return "trace";
    case store::SectionKind::kInclusiveValues: return "inclusive values";
  }
  return "other";
}

struct RunStorage {
  std::map<std::string, uint64_t> bytes;  // stored bytes by section name
  std::optional<size_t> iterations;       // stored iterations, when the run has them
  std::string range;                      // the NVTX range pattern that cut them
};

cct::Result<RunStorage> StorageOf(const std::string& db_path, store::RunId id) {
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(db_path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(auto sizes, db->SectionSizes(id));
  RunStorage out;
  for (const auto& [kind, bytes] : sizes) out.bytes[std::string(SectionName(kind))] += bytes;
  CCT_ASSIGN_OR_RETURN(std::optional<store::RunIterations> its, db->ReadIterations(id));
  if (its) {
    out.iterations = its->iterations.size();
    out.range = its->range;
  }
  return out;
}

// A derived run's record (docs/format.md, `derived_from`): where it came
// from, then one row per operation, written as the option that makes it
// again.
template <class Row>
void ShowDerivation(const RunMeta& r, const Row& row) {
  auto it = r.extra->find("derived_from");
  if (it == r.extra->end() || !it->is_object()) return;
  const nlohmann::json& from = *it;
  auto text = [&](const char* key) {
    auto f = from.find(key);
    return f != from.end() && f->is_string() ? f->get<std::string>() : std::string();
  };
  std::string source = text("label");
  if (!text("selector").empty()) source += " (selector " + text("selector") + ")";
  if (!text("database").empty()) source += " in " + text("database");
  row("derived from", source);
  auto ops = from.find("operations");
  if (ops == from.end() || !ops->is_array()) return;
  if (ops->empty()) row("operation", "none (a copy)");
  for (size_t i = 0; i < ops->size(); ++i) {
    const std::string effect = query::DescribeEffect((*ops)[i]);
    row("operation", std::to_string(i + 1) + ". " + query::DescribeOperation((*ops)[i]) +
                         (effect.empty() ? "" : " (" + effect + ")"));
  }
}

}  // namespace

Status WriteShowReport(query::Profile& profile, const ReportOptions& opt, std::ostream& out) {
  cct::NodeValues values(profile.tree);
  const cct::MetricRegistry& reg = profile.tree.metrics();
  std::vector<RunStorage> storage;
  for (const RunMeta& r : profile.runs) {
    CCT_ASSIGN_OR_RETURN(auto st, StorageOf(profile.db_path, r.id));
    storage.push_back(std::move(st));
  }
  if (opt.format == OutputFormat::kJson) {
    // Small documents: nlohmann builds them whole.
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < profile.runs.size(); ++i) {
      nlohmann::json j = profile.runs[i].ToJson();
      j["state"] = store::RunStateName(store::EffectiveState(profile.runs[i]));
      j["storage_bytes"] = storage[i].bytes;
      if (storage[i].iterations) j["iteration_count"] = *storage[i].iterations;
      arr.push_back(std::move(j));
    }
    nlohmann::json totals = nlohmann::json::object();
    for (cct::MetricId m = 0; m < reg.size(); ++m)
      totals[reg.Get(m).name] = output::ExportValue(values.Total(m), reg.Get(m).unit);
    nlohmann::json doc = {{"runs", arr},
                          {"label", profile.label},
                          {"nodes", profile.tree.size()},
                          {"frames", profile.tree.frames().size()},
                          {"totals", totals}};
    out << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return Status::Ok();
  }
  if (opt.format == OutputFormat::kCsv) {
    out << "run,field,value\n";
    for (size_t i = 0; i < profile.runs.size(); ++i) {
      const RunMeta& r = profile.runs[i];
      nlohmann::json j = r.ToJson();
      j["state"] = store::RunStateName(store::EffectiveState(r));
      if (storage[i].iterations) j["iteration_count"] = *storage[i].iterations;
      for (auto it = j.begin(); it != j.end(); ++it)
        out << r.id << ',' << output::CsvField(it.key()) << ','
            << output::CsvField(it.value().is_string() ? it.value().get<std::string>() : it.value().dump()) << '\n';
    }
    return Status::Ok();
  }
  for (size_t ri = 0; ri < profile.runs.size(); ++ri) {
    const RunMeta& r = profile.runs[ri];
    output::TextTable t({{"", 0, true}}, "");
    auto row = [&](const std::string& k, const std::string& v) {
      if (!v.empty()) t.AddRow({k}, "", v);
    };
    const std::string state(store::RunStateName(store::EffectiveState(r)));
    const std::string outcome = Outcome(r);
    row("state", outcome.empty() ? state : state + " (" + outcome + ")");
    row("source", r.source);
    ShowDerivation(r, row);
    row("command", Joined(r.command));
    row("cwd", r.cwd);
    row("host", r.host);
    row("cpu", r.cpu_model);
    row("gpu", r.gpu_model);
    row("driver", r.driver_version);
    row("cuda", r.cuda_version);
    row("started", LocalTime(r.start_time_ns));
    if (r.duration_ns > 0)
      row("duration", output::FormatValue(static_cast<double>(r.duration_ns), cct::Unit::kNanoseconds, opt.ascii));
    row("pid", r.pid ? std::to_string(r.pid) : "");
    row("parent run", r.parent_run ? std::to_string(r.parent_run) : "");
    row("root run", r.root_run ? std::to_string(r.root_run) : "");
    if (r.launcher) {
      const store::LauncherRank& l = *r.launcher;
      std::string s = l.rank >= 0 ? "rank " + std::to_string(l.rank) : "";
      if (l.size >= 0) s += " of " + std::to_string(l.size);
      if (l.local_rank >= 0) s += ", local rank " + std::to_string(l.local_rank);
      row("launcher", s + " (" + l.source + ")");
      if (!l.job_id.empty()) {
        std::string job = l.job_id;
        if (!l.step.empty()) job += ", step " + l.step;
        row("job", job + " (" + l.job_source + "; select with job:" + l.JobKey() + ")");
      }
      std::string node = l.node_name;
      if (l.node_index >= 0) node += (node.empty() ? "" : ", ") + std::string("node ") + std::to_string(l.node_index);
      row("node", node);
    }
    row("user", r.user);
    row("executable", r.executable);
    row("build id", r.executable_build_id);
    {
      std::string c;
      for (const std::string& x : r.compiler) c += (c.empty() ? "" : "; ") + x;
      row("compiler", c);
    }
    row("os", r.os);
    row("kernel", r.kernel);
    row("glibc", r.glibc);
    if (r.process_cpu_ns > 0)
      row("process cpu",
          output::FormatValue(static_cast<double>(r.process_cpu_ns), cct::Unit::kNanoseconds, opt.ascii) +
              " (user + system, all threads)");
    row("collector", r.collector_version);
    row("git commit", r.git_commit);
    row("tags", Tags(r.tags));
    if (!r.sampling->empty()) {
      std::string s;
      for (auto it = r.sampling->begin(); it != r.sampling->end(); ++it)
        s += (s.empty() ? "" : " ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
      row("sampling", s);
    }
    if (const RunStorage& st = storage[ri]; st.iterations) {
      const std::string& range = st.range.empty() ? r.iteration_regex : st.range;
      row("iterations", std::to_string(*st.iterations) + (range.empty() ? "" : " of NVTX range /" + range + "/"));
    } else if (!r.iteration_regex.empty()) {
      row("iterations", "none recorded (NVTX range /" + r.iteration_regex + "/)");
    }
    for (const auto& [k, v] : r.env) row("env", k + "=" + v);
    for (const store::ModuleInfo& m : r.modules)
      row("module", m.path + (m.build_id.empty() ? "" : "  " + m.build_id));
    row("checkpoints", r.checkpoints ? std::to_string(r.checkpoints) : "");
    std::string diag;
    for (const auto& [k, v] : r.diagnostics) diag += (diag.empty() ? "" : ", ") + k + " " + std::to_string(v);
    row("diagnostics", diag.empty() ? "none" : diag);
    {
      std::string st;
      uint64_t without_strings = 0;
      // Per node: the tree's own sections (iterations and a trace grow with
      // the run's length, not its tree).
      std::string besides;
      for (const auto& [name, bytes] : storage[ri].bytes) {
        st += (st.empty() ? "" : ", ") + name + " " + output::FormatValue(static_cast<double>(bytes), cct::Unit::kBytes, opt.ascii);
        if (name == "iterations" || name == "trace") besides += " and " + name;
        else if (name != "strings") without_strings += bytes;
      }
      if (r.node_count > 0) {
        char buf[128];
        std::snprintf(buf, sizeof buf, " (%.1f B/node without strings%s)",
                      static_cast<double>(without_strings) / static_cast<double>(r.node_count), besides.c_str());
        st += buf;
      }
      row("storage", st);
    }
    out << query::RunLabel(r) << '\n';
    t.Render(out, 0, opt.ascii);
  }
  if (profile.runs.size() > 1) out << profile.label << '\n';
  out << "tree: " << profile.tree.size() << " nodes, " << profile.tree.frames().size() << " frames, " << reg.size()
      << " metrics\n";
  for (cct::MetricId m = 0; m < reg.size(); ++m) {
    const double total = values.Total(m);
    out << "  " << output::PadRight(reg.Get(m).name, 18) << ' '
        << (reg.Get(m).kind == cct::MetricKind::kDerived && total == 0 ? "-" : output::FormatValue(total, reg.Get(m).unit, opt.ascii))
        << '\n';
  }
  return Status::Ok();
}

}  // namespace reports
