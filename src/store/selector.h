// RUN selectors: how users name runs on every command line.
//
//   ID            a run id                    3
//   latest        the newest invocation       latest, latest~2 (two before it)
//   NAME          the newest invocation with a name   baseline
//   SEL/all       every process of SEL's invocation   job/all, latest/all, 7/all
//   tag:K=V       every run with that tag     tag:commit=abc123 (a group)
//   job:ID        the ranks of a parallel job (a group)   job:1234, job:1234.0
//   job:ID/r=N    rank N of the job           job:1234/r=3
//   job:ID/all    every process of every rank of the job
//   latest-job    the newest job (also latest-job/r=N, latest-job/all)
//   PATH:SEL      SEL in another database     old.db:latest, ../a.db:tag:k=v
//   SEL@iter=K    one iteration of a run      latest@iter=3, 5@iter=2..4, 5@iter=median
//   SEL@t=A..B    a time window of the trace  5@t=0.3..0.5, 5@t=1500ms.., 5@t=..250us
//   SEL@range=N#K the K-th instance of NVTX range N in the trace   5@range=step#3
//
// @t= and @range= need a trace (cct-record --trace): times are from the
// trace's first event, in s (the default), ms, us or ns; the window is
// [A, B), either end open. At most one of @iter=, @t= and @range=.
//
// An invocation is one process cct-record started (its root) and every
// process started below it, each with its own run. `latest` and NAME mean an
// invocation's root run — in the image the root process last exec'd, when it
// exec'd — not the newest child; a NAME only children carry selects the
// newest such child. SEL/all (SEL an ID, latest, latest~N or NAME) selects
// every run of the invocation SEL's run belongs to: reports total them.
//
// A job is one launch of a parallel program (store/run_meta.h
// LauncherRank): its ranks are the invocations whose root run names the job,
// one per rank (the newest when a rank has several, --repeat), ordered by
// rank. job:ID matches the job id with its step (1234.0) or without it
// (1234: the newest step of that job). job:ID/r=N/all is every process of
// rank N's invocation.
//
// PATH is recognised when the text before the first ':' names an existing
// file or ends in ".db". Parsing is pure; SelectRuns reads run metadata.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "store/database.h"

namespace store {

struct IterationSpec {
  uint32_t first = 0;  // 1-based, inclusive
  uint32_t last = 0;
  bool median = false;  // the run's median iteration (by the chosen metric)
};

// A time window of a run's trace: [from, to) relative to its first event,
// or the span of one NVTX range instance.
struct TimeWindowSpec {
  std::optional<int64_t> from_ns, to_ns;  // relative to the trace's start; nullopt: open
  std::string range;                      // @range=: the range's name (then from/to are unset)
  uint32_t instance = 0;                  // @range=: 1-based, in start order
  bool is_range() const { return !range.empty(); }
};

// "2.0s", "1500ms", "250us", "10ns", "0.3" (seconds) as ns; nullopt when
// malformed, negative or out of range.
std::optional<int64_t> ParseDuration(std::string_view text);

struct RunSelector {
  enum class Kind { kId, kLatest, kName, kTag, kJob };
  std::string text;     // as the user wrote it
  std::string db_path;  // the database it refers to
  Kind kind = Kind::kLatest;
  RunId id = 0;
  uint32_t back = 0;  // latest~back
  std::string name, tag_key, tag_value;
  std::string job;              // job:ID's ID; "" for latest-job
  std::optional<int64_t> rank;  // job:ID/r=N
  std::optional<IterationSpec> iteration;
  std::optional<TimeWindowSpec> window;  // @t= or @range=
  bool all_processes = false;  // SEL/all: every run of the invocation

  // Values of part of a run (@iter=, @t=, @range=) on its whole tree: the
  // nodes the part did not touch hold zeros (reports hide them).
  bool selects_part() const { return iteration.has_value() || window.has_value(); }
  // A group: a tag's repeated runs, or a job's ranks (job:ID without /r=N),
  // averaged by reports.
  bool is_group() const { return kind == Kind::kTag || (kind == Kind::kJob && !rank && !all_processes); }
  // job:ID, latest-job and their /r=N, /all forms.
  bool is_job() const { return kind == Kind::kJob; }
  // SEL/all: the processes of one invocation, totalled by reports.
  bool is_invocation() const { return all_processes; }
};

cct::Result<RunSelector> ParseSelector(std::string_view text, const std::string& default_db);

// The runs a selector names, oldest first; kNotFound (with the runs that are
// there, in one line) when it names none.
cct::Result<std::vector<RunMeta>> SelectRuns(Database& db, const RunSelector& selector);

// The root run of `run`'s invocation among `runs` (all of a database's runs,
// in id order): its root_run when that run is there, else the end of its
// parent_run chain (runs written before format version 2; a parent missing
// from `runs`, deleted, ends the chain at its child). A root gives itself.
RunId InvocationRoot(const RunMeta& run, const std::vector<RunMeta>& runs);
// The same, reading only what it needs from `db`: a run that names its root
// (format 3) or has no parent costs at most one more record; a version 1
// chain, one record per step up.
cct::Result<RunId> InvocationRoot(Database& db, const RunMeta& run);

// "3 'name' (complete), 4 (crashed), ..." for error messages; the newest `max`.
std::string DescribeRuns(const std::vector<RunMeta>& runs, size_t max = 12);

}  // namespace store
