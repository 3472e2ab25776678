#include "aggregate/job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "aggregate/reduce.h"
#include "cct/tree_ops.h"
#include "query/aggregate.h"
#include "query/profile.h"
#include "store/database.h"
#include "store/selector.h"

namespace aggregate {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

struct Input {
  std::string db_path;
  store::RunMeta run;
  std::string label;  // "run 7 'name'"
};

std::string CanonicalPath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

// A unit: one rank (its runs, several when the selection holds a rank's
// child processes too: job:ID/all), or one run.
struct UnitRuns {
  std::string label;
  std::vector<size_t> inputs;
};

// The units of the inputs: when every run has a launcher rank, one per rank
// in rank order, its runs merged (as query::ProfileUnits forms a job's
// ranks); else one per run, in selection order.
std::vector<UnitRuns> FormUnits(const std::vector<Input>& inputs) {
  std::vector<UnitRuns> units;
  const bool ranks = std::all_of(inputs.begin(), inputs.end(),
                                 [](const Input& i) { return i.run.launcher && i.run.launcher->rank >= 0; });
  if (!ranks) {
    for (size_t i = 0; i < inputs.size(); ++i) units.push_back(UnitRuns{inputs[i].label, {i}});
    return units;
  }
  std::map<int64_t, std::vector<size_t>> by_rank;
  for (size_t i = 0; i < inputs.size(); ++i) by_rank[inputs[i].run.launcher->rank].push_back(i);
  for (const auto& rank_runs : by_rank)
    units.push_back(UnitRuns{"rank " + std::to_string(rank_runs.first), rank_runs.second});
  return units;
}

// One unit's tree as the reports show it: source lines and threads folded,
// its runs merged.
cct::Result<cct::Tree> ReadUnit(std::map<std::string, std::unique_ptr<store::Database>>& dbs,
                                const std::vector<Input>& inputs, const UnitRuns& unit) {
  cct::Tree out;
  for (size_t k = 0; k < unit.inputs.size(); ++k) {
    const Input& in = inputs[unit.inputs[k]];
    auto read = dbs.at(in.db_path)->ReadTree(in.run.id);
    if (!read.ok()) return read.status().WithContext(query::RunLabel(in.run));
    cct::Tree t = std::move(*read);
    if (cct::HasKind(t, cct::FrameKind::kLine)) t = cct::FoldKind(t, cct::FrameKind::kLine);
    if (cct::HasKind(t, cct::FrameKind::kThread)) t = cct::FoldKind(t, cct::FrameKind::kThread);
    if (unit.inputs.size() == 1) return t;
    CCT_RETURN_IF_ERROR(cct::MergeInto(out, t, 1.0).WithContext(query::RunLabel(in.run)));
  }
  return out;
}

// Combines partials[0..n) pairwise, in unit order, each level's pairs on
// their own threads; the result is partials[0].
cct::Status CombinePairwise(std::vector<Partial>& partials) {
  for (size_t step = 1; step < partials.size(); step *= 2) {
    std::vector<std::thread> threads;
    std::vector<cct::Status> status(partials.size());
    for (size_t i = 0; i + step < partials.size(); i += 2 * step)
      threads.emplace_back([&partials, &status, i, step] { status[i] = partials[i].Combine(partials[i + step]); });
    for (std::thread& t : threads) t.join();
    for (const cct::Status& s : status) CCT_RETURN_IF_ERROR(s);
  }
  return cct::Status::Ok();
}

// Units [begin, end) reduced by `threads` threads into one partial.
cct::Result<Partial> ReduceShare(const std::vector<Input>& inputs, const std::vector<UnitRuns>& units, size_t begin,
                                 size_t end, unsigned threads,
                                 std::map<std::string, std::unique_ptr<store::Database>>& dbs) {
  const size_t n = end - begin;
  const size_t t = std::max<size_t>(1, std::min<size_t>(threads, n));
  std::vector<Partial> partials;
  for (size_t k = 0; k < t; ++k) partials.emplace_back(begin + k * n / t);
  std::vector<cct::Status> status(t);
  auto work = [&](size_t k) {
    const size_t from = begin + k * n / t, to = begin + (k + 1) * n / t;
    for (size_t u = from; u < to; ++u) {
      auto tree = ReadUnit(dbs, inputs, units[u]);
      if (!tree.ok()) {
        status[k] = tree.status().WithContext(units[u].label);
        return;
      }
      status[k] = partials[k].AddUnit(*tree).WithContext(units[u].label);
      if (!status[k].ok()) return;
    }
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < t; ++k) pool.emplace_back(work, k);
  work(0);
  for (std::thread& th : pool) th.join();
  for (const cct::Status& s : status) CCT_RETURN_IF_ERROR(s);
  CCT_RETURN_IF_ERROR(CombinePairwise(partials));
  return std::move(partials[0]);
}

// The node with the largest exclusive imbalance of the main metric: the
// summary's headline.
std::string TopImbalance(const cct::Tree& agg, const std::vector<std::string>& labels) {
  const cct::MetricRegistry& reg = agg.metrics();
  cct::MetricId base = cct::kNoMetric;
  for (const char* preferred : {"cputime", "realtime", "gpuop"})
    if (base == cct::kNoMetric && reg.Find(preferred) != cct::kNoMetric &&
        reg.Get(reg.Find(preferred)).kind == cct::MetricKind::kAdditive)
      base = reg.Find(preferred);
  for (cct::MetricId m = 0; m < reg.size() && base == cct::kNoMetric; ++m)
    if (reg.Get(m).kind == cct::MetricKind::kAdditive) base = m;
  if (base == cct::kNoMetric) return "no additive metric";
  const std::string name = reg.Get(base).name;
  const cct::MetricId imb = reg.Find(name + "@imbalance"), at = reg.Find(name + "@argmax");
  cct::NodeValues values(agg);
  const std::vector<double>& sum = values.Exclusive(base);
  const std::vector<double>& ratio = values.Exclusive(imb);
  const std::vector<double>& where = values.Exclusive(at);
  // Nodes holding at least 1 % of the largest node's own time: a few
  // samples' worth of noise elsewhere would show large ratios.
  double largest = 0;
  for (cct::NodeId n = 1; n < agg.size(); ++n) largest = std::max(largest, std::fabs(sum[n]));
  cct::NodeId best = cct::kNoNode;
  for (cct::NodeId n = 1; n < agg.size(); ++n)
    if (std::fabs(sum[n]) >= 0.01 * largest && ratio[n] > 0 && (best == cct::kNoNode || ratio[n] > ratio[best]))
      best = n;
  if (best == cct::kNoNode) return "no " + name + " to compare";
  const auto unit = static_cast<size_t>(where[best]);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", ratio[best]);
  return "top " + name + " imbalance (max/mean, exclusive) " + buf + " in '" + std::string(agg.name(best)) +
         "', max on " + (unit < labels.size() ? labels[unit] : "unit " + std::to_string(unit));
}

std::string DescribeUnits(const std::vector<UnitRuns>& units, size_t runs) {
  const bool ranks = !units.empty() && units.front().label.rfind("rank ", 0) == 0;
  std::string s = std::to_string(units.size()) + (ranks ? (units.size() == 1 ? " rank" : " ranks")
                                                        : (units.size() == 1 ? " run" : " runs"));
  if (ranks && runs != units.size()) s += " (" + std::to_string(runs) + " runs)";
  return s;
}

}  // namespace

cct::Result<AggregateResult> AggregateRuns(const AggregateRequest& request, Transport& transport,
                                           bool* own_failure) {
  const Clock::time_point start = Clock::now();
  if (request.selectors.empty()) return cct::InvalidArgument("no RUN selector: name the runs to aggregate (job:ID, tag:K=V, IDs)");
  // Every rank selects the same inputs in the same order.
  std::map<std::string, std::unique_ptr<store::Database>> dbs;
  std::vector<Input> inputs;
  for (const std::string& text : request.selectors) {
    CCT_ASSIGN_OR_RETURN(const store::RunSelector sel, store::ParseSelector(text, request.default_db));
    if (sel.selects_part())
      return cct::InvalidArgument("'" + text + "': cct-aggregate reads whole runs (no @iter=, @t= or @range=)");
    if (!dbs.count(sel.db_path)) {
      CCT_ASSIGN_OR_RETURN(dbs[sel.db_path], store::Database::Open(sel.db_path, store::Database::Mode::kRead));
    }
    CCT_ASSIGN_OR_RETURN(const std::vector<store::RunMeta> runs, store::SelectRuns(*dbs[sel.db_path], sel));
    for (const store::RunMeta& run : runs) {
      Input in{sel.db_path, run, ""};
      in.label = query::RunLabel(run);
      inputs.push_back(std::move(in));
    }
  }
  const std::string out_db = request.out_db.empty() ? request.default_db : request.out_db;
  if (!request.out_db.empty())
    for (const auto& db : dbs)
      if (CanonicalPath(db.first) == CanonicalPath(out_db))
        return cct::InvalidArgument("-o " + out_db +
                                    " is an input database; write the aggregate into it with -d alone, or name "
                                    "another file");

  // This rank's share, reduced with threads; then the ranks' binary tree.
  const Clock::time_point reduce_start = Clock::now();
  const std::vector<UnitRuns> units = FormUnits(inputs);
  const size_t n = units.size();
  const int ranks = transport.size(), me = transport.rank();
  const size_t begin = static_cast<size_t>(me) * n / ranks, end = static_cast<size_t>(me + 1) * n / ranks;
  const unsigned threads = request.threads ? request.threads : std::max(1u, std::thread::hardware_concurrency());
  cct::Result<Partial> mine = Partial(begin);
  if (begin < end) mine = ReduceShare(inputs, units, begin, end, threads, dbs);
  if (!transport.AllOk(mine.ok())) {
    if (!mine.ok()) {
      if (own_failure) *own_failure = true;
      return mine.status();
    }
    return cct::Status(cct::ErrorCode::kInternal, "another rank failed (its error is on its own output)");
  }
  Partial acc = std::move(*mine);
  for (int step = 1; step < ranks; step *= 2) {
    if (me % (2 * step) == step) {
      CCT_RETURN_IF_ERROR(transport.Send(me - step, acc.Serialize()));
      break;
    }
    if (me % (2 * step) == 0 && me + step < ranks) {
      CCT_ASSIGN_OR_RETURN(const std::string bytes, transport.Recv(me + step));
      CCT_ASSIGN_OR_RETURN(const Partial next, Partial::Deserialize(bytes));
      CCT_RETURN_IF_ERROR(acc.Combine(next));
    }
  }
  AggregateResult result;
  result.units = n;
  result.read_reduce_s = Seconds(reduce_start);
  if (me != 0) {
    result.total_s = Seconds(start);
    return result;
  }
  if (acc.units() != n)
    return cct::Status(cct::ErrorCode::kInternal, "the reduction covered " + std::to_string(acc.units()) + " of " +
                                                      std::to_string(n) + " units");
  CCT_ASSIGN_OR_RETURN(cct::Tree tree, acc.Finish());
  result.nodes = tree.size();

  std::vector<std::string> labels;
  for (const UnitRuns& u : units) labels.push_back(u.label);
  store::RunMeta meta;
  std::string sels;
  for (const std::string& s : request.selectors) sels += (sels.empty() ? "" : " ") + s;
  meta.name = request.name.empty() ? "aggregate of " + sels : request.name;
  meta.source = "aggregate";
  meta.state = store::RunState::kComplete;
  meta.tags = request.tags;
  meta.host = store::HostName();
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const Input& in : inputs) {
    first = std::min(first, in.run.start_time_ns);
    last = std::max(last, in.run.start_time_ns + in.run.duration_ns);
  }
  meta.start_time_ns = first;
  meta.duration_ns = last - first;
  nlohmann::json sources = nlohmann::json::array();
  for (const Input& in : inputs) {
    nlohmann::json s = {{"db", in.db_path}, {"run", in.run.id}};
    if (in.run.extra->contains("run_key")) s["run_key"] = (*in.run.extra)["run_key"];
    sources.push_back(std::move(s));
  }
  (*meta.extra)[std::string(query::kAggregateUnitsKey)] = {{"units", labels}, {"inputs", std::move(sources)},
                                                           {"selectors", request.selectors}};
  const std::string headline = TopImbalance(tree, labels);
  if (!request.dry_run) {
    CCT_ASSIGN_OR_RETURN(auto out, store::Database::Open(out_db, store::Database::Mode::kWrite));
    CCT_RETURN_IF_ERROR(out->CreateRun(meta, &tree));
    result.id = meta.id;
  }
  result.total_s = Seconds(start);
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", result.total_s);
  result.summary = (request.dry_run ? std::string("would store") : "run " + std::to_string(result.id)) + " '" +
                   meta.name + "'" + (request.dry_run ? "" : " in " + out_db) + ": aggregate of " +
                   DescribeUnits(units, inputs.size()) + " (" + transport.Describe() + ", " + std::to_string(threads) +
                   " thread" + (threads == 1 ? "" : "s") + " each), " + std::to_string(result.nodes) +
                   " nodes, in " + secs + " s; " + headline + "\n";
  return result;
}

}  // namespace aggregate
