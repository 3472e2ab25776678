// `cct-query runs`: the runs in a database.
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>

#include "output/format.h"
#include "reports/registry.h"
#include "reports/reports.h"
#include "reports/run_text.h"
#include "store/database.h"
#include "store/selector.h"

namespace reports {

using cct::Status;
using store::RunMeta;

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

std::string JobText(const RunMeta& r) {
  if (!r.launcher) return "";
  const store::LauncherRank& l = *r.launcher;
  std::string s = "rank " + std::to_string(l.rank);
  if (l.size >= 0) s += " of " + std::to_string(l.size);
  if (!l.JobKey().empty()) s = "job " + l.JobKey() + ", " + s;
  return s;
}

namespace {

// Per run: how many of its ancestors (parent_run links) are in `runs`.
std::vector<size_t> TreeDepths(const std::vector<RunMeta>& runs) {
  std::map<store::RunId, size_t> at;
  for (size_t i = 0; i < runs.size(); ++i) at[runs[i].id] = i;
  std::vector<size_t> depth(runs.size(), 0);
  for (size_t i = 0; i < runs.size(); ++i) {
    size_t d = 0;
    store::RunId p = runs[i].parent_run;
    // Bounded by the run count: a damaged parent_run cycle ends.
    for (auto it = at.find(p); p != 0 && it != at.end() && d < runs.size(); it = at.find(p)) {
      ++d;
      p = runs[it->second].parent_run;
    }
    depth[i] = d;
  }
  return depth;
}

void WriteRunJson(output::JsonWriter& w, const RunMeta& r, store::RunId root) {
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
  w.FieldInt("parent_run", r.parent_run).FieldInt("root_run", root);
  w.FieldInt("nodes", static_cast<long long>(r.node_count));
  if (r.launcher) {
    const store::LauncherRank& l = *r.launcher;
    w.Key("launcher").BeginObject();
    w.FieldInt("rank", l.rank).FieldInt("size", l.size).FieldInt("local_rank", l.local_rank);
    w.Field("job", l.JobKey()).Field("job_id", l.job_id).Field("step", l.step);
    w.Field("node_name", l.node_name).FieldInt("node_index", l.node_index).Field("source", l.source);
    w.EndObject();
  }
  w.EndObject();
}

}  // namespace

Status WriteRunsReport(const std::vector<RunMeta>& runs, const std::string& db_path, const ReportOptions& opt,
                       std::ostream& out, const std::vector<RunMeta>* all) {
  // The invocation root of each run, among all of the database's runs.
  auto root_of = [&](const RunMeta& r) { return store::InvocationRoot(r, all ? *all : runs); };
  switch (opt.format) {
    case OutputFormat::kText: {
      if (runs.empty()) {
        out << db_path << ": no runs\n";
        return Status::Ok();
      }
      output::TextTable table({{"id"}, {"state", 0, true}, {"started", 3, true}, {"duration"}, {"outcome", 1, true},
                       {"nodes", 2}},
                      "name  tags");
      const std::vector<size_t> depth = TreeDepths(runs);
      for (size_t i = 0; i < runs.size(); ++i) {
        const RunMeta& r = runs[i];
        std::string label = r.name.empty() ? "-" : r.name;
        // A child process's run under its parent's: indented, marked.
        if (depth[i] > 0) label = std::string(2 * (depth[i] - 1), ' ') + (opt.ascii ? "`- " : "└ ") + label;
        const std::string tags = Tags(r.tags);
        if (!tags.empty()) label += "  " + tags;
        // The root of a rank's invocation says its job; its children repeat it.
        if (r.launcher && depth[i] == 0) label += "  (" + JobText(r) + ")";
        table.AddRow({std::to_string(r.id), std::string(store::RunStateName(store::EffectiveState(r))),
                      LocalTime(r.start_time_ns),
                      r.duration_ns > 0 ? output::FormatValue(static_cast<double>(r.duration_ns), cct::Unit::kNanoseconds, opt.ascii) : "-",
                      Outcome(r), std::to_string(r.node_count)},
                     "", label);
      }
      table.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginArray();
      for (const RunMeta& r : runs) WriteRunJson(w, r, root_of(r));
      w.EndArray();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "id,name,state,start_time,duration,exit_code,term_signal,nodes,tags,parent_run,root_run,job,rank\n";
      for (const RunMeta& r : runs) {
        out << r.id << ',' << output::CsvField(r.name) << ',' << store::RunStateName(store::EffectiveState(r)) << ','
            << IsoUtc(r.start_time_ns) << ',' << output::NumberText(static_cast<double>(r.duration_ns) / 1e9) << ','
            << (r.exit_code ? std::to_string(*r.exit_code) : "") << ','
            << (r.term_signal ? std::to_string(*r.term_signal) : "") << ',' << r.node_count << ','
            << output::CsvField(Tags(r.tags)) << ',' << r.parent_run << ',' << root_of(r) << ','
            << output::CsvField(r.launcher ? r.launcher->JobKey() : "") << ','
            << (r.launcher ? std::to_string(r.launcher->rank) : "") << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

cct::Status RunsCommand(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  std::vector<RunMeta> runs, all;
  std::string path = request.db_path;
  if (request.args.empty()) {
    CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(path, store::Database::Mode::kRead));
    CCT_ASSIGN_OR_RETURN(runs, db->ListRuns());
    return WriteRunsReport(runs, path, opt, out);
  }
  CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(request.args[0], request.db_path));
  path = sel.db_path;
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(runs, store::SelectRuns(*db, sel));
  CCT_ASSIGN_OR_RETURN(all, db->ListRuns());
  return WriteRunsReport(runs, path, opt, out, &all);
}

}  // namespace reports
