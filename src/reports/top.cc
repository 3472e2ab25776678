// `cct-query top`: a flat profile, nodes grouped by function, kernel, NVTX
// range, source line or module.
//
// A group's exclusive value is the sum over its nodes. Its inclusive value
// counts each node's subtree once: a node inside another node of the same
// group (recursion) adds nothing, so recursive functions are not counted
// twice. Derived metrics are evaluated from the group's summed operands.
// With a path query, only the query's match ends are grouped.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "cct/tree_ops.h"
#include "output/format.h"
#include "reports/registry.h"
#include "reports/reports.h"

namespace reports {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;
using cct::Status;
using output::BaseName;
using output::CsvField;

namespace {

constexpr uint32_t kNoGroup = UINT32_MAX;

struct Group {
  NodeId first_node = 0;  // a representative node (for name, module, file)
  std::string name, module, detail;
  FrameKind kind = FrameKind::kFunction;
  size_t nodes = 0;
  std::vector<double> inc, exc;  // per additive metric of the tree
};

bool InGroupKinds(GroupBy by, FrameKind k) {
  switch (by) {
    case GroupBy::kFunction: return k == FrameKind::kFunction || k == FrameKind::kUnknown;
    case GroupBy::kModule: return k == FrameKind::kFunction || k == FrameKind::kKernel;
    case GroupBy::kKernel: return k == FrameKind::kKernel;
    case GroupBy::kNvtx: return k == FrameKind::kNvtx;
    case GroupBy::kLine: return k == FrameKind::kLine;
  }
  return false;
}

std::string_view GroupHeader(GroupBy by) {
  switch (by) {
    case GroupBy::kFunction: return "function";
    case GroupBy::kModule: return "module";
    case GroupBy::kKernel: return "kernel";
    case GroupBy::kNvtx: return "NVTX range";
    case GroupBy::kLine: return "source line";
  }
  return "";
}

}  // namespace

Status WriteTopReport(query::Profile& profile, const ReportOptions& opt, std::ostream& out) {
  const cct::Tree& tree = profile.tree;
  CCT_ASSIGN_OR_RETURN(std::vector<MetricId> ids, query::ResolveMetrics(tree, opt.metrics));
  cct::NodeValues values(tree);
  output::MetricColumns cols(values, ids);
  const cct::MetricRegistry& reg = tree.metrics();
  query::PathQueryMatch match;
  if (!opt.query.empty()) {
    CCT_ASSIGN_OR_RETURN(match, MatchReportQuery(tree, values, opt.query, /*require_match=*/true));
  }
  const std::vector<char>* ends = opt.query.empty() ? nullptr : &match.end;

  // Additive metrics the report needs: the selected ones and the operands of
  // selected derived ones.
  std::vector<MetricId> additive;
  auto need = [&](MetricId m) {
    if (std::find(additive.begin(), additive.end(), m) == additive.end()) additive.push_back(m);
  };
  for (MetricId m : ids) {
    if (reg.Get(m).kind == cct::MetricKind::kAdditive) need(m);
    else
      for (MetricId op : reg.operand_ids(m)) need(op);
  }
  std::vector<const std::vector<double>*> inc, exc;
  for (MetricId m : additive) {
    inc.push_back(&values.Inclusive(m));
    exc.push_back(&values.Exclusive(m));
  }

  // Group key per frame.
  std::vector<uint32_t> frame_group(tree.frames().size(), kNoGroup);
  std::vector<Group> groups;
  std::unordered_map<std::string, uint32_t> by_key;
  for (cct::FrameId f = 0; f < tree.frames().size(); ++f) {
    const cct::Frame fr = tree.frames().Get(f);
    if (!InGroupKinds(opt.by, fr.kind)) continue;
    std::string key;
    switch (opt.by) {
      case GroupBy::kModule: key = std::string(tree.str(fr.module)); break;
      case GroupBy::kLine: key = std::string(tree.str(fr.file)) + ':' + std::to_string(fr.line); break;
      case GroupBy::kFunction: key = std::string(tree.str(fr.name)) + '\x1f' + std::string(tree.str(fr.module)); break;
      default: key = std::string(tree.str(fr.name));
    }
    auto [it, inserted] = by_key.emplace(key, static_cast<uint32_t>(groups.size()));
    if (inserted) {
      Group g;
      g.kind = fr.kind;
      g.inc.assign(additive.size(), 0);
      g.exc.assign(additive.size(), 0);
      switch (opt.by) {
        case GroupBy::kModule: g.name = fr.module ? std::string(tree.str(fr.module)) : "<unknown module>"; break;
        case GroupBy::kLine: g.name = cct::LineName(tree.str(fr.file), fr.line); break;
        default: g.name = std::string(tree.str(fr.name));
      }
      g.module = std::string(tree.str(fr.module));
      groups.push_back(std::move(g));
    }
    frame_group[f] = it->second;
  }

  // One pass in preorder with a count of open nodes per group.
  const cct::Children children = cct::BuildChildren(tree);
  std::vector<uint32_t> open(groups.size(), 0);
  struct Item {
    NodeId node;
    bool exit;
  };
  std::vector<Item> stack{{cct::kRootNode, false}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const uint32_t g = ends && !(*ends)[it.node] ? kNoGroup : frame_group[tree.frame_id(it.node)];
    if (it.exit) {
      if (g != kNoGroup) --open[g];
      continue;
    }
    if (g != kNoGroup) {
      Group& grp = groups[g];
      if (grp.nodes++ == 0) grp.first_node = it.node;
      for (size_t k = 0; k < additive.size(); ++k) {
        grp.exc[k] += (*exc[k])[it.node];
        if (open[g] == 0) grp.inc[k] += (*inc[k])[it.node];
      }
      ++open[g];
      stack.push_back({it.node, true});
    }
    for (const NodeId* c = children.end(it.node); c != children.begin(it.node);) stack.push_back({*--c, false});
  }
  if (opt.by == GroupBy::kLine)
    for (Group& g : groups)
      if (g.nodes > 0) g.detail = std::string(tree.name(tree.parent(g.first_node)));

  // Selected metrics per group.
  auto metric_values = [&](const Group& g, bool inclusive) {
    const std::vector<double>& acc = inclusive ? g.inc : g.exc;
    std::vector<double> v;
    for (MetricId m : ids) {
      if (reg.Get(m).kind == cct::MetricKind::kAdditive) {
        v.push_back(acc[std::find(additive.begin(), additive.end(), m) - additive.begin()]);
        continue;
      }
      const std::vector<MetricId>& ops = reg.operand_ids(m);
      bool any = false;
      for (MetricId op : ops) any |= acc[std::find(additive.begin(), additive.end(), op) - additive.begin()] != 0;
      v.push_back(any ? reg.formula(m)->Eval([&](size_t i) {
        return acc[std::find(additive.begin(), additive.end(), ops[i]) - additive.begin()];
      })
                      : 0.0);
    }
    return v;
  };

  struct Row {
    const Group* g;
    std::vector<double> inc, exc;
  };
  std::vector<Row> rows;
  for (const Group& g : groups) {
    if (g.nodes == 0) continue;
    Row r{&g, metric_values(g, true), metric_values(g, false)};
    // Groups with no value in any selected metric say nothing.
    bool any = false;
    for (size_t i = 0; i < ids.size(); ++i) any |= r.inc[i] != 0 || r.exc[i] != 0;
    if (any) rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    const double ka = opt.sort_exclusive ? a.exc[0] : a.inc[0], kb = opt.sort_exclusive ? b.exc[0] : b.inc[0];
    if (ka != kb) return std::fabs(ka) > std::fabs(kb);
    if (a.g->name != b.g->name) return a.g->name < b.g->name;
    return a.g->module < b.g->module;
  });
  if (opt.limit > 0 && rows.size() > opt.limit) rows.resize(opt.limit);

  auto label = [&](const Row& r) {
    std::string s = r.g->name;
    if (opt.by == GroupBy::kLine && !r.g->detail.empty()) s += "  " + r.g->detail;
    if (opt.by == GroupBy::kFunction && !r.g->module.empty()) s += "  [" + std::string(BaseName(r.g->module)) + "]";
    return s;
  };

  switch (opt.format) {
    case OutputFormat::kText: {
      out << profile.label << ": " << cols.TotalsLine(opt.ascii) << "; top " << rows.size() << " by "
          << GroupHeader(opt.by) << (opt.sort_exclusive ? " (exclusive)" : "")
          << (ends ? " among the " + std::to_string(match.ends) + " query ends" : "") << '\n';
      output::TextTable table(cols.TextColumns(), std::string(GroupHeader(opt.by)));
      for (const Row& r : rows) table.AddRow(cols.TextCells(r.inc, r.exc, opt.ascii), "", label(r));
      table.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject().Field("by", GroupHeader(opt.by)).Key("rows").BeginArray();
      for (const Row& r : rows) {
        const cct::Frame f = tree.frame(r.g->first_node);
        w.BeginObject().Field("name", r.g->name).Field("kind", cct::FrameKindName(r.g->kind));
        w.Field("module", r.g->module);
        if (opt.by == GroupBy::kLine) {
          w.Field("file", tree.str(f.file)).FieldInt("line", f.line).Field("function", r.g->detail);
        } else if (opt.by != GroupBy::kModule) {
          w.Field("file", tree.str(f.file)).FieldInt("line", f.line);
        }
        w.FieldInt("nodes", static_cast<long long>(r.g->nodes));
        cols.WriteJson(w, r.inc, r.exc);
        w.EndObject();
      }
      w.EndArray().EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "name,kind,module,file,line,nodes," << cols.CsvHeader() << '\n';
      for (const Row& r : rows) {
        const cct::Frame f = tree.frame(r.g->first_node);
        out << CsvField(r.g->name) << ',' << cct::FrameKindName(r.g->kind) << ',' << CsvField(r.g->module) << ','
            << CsvField(opt.by == GroupBy::kModule ? "" : tree.str(f.file)) << ','
            << (opt.by == GroupBy::kModule ? 0 : f.line) << ',' << r.g->nodes << ',' << cols.CsvCells(r.inc, r.exc)
            << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

cct::Status TopCommand(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  CCT_ASSIGN_OR_RETURN(query::Profile profile, LoadRequestProfile(request, /*keep_lines=*/opt.by == GroupBy::kLine));
  return WriteTopReport(profile, opt, out);
}

}  // namespace reports
