// cct-diff --format csv: the summary as rows (section, metric, path, values).
#include "reports/diff_report_internal.h"

namespace reports::diff_report {

namespace {

void CsvRow(std::ostream& out, const char* section, const DiffResult& r, size_t m, NodeId n) {
  const MetricDiff& md = r.metrics()[m];
  const cct::Unit u = md.unit;
  auto num = [&](double v) { return output::NumberText(Export(v, u)); };
  auto opt = [](const std::optional<double>& v) { return v ? output::NumberText(*v) : std::string(); };
  std::string path;
  for (const std::string& p : r.Path(n)) path += (path.empty() ? "" : ";") + p;
  out << section << ',' << output::CsvField(md.name) << ',' << output::CsvField(path) << ','
      << cct::FrameKindName(r.tree().kind(n)) << ',' << diff::StatusName(r.status(n)) << ',' << num(md.base_inc[n])
      << ',' << num(md.cand_inc[n]) << ',' << num(md.cand_inc[n] - md.base_inc[n]) << ',' << opt(r.Ratio(m, n))
      << ',' << num(md.base_exc[n]) << ',' << num(md.cand_exc[n]) << ',' << num(md.cand_exc[n] - md.base_exc[n])
      << ',' << opt(r.Ratio(m, n, false)) << ',';
  if (!md.base_sd.empty()) out << num(md.base_sd[n]) << ',' << num(md.cand_sd[n]);
  else out << ',';
  out << ',';
  if (r.tested()) {
    const auto ci = r.Interval(m, n);
    out << (ci ? output::NumberText(ci->first) : "") << ',' << (ci ? output::NumberText(ci->second) : "") << ','
        << output::NumberText(r.PValue(m, n));
  } else {
    out << ",,";
  }
  out << ',' << diff::VerdictName(md.verdict[n]) << '\n';
}

}  // namespace

void WriteCsv(const DiffResult& r, const DiffReportOptions& o, std::ostream& out) {
  out << "section,metric,path,kind,status,base,candidate,delta,ratio,base_exclusive,candidate_exclusive,"
         "delta_exclusive,ratio_exclusive,base_sd,candidate_sd,ci_low,ci_high,p_value,verdict\n";
  for (size_t m = 0; m < r.metrics().size(); ++m) CsvRow(out, "total", r, m, cct::kRootNode);
  for (size_t m = 0; m < r.metrics().size(); ++m) {
    auto rows = [&](const char* section, const std::vector<NodeId>& nodes) {
      for (size_t i = 0; i < Shown(nodes.size(), o.limit); ++i) CsvRow(out, section, r, m, nodes[i]);
    };
    rows("regression", r.Causes(m, Verdict::kRegression));
    rows("improvement", r.Causes(m, Verdict::kImprovement));
    // Callers that only inherit the changes above (their verdict column
    // says which); then every new and gone root, the minor ones included.
    rows("context", r.Context(m, Verdict::kRegression));
    rows("context", r.Context(m, Verdict::kImprovement));
    rows("new", r.SubtreeRoots(m, NodeStatus::kNew));
    rows("gone", r.SubtreeRoots(m, NodeStatus::kGone));
  }
}

}  // namespace reports::diff_report
