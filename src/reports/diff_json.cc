// cct-diff --format json: the summary as one JSON document.
#include "reports/diff_report_internal.h"
#include <cmath>

#include "output/json_writer.h"

namespace reports::diff_report {

namespace {

void SideJson(output::JsonWriter& w, const diff::Side& s) {
  w.BeginObject();
  w.Field("selector", s.selector);
  w.Field("label", s.label);
  w.Key("group").Bool(s.group);
  w.Key("runs").BeginArray();
  for (const diff::RunTree& run : s.runs) {
    w.BeginObject();
    w.FieldInt("id", run.run_id);
    w.Field("label", run.label);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void EntryJson(output::JsonWriter& w, const DiffResult& r, size_t m, NodeId n, bool with_path) {
  const MetricDiff& md = r.metrics()[m];
  const cct::Unit u = md.unit;
  auto optional = [&](const std::optional<double>& v) {
    if (v) w.Number(*v);
    else w.Null();
  };
  w.BeginObject();
  if (with_path) {
    w.Key("path").BeginArray();
    for (const std::string& p : r.Path(n)) w.String(p);
    w.EndArray();
    w.Field("kind", cct::FrameKindName(r.tree().kind(n)));
    w.Field("status", diff::StatusName(r.status(n)));
  }
  w.Field("metric", md.name);
  w.Field("base", Export(md.base_inc[n], u));
  w.Field("candidate", Export(md.cand_inc[n], u));
  w.Field("delta", Export(md.cand_inc[n] - md.base_inc[n], u));
  w.Key("ratio");
  optional(r.Ratio(m, n));
  w.Key("change");
  const double change = r.Change(m, n);
  if (std::isfinite(change)) w.Number(change);
  else w.Null();
  if (!md.base_sd.empty()) {
    w.Field("base_sd", Export(md.base_sd[n], u));
    w.Field("candidate_sd", Export(md.cand_sd[n], u));
  }
  if (r.tested()) {
    const auto ci = r.Interval(m, n);
    w.Key("ci_low");
    optional(ci ? std::optional<double>(ci->first) : std::nullopt);
    w.Key("ci_high");
    optional(ci ? std::optional<double>(ci->second) : std::nullopt);
    w.Field("p_value", r.PValue(m, n));
  }
  if (with_path) {
    w.Key("exclusive").BeginObject();
    w.Field("base", Export(md.base_exc[n], u));
    w.Field("candidate", Export(md.cand_exc[n], u));
    w.Field("delta", Export(md.cand_exc[n] - md.base_exc[n], u));
    w.Key("ratio");
    optional(r.Ratio(m, n, false));
    w.EndObject();
  }
  w.Field("verdict", diff::VerdictName(md.verdict[n]));
  if (md.verdict[n] != Verdict::kNone) w.Key("cause").Bool(r.IsCause(m, n));
  w.EndObject();
}

}  // namespace

void WriteJson(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o,
               std::ostream& out) {
  output::JsonWriter w(out, /*pretty=*/true);
  w.BeginObject();
  w.Key("base");
  SideJson(w, base);
  w.Key("candidate");
  SideJson(w, cand);
  w.Key("metrics").BeginArray();
  for (const MetricDiff& md : r.metrics()) {
    w.BeginObject();
    w.Field("name", md.name);
    w.Field("unit", md.unit == cct::Unit::kNanoseconds ? "s" : cct::UnitName(md.unit));
    w.Field("min_abs", Export(md.min_abs, md.unit));
    w.EndObject();
  }
  w.EndArray();
  w.Key("options").BeginObject();
  w.Field("threshold", r.options().threshold);
  w.Field("alpha", r.options().alpha);
  w.Field("normalize", r.options().align.normalize.kernels ? "kernels" : "default");
  w.Key("fold_recursion").Bool(r.options().align.fold_recursion);
  w.Key("normalize_total").Bool(r.options().normalize_total);
  w.EndObject();
  w.Key("test");
  if (r.tested()) {
    w.BeginObject();
    w.Field("name", "mann-whitney-u");
    w.Field("sides", "two-sided");
    w.FieldInt("base_runs", static_cast<long long>(r.base_runs()));
    w.FieldInt("candidate_runs", static_cast<long long>(r.cand_runs()));
    w.Field("smallest_p", r.smallest_p());
    w.Field("interval", "95% ratio of means (delta method, Welch-Satterthwaite)");
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("notes").BeginArray();
  for (const auto& [k, v] : GatherFacts(r, base, cand, false).lines)
    if (k == "note") w.String(v);
  w.EndArray();
  w.Key("totals").BeginArray();
  for (size_t m = 0; m < r.metrics().size(); ++m) EntryJson(w, r, m, cct::kRootNode, false);
  w.EndArray();
  // regressions and improvements: their causes; context: the nodes that
  // only inherit them (diff.h, "Causes"); new and gone: subtree roots
  // that pass --min-abs or are significant, with how many others there are.
  constexpr int kSections = 5;
  size_t counts[kSections] = {};
  size_t minor_new = 0, minor_gone = 0;
  const char* names[kSections] = {"regressions", "improvements", "context", "new", "gone"};
  for (int section = 0; section < kSections; ++section) {
    w.Key(names[section]).BeginArray();
    for (size_t m = 0; m < r.metrics().size(); ++m) {
      std::vector<NodeId> nodes;
      if (section == 0) nodes = r.Causes(m, Verdict::kRegression);
      if (section == 1) nodes = r.Causes(m, Verdict::kImprovement);
      if (section == 2) {
        nodes = r.Context(m, Verdict::kRegression);
        const std::vector<NodeId> more = r.Context(m, Verdict::kImprovement);
        nodes.insert(nodes.end(), more.begin(), more.end());
      }
      if (section >= 3) {
        const NodeStatus status = section == 3 ? NodeStatus::kNew : NodeStatus::kGone;
        const SplitRoots split = MajorRoots(r, m, status);
        nodes = split.major;
        (section == 3 ? minor_new : minor_gone) += split.minor;
      }
      counts[section] += nodes.size();
      for (size_t i = 0; i < Shown(nodes.size(), o.limit); ++i) EntryJson(w, r, m, nodes[i], true);
    }
    w.EndArray();
  }
  w.Key("counts").BeginObject();
  for (int section = 0; section < kSections; ++section)
    w.FieldInt(names[section], static_cast<long long>(counts[section]));
  w.FieldInt("new_minor", static_cast<long long>(minor_new));
  w.FieldInt("gone_minor", static_cast<long long>(minor_gone));
  w.EndObject();
  w.Key("regression").Bool(r.regressions() > 0);
  w.EndObject();
  out << '\n';
}

}  // namespace reports::diff_report
