// Exporters: a profile in formats other tools read. One file per format
// (json.cc, folded.cc, hatchet.cc, hatchet_json.cc, pprof.cc, csv.cc,
// speedscope.cc, perfetto.cc);
// exporters/registry.h lists them for cct-query export and other front ends.
//
// Exports stream to an std::ostream as they walk the tree and return a
// Status (kInvalidArgument for an unknown or unsuitable metric). Pure
// functions of their inputs: safe to call from several threads on different
// profiles (a Progress, when given, is the caller's and not shared).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "query/profile.h"
#include "store/trace.h"

namespace output {
class Progress;
}  // namespace output

namespace exporters {

struct ExportOptions {
  std::vector<std::string> metrics;  // json/hatchet/pprof/csv: empty = all; folded: the first (default: run's first)
  output::Progress* progress = nullptr;  // optional; exporters report nodes done
  bool per_thread = false;  // hatchet-json: rows per (node, thread) with rank/thread index levels
  bool lines = false;         // folded: keep source-line nodes as frames ("file.cc:56")
  bool unit_comment = false;  // folded: a first line "# metric=NAME unit=UNIT"
};

// One run of a table export (csv, json-rows): the rows' `run` and
// `run_name` cells and the tree. Borrows the tree.
struct TableRun {
  std::optional<uint64_t> run;  // the run's id; none for an aggregate (a group's mean, an invocation's total)
  std::string run_name;  // the run's name, or the aggregate's label
  const cct::Tree* tree = nullptr;
};

// The runs a table export writes for `profile`: the profile itself, or with
// `per_run` each run of a group or invocation (the profile was loaded with
// LoadOptions::keep_run_trees).
std::vector<TableRun> TableRuns(const query::Profile& profile, bool per_run);

// The formats' entry points, as the registry calls them.
cct::Status ExportJson(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
cct::Status ExportFolded(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
cct::Status ExportHatchet(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
cct::Status ExportHatchetJson(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
cct::Status ExportPprof(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
cct::Status ExportCsv(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
cct::Status ExportJsonRows(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
// The table formats for several runs in one file, a row per (run, node).
cct::Status ExportCsvRuns(const std::vector<TableRun>& runs, const ExportOptions& options, std::ostream& out);
cct::Status ExportJsonRowsRuns(const std::vector<TableRun>& runs, const ExportOptions& options, std::ostream& out);
cct::Status ExportSpeedscope(const query::Profile& profile, const ExportOptions& options, std::ostream& out);
// One run's trace (kInvalidArgument naming the run when it has none, or for
// a group, an invocation or an iteration).
cct::Status ExportPerfetto(const query::Profile& profile, const ExportOptions& options, std::ostream& out);

// The writers behind some of them (pprof.cc, hatchet_json.cc, csv.cc).
// `progress` may be null.
cct::Status WritePprof(const query::Profile& profile, const std::vector<std::string>& metrics, std::ostream& out,
                       output::Progress* progress);
// WriteHatchetGraphFrame: by default one row per node (threads summed), so
// that GraphFrame.from_json(...).tree() works as loaded; `per_thread` keeps
// rank/thread index levels with a row for every (node, thread) pair.
cct::Status WriteHatchetGraphFrame(const cct::Tree& tree, const std::vector<std::string>& metrics, bool per_thread,
                                   std::ostream& out, output::Progress* progress);

// A run's trace as a Perfetto protobuf trace (perfetto.cc says what goes
// where). `tree` is the run's tree as Database::ReadTree returns it, whose
// node ids the trace uses; `run` names the process.
cct::Status WritePerfetto(const cct::Tree& tree, const store::RunTrace& trace, const store::RunMeta& run,
                          std::ostream& out);

// The metrics to export: the named ones, or all (additive ones only with
// `additive_only`); kNotFound when the run has none.
cct::Result<std::vector<cct::MetricId>> ExportMetrics(const cct::Tree& tree, const std::vector<std::string>& names,
                                                      bool additive_only);

}  // namespace exporters
