#include "reports/diff_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "reports/diff_report_internal.h"

namespace reports {

namespace diff_report {

std::string Display(const DiffResult& r, NodeId n) {
  const std::string name(r.name(n));
  switch (r.tree().kind(n)) {
    case cct::FrameKind::kNvtx: return "[nvtx] " + name;
    case cct::FrameKind::kThread: return "[thread] " + name;
    default: return name;
  }
}

std::vector<std::string> DisplayPath(const DiffResult& r, NodeId n) {
  std::vector<std::string> out;
  for (; n != cct::kRootNode; n = r.tree().parent(n)) out.push_back(Display(r, n));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string Value(double v, cct::Unit unit, bool ascii) { return output::FormatValue(v, unit, ascii); }

std::string Delta(double d, cct::Unit unit, bool ascii) {
  if (d == 0) return "0";
  std::string s = output::FormatValue(d, unit, ascii);
  if (unit == cct::Unit::kPercent && !s.empty() && s.back() == '%') s.replace(s.size() - 1, 1, " pp");
  return d > 0 ? "+" + s : s;
}

std::string SignedSig3(double x) {
  char buf[64];
  const double a = std::fabs(x);
  const int decimals = a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%+.*f", decimals, x);
  return buf;
}

std::string Percent(double fraction) { return SignedSig3(100 * fraction) + "%"; }

std::string ChangeText(const DiffResult& r, size_t m, NodeId n) {
  switch (r.status(n)) {
    case NodeStatus::kNew: return "new";
    case NodeStatus::kGone: return "gone";
    case NodeStatus::kBoth: break;
  }
  const MetricDiff& md = r.metrics()[m];
  if (md.base_inc[n] == md.cand_inc[n]) return "";
  if (md.base_inc[n] == 0) return "new";
  return Percent(r.Change(m, n));
}

std::string IntervalText(const std::optional<std::pair<double, double>>& ci) {
  if (!ci) return "";
  return SignedSig3(100 * (ci->first - 1)) + ".." + SignedSig3(100 * (ci->second - 1)) + "%";
}

std::string PText(double p) {
  if (std::isnan(p)) return "";
  if (p < 0.0001) return "<0.0001";
  if (p >= 0.9995) return "1";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", p);
  return buf;
}

std::string MinAbsText(const DiffResult& r, const MetricDiff& md, bool ascii) {
  std::string s = output::FormatValue(md.min_abs, md.unit, ascii);
  if (md.unit == cct::Unit::kPercent && !s.empty() && s.back() == '%') s.replace(s.size() - 1, 1, " pp");
  if (r.options().min_abs.fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", 100 * r.options().min_abs.value);
    s += " (" + std::string(buf) + "% of the base total)";
  }
  return s;
}

std::string ThresholdText(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", 100 * t);
  return buf;
}

namespace {

std::string AlphaText(double alpha) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", alpha);
  return buf;
}

}  // namespace

std::string VerdictRuleText(const DiffResult& r, const MetricDiff& md, bool ascii) {
  std::string v = "change > " + ThresholdText(r.options().threshold) + " and > " + MinAbsText(r, md, ascii);
  if (r.tested()) v += " and p < " + AlphaText(r.options().alpha);
  return v;
}

std::string RunsText(size_t n) { return std::to_string(n) + (n == 1 ? " run" : " runs"); }

Facts GatherFacts(const DiffResult& r, const diff::Side& base, const diff::Side& cand, bool ascii) {
  Facts f;
  f.lines.emplace_back("base", base.label);
  f.lines.emplace_back("candidate", cand.label);
  std::string metrics;
  for (const MetricDiff& md : r.metrics()) metrics += (metrics.empty() ? "" : ", ") + md.name;
  if (r.options().normalize_total) metrics += " as shares of each run's total (--normalize-total)";
  f.lines.emplace_back(r.metrics().size() == 1 ? "metric" : "metrics", metrics);
  std::string align = "path identity";
  if (r.options().align.normalize.kernels) align += ", kernel and function names normalized";
  if (r.options().align.fold_recursion) align += ", direct recursion folded";
  f.lines.emplace_back("aligned", align);
  const double alpha = r.options().alpha;
  const std::string alpha_text = AlphaText(alpha);
  if (r.tested()) {
    f.lines.emplace_back("test", "Mann-Whitney U (two-sided), alpha " + alpha_text +
                                     "; 95% interval of the ratio of means");
  }
  for (const MetricDiff& md : r.metrics())
    f.lines.emplace_back(r.metrics().size() == 1 ? "verdict" : "verdict " + md.name, VerdictRuleText(r, md, ascii));
  const size_t nb = r.base_runs(), nc = r.cand_runs();
  if (nb == 1 && nc == 1 && !base.group && !cand.group) {
    f.lines.emplace_back("note", "single runs: no significance test, so noise counts as change; compare "
                                 "groups (tag:KEY=VALUE) of 5+ runs a side");
  } else if (!r.tested()) {
    f.lines.emplace_back("note", RunsText(nb) + " vs " + RunsText(nc) + ": fewer than " +
                                     std::to_string(diff::kMinRunsForTest) +
                                     " on a side, so no significance test; verdicts use the thresholds only");
  } else if (r.smallest_p() >= alpha) {
    f.lines.emplace_back("note", RunsText(nb) + " vs " + RunsText(nc) + ": no p-value can fall below " +
                                     PText(r.smallest_p()) + ", not below alpha " + alpha_text +
                                     ", so nothing can be significant; use 5+ runs a side");
  }
  // Counted as the lists show them: the root is the total, reported apart.
  size_t reg = 0, imp = 0;
  bool total_reg = false, total_imp = false;
  for (const MetricDiff& md : r.metrics()) {
    const Verdict root = md.verdict[cct::kRootNode];
    total_reg |= root == Verdict::kRegression;
    total_imp |= root == Verdict::kImprovement;
    const bool root_cause = md.cause[cct::kRootNode] != 0;
    reg += md.regressions - (root == Verdict::kRegression && root_cause);
    imp += md.improvements - (root == Verdict::kImprovement && root_cause);
  }
  auto count = [](size_t n, const char* one, const char* many) {
    return (n == 0 ? std::string("no") : std::to_string(n)) + " " + (n == 1 ? one : many);
  };
  f.headline = count(reg, "regression", "regressions") + ", " + count(imp, "improvement", "improvements");
  if (total_reg && total_imp) f.headline += "; totals moved both ways";
  else if (total_reg) f.headline += "; the total regressed";
  else if (total_imp) f.headline += "; the total improved";
  return f;
}

std::string FitLine(const std::string& s, size_t width, bool ascii) {
  if (width == 0 || output::DisplayWidth(s) <= width) return s;
  std::string out;
  size_t cols = 0;
  const std::string dots = ascii ? "..." : "…";
  const size_t keep = width - output::DisplayWidth(dots);
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) {
      if (cols == keep) break;
      ++cols;
    }
    out.push_back(s[i]);
  }
  return out + dots;
}

void WriteFacts(const Facts& facts, size_t width, bool ascii, std::ostream& out) {
  size_t key_width = 0;
  for (const auto& [k, v] : facts.lines) key_width = std::max(key_width, k.size());
  const size_t indent = key_width + 2;
  for (const auto& [k, v] : facts.lines) {
    std::string line = output::PadRight(k, key_width) + "  ";
    size_t col = indent;
    size_t start = 0;
    while (start < v.size()) {
      size_t end = v.find(' ', start);
      if (end == std::string::npos) end = v.size();
      const std::string word = v.substr(start, end - start);
      const size_t ww = output::DisplayWidth(word);
      if (col > indent && width > 0 && col + 1 + ww > width) {
        out << line << '\n';
        line = std::string(indent, ' ');
        col = indent;
      } else if (col > indent) {
        line += ' ';
        ++col;
      }
      line += word;
      col += ww;
      start = end + 1;
    }
    out << FitLine(line, width, ascii) << '\n';
  }
}

ChangeCells MakeChangeCells(const DiffResult& r) {
  ChangeCells cc;
  cc.sd = !r.metrics().empty() && !r.metrics().front().base_sd.empty();
  cc.tested = r.tested();
  cc.columns.push_back({"base", 3});
  if (cc.sd) cc.columns.push_back({"±sd", 6});
  cc.columns.push_back({"cand", 5});
  if (cc.sd) cc.columns.push_back({"±sd", 7});
  cc.columns.push_back({"delta", 0});
  cc.columns.push_back({"change", 0});
  if (cc.tested) {
    cc.columns.push_back({"95% CI", 4});
    cc.columns.push_back({"p", 0});
  }
  return cc;
}

std::string ListTitle(const char* what, const std::string& metric, size_t count, size_t shown) {
  std::string s = std::string(what) + " in " + metric + ": ";
  if (count == 0) return s + "none";
  s += std::to_string(count);
  if (shown < count) s += ", the " + std::to_string(shown) + " largest shown";
  return s;
}

std::string ContextTitle(size_t count, size_t shown) {
  std::string s = "context, not counted: " + std::to_string(count) +
                  (count == 1 ? " caller that only inherits" : " callers that only inherit") + " these changes";
  if (shown < count) s += ", the " + std::to_string(shown) + " largest shown";
  return s;
}

size_t Shown(size_t count, size_t limit) { return limit == 0 ? count : std::min(count, limit); }

SplitRoots MajorRoots(const DiffResult& r, size_t m, NodeStatus status) {
  const MetricDiff& md = r.metrics()[m];
  const std::vector<double>& value = status == NodeStatus::kNew ? md.cand_inc : md.base_inc;
  SplitRoots out;
  for (NodeId n : r.SubtreeRoots(m, status)) {
    const bool significant = r.tested() && r.PValue(m, n) < r.options().alpha;
    if (std::fabs(value[n]) >= md.min_abs || significant) {
      out.major.push_back(n);
    } else {
      ++out.minor;
      out.minor_value += value[n];
    }
  }
  return out;
}

std::string MinorLine(const DiffResult& r, size_t m, NodeStatus status, const SplitRoots& split, bool ascii) {
  if (split.minor == 0) return {};
  const MetricDiff& md = r.metrics()[m];
  std::string s = std::to_string(split.minor) + (split.major.empty() ? " " : " more ") +
                  (status == NodeStatus::kNew ? "new" : "gone") + ", each below " + Value(md.min_abs, md.unit, ascii) +
                  " (--min-abs)" + (r.tested() ? " and not significant" : "") + ": " +
                  Value(split.minor_value, md.unit, ascii) + " in all";
  return s;
}

bool NothingToList(const DiffResult& r, size_t m) {
  return r.Ranked(m, Verdict::kRegression).empty() && r.Ranked(m, Verdict::kImprovement).empty() &&
         r.SubtreeRoots(m, NodeStatus::kNew).empty() && r.SubtreeRoots(m, NodeStatus::kGone).empty();
}

std::string NothingLine(const std::string& metric) {
  return metric + ": no regressions or improvements, nothing new or gone";
}

double Export(double v, cct::Unit unit) { return output::ExportValue(v, unit); }

}  // namespace diff_report

cct::Result<DiffFormat> ParseDiffFormat(const std::string& s) {
  if (s == "text") return DiffFormat::kText;
  if (s == "json") return DiffFormat::kJson;
  if (s == "markdown" || s == "md") return DiffFormat::kMarkdown;
  if (s == "csv") return DiffFormat::kCsv;
  return cct::InvalidArgument("unknown format '" + s + "' (expected text, json, markdown or csv)");
}

void WriteDiffReport(const diff::DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o,
                 std::ostream& out) {
  using namespace diff_report;
  if (o.tree) {
    const TreeView view(r, o);
    switch (o.format) {
      case DiffFormat::kText: {
        const Facts facts = GatherFacts(r, base, cand, o.ascii);
        out << FitLine("cct-diff: " + facts.headline, o.width, o.ascii) << '\n';
        WriteFacts(facts, o.width, o.ascii, out);
        out << '\n';
        WriteTreeText(r, view, o, out);
        break;
      }
      case DiffFormat::kMarkdown: {
        out << "### cct-diff: " << GatherFacts(r, base, cand, false).headline << "\n\n```\n";
        DiffReportOptions plain = o;
        plain.color = false;
        WriteTreeText(r, view, plain, out);
        out << "```\n";
        break;
      }
      case DiffFormat::kJson: WriteTreeJson(r, view, out); break;
      case DiffFormat::kCsv: WriteTreeCsv(r, view, out); break;
    }
    return;
  }
  switch (o.format) {
    case DiffFormat::kText: WriteText(r, base, cand, o, out); break;
    case DiffFormat::kMarkdown: WriteMarkdown(r, base, cand, o, out); break;
    case DiffFormat::kJson: WriteJson(r, base, cand, o, out); break;
    case DiffFormat::kCsv: WriteCsv(r, o, out); break;
  }
}

}  // namespace reports
