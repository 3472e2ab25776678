// Collector benchmark workload: two threads, each recursing DEPTH frames deep
// and then doing a fixed amount of floating-point work at the bottom, so
// that a profiler's overhead shows as extra wall time.
//   deep-workload [DEPTH=48] [WORK=3e8]
#include <pthread.h>

#include <cstdio>
#include <cstdlib>

namespace {
volatile double sink;
long work_per_thread = 300000000;

extern "C" __attribute__((noinline)) double leaf_compute(long n) {
  double acc = 0;
  for (long i = 0; i < n; ++i) acc = acc * 0.9999999 + static_cast<double>(i & 1023);
  return acc;
}

extern "C" __attribute__((noinline)) double descend(int depth, long n) {
  if (depth <= 1) return leaf_compute(n);
  const double r = descend(depth - 1, n);
  sink = sink + depth;  // not a tail call
  return r;
}

int depth = 48;

void* worker(void*) {
  // Many visits to the bottom so the stack is rebuilt over and over.
  for (int i = 0; i < 100; ++i) sink = sink + descend(depth, work_per_thread / 100);
  return nullptr;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) depth = std::atoi(argv[1]);
  if (argc > 2) work_per_thread = static_cast<long>(std::atof(argv[2]));
  pthread_t t;
  pthread_create(&t, nullptr, worker, nullptr);
  worker(nullptr);
  pthread_join(t, nullptr);
  std::printf("%f\n", static_cast<double>(sink));
  return 0;
}
