#include "exporters/registry.h"

#include "output/progress.h"

namespace exporters {

const std::vector<ExporterInfo>& Exporters() {
  static const std::vector<ExporterInfo> kExporters = {
      {"json", ".json", "the calling-context tree as nested JSON objects (cct-query tree --format json)", &ExportJson},
      {"folded", ".folded", "folded stacks of one additive metric (FlameGraph, inferno, speedscope)", &ExportFolded},
      {"hatchet", ".json", "Hatchet's literal format (GraphFrame.from_literal)", &ExportHatchet},
      {"hatchet-json", ".json", "Hatchet's GraphFrame.to_json: graph and dataframe", &ExportHatchetJson},
      {"pprof", ".pb.gz", "gzipped profile.proto (go tool pprof, Pyroscope, Speedscope)", &ExportPprof, nullptr, /*binary=*/true},
      {"csv", ".csv", "one row per run and node: path, frame and each metric's values", &ExportCsv, &ExportCsvRuns},
      {"json-rows", ".json", "the csv table as a JSON array of row objects", &ExportJsonRows, &ExportJsonRowsRuns},
      {"speedscope", ".speedscope.json", "speedscope's JSON, one sampled profile per thread, of one additive metric",
       &ExportSpeedscope},
      {"perfetto", ".perfetto-trace", "the run's trace (cct-record --trace) for ui.perfetto.dev: threads' NVTX slices "
       "and sampled stacks, GPU streams, bytes in flight", &ExportPerfetto, nullptr, /*binary=*/true},
  };
  return kExporters;
}

namespace {

// The names of the exporters `pick` takes, joined by `separator`, the last
// one by `last`.
template <typename Pick>
std::string JoinExporterNames(std::string_view separator, std::string_view last, Pick pick) {
  std::vector<std::string_view> names;
  for (const ExporterInfo& e : Exporters())
    if (pick(e)) names.push_back(e.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last : separator;
    out += names[i];
  }
  return out;
}

}  // namespace

std::string ExporterNames(std::string_view separator, std::string_view last) {
  return JoinExporterNames(separator, last, [](const ExporterInfo&) { return true; });
}

std::string SeveralRunsExporterNames() {
  return JoinExporterNames(", ", " and ", [](const ExporterInfo& e) { return e.write_runs != nullptr; });
}

cct::Result<const ExporterInfo*> FindExporter(std::string_view name) {
  for (const ExporterInfo& e : Exporters())
    if (e.name == name) return &e;
  return cct::InvalidArgument("unknown export format '" + std::string(name) + "' (expected " +
                              ExporterNames(", ", " or ") + ")");
}

namespace {

// Runs `write` on `real_out`, every byte passing through a counter so that
// the progress line shows how much has been written even for exporters that
// do not count nodes.
template <typename Write>
cct::Status CountedExport(const ExportOptions& options, std::ostream& real_out, Write write) {
  output::CountingStreambuf counting(real_out.rdbuf(), options.progress);
  std::ostream counted(&counting);
  std::ostream& out = options.progress ? counted : real_out;
  cct::Status status = write(out);
  if (options.progress) {
    options.progress->Tick();  // a last redraw, so a slow export shows where it ended
    options.progress->Finish();
  }
  if (status.ok() && !out) status = cct::IoError("cannot write the export");
  return status;
}

}  // namespace

cct::Status WriteExport(const query::Profile& profile, const ExporterInfo& exporter, const ExportOptions& options,
                        std::ostream& out) {
  return CountedExport(options, out, [&](std::ostream& o) { return exporter.write(profile, options, o); });
}

cct::Status WriteExport(const std::vector<TableRun>& runs, const ExporterInfo& exporter, const ExportOptions& options,
                        std::ostream& out) {
  if (!exporter.write_runs)
    return cct::InvalidArgument("--to " + std::string(exporter.name) + " writes one run (several into one file: " +
                                SeveralRunsExporterNames() + ")");
  return CountedExport(options, out, [&](std::ostream& o) { return exporter.write_runs(runs, options, o); });
}

}  // namespace exporters
