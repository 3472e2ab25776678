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

struct ExporterInfo {
  std::string_view name;         // the --to value
  std::string_view extension;    // the usual file name ending
  std::string_view description;  // one line
  ExportFn write;
};

// Every exporter, in the order cct-query lists them.
const std::vector<ExporterInfo>& Exporters();

// The exporter named `name`; kInvalidArgument "unknown export format 'NAME'
// (expected ...)" when there is none.
cct::Result<const ExporterInfo*> FindExporter(std::string_view name);

// The names joined by `separator`, the last one by `last` ("json, folded
// or csv"; "json|folded|csv").
std::string ExporterNames(std::string_view separator, std::string_view last);

// Runs `exporter` on `profile`, counting the bytes for options.progress (then
// finished) and failing with kIo when `out` fails.
cct::Status WriteExport(const query::Profile& profile, const ExporterInfo& exporter, const ExportOptions& options,
                        std::ostream& out);

}  // namespace exporters
