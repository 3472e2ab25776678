// Hatchet interop both ways (issue 18): files Hatchet itself writes
// (GraphFrame.to_json of an HPCToolkit profile with merged duplicate
// siblings; to_literal with statement and loop frames named beside the
// frame) import, and our hatchet-json export has the structure Hatchet's
// JsonReader and tree() consume. Hatchet cannot be installed here, so the
// export test is structural, not a Hatchet round trip (docs/cli.md).
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "importers/importer.h"
#include "tests/interop_util.h"

namespace hatchet_interop {

using cct::FrameKind;
using nlohmann::json;

// The child of `parent` named `name` (kNoNode-like 0 when there is none).
cct::NodeId ChildNamed(const cct::Tree& t, const cct::Children& ch, cct::NodeId parent, const std::string& name) {
  for (const cct::NodeId* c = ch.begin(parent); c != ch.end(parent); ++c)
    if (t.name(*c) == name) return *c;
  return 0;
}

// GraphFrame.to_dict's layout for an HPCToolkit profile (HPCToolkitReader's
// frames: functions {"type","name"}, statements {"type","file","line"}; the
// dataframe holds nid/name/type/file/line/module and the metrics) in which
// main has two sibling nodes with the same frame "solve", each with a
// statement node for solve.c:12, and a statement of its own. Two ranks; rank
// 1's values are twice rank 0's.
json MergedSiblingsGraphFrame() {
  json graph = json::array({json{
      {"0", {{"data", {{"type", "function"}, {"name", "main"}}}, {"children", {1, 2, 3}}}},
      {"1", {{"data", {{"type", "function"}, {"name", "solve"}}}, {"children", {4}}}},
      {"2", {{"data", {{"type", "function"}, {"name", "solve"}}}, {"children", {5}}}},
      {"3", {{"data", {{"type", "statement"}, {"file", "/src/main.c"}, {"line", 7}}}, {"children", json::array()}}},
      {"4", {{"data", {{"type", "statement"}, {"file", "/src/solve.c"}, {"line", 12}}}, {"children", json::array()}}},
      {"5", {{"data", {{"type", "statement"}, {"file", "/src/solve.c"}, {"line", 12}}}, {"children", json::array()}}},
  }});
  // Rank 0, exclusive: main 1, solve#1 0, solve#2 2, main.c:7 5,
  // solve.c:12 under solve#1 3 and under solve#2 4; inclusive from those.
  struct Row {
    int node;
    const char *name, *type, *file;
    int line;
    double exc, inc;
  };
  const Row rows[] = {{0, "main", "PF", "/src/main.c", 1, 1, 15},
                      {1, "solve", "PF", "/src/solve.c", 10, 0, 3},
                      {2, "solve", "PF", "/src/solve.c", 10, 2, 6},
                      {3, "main.c:7", "S", "/src/main.c", 7, 5, 5},
                      {4, "solve.c:12", "S", "/src/solve.c", 12, 3, 3},
                      {5, "solve.c:12", "S", "/src/solve.c", 12, 4, 4}};
  json df = json::array();
  for (int rank = 0; rank < 2; ++rank)
    for (const Row& r : rows)
      df.push_back({{"node", r.node}, {"rank", rank}, {"nid", r.node + 100}, {"name", r.name}, {"type", r.type},
                    {"file", r.file}, {"line", r.line}, {"module", "/bin/app"}, {"time", r.exc * (rank + 1)},
                    {"time (inc)", r.inc * (rank + 1)}});
  return {{"graph", graph}, {"dataframe_indices", {"node", "rank"}}, {"dataframe", df},
          {"inclusive_metrics", {"time (inc)"}}, {"exclusive_metrics", {"time"}}};
}

TEST_CASE("hatchet import: to_json with duplicate sibling frames merges them and checks the merged node") {
  testutil::TempDir dir;
  const std::string file = dir / "merged.json";
  testutil::WriteFileOrDie(file, MergedSiblingsGraphFrame().dump());
  auto r = importers::ImportHatchet(file, importers::ImportOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;
  const cct::MetricId time = t.metrics().Find("time");
  REQUIRE(time != cct::kNoMetric);
  cct::NodeValues v(t);
  CHECK(v.Total(time) == doctest::Approx(15 + 30));  // main's inclusive, rank 0 + rank 1
  const cct::Children ch = cct::BuildChildren(t);
  for (int rank = 0; rank < 2; ++rank) {
    const double k = rank + 1;
    CAPTURE(rank);
    const cct::NodeId thread = ChildNamed(t, ch, cct::kRootNode, "rank " + std::to_string(rank));
    REQUIRE(thread != 0);
    const cct::NodeId main = ChildNamed(t, ch, thread, "main");
    REQUIRE(main != 0);
    CHECK(ch.count(main) == 2);  // one solve, main.c:7
    const cct::NodeId solve = ChildNamed(t, ch, main, "solve");
    REQUIRE(solve != 0);
    CHECK(v.Exclusive(time)[solve] == doctest::Approx(2 * k));  // 0 + 2
    CHECK(v.Inclusive(time)[solve] == doctest::Approx(9 * k));  // 3 + 6: the siblings' stated inclusive sum
    REQUIRE(ch.count(solve) == 1);
    const cct::NodeId line = *ch.begin(solve);
    CHECK(t.kind(line) == FrameKind::kLine);
    CHECK(t.name(line) == "solve.c:12");
    CHECK(t.str(t.frame(line).file) == "/src/solve.c");
    CHECK(t.frame(line).line == 12);
    CHECK(v.Exclusive(time)[line] == doctest::Approx(7 * k));  // 3 + 4
    const cct::NodeId own = ChildNamed(t, ch, main, "main.c:7");
    REQUIRE(own != 0);
    CHECK(t.kind(own) == FrameKind::kLine);
    CHECK(v.Exclusive(time)[own] == doctest::Approx(5 * k));
  }

  // A stated inclusive value that disagrees with the merged node still fails.
  json bad = MergedSiblingsGraphFrame();
  bad["dataframe"][1]["time (inc)"] = 30;  // rank 0's first solve: 3 -> 30
  testutil::WriteFileOrDie(file, bad.dump());
  auto e = importers::ImportHatchet(file, importers::ImportOptions{});
  REQUIRE(!e.ok());
  CHECK(e.status().message().find("node 'rank 0/main/solve': 'time (inc)' is 36") != std::string::npos);
}

TEST_CASE("hatchet import: to_literal statement and loop frames named beside the frame") {
  testutil::TempDir dir;
  const std::string file = dir / "literal.json";
  // GraphFrame.to_literal's node: {"name", "frame", "metrics" (with
  // "_hatchet_nid"), "attributes", "children" when there are any}.
  auto node = [](const std::string& name, json frame, double exc, double inc, int nid, json children = nullptr) {
    json n = {{"name", name}, {"frame", std::move(frame)},
              {"metrics", {{"time", exc}, {"time (inc)", inc}, {"_hatchet_nid", nid}}}, {"attributes", json::object()}};
    if (!children.is_null()) n["children"] = std::move(children);
    return n;
  };
  const json doc = json::array({node(
      "main", {{"type", "function"}, {"name", "main"}}, 1, 20, 0,
      json::array({node("Loop@main.c:10", {{"type", "loop"}, {"file", "/src/main.c"}, {"line", 10}}, 0, 12, 1,
                        json::array({node("main.c:11", {{"type", "statement"}, {"file", "/src/main.c"}, {"line", 11}},
                                          12, 12, 2)})),
                   node("main.c:20", {{"type", "statement"}, {"file", "/src/main.c"}, {"line", 20}}, 7, 7, 3),
                   node("helper", {{"type", "function"}}, 0, 0, 4)}))});
  testutil::WriteFileOrDie(file, doc.dump());
  auto r = importers::ImportHatchet(file, importers::ImportOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;
  CHECK(t.metrics().Find("_hatchet_nid") == cct::kNoMetric);  // an id, not a metric
  const cct::MetricId time = t.metrics().Find("time");
  REQUIRE(time != cct::kNoMetric);
  cct::NodeValues v(t);
  CHECK(v.Total(time) == doctest::Approx(1 + 12 + 7));
  const cct::Children ch = cct::BuildChildren(t);
  const cct::NodeId main = ChildNamed(t, ch, cct::kRootNode, "main");
  REQUIRE(main != 0);
  CHECK(ch.count(main) == 3);
  // The loop: our loop node (named as the HPCToolkit importer names loops),
  // with the statement inside it.
  const cct::NodeId loop = ChildNamed(t, ch, main, "loop at main.c:10");
  REQUIRE(loop != 0);
  CHECK(t.kind(loop) == FrameKind::kLoop);
  CHECK(t.str(t.frame(loop).file) == "/src/main.c");
  CHECK(t.frame(loop).line == 10);
  const cct::NodeId in_loop = ChildNamed(t, ch, loop, "main.c:11");
  REQUIRE(in_loop != 0);
  CHECK(t.kind(in_loop) == FrameKind::kLine);
  CHECK(t.frame(in_loop).line == 11);
  CHECK(v.Exclusive(time)[in_loop] == 12);
  const cct::NodeId stmt = ChildNamed(t, ch, main, "main.c:20");
  REQUIRE(stmt != 0);
  CHECK(t.kind(stmt) == FrameKind::kLine);
  CHECK(v.Exclusive(time)[stmt] == 7);
  const cct::NodeId helper = ChildNamed(t, ch, main, "helper");  // the name only beside the frame
  REQUIRE(helper != 0);
  CHECK(t.kind(helper) == FrameKind::kFunction);

  // A node to_literal repeats (reached through a second parent: same
  // "_hatchet_nid") is read once, as Hatchet's literal reader does.
  testutil::WriteFileOrDie(file, R"J([{"frame": {"name": "a"}, "metrics": {"t": 1, "_hatchet_nid": 0}, "children": [
      {"frame": {"name": "b"}, "metrics": {"t": 2, "_hatchet_nid": 1}},
      {"frame": {"name": "c"}, "metrics": {"t": 4, "_hatchet_nid": 2}, "children": [
        {"frame": {"name": "b"}, "metrics": {"t": 2, "_hatchet_nid": 1}}]}]}])J");
  auto dag = importers::ImportHatchet(file, importers::ImportOptions{});
  REQUIRE(dag.ok());
  cct::NodeValues dv(dag->tree);
  CHECK(dv.Total(dag->tree.metrics().Find("t")) == 7);
  CHECK(dag->tree.size() == 4);  // root, a, b, c

  // An unknown frame type: one line naming the type and where it is, exit 2.
  testutil::WriteFileOrDie(file, R"J([{"frame": {"name": "a"}, "metrics": {"t": 1}, "children": [
      {"frame": {"name": "b"}, "metrics": {"t": 2}},
      {"frame": {"name": "c", "type": "basic-block"}, "metrics": {"t": 4}}]}])J");
  auto e = interop::Import(dir / "x.db", {"--from", "hatchet", file});
  CHECK(e.exit_code == 2);
  CHECK(testutil::LineCount(e.err) == 1);
  CHECK(e.err.find("[0].children[1].frame.type: unknown frame type \"basic-block\"") != std::string::npos);
}

TEST_CASE("hatchet-json export: the structure GraphFrame.from_json and tree() read, multi-threaded") {
  // Two threads; "io" only on thread 1. Values in ms, exported in seconds.
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const cct::MetricId samples = *t.metrics().RegisterStandard("samples");
  constexpr double kMs = 1e6;
  std::map<std::string, double> cpu_sum, samples_sum;  // by node name, both threads
  for (int th = 0; th < 2; ++th) {
    const cct::NodeId thread =
        t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kThread, "thread " + std::to_string(th)));
    const cct::NodeId main = t.InternChild(thread, t.InternFrame(FrameKind::kFunction, "main"));
    const cct::NodeId solve = t.InternChild(main, t.InternFrame(FrameKind::kFunction, "solve"));
    t.AddValue(main, cpu, (th + 1) * kMs);
    t.AddValue(solve, cpu, 3 * (th + 1) * kMs);
    t.AddValue(solve, samples, 10 + th);
    cpu_sum["main"] += (th + 1) * 1e-3, cpu_sum["solve"] += 3 * (th + 1) * 1e-3;
    samples_sum["solve"] += 10 + th;
    if (th == 1) {
      t.AddValue(t.InternChild(main, t.InternFrame(FrameKind::kFunction, "io")), cpu, 5 * kMs);
      cpu_sum["io"] += 5e-3;
    }
  }
  auto write = [&](bool per_thread) {
    std::ostringstream out;
    REQUIRE(exporters::WriteHatchetGraphFrame(t, {}, per_thread, out, nullptr).ok());
    return json::parse(out.str());
  };

  // Shared by both forms. JsonReader.read: each "graph" entry maps node ids
  // (strings) to {"data": frame, "children": [ids]}, and Frame(data) raises
  // on empty attributes; children are looked up in the same entry.
  auto graph_ids = [](const json& doc) {
    std::map<int64_t, std::string> names;
    REQUIRE(doc["graph"].is_array());
    for (const json& g : doc["graph"])
      for (auto it = g.begin(); it != g.end(); ++it) {
        REQUIRE(it.value()["data"].is_object());
        REQUIRE(!it.value()["data"].empty());
        REQUIRE(it.value()["children"].is_array());
        for (const json& c : it.value()["children"]) CHECK(g.contains(std::to_string(c.get<int64_t>())));
        names[std::stoll(it.key())] = it.value()["data"]["name"].get<std::string>();
      }
    return names;
  };

  SUBCASE("default: indexed by node only, one row per node, the threads summed") {
    const json doc = write(false);
    const auto names = graph_ids(doc);
    CHECK(names.size() == 3);  // main, solve, io: the union of the threads' trees
    // JsonReader.read: set_index(dataframe_indices). ConsoleRenderer
    // .render_frame: with neither "rank" nor "thread" among the index's
    // names it looks up dataframe.loc[node, ...] for every graph node, so
    // each node has exactly one row (a scalar, not a Series).
    CHECK(doc["dataframe_indices"] == json({"node"}));
    std::set<int64_t> rows;
    for (const json& row : doc["dataframe"]) {
      REQUIRE(row["node"].is_number_integer());
      CHECK(rows.insert(row["node"].get<int64_t>()).second);
      CHECK(!row.contains("rank"));
      CHECK(!row.contains("thread"));
      // render_frame: dataframe.loc[df_index, name_column="name"], a string.
      REQUIRE(row["name"].is_string());
      const std::string name = row["name"];
      CHECK(name == names.at(row["node"].get<int64_t>()));
      // GraphFrame's default_metric is "time" (from_json cannot set another)
      // and render() raises KeyError when that column is missing: it copies
      // the first time metric.
      CHECK(row["time"] == row["cputime"]);
      CHECK(row["time (inc)"] == row["cputime (inc)"]);
      CHECK(row["cputime"].get<double>() == doctest::Approx(cpu_sum[name]));
      CHECK(row["samples"].get<double>() == doctest::Approx(samples_sum[name]));
      if (name == "main") CHECK(row["cputime (inc)"].get<double>() == doctest::Approx(3e-3 + 9e-3 + 5e-3));
    }
    CHECK(rows.size() == names.size());
    // GraphFrame(exc_metrics, inc_metrics): columns every row has; the
    // "time" copy is not listed, so nothing sums it twice.
    CHECK(doc["exclusive_metrics"] == json({"cputime", "samples"}));
    CHECK(doc["inclusive_metrics"] == json({"cputime (inc)", "samples (inc)"}));
  }

  SUBCASE("per_thread: a (node, thread) row for every pair") {
    const json doc = write(true);
    const auto names = graph_ids(doc);
    // render_frame looks up (node, thread) with tree(thread=T), 0 by
    // default, for every graph node: thread 0 needs a row for "io" too.
    CHECK(doc["dataframe_indices"] == json({"node", "thread"}));
    std::set<std::pair<int64_t, int64_t>> pairs;
    for (const json& row : doc["dataframe"]) {
      REQUIRE(row["thread"].is_number_integer());
      CHECK(pairs.insert({row["node"].get<int64_t>(), row["thread"].get<int64_t>()}).second);
      const std::string name = row["name"];
      const int64_t th = row["thread"];
      double expect = name == "main" ? (th + 1) * 1e-3 : name == "solve" ? 3 * (th + 1) * 1e-3 : th == 1 ? 5e-3 : 0;
      CHECK(row["cputime"].get<double>() == doctest::Approx(expect));
      CHECK(row["time"] == row["cputime"]);
    }
    CHECK(pairs.size() == names.size() * 2);
    // Our importer reads the per-thread form back into threads.
    testutil::TempDir dir;
    testutil::WriteFileOrDie(dir / "pt.json", doc.dump());
    auto back = importers::ImportHatchet(dir / "pt.json", importers::ImportOptions{});
    REQUIRE(back.ok());
    cct::NodeValues v(back->tree);
    CHECK(v.Total(back->tree.metrics().Find("cputime")) == doctest::Approx(cct::NodeValues(t).Total(cpu)));
    CHECK(back->tree.metrics().Find("time") == cct::kNoMetric);  // the unlisted copy is not imported
  }
}

}  // namespace hatchet_interop
