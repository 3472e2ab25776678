// `cct-query runs`, `show RUN` and `metrics RUN`: what is in a database and
// what is known about a run.
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>

#include "query/format.h"
#include "query/reports.h"

namespace query {

using cct::Status;
using store::RunMeta;

namespace {

std::string LocalTime(int64_t ns) {
  if (ns <= 0) return "";
  const std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string IsoUtc(int64_t ns) {
  if (ns <= 0) return "";
  const std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Tags(const std::map<std::string, std::string>& tags) {
  std::string s;
  for (const auto& [k, v] : tags) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

std::string Outcome(const RunMeta& r) {
  if (r.term_signal) return "signal " + std::to_string(*r.term_signal);
  if (r.exit_code) return "exit " + std::to_string(*r.exit_code);
  return "";
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) {
    if (!s.empty()) s += ' ';
    const bool quote = x.empty() || x.find_first_of(" \t'\"\\$") != std::string::npos;
    if (!quote) {
      s += x;
      continue;
    }
    s += '\'';
    for (char c : x) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
    s += '\'';
  }
  return s;
}

void WriteRunJson(JsonWriter& w, const RunMeta& r) {
  w.BeginObject();
  w.FieldInt("id", r.id).Field("name", r.name).Field("state", store::RunStateName(store::EffectiveState(r)));
  w.Field("start_time", IsoUtc(r.start_time_ns)).FieldInt("start_time_ns", r.start_time_ns);
  w.Field("duration", static_cast<double>(r.duration_ns) / 1e9);
  w.Key("tags").BeginObject();
  for (const auto& [k, v] : r.tags) w.Field(k, v);
  w.EndObject();
  w.Field("source", r.source);
  w.Key("exit_code");
  r.exit_code ? w.Int(*r.exit_code) : w.Null();
  w.Key("term_signal");
  r.term_signal ? w.Int(*r.term_signal) : w.Null();
  w.FieldInt("parent_run", r.parent_run).FieldInt("nodes", static_cast<long long>(r.node_count));
  w.EndObject();
}

}  // namespace

Status WriteRunsReport(const std::vector<RunMeta>& runs, const std::string& db_path, const ReportOptions& opt,
                       std::ostream& out) {
  switch (opt.format) {
    case OutputFormat::kText: {
      if (runs.empty()) {
        out << db_path << ": no runs\n";
        return Status::Ok();
      }
      TextTable table({{"id"}, {"state", 0, true}, {"started", 3, true}, {"duration"}, {"outcome", 1, true},
                       {"nodes", 2}},
                      "name  tags");
      for (const RunMeta& r : runs) {
        std::string label = r.name.empty() ? "-" : r.name;
        const std::string tags = Tags(r.tags);
        if (!tags.empty()) label += "  " + tags;
        table.AddRow({std::to_string(r.id), std::string(store::RunStateName(store::EffectiveState(r))),
                      LocalTime(r.start_time_ns),
                      r.duration_ns > 0 ? FormatValue(static_cast<double>(r.duration_ns), cct::Unit::kNanoseconds, opt.ascii) : "-",
                      Outcome(r), std::to_string(r.node_count)},
                     "", label);
      }
      table.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      JsonWriter w(out);
      w.BeginArray();
      for (const RunMeta& r : runs) WriteRunJson(w, r);
      w.EndArray();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "id,name,state,start_time,duration,exit_code,term_signal,nodes,tags\n";
      for (const RunMeta& r : runs) {
        out << r.id << ',' << CsvField(r.name) << ',' << store::RunStateName(store::EffectiveState(r)) << ','
            << IsoUtc(r.start_time_ns) << ',' << NumberText(static_cast<double>(r.duration_ns) / 1e9) << ','
            << (r.exit_code ? std::to_string(*r.exit_code) : "") << ','
            << (r.term_signal ? std::to_string(*r.term_signal) : "") << ',' << r.node_count << ','
            << CsvField(Tags(r.tags)) << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

namespace {

std::string_view SectionName(store::SectionKind k) {
  switch (k) {
    case store::SectionKind::kStrings: return "strings";
    case store::SectionKind::kFrames: return "frames";
    case store::SectionKind::kNodes: return "nodes";
    case store::SectionKind::kMetrics: return "metrics";
    case store::SectionKind::kValues: return "values";
    case store::SectionKind::kIterations: return "iterations";
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

}  // namespace

Status WriteShowReport(Profile& profile, const ReportOptions& opt, std::ostream& out) {
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
      totals[reg.Get(m).name] = ExportValue(values.Total(m), reg.Get(m).unit);
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
        out << r.id << ',' << CsvField(it.key()) << ','
            << CsvField(it.value().is_string() ? it.value().get<std::string>() : it.value().dump()) << '\n';
    }
    return Status::Ok();
  }
  for (size_t ri = 0; ri < profile.runs.size(); ++ri) {
    const RunMeta& r = profile.runs[ri];
    TextTable t({{"", 0, true}}, "");
    auto row = [&](const std::string& k, const std::string& v) {
      if (!v.empty()) t.AddRow({k}, "", v);
    };
    const std::string state(store::RunStateName(store::EffectiveState(r)));
    const std::string outcome = Outcome(r);
    row("state", outcome.empty() ? state : state + " (" + outcome + ")");
    row("source", r.source);
    row("command", Joined(r.command));
    row("cwd", r.cwd);
    row("host", r.host);
    row("cpu", r.cpu_model);
    row("gpu", r.gpu_model);
    row("driver", r.driver_version);
    row("cuda", r.cuda_version);
    row("started", LocalTime(r.start_time_ns));
    if (r.duration_ns > 0)
      row("duration", FormatValue(static_cast<double>(r.duration_ns), cct::Unit::kNanoseconds, opt.ascii));
    row("pid", r.pid ? std::to_string(r.pid) : "");
    row("parent run", r.parent_run ? std::to_string(r.parent_run) : "");
    row("collector", r.collector_version);
    row("git commit", r.git_commit);
    row("tags", Tags(r.tags));
    if (!r.sampling.empty()) {
      std::string s;
      for (auto it = r.sampling.begin(); it != r.sampling.end(); ++it)
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
    row("checkpoints", r.checkpoints ? std::to_string(r.checkpoints) : "");
    std::string diag;
    for (const auto& [k, v] : r.diagnostics) diag += (diag.empty() ? "" : ", ") + k + " " + std::to_string(v);
    row("diagnostics", diag.empty() ? "none" : diag);
    {
      std::string st;
      uint64_t without_strings = 0;
      bool iterations = false;
      for (const auto& [name, bytes] : storage[ri].bytes) {
        st += (st.empty() ? "" : ", ") + name + " " + FormatValue(static_cast<double>(bytes), cct::Unit::kBytes, opt.ascii);
        if (name == "iterations") iterations = true;
        else if (name != "strings") without_strings += bytes;
      }
      if (r.node_count > 0) {
        char buf[96];
        std::snprintf(buf, sizeof buf, " (%.1f B/node without strings%s)",
                      static_cast<double>(without_strings) / static_cast<double>(r.node_count),
                      iterations ? " and iterations" : "");
        st += buf;
      }
      row("storage", st);
    }
    out << RunLabel(r) << '\n';
    t.Render(out, 0, opt.ascii);
  }
  if (profile.runs.size() > 1) out << profile.label << '\n';
  out << "tree: " << profile.tree.size() << " nodes, " << profile.tree.frames().size() << " frames, " << reg.size()
      << " metrics\n";
  for (cct::MetricId m = 0; m < reg.size(); ++m) {
    const double total = values.Total(m);
    out << "  " << PadRight(reg.Get(m).name, 18) << ' '
        << (reg.Get(m).kind == cct::MetricKind::kDerived && total == 0 ? "-" : FormatValue(total, reg.Get(m).unit, opt.ascii))
        << '\n';
  }
  return Status::Ok();
}

Status WriteMetricsReport(Profile& profile, const ReportOptions& opt, std::ostream& out) {
  cct::NodeValues values(profile.tree);
  const cct::MetricRegistry& reg = profile.tree.metrics();
  switch (opt.format) {
    case OutputFormat::kText: {
      out << profile.label << ": " << reg.size() << " metrics\n";
      TextTable t({{"metric", 0, true}, {"unit", 0, true}, {"kind", 1, true}, {"total"}}, "description");
      for (cct::MetricId m = 0; m < reg.size(); ++m) {
        const cct::MetricDesc& d = reg.Get(m);
        const double total = values.Total(m);
        std::string desc = d.description;
        if (d.kind == cct::MetricKind::kDerived) desc += desc.empty() ? "= " + d.formula : " (= " + d.formula + ")";
        t.AddRow({d.name, std::string(cct::UnitName(d.unit)), d.kind == cct::MetricKind::kDerived ? "derived" : "additive",
                  d.kind == cct::MetricKind::kDerived && total == 0 ? "-" : FormatValue(total, d.unit, opt.ascii)},
                 "", desc);
      }
      t.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      JsonWriter w(out);
      w.BeginArray();
      for (cct::MetricId m = 0; m < reg.size(); ++m) {
        const cct::MetricDesc& d = reg.Get(m);
        w.BeginObject().Field("name", d.name).Field("unit", cct::UnitName(d.unit));
        w.Field("kind", d.kind == cct::MetricKind::kDerived ? "derived" : "additive");
        w.Field("description", d.description);
        if (!d.formula.empty()) w.Field("formula", d.formula);
        w.Field("total", ExportValue(values.Total(m), d.unit));
        w.EndObject();
      }
      w.EndArray();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "name,unit,kind,total,description,formula\n";
      for (cct::MetricId m = 0; m < reg.size(); ++m) {
        const cct::MetricDesc& d = reg.Get(m);
        out << CsvField(d.name) << ',' << cct::UnitName(d.unit) << ','
            << (d.kind == cct::MetricKind::kDerived ? "derived" : "additive") << ','
            << NumberText(ExportValue(values.Total(m), d.unit)) << ',' << CsvField(d.description) << ','
            << CsvField(d.formula) << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

}  // namespace query
