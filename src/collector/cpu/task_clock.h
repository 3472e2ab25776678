// The task-clock perf event the CPU sampler arms on each thread (one
// overflow every `period_ns` of the thread's CPU time), opened disabled and
// close-on-exec; the caller arms it (sampler.cc) or only holds it
// (record::SamplingHooks, which keeps the kernel's per-task perf hooks on
// for the recording: it must be the same kind of event). Async-signal-safe
// (one system call); the descriptor is the caller's.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace collector {

// The event's descriptor for thread `tid` (0: the calling thread), or -1
// with errno (perf events not allowed, no such thread).
int OpenTaskClock(pid_t tid, uint64_t period_ns);

}  // namespace collector
