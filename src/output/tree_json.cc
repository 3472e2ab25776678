#include "output/tree_json.h"

namespace output {

using cct::NodeId;

void WriteFrameFields(JsonWriter& w, const cct::Tree& tree, NodeId n, std::string_view name) {
  const cct::Frame f = tree.frame(n);
  w.Field("name", name);
  w.Field("kind", cct::FrameKindName(f.kind));
  w.Field("module", tree.str(f.module));
  w.Field("file", tree.str(f.file));
  w.FieldInt("line", f.line);
}

void WriteTreeJson(const cct::Tree& tree, const VisibleTree& vis, const MetricColumns& cols, NodeId top,
                   JsonWriter& w, bool with_path, const std::vector<char>* ends) {
  WriteNestedJson(
      w, top,
      [&](NodeId n) {
        if (with_path && n == top) {
          w.Key("path").BeginArray();
          for (const std::string& p : cct::PathNames(tree, n)) w.String(p);
          w.EndArray();
        }
        WriteFrameFields(w, tree, n);
        if (ends) w.Key("match").Bool((*ends)[n] != 0);
        cols.WriteNodeJson(w, n);
      },
      [&](NodeId n, int depth) { return vis.Children(n, depth); });
}

}  // namespace output
