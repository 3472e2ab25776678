// GPU tracing in the collector runtime: see gpu_runtime.h. Also the CUDA
// injection entry point, InitializeInjection.
#include "collector/gpu/gpu_runtime.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/gpu/gpu_adapter_abi.h"
#include "collector/gpu/gpu_metrics.h"
#include "collector/gpu/gpu_nodes.h"
#include "collector/gpu/gpu_probe.h"
#include "collector/gpu/gpu_raw_dump.h"

namespace collector {
namespace {

// A handle names where GPU metrics go: 0 the unknown node, else a launch
// site (a launch-trie node of one thread) or a child made on the adapter's
// thread — a kernel under a site (graph launches, or a name the launch did
// not give), a source line under a kernel (PC sampling).
enum class HandleRole : uint8_t { kUnknown, kSite, kKernel, kLine };
struct Handle {
  HandleRole role = HandleRole::kUnknown;
  uint32_t thread = 0, trie_node = 0;  // kSite
  uint32_t kernel_name = 0;            // kSite: the launch's kernel name id (0: none); kKernel: its name id
  uint32_t parent = 0;                 // kKernel, kLine
  std::string file;                    // kLine
  uint32_t line = 0;                   // kLine
};

struct GpuState {
  CollectorConfig config;
  TraceBudget* trace_budget = nullptr;  // --trace: the process's (GpuAtStart)
  pid_t pid = 0;
  std::mutex start_mu;
  bool attempted = false;
  std::atomic<bool> tracing{false};
  std::atomic<bool> exit_handler_at_launch{false};  // GpuAtExit registered again at the first launch
  std::string status = "off";  // "on", "off: <reason>", "off (--gpu off)"
  void* module = nullptr;
  const GpuAdapter* adapter = nullptr;
  std::string adapter_path;
  GpuAdapterCallbacks callbacks;
  std::unique_ptr<CorrelationTable> table;
  std::atomic<uint64_t> lost_sites{0};  // launches whose stack could not be recorded

  // handles_mu: the handle table and kernel names (launch path and adapter
  // thread). Lock order: attr_mu before handles_mu.
  std::mutex handles_mu;
  std::vector<Handle> handles{Handle{}};
  std::unordered_map<uint64_t, uint32_t> site_handles;     // thread << 32 | trie node → handle
  std::unordered_map<uint64_t, uint32_t> child_handles;    // (parent, name/file+line) → handle
  std::vector<std::string> kernel_names{""};
  std::unordered_map<std::string, uint32_t> kernel_ids;

  // attr_mu: the attributor (adapter thread, checkpoints).
  std::mutex attr_mu;
  std::unique_ptr<GpuAttributor> attributor;

  // Raw mode: correlations waiting to be written ahead of their records.
  std::mutex raw_mu;
  std::unique_ptr<RawDumpWriter> raw;
  std::vector<RawCorrelation> raw_pending;
  std::string raw_path;
  bool raw_warned = false;
  std::string describe;  // the adapter's GPU facts (JSON text), read once
  bool described = false;
};

// Never destroyed: CUPTI calls back during and after static destruction.
GpuState* g = nullptr;

// Per-thread caches of the launch path: no lock for a site or kernel name
// already seen. `generation` drops them in a forked child.
std::atomic<uint32_t> generation{1};
struct ThreadCache {
  uint32_t generation = 0;
  std::unordered_map<uint32_t, uint32_t> site_of_node;        // launch-trie node → handle
  std::unordered_map<const char*, uint32_t> kernel_of_name;   // adapter's name pointer → id
};
thread_local ThreadCache t_cache;

ThreadCache& Cache() {
  const uint32_t gen = generation.load(std::memory_order_relaxed);
  if (t_cache.generation != gen) {
    t_cache.site_of_node.clear();
    t_cache.kernel_of_name.clear();
    t_cache.generation = gen;
  }
  return t_cache;
}

uint32_t KernelNameIdOf(std::string_view name) {  // caller holds handles_mu
  auto [k, inserted] = g->kernel_ids.try_emplace(std::string(name), static_cast<uint32_t>(g->kernel_names.size()));
  if (inserted) g->kernel_names.emplace_back(name);
  return k->second;
}

// The launch path's way in: by the adapter's name pointer, cached per thread.
uint32_t KernelNameId(const char* name) {
  ThreadCache& c = Cache();
  auto it = c.kernel_of_name.find(name);
  if (it != c.kernel_of_name.end()) return it->second;
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(g->handles_mu);
    id = KernelNameIdOf(name);
  }
  c.kernel_of_name.emplace(name, id);
  return id;
}

uint32_t NewHandle(Handle h) {  // caller holds handles_mu; 0 when the handle space is full
  if (g->handles.size() > kMaxSiteHandle) return 0;
  g->handles.push_back(std::move(h));
  return static_cast<uint32_t>(g->handles.size() - 1);
}

uint32_t SiteHandle(uint32_t thread, uint32_t trie_node, uint32_t kernel_name) {
  ThreadCache& c = Cache();
  auto it = c.site_of_node.find(trie_node);
  if (it != c.site_of_node.end()) return it->second;
  uint32_t h;
  {
    std::lock_guard<std::mutex> lock(g->handles_mu);
    const uint64_t key = (uint64_t{thread} << 32) | trie_node;
    auto s = g->site_handles.find(key);
    if (s != g->site_handles.end()) {
      h = s->second;
    } else {
      Handle site;
      site.role = HandleRole::kSite;
      site.thread = thread;
      site.trie_node = trie_node;
      site.kernel_name = kernel_name;
      h = NewHandle(std::move(site));
      if (h) g->site_handles.emplace(key, h);
    }
  }
  if (h) c.site_of_node.emplace(trie_node, h);
  return h;
}

// --- adapter callbacks ---------------------------------------------------------

void RawCorrelate(uint32_t correlation_id, const LaunchSite& site) {
  std::lock_guard<std::mutex> lock(g->raw_mu);
  if (g->raw) g->raw_pending.push_back({correlation_id, site.node, static_cast<uint8_t>(site.kind), site.iteration});
}

// The final GPU flush, as an exit handler (registered in Attach and OnLaunch).
void GpuAtExit() { GpuFlush(/*final=*/true); }

void OnLaunch(void*, uint32_t correlation_id, uint8_t kind, const char* kernel_name) {
  if (!g || getpid() != g->pid || !g->tracing.load(std::memory_order_relaxed)) return;
  if (!g->exit_handler_at_launch.load(std::memory_order_relaxed) && !g->exit_handler_at_launch.exchange(true))
    atexit(GpuAtExit);  // see Attach
  try {
    uint32_t handle = 0;
    const uint32_t name_id = kernel_name && *kernel_name ? KernelNameId(kernel_name) : 0;
    uint32_t thread = 0, node = 0;
    if (CaptureLaunch(MakeGpuOpKey(kind), name_id ? MakeKernelKey(name_id) : 0, &thread, &node))
      handle = SiteHandle(thread, node, name_id);
    else
      g->lost_sites.fetch_add(1, std::memory_order_relaxed);
    const LaunchSite site{handle, static_cast<cct::GpuOpKind>(kind), CurrentIteration()};
    g->table->Insert(correlation_id, site);
    if (g->raw) RawCorrelate(correlation_id, site);
  } catch (...) {
    g->lost_sites.fetch_add(1, std::memory_order_relaxed);
  }
}

void OnAlias(void*, uint32_t nested, uint32_t outer) {
  if (!g || getpid() != g->pid || !g->tracing.load(std::memory_order_relaxed)) return;
  LaunchSite site;
  if (!g->table->Find(outer, &site)) return;
  g->table->Insert(nested, site);
  try {
    if (g->raw) RawCorrelate(nested, site);
  } catch (...) {
  }
}

// Raw mode: the correlations recorded so far go to the dump before the
// records that need them. Caller holds attr_mu.
void RawFlushCorrelations() {
  std::vector<RawCorrelation> pending;
  {
    std::lock_guard<std::mutex> lock(g->raw_mu);
    if (!g->raw) return;
    pending.swap(g->raw_pending);
  }
  if (!pending.empty()) g->raw->Correlations(pending);
}

void OnActivity(void*, const GpuActivity* activities, size_t count, uint64_t dropped, const uint8_t* raw,
                size_t raw_bytes) {
  // Deliveries also come after tracing stopped (the final flush).
  if (!g || getpid() != g->pid || !g->attributor) return;
  try {
    std::lock_guard<std::mutex> lock(g->attr_mu);
    const std::span<const GpuActivity> batch(activities, count);
    if (g->raw) {
      RawFlushCorrelations();
      // The whole delivery: the writer takes the kernels' names from it (the
      // raw records' name pointers mean nothing in another process).
      g->raw->Batch(raw, raw_bytes, batch, dropped);
    }
    g->attributor->Add(*g->table, batch);
    g->attributor->AddDropped(dropped);
  } catch (...) {
    // Out of memory: this batch is lost (the adapter counts its records).
  }
}

void OnPcSamples(void*, const GpuPcSample* samples, size_t count) {
  // Deliveries also come after tracing stopped (the final flush).
  if (!g || getpid() != g->pid || !g->attributor) return;
  try {
    std::lock_guard<std::mutex> lock(g->attr_mu);
    const std::span<const GpuPcSample> batch(samples, count);
    if (g->raw) {
      RawFlushCorrelations();
      g->raw->PcSamples(batch);
    }
    g->attributor->AddPcSamples(*g->table, batch);
  } catch (...) {
  }
}

// Kernel children (attributor's KernelNodeFn; adapter thread, attr_mu held).
uint32_t KernelHandle(uint32_t site, std::string_view name) {
  std::lock_guard<std::mutex> lock(g->handles_mu);
  const uint32_t id = KernelNameIdOf(name);
  if (site < g->handles.size() && g->handles[site].role == HandleRole::kSite && g->handles[site].kernel_name == id)
    return site;  // the kernel the launch named: its own node
  const uint64_t key = (uint64_t{site} << 32) | id;
  auto it = g->child_handles.find(key);
  if (it != g->child_handles.end()) return it->second;
  Handle h;
  h.role = HandleRole::kKernel;
  h.parent = site;
  h.kernel_name = id;
  const uint32_t handle = NewHandle(std::move(h));
  if (handle == 0) return site;
  g->child_handles.emplace(key, handle);
  return handle;
}

// Source-line children of kernels (LineNodeFn; adapter thread, attr_mu held;
// the attributor caches the answer per (kernel, file, line)).
uint32_t LineHandle(uint32_t kernel, std::string_view file, uint32_t line) {
  std::lock_guard<std::mutex> lock(g->handles_mu);
  Handle h;
  h.role = HandleRole::kLine;
  h.parent = kernel;
  h.file = std::string(file);
  h.line = line;
  const uint32_t handle = NewHandle(std::move(h));
  return handle == 0 ? kernel : handle;
}

// --- starting ------------------------------------------------------------------

// The adapter module: --gpu-adapter (tests), else libcct-cupti.so beside the
// collector (installed) or in its gpu/cupti/ subdirectory (build tree).
std::string AdapterPath() {
  if (!g->config.gpu_adapter.empty()) return g->config.gpu_adapter;
  const std::string dir = CollectorDirectory();
  for (const std::string& candidate : {dir + "/libcct-cupti.so", dir + "/gpu/cupti/libcct-cupti.so"})
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  return "";
}

std::string OpenRawDump() {
  const std::string path = g->config.gpu_raw_dir + "/gpu-" + std::to_string(g->pid) + ".cctraw";
  mkdir(g->config.gpu_raw_dir.c_str(), 0777);  // may exist
  nlohmann::json header = {{"pid", g->pid}, {"collector", CollectorModule()}};
  auto writer = RawDumpWriter::Create(path, static_cast<uint32_t>(g->pid), header.dump());
  if (!writer.ok()) return writer.status().message();
  std::lock_guard<std::mutex> lock(g->raw_mu);
  g->raw = std::move(*writer);
  g->raw_path = path;
  return "";
}

// Loads the adapter and starts tracing. Returns "" or the reason it did not.
std::string Attach() {
  std::lock_guard<std::mutex> lock(g->start_mu);
  if (g->attempted) return g->tracing.load() ? "" : g->status;
  g->attempted = true;
  const std::string path = AdapterPath();
  if (path.empty()) return g->status = "off: the CUPTI adapter libcct-cupti.so is not installed beside " + CollectorModule();
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    const char* e = dlerror();
    return g->status = std::string("off: cannot load ") + path + ": " + (e ? e : "unknown error");
  }
  auto entry = reinterpret_cast<CctdbGpuAdapterEntry>(dlsym(module, kGpuAdapterEntry));
  const GpuAdapter* adapter = entry ? entry() : nullptr;
  if (!adapter || adapter->abi != kGpuAdapterAbi || !adapter->start || !adapter->flush || !adapter->stop) {
    dlclose(module);
    return g->status = "off: " + path + " is not a GPU adapter of this cctdb version";
  }
  g->table = std::make_unique<CorrelationTable>(/*iterations=*/!g->config.iteration_regex.empty());
  g->attributor = std::make_unique<GpuAttributor>(/*unknown=*/0, KernelHandle);
  g->attributor->SetLineNode(LineHandle);
  if (g->trace_budget) g->attributor->EnableTrace(g->trace_budget);
  if (!g->config.gpu_raw_dir.empty()) {
    const std::string error = OpenRawDump();
    if (!error.empty()) RuntimeWarn("cannot write the raw GPU dump: " + error);
  }
  g->callbacks.context = nullptr;
  g->callbacks.on_launch = OnLaunch;
  g->callbacks.on_alias = OnAlias;
  g->callbacks.on_activity = OnActivity;
  g->callbacks.on_pc_samples = OnPcSamples;
  GpuAdapterOptions options;
  options.mode = g->config.gpu == GpuTracing::kOn ? 1 : 0;
  options.pc_sampling = g->config.gpu_pc_sampling;
  options.pc_sampling_period = g->config.gpu_pc_period;
  char error[512] = {};
  g->module = module;
  g->adapter = adapter;
  g->adapter_path = path;
  // Before start: callbacks may come at once, from other threads too.
  g->tracing.store(true);
  if (adapter->start(&options, &g->callbacks, error, sizeof error) != 0) {
    g->tracing.store(false);
    g->adapter = nullptr;
    // The module stays loaded: a library that started threads is not safe to unload.
    return g->status = std::string("off: ") + (error[0] ? error : "the adapter could not start");
  }
  g->status = "on";
  // The final flush must come before CUDA and CUPTI tear down at exit.
  // Exit handlers run in reverse order of registration, and the
  // collector's own (on_exit, at its start) comes before libcupti was even
  // loaded, so it would run after libcupti's static destructors and
  // CUDA's teardown. Registered here, inside the program's cuInit when
  // injected, as NVIDIA's injection samples do; and again at the first
  // launch (OnLaunch), which comes after the handlers CUDA registers while
  // the program starts (nvcc's fatbinary registration) also when tracing
  // attached before the program ran (--gpu on). The first of these to run
  // stops tracing; the others, and the collector's own, then find it stopped.
  atexit(GpuAtExit);
  return "";
}

void AttachOrReport() {
  const std::string reason = Attach();
  if (reason.empty()) return;
  if (g->config.gpu == GpuTracing::kOn) {
    // --gpu on: tracing is required. Nothing of the program has run yet when
    // this happens at start; inside cuInit it ends the program.
    RuntimeWarn("GPU tracing cannot start: " + reason.substr(reason.find(": ") + 2));
    _exit(125);
  }
  RuntimeWarn("GPU tracing " + reason);  // "GPU tracing off: <reason>"
}

// The tree node of every handle (`handles`: a copy of the table).
class HandleNodes {
 public:
  HandleNodes(cct::Tree& tree, const std::vector<std::vector<cct::NodeId>>& launch_nodes,
              const std::vector<Handle>& handles, const std::vector<std::string>& kernel_names)
      : tree_(tree),
        launch_nodes_(launch_nodes),
        handles_(handles),
        kernel_names_(kernel_names),
        nodes_(handles.size(), cct::kNoNode) {}

  cct::NodeId Node(uint32_t h) {
    if (h >= nodes_.size()) return Unknown();
    if (nodes_[h] != cct::kNoNode) return nodes_[h];
    const Handle& x = handles_[h];
    cct::NodeId n = cct::kNoNode;
    switch (x.role) {
      case HandleRole::kUnknown:
        n = Unknown();
        break;
      case HandleRole::kSite:
        if (x.thread < launch_nodes_.size() && x.trie_node < launch_nodes_[x.thread].size())
          n = launch_nodes_[x.thread][x.trie_node];
        if (n == cct::kNoNode) n = Unknown();
        break;
      case HandleRole::kKernel: {
        // The replay's rule (gpu_nodes.h): under the site's placeholder.
        n = GpuSiteKernelNode(tree_, Node(x.parent),
                              x.kernel_name < kernel_names_.size() ? kernel_names_[x.kernel_name] : "");
        break;
      }
      case HandleRole::kLine:
        n = GpuLineNode(tree_, Node(x.parent), x.file, x.line);
        break;
    }
    nodes_[h] = n;
    return n;
  }

 private:
  cct::NodeId Unknown() {
    if (unknown_ == cct::kNoNode) unknown_ = GpuUnknownNode(tree_);
    return unknown_;
  }
  cct::Tree& tree_;
  const std::vector<std::vector<cct::NodeId>>& launch_nodes_;
  const std::vector<Handle>& handles_;
  const std::vector<std::string>& kernel_names_;
  std::vector<cct::NodeId> nodes_;
  cct::NodeId unknown_ = cct::kNoNode;
};

void SetDiagnostic(store::RunMeta& meta, const char* name, uint64_t value) {
  meta.diagnostics[name] = static_cast<int64_t>(value);
}

}  // namespace

void GpuAtStart(const CollectorConfig& config, pid_t pid, TraceBudget* trace_budget) {
  if (g == nullptr) g = new (std::nothrow) GpuState;
  if (g == nullptr) return;
  g->config = config;
  g->pid = pid;
  g->trace_budget = config.trace ? trace_budget : nullptr;
  if (config.gpu == GpuTracing::kOff) {
    g->status = "off (--gpu off)";
    return;
  }
  const char* injection = getenv("CUDA_INJECTION64_PATH");
  const bool injected = injection && !CollectorModule().empty() && CollectorModule() == injection;
  if (config.gpu == GpuTracing::kOn && (config.parent_key.empty() || !injected)) {
    // The program cct-record started (its children, which may never use
    // CUDA — a shell, a launcher —, attach through the injection as usual).
    AttachOrReport();
  } else if (!injected) {
    // Preloaded by hand, without the driver's injection: attach now, before
    // the program's first CUDA call, where there is a GPU to trace.
    if (GpuDevicePresent()) AttachOrReport();
  }
}

void GpuFlush(bool final) {
  if (!g || !g->tracing.load() || getpid() != g->pid) return;
  if ((!g->described || final) && g->adapter->describe) {
    // After CUDA is up (the driver answers only then), and again at the end
    // (errors met since); outside flush_mutex (it calls the driver).
    const char* d = g->adapter->describe();
    std::lock_guard<std::mutex> lock(g->handles_mu);
    g->described = true;
    if (d) g->describe = d;
  }
  if (final) {
    g->tracing.store(false);
    g->adapter->stop();
  } else {
    g->adapter->flush();
  }
  std::lock_guard<std::mutex> lock(g->attr_mu);
  g->attributor->Flush(*g->table, /*give_up=*/final);
  if (g->raw) RawFlushCorrelations();
}

void GpuForkChild() {
  if (!g) return;
  new (&g->start_mu) std::mutex;
  new (&g->handles_mu) std::mutex;
  new (&g->attr_mu) std::mutex;
  new (&g->raw_mu) std::mutex;
  g->pid = getpid();
  generation.fetch_add(1);
  if (!g->attempted) return;  // the parent never used CUDA: the child may, and then attaches itself
  // The parent's CUDA state is unusable here; its tracing is the parent's.
  g->tracing.store(false);
  g->status = "off: a forked child of a process using CUDA (CUDA does not survive fork)";
  g->adapter = nullptr;
  g->raw.release();  // the parent's file: leave it to the parent
  // The parent's launches and metrics are the parent's run's.
  g->attributor.release();  // may be mid-use in the parent's image of CUPTI's thread: leak, never reuse
  g->handles.assign(1, Handle{});
  g->site_handles.clear();
  g->child_handles.clear();
}

void GpuAddToRun(cct::Tree& tree, ProfileBuilder& builder, const SymbolLookup& lookup,
                 const std::vector<LaunchTrieRef>& threads, store::RunMeta& meta, store::RunIterations* iterations,
                 store::RunTrace* trace) {
  if (!g) return;
  try {
    std::vector<GpuNodeEntry> entries;
    GpuAttributionStats astats;
    GpuIterationValues iteration_values;
    std::vector<GpuTraceRecord> traced;
    if (g->attributor) {
      std::lock_guard<std::mutex> lock(g->attr_mu);
      entries = g->attributor->metrics();
      astats = g->attributor->stats();
      if (trace) traced = g->attributor->trace();
      if (iterations && !iterations->iterations.empty()) {
        g->attributor->SealIterations();
        iteration_values = g->attributor->iteration_values();
      }
    }
    // A copy of the handle table, so launches meeting a new site are not
    // held up while the tree is built and symbolized.
    std::vector<Handle> handles;
    std::vector<std::string> kernel_names;
    std::string describe;
    {
      std::lock_guard<std::mutex> lock(g->handles_mu);
      handles = g->handles;
      kernel_names = g->kernel_names;
      describe = g->describe;
    }
    builder.SetKernelNames([&](uint32_t id) { return id < kernel_names.size() ? kernel_names[id] : std::string(); });
    std::vector<std::vector<cct::NodeId>> launch_nodes;
    for (const LaunchTrieRef& t : threads) {
      if (t.thread_index >= launch_nodes.size()) launch_nodes.resize(t.thread_index + 1);
      builder.AddLaunches(t.thread_name, *t.launches, lookup, &launch_nodes[t.thread_index]);
    }
    HandleNodes nodes(tree, launch_nodes, handles, kernel_names);
    for (uint32_t h = 1; h < handles.size(); ++h) nodes.Node(h);
    for (const GpuNodeEntry& e : entries) nodes.Node(e.node);

    nlohmann::json gpu = {{"tracing", g->status}};
    if (!g->adapter_path.empty()) gpu["adapter"] = g->adapter_path;
    int64_t gpu_clock_offset_ns = 0;  // CUPTI's clock to the trace's (the adapter measured it)
    if (!describe.empty()) {
      const auto facts = nlohmann::json::parse(describe, nullptr, false);
      if (facts.is_object()) {
        if (auto o = facts.find("timestamp_offset_ns"); o != facts.end() && o->is_number_integer())
          gpu_clock_offset_ns = o->get<int64_t>();
        meta.gpu_model = facts.value("gpu_model", "");
        meta.driver_version = facts.value("driver_version", "");
        meta.cuda_version = facts.value("cuda_version", "");
        gpu["facts"] = facts;
      }
    }
    if (g->config.gpu_pc_sampling) {
      gpu["pc_sampling"] = true;
      gpu["pc_sampling_period"] = g->config.gpu_pc_period;
    }
    if (!g->raw_path.empty()) gpu["raw_dump"] = g->raw_path;
    meta.extra["gpu"] = gpu;
    if (g->adapter) {
      GpuTracingStats s;
      if (g->adapter->stats) g->adapter->stats(&s);
      SetDiagnostic(meta, "gpu_launches", s.launches);
      SetDiagnostic(meta, "gpu_buffers", s.buffers);
      SetDiagnostic(meta, "gpu_records", s.records);
      SetDiagnostic(meta, "gpu_skipped_records", s.skipped_records);
      SetDiagnostic(meta, "gpu_dropped_records", s.dropped_records);  // always shown, even 0
      SetDiagnostic(meta, "gpu_declined_buffers", s.declined_buffers);
      SetDiagnostic(meta, "gpu_unknown_activities", astats.unknown);
      SetDiagnostic(meta, "gpu_late_activities", astats.late);
      SetDiagnostic(meta, "gpu_lost_launch_sites", g->lost_sites.load());
      if (astats.kernels_without_device) SetDiagnostic(meta, "gpu_kernels_without_device", astats.kernels_without_device);
      if (astats.pending_overflow) SetDiagnostic(meta, "gpu_pending_overflow", astats.pending_overflow);
      if (s.hook_exceptions) SetDiagnostic(meta, "gpu_hook_exceptions", s.hook_exceptions);
      if (g->config.gpu_pc_sampling) {
        SetDiagnostic(meta, "gpu_pc_samples", s.pc_samples);
        SetDiagnostic(meta, "gpu_pc_dropped_samples", s.pc_dropped);
        SetDiagnostic(meta, "gpu_pc_samples_unknown", astats.pc_samples_unknown);
      }
    }
    {
      std::lock_guard<std::mutex> raw_lock(g->raw_mu);
      if (g->raw) {
        // The tree before GPU metrics, with every site's node: replaying
        // the dump onto it gives this run (gpu_raw_dump.h).
        std::vector<RawSiteNode> sites;
        for (uint32_t h = 1; h < handles.size(); ++h)
          if (handles[h].role == HandleRole::kSite) sites.push_back({h, nodes.Node(h)});
        meta.node_count = tree.size();
        g->raw->Snapshot(tree, meta.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), sites,
                         iterations);
        if (!g->raw->status().ok() && !g->raw_warned) {
          g->raw_warned = true;
          RuntimeWarn("raw GPU dump " + g->raw_path + ": " + g->raw->status().message());
        }
      }
    }
    GpuMetricWriter writer(tree);
    for (const GpuNodeEntry& e : entries) writer.Add(nodes.Node(e.node), e.metrics);
    if (trace && !traced.empty()) {
      // CUPTI's timestamps, moved onto the trace's clock (the epoch) by the
      // offset the adapter measured (microseconds on Linux, where CUPTI
      // counts from the epoch already; 0 without one, as the fake's).
      for (const GpuTraceRecord& r : traced)
        trace->gpu.push_back({r.device, r.stream, static_cast<cct::GpuOpKind>(r.op),
                              static_cast<int64_t>(r.start_ns) + gpu_clock_offset_ns,
                              static_cast<int64_t>(r.end_ns) + gpu_clock_offset_ns, r.bytes, nodes.Node(r.node)});
      // Activity arrives per buffer, in completion order; EncodeTrace puts
      // it in start order.
    }
    if (!iteration_values.empty())
      iteration_values.AppendTo(*iterations, writer, [&](uint32_t h) { return nodes.Node(h); });
  } catch (...) {
    meta.diagnostics["gpu_write_errors"] += 1;
  }
}

}  // namespace collector

// The CUDA driver's injection entry point: cuInit loads the library named by
// CUDA_INJECTION64_PATH (cct-record points it at this collector, already
// preloaded) and calls this, once, before the program's first CUDA work.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  using namespace collector;
  if (!g || g->config.gpu == GpuTracing::kOff || getpid() != g->pid) return 1;
  AttachOrReport();
  return 1;
}
