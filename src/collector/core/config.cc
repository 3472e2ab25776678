#include "collector/core/config.h"

#include "cct/text.h"

#include "collector/cpu/symbol_cache.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace collector {
namespace {

bool ParseDouble(const char* s, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

template <class T>
bool ParseInt(const char* s, T* out) {
  const char* e = s + std::char_traits<char>::length(s);
  auto [p, ec] = std::from_chars(s, e, *out);
  return ec == std::errc() && p == e;
}

}  // namespace

bool IsRunKey(std::string_view s) {
  if (s.size() != 16) return false;
  for (char ch : s)
    if (!std::isxdigit(static_cast<unsigned char>(ch))) return false;
  return true;
}

cct::Result<std::optional<CollectorConfig>> ParseConfig(const EnvLookup& env) {
  const char* db = env("CCT_RECORD_DB");
  if (!db || !*db) return std::optional<CollectorConfig>();
  CollectorConfig c;
  c.db_path = db;
  if (const char* v = env("CCT_RECORD_CLOCK")) {
    const std::string s = v;
    if (s == "cpu") c.clock = SampleClock::kCpu;
    else if (s == "wall") c.clock = SampleClock::kWall;
    else return cct::BadInput("CCT_RECORD_CLOCK must be cpu or wall, not '" + s + "'");
  }
  if (const char* v = env("CCT_RECORD_FREQ")) {
    if (!ParseDouble(v, &c.freq_hz) || c.freq_hz < 1 || c.freq_hz > 100000)
      return cct::BadInput(std::string("CCT_RECORD_FREQ must be a rate in Hz between 1 and 100000, not '") + v + "'");
  }
  if (const char* v = env("CCT_RECORD_CHECKPOINT")) {
    if (!ParseDouble(v, &c.checkpoint_s) || c.checkpoint_s < 0 || c.checkpoint_s > 86400)
      return cct::BadInput(std::string("CCT_RECORD_CHECKPOINT must be seconds between 0 and 86400, not '") + v + "'");
  }
  if (const char* v = env("CCT_RECORD_NAME")) c.name = v;
  if (const char* v = env("CCT_RECORD_TAGS"); v && *v) {
    const auto j = nlohmann::json::parse(v, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return cct::BadInput("CCT_RECORD_TAGS must be a JSON object");
    for (const auto& [k, val] : j.items()) {
      if (!val.is_string()) return cct::BadInput("CCT_RECORD_TAGS values must be strings");
      c.tags[k] = val.get<std::string>();
    }
  }
  for (auto [name, field] : {std::pair{"CCT_RECORD_PARENT_KEY", &c.parent_key}, {"CCT_RECORD_ROOT_KEY", &c.root_key}}) {
    if (const char* v = env(name); v && *v) {
      if (!IsRunKey(v)) return cct::BadInput(std::string(name) + " is not a run key (16 hex digits): " + v);
      *field = v;
    }
  }
  if (const char* v = env("CCT_RECORD_SYMBOL_CACHE")) {
    const std::string s = v;
    if (s == "off") c.symbol_cache_dir.clear();
    else if (!s.empty() && s[0] == '/') c.symbol_cache_dir = s;
    else return cct::BadInput("CCT_RECORD_SYMBOL_CACHE must be an absolute directory or off, not '" + s + "'");
  } else {
    c.symbol_cache_dir = DefaultSymbolCacheDir();
  }
  if (const char* v = env("CCT_RECORD_SPOOL"); v && *v) c.spool_dir = v;
  else c.spool_dir = c.db_path + ".spool/unowned";
  if (const char* v = env("CCT_RECORD_ROWS"); v && *v) c.rows_path = v;
  if (const char* v = env("CCT_RECORD_INBOX")) c.inbox = std::string(v) == "1";
  if (const char* v = env("CCT_RECORD_FOLLOW")) c.follow = std::string(v) != "0";
  if (const char* v = env("CCT_RECORD_SESSION")) c.session = v;
  if (const char* v = env("CCT_RECORD_SIGNAL"); v && *v) {
    if (!ParseInt(v, &c.signal_offset) || c.signal_offset < 0 || c.signal_offset > 28)
      return cct::BadInput(std::string("CCT_RECORD_SIGNAL must be an offset from SIGRTMIN (0..28): ") + v);
  }
  if (const char* v = env("CCT_RECORD_ITERATION")) c.iteration_regex = v;
  if (const char* v = env("CCT_RECORD_TRACE")) c.trace = std::string(v) == "1";
  if (const char* v = env("CCT_RECORD_TRACE_LIMIT"); v && *v) {
    const std::optional<uint64_t> limit = cct::ParseByteSize(v);
    if (!limit || *limit == 0) return cct::BadInput(std::string("CCT_RECORD_TRACE_LIMIT must be a size such as 64M, not '") + v + "'");
    c.trace_limit_bytes = *limit;
  }
  if (const char* v = env("CCT_RECORD_MAX_DEPTH"); v && *v) {
    if (!ParseInt(v, &c.max_depth) || c.max_depth < kMinMaxDepth || c.max_depth > kMaxMaxDepth)
      return cct::BadInput("CCT_RECORD_MAX_DEPTH must be a frame count between " + std::to_string(kMinMaxDepth) +
                           " and " + std::to_string(kMaxMaxDepth) + ", not '" + v + "'");
  }
  if (const char* v = env("CCT_RECORD_NVTX_MODE")) {
    const std::string s = v;
    if (s == "interleaved") c.nvtx_placement = NvtxPlacement::kInterleaved;
    else if (s == "prefix") c.nvtx_placement = NvtxPlacement::kPrefix;
    else return cct::BadInput("CCT_RECORD_NVTX_MODE must be interleaved or prefix, not '" + s + "'");
  }
  if (const char* v = env("CCT_RECORD_PYTHON")) {
    const std::string s = v;
    if (s != "auto" && s != "off") return cct::BadInput("CCT_RECORD_PYTHON must be auto or off, not '" + s + "'");
    c.python = s == "off" ? PythonMode::kOff : PythonMode::kAuto;
  }
  if (const char* v = env("CCT_RECORD_NVTX_INHERIT")) {
    const std::string s = v;
    if (s != "main" && s != "off") return cct::BadInput("CCT_RECORD_NVTX_INHERIT must be main or off, not '" + s + "'");
    c.nvtx_inherit_main = s == "main";
  }
  if (const char* v = env("CCT_RECORD_GPU")) {
    const std::string s = v;
    if (s == "auto") c.gpu = GpuTracing::kAuto;
    else if (s == "on") c.gpu = GpuTracing::kOn;
    else if (s == "off") c.gpu = GpuTracing::kOff;
    else return cct::BadInput("CCT_RECORD_GPU must be auto, on or off, not '" + s + "'");
  }
  if (const char* v = env("CCT_RECORD_GPU_PC_SAMPLING")) c.gpu_pc_sampling = std::string(v) == "1";
  if (const char* v = env("CCT_RECORD_GPU_PC_PERIOD")) {
    const std::string s = v;
    const bool digits = !s.empty() && s.size() <= 2 && s.find_first_not_of("0123456789") == std::string::npos;
    const unsigned long n = digits ? std::stoul(s) : 0;
    if (n < CollectorConfig::kMinPcPeriod || n > CollectorConfig::kMaxPcPeriod)
      return cct::BadInput("CCT_RECORD_GPU_PC_PERIOD must be 5 to 31 (2^N cycles), not '" + s + "'");
    c.gpu_pc_period = static_cast<uint32_t>(n);
  }
  if (const char* v = env("CCT_RECORD_GPU_RAW")) c.gpu_raw_dir = v;
  if (const char* v = env("CCT_RECORD_GPU_ADAPTER")) c.gpu_adapter = v;
  if (const char* v = env("CCT_RECORD_SYSTEM_DEBUG_INFO")) {
    const std::string s = v;
    if (s != "0" && s != "1") return cct::BadInput("CCT_RECORD_SYSTEM_DEBUG_INFO must be 0 or 1, not '" + s + "'");
    c.system_debug_info = s == "1";
  }
  if (const char* v = env("CCT_RECORD_KEEP_ARGS")) {
    const std::string s = v;
    if (s != "0" && s != "1") return cct::BadInput("CCT_RECORD_KEEP_ARGS must be 0 or 1, not '" + s + "'");
    c.keep_args = s == "1";
  }
  if (const char* v = env("CCT_RECORD_ACCOUNT_SHORT_THREADS")) {
    const std::string s = v;
    if (s != "0" && s != "1") return cct::BadInput("CCT_RECORD_ACCOUNT_SHORT_THREADS must be 0 or 1, not '" + s + "'");
    c.account_short_threads = s == "1";
  }
  if (const char* v = env("CCT_RECORD_MACHINE")) c.machine = v;
  return std::optional<CollectorConfig>(std::move(c));
}

std::map<std::string, std::string> ConfigEnvironment(const CollectorConfig& c) {
  std::map<std::string, std::string> e;
  e["CCT_RECORD_DB"] = c.db_path;
  e["CCT_RECORD_CLOCK"] = c.clock == SampleClock::kCpu ? "cpu" : "wall";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", c.freq_hz);
  e["CCT_RECORD_FREQ"] = buf;
  std::snprintf(buf, sizeof buf, "%.17g", c.checkpoint_s);
  e["CCT_RECORD_CHECKPOINT"] = buf;
  if (!c.name.empty()) e["CCT_RECORD_NAME"] = c.name;
  if (!c.tags.empty()) e["CCT_RECORD_TAGS"] = nlohmann::json(c.tags).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  e["CCT_RECORD_SPOOL"] = c.spool_dir;
  if (!c.rows_path.empty()) e["CCT_RECORD_ROWS"] = c.rows_path;
  if (c.inbox) e["CCT_RECORD_INBOX"] = "1";
  e["CCT_RECORD_SYMBOL_CACHE"] = c.symbol_cache_dir.empty() ? "off" : c.symbol_cache_dir;
  if (!c.parent_key.empty()) e["CCT_RECORD_PARENT_KEY"] = c.parent_key;
  if (!c.root_key.empty()) e["CCT_RECORD_ROOT_KEY"] = c.root_key;
  e["CCT_RECORD_FOLLOW"] = c.follow ? "1" : "0";
  if (!c.session.empty()) e["CCT_RECORD_SESSION"] = c.session;
  e["CCT_RECORD_SIGNAL"] = std::to_string(c.signal_offset);
  if (!c.iteration_regex.empty()) e["CCT_RECORD_ITERATION"] = c.iteration_regex;
  e["CCT_RECORD_MAX_DEPTH"] = std::to_string(c.max_depth);
  if (c.trace) {
    e["CCT_RECORD_TRACE"] = "1";
    e["CCT_RECORD_TRACE_LIMIT"] = std::to_string(c.trace_limit_bytes);
  }
  e["CCT_RECORD_NVTX_MODE"] = c.nvtx_placement == NvtxPlacement::kPrefix ? "prefix" : "interleaved";
  if (c.nvtx_inherit_main) e["CCT_RECORD_NVTX_INHERIT"] = "main";
  e["CCT_RECORD_PYTHON"] = c.python == PythonMode::kOff ? "off" : "auto";
  e["CCT_RECORD_GPU"] = c.gpu == GpuTracing::kOn ? "on" : c.gpu == GpuTracing::kOff ? "off" : "auto";
  if (c.gpu_pc_sampling) {
    e["CCT_RECORD_GPU_PC_SAMPLING"] = "1";
    e["CCT_RECORD_GPU_PC_PERIOD"] = std::to_string(c.gpu_pc_period);
  }
  if (!c.gpu_raw_dir.empty()) e["CCT_RECORD_GPU_RAW"] = c.gpu_raw_dir;
  if (!c.gpu_adapter.empty()) e["CCT_RECORD_GPU_ADAPTER"] = c.gpu_adapter;
  if (c.account_short_threads) e["CCT_RECORD_ACCOUNT_SHORT_THREADS"] = "1";
  if (c.keep_args) e["CCT_RECORD_KEEP_ARGS"] = "1";
  if (c.system_debug_info) e["CCT_RECORD_SYSTEM_DEBUG_INFO"] = "1";
  if (!c.machine.empty()) e["CCT_RECORD_MACHINE"] = c.machine;
  return e;
}

}  // namespace collector
