// VisibleTree (output/tree_json.h): which children a tree report shows and in
// what order, checked against a plain sort with the documented rule
// (inclusive value descending, ties by name, then by node id).
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "cct/tree.h"
#include "cct/tree_ops.h"
#include "output/tree_json.h"

TEST_CASE("VisibleTree orders children by key, ties by name then id, and hides those under the threshold") {
  std::mt19937 rng(11);
  cct::Tree t;
  // Frames with the same name in different modules: equal names, distinct nodes.
  std::vector<cct::FrameId> frames;
  for (int f = 0; f < 30; ++f)
    frames.push_back(t.InternFrame(cct::FrameKind::kFunction, "fn" + std::to_string(f % 12), "m" + std::to_string(f)));
  for (int i = 1; i < 3000; ++i) t.InternChild(static_cast<cct::NodeId>(rng() % t.size()), frames[rng() % frames.size()]);
  // Few distinct keys: many ties.
  std::vector<double> key(t.size());
  for (double& k : key) k = static_cast<double>(rng() % 5);
  const cct::Children children = cct::BuildChildren(t);
  std::vector<uint32_t> depth(t.size(), 0);
  for (cct::NodeId n = 1; n < t.size(); ++n) depth[n] = depth[t.parent(n)] + 1;
  for (double threshold : {0.0, 2.0}) {
    for (int max_depth : {-1, 3}) {
      output::VisibleTree vis(t, children, key, threshold, max_depth);
      std::vector<cct::NodeId> got;
      for (cct::NodeId n = 0; n < t.size(); ++n) {
        vis.Children(n, static_cast<int>(depth[n]), got);
        std::vector<cct::NodeId> want;
        if (max_depth < 0 || static_cast<int>(depth[n]) < max_depth)
          for (const cct::NodeId* c = children.begin(n); c != children.end(n); ++c)
            if (threshold <= 0 || key[*c] >= threshold) want.push_back(*c);
        std::sort(want.begin(), want.end(), [&](cct::NodeId a, cct::NodeId b) {
          if (key[a] != key[b]) return key[a] > key[b];
          if (t.name(a) != t.name(b)) return t.name(a) < t.name(b);
          return a < b;
        });
        CHECK(got == want);
        CHECK(vis.Children(n, static_cast<int>(depth[n])) == want);
      }
    }
  }
}
