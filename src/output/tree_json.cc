#include "output/tree_json.h"

namespace output {

using cct::NodeId;

void WriteTreeJson(const cct::Tree& tree, const VisibleTree& vis, const MetricColumns& cols, NodeId top,
                   JsonWriter& w, bool with_path, const std::vector<char>* ends) {
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
    if (ends) w.Key("match").Bool((*ends)[n] != 0);
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

}  // namespace output
