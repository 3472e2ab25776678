// A "GPU program" for the collector's GPU path without a GPU: it calls the
// fake CUDA of fake_gpu.cc (the adapter cct-record loads in the tests) from
// known functions inside known NVTX ranges, so the tests know exactly which
// bytes, kernels and times belong where:
//   upload()   [upload]   copy-in 3·2^20+4096 B (2 ms), memset 65536 B (0.25 ms), malloc 2^20 B
//   compute()  [compute]  scale_kernel ×20 (1 ms each), add_kernel ×7 (0.5 ms each)
//   graph()               one CUDA graph launch: kernel_a, kernel_b (0.3 ms each)
//   download() [download] copy-out 2^20 B (1.5 ms)
//   sampled()             scale_kernel once, with PC samples at two lines (--gpu-pc-sampling)
//   finish()              a context synchronization (4 ms)
// then burns ~50 ms of CPU so the run also has CPU samples. With an argument
// (fork-fresh, fork-after) it forks instead (see Forking); with "iterations"
// it runs training-like steps (see Iterations).
#include <nvtx3/nvToolsExt.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

extern "C" {
void fakecuda_init();
void fakecuda_launch(const char* mangled, uint32_t grid, uint32_t block, uint16_t regs, uint64_t duration_ns);
void fakecuda_graph_launch(const char* const* mangled, int count, uint64_t duration_ns);
void fakecuda_memcpy(int direction, uint64_t bytes, uint64_t duration_ns);
void fakecuda_memset(uint64_t bytes, uint64_t duration_ns);
void fakecuda_malloc(uint64_t bytes, uint64_t call_ns);
void fakecuda_sync(uint64_t duration_ns);
void fakecuda_launch_sampled(const char* mangled, uint64_t duration_ns);
}

namespace {
const char kScale[] = "_Z12scale_kernelPfif";  // scale_kernel(float*, int, float)
const char kAdd[] = "_Z10add_kernelPKfS0_Pfi";   // add_kernel(float const*, float const*, float*, int)
const char kA[] = "_Z8kernel_av";
const char kB[] = "_Z8kernel_bv";
}  // namespace

// Work after each call keeps the callers on the stack (no tail calls at -O2).
volatile int calls;

__attribute__((noinline)) void upload() {
  nvtxRangePushA("upload");
  fakecuda_memcpy(1, (uint64_t{3} << 20) + 4096, 2000000);
  fakecuda_memset(65536, 250000);
  fakecuda_malloc(uint64_t{1} << 20, 30000);
  nvtxRangePop();
}

__attribute__((noinline)) void compute() {
  nvtxRangePushA("compute");
  for (int i = 0; i < 20; ++i) fakecuda_launch(kScale, 256, 128, 32, 1000000);
  for (int i = 0; i < 7; ++i) fakecuda_launch(kAdd, 64, 256, 24, 500000);
  nvtxRangePop();
}

__attribute__((noinline)) void graph() {
  const char* const kernels[] = {kA, kB};
  fakecuda_graph_launch(kernels, 2, 300000);
  ++calls;
}

__attribute__((noinline)) void download() {
  nvtxRangePushA("download");
  fakecuda_memcpy(2, uint64_t{1} << 20, 1500000);
  nvtxRangePop();
}

__attribute__((noinline)) void sampled() {
  fakecuda_launch_sampled(kScale, 2000000);
  ++calls;
}

__attribute__((noinline)) void finish() {
  fakecuda_sync(4000000);
  ++calls;
}

__attribute__((noinline)) double burn(double seconds) {
  timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  volatile double x = 1;
  for (;;) {
    for (int i = 0; i < 100000; ++i) x = x * 1.0000001 + 0.0000001;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    if ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 >= seconds) break;
  }
  return x;
}

// fork-fresh: the parent never uses CUDA; its forked child does.
// fork-after: the parent uses CUDA, then forks a child that launches too.
int Forking(bool parent_uses_cuda) {
  if (parent_uses_cuda) {
    fakecuda_init();
    compute();
  }
  const pid_t pid = fork();
  if (pid == 0) {
    fakecuda_init();
    compute();
    burn(0.02);
    exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  burn(0.02);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// iterations: add_kernel once (0.5 ms) before any step, then three NVTX
// ranges "step": step k (0-based) launches scale_kernel k+1 times (1 ms
// each) and copies (k+1)·2^20 B in (0.5 ms); in step 1 a second thread
// also launches add_kernel once (0.5 ms); then add_kernel once more after
// the last step. Launches outside "step" belong to no iteration.
__attribute__((noinline)) void step(int k) {
  nvtxRangePushA("step");
  for (int i = 0; i <= k; ++i) fakecuda_launch(kScale, 256, 128, 32, 1000000);
  fakecuda_memcpy(1, uint64_t(k + 1) << 20, 500000);
  if (k == 1) std::thread([] { fakecuda_launch(kAdd, 64, 256, 24, 500000); }).join();
  burn(0.005);
  nvtxRangePop();
}

int Iterations() {
  fakecuda_init();
  fakecuda_launch(kAdd, 64, 256, 24, 500000);
  for (int k = 0; k < 3; ++k) step(k);
  fakecuda_launch(kAdd, 64, 256, 24, 500000);
  burn(0.02);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "iterations") return Iterations();
  if (argc > 1) return Forking(std::string(argv[1]) == "fork-after");
  fakecuda_init();
  upload();
  compute();
  graph();
  download();
  sampled();
  finish();
  burn(0.05);
  return 0;
}
