// The registry of sampling sources (core/source.h), one line each. Their
// hooks run in this order: the CPU sampler's stop() and the NVTX totals come
// before the GPU's, as the runtime did before sources were split out.
#include "collector/core/source.h"

namespace collector::internal {

extern const Source kCpuSamplerSource;  // cpu/sampler.cc
extern const Source kThreadTimeSource;  // cpu/thread_time.cc
extern const Source kNvtxSource;        // nvtx/nvtx_ranges.cc
extern const Source kGpuSource;         // gpu/launch_capture.cc
extern const Source kPythonSource;      // python/python_frames.cc

namespace {
constexpr const Source* kSources[] = {
    &kCpuSamplerSource,
    &kThreadTimeSource,  // after the sampler: its thread_exiting disarms the timer first
    &kNvtxSource,
    &kGpuSource,
    &kPythonSource,
};
}  // namespace

std::span<const Source* const> Sources() { return kSources; }

void SourcesStart(const CollectorConfig& config) {
  for (const Source* s : kSources)
    if (s->start) s->start(config);
}
bool SourcesAttach() {
  for (const Source* s : kSources)
    if (s->attach && !s->attach()) return false;
  return true;
}
void SourcesThreadStarted(ThreadState* t) {
  for (const Source* s : kSources)
    if (s->thread_started) s->thread_started(t);
}
void SourcesThreadExiting(ThreadState* t) {
  for (const Source* s : kSources)
    if (s->thread_exiting) s->thread_exiting(t);
}
void SourcesBeforeCheckpoint(bool final) {
  for (const Source* s : kSources)
    if (s->before_checkpoint) s->before_checkpoint(final);
}
void SourcesStop() {
  for (const Source* s : kSources)
    if (s->stop) s->stop();
}
void SourcesResume() {
  for (const Source* s : kSources)
    if (s->resume) s->resume();
}
void SourcesAddToRun(RunContext& run) {
  for (const Source* s : kSources)
    if (s->add_to_run) s->add_to_run(run);
}
void SourcesForkChild() {
  for (const Source* s : kSources)
    if (s->fork_child) s->fork_child();
}

}  // namespace collector::internal
