#include "store/run_meta.h"


#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <nlohmann/json.hpp>

#include "cct/text.h"
#include "store/run_file.h"

namespace store {

JsonField::JsonField(const JsonField& other)
    : value_(other.value_ ? std::make_unique<nlohmann::json>(*other.value_) : nullptr) {}
JsonField& JsonField::operator=(const JsonField& other) {
  if (this != &other) value_ = other.value_ ? std::make_unique<nlohmann::json>(*other.value_) : nullptr;
  return *this;
}
nlohmann::json& JsonField::operator*() {
  if (!value_) value_ = std::make_unique<nlohmann::json>(nlohmann::json::object());
  return *value_;
}
JsonField::JsonField() = default;
JsonField::JsonField(JsonField&& other) noexcept = default;
JsonField& JsonField::operator=(JsonField&& other) noexcept = default;
nlohmann::json& JsonField::operator[](const std::string& key) { return (**this)[key]; }
const nlohmann::json& JsonField::operator[](const std::string& key) const { return (**this)[key]; }
const nlohmann::json& JsonField::operator*() const {
  static const nlohmann::json empty = nlohmann::json::object();
  return value_ ? *value_ : empty;
}
JsonField::~JsonField() = default;


std::string_view RunStateName(RunState s) {
  switch (s) {
    case RunState::kRecording: return "recording";
    case RunState::kComplete: return "complete";
    case RunState::kCrashed: return "crashed";
  }
  return "unknown";
}

namespace {

const char* const kKnownFields[] = {
    "id",         "name",        "state",         "source",          "start_time_ns", "duration_ns",
    "exit_code",  "term_signal", "command",       "cwd",             "host",          "cpu_model",
    "gpu_model",  "driver_version", "cuda_version", "collector_version", "git_commit", "tags",
    "env",        "sampling",    "diagnostics",   "pid",             "pid_start_ticks", "parent_run",
    "iteration_regex", "node_count", "checkpoints", "updated_ns", "root_run", "user", "executable", "system",
    "modules", "process_cpu_ns", "launcher"};

template <class T>
bool Read(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return true;
  try {
    out = it->get<T>();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

nlohmann::json RunMeta::ToJson() const {
  nlohmann::json j = extra->is_object() ? *extra : nlohmann::json::object();
  j["id"] = id;
  j["name"] = name;
  j["state"] = RunStateName(state);
  j["source"] = source;
  j["start_time_ns"] = start_time_ns;
  j["duration_ns"] = duration_ns;
  j["exit_code"] = exit_code ? nlohmann::json(*exit_code) : nlohmann::json();
  j["term_signal"] = term_signal ? nlohmann::json(*term_signal) : nlohmann::json();
  j["command"] = command;
  j["cwd"] = cwd;
  j["host"] = host;
  j["cpu_model"] = cpu_model;
  j["gpu_model"] = gpu_model;
  j["driver_version"] = driver_version;
  j["cuda_version"] = cuda_version;
  j["collector_version"] = collector_version;
  j["git_commit"] = git_commit;
  j["tags"] = tags;
  j["env"] = env;
  j["sampling"] = *sampling;
  j["diagnostics"] = diagnostics;
  j["pid"] = pid;
  j["pid_start_ticks"] = pid_start_ticks;
  j["parent_run"] = parent_run;
  j["iteration_regex"] = iteration_regex;
  j["node_count"] = node_count;
  j["checkpoints"] = checkpoints;
  j["updated_ns"] = updated_ns;
  j["root_run"] = root_run;
  // What format version 2 added; written only when known, so imported runs
  // stay small.
  if (!user.empty()) j["user"] = user;
  if (!executable.empty() || !executable_build_id.empty() || !compiler.empty())
    j["executable"] = {{"path", executable}, {"build_id", executable_build_id}, {"compiler", compiler}};
  if (!kernel.empty() || !os.empty() || !glibc.empty()) j["system"] = {{"kernel", kernel}, {"os", os}, {"glibc", glibc}};
  if (!modules.empty()) {
    nlohmann::json mods = nlohmann::json::array();
    for (const ModuleInfo& m : modules) mods.push_back({{"path", m.path}, {"build_id", m.build_id}});
    j["modules"] = std::move(mods);
  }
  if (process_cpu_ns > 0) j["process_cpu_ns"] = process_cpu_ns;
  if (launcher) {
    nlohmann::json l = {{"source", launcher->source}};
    for (const auto& [k, v] : {std::pair<const char*, int64_t>{"rank", launcher->rank}, {"size", launcher->size},
                               {"local_rank", launcher->local_rank}, {"node_index", launcher->node_index}})
      if (v >= 0) l[k] = v;
    // Written only when known, like the numbers: older readers ignore them.
    for (const auto& [k, v] : {std::pair<const char*, const std::string*>{"job_id", &launcher->job_id},
                               {"step", &launcher->step}, {"job_source", &launcher->job_source},
                               {"node_name", &launcher->node_name}})
      if (!v->empty()) l[k] = *v;
    j["launcher"] = std::move(l);
  }
  return j;
}

cct::Result<RunMeta> RunMeta::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return cct::Corrupt("run record is not a JSON object");
  RunMeta m;
  std::string state;
  std::optional<int> exit_code, term_signal;
  bool ok = Read(j, "id", m.id) && Read(j, "name", m.name) && Read(j, "state", state) &&
            Read(j, "source", m.source) && Read(j, "start_time_ns", m.start_time_ns) &&
            Read(j, "duration_ns", m.duration_ns) && Read(j, "command", m.command) && Read(j, "cwd", m.cwd) &&
            Read(j, "host", m.host) && Read(j, "cpu_model", m.cpu_model) && Read(j, "gpu_model", m.gpu_model) &&
            Read(j, "driver_version", m.driver_version) && Read(j, "cuda_version", m.cuda_version) &&
            Read(j, "collector_version", m.collector_version) && Read(j, "git_commit", m.git_commit) &&
            Read(j, "tags", m.tags) && Read(j, "env", m.env) && Read(j, "diagnostics", m.diagnostics) &&
            Read(j, "pid", m.pid) && Read(j, "pid_start_ticks", m.pid_start_ticks) &&
            Read(j, "parent_run", m.parent_run) && Read(j, "iteration_regex", m.iteration_regex) &&
            Read(j, "node_count", m.node_count) && Read(j, "checkpoints", m.checkpoints) &&
            Read(j, "updated_ns", m.updated_ns);
  ok = ok && Read(j, "root_run", m.root_run) && Read(j, "user", m.user) &&
       Read(j, "process_cpu_ns", m.process_cpu_ns);
  if (auto it = j.find("executable"); ok && it != j.end() && it->is_object())
    ok = Read(*it, "path", m.executable) && Read(*it, "build_id", m.executable_build_id) &&
         Read(*it, "compiler", m.compiler);
  if (auto it = j.find("system"); ok && it != j.end() && it->is_object())
    ok = Read(*it, "kernel", m.kernel) && Read(*it, "os", m.os) && Read(*it, "glibc", m.glibc);
  if (auto it = j.find("modules"); ok && it != j.end() && it->is_array()) {
    for (const auto& e : *it) {
      ModuleInfo mod;
      if (!e.is_object() || !Read(e, "path", mod.path) || !Read(e, "build_id", mod.build_id)) {
        ok = false;
        break;
      }
      m.modules.push_back(std::move(mod));
    }
  }
  if (auto it = j.find("launcher"); ok && it != j.end() && it->is_object()) {
    LauncherRank l;
    ok = Read(*it, "rank", l.rank) && Read(*it, "size", l.size) && Read(*it, "local_rank", l.local_rank) &&
         Read(*it, "source", l.source) && Read(*it, "job_id", l.job_id) && Read(*it, "step", l.step) &&
         Read(*it, "job_source", l.job_source) && Read(*it, "node_name", l.node_name) &&
         Read(*it, "node_index", l.node_index);
    m.launcher = l;
  }
  if (!ok) return cct::Corrupt("run record has a field of the wrong type");
  if (auto it = j.find("exit_code"); it != j.end() && it->is_number_integer()) m.exit_code = it->get<int>();
  if (auto it = j.find("term_signal"); it != j.end() && it->is_number_integer()) m.term_signal = it->get<int>();
  if (auto it = j.find("sampling"); it != j.end() && it->is_object()) *m.sampling = *it;
  if (state == "complete") m.state = RunState::kComplete;
  else if (state == "crashed") m.state = RunState::kCrashed;
  else if (state == "recording") m.state = RunState::kRecording;
  else return cct::Corrupt("run record has unknown state '" + state + "'");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* f : kKnownFields) known |= (it.key() == f);
    if (!known) (*m.extra)[it.key()] = it.value();
  }
  return m;
}

std::string LauncherRank::JobKey() const {
  if (job_id.empty()) return "";
  return step.empty() ? job_id : job_id + "." + step;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::optional<ProcessStat> ReadProcessStat(int64_t pid) {
  auto text = ReadWholeFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!text.ok()) return std::nullopt;
  const std::string& line = *text;
  // The command name is parenthesised and may itself contain spaces and
  // parentheses: fields count from the last ')'.
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcessStat st;
  st.name = line.substr(open + 1, close - open - 1);
  size_t i = close + 1;
  for (int field = 3; field <= 22; ++field) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\n') ++i;
    if (start == i) return std::nullopt;
    if (field != 4 && field != 22) continue;
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(line.data() + start, line.data() + i, v);
    if (ec != std::errc() || end != line.data() + i) return std::nullopt;
    if (field == 4) st.ppid = static_cast<int64_t>(v);
    else st.start_ticks = v;
  }
  return st;
}

uint64_t ProcessStartTicks(int64_t pid) {
  const std::optional<ProcessStat> st = ReadProcessStat(pid);
  return st ? st->start_ticks : 0;
}

std::string RunKeyOf(const RunMeta& meta) {
  auto it = meta.extra->find("run_key");
  return it != meta.extra->end() && it->is_string() ? it->get<std::string>() : std::string();
}

RunState EffectiveState(const RunMeta& meta) {
  if (meta.state != RunState::kRecording || meta.pid <= 0 || meta.host != HostName()) return meta.state;
  const bool gone = ::kill(static_cast<pid_t>(meta.pid), 0) != 0 && errno == ESRCH;
  if (gone) return RunState::kCrashed;
  if (meta.pid_start_ticks != 0 && ProcessStartTicks(meta.pid) != meta.pid_start_ticks) return RunState::kCrashed;
  return meta.state;
}

size_t CutToLimits(RunMeta& m) {
  size_t cut = 0;
  auto limit = [&](std::string& s, size_t max_bytes) {
    if (s.size() <= max_bytes) return;
    s = cct::CutToBytes(s, max_bytes);
    ++cut;
  };
  auto limit_map = [&](std::map<std::string, std::string>& map, size_t key_bytes, size_t value_bytes) {
    bool long_key = false;
    for (auto& [k, v] : map) {
      limit(v, value_bytes);
      long_key |= k.size() > key_bytes;
    }
    if (!long_key) return;  // keys are const in the map: rebuild it only when one must change
    std::map<std::string, std::string> out;
    for (auto& [k, v] : map) {
      std::string key = k;
      limit(key, key_bytes);
      out[std::move(key)] = std::move(v);
    }
    map = std::move(out);
  };
  limit(m.name, kMaxRunNameBytes);
  limit_map(m.tags, kMaxTagBytes, kMaxTagBytes);
  limit_map(m.env, kMaxValueBytes, kMaxValueBytes);
  if (m.command.size() > kMaxArguments) {
    const size_t more = m.command.size() - (kMaxArguments - 1);
    m.command.resize(kMaxArguments - 1);
    m.command.push_back("…[" + std::to_string(more) + " more arguments]");
    ++cut;
  }
  for (std::string& a : m.command) limit(a, kMaxValueBytes);
  for (std::string& c : m.compiler) limit(c, kMaxValueBytes);
  for (ModuleInfo& mod : m.modules) limit(mod.path, kMaxValueBytes);
  if (m.launcher)
    for (std::string* s : {&m.launcher->source, &m.launcher->job_id, &m.launcher->step, &m.launcher->job_source,
                           &m.launcher->node_name})
      limit(*s, kMaxJobIdBytes);
  for (std::string* s : {&m.source, &m.cwd, &m.host, &m.cpu_model, &m.gpu_model, &m.driver_version, &m.cuda_version,
                         &m.collector_version, &m.git_commit, &m.user, &m.executable, &m.executable_build_id,
                         &m.kernel, &m.os, &m.glibc, &m.iteration_regex})
    limit(*s, kMaxValueBytes);
  return cut;
}

}  // namespace store
