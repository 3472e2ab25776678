// `cct-query derive SRC [OPERATIONS] --name NEW`: a new run made from SRC's
// profile by the operations of query/derive.h, in command-line order,
// stored in the database with a record of how it was made. The one command
// of the registry that writes (ReportInfo::writes_database).
#include <time.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cct/tree_ops.h"
#include "cctdb_config.h"
#include "query/derive.h"
#include "reports/registry.h"
#include "store/selector.h"

namespace reports {

using cct::Result;
using cct::Status;

namespace {

int64_t DeriveNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A name that a RUN selector reads as something else (an id, latest~2, a
// path, a group, an iteration) could never select the new run.
Status CheckRunName(const std::string& name, const std::string& db_path) {
  if (name.empty()) return cct::InvalidArgument("--name must not be empty");
  auto sel = store::ParseSelector(name, db_path);
  if (!sel.ok() || sel->kind != store::RunSelector::Kind::kName || sel->name != name || sel->iteration ||
      sel->all_processes || sel->db_path != db_path)
    return cct::InvalidArgument("--name '" + name + "' reads as a RUN selector, so it could not select the new run; "
                                "choose another name");
  return Status::Ok();
}

// How many iterations the profile's values are: those the selector chose
// (RUN@iter=K..J), else the runs' stored count, which must agree (a group's
// mean is per run). 0 with `why` when there are none.
Result<size_t> SourceIterations(const query::Profile& profile, std::string& why) {
  if (profile.selector.window) {
    why = "a time window (@t=, @range=) holds no whole iterations";
    return size_t{0};
  }
  if (profile.selector.iteration) {
    const store::IterationSpec& it = *profile.selector.iteration;
    return it.median ? size_t{1} : size_t{it.last - it.first + 1};
  }
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(profile.db_path, store::Database::Mode::kRead));
  std::set<size_t> counts;
  for (const store::RunMeta& run : profile.runs) {
    CCT_ASSIGN_OR_RETURN(std::optional<store::RunIterations> its, db->ReadIterations(run.id));
    if (its && !its->iterations.empty()) counts.insert(its->iterations.size());
  }
  if (counts.empty()) {
    why = profile.label + " has no iterations (record with --iteration REGEX)";
    return size_t{0};
  }
  if (counts.size() > 1) {
    std::string list;
    for (size_t c : counts) list += (list.empty() ? "" : ", ") + std::to_string(c);
    why = profile.label + ": its runs have different iteration counts (" + list + ")";
    return size_t{0};
  }
  return *counts.begin();
}

// The new run's metadata: a single source run's facts (the program, the
// machine, the outcome) stay; for several runs, those on which they all
// agree. What ties a run to its recording (process, invocation, session,
// iterations) and its tags do not carry over: the derived run must not join
// the source's invocation or tag groups.
store::RunMeta DerivedMeta(const query::Profile& profile) {
  const std::vector<store::RunMeta>& runs = profile.runs;
  store::RunMeta m = runs.front();
  auto agree = [&](auto field) {
    for (const store::RunMeta& r : runs)
      if (!(r.*field == m.*field)) {
        m.*field = {};
        return;
      }
  };
  if (runs.size() > 1) {
    agree(&store::RunMeta::command);
    agree(&store::RunMeta::cwd);
    agree(&store::RunMeta::host);
    agree(&store::RunMeta::cpu_model);
    agree(&store::RunMeta::gpu_model);
    agree(&store::RunMeta::driver_version);
    agree(&store::RunMeta::cuda_version);
    agree(&store::RunMeta::collector_version);
    agree(&store::RunMeta::git_commit);
    agree(&store::RunMeta::env);
    agree(&store::RunMeta::user);
    agree(&store::RunMeta::executable);
    agree(&store::RunMeta::executable_build_id);
    agree(&store::RunMeta::compiler);
    agree(&store::RunMeta::kernel);
    agree(&store::RunMeta::os);
    agree(&store::RunMeta::glibc);
    agree(&store::RunMeta::modules);
    agree(&store::RunMeta::exit_code);
    agree(&store::RunMeta::term_signal);
    for (const store::RunMeta& r : runs)
      if (*r.sampling != *m.sampling) *m.sampling = nlohmann::json::object();
    m.start_time_ns = DeriveNowNs();
    m.duration_ns = 0;
    m.diagnostics.clear();
    m.launcher.reset();
    m.process_cpu_ns = 0;
    *m.extra = nlohmann::json::object();
  }
  m.id = 0;
  m.state = store::RunState::kComplete;
  m.source = "derive";
  m.tags.clear();
  m.pid = 0;
  m.pid_start_ticks = 0;
  m.parent_run = 0;
  m.root_run = 0;
  m.iteration_regex.clear();
  m.node_count = 0;
  m.checkpoints = 0;
  m.updated_ns = 0;
  for (const char* key : {"session", "run_key", "exec", "derived_from"}) m.extra->erase(key);
  return m;
}

}  // namespace

Status DeriveCommand(const ReportRequest& request, std::ostream& out) {
  // Everything that can be checked without the database first.
  if (!request.name) return cct::InvalidArgument("derive needs --name NEW, the new run's name");
  const std::string& name = *request.name;
  CCT_RETURN_IF_ERROR(CheckRunName(name, request.db_path));
  if (request.options.metrics.size() > 1)
    return cct::InvalidArgument("derive takes one -m (the metric of --keep-min and @iter=median)");
  OutputFormat format = OutputFormat::kText;
  if (request.format) {
    CCT_ASSIGN_OR_RETURN(format, ParseOutputFormat(*request.format));
    if (format == OutputFormat::kCsv) return cct::InvalidArgument("derive prints text or json, not csv");
  }
  const std::string metric = request.options.metrics.empty() ? "" : request.options.metrics.front();
  std::vector<query::DeriveOp> ops;
  for (const auto& [option, value] : request.operations) {
    CCT_ASSIGN_OR_RETURN(query::DeriveOp op, query::ParseDeriveOp(option, value, metric));
    ops.push_back(std::move(op));
  }

  // The source with its source lines and threads: the operations decide.
  query::LoadOptions load;
  load.keep_lines = true;
  load.median_metric = metric;
  CCT_ASSIGN_OR_RETURN(query::Profile profile, query::LoadProfile(request.args.at(0), request.db_path, load));
  // An iteration's profile is the run's whole tree, zero where the
  // iteration did not go (reports hide those nodes); the run keeps only
  // where it went. Those nodes hold nothing, so folding them moves nothing.
  if (profile.selector.selects_part()) {
    std::vector<char> fold = cct::NodesWithValues(profile.tree);
    for (char& f : fold) f = !f;
    profile.tree = cct::FoldNodes(profile.tree, fold);
  }
  query::DeriveSource source;
  source.threads = query::ThreadNodes(profile.tree).size();
  for (const query::DeriveOp& op : ops) {
    if (op.kind != query::DeriveOpKind::kNormalize || op.by != query::NormalizeBy::kPerIteration) continue;
    std::string why;
    CCT_ASSIGN_OR_RETURN(source.iterations, SourceIterations(profile, why));
    if (source.iterations == 0) return cct::InvalidArgument("--normalize per-iteration: " + why);
    break;
  }
  CCT_ASSIGN_OR_RETURN(query::DeriveResult derived, query::ApplyDerive(profile.tree, ops, source));

  store::RunMeta meta = DerivedMeta(profile);
  meta.name = name;
  meta.tags = request.tags;
  nlohmann::json from = {{"format", 1},
                         {"selector", profile.selector.text},
                         {"label", profile.label},
                         {"runs", nlohmann::json::array()},
                         {"operations", derived.operations},
                         {"source_nodes", profile.tree.size()},
                         {"created_ns", DeriveNowNs()},
                         {"version", CCTDB_VERSION}};
  for (const store::RunMeta& r : profile.runs) from["runs"].push_back(r.id);
  if (profile.db_path != request.db_path) from["database"] = profile.db_path;
  meta.extra["derived_from"] = std::move(from);

  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(request.db_path, store::Database::Mode::kWrite));
  CCT_ASSIGN_OR_RETURN(std::vector<store::RunMeta> all, db->ListRuns());
  std::vector<const store::RunMeta*> named;
  for (const store::RunMeta& r : all)
    if (r.name == name) named.push_back(&r);
  bool replaced = false;
  if (!named.empty()) {
    const store::RunMeta& old = *named.back();
    if (!request.replace)
      return cct::InvalidArgument("a run named '" + name + "' exists already (" + query::RunLabel(old) +
                                  "); choose another --name, or --replace a derived one");
    if (named.size() > 1)
      return cct::InvalidArgument("--replace: " + std::to_string(named.size()) + " runs are named '" + name +
                                  "'; it replaces one derived run only");
    if (old.source != "derive")
      return cct::InvalidArgument("--replace: " + query::RunLabel(old) + " was not derived (source " + old.source +
                                  "); it replaces derived runs only");
    meta.id = old.id;
    // No iterations and no trace: the derived tree has other nodes than the
    // source's (dropped, folded, merged), which their node ids would miss.
    CCT_RETURN_IF_ERROR(db->UpdateRun(meta, &derived.tree));
    replaced = true;
  } else {
    CCT_RETURN_IF_ERROR(db->CreateRun(meta, &derived.tree));
  }

  if (format == OutputFormat::kJson) {
    nlohmann::json doc = {{"id", meta.id},
                          {"name", meta.name},
                          {"replaced", replaced},
                          {"source", profile.label},
                          {"nodes", derived.tree.size()},
                          {"source_nodes", profile.tree.size()},
                          {"operations", derived.operations}};
    out << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return Status::Ok();
  }
  out << (replaced ? "replaced " : "derived ") << query::RunLabel(meta) << " from " << profile.label << ": "
      << derived.tree.size() << " nodes (from " << profile.tree.size() << ")\n";
  for (size_t i = 0; i < derived.operations.size(); ++i) {
    const std::string effect = query::DescribeEffect(derived.operations[i]);
    out << "  " << i + 1 << ". " << query::DescribeOperation(derived.operations[i])
        << (effect.empty() ? "" : ": " + effect) << '\n';
  }
  return Status::Ok();
}

}  // namespace reports
