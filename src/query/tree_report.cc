// `cct-query tree`: the calling-context tree, top-down.
#include <algorithm>
#include <cmath>
#include <regex>

#include "cct/tree_ops.h"
#include "query/format.h"
#include "query/reports.h"

namespace query {

using cct::NodeId;
using cct::Status;

namespace {

// Which nodes a tree report shows and in what order: children by the first
// metric's inclusive value, largest first (ties by name, then creation).
// With `with_values` (iteration profiles), nodes without any value are hidden.
class Visible {
 public:
  Visible(const cct::Tree& tree, const cct::Children& children, const std::vector<double>& key, double threshold,
          int max_depth, const std::vector<char>* with_values = nullptr)
      : tree_(tree), children_(children), key_(key), threshold_(threshold), max_depth_(max_depth),
        with_values_(with_values) {}

  std::vector<NodeId> Children(NodeId n, int depth) const {
    std::vector<NodeId> out;
    if (max_depth_ >= 0 && depth >= max_depth_) return out;
    for (const NodeId* it = children_.begin(n); it != children_.end(n); ++it)
      if (Shown(*it)) out.push_back(*it);
    std::sort(out.begin(), out.end(), [&](NodeId a, NodeId b) {
      if (key_[a] != key_[b]) return key_[a] > key_[b];
      const int c = tree_.name(a).compare(tree_.name(b));
      return c != 0 ? c < 0 : a < b;
    });
    return out;
  }
  bool Shown(NodeId n) const {
    if (with_values_ && !(*with_values_)[n]) return false;
    return threshold_ <= 0 || std::fabs(key_[n]) >= threshold_;
  }

 private:
  const cct::Tree& tree_;
  const cct::Children& children_;
  const std::vector<double>& key_;
  double threshold_;
  int max_depth_;
  const std::vector<char>* with_values_;
};

// Nodes whose name matches, outermost only (a match inside a match is part
// of the outer subtree).
cct::Result<std::vector<NodeId>> FocusRoots(const cct::Tree& tree, const std::string& pattern) {
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return cct::InvalidArgument("invalid --focus regex '" + pattern + "': " + e.what());
  }
  std::vector<char> frame_matches(tree.frames().size(), 0);  // 0 unknown, 1 no, 2 yes
  std::vector<char> inside(tree.size(), 0);
  std::vector<NodeId> roots;
  for (NodeId n = 1; n < tree.size(); ++n) {
    inside[n] = inside[tree.parent(n)];
    if (inside[n]) continue;
    char& m = frame_matches[tree.frame_id(n)];
    if (m == 0) {
      const std::string_view name = tree.name(n);
      m = std::regex_search(name.begin(), name.end(), re) ? 2 : 1;
    }
    if (m == 2) {
      roots.push_back(n);
      inside[n] = 1;
    }
  }
  return roots;
}

void WriteText(const cct::Tree& tree, const Visible& vis, const MetricColumns& cols, const ReportOptions& opt,
               NodeId top, std::ostream& out) {
  TextTable table(cols.TextColumns(), "calling context");
  const TreeGlyphs& g = Glyphs(opt.ascii);
  struct Item {
    NodeId node;
    int depth;
    std::string prefix;  // drawn before this node's name
    std::string child_prefix;
  };
  std::vector<Item> stack{{top, 0, "", ""}};
  while (!stack.empty()) {
    Item it = std::move(stack.back());
    stack.pop_back();
    table.AddRow(cols.NodeTextCells(it.node, opt.ascii), it.prefix, DisplayName(tree, it.node));
    const std::vector<NodeId> kids = vis.Children(it.node, it.depth);
    for (size_t i = kids.size(); i-- > 0;) {
      const bool last = i + 1 == kids.size();
      stack.push_back({kids[i], it.depth + 1, it.child_prefix + (last ? g.last : g.branch),
                       it.child_prefix + (last ? g.space : g.pipe)});
    }
  }
  table.Render(out, opt.width, opt.ascii);
}

void WriteJsonNode(const cct::Tree& tree, const Visible& vis, const MetricColumns& cols, NodeId top,
                   JsonWriter& w, bool with_path) {
  struct Item {
    std::vector<NodeId> kids;
    size_t next;
    int depth;
  };
  auto open = [&](NodeId n, int depth, bool path) -> Item {
    const cct::Frame f = tree.frame(n);
    w.BeginObject();
    if (path) {
      w.Key("path").BeginArray();
      for (const std::string& p : cct::PathNames(tree, n)) w.String(p);
      w.EndArray();
    }
    w.Field("name", tree.str(f.name));
    w.Field("kind", cct::FrameKindName(f.kind));
    w.Field("module", tree.str(f.module));
    w.Field("file", tree.str(f.file));
    w.FieldInt("line", f.line);
    cols.WriteNodeJson(w, n);
    w.Key("children").BeginArray();
    return Item{vis.Children(n, depth), 0, depth};
  };
  std::vector<Item> stack;
  stack.push_back(open(top, 0, with_path));
  while (!stack.empty()) {
    Item& it = stack.back();
    if (it.next < it.kids.size()) {
      const NodeId child = it.kids[it.next++];
      const int depth = it.depth + 1;
      stack.push_back(open(child, depth, false));
    } else {
      w.EndArray().EndObject();
      stack.pop_back();
    }
  }
}

void WriteCsv(const cct::Tree& tree, const Visible& vis, const MetricColumns& cols, NodeId top, bool header,
              std::ostream& out) {
  if (header) out << "depth,name,kind,module,file,line," << cols.CsvHeader() << ",path\n";
  struct Item {
    NodeId node;
    int depth;
  };
  std::vector<Item> stack{{top, 0}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const cct::Frame f = tree.frame(it.node);
    std::string path;
    for (const std::string& p : cct::PathNames(tree, it.node)) path += (path.empty() ? "" : ";") + p;
    out << it.depth << ',' << CsvField(tree.str(f.name)) << ',' << cct::FrameKindName(f.kind) << ','
        << CsvField(tree.str(f.module)) << ',' << CsvField(tree.str(f.file)) << ',' << f.line << ','
        << cols.CsvCells(cols.NodeInclusive(it.node), cols.NodeExclusive(it.node)) << ',' << CsvField(path) << '\n';
    const std::vector<NodeId> kids = vis.Children(it.node, it.depth);
    for (size_t i = kids.size(); i-- > 0;) stack.push_back({kids[i], it.depth + 1});
  }
}

}  // namespace

Status WriteTreeReport(Profile& profile, const ReportOptions& opt, std::ostream& out) {
  const cct::Tree& tree = profile.tree;
  CCT_ASSIGN_OR_RETURN(std::vector<cct::MetricId> ids, ResolveMetrics(tree, opt.metrics));
  cct::NodeValues values(tree);
  MetricColumns cols(values, ids);
  const cct::Children children = cct::BuildChildren(tree);
  const double threshold = opt.min_pct > 0 ? std::fabs(cols.total(0)) * opt.min_pct / 100.0 : 0.0;
  // An iteration keeps the run's whole tree; show only what it touched.
  const std::vector<char> with_values = profile.selector.iteration ? NodesWithValues(tree) : std::vector<char>();
  Visible vis(tree, children, values.Inclusive(cols.first()), threshold, opt.depth,
              profile.selector.iteration ? &with_values : nullptr);

  std::vector<NodeId> tops{cct::kRootNode};
  if (!opt.focus.empty()) {
    CCT_ASSIGN_OR_RETURN(tops, FocusRoots(tree, opt.focus));
    if (tops.empty()) return cct::NotFound("no frame matches --focus '" + opt.focus + "'");
  }

  switch (opt.format) {
    case OutputFormat::kText: {
      out << profile.label << ": " << cols.TotalsLine(opt.ascii) << '\n';
      for (NodeId top : tops) {
        if (!opt.focus.empty()) {
          out << '\n' << "focus: ";
          const std::vector<std::string> path = cct::PathNames(tree, top);
          for (size_t i = 0; i < path.size(); ++i) out << (i ? (opt.ascii ? " > " : " › ") : "") << path[i];
          out << '\n';
        }
        WriteText(tree, vis, cols, opt, top, out);
      }
      break;
    }
    case OutputFormat::kJson: {
      JsonWriter w(out);
      if (opt.focus.empty()) {
        WriteJsonNode(tree, vis, cols, cct::kRootNode, w, false);
      } else {
        w.BeginArray();
        for (NodeId top : tops) WriteJsonNode(tree, vis, cols, top, w, true);
        w.EndArray();
      }
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      bool header = true;
      for (NodeId top : tops) {
        WriteCsv(tree, vis, cols, top, header, out);
        header = false;
      }
      break;
    }
  }
  return Status::Ok();
}

}  // namespace query
