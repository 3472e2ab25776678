#include "collector/core/profile_builder.h"

#include "cct/tree_ops.h"
#include "collector/gpu/gpu_nodes.h"

#include <vector>

namespace collector {

ProfileBuilder::ProfileBuilder(cct::Tree& tree, std::string_view time_metric, std::string own_module,
                               RangeNames range_names)
    : tree_(tree), range_names_(std::move(range_names)), own_module_(std::move(own_module)) {
  // Both are standard metrics; registration cannot fail for them.
  time_ = tree_.metrics().RegisterStandard(time_metric).value();
  samples_ = tree_.metrics().RegisterStandard("samples").value();
}

bool ProfileBuilder::Hidden(const SymbolFrame& f) const {
  return Symbolizer::IsThreadStart(f.function) || (!own_module_.empty() && f.module == own_module_) ||
         IsNvtxFunction(f.function);
}

bool IsNvtxFunction(std::string_view function) {
  // NVTX's header-only stubs (nvtxRangePushA, nvtxDomainRangePushEx, ...) and
  // its C++ API (nvtx3::...) are compiled into the program; the range they
  // open is shown instead.
  return function.starts_with("nvtx");
}

std::span<const std::string_view> InterposedCalls() {
  // Kept in step with core/interpose.cc by a test that reads the library's
  // exported symbols.
  static constexpr std::string_view kCalls[] = {
      "pthread_create", "execve", "execvpe", "fexecve", "execv", "execvp", "execl", "execlp", "execle",
      "posix_spawn", "posix_spawnp", "vfork", "_exit", "_Exit", "dlopen", "dlclose", "dl_iterate_phdr", "nanosleep",
      "clock_nanosleep", "usleep", "sleep", "poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait",
      "epoll_pwait2", "pause", "sigsuspend", "sigtimedwait", "sigwaitinfo"};
  return kCalls;
}

bool IsInterposedCall(std::string_view function) {
  for (std::string_view c : InterposedCalls())
    if (function == c) return true;
  return false;
}

bool IsGpuRuntimeFunction(std::string_view f) {
  if (f.starts_with("cuda") || f.starts_with("__cuda") || f.starts_with("cudart::") ||
      f.starts_with("__device_stub_") || f.starts_with("libcudart_static_"))
    return true;
  // Driver API entry points: cuLaunchKernel, cuMemcpyHtoD_v2, ...
  return f.size() > 2 && f[0] == 'c' && f[1] == 'u' && f[2] >= 'A' && f[2] <= 'Z';
}

bool IsGpuRuntimeModule(std::string_view path) {
  const std::string_view base = cct::BaseName(path);
  for (std::string_view prefix : {"libcuda.so", "libcudart.so", "libcupti.so", "libcct-cupti.so", "libnvidia-"})
    if (base.starts_with(prefix)) return true;
  return false;
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

cct::FrameId ProfileBuilder::RangeFrame(uint64_t key) {
  const uint32_t id = RangeNameId(key);
  std::string name = range_names_ ? range_names_(id) : "";
  if (name.empty()) name = "<nvtx " + std::to_string(id) + ">";
  return tree_.InternFrame(cct::FrameKind::kNvtx, name);
}

cct::NodeId ProfileBuilder::ThreadNode(std::string_view thread_name) {
  return tree_.InternChild(cct::kRootNode, tree_.InternFrame(cct::FrameKind::kThread, thread_name));
}

void ProfileBuilder::AddThread(std::string_view thread_name, const SampleTrie& trie, const SymbolLookup& lookup,
                               std::vector<cct::NodeId>* value_nodes) {
  Add(thread_name, trie, lookup, Role::kSamples, value_nodes);
}

void ProfileBuilder::AddRanges(std::string_view thread_name, const SampleTrie& ranges, const SymbolLookup& lookup,
                               std::vector<cct::NodeId>* nodes) {
  Add(thread_name, ranges, lookup, Role::kRanges, nodes);
}

void ProfileBuilder::AddLaunches(std::string_view thread_name, const SampleTrie& launches, const SymbolLookup& lookup,
                                 std::vector<cct::NodeId>* nodes) {
  Add(thread_name, launches, lookup, Role::kLaunches, nodes);
}

cct::NodeId ProfileBuilder::AddStartEndRange(std::string_view thread_name, uint32_t name_id, int64_t time_ns,
                                      uint64_t count) {
  if (nvtx_time_ == cct::kNoMetric) {
    nvtx_time_ = tree_.metrics().RegisterStandard("nvtx:time").value();
    nvtx_count_ = tree_.metrics().RegisterStandard("nvtx:count").value();
  }
  const cct::NodeId n = tree_.InternChild(ThreadNode(thread_name), RangeFrame(MakeRangeKey(name_id)));
  tree_.AddValue(n, nvtx_time_, static_cast<double>(time_ns));
  tree_.AddValue(n, nvtx_count_, static_cast<double>(count));
  return n;
}

void ProfileBuilder::Add(std::string_view thread_name, const SampleTrie& trie, const SymbolLookup& lookup, Role role,
                         std::vector<cct::NodeId>* value_nodes) {
  const size_t n = trie.size();
  if (value_nodes) value_nodes->assign(n, cct::kNoNode);
  if (n <= 1) return;
  if (role == Role::kRanges && nvtx_time_ == cct::kNoMetric) {
    nvtx_time_ = tree_.metrics().RegisterStandard("nvtx:time").value();
    nvtx_count_ = tree_.metrics().RegisterStandard("nvtx:count").value();
  }
  if (role == Role::kRanges && nvtx_marks_ == cct::kNoMetric)
    nvtx_marks_ = tree_.metrics().RegisterStandard("nvtx:marks").value();
  const cct::NodeId thread = ThreadNode(thread_name);
  // "<partial call path>" sits where the first address of an incomplete
  // stack would be (under the thread, or under the leading ranges in prefix
  // placement); one per parent.
  std::unordered_map<cct::NodeId, cct::NodeId> partial_under;
  auto partial_node = [&](cct::NodeId parent) {
    auto it = partial_under.find(parent);
    if (it != partial_under.end()) return it->second;
    const cct::NodeId p =
        tree_.InternChild(parent, tree_.InternFrame(cct::FrameKind::kUnknown, cct::kPartialCallPathName));
    partial_under.emplace(parent, p);
    return p;
  };

  std::vector<bool> has_child(n, false);
  for (SampleTrie::NodeIndex i = 1; i < n; ++i) has_child[trie.parent(i)] = true;
  std::vector<cct::NodeId> cct_of(n, thread);
  std::vector<bool> partial_path(n, false);
  std::vector<bool> has_address(n, false);  // an address key on the path from the root
  // Below a collector frame (other than the thread trampoline and an
  // interposed call) everything is the collector's own work — NVTX
  // bookkeeping, symbolizing a push site — shown as one "<cctdb collector>"
  // node so its cost stays visible.
  std::vector<bool> in_collector(n, false);
  // Inside an interposed libc call: the collector's pass-through frames are
  // hidden until the real libc function (see IsInterposedCall).
  std::vector<bool> in_interposer(n, false);

  for (SampleTrie::NodeIndex i = 1; i < n; ++i) {
    const SampleTrie::NodeIndex p = trie.parent(i);
    const uint64_t key = trie.key(i);
    partial_path[i] = partial_path[p];
    has_address[i] = has_address[p];
    in_collector[i] = in_collector[p];
    in_interposer[i] = in_interposer[p];
    cct::NodeId node = cct_of[p];
    const SymbolFrames* frames = nullptr;
    if (in_collector[i]) {
      // stays on the collector node
    } else if (key == kPartialKey) {
      node = partial_node(node);
      partial_path[i] = true;
      has_address[i] = true;  // what follows is known not to start at a thread start
    } else if (key == kTruncatedKey) {
      // The innermost frames of a stack deeper than --max-depth, dropped.
      node = tree_.InternChild(node, tree_.InternFrame(cct::FrameKind::kUnknown, kTruncatedStackName));
    } else if (IsRangeKey(key)) {
      node = tree_.InternChild(node, RangeFrame(key));
    } else if (IsKernelKey(key)) {
      std::string name = kernel_names_ ? kernel_names_(RangeNameId(key)) : "";
      if (name.empty()) name = "<kernel " + std::to_string(RangeNameId(key)) + ">";
      node = GpuKernelNode(tree_, node, name);
    } else if (IsGpuKey(key)) {
      node = GpuPlaceholderNode(tree_, node, static_cast<cct::GpuOpKind>(key & 0xff));
    } else if (IsPythonLineKey(key)) {
      // The statement the innermost Python frame is at: a line node, like
      // a native leaf's, with whatever native frames ran it below.
      const SymbolFrames& py = lookup(key, true);
      if (!py.empty() && py.back().line != 0) {
        const SymbolFrame& f = py.back();
        node = tree_.InternChild(
            node, tree_.InternFrame(cct::FrameKind::kLine, cct::LineName(f.file, f.line), f.module, f.file, f.line));
      }
    } else {
      // A frame that returns to its caller is looked up at its call
      // instruction; the leaf, at the sampled instruction. In the range trie
      // every address is a caller's.
      frames = &lookup(key, has_child[i] || role != Role::kSamples);
      if (!has_address[p]) {
        // The outermost frame: a complete stack starts in thread-start code.
        const bool complete = (!frames->empty() && Symbolizer::IsThreadStart(frames->front().function)) ||
                              (is_thread_root_ && is_thread_root_(key));
        if (!complete) node = partial_node(node);
        partial_path[i] = !complete;
      }
      has_address[i] = true;
      for (const SymbolFrame& f : *frames) {
        const bool own = !own_module_.empty() && f.module == own_module_;
        if (!own) in_interposer[i] = false;
        if (own && role == Role::kSamples && f.function.find("ThreadTrampoline") == std::string::npos) {
          if (!in_interposer[i] && IsInterposedCall(f.function)) {
            // The program's call, under the name it called.
            node = tree_.InternChild(node, FunctionFrame(f));
            in_interposer[i] = true;
            continue;
          }
          if (in_interposer[i] && !f.function.starts_with("collector::")) continue;  // pass-through
          node = tree_.InternChild(node, tree_.InternFrame(cct::FrameKind::kFunction, "<cctdb collector>", f.module));
          in_collector[i] = true;
          break;
        }
        // A Python function is the user's, whatever its name (one called
        // nvtx_step or clone is not NVTX's stub or thread-start code).
        if (!IsPythonKey(key) && Hidden(f)) continue;
        node = tree_.InternChild(node, FunctionFrame(f));
      }
    }
    cct_of[i] = node;
    if (role == Role::kLaunches) {
      if (value_nodes) (*value_nodes)[i] = node;
      continue;
    }

    const uint32_t samples = trie.samples(i);
    if (samples == 0 && trie.time_ns(i) == 0) {
      // A range not popped yet (--trace makes its node at the push): its
      // node, for the trace's open range. Otherwise time without samples:
      // a thread's unsampled tail.
      if (role == Role::kRanges && value_nodes) (*value_nodes)[i] = node;
      continue;
    }
    if (role == Role::kRanges) {
      if (value_nodes) (*value_nodes)[i] = node;
      if (IsMarkKey(key)) {
        tree_.AddValue(node, nvtx_marks_, samples);
      } else if (IsRangeKey(key)) {
        tree_.AddValue(node, nvtx_time_, static_cast<double>(trie.time_ns(i)));
        tree_.AddValue(node, nvtx_count_, samples);
      }
      continue;
    }
    cct::NodeId leaf = node;
    if (!in_collector[i] && frames && !frames->empty() && frames->back().line != 0 && !Hidden(frames->back())) {
      const SymbolFrame& f = frames->back();
      leaf = tree_.InternChild(
          node, tree_.InternFrame(cct::FrameKind::kLine, cct::LineName(f.file, f.line), f.module, f.file, f.line));
    }
    if (value_nodes) (*value_nodes)[i] = leaf;
    tree_.AddValue(leaf, time_, static_cast<double>(trie.time_ns(i)));
    stats_.time_ns += trie.time_ns(i);
    tree_.AddValue(leaf, samples_, samples);
    stats_.samples += samples;
    if (partial_path[i]) stats_.partial_samples += samples;
    if (key == kTruncatedKey) stats_.truncated_samples += samples;
  }
}

}  // namespace collector
