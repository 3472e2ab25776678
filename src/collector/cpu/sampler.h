// The CPU sampler's entry points for the runtime core (INTERNAL): its source
// (kCpuSamplerSource, registered in core/sources.cc) does the rest through
// the hooks of core/source.h. Normal context only.
#pragma once

#include "collector/core/runtime_state.h"

namespace collector::internal {

// Arms the thread's sampling timer (task-clock event, else POSIX timer).
bool ArmTimer(ThreadState* t);
void DisarmTimer(ThreadState* t);

}  // namespace collector::internal
