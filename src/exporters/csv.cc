// The table exports: one row per node (per run and node for several runs),
// a tidy table for pandas, DuckDB and spreadsheets.
//
//   --to csv:        run,run_name,node,parent,depth,kind,name,function,module,file,line,path,<m> (inc),<m> (exc),...
//   --to json-rows:  [{"run": 3, "run_name": "...", "node": 1, ..., "<m> (inc)": 0.5, ...}, ...]
//
// `run` is the run's id (empty or null for an aggregate: a group's mean, an
// invocation's total; `run_name` then holds its label). `node` and `parent`
// are the run's node ids (preorder, parent before child; the root is node 0
// and has no row, so `parent` is empty for the nodes directly under it).
// `function` is the function a row belongs to: the node's own name for a
// function, the enclosing function's for a source line (whose `name` is the
// "file.cc:56" pseudo-frame), empty for threads, NVTX ranges and GPU work.
// `path` joins the frame names from the root's child down to the node with
// ';' (a ';' inside a name is written as ':', as in folded stacks). Every
// metric of the runs (or the -m ones) gets an inclusive and an exclusive
// column in export units: seconds for times, bytes, counts; a run without
// the metric and a derived metric without a value leave the cell empty.
// Several runs take the union of their metrics, in first-seen order.
// Streams: rows are written in preorder as each tree is walked.
#include <algorithm>
#include <cmath>
#include <optional>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "output/format.h"
#include "output/json_writer.h"
#include "output/progress.h"

namespace exporters {

using cct::MetricId;
using cct::NodeId;
using cct::Status;

namespace {

// A metric column of the table: its name and unit, and per run the metric's
// id there (none where the run lacks it).
struct TableMetric {
  std::string name;
  cct::Unit unit;
  std::vector<std::optional<MetricId>> in_run;
};

cct::Result<std::vector<TableMetric>> TableMetrics(const std::vector<TableRun>& runs,
                                                   const std::vector<std::string>& names) {
  std::vector<TableMetric> out;
  auto add = [&](size_t r, MetricId m) {
    const cct::MetricDesc& d = runs[r].tree->metrics().Get(m);
    auto it = std::find_if(out.begin(), out.end(), [&](const TableMetric& t) { return t.name == d.name; });
    if (it == out.end()) {
      out.push_back({d.name, d.unit, std::vector<std::optional<MetricId>>(runs.size())});
      it = out.end() - 1;
    }
    it->in_run[r] = m;
  };
  for (size_t r = 0; r < runs.size(); ++r) {
    const cct::Tree& tree = *runs[r].tree;
    if (names.empty()) {
      for (MetricId m = 0; m < tree.metrics().size(); ++m) add(r, m);
      continue;
    }
    auto ids = query::ResolveMetrics(tree, names);
    if (!ids.ok()) {
      if (runs.size() == 1) return ids.status();
      return ids.status().WithContext("run " + (runs[r].run ? std::to_string(*runs[r].run) : runs[r].run_name));
    }
    for (MetricId m : *ids) add(r, m);
  }
  if (out.empty()) return cct::NotFound(runs.size() == 1 ? "the run has no metrics to export"
                                                          : "the runs have no metrics to export");
  return out;
}

// The cells of one row, for either writer.
struct Row {
  const TableRun* run;
  NodeId node;
  uint32_t depth;
  const std::string* path;
  std::string_view function;
};

// Walks every run's tree in preorder and hands each row to `emit`, with the
// run's values for the table's metrics (NaN where there is none).
template <typename Emit>
void WalkRows(const std::vector<TableRun>& runs, const std::vector<TableMetric>& metrics, output::Progress* progress,
              Emit emit) {
  if (progress) {
    uint64_t total = 0;
    for (const TableRun& r : runs) total += r.tree->size();
    progress->SetTotal(total);
  }
  uint64_t done = 0;
  std::vector<double> inc(metrics.size()), exc(metrics.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    const cct::Tree& tree = *runs[r].tree;
    cct::NodeValues values(tree);
    std::vector<const std::vector<double>*> inc_of(metrics.size()), exc_of(metrics.size());
    std::vector<bool> blank_zero(metrics.size());
    for (size_t i = 0; i < metrics.size(); ++i) {
      if (!metrics[i].in_run[r]) continue;
      const MetricId m = *metrics[i].in_run[r];
      inc_of[i] = &values.Inclusive(m);
      exc_of[i] = &values.Exclusive(m);
      // A derived metric with no operands at a node has no value there.
      blank_zero[i] = tree.metrics().Get(m).kind != cct::MetricKind::kAdditive;
    }
    const cct::Children children = cct::BuildChildren(tree);
    struct Item {
      NodeId node;
      uint32_t depth;
      size_t path_len;  // length of the parent's path
      std::string_view function;  // the enclosing function's name
    };
    std::string path;
    std::vector<Item> stack;
    for (const NodeId* c = children.end(cct::kRootNode); c != children.begin(cct::kRootNode);)
      stack.push_back({*--c, 1, 0, {}});
    while (!stack.empty()) {
      const Item it = stack.back();
      stack.pop_back();
      path.resize(it.path_len);
      if (!path.empty()) path.push_back(';');
      const std::string_view name = tree.name(it.node);
      for (char c : name) path.push_back(c == ';' ? ':' : c);
      const cct::FrameKind kind = tree.frame(it.node).kind;
      const std::string_view function =
          kind == cct::FrameKind::kFunction ? name : kind == cct::FrameKind::kLine ? it.function : std::string_view();
      for (size_t i = 0; i < metrics.size(); ++i) {
        if (!inc_of[i]) {
          inc[i] = exc[i] = NAN;
          continue;
        }
        auto value = [&](double v) { return blank_zero[i] && v == 0 ? NAN : output::ExportValue(v, metrics[i].unit); };
        inc[i] = value((*inc_of[i])[it.node]);
        exc[i] = value((*exc_of[i])[it.node]);
      }
      emit(Row{&runs[r], it.node, it.depth, &path, function}, inc, exc);
      // Below a function its name encloses; below a line or a range the
      // enclosing function stays the one above.
      const std::string_view below = kind == cct::FrameKind::kFunction ? name : it.function;
      const size_t len = path.size();
      for (const NodeId* c = children.end(it.node); c != children.begin(it.node);)
        stack.push_back({*--c, it.depth + 1, len, below});
      if (progress) progress->Update(++done);
    }
  }
}

std::string ParentCell(const cct::Tree& tree, NodeId n) {
  return tree.parent(n) == cct::kRootNode ? std::string() : std::to_string(tree.parent(n));
}

}  // namespace

std::vector<TableRun> TableRuns(const query::Profile& profile, bool per_run) {
  std::vector<TableRun> out;
  if (per_run && profile.run_trees.size() == profile.runs.size() && !profile.run_trees.empty()) {
    for (size_t i = 0; i < profile.runs.size(); ++i)
      out.push_back({profile.runs[i].id, profile.runs[i].name, &profile.run_trees[i]});
    return out;
  }
  if (profile.runs.size() == 1) return {{profile.runs[0].id, profile.runs[0].name, &profile.tree}};
  return {{std::nullopt, profile.label, &profile.tree}};
}

Status ExportCsvRuns(const std::vector<TableRun>& runs, const ExportOptions& options, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(std::vector<TableMetric> metrics, TableMetrics(runs, options.metrics));
  out << "run,run_name,node,parent,depth,kind,name,function,module,file,line,path";
  for (const TableMetric& m : metrics)
    out << ',' << output::CsvField(m.name + " (inc)") << ',' << output::CsvField(m.name + " (exc)");
  out << '\n';
  auto cell = [](double v) { return std::isnan(v) ? std::string() : output::NumberText(v); };
  WalkRows(runs, metrics, options.progress,
           [&](const Row& row, const std::vector<double>& inc, const std::vector<double>& exc) {
             const cct::Tree& tree = *row.run->tree;
             const cct::Frame f = tree.frame(row.node);
             out << (row.run->run ? std::to_string(*row.run->run) : std::string()) << ',' << output::CsvField(row.run->run_name) << ',' << row.node << ','
                 << ParentCell(tree, row.node) << ',' << row.depth << ',' << cct::FrameKindName(f.kind) << ','
                 << output::CsvField(tree.str(f.name)) << ',' << output::CsvField(row.function) << ','
                 << output::CsvField(tree.str(f.module)) << ',' << output::CsvField(tree.str(f.file)) << ','
                 << f.line << ',' << output::CsvField(*row.path);
             for (size_t i = 0; i < inc.size(); ++i) out << ',' << cell(inc[i]) << ',' << cell(exc[i]);
             out << '\n';
           });
  return Status::Ok();
}

Status ExportJsonRowsRuns(const std::vector<TableRun>& runs, const ExportOptions& options, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(std::vector<TableMetric> metrics, TableMetrics(runs, options.metrics));
  std::vector<std::string> inc_keys, exc_keys;
  for (const TableMetric& m : metrics) {
    inc_keys.push_back(m.name + " (inc)");
    exc_keys.push_back(m.name + " (exc)");
  }
  // A row per line: readable, and a diff of two exports stays small.
  out << '[';
  bool first = true;
  WalkRows(runs, metrics, options.progress,
           [&](const Row& row, const std::vector<double>& inc, const std::vector<double>& exc) {
             const cct::Tree& tree = *row.run->tree;
             const cct::Frame f = tree.frame(row.node);
             out << (first ? "\n" : ",\n");
             first = false;
             output::JsonWriter w(out);
             w.BeginObject();
             if (row.run->run) w.FieldInt("run", static_cast<long long>(*row.run->run));
             else w.Key("run").Null();
             w.Field("run_name", row.run->run_name).FieldInt("node", row.node);
             if (tree.parent(row.node) == cct::kRootNode) w.Key("parent").Null();
             else w.FieldInt("parent", tree.parent(row.node));
             w.FieldInt("depth", row.depth)
                 .Field("kind", cct::FrameKindName(f.kind))
                 .Field("name", tree.str(f.name))
                 .Field("function", row.function)
                 .Field("module", tree.str(f.module))
                 .Field("file", tree.str(f.file))
                 .FieldInt("line", f.line)
                 .Field("path", *row.path);
             for (size_t i = 0; i < inc.size(); ++i) {
               w.Key(inc_keys[i]).Number(inc[i]);  // NaN: null
               w.Key(exc_keys[i]).Number(exc[i]);
             }
             w.EndObject();
           });
  out << (first ? "]\n" : "\n]\n");
  return Status::Ok();
}

Status ExportCsv(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  return ExportCsvRuns(TableRuns(profile, false), options, out);
}

Status ExportJsonRows(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  return ExportJsonRowsRuns(TableRuns(profile, false), options, out);
}

}  // namespace exporters
