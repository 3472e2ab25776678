// NextCheckpointNs (collector/core/checkpoint_schedule.h): the checkpoint
// thread keeps its cadence while its writes stay within 5 % of the time
// since the start plus a 1 s allowance, and spaces them out when they do
// not. Expected times worked out by hand from that rule.
#include <doctest/doctest.h>

#include <cstdint>

#include "collector/core/checkpoint_schedule.h"

namespace {
constexpr int64_t kScheduleMs = 1000000;
}

TEST_CASE("checkpoint schedule: the cadence holds within 5 % plus an allowance; dearer writes are spaced out") {
  using collector::NextCheckpointNs;
  // Within the allowance (a dear first write, 300 ms of 1 s): the cadence.
  auto n = NextCheckpointNs(2000 * kScheduleMs, 1000 * kScheduleMs, 1300 * kScheduleMs, 0, 300 * kScheduleMs);
  CHECK(n.at_ns == 2000 * kScheduleMs);
  CHECK_FALSE(n.spaced);
  // Behind schedule (the plan is past): an interval after the write's end.
  n = NextCheckpointNs(2000 * kScheduleMs, 1000 * kScheduleMs, 2050 * kScheduleMs, 0, 600 * kScheduleMs);
  CHECK(n.at_ns == 3050 * kScheduleMs);
  CHECK_FALSE(n.spaced);
  // 1.5 s spent by 10.1 s: 0.5 s over the allowance is 5 % of 10 s, so
  // writing may go on from 10 s, before the plan (10.5 s): the plan stands.
  n = NextCheckpointNs(10500 * kScheduleMs, 1000 * kScheduleMs, 10100 * kScheduleMs, 0, 1500 * kScheduleMs);
  CHECK(n.at_ns == 10500 * kScheduleMs);
  CHECK_FALSE(n.spaced);
  // 2 s spent by 10 s (started at 5 s): 1 s over is 5 % of 20 s: at 25 s.
  n = NextCheckpointNs(10500 * kScheduleMs, 1000 * kScheduleMs, 10100 * kScheduleMs, 5000 * kScheduleMs, 2000 * kScheduleMs);
  CHECK(n.at_ns == 25000 * kScheduleMs);
  CHECK(n.spaced);

  // Simulated: a write that grows by 2 ms each time (a trace that only
  // grows) at a 1 s interval over 600 s: the time spent writing stays
  // within 5 % of the elapsed time plus the allowance (and one write), and
  // while it is cheap every interval has its write.
  int64_t now = 0, next = 1000 * kScheduleMs, spent = 0, cost = 0;
  int writes = 0, writes_first_30s = 0;
  while (next < 600000 * kScheduleMs) {
    now = next;
    cost += 2 * kScheduleMs;
    spent += cost;
    now += cost;
    ++writes;
    if (next <= 30000 * kScheduleMs) ++writes_first_30s;
    CHECK(spent <= now / 20 + 1000 * kScheduleMs + cost);
    next = NextCheckpointNs(next + 1000 * kScheduleMs, 1000 * kScheduleMs, now, 0, spent).at_ns;
  }
  CHECK(writes_first_30s == 30);  // 2 + 4 + ... + 60 = 930 ms spent by then: within the allowance
  CHECK(writes < 600);            // later ones were spaced out
}
