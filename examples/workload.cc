// The bundled example program: a small multi-threaded "simulation" with
// several named hot functions and some recursion, for trying cct-record.
//
//   cct-record -- build/examples/cct-example [SECONDS]
//
// The main thread parses input, steps a physics simulation and searches a
// tree recursively; a worker thread compresses and checksums blocks. Each
// piece of work is sized in CPU time, so the profile is predictable: for
// SECONDS = S, the main thread spends 0.10 S in parse_input, 0.45 S in
// simulate_physics (70:30 integrate_forces:update_positions) and 0.20 S in
// recursive_search (13 levels deep); the worker spends 0.65 S in
// compress_block and 0.35 S in checksum.
#include <pthread.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

volatile double sink;

static double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Spins until this thread has used `seconds` more CPU time.
#define BURN(seconds, body)                                          \
  do {                                                               \
    const double end_ = ThreadCpuSeconds() + (seconds);              \
    double acc_ = 0;                                                 \
    while (ThreadCpuSeconds() < end_)                                \
      for (int i_ = 0; i_ < 2000; ++i_) { body; }                    \
    sink = acc_;                                                     \
  } while (0)

__attribute__((noinline)) static void parse_input(double s) { BURN(s, acc_ += std::sqrt(i_ + acc_)); }
__attribute__((noinline)) static void integrate_forces(double s) { BURN(s, acc_ += std::sin(i_ * 0.001) * 1.0001); }
__attribute__((noinline)) static void update_positions(double s) { BURN(s, acc_ = acc_ * 0.999 + i_); }
__attribute__((noinline)) static void simulate_physics(double s) {
  for (int step = 0; step < 10; ++step) {
    integrate_forces(s * 0.07);
    update_positions(s * 0.03);
  }
}
__attribute__((noinline)) static void evaluate_leaf(double s) { BURN(s, acc_ += std::cos(acc_ + i_)); }
__attribute__((noinline)) static void recursive_search(int depth, double s) {
  if (depth == 0) {
    evaluate_leaf(s);
    return;
  }
  recursive_search(depth - 1, s);
  sink = sink + depth;  // keeps the call from becoming a jump
}
__attribute__((noinline)) static void compress_block(double s) { BURN(s, acc_ += (i_ ^ static_cast<int>(acc_)) & 0xff); }
__attribute__((noinline)) static void checksum(double s) { BURN(s, acc_ = acc_ * 31 + i_); }

static void* worker(void* arg) {
  const double s = *static_cast<double*>(arg);
  for (int round = 0; round < 5; ++round) {
    compress_block(s * 0.13);
    checksum(s * 0.07);
  }
  return nullptr;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  if (!(seconds > 0 && seconds < 3600)) {
    std::fprintf(stderr, "usage: cct-example [SECONDS]\n");
    return 2;
  }
  pthread_t t;
  pthread_create(&t, nullptr, worker, &seconds);
  parse_input(seconds * 0.10);
  simulate_physics(seconds * 0.45);
  for (int i = 0; i < 4; ++i) recursive_search(12, seconds * 0.05);
  pthread_join(t, nullptr);
  std::printf("cct-example: done (%.2f s of CPU work)\n", seconds * 1.75);
  return 0;
}
