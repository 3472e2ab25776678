// gpu_e2e: a CUDA program whose GPU work is known exactly, for the
// end-to-end check of cct-record's GPU tracing (tests/gpu/check_gpu_e2e.py).
//
// What it does, in order, each step in its own non-inlined function and NVTX
// range (default domain, so the range names are the bare messages):
//
//   init()         no range   cudaSetDevice(0); cudaFuncGetAttributes for both
//                             kernels (loads them, so lazy module loading does
//                             not land inside the first timed launch)
//   alloc()        "alloc"    cudaMalloc x3 (kInBytes, kPinBytes, kSetBytes),
//                             cudaMallocHost (kPinBytes), cudaStreamCreate
//   upload()       "upload"   cudaMemcpy H2D, kCopyBytes from pageable memory;
//                             cudaMemcpyAsync H2D, kPinBytes from pinned memory
//                             on a stream, then cudaStreamSynchronize
//   clear()        "clear"    cudaMemset of kSetBytes
//   compute()      "compute"  scale_kernel x kScaleLaunches, add_kernel x
//                             kAddLaunches, each between two CUDA events; the
//                             events' elapsed times are summed per kernel
//   download()     "download" cudaMemcpy D2H, kDownBytes into pageable memory
//   finish()       "finish"   cudaDeviceSynchronize
//   release()      "release"  cudaFree x3, cudaFreeHost, cudaStreamDestroy
//
// and prints one JSON line on stdout with everything it did and measured.
// Exit status 0 on success, 1 on a CUDA error (message on stderr).
//
// Build (the check script does this):
//   nvcc -O2 -g -lineinfo -gencode arch=compute_90,code=sm_90
//        -gencode arch=compute_80,code=sm_80 -o gpu_e2e gpu_e2e.cu -ldl
// Kernel lengths: -DSCALE_ITERS=N / -DADD_ITERS=N (dependent FMAs per element;
// the defaults give roughly 1-2 ms per launch on an H100, long enough that the
// host-side launch gap inside the event pair is well under 1% of it).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#ifndef SCALE_ITERS
#define SCALE_ITERS 65536
#endif
#ifndef ADD_ITERS
#define ADD_ITERS 131072
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define E2E_NOINLINE __attribute__((noinline, noclone))
#else
#define E2E_NOINLINE __attribute__((noinline))
#endif

// Distinctive sizes, so that no other traffic can be mistaken for them.
constexpr size_t kCopyBytes = 3 * (size_t{1} << 20) + 4096;  // cudaMemcpy H2D, pageable
constexpr size_t kPinBytes = size_t{1} << 20;                // cudaMemcpyAsync H2D, pinned
constexpr size_t kInBytes = kCopyBytes;                      // device buffer the copy lands in
constexpr size_t kDownBytes = (size_t{1} << 21) + 8192;      // cudaMemcpy D2H, pageable
constexpr size_t kSetBytes = 5 * (size_t{1} << 17) + 256;    // cudaMemset
constexpr int kScaleLaunches = 20;
constexpr int kAddLaunches = 7;
constexpr int kScaleBlock = 256;
constexpr int kAddBlock = 128;
constexpr int kScaleN = static_cast<int>(kInBytes / sizeof(float));   // 787456 elements
constexpr int kAddN = static_cast<int>(kPinBytes / sizeof(float));    // 262144 elements
constexpr int kScaleGrid = (kScaleN + kScaleBlock - 1) / kScaleBlock;  // 3076
constexpr int kAddGrid = (kAddN + kAddBlock - 1) / kAddBlock;          // 2048
static_assert(kDownBytes <= kInBytes, "download reads from the input buffer");

// Demangled names as c++filt prints them; the check compares by the part
// before '(' and reports the exact names on both sides.
constexpr const char* kScaleName = "scale_kernel(float*, int, float)";
constexpr const char* kAddName = "add_kernel(float*, float const*, int)";

__global__ void scale_kernel(float* x, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < SCALE_ITERS; ++k) v = v * a + 0.5f;
  x[i] = v;
}

__global__ void add_kernel(float* x, const float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  const float w = y[i];
  for (int k = 0; k < ADD_ITERS; ++k) v = v * 0.999f + w;
  x[i] = v;
}

namespace {

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu_e2e: %s: %s (%s)\n", what, cudaGetErrorString(e), cudaGetErrorName(e));
    std::exit(1);
  }
}
#define CK(call) Check((call), #call)

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace

// Outside the anonymous namespace, so the steps' names read upload(State&).
struct KernelStats {
  const char* name = "";
  int launches = 0;
  int grid = 0, block = 0;
  int iters = 0;
  int regs = 0;
  double event_ms = 0, event_ms_min = 1e300, event_ms_max = 0;
};

struct State {
  float* d_in = nullptr;   // kInBytes
  float* d_pin = nullptr;  // kPinBytes
  void* d_set = nullptr;   // kSetBytes
  float* h_pin = nullptr;  // kPinBytes, pinned
  std::vector<char> h_in, h_out;
  cudaStream_t stream = nullptr;
  cudaEvent_t ev_start = nullptr, ev_stop = nullptr;
  KernelStats scale, add;
  char device_name[256] = {};
  int cc_major = 0, cc_minor = 0;
  int runtime_version = 0, driver_version = 0;
};

// The steps. Not static, not inlined and not cloned, so each is its own frame
// with a plain demangled name (upload(State&), ...).
E2E_NOINLINE void init(State& s) {
  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::snprintf(s.device_name, sizeof s.device_name, "%s", prop.name);
  s.cc_major = prop.major;
  s.cc_minor = prop.minor;
  CK(cudaRuntimeGetVersion(&s.runtime_version));
  CK(cudaDriverGetVersion(&s.driver_version));
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, scale_kernel));
  s.scale.regs = fa.numRegs;
  CK(cudaFuncGetAttributes(&fa, add_kernel));
  s.add.regs = fa.numRegs;
  CK(cudaEventCreate(&s.ev_start));
  CK(cudaEventCreate(&s.ev_stop));
}

E2E_NOINLINE void alloc(State& s) {
  nvtxRangePushA("alloc");
  CK(cudaMalloc(&s.d_in, kInBytes));
  CK(cudaMalloc(&s.d_pin, kPinBytes));
  CK(cudaMalloc(&s.d_set, kSetBytes));
  CK(cudaMallocHost(&s.h_pin, kPinBytes));
  CK(cudaStreamCreate(&s.stream));
  s.h_in.resize(kCopyBytes);
  s.h_out.resize(kDownBytes);
  float* f = reinterpret_cast<float*>(s.h_in.data());
  for (size_t i = 0; i < kCopyBytes / sizeof(float); ++i) f[i] = static_cast<float>(i % 1000) * 0.001f;
  for (size_t i = 0; i < kPinBytes / sizeof(float); ++i) s.h_pin[i] = 1.0f;
  nvtxRangePop();
}

E2E_NOINLINE void upload(State& s) {
  nvtxRangePushA("upload");
  CK(cudaMemcpy(s.d_in, s.h_in.data(), kCopyBytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpyAsync(s.d_pin, s.h_pin, kPinBytes, cudaMemcpyHostToDevice, s.stream));
  CK(cudaStreamSynchronize(s.stream));
  nvtxRangePop();
}

E2E_NOINLINE void clear(State& s) {
  nvtxRangePushA("clear");
  CK(cudaMemset(s.d_set, 0, kSetBytes));
  nvtxRangePop();
}

namespace {
// Adds one launch's event-measured time to its kernel's statistics.
void Account(State& s, KernelStats& k) {
  CK(cudaEventRecord(s.ev_stop, 0));
  CK(cudaEventSynchronize(s.ev_stop));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, s.ev_start, s.ev_stop));
  ++k.launches;
  k.event_ms += ms;
  if (ms < k.event_ms_min) k.event_ms_min = ms;
  if (ms > k.event_ms_max) k.event_ms_max = ms;
}
}  // namespace

// The launches are written out here, not in helpers, so that compute() is the
// CPU function that makes them: main → compute(State&) → [nvtx] compute →
// <gpu kernel> → scale_kernel(float*, int, float). (Account's event calls
// may show up under a frame of their own; they launch no GPU work.)
E2E_NOINLINE void compute(State& s) {
  nvtxRangePushA("compute");
  // Interleaved, so that clock changes during the run hit both kernels alike.
  for (int i = 0; i < kScaleLaunches; ++i) {
    CK(cudaEventRecord(s.ev_start, 0));
    scale_kernel<<<kScaleGrid, kScaleBlock>>>(s.d_in, kScaleN, 0.999f);
    CK(cudaGetLastError());
    Account(s, s.scale);
    if (i < kAddLaunches) {
      CK(cudaEventRecord(s.ev_start, 0));
      add_kernel<<<kAddGrid, kAddBlock>>>(s.d_pin, s.d_in, kAddN);
      CK(cudaGetLastError());
      Account(s, s.add);
    }
  }
  nvtxRangePop();
}

E2E_NOINLINE void download(State& s) {
  nvtxRangePushA("download");
  CK(cudaMemcpy(s.h_out.data(), s.d_in, kDownBytes, cudaMemcpyDeviceToHost));
  nvtxRangePop();
}

E2E_NOINLINE void finish(State&) {
  nvtxRangePushA("finish");
  CK(cudaDeviceSynchronize());
  nvtxRangePop();
}

E2E_NOINLINE void release(State& s) {
  nvtxRangePushA("release");
  CK(cudaFree(s.d_in));
  CK(cudaFree(s.d_pin));
  CK(cudaFree(s.d_set));
  CK(cudaFreeHost(s.h_pin));
  CK(cudaStreamDestroy(s.stream));
  CK(cudaEventDestroy(s.ev_start));
  CK(cudaEventDestroy(s.ev_stop));
  nvtxRangePop();
}

namespace {

void PrintKernel(const KernelStats& k, bool last) {
  std::printf(
      "\"%s\": {\"name\": \"%s\", \"launches\": %d, \"grid\": %d, \"block\": %d, \"iters\": %d, "
      "\"registers\": %d, \"event_ms\": %.6f, \"event_ms_min\": %.6f, \"event_ms_max\": %.6f}%s",
      k.name == kScaleName ? "scale_kernel" : "add_kernel", k.name, k.launches, k.grid, k.block, k.iters, k.regs,
      k.event_ms, k.launches ? k.event_ms_min : 0.0, k.event_ms_max, last ? "" : ", ");
}

}  // namespace

int main() {
  State s;
  s.scale = {kScaleName, 0, kScaleGrid, kScaleBlock, SCALE_ITERS};
  s.add = {kAddName, 0, kAddGrid, kAddBlock, ADD_ITERS};
  const double t0 = Now();
  init(s);
  const double t_init = Now();
  alloc(s);
  upload(s);
  clear(s);
  const double t_compute = Now();
  compute(s);
  const double t_compute_end = Now();
  download(s);
  finish(s);
  release(s);
  const double t1 = Now();

  // Everything the checks compare against, on one line.
  std::printf("{\"program\": \"gpu_e2e\", \"device\": \"%s\", \"cc\": \"%d.%d\", \"cuda_runtime\": %d, "
              "\"cuda_driver\": %d, ",
              s.device_name, s.cc_major, s.cc_minor, s.runtime_version, s.driver_version);
  std::printf("\"h2d_bytes\": %zu, \"h2d_copies\": [{\"api\": \"cudaMemcpy\", \"bytes\": %zu, \"host\": \"pageable\"}, "
              "{\"api\": \"cudaMemcpyAsync\", \"bytes\": %zu, \"host\": \"pinned\"}], ",
              kCopyBytes + kPinBytes, kCopyBytes, kPinBytes);
  std::printf("\"d2h_bytes\": %zu, \"d2h_copies\": [{\"api\": \"cudaMemcpy\", \"bytes\": %zu, \"host\": \"pageable\"}], ",
              kDownBytes, kDownBytes);
  std::printf("\"memset_bytes\": %zu, \"memset_count\": 1, ", kSetBytes);
  std::printf("\"device_alloc_bytes\": %zu, \"device_alloc_count\": 3, \"pinned_alloc_bytes\": %zu, "
              "\"pinned_alloc_count\": 1, \"device_free_count\": 3, ",
              kInBytes + kPinBytes + kSetBytes, kPinBytes);
  std::printf("\"sync\": {\"stream\": 1, \"event\": %d, \"device\": 1}, ", kScaleLaunches + kAddLaunches);
  std::printf("\"ranges\": {\"alloc\": \"alloc\", \"upload\": \"upload\", \"clear\": \"clear\", \"compute\": \"compute\", "
              "\"download\": \"download\", \"finish\": \"finish\", \"release\": \"release\"}, ");
  std::printf("\"kernels\": {");
  PrintKernel(s.scale, false);
  PrintKernel(s.add, true);
  std::printf("}, \"kernel_launches\": %d, ", s.scale.launches + s.add.launches);
  std::printf("\"init_s\": %.6f, \"compute_wall_s\": %.6f, \"wall_s\": %.6f}\n", t_init - t0,
              t_compute_end - t_compute, t1 - t0);
  // A checksum keeps the downloaded data alive (and says the kernels ran).
  double sum = 0;
  const float* out = reinterpret_cast<const float*>(s.h_out.data());
  for (size_t i = 0; i < kDownBytes / sizeof(float); ++i) sum += out[i];
  std::fprintf(stderr, "gpu_e2e: checksum %.6g\n", sum);
  return 0;
}
