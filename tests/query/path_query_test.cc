// query::PathQuery (docs/query.md): the parser (every operator, precedence,
// quantifiers, errors with positions, hostile inputs) and the matcher, on a
// hand-built tree whose expected end sets are written out by hand, and
// against an independent backtracking matcher in Python
// (tests/query/path_query_ref.py) on a random tree with random queries.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cct/tree.h"
#include "query/path_query.h"
#include "tests/test_util.h"

namespace {

using cct::FrameKind;
using cct::NodeId;
using PqNodeSet = std::set<NodeId>;

// The hand-built tree (ids in creation order; cputime exclusive in ms, gker
// in ns):
//
//  0 <root>
//  1 main                 libapp.so app.cc:10   10 ms
//  2   solve              libapp.so app.cc:20   20 ms
//  3     MPI_Allreduce    libmpi.so              5 ms
//  4       ibv_post_send  libibverbs.so         30 ms
//  5       MPI_helper     libmpi.so
//  6         ibv_poll_cq  libibverbs.so         15 ms
//  7     foo              libfoo.so             40 ms
//  8       foo            libfoo.so             25 ms
//  9   [nvtx] forward
// 10     <gpu kernel>
// 11       gemm_kernel    (kernel)             100 ns gker
// 12     relu             libfoo.so              5 ms
// 13       <gpu kernel>
// 14         relu_kernel  (kernel)              50 ns gker
// 15   [nvtx] backward
// 16     <gpu kernel>
// 17       gemm_kernel    (kernel)              70 ns gker
//
// cputime total 150 ms (5 % = 7.5 ms); inclusive: main 150, solve 135,
// MPI_Allreduce 50, MPI_helper 15, foo(7) 65, relu 5. gker total 220 ns.
cct::Tree PqHandTree() {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const cct::MetricId gker = *t.metrics().RegisterStandard("gker");
  (void)*t.metrics().Register({"bytes", cct::Unit::kBytes, cct::MetricKind::kAdditive, "", ""});
  (void)*t.metrics().Register({"per_byte", cct::Unit::kNone, cct::MetricKind::kDerived, "", "cputime / bytes"});
  auto fn = [&](NodeId parent, const char* name, const char* module, const char* file = "", uint32_t line = 0) {
    return t.InternChild(parent, t.InternFrame(FrameKind::kFunction, name, module, file, line));
  };
  auto node = [&](NodeId parent, FrameKind kind, const char* name) {
    return t.InternChild(parent, t.InternFrame(kind, name));
  };
  const NodeId main = fn(cct::kRootNode, "main", "/usr/lib/libapp.so", "src/app.cc", 10);
  const NodeId solve = fn(main, "solve", "/usr/lib/libapp.so", "src/app.cc", 20);
  const NodeId allreduce = fn(solve, "MPI_Allreduce", "libmpi.so");
  const NodeId post = fn(allreduce, "ibv_post_send", "libibverbs.so");
  const NodeId helper = fn(allreduce, "MPI_helper", "libmpi.so");
  const NodeId poll = fn(helper, "ibv_poll_cq", "libibverbs.so");
  const NodeId foo = fn(solve, "foo", "libfoo.so");
  const NodeId foo2 = fn(foo, "foo", "libfoo.so");
  const NodeId forward = node(main, FrameKind::kNvtx, "forward");
  const NodeId g1 = node(forward, FrameKind::kGpuOp, "<gpu kernel>");
  const NodeId k1 = node(g1, FrameKind::kKernel, "gemm_kernel");
  const NodeId relu = fn(forward, "relu", "libfoo.so");
  const NodeId g2 = node(relu, FrameKind::kGpuOp, "<gpu kernel>");
  const NodeId k2 = node(g2, FrameKind::kKernel, "relu_kernel");
  const NodeId backward = node(main, FrameKind::kNvtx, "backward");
  const NodeId g3 = node(backward, FrameKind::kGpuOp, "<gpu kernel>");
  const NodeId k3 = node(g3, FrameKind::kKernel, "gemm_kernel");
  REQUIRE(k3 == 17);
  (void)helper;
  const std::pair<NodeId, double> ms[] = {{main, 10}, {solve, 20}, {allreduce, 5}, {post, 30}, {poll, 15},
                                          {foo, 40},  {foo2, 25},  {relu, 5}};
  for (const auto& p : ms) t.AddValue(p.first, cpu, p.second * 1e6);
  t.AddValue(k1, gker, 100);
  t.AddValue(k2, gker, 50);
  t.AddValue(k3, gker, 70);
  return t;
}

cct::Result<query::PathQuery> PqParse(const std::string& q) { return query::PathQuery::Parse(q); }

PqNodeSet PqEnds(const cct::Tree& t, const std::string& q) {
  auto parsed = query::PathQuery::Parse(q);
  REQUIRE_MESSAGE(parsed.ok(), q << ": " << parsed.status().message());
  auto m = query::MatchPathQuery(t, *parsed);
  REQUIRE_MESSAGE(m.ok(), q << ": " << m.status().message());
  PqNodeSet s;
  size_t count = 0;
  for (NodeId n = 0; n < t.size(); ++n)
    if (m->end[n]) {
      s.insert(n);
      ++count;
    }
  CHECK(count == m->ends);
  return s;
}

PqNodeSet PqRange(NodeId from, NodeId to) {
  PqNodeSet s;
  for (NodeId n = from; n <= to; ++n) s.insert(n);
  return s;
}

// The error's position and reason, checking the message's form.
std::pair<size_t, std::string> PqErrorOf(const std::string& q) {
  size_t pos = 99999;
  auto r = query::PathQuery::Parse(q, &pos);
  REQUIRE_MESSAGE(!r.ok(), "parsed: " << q);
  CHECK(r.status().code() == cct::ErrorCode::kInvalidArgument);
  const std::string& msg = r.status().message();
  CHECK(msg.find('\n') == std::string::npos);
  const std::string head = "invalid query at position " + std::to_string(pos) + ": ";
  CHECK_MESSAGE(msg.rfind(head, 0) == 0, msg);
  return {pos, msg.substr(std::min(msg.size(), head.size()))};
}

}  // namespace

TEST_CASE("path query: the issue's three examples on a hand-built tree") {
  const cct::Tree t = PqHandTree();
  CHECK(PqEnds(t, "* [kind=nvtx and name=forward] * [kind=kernel]") == PqNodeSet{11, 14});
  CHECK(PqEnds(t, "* [name=main] * [name~\"^MPI_\"] * [name~\"^ibv_\"]") == PqNodeSet{4, 6});
  CHECK(PqEnds(t, "* [kind=function and module~libfoo and exc(cputime) > 5%]") == PqNodeSet{7, 8});
}

TEST_CASE("path query: steps and quantifiers") {
  const cct::Tree t = PqHandTree();
  CHECK(PqEnds(t, "main") == PqNodeSet{1});
  CHECK(PqEnds(t, "solve").empty());  // paths start at a top-level node
  CHECK(PqEnds(t, "main solve") == PqNodeSet{2});
  CHECK(PqEnds(t, "/main/solve/") == PqNodeSet{2});
  CHECK(PqEnds(t, "main .") == PqNodeSet{2, 9, 15});
  CHECK(PqEnds(t, "main *") == PqRange(1, 17));
  CHECK(PqEnds(t, "main +") == PqRange(2, 17));
  CHECK(PqEnds(t, "*") == PqRange(1, 17));
  CHECK(PqEnds(t, "main .{2}") == PqNodeSet{3, 7, 10, 12, 16});
  CHECK(PqEnds(t, "main .{1,2}") == PqNodeSet{2, 9, 15, 3, 7, 10, 12, 16});
  CHECK(PqEnds(t, ".{4,}") == PqNodeSet{4, 5, 6, 8, 11, 13, 14, 17});
  CHECK(PqEnds(t, ". . . .") == PqNodeSet{4, 5, 8, 11, 13, 17});
  CHECK(PqEnds(t, "main .*") == PqRange(1, 17));
  CHECK(PqEnds(t, "main .+ [kind=kernel]") == PqNodeSet{11, 14, 17});
  CHECK(PqEnds(t, "main .? [kind=gpu]") == PqNodeSet{10, 16});
  CHECK(PqEnds(t, "main [kind=nvtx]? [kind=gpu]") == PqNodeSet{10, 16});
  CHECK(PqEnds(t, "main [module~libapp]*") == PqNodeSet{1, 2});
  CHECK(PqEnds(t, "* [name=foo]+") == PqNodeSet{7, 8});
  CHECK(PqEnds(t, "* [name=foo]{2}") == PqNodeSet{8});
  CHECK(PqEnds(t, "* [name=foo]{2} .").empty());
  CHECK(PqEnds(t, "main solve [name=foo]{0,1}") == PqNodeSet{2, 7});
  CHECK(PqEnds(t, "main solve [name=foo]{1,}") == PqNodeSet{7, 8});
  CHECK(PqEnds(t, "main solve [name~\"^(MPI|foo)\"]{2}") == PqNodeSet{5, 8});
  CHECK(PqEnds(t, "* \"<gpu kernel>\" gemm_kernel") == PqNodeSet{11, 17});
  CHECK(PqEnds(t, "* [kind=thread]").empty());
  CHECK(PqEnds(t, "* [kind=root]").empty());  // the root is on no path
}

TEST_CASE("path query: fields, operators and precedence") {
  const cct::Tree t = PqHandTree();
  CHECK(PqEnds(t, "* [not kind=function]") == PqNodeSet{9, 10, 11, 13, 14, 15, 16, 17});
  CHECK(PqEnds(t, "* [!(kind=function)]") == PqNodeSet{9, 10, 11, 13, 14, 15, 16, 17});
  CHECK(PqEnds(t, "* [kind != function and kind != kernel]") == PqNodeSet{9, 10, 13, 15, 16});
  // `and` binds tighter than `or`; `not` tighter than both.
  CHECK(PqEnds(t, "* [kind=nvtx or kind=function and module~libmpi]") == PqNodeSet{3, 5, 9, 15});
  CHECK(PqEnds(t, "* [(kind=nvtx or kind=function) and module~libmpi]") == PqNodeSet{3, 5});
  CHECK(PqEnds(t, "* [not kind=function and name~\"^<gpu\"]") == PqNodeSet{10, 13, 16});
  CHECK(PqEnds(t, "* [kind=gpu-op]") == PqNodeSet{10, 13, 16});
  CHECK(PqEnds(t, "* [kind=nvtx || name=solve && line=20]") == PqNodeSet{2, 9, 15});
  CHECK(PqEnds(t, "* [name=forward||name=solve&&line=20]") == PqNodeSet{2, 9});  // bare words end at || and &&
  CHECK(PqEnds(t, "* [kind=function and module !~ \"lib(app|mpi)\"]") == PqNodeSet{4, 6, 7, 8, 12});
  CHECK(PqEnds(t, "* [module = libfoo.so]") == PqNodeSet{7, 8, 12});
  CHECK(PqEnds(t, "* [module = libfoo]").empty());  // `=` is the whole string
  CHECK(PqEnds(t, "* [module = \"\" and kind = function]").empty());
  CHECK(PqEnds(t, "* [name != main and name != solve and kind = function and module ~ app]").empty());
  CHECK(PqEnds(t, "* [file ~ \"app\\.cc$\"]") == PqNodeSet{1, 2});
  CHECK(PqEnds(t, "* [file = \"src/app.cc\" and line >= 10]") == PqNodeSet{1, 2});
  CHECK(PqEnds(t, "* [line > 10]") == PqNodeSet{2});
  CHECK(PqEnds(t, "* [line < 20 and line != 0]") == PqNodeSet{1});
  CHECK(PqEnds(t, "* [line <= 20 and line == 20]") == PqNodeSet{2});
  CHECK(PqEnds(t, "* [name = 'MPI_helper']") == PqNodeSet{5});
  CHECK(PqEnds(t, "* [name = \"no such\"]").empty());
  CHECK(PqEnds(t, "* [name != \"no such\" and kind = kernel]") == PqNodeSet{11, 14, 17});
}

TEST_CASE("path query: metric comparisons, units and percentages") {
  const cct::Tree t = PqHandTree();
  CHECK(PqEnds(t, "* [exc(cputime) >= 30ms]") == PqNodeSet{4, 7});
  CHECK(PqEnds(t, "* [exc(cputime) >= 0.03]") == PqNodeSet{4, 7});  // seconds, as reports show times
  CHECK(PqEnds(t, "* [exc(cputime) >= 30000us]") == PqNodeSet{4, 7});
  CHECK(PqEnds(t, "* [exc(cputime) > 3e7 ns]") == PqNodeSet{7});
  CHECK(PqEnds(t, "* [inc(cputime) > 50%]") == PqNodeSet{1, 2});                 // > 75 ms
  CHECK(PqEnds(t, "* [inc(cputime) >= 10% and inc(cputime) < 50%]") == PqNodeSet{3, 4, 5, 6, 7, 8});  // [15, 75) ms
  CHECK(PqEnds(t, "* [inc(cputime) = 15ms]") == PqNodeSet{5, 6});
  CHECK(PqEnds(t, "* [exc(cputime) != 0 and inc({cputime}) <= 5ms]") == PqNodeSet{12});
  CHECK(PqEnds(t, "* [kind=kernel and inc(gker) >= 70ns]") == PqNodeSet{11, 17});
  CHECK(PqEnds(t, "* [kind=kernel and inc(gker) > 9e-8]") == PqNodeSet{11});  // seconds
  CHECK(PqEnds(t, "* [inc(gker) > 40%]") == PqNodeSet{1, 9, 10, 11});  // > 88 ns: main 220, forward 150, 100
  CHECK(PqEnds(t, "* [exc(bytes) > 0]").empty());
  CHECK(PqEnds(t, "* [exc(bytes) < 1KiB and name=main]") == PqNodeSet{1});
  // A derived metric without operands (0) or divided by zero (NaN) has no
  // value: no comparison holds.
  CHECK(PqEnds(t, "* [inc(per_byte) != 1]").empty());
}

TEST_CASE("path query: on_path is the ends and their ancestors") {
  const cct::Tree t = PqHandTree();
  auto q = PqParse("* [kind=nvtx and name=forward] * [kind=kernel]");
  REQUIRE(q.ok());
  auto m = query::MatchPathQuery(t, *q);
  REQUIRE(m.ok());
  PqNodeSet on;
  for (NodeId n = 0; n < t.size(); ++n)
    if (m->on_path[n]) on.insert(n);
  CHECK(on == PqNodeSet{0, 1, 9, 10, 11, 12, 13, 14});
  auto none = PqParse("* [kind=thread]");
  REQUIRE(none.ok());
  auto m2 = query::MatchPathQuery(t, *none);
  REQUIRE(m2.ok());
  CHECK(m2->ends == 0);
  for (char c : m2->on_path) CHECK(c == 0);
}

TEST_CASE("path query: metric names and errors found against the tree") {
  const cct::Tree t = PqHandTree();
  auto q = PqParse("* [exc(cputime) > 1% or inc({gker}) > 0 or exc(cputime) < 2]");
  REQUIRE(q.ok());
  CHECK(q->MetricNames() == std::vector<std::string>{"cputime", "gker"});
  CHECK(q->text() == "* [exc(cputime) > 1% or inc({gker}) > 0 or exc(cputime) < 2]");
  auto missing = query::MatchPathQuery(t, *PqParse("* [exc(realtime) > 1]"));
  REQUIRE(!missing.ok());
  CHECK(missing.status().message() ==
        "the query reads metric 'realtime', which the run does not have (it has: cputime, gker, bytes, per_byte)");
  auto newline = query::MatchPathQuery(t, *PqParse("* [inc({a\nb}) > 1]"));
  REQUIRE(!newline.ok());
  CHECK(newline.status().message().rfind("the query reads metric 'a\\x0ab', which", 0) == 0);
  auto derived = query::MatchPathQuery(t, *PqParse("* [inc(per_byte) > 1%]"));
  REQUIRE(!derived.ok());
  CHECK(derived.status().message().find("derived") != std::string::npos);
  auto unit = query::MatchPathQuery(t, *PqParse("[exc(bytes) > 3ms]"));
  REQUIRE(!unit.ok());
  CHECK(unit.status().message() == "query at position 1: 'ms' is a time; bytes is in bytes");
  auto unit2 = query::MatchPathQuery(t, *PqParse("[exc(cputime) > 3KiB]"));
  REQUIRE(!unit2.ok());
  CHECK(unit2.status().message() == "query at position 1: 'KiB' is a size; cputime is in ns");
}

TEST_CASE("path query: parse errors carry the offending position") {
  using P = std::pair<size_t, std::string>;
  CHECK(PqErrorOf("").first == 0);
  CHECK(PqErrorOf("   ").first == 3);
  CHECK(PqErrorOf("[name=main").first == 10);
  CHECK(PqErrorOf("[nme=main]") == P{1, "unknown field 'nme' (name, module, file, kind, line, inc(METRIC) or exc(METRIC))"});
  CHECK(PqErrorOf("main [name~\"(\"]").first == 11);
  CHECK(PqErrorOf("main [name~\"(\"]").second.find("missing )") != std::string::npos);
  CHECK(PqErrorOf("[kind=gpux]") ==
        P{6, "unknown kind 'gpux' (root, thread, function, nvtx, gpu, kernel, line, unknown or loop)"});
  CHECK(PqErrorOf("* *+").first == 3);
  CHECK(PqErrorOf("**").first == 1);
  CHECK(PqErrorOf("[name=a]{64}").first == 9);
  CHECK(PqErrorOf("[name=a]{3,2}") == P{8, "repetition {3,2}: the maximum is below the minimum"});
  CHECK(PqErrorOf("[name=a]{0}").first == 8);
  CHECK(PqErrorOf("[name=a]{}").first == 9);
  CHECK(PqErrorOf("[name=a]{2").first == 10);
  CHECK(PqErrorOf("a//b").first == 2);
  CHECK(PqErrorOf("[line ~ 3]") == P{6, "'~' applies to name, module and file"});
  CHECK(PqErrorOf("[name > 3]").first == 6);
  CHECK(PqErrorOf("[line = 3.5]").first == 8);
  CHECK(PqErrorOf("[exc(cputime) > 5 parsecs]").first == 18);
  CHECK(PqErrorOf("[exc(cputime) >]").first == 15);
  CHECK(PqErrorOf("[exc(cputime) = x]").first == 16);
  CHECK(PqErrorOf("[exc cputime > 1]").first == 5);
  CHECK(PqErrorOf("[inc() > 1]").first == 5);
  CHECK(PqErrorOf("[inc({cputime) > 1]").first == 5);
  CHECK(PqErrorOf("[inc(cputime > 1]").first == 13);
  CHECK(PqErrorOf("[name=\"abc]").first == 6);
  CHECK(PqErrorOf("[name=main]x").first == 11);
  CHECK(PqErrorOf("[name=main] x)").first == 13);
  CHECK(PqErrorOf("main*").first == 4);
  CHECK(PqErrorOf("name=main").first == 4);
  CHECK(PqErrorOf("[ ]").first == 2);
  CHECK(PqErrorOf("[name=a or]").first == 10);
  CHECK(PqErrorOf("[name=a and or name=b]").first == 12);
  CHECK(PqErrorOf("[(name=a]").first == 8);
  CHECK(PqErrorOf("[name=a name=b]").first == 8);
  CHECK(PqErrorOf("[name == ]").first == 9);
  CHECK(PqErrorOf("[name ? a]").first == 6);
  CHECK(PqErrorOf("]").first == 0);
  CHECK(PqErrorOf("main {2}").first == 5);
  // Control characters quoted from the query stay on the one line (PqErrorOf
  // checks there is no newline).
  CHECK(PqErrorOf("[name~\"(\n\"]").second.find("\\x0a") != std::string::npos);
  CHECK(PqErrorOf("[\x01" "ame=a]").second.find("'\\x01'") != std::string::npos);
}

TEST_CASE("path query: hostile queries are bounded, linear and clean errors") {
  // Deep nesting: an error at the 33rd level, not a stack overflow.
  std::string deep = "[" + std::string(100000, '(') + "name=a" + std::string(100000, ')') + "]";
  CHECK(PqErrorOf(deep).first == 65536);  // over the length limit first
  deep = "[" + std::string(40, '(') + "name=a" + std::string(40, ')') + "]";
  CHECK(PqErrorOf(deep) == std::pair<size_t, std::string>{33, "predicate nested deeper than 32 levels"});
  std::string nots = "[";
  for (int i = 0; i < 40; ++i) nots += "not ";
  CHECK(PqErrorOf(nots + "name=a]").first == 1 + 32 * 4);
  CHECK(PqParse("[" + std::string(32, '(') + "name=a" + std::string(32, ')') + "]").ok());
  // Steps: 63 are fine, the 64th is refused where it starts.
  std::string steps;
  for (int i = 0; i < 63; ++i) steps += ". ";
  CHECK(PqParse(steps).ok());
  CHECK(PqErrorOf(steps + ".").first == 126);
  CHECK(PqErrorOf("[name=a]{40} [name=b]{30}").first == 21);  // the repetition that passes the limit
  CHECK(PqErrorOf("[name=a]{99999999999999999999}").first == 9);
  // 100 KB of anything: the length limit, at once.
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(PqErrorOf(std::string(100 * 1024, '.')).first == 65536);
  CHECK(PqErrorOf(std::string(100 * 1024, '[')).first == 65536);
  // Just under the limit: a long predicate parses in linear time, and the
  // comparison limit stops it.
  std::string ors = "[name=a";
  while (ors.size() < 60000) ors += " or name=a";
  CHECK(PqErrorOf(ors + "]").second == "the query has more than 256 comparisons");
  std::string long_name = "[name=\"" + std::string(60000, 'x') + "\"]";
  CHECK(PqParse(long_name).ok());
  CHECK(PqErrorOf("[name~\"" + std::string(60000, '(') + "\"]").first == 6);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(seconds < 2.0);
}

TEST_CASE("path query: caret lines point at the position") {
  CHECK(query::CaretLines("[nme=main]", 1) == "  [nme=main]\n   ^\n");
  CHECK(query::CaretLines("main", 4) == "  main\n      ^\n");
  CHECK(query::CaretLines("[name=\"é\" x]", 10) == "  [name=\"é\" x]\n" + std::string(2 + 9, ' ') + "^\n");  // é is one column
  CHECK(query::CaretLines("a\nb", 2) == "  a b\n    ^\n");
  const std::string long_q = std::string(100, 'a') + "X" + std::string(100, 'b');
  const std::string lines = query::CaretLines(long_q, 100);
  const size_t nl = lines.find('\n');
  const std::string first = lines.substr(0, nl), second = lines.substr(nl + 1);
  CHECK(first == "  …" + std::string(50, 'a') + "X" + std::string(24, 'b') + "…");
  CHECK(second == std::string(2 + 1 + 50, ' ') + "^\n");
}

namespace {

// A random tree for the reference comparison: names, kinds, modules and
// lines from small sets so that predicates hit and miss.
cct::Tree PqRandomTree(std::mt19937& rng, size_t nodes) {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const char* names[] = {"a", "b", "c", "ab", "main", "MPI_x", "MPI_y", "ibv_z"};
  const FrameKind kinds[] = {FrameKind::kFunction, FrameKind::kFunction, FrameKind::kFunction, FrameKind::kNvtx,
                             FrameKind::kKernel, FrameKind::kGpuOp};
  const char* modules[] = {"", "libx.so", "liby.so"};
  std::vector<NodeId> all{cct::kRootNode};
  std::vector<uint32_t> depth{0};
  while (t.size() < nodes) {
    const NodeId parent = all[std::uniform_int_distribution<size_t>(0, all.size() - 1)(rng)];
    if (depth[parent] >= 9) continue;
    const FrameKind kind = kinds[rng() % 6];
    const cct::FrameId f = t.InternFrame(kind, names[rng() % 8], kind == FrameKind::kFunction ? modules[rng() % 3] : "",
                                         "", kind == FrameKind::kFunction ? static_cast<uint32_t>(rng() % 4) * 10 : 0);
    const size_t before = t.size();
    const NodeId n = t.InternChild(parent, f);
    if (t.size() == before) continue;
    all.push_back(n);
    depth.push_back(depth[parent] + 1);
    if (rng() % 3) t.AddValue(n, cpu, static_cast<double>(rng() % 10) * 1e6);
  }
  return t;
}

// A random query from a small grammar: every step form and quantifier,
// and predicates with every field, operator and connective.
std::string PqRandomPredicate(std::mt19937& rng, int depth) {
  const int pick = static_cast<int>(rng() % (depth > 2 ? 9 : 13));
  const char* names[] = {"a", "b", "main", "MPI_x", "ab"};
  const char* regexes[] = {"^MPI_", "b$", "a", "^(a|b)$", "_"};
  const char* kinds[] = {"function", "nvtx", "kernel", "gpu"};
  const char* cmp[] = {"<", "<=", ">", ">=", "=", "!="};
  switch (pick) {
    case 0: case 1: return std::string("name=") + names[rng() % 5];
    case 2: return std::string("name~\"") + regexes[rng() % 5] + "\"";
    case 3: return std::string("name!~\"") + regexes[rng() % 5] + "\"";
    case 4: return std::string("kind=") + kinds[rng() % 4];
    case 5: return std::string("module=") + (rng() % 2 ? "libx.so" : "liby.so");
    case 6: return std::string("line") + cmp[rng() % 6] + std::to_string(rng() % 4 * 10);
    case 7: return std::string("exc(cputime)") + cmp[rng() % 4] + std::to_string(rng() % 10) + "ms";
    case 8: return std::string("inc(cputime)") + cmp[rng() % 4] + std::to_string(rng() % 30) + "%";
    case 9: return "not " + PqRandomPredicate(rng, depth + 1);
    case 10: return "(" + PqRandomPredicate(rng, depth + 1) + ")";
    case 11: return PqRandomPredicate(rng, depth + 1) + " and " + PqRandomPredicate(rng, depth + 1);
    default: return PqRandomPredicate(rng, depth + 1) + " or " + PqRandomPredicate(rng, depth + 1);
  }
}

std::string PqRandomQuery(std::mt19937& rng) {
  std::string q = rng() % 2 ? "* " : "";
  const size_t steps = 1 + rng() % 4;
  for (size_t i = 0; i < steps; ++i) {
    if (i) q += rng() % 4 ? " " : " / ";
    switch (rng() % 6) {
      case 0: q += rng() % 2 ? "." : (rng() % 2 ? "*" : "+"); break;
      case 1: q += ".{" + std::to_string(rng() % 3 + 1) + "}"; break;
      default: {
        q += "[" + PqRandomPredicate(rng, 0) + "]";
        const char* quant[] = {"", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}"};
        q += quant[rng() % 10];
      }
    }
  }
  return q;
}

}  // namespace

TEST_CASE("path query: the NFA agrees with a backtracking reference matcher (Python)") {
  std::mt19937 rng(1717);
  const cct::Tree t = PqRandomTree(rng, 400);
  testutil::TempDir dir;
  // The tree: one line per node, tab-separated: id parent kind name module
  // file line cputime_ns.
  {
    std::ofstream f(dir / "tree.tsv");
    const cct::MetricId cpu = t.metrics().Find("cputime");
    for (NodeId n = 1; n < t.size(); ++n) {
      const cct::Frame fr = t.frame(n);
      f << n << '\t' << t.parent(n) << '\t' << cct::FrameKindName(fr.kind) << '\t' << t.str(fr.name) << '\t'
        << t.str(fr.module) << '\t' << t.str(fr.file) << '\t' << fr.line << '\t' << static_cast<long long>(t.Value(n, cpu))
        << '\n';
    }
  }
  std::vector<std::string> queries;
  std::vector<std::string> expected;
  size_t nonempty = 0;
  while (queries.size() < 250) {
    const std::string q = PqRandomQuery(rng);
    auto parsed = query::PathQuery::Parse(q);
    REQUIRE_MESSAGE(parsed.ok(), q << ": " << parsed.status().message());
    auto m = query::MatchPathQuery(t, *parsed);
    REQUIRE_MESSAGE(m.ok(), q << ": " << m.status().message());
    std::string ends;
    for (NodeId n = 0; n < t.size(); ++n)
      if (m->end[n]) ends += (ends.empty() ? "" : " ") + std::to_string(n);
    nonempty += !ends.empty();
    queries.push_back(q);
    expected.push_back(ends);
  }
  // Both outcomes must be common, or the comparison says little.
  CHECK(nonempty > 60);
  CHECK(nonempty < 240);
  {
    std::ofstream f(dir / "queries.txt");
    for (const std::string& q : queries) f << q << '\n';
  }
  auto r = testutil::Run({"/usr/bin/python3", testutil::SourceDir() + "/tests/query/path_query_ref.py",
                          dir / "tree.tsv", dir / "queries.txt"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::istringstream out(r.out);
  std::string line;
  for (size_t i = 0; i < queries.size(); ++i) {
    REQUIRE(std::getline(out, line));
    CHECK_MESSAGE(line == expected[i], "query: " << queries[i] << "\n reference: " << line << "\n NFA:       "
                                                 << expected[i]);
  }
}
