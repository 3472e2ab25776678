// Fuzz target: collector::LauncherRankFrom (the rank and job a parallel
// launcher's environment variables give a process, docs/cli.md "Parallel
// jobs") on an environment made of the input's NAME=VALUE lines. What it
// returns is consistent: a rank from 0 with the variable it came from, a
// job source exactly when there is a job id, a step only from Slurm, a node
// name (the host's by default), and a run name ending in ".rRANK".
#include <map>
#include <string>

#include "collector/core/run_info.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::Bytes(data, size);
  std::map<std::string, std::string> vars;
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(i, nl - i);
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) vars[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    i = nl + 1;
  }
  // Values are C strings in a real environment: the first NUL ends them.
  for (auto& [name, value] : vars) value = value.c_str();
  auto env = [&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  const std::optional<store::LauncherRank> r = collector::LauncherRankFrom(env, "fuzzhost");
  if (!r) return 0;
  FUZZ_CHECK(r->rank >= 0);
  FUZZ_CHECK(!r->source.empty() && vars.count(r->source));
  FUZZ_CHECK(r->size >= -1 && r->local_rank >= -1 && r->node_index >= -1);
  FUZZ_CHECK(r->job_id.empty() == r->job_source.empty());
  FUZZ_CHECK(r->step.empty() || r->job_source == "SLURM_JOB_ID");
  FUZZ_CHECK(!r->node_name.empty());
  FUZZ_CHECK(r->JobKey().empty() == r->job_id.empty());
  const std::string name = collector::RunName("app", {}, r);
  const std::string suffix = ".r" + std::to_string(r->rank);
  FUZZ_CHECK(name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
  return 0;
}
