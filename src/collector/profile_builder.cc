#include "collector/profile_builder.h"

#include <vector>

namespace collector {

ProfileBuilder::ProfileBuilder(cct::Tree& tree, std::string_view time_metric, std::string own_module)
    : tree_(tree), own_module_(std::move(own_module)) {
  // Both are standard metrics; registration cannot fail for them.
  time_ = tree_.metrics().RegisterStandard(time_metric).value();
  samples_ = tree_.metrics().RegisterStandard("samples").value();
}

bool ProfileBuilder::Hidden(const SymbolFrame& f) const {
  return Symbolizer::IsThreadStart(f.function) || (!own_module_.empty() && f.module == own_module_);
}

cct::FrameId ProfileBuilder::FunctionFrame(const SymbolFrame& f) {
  std::string key = f.function;
  key.push_back('\x1f');
  key.append(f.module);
  key.push_back(f.inlined ? 'i' : 'o');
  auto it = function_frames_.find(key);
  if (it != function_frames_.end()) return it->second;
  const cct::FrameId id = tree_.InternFrame(cct::FrameKind::kFunction, f.function, f.module, f.decl_file,
                                            f.decl_line, f.inlined ? cct::kFrameInlined : 0);
  function_frames_.emplace(std::move(key), id);
  return id;
}

void ProfileBuilder::AddThread(std::string_view thread_name, const SampleTrie& trie, const SymbolLookup& lookup) {
  const size_t n = trie.size();
  if (n <= 1) return;
  const cct::NodeId thread = tree_.InternChild(cct::kRootNode, tree_.InternFrame(cct::FrameKind::kThread, thread_name));
  cct::NodeId partial = cct::kNoNode;
  auto partial_node = [&] {
    if (partial == cct::kNoNode)
      partial = tree_.InternChild(thread, tree_.InternFrame(cct::FrameKind::kUnknown, cct::kPartialCallPathName));
    return partial;
  };

  std::vector<bool> has_child(n, false);
  for (SampleTrie::NodeIndex i = 1; i < n; ++i) has_child[trie.parent(i)] = true;
  std::vector<cct::NodeId> cct_of(n, thread);
  std::vector<bool> partial_path(n, false);

  for (SampleTrie::NodeIndex i = 1; i < n; ++i) {
    const SampleTrie::NodeIndex p = trie.parent(i);
    const uint64_t key = trie.key(i);
    cct::NodeId node;
    if (key == kPartialKey) {
      cct_of[i] = partial_node();
      partial_path[i] = true;
      continue;
    }
    // A frame that returns to its caller is looked up at its call
    // instruction; the leaf, at the sampled instruction.
    const SymbolFrames& frames = lookup(key, has_child[i]);
    if (p == SampleTrie::kRoot) {
      // The outermost frame: a complete stack starts in the thread-start code.
      const bool complete = !frames.empty() && Symbolizer::IsThreadStart(frames.front().function);
      node = complete ? thread : partial_node();
      partial_path[i] = !complete;
    } else {
      node = cct_of[p];
      partial_path[i] = partial_path[p];
    }
    for (const SymbolFrame& f : frames) {
      if (Hidden(f)) continue;
      node = tree_.InternChild(node, FunctionFrame(f));
    }
    cct_of[i] = node;

    const uint32_t samples = trie.samples(i);
    if (samples == 0) continue;
    cct::NodeId leaf = node;
    if (!frames.empty() && frames.back().line != 0 && !Hidden(frames.back())) {
      const SymbolFrame& f = frames.back();
      const std::string_view file = f.file;
      const size_t slash = file.rfind('/');
      const std::string name =
          std::string(slash == std::string_view::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(f.line);
      leaf = tree_.InternChild(node, tree_.InternFrame(cct::FrameKind::kLine, name, f.module, f.file, f.line));
    }
    tree_.AddValue(leaf, time_, static_cast<double>(trie.time_ns(i)));
    tree_.AddValue(leaf, samples_, samples);
    stats_.samples += samples;
    if (partial_path[i]) stats_.partial_samples += samples;
  }
}

}  // namespace collector
