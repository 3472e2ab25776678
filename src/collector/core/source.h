// Sampling sources: what the runtime core tells each source of data at the
// points of the process's life, modelled on Caliper's services.
//
// A source is a table of hooks (any may be null); core/sources.cc lists the
// sources in the order their hooks run. The runtime core (core/) owns the
// process lifecycle, the thread registry and the run writing; it calls the
// hooks of every source at these points, in table order:
//
//   start(config)          Start, after the configuration is read and before
//                          anything process-wide is set up: read options
//                          (warnings allowed, no handlers, no threads).
//   attach()               Start, once the runtime's own resources exist and
//                          before the run is created: install process-wide
//                          handlers. false: the collector stops here and does
//                          not profile the process (it has warned).
//   thread_started(t)      a thread registered (registry_mutex held; the
//                          thread may not be the calling one).
//   thread_exiting(t)      the calling thread is exiting (TLS destructor).
//   before_checkpoint(f)   before a checkpoint or the final write (f: final,
//                          at exit or exec), WITHOUT flush_mutex: deliver
//                          buffered data that needs locks of its own.
//   stop() / resume()      sampling stops (exit, exec, fatal signal in
//                          another thread) / resumes (exec failed).
//   add_to_run(run)        inside WriteRun, flush_mutex held, after the CPU
//                          samples and run metadata are in: add your nodes,
//                          metrics, diagnostics and iteration values. Must
//                          not throw past WriteRun's try (it catches).
//   fork_child()           in the child of fork() that goes on recording,
//                          after the run is restarted: reset your totals.
//
// None of the hooks runs in a signal handler. A fatal signal's handler
// calls none; it wakes the checkpoint thread, which calls stop() and writes
// the final state; before_checkpoint is not called there (the runtime never
// flushed the GPU for a crash).
//
// Adding a source (say, a Python stack walker):
//   1. Write one file, e.g. src/collector/python/python_walker.cc, that
//      defines `extern const Source kPythonSource = {"python", ...hooks...};`
//      (namespace collector::internal). Per-thread data goes in ThreadState
//      (core/runtime_state.h) only if a signal handler must reach it;
//      otherwise keep it in the file.
//   2. Register it: one `extern const Source` line and one table entry in
//      core/sources.cc, at the position where its hooks should run relative
//      to the others; add the file to src/collector/meson.build.
//
// Thread-safety: the table is constant after static initialization; each
// hook documents the locks held when it is called (above).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "cct/tree.h"
#include "collector/core/config.h"
#include "collector/core/profile_builder.h"
#include "store/iterations.h"
#include "store/trace.h"
#include "store/run_meta.h"

namespace collector::internal {

struct ThreadState;

// What add_to_run may add to: the checkpoint being built.
struct RunContext {
  cct::Tree& tree;
  ProfileBuilder& builder;
  const SymbolLookup& lookup;
  size_t thread_count;                                      // registered threads
  const std::vector<std::string>& thread_names;             // by thread index
  const std::vector<std::vector<cct::NodeId>>& value_nodes;  // by thread index: CPU trie node → tree node
  store::RunMeta& meta;
  store::RunIterations& iterations;  // the run's ended iterations
  // --trace: the trace being built (CPU samples and NVTX ranges are in;
  // sources add their events on `tree`'s nodes); null without --trace.
  store::RunTrace* trace;
};

// A source's hooks; a source names only those it needs (designated
// initializers), the rest stay null.
struct Source {
  const char* name = nullptr;
  void (*start)(const CollectorConfig& config) = nullptr;
  bool (*attach)() = nullptr;
  void (*thread_started)(ThreadState* t) = nullptr;
  void (*thread_exiting)(ThreadState* t) = nullptr;
  void (*before_checkpoint)(bool final) = nullptr;
  void (*stop)() = nullptr;
  void (*resume)() = nullptr;
  void (*add_to_run)(RunContext& run) = nullptr;
  void (*fork_child)() = nullptr;
};

// The registered sources, in hook order (core/sources.cc).
std::span<const Source* const> Sources();

// Each calls one hook of every source that has it, in table order.
void SourcesStart(const CollectorConfig& config);
bool SourcesAttach();  // stops at the first source that fails
void SourcesThreadStarted(ThreadState* t);
void SourcesThreadExiting(ThreadState* t);
void SourcesBeforeCheckpoint(bool final);
void SourcesStop();
void SourcesResume();
void SourcesAddToRun(RunContext& run);
void SourcesForkChild();

}  // namespace collector::internal
