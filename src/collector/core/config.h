// CollectorConfig: how cct-record tells the preloaded collector what to do.
//
// cct-record passes its options to the collector in CCT_RECORD_* environment
// variables (the collector runs inside an arbitrary program, so the
// environment is the only channel that survives fork and exec). Parsing is a
// pure function of a getenv-like lookup. Plain value type.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "cct/status.h"

namespace collector {

enum class SampleClock { kCpu, kWall };
// Where NVTX ranges sit in a sample's path: at the CPU frame that pushed them
// (interleaved), or all first, then the CPU stack (prefix; for interpreters).
enum class NvtxPlacement { kInterleaved, kPrefix };

// Python frames (python/python_frames.h): auto (read them when the program
// is a CPython whose layout we know), off (native frames only).
enum class PythonMode { kAuto, kOff };

// GPU tracing: auto (when a driver and a GPU are present), on (required:
// cct-record fails with 125 when it cannot start), off (CUDA untouched).
enum class GpuTracing { kAuto, kOn, kOff };

// --max-depth: a sampled stack deeper than this keeps its outermost
// max_depth frames.
inline constexpr int kDefaultMaxDepth = 4096;
inline constexpr int kMinMaxDepth = 8;
inline constexpr int kMaxMaxDepth = 65536;

// --trace-limit's default: 256 MiB of events per process, about 16 million
// samples (hours of one thread at 1 kHz), stored in far fewer bytes.
inline constexpr uint64_t kDefaultTraceLimitBytes = uint64_t{256} << 20;

struct CollectorConfig {
  std::string db_path;                 // CCT_RECORD_DB (its presence turns the collector on)
  // CCT_RECORD_SPOOL: the directory this process's run file goes to
  // (store/run_file.h), which cct-record gathers into db_path. Default:
  // db_path + ".spool/unowned", which the next cct-record into db_path
  // gathers once the process is gone.
  std::string spool_dir;
  // CCT_RECORD_ROWS: the CFI row table the recording's processes share
  // (cpu/shared_rows.h), a /proc/PID/fd/N path; "" when there is none.
  std::string rows_path;
  // CCT_RECORD_INBOX=1: cct-record listens on spool_dir/inbox
  // (store/run_file.h): a run with no file there yet is sent, not written.
  bool inbox = false;
  SampleClock clock = SampleClock::kCpu;  // CCT_RECORD_CLOCK: cpu | wall
  double freq_hz = 1000;               // CCT_RECORD_FREQ
  double checkpoint_s = 1;             // CCT_RECORD_CHECKPOINT (0: only at exit)
  std::string name;                    // CCT_RECORD_NAME
  std::map<std::string, std::string> tags;  // CCT_RECORD_TAGS: JSON object
  // Run keys (run files' own ids, 16 hex digits; the database's run ids are
  // assigned when cct-record stores the runs).
  std::string parent_key;              // CCT_RECORD_PARENT_KEY: run of the process that started this one
  std::string root_key;                // CCT_RECORD_ROOT_KEY: root run of the invocation ("": this process is its root)
  bool follow = true;                  // CCT_RECORD_FOLLOW: 0 = this process only
  std::string session;                 // CCT_RECORD_SESSION: ties a recording's runs together
  int signal_offset = 6;               // CCT_RECORD_SIGNAL: sample signal is SIGRTMIN + this
  std::string iteration_regex;         // CCT_RECORD_ITERATION
  int max_depth = kDefaultMaxDepth;    // CCT_RECORD_MAX_DEPTH: frames kept per sampled stack
  NvtxPlacement nvtx_placement = NvtxPlacement::kInterleaved;  // CCT_RECORD_NVTX_MODE
  // CCT_RECORD_NVTX_INHERIT=main: GPU work launched by a thread with no open
  // NVTX range of its own goes under the ranges open on the main thread at
  // that moment (PyTorch's autograd thread runs the backward pass while the
  // main thread waits inside its "backward" range). Off by default: a
  // thread that works on its own schedule (a data loader's) would be placed
  // under whatever the main thread had open.
  bool nvtx_inherit_main = false;
  GpuTracing gpu = GpuTracing::kAuto;  // CCT_RECORD_GPU: auto | on | off
  PythonMode python = PythonMode::kAuto;  // CCT_RECORD_PYTHON: auto | off
  static constexpr uint32_t kMinPcPeriod = 5, kMaxPcPeriod = 31, kDefaultPcPeriod = 15;  // CUPTI's range
  bool gpu_pc_sampling = false;        // CCT_RECORD_GPU_PC_SAMPLING: 1 = PC sampling (gins)
  // CCT_RECORD_GPU_PC_PERIOD: one PC sample every 2^N cycles per SM
  // (kMinPcPeriod..kMaxPcPeriod). 2^15 by default: CUPTI's own (2^11 on an
  // H200) made a kernel-bound program 5.5x slower, 2^15 1.2x with over a
  // million samples in 0.16 s of kernels (docs/performance.md).
  uint32_t gpu_pc_period = kDefaultPcPeriod;
  std::string gpu_raw_dir;             // CCT_RECORD_GPU_RAW: directory for raw GPU dumps
  std::string gpu_adapter;             // CCT_RECORD_GPU_ADAPTER: adapter module (default: libcct-cupti.so beside us)
  // CCT_RECORD_ACCOUNT_SHORT_THREADS=1: a thread's time after its last
  // sample is added to its start routine's node when it exits.
  bool account_short_threads = false;
  // CCT_RECORD_SYSTEM_DEBUG_INFO=1: also read the DWARF (lines, inlined
  // frames) of the distribution's own binaries (Symbolizer::Create).
  bool system_debug_info = false;
  // CCT_RECORD_KEEP_ARGS=1: store the command line as given; by default
  // credentials in it are masked (run_info.h MaskSecretArguments).
  bool keep_args = false;
  // CCT_RECORD_SYMBOL_CACHE: the directory of the symbol tables shared
  // across processes (cpu/symbol_cache.h); "off" (stored as "") disables
  // it. Default: DefaultSymbolCacheDir().
  std::string symbol_cache_dir;
  // CCT_RECORD_TRACE=1 (--trace): keep a time-ordered trace of samples,
  // NVTX ranges and GPU activities beside the tree (store/trace.h), within
  // CCT_RECORD_TRACE_LIMIT bytes of memory per process (--trace-limit).
  bool trace = false;
  uint64_t trace_limit_bytes = kDefaultTraceLimitBytes;
  // CCT_RECORD_MACHINE: the machine facts an ancestor measured
  // (run_info.h MachineFacts), passed on as they are.
  std::string machine;
};

using EnvLookup = std::function<const char*(const char*)>;

// Whether `s` is a run key: 16 hex digits.
bool IsRunKey(std::string_view s);

// nullopt when CCT_RECORD_DB is not set (the library was preloaded by
// someone else: stay inert). An error for malformed values.
cct::Result<std::optional<CollectorConfig>> ParseConfig(const EnvLookup& env);

// The environment entries ("NAME=VALUE") that carry `config` to a child.
std::map<std::string, std::string> ConfigEnvironment(const CollectorConfig& config);

}  // namespace collector
