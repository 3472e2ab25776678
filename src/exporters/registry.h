// The exporters cctdb knows, for every front end to enumerate: cct-query
// export's --to values, their help and the dispatch come from here, and so
// can a Python package's. Adding a format: a file in src/exporters/ with its
// entry point (exporter.h) and one entry in registry.cc.
//
// The table is immutable static data: safe to read from any thread.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "exporters/exporter.h"

namespace exporters {

using ExportFn = cct::Status (*)(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
using ExportRunsFn = cct::Status (*)(const std::vector<TableRun>& runs, const ExportOptions& options,
                                     std::ostream& out);

struct ExporterInfo {
  std::string_view name;         // the --to value
  std::string_view extension;    // the usual file name ending
  std::string_view description;  // one line
  ExportFn write;
  ExportRunsFn write_runs = nullptr;  // the table formats: several runs in one file, a row per (run, node)
  bool binary = false;                // bytes, not text (the Python package hands them over as bytes)
};

// Every exporter, in the order cct-query lists them.
const std::vector<ExporterInfo>& Exporters();

// The exporter named `name`; kInvalidArgument "unknown export format 'NAME'
// (expected ...)" when there is none.
cct::Result<const ExporterInfo*> FindExporter(std::string_view name);

// The names joined by `separator`, the last one by `last` ("json, folded
// or csv"; "json|folded|csv").
std::string ExporterNames(std::string_view separator, std::string_view last);

// "csv and json-rows": the formats that write several runs into one file.
std::string SeveralRunsExporterNames();

// Runs `exporter` on `profile`, counting the bytes for options.progress (then
// finished) and failing with kIo when `out` fails.
cct::Status WriteExport(const query::Profile& profile, const ExporterInfo& exporter, const ExportOptions& options,
                        std::ostream& out);
// The same for several runs (exporter.write_runs must be set).
cct::Status WriteExport(const std::vector<TableRun>& runs, const ExporterInfo& exporter, const ExportOptions& options,
                        std::ostream& out);

}  // namespace exporters
