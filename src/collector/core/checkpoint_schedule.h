// When the checkpoint thread writes the run next: every --checkpoint
// seconds, but in the long run with at most kCheckpointDutyPercent of the
// wall clock spent writing.
//
// A checkpoint rebuilds the tree from every thread's samples and rewrites
// the run file, the trace with it (--trace): its cost grows with the tree
// and, for a traced run, with every event so far. Written at a fixed
// cadence, a long traced run or a huge tree would keep the checkpoint
// thread busy all the time (a write longer than the interval was followed
// at once by the next). The cadence stretches instead, once the writes so
// far have used their share of the time since the start plus an allowance
// (kCheckpointAllowanceNs: a first write that symbolizes every new address
// is dear once, and must not space out the ones after it); a crash then
// loses at most the stretched interval. Pure; thread-compatible.
#pragma once

#include <algorithm>
#include <cstdint>

namespace collector {

inline constexpr int64_t kCheckpointDutyPercent = 5;

// How long after the start the checkpoint thread makes the run's first
// write (an empty tree and the metadata: what a process killed before its
// first checkpoint leaves). A process that ends sooner writes once, at its
// end: the short processes of a build (sh, the compiler driver, as) were
// paying ~0.3 ms each on the program's own thread for a file their final
// write replaced a few milliseconds later. Only a SIGKILL in this window
// leaves no run (a crash still writes one: fatal.cc).
inline constexpr int64_t kStartWriteDelayNs = 50'000'000;
inline constexpr int64_t kCheckpointAllowanceNs = 1000000000;

// The next checkpoint's CLOCK_MONOTONIC time, after a write that ended at
// `write_end_ns`, when the writes since `start_ns` took `spent_ns` in all:
// the planned one (`planned_ns`, the previous plan plus the interval; an
// interval after the write's end when that is past), or later, the first
// time at which `spent_ns` is within kCheckpointDutyPercent of the time since
// the start plus kCheckpointAllowanceNs.
// `spaced`: later than the cadence would have it.
struct NextCheckpoint {
  int64_t at_ns = 0;
  bool spaced = false;
};
inline NextCheckpoint NextCheckpointNs(int64_t planned_ns, int64_t interval_ns, int64_t write_end_ns,
                                       int64_t start_ns, int64_t spent_ns) {
  const int64_t cadence = planned_ns >= write_end_ns ? planned_ns : write_end_ns + interval_ns;
  const int64_t over = spent_ns - kCheckpointAllowanceNs;
  const int64_t budget = over <= 0 ? cadence : start_ns + over * (100 / kCheckpointDutyPercent);
  return {std::max(cadence, budget), budget > cadence};
}

}  // namespace collector
