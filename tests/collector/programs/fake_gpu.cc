// A GPU adapter without a GPU, for end-to-end tests of the collector's GPU
// path: it implements the adapter ABI (src/collector/gpu/gpu_adapter_abi.h) and
// a tiny "CUDA" the test program calls. Each fake API call does what the
// driver and CUPTI would: reports the launch through on_launch on the calling
// thread (so the collector unwinds the real stack, with this module's frames
// to trim), and appends the activity record CUPTI would write — built from
// CUPTI's own structs — to a buffer that flush/stop decode with the real
// ActivityDecoder and deliver with the raw bytes, as the CUPTI adapter does.
// fakecuda_init() plays cuInit: it loads CUDA_INJECTION64_PATH and calls its
// InitializeInjection, as the driver does, after registering the exit-time
// teardown the CUDA runtime registers when it starts (Teardown below).
//
// Environment: FAKEGPU_FAIL=reason makes start() fail with that reason;
// FAKEGPU_DROPPED=N reports N dropped records with the first batch.
// Thread-safety: a mutex around the pending records; callbacks run outside it.
#include <cupti_activity.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cct/frame.h"
#include "collector/gpu/cupti/cupti_decode.h"
#include "collector/gpu/gpu_adapter_abi.h"
#include "tests/collector/cupti_records.h"

using namespace collector;
using namespace cupti_records;

namespace {

struct Fake {
  std::mutex mu;
  bool started = false;
  GpuAdapterCallbacks cb;
  GpuAdapterOptions options;
  RecordBuffer pending;  // records not yet delivered
  std::vector<GpuActivity> api;  // kMemoryApi timings
  uint32_t next_corr = 100;
  uint64_t clock = 1000000000;
  uint64_t dropped_once = 0;
  cupti::ActivityDecoder decoder;
  cupti::DemangledNames names;  // launch names, as the adapter demangles them
  GpuTracingStats stats;
  bool torn_down = false;  // CUDA's exit-time teardown ran: nothing more is delivered
};
Fake& F() {
  static Fake* f = new Fake;
  return *f;
}

template <class T>
void Append(const T& record) {  // caller holds mu
  F().pending.Add(record);
}

const char* Demangled(const char* mangled) {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mu);
  return f.names.Name(f.names.Intern(mangled)).c_str();
}

// The launch: on_launch on this thread, with this frame on the stack.
__attribute__((noinline)) uint32_t Launch(cct::GpuOpKind kind, const char* name) {
  Fake& f = F();
  uint32_t corr;
  {
    std::lock_guard<std::mutex> lock(f.mu);
    corr = f.next_corr++;
    ++f.stats.launches;
  }
  if (f.started && f.cb.on_launch) f.cb.on_launch(f.cb.context, corr, static_cast<uint8_t>(kind), name);
  return corr;
}

uint64_t Tick(uint64_t duration) {  // caller holds mu: the record's start
  Fake& f = F();
  const uint64_t start = f.clock;
  f.clock += duration + 1000;
  return start;
}

void Deliver(bool final) {
  Fake& f = F();
  RecordBuffer records;
  std::vector<GpuActivity> api;
  uint64_t dropped;
  std::vector<GpuActivity> out;
  {
    std::lock_guard<std::mutex> lock(f.mu);
    if (f.torn_down) return;
    records = f.pending;
    f.pending.Clear();
    api.swap(f.api);
    dropped = f.dropped_once;
    f.dropped_once = 0;
    if (records.empty() && api.empty() && dropped == 0) return;
    f.decoder.DecodeBuffer(records.data(), records.size(), out);
    ++f.stats.buffers;
    f.stats.records = f.decoder.stats().records;
    f.stats.dropped_records += dropped;
  }
  out.insert(out.end(), api.begin(), api.end());
  f.stats.activities += out.size();
  if (f.cb.on_activity)
    f.cb.on_activity(f.cb.context, out.data(), out.size(), dropped,
                     records.empty() ? nullptr : records.data(), records.size());
  (void)final;
}

int Start(const GpuAdapterOptions* options, const GpuAdapterCallbacks* callbacks, char* error, size_t size) {
  Fake& f = F();
  if (const char* fail = getenv("FAKEGPU_FAIL"); fail && *fail) {
    std::snprintf(error, size, "%s", fail);
    return 1;
  }
  std::lock_guard<std::mutex> lock(f.mu);
  if (f.started) return 0;
  f.cb = *callbacks;
  f.options = *options;
  if (const char* d = getenv("FAKEGPU_DROPPED")) f.dropped_once = std::strtoull(d, nullptr, 10);
  Append(Device(0, 9, 0));  // an H100, as CUPTI reports it
  f.started = true;
  return 0;
}

void Flush() { Deliver(false); }
void Stop() {
  Deliver(true);
  F().started = false;
}
void Stats(GpuTracingStats* out) {
  std::lock_guard<std::mutex> lock(F().mu);
  *out = F().stats;
}
const char* Describe() {
  return "{\"gpu_model\":\"cctdb fake GPU\",\"driver_version\":\"13.0\",\"cuda_version\":\"13.0\",\"devices\":1}";
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const GpuAdapter* cctdb_gpu_adapter_v1() {
  static const GpuAdapter adapter = [] {
    GpuAdapter a;
    a.name = "fake";
    a.start = Start;
    a.flush = Flush;
    a.stop = Stop;
    a.stats = Stats;
    a.describe = Describe;
    return a;
  }();
  return &adapter;
}

// CUDA's teardown at exit: what CUPTI still held for the destroyed contexts
// can no longer be handed over. The runtime registers it when CUDA starts,
// before the driver runs the injection. Exit handlers run in reverse
// order: one the tracer registered at its own start runs after this and
// finds nothing; one registered inside the injection runs before it.
static void Teardown() {
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mu);
  f.torn_down = true;
  f.pending.Clear();
  f.api.clear();
}

// cuInit: the driver's injection.
__attribute__((visibility("default"), noinline)) void fakecuda_init() {
  static bool done = false;
  if (done) return;
  done = true;
  atexit(Teardown);
  const char* path = getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path) return;
  void* lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return;
  using Init = int (*)();
  if (auto init = reinterpret_cast<Init>(dlsym(lib, "InitializeInjection"))) init();
}

__attribute__((visibility("default"), noinline)) void fakecuda_launch(const char* mangled, uint32_t grid,
                                                                     uint32_t block, uint16_t regs,
                                                                     uint64_t duration_ns) {
  const uint32_t corr = Launch(cct::GpuOpKind::kKernel, Demangled(mangled));
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mu);
  const uint64_t start = Tick(duration_ns);
  Append(Kernel(corr, mangled, start, start + duration_ns, grid, 1, 1, block, 1, 1, regs));
}

// A CUDA graph of `count` kernels: one launch, records carrying its id.
__attribute__((visibility("default"), noinline)) void fakecuda_graph_launch(const char* const* mangled, int count,
                                                                           uint64_t duration_ns) {
  const uint32_t corr = Launch(cct::GpuOpKind::kKernel, nullptr);
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mu);
  for (int i = 0; i < count; ++i) {
    const uint64_t start = Tick(duration_ns);
    CUpti_ActivityKernel10 k = Kernel(corr, mangled[i], start, start + duration_ns, 64, 1, 1, 256, 1, 1, 32);
    k.graphId = 5;
    Append(k);
  }
}

// direction: 1 host→device, 2 device→host, 8 device→device (CUPTI's kinds).
// Like cudaMemcpy, the runtime call makes a nested driver call with its own
// correlation id, which the records carry.
__attribute__((visibility("default"), noinline)) void fakecuda_memcpy(int direction, uint64_t bytes,
                                                                     uint64_t duration_ns) {
  const cct::GpuOpKind kind = direction == 1   ? cct::GpuOpKind::kCopyIn
                              : direction == 2 ? cct::GpuOpKind::kCopyOut
                                               : cct::GpuOpKind::kCopy;
  const uint32_t outer = Launch(kind, nullptr);
  Fake& f = F();
  uint32_t nested;
  {
    std::lock_guard<std::mutex> lock(f.mu);
    nested = f.next_corr++;
  }
  if (f.started && f.cb.on_alias) f.cb.on_alias(f.cb.context, nested, outer);
  std::lock_guard<std::mutex> lock(f.mu);
  const uint64_t start = Tick(duration_ns);
  Append(Memcpy(nested, static_cast<CUpti_ActivityMemcpyKind>(direction), bytes, start, start + duration_ns));
}

__attribute__((visibility("default"), noinline)) void fakecuda_memset(uint64_t bytes, uint64_t duration_ns) {
  const uint32_t corr = Launch(cct::GpuOpKind::kMemset, nullptr);
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mu);
  const uint64_t start = Tick(duration_ns);
  Append(Memset(corr, bytes, start, start + duration_ns));
}

// cudaMalloc: the allocation record and the adapter's timing of the call.
__attribute__((visibility("default"), noinline)) void fakecuda_malloc(uint64_t bytes, uint64_t call_ns) {
  const uint32_t corr = Launch(cct::GpuOpKind::kAlloc, nullptr);
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mu);
  Append(Memory(corr, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, bytes,
                Tick(0)));
  GpuActivity a;
  a.kind = GpuActivityKind::kMemoryApi;
  a.memory_op = MemoryOp::kAlloc;
  a.correlation_id = corr;
  a.start_ns = Tick(call_ns);
  a.end_ns = a.start_ns + call_ns;
  f.api.push_back(a);
}

__attribute__((visibility("default"), noinline)) void fakecuda_sync(uint64_t duration_ns) {
  const uint32_t corr = Launch(cct::GpuOpKind::kSync, nullptr);
  Fake& f = F();
  std::lock_guard<std::mutex> lock(f.mu);
  const uint64_t start = Tick(duration_ns);
  Append(Sync(corr, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, start, start + duration_ns));
}

// A kernel launch with PC samples at two source lines of the kernel.
__attribute__((visibility("default"), noinline)) void fakecuda_launch_sampled(const char* mangled,
                                                                             uint64_t duration_ns) {
  const char* name = Demangled(mangled);
  const uint32_t corr = Launch(cct::GpuOpKind::kKernel, name);
  Fake& f = F();
  {
    std::lock_guard<std::mutex> lock(f.mu);
    const uint64_t start = Tick(duration_ns);
    Append(Kernel(corr, mangled, start, start + duration_ns, 128, 1, 1, 128, 1, 1, 40));
  }
  if (!f.started || !f.options.pc_sampling || !f.cb.on_pc_samples) return;
  GpuPcSample s[2];
  s[0].correlation_id = corr;
  s[0].function_name = name;
  s[0].file = "/src/kernels/scale.cu";
  s[0].line = 12;
  s[0].pc_offset = 0x40;
  s[0].samples = 40;
  s[0].stall[static_cast<int>(StallSlot::kGmem)] = 30;
  s[0].stall[static_cast<int>(StallSlot::kNone)] = 10;
  s[1] = s[0];
  s[1].line = 13;
  s[1].pc_offset = 0x80;
  s[1].samples = 8;
  s[1].stall[static_cast<int>(StallSlot::kGmem)] = 0;
  s[1].stall[static_cast<int>(StallSlot::kNone)] = 2;
  s[1].stall[static_cast<int>(StallSlot::kIdep)] = 6;
  {
    std::lock_guard<std::mutex> lock(f.mu);
    f.stats.pc_samples += 48;
  }
  f.cb.on_pc_samples(f.cb.context, s, 2);
}

}  // extern "C"
