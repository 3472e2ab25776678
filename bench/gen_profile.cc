// gen-profile: writes a deterministic synthetic calling-context tree as
// folded stacks, shaped like real call trees.
//
//   gen-profile --nodes N [--seed S] [--mutate PCT] > profile.folded
//
// Shape: depth grows by attaching most new nodes below recently created ones
// (call chains), fan-out is heavy-tailed (a few dispatchers with many
// callees), depth is capped at 64, and names come from a pool of functions
// drawn with a Zipf-like skew, so the same functions appear in many contexts,
// as they do in real programs. Every node is distinct (siblings have distinct
// names), leaves carry a value, and a fifth of inner nodes carry their own
// (exclusive) value. Lines come out in preorder, as stackcollapse tools sort
// them. --mutate PCT multiplies the values of that share of nodes by 1.5-3
// (for diff benchmarks); the tree shape depends only on --nodes and --seed.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

namespace {

struct Rng {  // splitmix64: tiny, fast, reproducible everywhere
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
  uint64_t Below(uint64_t n) { return Next() % n; }
};

const char* const kVerbs[] = {"compute", "update", "load", "store", "apply", "reduce", "scan", "pack",
                              "unpack",  "solve",  "build", "merge", "split", "visit",  "emit", "parse"};
const char* const kNouns[] = {"matrix", "vector", "tile",  "block", "grid",   "mesh",  "field", "halo",
                              "buffer", "kernel", "graph", "tree",  "stream", "batch", "layer", "tensor"};

std::string FunctionName(uint64_t id) {
  std::string s = kVerbs[id % 16];
  s += '_';
  s += kNouns[(id / 16) % 16];
  if (id >= 256) s += "_" + std::to_string(id / 256);
  switch (id % 7) {
    case 0: return "ns::" + s + "<float>(int, double*)";
    case 1: return s + "(void*)";
    default: return s;
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t nodes = 0, seed = 42;
  double mutate = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--nodes") && i + 1 < argc) nodes = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--mutate") && i + 1 < argc) mutate = std::strtod(argv[++i], nullptr);
    else {
      std::fprintf(stderr, "usage: gen-profile --nodes N [--seed S] [--mutate PCT]\n");
      return 2;
    }
  }
  if (nodes < 2) {
    std::fprintf(stderr, "gen-profile: --nodes must be at least 2\n");
    return 2;
  }
  Rng rng{seed};
  const uint64_t pool = 2000 + nodes / 50;  // distinct function names
  std::vector<uint32_t> parent(nodes), depth(nodes), name(nodes);
  std::vector<std::vector<uint32_t>> children(nodes);
  std::vector<std::unordered_set<uint32_t>> child_names(nodes);
  parent[0] = UINT32_MAX;
  depth[0] = 0;
  name[0] = 0;
  for (uint32_t i = 1; i < nodes; ++i) {
    uint32_t p;
    const double u = rng.Uniform();
    if (u < 0.55) p = i - 1 - static_cast<uint32_t>(rng.Below(std::min<uint64_t>(i, 4)));  // extend a chain
    else if (u < 0.85) p = static_cast<uint32_t>(rng.Below(i));                            // anywhere
    else p = static_cast<uint32_t>(rng.Below(std::min<uint64_t>(i, 64)));                  // dispatchers near the top
    while (depth[p] >= 64) p = parent[p];
    uint32_t nm;
    do {  // Zipf-like: small ids are common
      nm = static_cast<uint32_t>(std::pow(rng.Uniform(), 2.5) * static_cast<double>(pool)) + 1;
    } while (!child_names[p].insert(nm).second);
    parent[i] = p;
    depth[i] = depth[p] + 1;
    name[i] = nm;
    children[p].push_back(i);
  }
  std::vector<double> value(nodes, 0);
  Rng vrng{seed ^ 0xabcdefULL};
  Rng mrng{seed ^ 0x5eedULL ^ static_cast<uint64_t>(mutate * 1000)};
  for (uint32_t i = 1; i < nodes; ++i) {
    const bool leaf = children[i].empty();
    if (leaf || vrng.Uniform() < 0.2) value[i] = static_cast<double>(1 + vrng.Below(1000)) * 1000;
    if (mutate > 0 && mrng.Uniform() * 100 < mutate) value[i] = std::round(value[i] * (1.5 + 1.5 * mrng.Uniform()));
    if (leaf && value[i] == 0) value[i] = 1000;
  }
  // Preorder output with the path kept as a string.
  std::string path;
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (auto it = children[0].rbegin(); it != children[0].rend(); ++it) stack.push_back({*it, 0});
  std::string out;
  out.reserve(1 << 20);
  while (!stack.empty()) {
    const auto [n, len] = stack.back();
    stack.pop_back();
    path.resize(len);
    if (!path.empty()) path += ';';
    path += FunctionName(name[n]);
    if (value[n] != 0) {
      out += path;
      out += ' ';
      out += std::to_string(static_cast<long long>(value[n]));
      out += '\n';
      if (out.size() > (1 << 20)) {
        std::fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
      }
    }
    const size_t l = path.size();
    for (auto it = children[n].rbegin(); it != children[n].rend(); ++it) stack.push_back({*it, l});
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
