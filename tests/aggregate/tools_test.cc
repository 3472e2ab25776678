// cct-aggregate and cct-merge through the tools: runs built with known
// values (rank r spends (r+1) x 100 ms in compute, every rank 50 ms in
// setup), the stored statistics against `tree -m METRIC@AGG` computed from
// the inputs, merges compared run by run, and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "store/database.h"
#include "tests/interop_util.h"

using cct::FrameKind;

namespace {

constexpr double kAggMs = 1e6;  // ns

// Rank r's run: main 5 ms, main/setup 50 ms, main/compute (r+1)*100 ms;
// rank 1 also main/io 5 ms (the others lack it: its imbalance is 4, but it
// holds under 1 % of compute's time, so the summary's headline is
// compute's). Tagged job=J.
store::RunId AggStoreRank(const std::string& db_path, int rank, int size, const std::string& job,
                          const std::string& key = "") {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  auto put = [&](std::vector<std::string> names, double ms) {
    std::vector<std::pair<FrameKind, std::string>> frames;
    for (const std::string& n : names) frames.emplace_back(FrameKind::kFunction, n);
    t.AddValue(interop::AddPath(t, frames), cpu, ms * kAggMs);
  };
  put({"main"}, 5);
  put({"main", "setup"}, 50);
  put({"main", "compute"}, (rank + 1) * 100.0);
  if (rank == 1) put({"main", "io"}, 5);
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  store::RunMeta m;
  m.name = "app";
  m.state = store::RunState::kComplete;
  m.source = "test";
  m.tags = {{"job", job}};
  m.launcher = store::LauncherRank{};
  m.launcher->rank = rank;
  m.launcher->size = size;
  m.launcher->local_rank = rank;
  m.launcher->source = "OMPI_COMM_WORLD_RANK";
  if (!key.empty()) (*m.extra)["run_key"] = key;
  REQUIRE((*db)->CreateRun(m, &t).ok());
  return m.id;
}

testutil::RunResult AggTool(const std::string& tool, std::vector<std::string> args) {
  std::vector<std::string> argv{testutil::Tool(tool)};
  argv.insert(argv.end(), args.begin(), args.end());
  return testutil::Run(argv);
}

// Each node of a tree JSON report by its '/'-joined path.
void AggWalk(const nlohmann::json& node, const std::string& path,
             std::map<std::string, nlohmann::json>& out) {
  out[path] = node;
  if (!node.contains("children")) return;
  for (const auto& c : node["children"]) AggWalk(c, path + "/" + c["name"].get<std::string>(), out);
}

std::map<std::string, nlohmann::json> AggTreeJson(const std::string& db, const std::string& sel,
                                                  const std::vector<std::string>& metrics) {
  std::vector<std::string> args{"tree", sel, "--format", "json"};
  for (const std::string& m : metrics) args.insert(args.end(), {"-m", m});
  auto r = interop::Query(db, args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::map<std::string, nlohmann::json> out;
  AggWalk(nlohmann::json::parse(r.out), "", out);
  return out;
}

int AggLastRun(const std::string& db) {
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto runs = (*d)->ListRuns();
  REQUIRE(runs.ok());
  return static_cast<int>(runs->back().id);
}

}  // namespace

TEST_CASE("cct-aggregate: the stored statistics are the ones tree -m METRIC@AGG computes from the ranks") {
  testutil::TempDir dir;
  const std::string db = dir / "job.db";
  for (int r = 0; r < 4; ++r) AggStoreRank(db, r, 4, "42");
  AggStoreRank(db, 0, 1, "other");  // not selected

  for (const char* threads : {"1", "2", "3"}) {
    auto agg = AggTool("cct-aggregate", {"-d", db, "tag:job=42", "--threads", threads, "--name", "job42"});
    REQUIRE_MESSAGE(agg.exit_code == 0, agg.err);
    CHECK(agg.out.find("aggregate of 4 ranks") != std::string::npos);
    // compute: 100..400 ms, mean 250: 1.6 at rank 3, the summary's headline.
    CHECK_MESSAGE(agg.out.find("1.60 in 'compute', max on rank 3") != std::string::npos, agg.out);
  }
  const std::string agg_sel = std::to_string(AggLastRun(db));
  const std::vector<std::string> metrics{"cputime@mean", "cputime@min", "cputime@max", "cputime@imbalance",
                                         "cputime@sum"};
  const auto stored = AggTreeJson(db, agg_sel, metrics);
  const auto computed = AggTreeJson(db, "tag:job=42", metrics);
  REQUIRE(stored.size() == computed.size());
  for (const auto& pn : computed) {
    CAPTURE(pn.first);
    REQUIRE(stored.count(pn.first));
    for (const char* side : {"inclusive", "exclusive"}) {
      const nlohmann::json& a = stored.at(pn.first)[side];
      const nlohmann::json& b = pn.second[side];
      for (const std::string& m : metrics) {
        CAPTURE(m);
        CAPTURE(side);
        if (b[m].is_null()) {
          CHECK(a[m].is_null());
          continue;
        }
        CHECK(a[m].get<double>() == doctest::Approx(b[m].get<double>()).epsilon(1e-12));
      }
      CHECK(a["cputime@imbalance_at"] == b["cputime@imbalance_at"]);
    }
  }
  // From the construction: compute 1.6 at rank 3, min 100 ms; io only in
  // rank 1: min 0, mean 1.25 ms, imbalance 4 at rank 1.
  const nlohmann::json& compute = stored.at("/main/compute")["exclusive"];
  CHECK(compute["cputime@imbalance"].get<double>() == doctest::Approx(1.6));
  CHECK(compute["cputime@imbalance_at"] == "rank 3");
  CHECK(compute["cputime@min"].get<double>() == doctest::Approx(0.1));
  CHECK(compute["cputime@sum"].get<double>() == doctest::Approx(1.0));
  const nlohmann::json& io = stored.at("/main/io")["exclusive"];
  CHECK(io["cputime@min"].get<double>() == 0);
  CHECK(io["cputime@mean"].get<double>() == doctest::Approx(0.00125));
  CHECK(io["cputime@imbalance"].get<double>() == doctest::Approx(4.0));
  CHECK(io["cputime@imbalance_at"] == "rank 1");

  // The text report says what was compared, like the computed one.
  auto text = interop::Query(db, {"tree", agg_sel, "-m", "cputime@imbalance", "--width", "0"});
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  CHECK(text.out.find("across 4 ranks") != std::string::npos);
  CHECK(text.out.find("1.60 (rank 3)") != std::string::npos);

  // The run's metrics say which are summaries; its metadata names its units.
  auto metrics_json = interop::Query(db, {"metrics", agg_sel, "--format", "json"});
  REQUIRE(metrics_json.exit_code == 0);
  size_t summaries = 0;
  for (const auto& m : nlohmann::json::parse(metrics_json.out)) summaries += m["kind"] == "summary";
  CHECK(summaries == 5);  // cputime@mean, @min, @max, @imbalance, @argmax

  // Where a summary has no meaning: one error line, exit 2.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"top", agg_sel, "-m", "cputime@imbalance"},
        {"export", agg_sel, "--to", "pprof", "-m", "cputime@mean", "-o", dir / "x.pb.gz"},
        {"export", agg_sel, "--to", "folded", "-m", "cputime@max"},
        {"tree", "tag:name=none", "-m", "cputime@max"}}) {
    auto r = interop::Query(db, bad);
    CAPTURE(bad[0]);
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
  }
  // cct-diff compares two aggregate runs' statistics node by node (read as
  // stored: the aggregates of threads 1, 2 and 3 are the same numbers).
  const std::string first_agg = std::to_string(std::stoi(agg_sel) - 2);
  auto diff = interop::Tool("cct-diff", db, {first_agg, agg_sel, "-m", "cputime@imbalance", "-m", "cputime@mean"});
  CHECK_MESSAGE(diff.exit_code == 0, diff.err);
  CHECK(diff.out.find("no regressions, no improvements") != std::string::npos);
  // A run derived from it keeps the statistics of the nodes it keeps, and
  // the unit labels.
  auto derived = interop::Query(db, {"derive", agg_sel, "--name", "kept", "--keep-min", "5"});
  REQUIRE_MESSAGE(derived.exit_code == 0, derived.err);
  const auto kept = AggTreeJson(db, "kept", {"cputime@imbalance"});
  REQUIRE(kept.count("/main/compute"));
  CHECK(kept.at("/main/compute")["exclusive"]["cputime@imbalance"].get<double>() == doctest::Approx(1.6));
  CHECK(kept.at("/main/compute")["exclusive"]["cputime@imbalance_at"] == "rank 3");
  CHECK(!kept.count("/main/io"));  // under 5 %: folded, its statistics dropped
  // Plain reports read the sum.
  auto plain = interop::Query(db, {"tree", agg_sel, "-m", "cputime", "--format", "json"});
  REQUIRE(plain.exit_code == 0);
}

TEST_CASE("cct-aggregate: bad input is one line and exit 2") {
  testutil::TempDir dir;
  const std::string db = dir / "job.db";
  AggStoreRank(db, 0, 2, "7");
  AggStoreRank(db, 1, 2, "7");
  testutil::WriteFileOrDie(dir / "junk.db", std::string(8192, 'x'));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-d", db, "tag:"},                      // unknown selector
        {"-d", db, "tag:job=none"},                                      // empty selection
        {"-d", dir / "junk.db", "1"},                                    // unreadable database
        {"-d", dir / "missing.db", "1"},                                 // no database
        {"-d", db, "tag:job=7", "-o", db},                               // OUT = an input
        {"-d", db, "tag:job=7", "--threads", "0"},
        {"-d", db}}) {
    auto r = AggTool("cct-aggregate", args);
    CAPTURE(args.back());
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK(r.out.empty());
  }
  // An aggregate of an aggregate: refused.
  auto first = AggTool("cct-aggregate", {"-d", db, "tag:job=7"});
  REQUIRE(first.exit_code == 0);
  auto again = AggTool("cct-aggregate", {"-d", db, std::to_string(AggLastRun(db))});
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("summary statistic") != std::string::npos);
  // -o elsewhere leaves the input alone.
  auto out = AggTool("cct-aggregate", {"-d", db, "tag:job=7", "-o", dir / "out.db"});
  REQUIRE_MESSAGE(out.exit_code == 0, out.err);
  CHECK(AggLastRun(dir / "out.db") == 1);
}

namespace {

// Everything stored for each run of a database, but ids and links.
struct AggRunContent {
  nlohmann::json meta;
  std::vector<std::string> sections;
  store::RunId parent = 0, root = 0;
};

std::vector<AggRunContent> AggContents(const std::string& path) {
  auto db = store::Database::Open(path, store::Database::Mode::kRead);
  REQUIRE(db.ok());
  auto runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  std::vector<AggRunContent> out;
  for (const store::RunMeta& m : *runs) {
    AggRunContent c;
    c.meta = m.ToJson();
    for (const char* k : {"id", "parent_run", "root_run"}) c.meta.erase(k);
    c.parent = m.parent_run;
    c.root = m.root_run;
    auto tree = (*db)->ReadTree(m.id);
    REQUIRE(tree.ok());
    auto its = (*db)->ReadIterations(m.id);
    REQUIRE(its.ok());
    store::RunMeta copy = m;
    auto sections = store::EncodeRun(copy, &*tree, its->has_value() ? &**its : nullptr);
    REQUIRE(sections.ok());
    for (const store::Section& s : *sections) c.sections.push_back(store::FrameSection(s));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

TEST_CASE("cct-merge: per-rank databases into one, run by run; twice changes nothing; damage stops at the input") {
  testutil::TempDir dir;
  std::vector<std::string> inputs;
  for (int r = 0; r < 3; ++r) {
    inputs.push_back(dir / ("r" + std::to_string(r) + ".db"));
    AggStoreRank(inputs.back(), r, 3, "9", "key-rank-" + std::to_string(r));
  }
  // A child process's run in rank 1's file: its links must follow the renumbering.
  {
    auto db = store::Database::Open(inputs[1], store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    store::RunMeta child;
    child.name = "child";
    child.state = store::RunState::kComplete;
    child.parent_run = 1;
    child.root_run = 1;
    (*child.extra)["run_key"] = "key-child";
    cct::Tree t;
    REQUIRE((*db)->CreateRun(child, &t).ok());
  }
  // An import without a run key, in two inputs: stored once (same content).
  cct::Tree imported;
  imported.AddValue(interop::AddPath(imported, {{FrameKind::kFunction, "f"}}), *imported.metrics().RegisterStandard("samples"), 3);
  interop::StoreRun(inputs[0], imported, "imported");
  interop::StoreRun(inputs[2], imported, "imported");

  const std::string out = dir / "all.db";
  std::vector<std::string> args{out};
  args.insert(args.end(), inputs.begin(), inputs.end());
  auto dry = AggTool("cct-merge", {out, inputs[0], "--dry-run"});
  REQUIRE_MESSAGE(dry.exit_code == 0, dry.err);
  CHECK(dry.out.find("2 runs would be added") != std::string::npos);
  CHECK(!std::filesystem::exists(out));

  auto merged = AggTool("cct-merge", args);
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
  CHECK(merged.out.find("1 already in") != std::string::npos);  // the import, in the third input

  // Run by run: the inputs' runs in input order, the duplicate import once.
  std::vector<AggRunContent> expect;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<AggRunContent> c = AggContents(inputs[i]);
    if (i == 2) c.pop_back();  // the import again
    for (AggRunContent& x : c) expect.push_back(std::move(x));
  }
  const std::vector<AggRunContent> got = AggContents(out);
  REQUIRE(got.size() == expect.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].meta == expect[i].meta);
    CHECK(got[i].sections == expect[i].sections);
  }
  // Rank 1's file: run 1 (rank 1), run 2 (its child); in OUT they are runs 3 and 4.
  REQUIRE(got[3].meta["name"] == "child");
  CHECK(got[3].parent == 3);
  CHECK(got[3].root == 3);
  // The merged file answers the job's selectors like the inputs did.
  auto sel = interop::Query(out, {"tree", "tag:job=9", "-m", "cputime@imbalance", "--format", "json"});
  CHECK_MESSAGE(sel.exit_code == 0, sel.err);

  // Twice: nothing new, and it says so.
  auto again = AggTool("cct-merge", args);
  REQUIRE_MESSAGE(again.exit_code == 0, again.err);
  CHECK(again.out.find("nothing new") != std::string::npos);
  CHECK(AggContents(out).size() == got.size());

  // A damaged input after a good one: exit 2, one line, the good one merged, OUT readable.
  const std::string fresh = dir / "fresh.db";
  testutil::WriteFileOrDie(dir / "bad.db", std::string(4096, '\0') + "not lmdb");
  auto damaged = AggTool("cct-merge", {fresh, inputs[0], dir / "bad.db", inputs[2]});
  CHECK(damaged.exit_code == 2);
  CHECK(testutil::LineCount(damaged.err) == 1);
  CHECK(AggContents(fresh).size() == 2);  // inputs[0]'s two runs, not inputs[2]'s
  // OUT = an input; no inputs.
  CHECK(AggTool("cct-merge", {out, out}).exit_code == 2);
  CHECK(AggTool("cct-merge", {out}).exit_code == 2);
  CHECK(AggTool("cct-merge", {out, dir / "missing.db"}).exit_code == 2);
}

TEST_CASE("cct-import --from cctdb merges databases as cct-merge does; options that would change the runs are refused") {
  testutil::TempDir dir;
  std::vector<std::string> inputs;
  for (int r = 0; r < 2; ++r) {
    inputs.push_back(dir / ("r" + std::to_string(r) + ".db"));
    AggStoreRank(inputs.back(), r, 2, "7", "key-import-" + std::to_string(r));
  }
  const std::string by_merge = dir / "merge.db", by_import = dir / "import.db";
  std::vector<std::string> merge_args{by_merge}, import_args{"-d", by_import, "--from", "cctdb"};
  merge_args.insert(merge_args.end(), inputs.begin(), inputs.end());
  import_args.insert(import_args.end(), inputs.begin(), inputs.end());
  REQUIRE(AggTool("cct-merge", merge_args).exit_code == 0);
  auto imported = AggTool("cct-import", import_args);
  REQUIRE_MESSAGE(imported.exit_code == 0, imported.err);
  const std::vector<AggRunContent> want = AggContents(by_merge), got = AggContents(by_import);
  REQUIRE(got.size() == 2);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].meta == want[i].meta);
    CHECK(got[i].sections == want[i].sections);
  }
  // Again: stored once.
  auto again = AggTool("cct-import", import_args);
  REQUIRE(again.exit_code == 0);
  CHECK(again.out.find("nothing new") != std::string::npos);
  CHECK(AggContents(by_import).size() == 2);
  // Renaming or retagging copied runs is refused, as is no input.
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{{"--name", "x"}, {"--tag", "a=b"}}) {
    std::vector<std::string> args = import_args;
    args.insert(args.end(), extra.begin(), extra.end());
    auto refused = AggTool("cct-import", args);
    CHECK(refused.exit_code == 2);
    CHECK(testutil::LineCount(refused.err) == 1);
  }
  CHECK(AggTool("cct-import", {"-d", by_import, "--from", "cctdb"}).exit_code == 2);
  CHECK(AggTool("cct-import", {"-d", by_import, "--from", "cctdb", dir / "missing.db"}).exit_code == 2);
}

TEST_CASE("cct-aggregate: a rank's several runs (its child processes) are one unit, as tree -m METRIC@AGG has it") {
  testutil::TempDir dir;
  const std::string db = dir / "job.db";
  // Rank 1 twice (a parent and its child process): its compute is 200 + 200
  // ms, the largest; the ranks are stored out of order.
  for (int r : {2, 1, 0, 1}) AggStoreRank(db, r, 3, "5");
  auto agg = AggTool("cct-aggregate", {"-d", db, "tag:job=5", "--threads", "2"});
  REQUIRE_MESSAGE(agg.exit_code == 0, agg.err);
  CHECK_MESSAGE(agg.out.find("aggregate of 3 ranks (4 runs)") != std::string::npos, agg.out);
  const std::vector<std::string> metrics{"cputime@mean", "cputime@max", "cputime@imbalance"};
  const auto stored = AggTreeJson(db, std::to_string(AggLastRun(db)), metrics);
  const auto computed = AggTreeJson(db, "tag:job=5", metrics);
  // compute: 100, 400, 300 ms by rank: mean 800/3, max at rank 1.
  const nlohmann::json& c = stored.at("/main/compute")["inclusive"];
  CHECK(c["cputime@mean"].get<double>() == doctest::Approx(0.8 / 3));
  CHECK(c["cputime@imbalance"].get<double>() == doctest::Approx(0.4 / (0.8 / 3)));
  CHECK(c["cputime@imbalance_at"] == "rank 1");
  REQUIRE(stored.size() == computed.size());
  for (const auto& pn : computed) {
    CAPTURE(pn.first);
    for (const char* side : {"inclusive", "exclusive"})
      for (const std::string& m : metrics) {
        const nlohmann::json& a = stored.at(pn.first)[side][m];
        const nlohmann::json& b = pn.second[side][m];
        CHECK(a.is_null() == b.is_null());
        if (!a.is_null() && !b.is_null()) CHECK(a.get<double>() == doctest::Approx(b.get<double>()));
      }
  }
}
