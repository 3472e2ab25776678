// Exchange formats: exporting a profile to formats other tools read, and
// importing theirs as runs.
//
// Exports stream to an std::ostream as they walk the tree. Importers return
// a Tree (the store writes it); a malformed input yields kBadInput naming the
// file and line. Pure functions of their inputs.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "query/profile.h"

namespace query {

enum class ExportFormat { kJson, kFolded, kHatchet };
cct::Result<ExportFormat> ParseExportFormat(const std::string& s);

struct ExportOptions {
  std::vector<std::string> metrics;  // json/hatchet: empty = all; folded: the first (default: run's first)
};
cct::Status WriteExport(Profile& profile, ExportFormat format, const ExportOptions& options, std::ostream& out);

struct ImportOptions {
  std::string metric;              // folded: the metric the numbers are (default "samples")
  std::optional<std::string> unit;  // ns|us|ms|s|bytes|count|percent|1; time units are stored as ns
  bool skip_bad_lines = false;
};

struct ImportResult {
  cct::Tree tree;
  size_t records = 0;  // lines (folded) or nodes (hatchet) read
  size_t skipped = 0;  // malformed records skipped (--skip-bad-lines)
  std::string first_skip;  // where the first skipped record was, for the report
};

cct::Result<ImportResult> ImportFolded(const std::string& path, const ImportOptions& options);
cct::Result<ImportResult> ImportHatchet(const std::string& path, const ImportOptions& options);

// Resolves --unit for a metric: the catalog's unit for known names, else the
// given unit (default: count). `scale` converts input numbers to stored ones.
cct::Status ResolveImportUnit(const std::string& metric, const std::optional<std::string>& unit, cct::Unit& out,
                              double& scale);

// Reads a whole file (kIo / kNotFound on failure).
cct::Result<std::string> ReadFile(const std::string& path);

}  // namespace query
