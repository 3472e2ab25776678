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

class Progress;

// json: our tree; folded: stacks; hatchet: Hatchet's literal format;
// hatchet-json: Hatchet's GraphFrame.to_json (graph + dataframe); pprof:
// gzipped profile.proto; csv: one row per node.
enum class ExportFormat { kJson, kFolded, kHatchet, kHatchetJson, kPprof, kCsv };
cct::Result<ExportFormat> ParseExportFormat(const std::string& s);

struct ExportOptions {
  std::vector<std::string> metrics;  // json/hatchet/pprof/csv: empty = all; folded: the first (default: run's first)
  Progress* progress = nullptr;      // optional; exporters report nodes done
};
cct::Status WriteExport(Profile& profile, ExportFormat format, const ExportOptions& options, std::ostream& out);

// The exports behind WriteExport (export_pprof.cc, export_hatchet_json.cc,
// export_csv.cc). `progress` may be null.
cct::Status WritePprof(const Profile& profile, const std::vector<std::string>& metrics, std::ostream& out,
                       Progress* progress);
cct::Status WriteHatchetGraphFrame(const cct::Tree& tree, const std::vector<std::string>& metrics, std::ostream& out,
                                   Progress* progress);
cct::Status WriteNodeCsv(const cct::Tree& tree, const std::vector<std::string>& metrics, std::ostream& out,
                         Progress* progress);

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
// An HPCToolkit database directory (experiment.xml + *.metric-db): one run;
// each metric-db file (rank, thread) becomes a thread node; metrics keep
// HPCToolkit's names without the " (I)"/" (E)" suffix. --metric/--unit
// convert one metric's numbers (e.g. "CPUTIME (usec)" with unit us).
cct::Result<ImportResult> ImportHpctoolkit(const std::string& dir, const ImportOptions& options);

// Nsight Compute: attaches the per-launch metrics of an `ncu --csv --page raw`
// export (also the long `--page details` layout) to the kernel nodes of a
// run's tree, matched by normalized kernel name, NVTX context and launch
// order (import_ncu.cc describes the rule). Each ncu metric M becomes an
// additive accumulator "M:acc" plus a derived per-launch average "M" =
// M:acc / ncu:count; attaching again replaces the previous values.
struct NcuAttachOptions {
  std::string metric_regex;  // ncu metrics to attach (empty: every numeric one but device__attribute_*)
};
struct NcuAttachResult {
  size_t launches = 0;                 // rows (kernel launches) in the file
  size_t matched = 0;                  // rows attached to a kernel node
  size_t kernel_nodes = 0;             // kernel nodes that received metrics
  std::vector<std::string> unmatched;  // kernel names (as ncu wrote them) with no node, each once
  std::vector<std::string> metrics;    // ncu metric names attached
};
cct::Result<NcuAttachResult> AttachNcuMetrics(const std::string& csv_path, cct::Tree& tree,
                                              const NcuAttachOptions& options);

// Resolves --unit for a metric: the catalog's unit for known names, else the
// given unit (default: count). `scale` converts input numbers to stored ones.
cct::Status ResolveImportUnit(const std::string& metric, const std::optional<std::string>& unit, cct::Unit& out,
                              double& scale);

// Reads a whole file (kIo / kNotFound on failure).
cct::Result<std::string> ReadFile(const std::string& path);

}  // namespace query
