// A calling-context tree as JSON, the way `cct-query tree --format json` and
// `cct-query export --to json` both write it: which nodes are shown and in
// what order (VisibleTree), and the nested node objects (WriteTreeJson).
// Depends on cct only. VisibleTree borrows the tree, children and key it is
// given (they must outlive it); const use is thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "cct/prefetch.h"
#include "cct/tree.h"
#include "cct/tree_ops.h"
#include "output/json_writer.h"
#include "output/metric_columns.h"

namespace output {

// Which nodes a tree report shows and in what order: children by the first
// metric's inclusive value, largest first (ties by name, then creation).
// With `with_values` (iteration profiles), nodes without any value are hidden.
class VisibleTree {
 public:
  VisibleTree(const cct::Tree& tree, const cct::Children& children, const std::vector<double>& key, double threshold,
              int max_depth, const std::vector<char>* with_values = nullptr)
      : tree_(tree), children_(children), key_(key), threshold_(threshold), max_depth_(max_depth),
        with_values_(with_values) {}

  std::vector<cct::NodeId> Children(cct::NodeId n, int depth) const {
    std::vector<cct::NodeId> out;
    Children(n, depth, out);
    return out;
  }
  // The same into `out` (its capacity reused from row to row). Ordered by
  // keys read once per child, names only among equal keys, once per child:
  // a --depth 4 tree of 10^7 nodes sorts 7.7·10^5 children, many of them
  // tied at one sample.
  void Children(cct::NodeId n, int depth, std::vector<cct::NodeId>& out) const {
    out.clear();
    if (max_depth_ >= 0 && depth >= max_depth_) return;
    const cct::NodeId* begin = children_.begin(n);
    const cct::NodeId* end = children_.end(n);
    thread_local std::vector<std::pair<double, cct::NodeId>> keyed;
    keyed.clear();
    // Siblings lie far apart in the key (each one's subtree between them).
    constexpr ptrdiff_t kAhead = 32;
    for (const cct::NodeId* it = begin; it != end; ++it) {
      if (end - it > kAhead) {
        cct::Prefetch(&key_[it[kAhead]]);
        if (with_values_) cct::Prefetch(&(*with_values_)[it[kAhead]]);
      }
      if (Shown(*it)) keyed.emplace_back(key_[*it], *it);
    }
    std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    // Runs of equal keys are ordered by name. The names of all tied
    // children are read in one pass, their chains of loads overlapping
    // (runs are short: reading them run by run stalls on each name).
    thread_local std::vector<std::pair<size_t, size_t>> runs;  // [from, to) in keyed
    thread_local std::vector<std::pair<std::string_view, cct::NodeId>> named;  // runs' names, in keyed's order
    runs.clear();
    for (size_t i = 0; i < keyed.size();) {
      size_t j = i + 1;
      while (j < keyed.size() && keyed[j].first == keyed[i].first) ++j;
      if (j - i > 1) runs.emplace_back(i, j);
      i = j;
    }
    if (!runs.empty()) {
      named.clear();
      thread_local std::vector<cct::NodeId> tied;
      tied.clear();
      for (const auto& [from, to] : runs)
        for (size_t k = from; k < to; ++k) tied.push_back(keyed[k].second);
      for (size_t k = 0; k < tied.size(); ++k) {
        tree_.PrefetchNamesAhead(k, tied.size(), [](size_t a) { return tied[a]; });
        named.emplace_back(tree_.name(tied[k]), tied[k]);
      }
      size_t at = 0;
      for (const auto& [from, to] : runs) {
        std::sort(named.begin() + static_cast<ptrdiff_t>(at), named.begin() + static_cast<ptrdiff_t>(at + to - from));
        for (size_t k = from; k < to; ++k) keyed[k].second = named[at + k - from].second;
        at += to - from;
      }
    }
    // Each child's own children are listed next (the walk is depth first).
    const bool deeper = max_depth_ < 0 || depth + 1 < max_depth_;
    out.reserve(keyed.size());
    for (const auto& k : keyed) {
      if (deeper) children_.Prefetch(k.second);
      out.push_back(k.second);
    }
  }
  // Calls f(node, depth) for `top` and the nodes shown below it, in display
  // order (preorder; no recursion: trees are deeper than the stack).
  template <class F>
  void Preorder(cct::NodeId top, F&& f) const {
    std::vector<std::pair<cct::NodeId, int>> stack{{top, 0}};
    std::vector<cct::NodeId> kids;
    while (!stack.empty()) {
      const auto [node, depth] = stack.back();
      stack.pop_back();
      f(node, depth);
      Children(node, depth, kids);
      for (size_t i = kids.size(); i-- > 0;) stack.emplace_back(kids[i], depth + 1);
    }
  }
  bool Shown(cct::NodeId n) const {
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

// Nested node objects written without recursion (trees are deeper than the
// stack): `fields(n)` writes node n's members after its BeginObject;
// `children(n, depth)` lists the nodes nested in its array `children_key`.
template <class Fields, class Kids>
void WriteNestedJson(JsonWriter& w, cct::NodeId top, Fields&& fields, Kids&& children,
                     std::string_view children_key = "children") {
  struct Item {
    std::vector<cct::NodeId> kids;
    size_t next;
    int depth;
  };
  auto open = [&](cct::NodeId n, int depth) -> Item {
    w.BeginObject();
    fields(n);
    w.Key(children_key).BeginArray();
    return Item{children(n, depth), 0, depth};
  };
  std::vector<Item> stack;
  stack.push_back(open(top, 0));
  while (!stack.empty()) {
    Item& it = stack.back();
    if (it.next < it.kids.size()) {
      const cct::NodeId child = it.kids[it.next++];
      const int depth = it.depth + 1;
      stack.push_back(open(child, depth));
    } else {
      w.EndArray().EndObject();
      stack.pop_back();
    }
  }
}

// A node's frame as the fields every JSON report writes: "name" (`name`:
// the frame's own, or a report's display name), "kind", "module", "file",
// "line".
void WriteFrameFields(JsonWriter& w, const cct::Tree& tree, cct::NodeId n, std::string_view name);
inline void WriteFrameFields(JsonWriter& w, const cct::Tree& tree, cct::NodeId n) {
  WriteFrameFields(w, tree, n, tree.name(n));
}

// One node object {"name", "kind", "module", "file", "line", "inclusive",
// "exclusive", "children": [...]} for `top` and its visible subtree;
// `with_path` adds the node's "path" (a --focus root); `ends` (a path
// query's match ends, per node) adds "match": true|false to every node.
void WriteTreeJson(const cct::Tree& tree, const VisibleTree& vis, const MetricColumns& cols, cct::NodeId top,
                   JsonWriter& w, bool with_path, const std::vector<char>* ends = nullptr);

}  // namespace output
