// NVTX ranges, marks and iterations as the collector records them. Called by
// nvtx_injection.cc in the program's threads: normal context, never from a
// signal handler. The state lives in core/runtime_state.h (nvtx_mutex, and
// the open ranges in each ThreadState, which the sampling handler reads).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace collector {

// Interns a domain name (0 is the default domain) and a range/mark message
// within a domain; ids are process-wide.
uint32_t NvtxDomain(std::string_view name);
uint32_t NvtxName(uint32_t domain, std::string_view message);
void NvtxPush(uint32_t domain, uint32_t name);
void NvtxPop(uint32_t domain);
uint64_t NvtxStart(uint32_t name);
void NvtxEnd(uint64_t id);
void NvtxMark(uint32_t name);
void NvtxNameThread(uint32_t tid, std::string_view name);
// Counts a misuse (e.g. "nvtx_null_message") in the run's diagnostics.
void NvtxCountProblem(const char* what);

namespace internal {
// A range name's display name, for the profile builder. Takes nvtx_mutex.
std::string RangeDisplayName(uint32_t id);
// --nvtx-inherit main: copies the main thread's open range keys (outermost
// first, at most kMaxRanges) into `keys` and returns their count; 0 when it
// has none or kept rewriting them while we read. Any thread; lock-free.
int MainThreadRanges(uint64_t* keys);
}  // namespace internal

}  // namespace collector
