// `cct-query table SELECTOR --by tag:KEY`: tables for papers. The selected
// runs are grouped by the value of a tag; per group and metric the table
// gives the mean over the group's runs with a confidence interval from
// Student's t distribution (mean ± t(1-α/2, n-1)·s/√n) and n.
//
// A run's value of a metric is its total (the root's inclusive value), or
// with --nodes REGEX the inclusive value of the frames whose names match,
// each subtree counted once. Runs without the metric do not count towards
// its n; runs without the tag are left out (the text format says how many).
//
// Printing: each metric column gets one unit, chosen so its largest mean
// reads as a number from 1 to 999 where the unit allows (s/ms/µs/ns,
// B/KiB/MiB/GiB, k/M/G for counts), and one number of decimal places
// (ColumnDecimals): every half-width keeps at least two significant digits
// and the means are rounded to the same place, so the digits shown are the
// ones the data supports and line up. CSV and JSON carry unrounded values in
// export units (seconds, bytes) instead.
//
// --baseline VALUE adds after each metric its speedup against that group:
// the baseline's mean over the group's (above 1: the group's is smaller),
// to two decimal places.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "cct/node_values.h"
#include "cct/pattern.h"
#include "cct/statistics.h"
#include "output/format.h"
#include "reports/registry.h"
#include "reports/reports.h"
#include "store/selector.h"

namespace reports {

using cct::MetricId;
using cct::NodeId;
using cct::Status;
using output::CsvField;
using output::DisplayWidth;
using output::ExportValue;
using output::NumberText;
using output::PadLeft;
using output::PadRight;

// Student's t quantile: cct/statistics.h (shared with the diff engine).
double StudentTQuantile(double p, double df) { return cct::StudentTQuantile(p, df); }

// ---------------------------------------------------------------- the table

namespace {

struct Stat {
  size_t n = 0;
  double mean = NAN, sd = NAN, half = NAN;  // half-width of the interval; NaN for n < 2
};

Stat Summarize(const std::vector<double>& xs, double confidence) {
  Stat s;
  s.n = xs.size();
  if (s.n == 0) return s;
  double sum = 0;
  for (double x : xs) sum += x;
  s.mean = sum / static_cast<double>(s.n);
  if (s.n < 2) return s;
  double ss = 0;
  for (double x : xs) ss += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(ss / static_cast<double>(s.n - 1));
  s.half = StudentTQuantile(1 - (1 - confidence) / 2, static_cast<double>(s.n - 1)) * s.sd /
           std::sqrt(static_cast<double>(s.n));
  return s;
}

// A display unit for a column: divide stored values by `div`.
struct PrintUnit {
  double div = 1;
  std::string name;   // "ms", "MiB", "k", "" ...
  std::string latex;  // the same for LaTeX
};

PrintUnit ChooseUnit(cct::Unit unit, double largest, bool ascii) {
  const double a = std::fabs(largest);
  switch (unit) {
    case cct::Unit::kNanoseconds: {
      if (a >= 1e9 * 0.9995 || a == 0) return {1e9, "s", "s"};
      if (a >= 1e6 * 0.9995) return {1e6, "ms", "ms"};
      if (a >= 1e3 * 0.9995) return {1e3, ascii ? "us" : "µs", "\\textmu{}s"};
      return {1, "ns", "ns"};
    }
    case cct::Unit::kBytes: {
      static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
      int i = 0;
      while (i < 4 && a >= std::pow(1024.0, i + 1) * 0.9995) ++i;
      return {std::pow(1024.0, i), names[i], names[i]};
    }
    case cct::Unit::kPercent: return {1, "%", "\\%"};
    default: {
      static const char* names[] = {"", "k", "M", "G", "T"};
      int i = 0;
      while (i < 4 && a >= std::pow(1000.0, i + 1) * 0.9995 && a >= 1e6) ++i;
      return {std::pow(1000.0, i), names[i], names[i]};
    }
  }
}

// The decimal places a group's cell asks for: two significant digits of the
// half-width, or three of the mean where there is no interval.
std::optional<int> WantedDecimals(const Stat& s, double div) {
  if (s.n == 0 || std::isnan(s.mean)) return std::nullopt;
  if (!std::isnan(s.half) && s.half > 0) {
    const double h = s.half / div;
    int decimals = 1 - static_cast<int>(std::floor(std::log10(h)));
    // Rounding can carry into a third digit (0.0996 -> 0.10): keep two.
    if (std::round(h * std::pow(10.0, decimals)) >= 100) --decimals;
    return decimals;
  }
  const double a = std::fabs(s.mean / div);
  return a == 0 ? 0 : 2 - static_cast<int>(std::floor(std::log10(a)));
}

// A column prints every group to one number of decimal places, so the digits
// line up and a reader compares like with like: the most any interval needs
// (each keeps at least two significant digits); groups of one run follow
// the column. Without any interval: three significant digits of the largest
// mean. Negative: rounded to tens, hundreds.
int ColumnDecimals(const std::vector<Stat>& column, double div) {
  std::optional<int> with_interval, largest_mean;
  double largest = -1;
  for (const Stat& s : column) {
    const std::optional<int> d = WantedDecimals(s, div);
    if (!d) continue;
    if (!std::isnan(s.half) && s.half > 0) {
      with_interval = std::max(with_interval.value_or(*d), *d);
    } else if (std::fabs(s.mean) > largest) {
      largest = std::fabs(s.mean);
      largest_mean = d;
    }
  }
  if (with_interval) return *with_interval;
  return largest_mean.value_or(0);
}

std::string FormatDecimals(double v, int decimals) {
  char buf[64];
  if (decimals >= 0) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  } else {
    const double q = std::pow(10.0, -decimals);
    std::snprintf(buf, sizeof buf, "%.0f", std::round(v / q) * q);
  }
  std::string out = buf;
  if (out[0] == '-' && out.find_first_not_of("-0.") == std::string::npos) out.erase(0, 1);  // "-0.0"
  return out;
}

// Mean and half-width as printed (empty when the group has no value).
struct Printed {
  std::string mean, half;
};
Printed PrintStat(const Stat& s, double div, int decimals) {
  Printed p;
  if (s.n == 0 || std::isnan(s.mean)) return p;
  p.mean = FormatDecimals(s.mean / div, decimals);
  if (!std::isnan(s.half)) p.half = FormatDecimals(s.half / div, decimals);
  return p;
}

std::string LatexEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "\\&"; break;
      case '%': out += "\\%"; break;
      case '$': out += "\\$"; break;
      case '#': out += "\\#"; break;
      case '_': out += "\\_"; break;
      case '{': out += "\\{"; break;
      case '}': out += "\\}"; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '\\': out += "\\textbackslash{}"; break;
      case '<': out += "\\textless{}"; break;
      case '>': out += "\\textgreater{}"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

// Natural order of tag values: numbers by value, then text.
bool GroupLess(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  const double da = std::strtod(a.c_str(), &ea), db = std::strtod(b.c_str(), &eb);
  const bool na = !a.empty() && *ea == '\0', nb = !b.empty() && *eb == '\0';
  if (na && nb && da != db) return da < db;
  if (na != nb) return na;
  return a < b;
}

}  // namespace

cct::Result<TableFormat> ParseTableFormat(const std::string& s) {
  if (s == "text") return TableFormat::kText;
  if (s == "markdown" || s == "md") return TableFormat::kMarkdown;
  if (s == "csv") return TableFormat::kCsv;
  if (s == "latex" || s == "tex") return TableFormat::kLatex;
  if (s == "json") return TableFormat::kJson;
  return cct::InvalidArgument("unknown table format '" + s + "' (expected text, markdown, csv, latex or json)");
}

Status WriteTableReport(const std::string& selector_text, const std::string& default_db, const TableOptions& opt,
                        std::ostream& out) {
  if (opt.by.rfind("tag:", 0) != 0 || opt.by.size() <= 4 || opt.by.find('=') != std::string::npos)
    return cct::InvalidArgument("--by must be tag:KEY (the tag whose values make the groups), not '" + opt.by + "'");
  if (!(opt.confidence > 0 && opt.confidence < 1))
    return cct::InvalidArgument("--confidence must be between 0 and 1 (e.g. 0.95)");
  const std::string key = opt.by.substr(4);
  std::optional<cct::Pattern> nodes;
  if (!opt.nodes.empty()) {
    CCT_ASSIGN_OR_RETURN(nodes, cct::Pattern::Compile(opt.nodes, "--nodes pattern"));
  }
  CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(selector_text, default_db));
  if (sel.iteration) return cct::InvalidArgument("table works on whole runs, not iterations");
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(sel.db_path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(std::vector<store::RunMeta> runs, store::SelectRuns(*db, sel));

  // Per group: per metric, the runs' values.
  // Columns are named by metric; a -m NAME=EXPR column by its NAME.
  std::vector<std::string> metric_names;
  for (const std::string& spec : opt.metrics) metric_names.emplace_back(cct::MetricRegistry::DefinedName(spec));
  std::map<std::string, cct::Unit> metric_units;
  std::map<std::string, std::map<std::string, std::vector<double>>, decltype(&GroupLess)> values(&GroupLess);
  std::map<std::string, size_t, decltype(&GroupLess)> group_runs(&GroupLess);
  size_t untagged = 0;
  for (const store::RunMeta& run : runs) {
    auto tag = run.tags.find(key);
    if (tag == run.tags.end()) {
      ++untagged;
      continue;
    }
    CCT_ASSIGN_OR_RETURN(cct::Tree tree, db->ReadTree(run.id));
    CCT_RETURN_IF_ERROR(query::DefineMetrics(tree, opt.metrics).WithContext(query::RunLabel(run)));
    if (metric_names.empty()) {
      if (tree.metrics().size() == 0) return cct::NotFound(query::RunLabel(run) + " has no metrics");
      metric_names.push_back(tree.metrics().Get(0).name);
    }
    ++group_runs[tag->second];
    cct::NodeValues nv(tree);
    std::vector<char> matches;
    if (nodes) {
      matches.assign(tree.size(), 0);  // 1: matches and no ancestor does
      for (NodeId n : cct::OutermostMatches(tree, *nodes)) matches[n] = 1;
    }
    for (const std::string& name : metric_names) {
      const MetricId m = tree.metrics().Find(name);
      if (m == cct::kNoMetric) continue;
      const cct::MetricDesc& d = tree.metrics().Get(m);
      auto [u, inserted] = metric_units.emplace(name, d.unit);
      if (!inserted && u->second != d.unit)
        return cct::InvalidArgument("metric '" + name + "' has different units in different runs");
      double v = 0;
      if (nodes) {
        if (d.kind != cct::MetricKind::kAdditive)
          return cct::InvalidArgument("--nodes sums additive metrics; '" + name + "' is derived");
        const std::vector<double>& inc = nv.Inclusive(m);
        for (NodeId n = 1; n < tree.size(); ++n)
          if (matches[n]) v += inc[n];
      } else {
        v = nv.Inclusive(m)[cct::kRootNode];
      }
      values[tag->second][name].push_back(v);
    }
  }
  if (group_runs.empty())
    return cct::NotFound("none of the " + std::to_string(runs.size()) + " selected runs has a tag '" + key + "'");
  for (const std::string& name : metric_names)
    if (!metric_units.count(name)) return cct::InvalidArgument("no selected run has a metric '" + name + "'");

  if (!opt.baseline.empty() && !group_runs.count(opt.baseline)) {
    std::string known;
    for (const auto& [g, n] : group_runs) known += (known.empty() ? "" : ", ") + g;
    return cct::InvalidArgument("--baseline '" + opt.baseline + "' is not a group of tag " + key + " (groups: " +
                                cct::ElideMiddle(known, 200) + ")");
  }

  // Statistics, print units and decimal places.
  std::map<std::string, std::map<std::string, Stat>> stats;
  std::map<std::string, PrintUnit> print_units;
  std::map<std::string, int> decimals;
  for (const std::string& name : metric_names) {
    double largest = 0;
    std::vector<Stat> column;
    for (const auto& [g, n] : group_runs) {
      Stat s = Summarize(values[g][name], opt.confidence);
      if (!std::isnan(s.mean)) largest = std::max(largest, std::fabs(s.mean));
      stats[g][name] = s;
      column.push_back(s);
    }
    print_units[name] = ChooseUnit(metric_units[name], largest, opt.ascii);
    decimals[name] = ColumnDecimals(column, print_units[name].div);
  }
  // --baseline: per metric the baseline group's mean over the group's, the
  // speedup when smaller is better (times, bytes, samples); NaN where either
  // mean is missing or the group's is 0.
  const bool speedup = !opt.baseline.empty();
  auto ratio = [&](const std::string& g, const std::string& name) {
    const double base = stats[opt.baseline][name].mean, mine = stats[g][name].mean;
    return std::isnan(base) || std::isnan(mine) || mine == 0 ? NAN : base / mine;
  };
  // Two decimal places in every row of the column, as for the means.
  auto ratio_cell = [&](const std::string& g, const std::string& name, bool latex) {
    const double r = ratio(g, name);
    if (std::isnan(r)) return std::string(latex ? "--" : "-");
    const std::string x = FormatDecimals(r, 2);
    return latex ? "$" + x + "\\times$" : x + (opt.ascii ? "x" : "×");
  };
  auto ratio_header = [&](const std::string& name) {
    return metric_names.size() == 1 ? std::string("speedup") : name + " speedup";
  };
  const std::string what = std::string(nodes ? "frames /" + opt.nodes + "/, " : "") + "mean ± " +
                           NumberText(opt.confidence * 100) + "% CI (Student t) over runs" +
                           (opt.baseline.empty() ? "" : "; speedup: mean of " + opt.baseline + " / mean");
  auto header_of = [&](const std::string& name, bool latex) {
    const PrintUnit& u = print_units[name];
    const std::string unit = latex ? u.latex : u.name;
    const std::string n = latex ? LatexEscape(name) : name;
    return unit.empty() ? n : n + " (" + unit + ")";
  };
  auto cell = [&](const std::string& g, const std::string& name, bool latex) {
    const Stat& s = stats[g][name];
    const Printed p = PrintStat(s, print_units[name].div, decimals[name]);
    if (p.mean.empty()) return std::string(latex ? "--" : "-");
    std::string c = p.half.empty() ? p.mean : p.mean + (latex ? " \\pm " : (opt.ascii ? " +- " : " ± ")) + p.half;
    if (latex) c = "$" + c + "$";
    if (s.n != group_runs[g]) c += " (n=" + std::to_string(s.n) + ")";
    return c;
  };

  switch (opt.format) {
    case TableFormat::kText: {
      out << "runs " << sel.text << " by " << opt.by << ": " << (opt.ascii ? "mean +- " : "mean ± ")
          << NumberText(opt.confidence * 100) << "% CI (Student t)" << (nodes ? "; frames /" + opt.nodes + "/" : "")
          << (speedup ? "; speedup: mean of " + opt.baseline + " / mean" : "") << '\n';
      // Group first, then n and the metrics, right-aligned.
      std::vector<std::vector<std::string>> grid{{key, "n"}};
      for (const std::string& name : metric_names) {
        grid[0].push_back(header_of(name, false));
        if (speedup) grid[0].push_back(ratio_header(name));
      }
      for (const auto& [g, n] : group_runs) {
        std::vector<std::string> r{g, std::to_string(n)};
        for (const std::string& name : metric_names) {
          r.push_back(cell(g, name, false));
          if (speedup) r.push_back(ratio_cell(g, name, false));
        }
        grid.push_back(std::move(r));
      }
      std::vector<size_t> width(grid[0].size(), 0);
      for (const auto& r : grid)
        for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], DisplayWidth(r[i]));
      for (const auto& r : grid) {
        std::string line;
        for (size_t i = 0; i < r.size(); ++i) {
          if (i) line += "  ";
          line += i == 0 ? PadRight(r[i], width[i]) : PadLeft(r[i], width[i]);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
      }
      if (untagged) out << "(" << untagged << " run" << (untagged == 1 ? "" : "s") << " without tag " << key << " left out)\n";
      break;
    }
    case TableFormat::kMarkdown: {
      out << "| " << output::MarkdownText(key) << " | n |";
      for (const std::string& name : metric_names) {
        out << ' ' << output::MarkdownText(header_of(name, false)) << " |";
        if (speedup) out << ' ' << output::MarkdownText(ratio_header(name)) << " |";
      }
      out << "\n|:---|---:|";
      for (size_t i = 0; i < metric_names.size() * (speedup ? 2 : 1); ++i) out << "---:|";
      out << '\n';
      for (const auto& [g, n] : group_runs) {
        out << "| " << output::MarkdownText(g) << " | " << n << " |";
        for (const std::string& name : metric_names) {
          out << ' ' << cell(g, name, false) << " |";
          if (speedup) out << ' ' << ratio_cell(g, name, false) << " |";
        }
        out << '\n';
      }
      out << "\n" << output::MarkdownText(what) << "\n";
      break;
    }
    case TableFormat::kLatex: {
      out << "% cct-query table " << sel.text << " --by " << opt.by << ": " << what << "\n";
      out << "% needs \\usepackage{booktabs}\n";
      out << "\\begin{tabular}{lr" << std::string(metric_names.size() * (speedup ? 2 : 1), 'r') << "}\n\\toprule\n";
      out << LatexEscape(key) << " & $n$";
      for (const std::string& name : metric_names) {
        out << " & " << header_of(name, true);
        if (speedup) out << " & " << LatexEscape(ratio_header(name));
      }
      out << " \\\\\n\\midrule\n";
      for (const auto& [g, n] : group_runs) {
        out << LatexEscape(g) << " & " << n;
        for (const std::string& name : metric_names) {
          out << " & " << cell(g, name, true);
          if (speedup) out << " & " << ratio_cell(g, name, true);
        }
        out << " \\\\\n";
      }
      out << "\\bottomrule\n\\end{tabular}\n";
      break;
    }
    case TableFormat::kCsv: {
      out << "group,metric,unit,n,mean,sd,half_width,ci_low,ci_high" << (speedup ? ",speedup" : "") << '\n';
      for (const auto& [g, n] : group_runs)
        for (const std::string& name : metric_names) {
          const Stat& s = stats[g][name];
          const cct::Unit u = metric_units[name];
          auto ev = [&](double v) { return std::isnan(v) ? std::string() : NumberText(ExportValue(v, u)); };
          out << CsvField(g) << ',' << CsvField(name) << ',' << (u == cct::Unit::kNanoseconds ? "s" : UnitName(u))
              << ',' << s.n << ',' << ev(s.mean) << ',' << ev(s.sd) << ',' << ev(s.half) << ','
              << ev(s.mean - s.half) << ',' << ev(s.mean + s.half);
          if (speedup) {
            const double r = ratio(g, name);
            out << ',' << (std::isnan(r) ? std::string() : NumberText(r));
          }
          out << '\n';
        }
      break;
    }
    case TableFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject().Field("runs", sel.text).Field("by", opt.by).Field("confidence", opt.confidence);
      if (nodes) w.Field("nodes", opt.nodes);
      if (speedup) w.Field("baseline", opt.baseline);
      w.Key("groups").BeginArray();
      for (const auto& [g, n] : group_runs) {
        w.BeginObject().Field("group", g).FieldInt("runs", static_cast<long long>(n)).Key("metrics").BeginObject();
        for (const std::string& name : metric_names) {
          const Stat& s = stats[g][name];
          const cct::Unit u = metric_units[name];
          auto num = [&](double v) { std::isnan(v) ? w.Null() : w.Number(ExportValue(v, u)); };
          w.Key(name).BeginObject().FieldInt("n", static_cast<long long>(s.n));
          w.Field("unit", u == cct::Unit::kNanoseconds ? std::string_view("s") : UnitName(u));
          w.Key("mean");
          num(s.mean);
          w.Key("sd");
          num(s.sd);
          w.Key("half_width");
          num(s.half);
          if (speedup) {
            const double r = ratio(g, name);
            w.Key("speedup");
            std::isnan(r) ? w.Null() : w.Number(r);
          }
          w.EndObject();
        }
        w.EndObject().EndObject();
      }
      w.EndArray().EndObject();
      out << '\n';
      break;
    }
  }
  return Status::Ok();
}

cct::Status TableCommand(const ReportRequest& request, std::ostream& out) {
  TableOptions to;
  if (!request.by) return cct::InvalidArgument("table needs --by tag:KEY (the tag whose values make the groups)");
  to.by = *request.by;
  to.metrics = request.options.metrics;
  if (request.nodes) to.nodes = *request.nodes;
  if (request.confidence) to.confidence = *request.confidence;
  if (request.format) {
    CCT_ASSIGN_OR_RETURN(to.format, ParseTableFormat(*request.format));
  }
  to.ascii = request.options.ascii;
  if (request.baseline) to.baseline = *request.baseline;
  return WriteTableReport(request.args.at(0), request.db_path, to, out);
}

}  // namespace reports
