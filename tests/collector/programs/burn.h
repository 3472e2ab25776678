// Helpers of the collector's test programs: spin for an exact amount of this
// thread's CPU time, read clocks, sleep.
#pragma once
#include <time.h>

// A clock's reading in ns.
inline long long ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
inline long long ThreadCpuNs() { return ClockNs(CLOCK_THREAD_CPUTIME_ID); }

// Sleeps `ns` of wall time, whatever signals interrupt it.
inline void SleepNs(long long ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

extern volatile double burn_sink;

// Spins until this thread has used `ns` more nanoseconds of CPU time,
// reading the clock every `step` multiply-adds.
#define BURN_NS_STEP(ns, step)                                   \
  do {                                                           \
    const long long end_ = ThreadCpuNs() + (ns);                 \
    double acc_ = burn_sink;                                     \
    while (ThreadCpuNs() < end_)                                 \
      for (int i_ = 0; i_ < (step); ++i_) acc_ = acc_ * 1.0000001 + i_; \
    burn_sink = acc_;                                            \
  } while (0)
// Every 500: about a tenth of the time is in clock_gettime.
#define BURN_NS(ns) BURN_NS_STEP(ns, 500)
