// `cct-query kernels RUN|SELECTOR`: GPU kernels with their time, launch
// count, attached Nsight Compute metrics and bottleneck class; for a group of
// runs, kernel popularity (in how many runs a kernel appears and its total
// time).
//
// A kernel is a kernel node's name (one run) or its normalized name (across
// runs: template arguments and parameters dropped, so variants collapse).
// Times are the width metric (gker by default, -m to change) summed over the
// kernel's nodes; ncu metrics are per-launch averages over the kernel's
// profiled launches (the attached accumulators summed, divided by ncu:count).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "cct/node_values.h"
#include "output/format.h"
#include "query/gpu_kernels.h"
#include "reports/reports.h"
#include "store/selector.h"

namespace reports {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;
using cct::Status;

namespace {

struct KernelRow {
  std::string name, normalized;
  double time = 0, launches = 0, profiled = 0;
  std::map<std::string, double> ncu_acc;  // ncu metric -> accumulated sum
  std::set<store::RunId> runs;
  double Average(std::string_view metric) const {
    auto it = ncu_acc.find(std::string(metric));
    return it == ncu_acc.end() || profiled <= 0 ? NAN : it->second / profiled;
  }
  // Memory throughput % of peak: the larger of the memory (all units) and
  // DRAM figures that are attached.
  double MemoryPct() const {
    const double a = Average(query::kNcuMemoryThroughput), b = Average(query::kNcuDramThroughput);
    if (std::isnan(a)) return b;
    if (std::isnan(b)) return a;
    return std::max(a, b);
  }
  query::Bottleneck Class() const { return query::ClassifyBottleneck(Average(query::kNcuSmThroughput), MemoryPct()); }
};

// The ncu metrics a tree carries: name -> accumulator id (derived "M" with
// "M:acc" behind it, as AttachNcuMetrics registers them).
std::map<std::string, MetricId> NcuMetrics(const cct::Tree& tree) {
  std::map<std::string, MetricId> out;
  for (MetricId m = 0; m < tree.metrics().size(); ++m) {
    const cct::MetricDesc& d = tree.metrics().Get(m);
    if (d.kind != cct::MetricKind::kAdditive || d.description.rfind(query::kNcuDescriptionPrefix, 0) != 0) continue;
    if (d.name.size() > 4 && d.name.compare(d.name.size() - 4, 4, ":acc") == 0)
      out[d.name.substr(0, d.name.size() - 4)] = m;
  }
  return out;
}

// Adds one run's kernels into rows keyed by name (or normalized name).
Status Collect(const cct::Tree& tree, store::RunId run, const std::string& time_metric, bool normalize,
               std::map<std::string, KernelRow>& rows, std::set<std::string>& ncu_names) {
  const MetricId time = tree.metrics().Find(time_metric);
  const MetricId count = tree.metrics().Find("gker:count");
  const MetricId profiled = tree.metrics().Find(query::kNcuCount);
  const std::map<std::string, MetricId> ncu = NcuMetrics(tree);
  for (const auto& [name, id] : ncu) ncu_names.insert(name);
  cct::NodeValues values(tree);
  const std::vector<double>* t = time != cct::kNoMetric ? &values.Inclusive(time) : nullptr;
  const std::vector<double>* c = count != cct::kNoMetric ? &values.Inclusive(count) : nullptr;
  const std::vector<double>* p = profiled != cct::kNoMetric ? &values.Inclusive(profiled) : nullptr;
  std::vector<std::pair<std::string, const std::vector<double>*>> acc;
  for (const auto& [name, id] : ncu) acc.emplace_back(name, &values.Inclusive(id));
  // Kernel nodes nest only by accident (a kernel frame under a kernel frame);
  // count a subtree once.
  std::vector<char> inside(tree.size(), 0);
  for (NodeId n = 1; n < tree.size(); ++n) {
    const bool kernel = tree.kind(n) == FrameKind::kKernel;
    inside[n] = inside[tree.parent(n)] || kernel;
    if (!kernel || inside[tree.parent(n)]) continue;
    const std::string name = normalize ? query::NormalizeKernelName(tree.name(n)) : std::string(tree.name(n));
    KernelRow& r = rows[name];
    if (r.name.empty()) {
      r.name = name;
      r.normalized = query::NormalizeKernelName(tree.name(n));
    }
    r.runs.insert(run);
    if (t) r.time += (*t)[n];
    if (c) r.launches += (*c)[n];
    if (p) r.profiled += (*p)[n];
    for (const auto& [m, v] : acc) r.ncu_acc[m] += (*v)[n];
  }
  return Status::Ok();
}

}  // namespace

Status WriteKernelsReport(const std::string& selector_text, const std::string& default_db,
                          const ReportOptions& opt, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(selector_text, default_db));
  if (sel.iteration) return cct::InvalidArgument("kernels works on whole runs, not iterations");
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(sel.db_path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(std::vector<store::RunMeta> runs, store::SelectRuns(*db, sel));
  if (opt.metrics.size() > 1) return cct::InvalidArgument("kernels takes one -m (the time metric; default gker)");
  const std::string time_metric = opt.metrics.empty() ? "gker" : opt.metrics.front();
  const bool group = sel.is_group();

  std::map<std::string, KernelRow> rows;
  std::set<std::string> ncu_names;
  cct::Unit time_unit = cct::Unit::kNanoseconds;
  bool any_time = false;
  for (const store::RunMeta& run : runs) {
    CCT_ASSIGN_OR_RETURN(cct::Tree tree, db->ReadTree(run.id));
    const MetricId m = tree.metrics().Find(time_metric);
    if (m != cct::kNoMetric) {
      if (tree.metrics().Get(m).kind != cct::MetricKind::kAdditive)
        return cct::InvalidArgument("kernels needs an additive time metric; '" + time_metric + "' is derived");
      time_unit = tree.metrics().Get(m).unit;
      any_time = true;
    }
    CCT_RETURN_IF_ERROR(Collect(tree, run.id, time_metric, group, rows, ncu_names).WithContext(query::RunLabel(run)));
  }
  if (!any_time && !opt.metrics.empty())
    return cct::InvalidArgument("no metric '" + time_metric + "' in the selected run(s)");

  std::vector<const KernelRow*> sorted;
  double total_time = 0;
  for (const auto& [k, r] : rows) {
    sorted.push_back(&r);
    total_time += r.time;
  }
  std::sort(sorted.begin(), sorted.end(), [&](const KernelRow* a, const KernelRow* b) {
    if (group && a->runs.size() != b->runs.size()) return a->runs.size() > b->runs.size();
    if (a->time != b->time) return a->time > b->time;
    return a->name < b->name;
  });
  const size_t shown = opt.limit > 0 ? std::min(opt.limit, sorted.size()) : sorted.size();
  const std::string label = group                ? "group " + sel.text + " (" + std::to_string(runs.size()) + " runs)"
                            : sel.is_invocation() ? query::InvocationLabel(sel.text, runs.size())
                                                  : query::RunLabel(runs.front());
  const bool has_ncu = !ncu_names.empty();
  auto pct = [](double v) { return std::isnan(v) ? std::string() : output::FormatValue(v, cct::Unit::kPercent); };

  switch (opt.format) {
    case OutputFormat::kText: {
      out << label << ": " << rows.size() << " kernel" << (rows.size() == 1 ? "" : "s") << ", " << time_metric << " "
          << output::FormatValue(total_time, time_unit, opt.ascii) << " total";
      if (shown < sorted.size()) out << "; top " << shown;
      out << '\n';
      if (rows.empty()) {
        out << "(no GPU kernels in " << (group ? "these runs" : "this run") << ")\n";
        return Status::Ok();
      }
      // At 80 columns the ncu figures stay (SM % and occupancy are what the
      // report is read for): headers shorten first, then the columns that
      // follow from others go (time per launch, share, launches; memory
      // throughput last, the bottleneck class names it).
      std::vector<output::TextTable::Column> cols;
      if (group) cols.push_back({"runs", 0});
      cols.push_back({time_metric, 0});
      cols.push_back({"%", 3});
      cols.push_back({"launches", 2, false, "calls"});
      cols.push_back({"per launch", 4, false, "/call"});
      if (has_ncu) {
        cols.push_back({"SM %", 0});
        cols.push_back({"Mem %", 1});
        cols.push_back({"Occ %", 0});
        cols.push_back({"bottleneck", 0, true, "bound"});
      }
      output::TextTable table(cols, group ? "kernel (normalized)" : "kernel");
      for (size_t i = 0; i < shown; ++i) {
        const KernelRow& r = *sorted[i];
        std::vector<std::string> cells;
        if (group) cells.push_back(std::to_string(r.runs.size()) + "/" + std::to_string(runs.size()));
        cells.push_back(r.time == 0 ? "" : output::FormatValue(r.time, time_unit, opt.ascii));
        cells.push_back(r.time == 0 ? "" : output::FormatPercent(r.time, total_time));
        cells.push_back(r.launches == 0 ? "" : output::FormatValue(r.launches, cct::Unit::kCount));
        cells.push_back(
            r.launches == 0 || r.time == 0 ? "" : output::FormatValue(r.time / r.launches, time_unit, opt.ascii));
        if (has_ncu) {
          cells.push_back(pct(r.Average(query::kNcuSmThroughput)));
          cells.push_back(pct(r.MemoryPct()));
          cells.push_back(pct(r.Average(query::kNcuAchievedOccupancy)));
          cells.emplace_back(query::BottleneckName(r.Class()));
        }
        table.AddRow(std::move(cells), "", r.name);
      }
      table.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject().Field("label", label).FieldInt("runs", static_cast<long long>(runs.size()));
      w.Field("time_metric", time_metric).Field("total_time", output::ExportValue(total_time, time_unit));
      w.Key("kernels").BeginArray();
      for (size_t i = 0; i < shown; ++i) {
        const KernelRow& r = *sorted[i];
        w.BeginObject().Field("name", r.name).Field("normalized", r.normalized);
        w.FieldInt("runs", static_cast<long long>(r.runs.size()));
        w.Field("time", output::ExportValue(r.time, time_unit)).Field("launches", r.launches);
        w.Field("profiled_launches", r.profiled);
        w.Key("ncu").BeginObject();
        for (const std::string& m : ncu_names) {
          w.Key(m);
          const double v = r.Average(m);
          std::isnan(v) ? w.Null() : w.Number(v);
        }
        w.EndObject().Field("bottleneck", query::BottleneckName(r.Class())).EndObject();
      }
      w.EndArray().EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "kernel,normalized,runs," << output::CsvField(time_metric) << ",launches,profiled_launches";
      for (const std::string& m : ncu_names) out << ',' << output::CsvField(m);
      out << ",bottleneck\n";
      for (size_t i = 0; i < shown; ++i) {
        const KernelRow& r = *sorted[i];
        out << output::CsvField(r.name) << ',' << output::CsvField(r.normalized) << ',' << r.runs.size() << ','
            << output::NumberText(output::ExportValue(r.time, time_unit)) << ',' << output::NumberText(r.launches)
            << ',' << output::NumberText(r.profiled);
        for (const std::string& m : ncu_names) out << ',' << output::NumberText(r.Average(m));
        out << ',' << query::BottleneckName(r.Class()) << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

}  // namespace reports
