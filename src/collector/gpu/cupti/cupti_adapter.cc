// The CUPTI calls (see cupti_adapter.h). Everything CUPTI-specific that is
// not a pure function lives here; decoding is cupti_decode.cc, the API table
// cupti_api_kinds.cc.
#include "collector/gpu/cupti/cupti_adapter.h"

#include <cupti.h>
#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "collector/gpu/cupti/cupti_api_kinds.h"
#include "collector/gpu/cupti/cupti_decode.h"
#include "collector/gpu/cupti/cupti_pc_sampling.h"
#include "collector/gpu/gpu_probe.h"
#include "collector/cpu/symbolizer.h"  // Demangle

namespace collector {

namespace {

// Activity kinds: the first two are required, the others best effort (a
// driver may not support one; tracing goes on without it).
constexpr CUpti_ActivityKind kRequiredKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                                 CUPTI_ACTIVITY_KIND_MEMCPY};
constexpr CUpti_ActivityKind kOptionalKinds[] = {
    CUPTI_ACTIVITY_KIND_MEMCPY2,         CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_MEMORY2,         CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};

struct Counters {
  std::atomic<uint64_t> launches{0}, buffers{0}, records{0}, activities{0}, skipped{0}, dropped{0},
      declined{0}, aliases{0}, hook_exceptions{0};
};

// Kernel symbols as the launch callbacks see them, demangled once; the
// returned pointers live as long as the process.
class SymbolNames {
 public:
  const char* Get(const char* mangled) {
    if (mangled == nullptr || *mangled == '\0') return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    return names_.Name(names_.Intern(mangled)).c_str();
  }

 private:
  std::mutex mu_;
  cupti::DemangledNames names_;
};

// The bounded buffer pool. Buffers are allocated on first use and reused;
// never freed (CUPTI may complete a buffer late, even at exit).
class BufferPool {
 public:
  uint8_t* Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_count_ > 0) return free_[--free_count_];
    if (allocated_ >= kActivityBuffers) return nullptr;
    void* p = std::aligned_alloc(8, kActivityBufferBytes);
    if (p == nullptr) return nullptr;
    ++allocated_;
    return static_cast<uint8_t*>(p);
  }
  void Give(uint8_t* buffer) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_count_ < kActivityBuffers) free_[free_count_++] = buffer;
  }

 private:
  std::mutex mu_;
  uint8_t* free_[kActivityBuffers] = {};
  int free_count_ = 0;
  int allocated_ = 0;
};

struct State {
  std::mutex mu;  // start, flush, stop
  std::atomic<bool> started{false};
  CUpti_SubscriberHandle subscriber = nullptr;
  GpuHooks hooks;
  std::vector<CUpti_ActivityKind> enabled_kinds;

  std::mutex decode_mu;  // one buffer at a time: decoder state, on_activity order
  cupti::ActivityDecoder decoder;
  // Reused for every buffer: a hook that reads the activities without
  // moving them out leaves the capacity here, so decoding touches no new
  // pages after the first buffers.
  std::vector<GpuActivity> scratch;
  std::vector<size_t> record_offsets;  // where CUPTI's iterator found this buffer's records
  std::vector<uint64_t> repacked;      // the records in this build's layout, when CUPTI's differs

  std::mutex api_mu;  // kMemoryApi activities waiting for the next delivery
  std::vector<GpuActivity> api_activities;

  BufferPool pool;
  SymbolNames symbols;
  Counters counters;
  std::atomic<uint32_t> epoch{1};  // bumped at start/stop: resets threads' call depth
  bool pc_sampling = false;        // set before the callbacks are enabled
};

// Never destroyed: CUPTI may call back during or after static destruction.
State& S() {
  static State* state = new State;
  return *state;
}

// The tracked API calls this thread is inside.
struct ApiFrame {
  uint32_t epoch = 0;
  int depth = 0;
  uint32_t outer = 0;
};
thread_local ApiFrame t_api;

cct::Status CuptiError(const char* call, CUptiResult r) {
  std::string message =
      std::string("CUPTI: ") + call + " failed: " + cupti::CuptiResultText(r) + " (" + std::to_string(r) + ")";
  if (r == CUPTI_ERROR_NOT_INITIALIZED || r == CUPTI_ERROR_UNKNOWN) message += "; no usable CUDA driver or GPU?";
  return cct::Status(cct::ErrorCode::kUnavailable, message);
}

template <class F, class... Args>
void CallHook(const F& hook, Args&&... args) {
  if (!hook) return;
  try {
    hook(std::forward<Args>(args)...);
  } catch (...) {
    S().counters.hook_exceptions.fetch_add(1, std::memory_order_relaxed);
  }
}

// Hands over the records CUPTI holds (`flag`: 0, or FLUSH_FORCED for
// buffers not yet complete as well). Not from the buffer callbacks.
void FlushActivity(uint32_t flag) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.started.load()) return;
  if (s.pc_sampling) cupti::PcFlush();
  (void)cuptiActivityFlushAll(flag);
}

void CUPTIAPI OnApi(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (S().pc_sampling) cupti::PcOnResource(cbid, data);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) {
    // The reset destroys the device's contexts and the records CUPTI still
    // holds for them: hand them over first (NVIDIA's samples flush here).
    if (cb->callbackSite == CUPTI_API_ENTER) FlushActivity(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    return;
  }
  const std::optional<cct::GpuOpKind> kind = cupti::LaunchKindOf(domain, cbid);
  if (!kind) return;
  State& s = S();
  const uint32_t epoch = s.epoch.load(std::memory_order_relaxed);
  if (t_api.epoch != epoch) t_api = ApiFrame{epoch, 0, 0};
  const bool timed = *kind == cct::GpuOpKind::kAlloc || *kind == cct::GpuOpKind::kFree;

  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (t_api.depth++ > 0) {
      // A call inside a tracked call (cudaMalloc → cuMemAlloc): part of the
      // outer launch. Its records must find the outer id.
      if (cb->correlationId != t_api.outer && cb->correlationId != 0) {
        s.counters.aliases.fetch_add(1, std::memory_order_relaxed);
        CallHook(s.hooks.on_alias, cb->correlationId, t_api.outer);
      }
      return;
    }
    t_api.outer = cb->correlationId;
    if (timed && cb->correlationData != nullptr) {
      uint64_t now = 0;
      *cb->correlationData = cuptiGetTimestamp(&now) == CUPTI_SUCCESS ? now : 0;
    }
    const cct::GpuOpKind k = cupti::RefineLaunchKind(domain, cbid, cb->functionParams, *kind);
    const char* name = k == cct::GpuOpKind::kKernel ? s.symbols.Get(cb->symbolName) : nullptr;
    s.counters.launches.fetch_add(1, std::memory_order_relaxed);
    CallHook(s.hooks.on_launch, uint64_t{cb->correlationId}, k, name);
    return;
  }
  // CUPTI_API_EXIT
  if (t_api.depth == 0) return;  // entered before tracing started
  if (--t_api.depth > 0) return;
  // Kernel-serialized PC sampling: the kernel's samples are fetched when
  // its launch (or a synchronization) returns.
  if (s.pc_sampling) cupti::PcOnApiExit(domain, cbid, cb);
  if (timed && cb->correlationData != nullptr && *cb->correlationData != 0) {
    uint64_t now = 0;
    if (cuptiGetTimestamp(&now) != CUPTI_SUCCESS) return;
    GpuActivity a;
    a.kind = GpuActivityKind::kMemoryApi;
    a.memory_op = *kind == cct::GpuOpKind::kAlloc ? MemoryOp::kAlloc : MemoryOp::kFree;
    a.correlation_id = cb->correlationId;
    a.start_ns = *cb->correlationData;
    a.end_ns = now;
    try {
      std::lock_guard<std::mutex> lock(s.api_mu);
      s.api_activities.push_back(a);
    } catch (...) {
      // Out of memory: the time is lost, the program goes on.
    }
  }
}

void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  State& s = S();
  *max_records = 0;
  *buffer = s.pool.Take();
  *size = *buffer != nullptr ? kActivityBufferBytes : 0;
  if (*buffer == nullptr) s.counters.declined.fetch_add(1, std::memory_order_relaxed);
}

void CUPTIAPI OnBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  State& s = S();
  try {
    std::lock_guard<std::mutex> lock(s.decode_mu);
    std::vector<GpuActivity>& out = s.scratch;
    out.clear();
    const cupti::DecodeStats before = s.decoder.stats();
    const uint8_t* raw = buffer;
    size_t raw_bytes = valid;
    if (buffer != nullptr && valid > 0) {
      out.reserve(valid / sizeof(CUpti_ActivitySynchronization2));
      s.record_offsets.clear();
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        s.record_offsets.push_back(static_cast<size_t>(reinterpret_cast<uint8_t*>(record) - buffer));
        s.decoder.Decode(record, out);
      }
      // The raw bytes go to the raw dump, whose replay walks them with this
      // build's record sizes: a libcupti whose records differ in size from
      // these headers' gets its records laid out again first.
      if (!cupti::MatchesBuildLayout(buffer, valid, s.record_offsets)) {
        raw_bytes = cupti::RepackRecords(buffer, valid, s.record_offsets, s.repacked);
        raw = reinterpret_cast<const uint8_t*>(s.repacked.data());
      }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
    {
      std::lock_guard<std::mutex> api_lock(s.api_mu);
      out.insert(out.end(), s.api_activities.begin(), s.api_activities.end());
      s.api_activities.clear();
    }
    const cupti::DecodeStats& after = s.decoder.stats();
    s.counters.buffers.fetch_add(1, std::memory_order_relaxed);
    s.counters.records.fetch_add(after.records - before.records, std::memory_order_relaxed);
    s.counters.skipped.fetch_add(after.skipped - before.skipped, std::memory_order_relaxed);
    s.counters.activities.fetch_add(out.size(), std::memory_order_relaxed);
    s.counters.dropped.fetch_add(dropped, std::memory_order_relaxed);
    if (!out.empty() || dropped > 0)
      CallHook(s.hooks.on_activity, std::move(out), uint64_t{dropped}, raw, raw_bytes);
    out.clear();  // moved from or not, empty again
  } catch (...) {
    // Out of memory while decoding: this buffer's records are lost.
    s.counters.hook_exceptions.fetch_add(1, std::memory_order_relaxed);
  }
  if (buffer != nullptr) s.pool.Give(buffer);
}

// Undoes a partial start. Called with s.mu held.
void Teardown(State& s) {
  for (CUpti_ActivityKind k : s.enabled_kinds) (void)cuptiActivityDisable(k);
  s.enabled_kinds.clear();
  if (s.subscriber != nullptr) {
    (void)cuptiEnableDomain(0, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
    (void)cuptiEnableDomain(0, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    (void)cuptiUnsubscribe(s.subscriber);
    s.subscriber = nullptr;
  }
  s.epoch.fetch_add(1, std::memory_order_relaxed);
}

cct::Status EnableCallbacks(State& s, CUpti_CallbackDomain domain, CUpti_CallbackId count) {
  for (CUpti_CallbackId cbid = 1; cbid < count; ++cbid) {
    if (!cupti::LaunchKindOf(domain, cbid)) continue;
    const CUptiResult r = cuptiEnableCallback(1, s.subscriber, domain, cbid);
    if (r != CUPTI_SUCCESS) return CuptiError("cuptiEnableCallback", r);
  }
  return cct::Status::Ok();
}

}  // namespace

namespace gpu_internal {

cct::Status StartCupti(GpuHooks hooks, GpuStartOptions options) {
  State& s = S();
  try {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.started.load()) return cct::Status::Ok();
    s.hooks = std::move(hooks);
    s.pc_sampling = options.pc_sampling;
    if (s.pc_sampling) {
      CCT_RETURN_IF_ERROR(cupti::PcSamplingInit(options.pc_sampling_period, [](std::vector<GpuPcSample>&& samples) {
        CallHook(S().hooks.on_pc_samples, std::move(samples));
      }));
    }
    CUptiResult r = cuptiSubscribe(&s.subscriber, OnApi, nullptr);
    if (r != CUPTI_SUCCESS) {
      s.subscriber = nullptr;
      Teardown(s);
      return CuptiError("cuptiSubscribe", r);
    }
    cct::Status st = EnableCallbacks(s, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    if (st.ok()) st = EnableCallbacks(s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
    if (st.ok()) {
      const CUptiResult rr =
          cuptiEnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
      if (rr != CUPTI_SUCCESS) st = CuptiError("cuptiEnableCallback (cudaDeviceReset)", rr);
    }
    if (st.ok() && s.pc_sampling) {
      for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                    CUPTI_CBID_RESOURCE_MODULE_LOADED}) {
        const CUptiResult rr = cuptiEnableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid);
        if (rr != CUPTI_SUCCESS) {
          st = CuptiError("cuptiEnableCallback (resource domain, for PC sampling)", rr);
          break;
        }
      }
    }
    if (!st.ok()) {
      Teardown(s);
      return st;
    }
    // CUPTI 12.x and 13 give every thread that produces records its own
    // buffer by default, each held until it fills or a flush comes. Our pool
    // is bounded (kActivityBuffers), so a program with more recording
    // threads than buffers would have requests declined and records
    // dropped: one stream of buffers instead. Must precede the
    // registration; a CUPTI without the attribute has only that stream.
    uint8_t per_thread = 0;
    size_t per_thread_size = sizeof per_thread;
    (void)cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &per_thread_size, &per_thread);
    r = cuptiActivityRegisterCallbacks(OnBufferRequested, OnBufferCompleted);
    if (r != CUPTI_SUCCESS) {
      Teardown(s);
      return CuptiError("cuptiActivityRegisterCallbacks", r);
    }
    for (CUpti_ActivityKind k : kRequiredKinds) {
      r = cuptiActivityEnable(k);
      if (r != CUPTI_SUCCESS) {
        Teardown(s);
        return CuptiError("cuptiActivityEnable", r);
      }
      s.enabled_kinds.push_back(k);
    }
    for (CUpti_ActivityKind k : kOptionalKinds)
      if (cuptiActivityEnable(k) == CUPTI_SUCCESS) s.enabled_kinds.push_back(k);
    // Device records (compute capability and SM limits, for occupancy):
    // EnableAndDump also reports the devices CUDA already knows.
    if (cuptiActivityEnableAndDump(CUPTI_ACTIVITY_KIND_DEVICE) == CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE) == CUPTI_SUCCESS)
      s.enabled_kinds.push_back(CUPTI_ACTIVITY_KIND_DEVICE);
    s.epoch.fetch_add(1, std::memory_order_relaxed);
    s.started.store(true);
    return cct::Status::Ok();
  } catch (...) {
    return cct::Status(cct::ErrorCode::kInternal, "CUPTI: could not start GPU tracing (out of memory)");
  }
}

}  // namespace gpu_internal

cct::Status StartGpuTracing(GpuMode mode, GpuHooks hooks, GpuStartOptions options) {
  if (mode == GpuMode::kOff) return cct::Status::Ok();
  if (GpuTracingActive()) return cct::Status::Ok();
  CCT_RETURN_IF_ERROR(ProbeGpu(/*need_device=*/mode == GpuMode::kAuto));
  return gpu_internal::StartCupti(std::move(hooks), options);
}

bool GpuTracingActive() { return S().started.load(); }

void FlushGpuActivity() { FlushActivity(0); }

void StopGpuTracing() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.started.load()) return;
  if (s.pc_sampling) cupti::PcStop();
  (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Teardown(s);
  s.started.store(false);
  // Timed allocation calls that finished after the last buffer.
  std::vector<GpuActivity> rest;
  {
    std::lock_guard<std::mutex> api_lock(s.api_mu);
    rest.swap(s.api_activities);
  }
  if (!rest.empty()) {
    std::lock_guard<std::mutex> decode_lock(s.decode_mu);
    s.counters.activities.fetch_add(rest.size(), std::memory_order_relaxed);
    CallHook(s.hooks.on_activity, std::move(rest), uint64_t{0}, static_cast<const uint8_t*>(nullptr), size_t{0});
  }
}

GpuTracingStats GetGpuTracingStats() {
  const Counters& c = S().counters;
  GpuTracingStats out;
  out.launches = c.launches.load();
  out.buffers = c.buffers.load();
  out.records = c.records.load();
  out.activities = c.activities.load();
  out.skipped_records = c.skipped.load();
  out.dropped_records = c.dropped.load();
  out.declined_buffers = c.declined.load();
  out.aliases = c.aliases.load();
  out.hook_exceptions = c.hook_exceptions.load();
  if (S().pc_sampling) {
    out.pc_samples = cupti::GetPcSamplingStats().samples;
    out.pc_dropped = cupti::PcDroppedSamples();
  }
  return out;
}

// ------------------------------------------------------------ the module's ABI

namespace {

// "13.0" for CUDA's 13000.
std::string CudaVersionText(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// What the runtime learns about the GPUs for the run's metadata, read from
// the driver the program loaded (never loads one).
std::string DescribeGpus() {
  nlohmann::json facts = {{"gpu_model", ""}, {"driver_version", ""}, {"cuda_version", ""}, {"devices", 0}};
  if (void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD)) {
    using VersionFn = int (*)(int*);
    using GetFn = int (*)(int*, int);
    using NameFn = int (*)(char*, int, int);
    auto version = reinterpret_cast<VersionFn>(dlsym(cuda, "cuDriverGetVersion"));
    auto get_count = reinterpret_cast<VersionFn>(dlsym(cuda, "cuDeviceGetCount"));
    auto get = reinterpret_cast<GetFn>(dlsym(cuda, "cuDeviceGet"));
    auto name = reinterpret_cast<NameFn>(dlsym(cuda, "cuDeviceGetName"));
    int v = 0, count = 0;
    if (version && version(&v) == 0 && v > 0) facts["driver_version"] = CudaVersionText(v);
    if (get_count && get && name && get_count(&count) == 0) {
      std::string model;
      for (int i = 0; i < count; ++i) {
        int dev = 0;
        char buf[256] = {};
        if (get(&dev, i) != 0 || name(buf, sizeof buf - 1, dev) != 0) continue;
        if (!model.empty()) model += ", ";
        model += buf;
      }
      facts["gpu_model"] = model;
      facts["devices"] = count;
    }
    dlclose(cuda);
  }
  using RtVersionFn = int (*)(int*);
  if (auto rt = reinterpret_cast<RtVersionFn>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"))) {
    int v = 0;
    if (rt(&v) == 0 && v > 0) facts["cuda_version"] = CudaVersionText(v);
  }
  uint32_t cupti = 0;
  (void)cuptiGetVersion(&cupti);
  facts["cupti_api"] = cupti;
  // CUPTI's clock against the system's (CLOCK_REALTIME, the trace's time
  // base): --trace moves GPU times by this. CUPTI counts from the epoch on
  // Linux, so it is the few microseconds of the reading itself there; a
  // CUPTI on another clock base is corrected rather than misplaced.
  timespec before{}, after{};
  uint64_t gpu_now = 0;
  clock_gettime(CLOCK_REALTIME, &before);
  const bool read = cuptiGetTimestamp(&gpu_now) == CUPTI_SUCCESS;
  clock_gettime(CLOCK_REALTIME, &after);
  if (read && gpu_now > 0) {
    const int64_t mid = (before.tv_sec + after.tv_sec) * int64_t{500000000} + (before.tv_nsec + after.tv_nsec) / 2;
    facts["timestamp_offset_ns"] = mid - static_cast<int64_t>(gpu_now);
  }
  // The layout of the raw bytes handed to on_activity (a raw dump's): these
  // headers', whatever the libcupti (OnBufferCompleted lays records out again).
  facts["cupti_layout_api"] = CUPTI_API_VERSION;
  if (S().pc_sampling) {
    const cct::Status st = cupti::PcLastError();
    if (!st.ok()) facts["pc_sampling_error"] = st.message();
  }
  return facts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int AbiStart(const GpuAdapterOptions* options, const GpuAdapterCallbacks* callbacks, char* error, size_t error_size) {
  try {
    const GpuAdapterCallbacks cb = *callbacks;
    GpuHooks hooks;
    if (cb.on_launch)
      hooks.on_launch = [cb](uint64_t id, cct::GpuOpKind kind, const char* name) {
        cb.on_launch(cb.context, static_cast<uint32_t>(id), static_cast<uint8_t>(kind), name);
      };
    if (cb.on_alias) hooks.on_alias = [cb](uint32_t nested, uint32_t outer) { cb.on_alias(cb.context, nested, outer); };
    if (cb.on_activity)
      hooks.on_activity = [cb](std::vector<GpuActivity>&& a, uint64_t dropped, const uint8_t* raw, size_t raw_bytes) {
        cb.on_activity(cb.context, a.data(), a.size(), dropped, raw, raw_bytes);
      };
    if (cb.on_pc_samples)
      hooks.on_pc_samples = [cb](std::vector<GpuPcSample>&& p) { cb.on_pc_samples(cb.context, p.data(), p.size()); };
    GpuStartOptions start;
    start.pc_sampling = options->pc_sampling;
    start.pc_sampling_period = options->pc_sampling_period;
    const cct::Status st = StartGpuTracing(options->mode == 1 ? GpuMode::kOn : GpuMode::kAuto, std::move(hooks), start);
    if (st.ok()) return 0;
    std::snprintf(error, error_size, "%s", st.message().c_str());
  } catch (...) {
    std::snprintf(error, error_size, "CUPTI: could not start GPU tracing (out of memory)");
  }
  return 1;
}

void AbiStats(GpuTracingStats* out) { *out = GetGpuTracingStats(); }

const char* AbiDescribe() {
  // Never destroyed: the final call comes from an exit handler, which may run
  // after the destructors of statics made since the collector's own start.
  static std::string& text = *new std::string;
  try {
    text = DescribeGpus();
  } catch (...) {
    text.clear();
  }
  return text.c_str();
}

}  // namespace

}  // namespace collector

extern "C" __attribute__((visibility("default"))) const collector::GpuAdapter* cctdb_gpu_adapter_v1() {
  static const collector::GpuAdapter adapter = [] {
    collector::GpuAdapter a;
    a.name = "cupti";
    a.start = collector::AbiStart;
    a.flush = collector::FlushGpuActivity;
    a.stop = collector::StopGpuTracing;
    a.stats = collector::AbiStats;
    a.describe = collector::AbiDescribe;
    return a;
  }();
  return &adapter;
}
