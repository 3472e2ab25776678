// ProfileBuilder: turns the threads' address tries into a calling-context
// tree of functions, inlined functions and source lines.
//
// Each trie path (root first) becomes: a thread node, then — when the
// outermost address is not where a thread starts (_start, clone3, ...) — a
// "<partial call path>" node, then one function node per frame (inlined
// functions as their own nodes, flagged kFrameInlined), and for a leaf a line
// node for the statement where the samples landed. Frames of the thread-start
// machinery and of the collector itself are left out.
//
// The symbol lookup is a parameter, so the builder is a pure function of the
// tries and the lookup (tests use made-up symbols). Not thread-safe; the
// tries may be recorded into concurrently (see sample_trie.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cct/tree.h"
#include "collector/sample_trie.h"
#include "collector/symbolizer.h"

namespace collector {

// Frames for a trie key (an address with its load epoch, see sample_trie.h);
// `return_address` is true for every frame but the leaf.
using SymbolLookup = std::function<const SymbolFrames&(uint64_t key, bool return_address)>;

struct BuildStats {
  uint64_t samples = 0;
  uint64_t partial_samples = 0;  // under "<partial call path>"
};

class ProfileBuilder {
 public:
  // `time_metric` is "cputime" or "realtime"; `own_module` the path of the
  // collector library (its frames are hidden).
  ProfileBuilder(cct::Tree& tree, std::string_view time_metric, std::string own_module);

  // Adds one thread's samples under a thread node named `thread_name`.
  void AddThread(std::string_view thread_name, const SampleTrie& trie, const SymbolLookup& lookup);

  const BuildStats& stats() const { return stats_; }

 private:
  bool Hidden(const SymbolFrame& f) const;
  cct::FrameId FunctionFrame(const SymbolFrame& f);

  cct::Tree& tree_;
  cct::MetricId time_ = 0, samples_ = 0;
  std::string own_module_;
  BuildStats stats_;
  // One frame per (function, module): where a function is declared comes
  // from the first lookup that knew it, so a frame resolved from DWARF and
  // one resolved from the symbol table are still the same node.
  std::unordered_map<std::string, cct::FrameId> function_frames_;
};

}  // namespace collector
