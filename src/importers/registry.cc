#include "importers/registry.h"

#include "cctdb_config.h"

namespace importers {

namespace {

#if !CCTDB_HAVE_CUPTI
// The raw dump's records are CUPTI's structs: without its headers at build
// time there is no decoder to replay them with.
cct::Result<ImportReport> CuptiRawUnavailable(const ImportRequest& request) {
  CCT_RETURN_IF_ERROR(RejectOptions(request, {"metric", "unit", "skip-bad-lines", "run"}, "cupti-raw"));
  return cct::InvalidArgument(
      "--from cupti-raw: this cct-import was built without CUPTI (no CUDA toolkit with CUPTI was found at build "
      "time); rebuild with one to replay raw GPU dumps");
}
#endif

}  // namespace

const std::vector<ImporterInfo>& Importers() {
  static const std::vector<ImporterInfo> kImporters = {
      {"folded", {".folded", ".txt"}, "folded stacks, one \"frame;frame;frame value\" line per stack",
       "\"frame;frame;frame value\" lines (FlameGraph stackcollapse, inferno);\n"
       "each value is the exclusive value of its stack",
       ImportProduces::kNewRun, {"name", "tag", "metric", "unit", "skip-bad-lines"}, &ImportFoldedRun},
      {"hatchet", {".json"}, "Hatchet JSON (literal format or GraphFrame.to_json)",
       "Hatchet JSON: the literal format or GraphFrame.to_json's graph+dataframe",
       ImportProduces::kNewRun, {"name", "tag", "metric", "unit", "skip-bad-lines"}, &ImportHatchetRun},
      {"hpctoolkit", {""}, "an HPCToolkit database directory",
       "an HPCToolkit database directory (experiment.xml + *.metric-db, or\n"
       "meta.db + profile.db); one run, ranks and threads as thread nodes,\n"
       "HPCToolkit's metric names",
       ImportProduces::kNewRun, {"name", "tag", "metric", "unit", "skip-bad-lines"}, &ImportHpctoolkitRun},
      {"caliper", {".json", ".cali.json"}, "Caliper json-split or json output (cali-query)",
       "Caliper's `cali-query -q \"format json-split\"` or `format json`\n"
       "output: paths as frames, ranks and threads as thread nodes, times in\n"
       "ns, Caliper globals and Adiak values as run metadata and tags",
       ImportProduces::kNewRun, {"name", "tag", "metric", "unit", "skip-bad-lines"}, &ImportCaliperRun},
      {"perf", {".data", ".txt", ".perf"}, "Linux perf: perf.data (needs perf installed) or `perf script` text",
       "Linux perf: a perf.data file (perf script runs on it; needs perf)\n"
       "or the text of `perf script` (default or -F layouts, callchains\n"
       "or not, srcline lines); threads by comm, dso kept as module, each\n"
       "event's periods a metric (cpu-clock, task-clock: cputime), samples",
       ImportProduces::kNewRun, {"name", "tag", "skip-bad-lines"}, &ImportPerfRun},
      {"pprof", {".pb.gz", ".pprof", ".pb"}, "a pprof profile (profile.proto, gzipped or not)",
       "pprof's profile.proto, gzipped or not (Go's runtime/pprof, go tool\n"
       "pprof -proto, gperftools, cct-query export --to pprof): a metric per\n"
       "sample type, inlined frames, the leaf's source line, thread labels",
       ImportProduces::kNewRun, {"name", "tag", "skip-bad-lines"}, &ImportPprofRun},
      {"speedscope", {".speedscope.json", ".json"}, "speedscope JSON (py-spy, rbspy, speedscope, --to speedscope)",
       "speedscope's JSON file format (py-spy, rbspy, speedscope, our --to\n"
       "speedscope): each profile a thread node, sampled or evented; the unit\n"
       "gives the metric (time in ns, bytes, samples), --metric renames it",
       ImportProduces::kNewRun, {"name", "tag", "metric", "skip-bad-lines"}, &ImportSpeedscopeRun},
      {"nsys", {".sqlite"}, "an Nsight Systems report exported to SQLite (nsys export --type sqlite)",
       "an Nsight Systems report exported with `nsys export --type sqlite`:\n"
       "threads, NVTX ranges, each CUDA call that launched GPU work (in\n"
       "the range open at its start, below its backtrace where recorded)\n"
       "with its kernels, copies, memsets and syncs, CPU samples",
       ImportProduces::kNewRun, {"name", "tag", "skip-bad-lines"}, &ImportNsysRun},
      {"ncu-csv", {".csv"}, "Nsight Compute CSV metrics attached to a run's kernel nodes",
       "Nsight Compute `ncu --csv --page raw` output: attaches the kernels'\n"
       "metrics to the kernel nodes of an existing run (--run RUN)",
       ImportProduces::kAttachToRun, {"run", "metric"}, &AttachNcuRun},
      {"cupti-raw", {".cctraw"}, "a raw GPU dump of cct-record --gpu-raw, replayed into its run",
       "a raw GPU dump (`cct-record --gpu-raw DIR`, one file per process):\n"
       "replays it into the run the collector stored (its metadata, tree\n"
       "and GPU metrics); a dump cut short by a crash is replayed up to\n"
       "its last whole record, with a warning",
       ImportProduces::kNewRun, {"name", "tag"},
#if CCTDB_HAVE_CUPTI
       &ImportCuptiRawRun
#else
       &CuptiRawUnavailable
#endif
      },
  };
  return kImporters;
}

std::string ImporterNames() {
  std::string out;
  const std::vector<ImporterInfo>& all = Importers();
  for (size_t i = 0; i < all.size(); ++i)
    out += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + std::string(all[i].name);
  return out;
}

cct::Result<const ImporterInfo*> FindImporter(std::string_view name) {
  for (const ImporterInfo& i : Importers())
    if (i.name == name) return &i;
  return cct::InvalidArgument("unknown format '" + std::string(name) + "' (expected " + ImporterNames() + ")");
}

}  // namespace importers
