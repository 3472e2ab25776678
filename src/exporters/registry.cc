#include "exporters/registry.h"

#include "output/progress.h"

namespace exporters {

const std::vector<ExporterInfo>& Exporters() {
  static const std::vector<ExporterInfo> kExporters = {
      {"json", ".json", "the calling-context tree as nested JSON objects (cct-query tree --format json)", &ExportJson},
      {"folded", ".folded", "folded stacks of one additive metric (FlameGraph, inferno, speedscope)", &ExportFolded},
      {"hatchet", ".json", "Hatchet's literal format (GraphFrame.from_literal)", &ExportHatchet},
      {"hatchet-json", ".json", "Hatchet's GraphFrame.to_json: graph and dataframe", &ExportHatchetJson},
      {"pprof", ".pb.gz", "gzipped profile.proto (go tool pprof, Pyroscope, Speedscope)", &ExportPprof},
      {"csv", ".csv", "one row per node: path, frame and each metric's values", &ExportCsv},
      {"speedscope", ".speedscope.json", "speedscope's JSON, one sampled profile per thread, of one additive metric",
       &ExportSpeedscope},
  };
  return kExporters;
}

std::string ExporterNames(std::string_view separator, std::string_view last) {
  std::string out;
  const std::vector<ExporterInfo>& all = Exporters();
  for (size_t i = 0; i < all.size(); ++i) {
    if (i > 0) out += i + 1 == all.size() ? last : separator;
    out += all[i].name;
  }
  return out;
}

cct::Result<const ExporterInfo*> FindExporter(std::string_view name) {
  for (const ExporterInfo& e : Exporters())
    if (e.name == name) return &e;
  return cct::InvalidArgument("unknown export format '" + std::string(name) + "' (expected " +
                              ExporterNames(", ", " or ") + ")");
}

cct::Status WriteExport(const query::Profile& profile, const ExporterInfo& exporter, const ExportOptions& options,
                        std::ostream& real_out) {
  // Every format's bytes pass through a counter, so the progress line shows
  // how much has been written even for exporters that do not count nodes.
  output::CountingStreambuf counting(real_out.rdbuf(), options.progress);
  std::ostream counted(&counting);
  std::ostream& out = options.progress ? counted : real_out;
  cct::Status status = exporter.write(profile, options, out);
  if (options.progress) {
    options.progress->Tick();  // a last redraw, so a slow export shows where it ended
    options.progress->Finish();
  }
  if (status.ok() && !out) status = cct::IoError("cannot write the export");
  return status;
}

}  // namespace exporters
