// Writes the seeds of the targets whose inputs are binary and made by our
// own writers (tree sections, iterations, run files, raw GPU dumps, a
// database, a pprof export) from the small trees of seed_trees.h: run it once when a format
// changes, then commit what it wrote (tests/fuzz/README.md):
//   build-san/tests/fuzz/make_seeds tests/fuzz/corpus
// The seeds of the text formats are test fixtures, copied (README.md).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "collector/cpu/shared_rows.h"
#include "collector/gpu/gpu_raw_dump.h"
#include "exporters/exporter.h"
#include "query/profile.h"
#include "store/database.h"
#include "store/iteration_codec.h"
#include "store/run_file.h"
#include "store/trace_codec.h"
#include "tests/fuzz/section_input.h"
#include "tests/importers/hpctoolkit_sparse_writer.h"
#include "tests/fuzz/seed_trees.h"

namespace {

std::string out_dir;

void Write(const std::string& target, const std::string& name, std::string_view bytes) {
  std::filesystem::create_directories(out_dir + "/" + target);
  std::ofstream(out_dir + "/" + target + "/" + name, std::ios::binary).write(bytes.data(), bytes.size());
}

// Every frame kind, inlined frames, lines and modules, two metric kinds.
cct::Tree RichTree() {
  cct::Tree t = fuzz::IterationTree();
  const cct::MetricId ns = *t.metrics().Register({"cputime", cct::Unit::kNanoseconds, cct::MetricKind::kAdditive, "", ""});
  cct::NodeId n = t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kThread, "worker 1"));
  n = t.InternChild(n, t.InternFrame(cct::FrameKind::kFunction, "main", "/bin/app", "app.cc", 10));
  const cct::NodeId inl = t.InternChild(n, t.InternFrame(cct::FrameKind::kFunction, "inl", "/bin/app", "a.h", 3,
                                                          cct::kFrameInlined));
  t.AddValue(t.InternChild(inl, t.InternFrame(cct::FrameKind::kLine, "a.h:4", "", "a.h", 4)), ns, 1e6);
  const cct::NodeId range = t.InternChild(n, t.InternFrame(cct::FrameKind::kNvtx, "dom::step"));
  const cct::NodeId op = t.InternChild(range, t.InternFrame(cct::FrameKind::kGpuOp, "<gpu kernel>"));
  t.AddValue(t.InternChild(op, t.InternFrame(cct::FrameKind::kKernel, "gemm<float>")), ns, 2.5e6);
  t.AddValue(t.InternChild(n, t.InternFrame(cct::FrameKind::kUnknown, "<partial call path>")), ns, 7);
  t.AddValue(t.InternChild(n, t.InternFrame(cct::FrameKind::kLoop, "loop at a.cc:9")), ns, 8);
  return t;
}

store::RunIterations Iterations(const cct::Tree& t) {
  store::RunIterations its;
  its.range = "step";
  for (uint32_t i = 0; i < 3; ++i) {
    store::Iteration it;
    it.index = i;
    it.start_ns = 1000 + i;
    it.duration_ns = 50;
    it.columns.push_back({t.metrics().Find("samples"), {3, 5, 7}, {1, 2, 3.5}});
    it.columns.push_back({t.metrics().Find("bytes"), {6}, {4096}});
    its.iterations.push_back(it);
  }
  return its;
}

store::RunMeta Meta() {
  store::RunMeta m;
  m.name = "seed";
  m.state = store::RunState::kComplete;
  m.source = "cct-record";
  m.start_time_ns = 1700000000000000000;
  m.duration_ns = 1000000;
  m.exit_code = 0;
  m.command = {"./app", "--flag", "x y"};
  m.cwd = "/home/u";
  m.host = "node1";
  m.tags = {{"commit", "abc"}, {"n", "4"}};
  m.env = {{"OMP_NUM_THREADS", "4"}};
  *m.sampling = {{"clock", "cpu"}, {"freq_hz", 999}};
  m.diagnostics = {{"dropped", 1}};
  m.pid = 42;
  m.parent_run = 1;
  m.root_run = 1;
  m.compiler = {"GCC: 12"};
  m.modules = {store::ModuleInfo{"/bin/app", "abcd"}};
  m.launcher = store::LauncherRank{};
  m.launcher->rank = 3;
  m.launcher->size = 8;
  m.launcher->local_rank = 1;
  m.launcher->source = "PMIX_RANK";
  m.iteration_regex = "step";
  *m.extra = {{"k", {1, 2}}};
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seeds CORPUS_DIR\n";
    return 2;
  }
  out_dir = argv[1];
  const cct::Tree small = fuzz::IterationTree(), rich = RichTree();

  {
    const hpcsparse_fixture::Database hpc = hpcsparse_fixture::SeedDatabase();
    Write("hpctoolkit_sparse", "two-threads",
          hpcsparse_fixture::FuzzInput(hpcsparse_fixture::MetaDb(hpc), hpcsparse_fixture::ProfileDb(hpc)));
  }

  std::vector<cct::NodeId> ids;
  Write("tree_codec", "small", fuzz::SectionInput(store::EncodeTree(small)));
  Write("tree_codec", "rich", fuzz::SectionInput(store::EncodeTree(rich, &ids)));
  {
    // A chain of 6,144 nodes with values on 4,096: stored sparse (at most two
    // thirds of the nodes), decoded dense (a third or more, and at least
    // SparseColumn::kDenseFrom entries); each section under 64 KiB.
    cct::Tree chain;
    const cct::MetricId ns = *chain.metrics().Register({"cputime", cct::Unit::kNanoseconds, cct::MetricKind::kAdditive, "", ""});
    const cct::FrameId f = chain.InternFrame(cct::FrameKind::kFunction, "step");
    cct::NodeId n = cct::kRootNode;
    for (int i = 1; i < 6144; ++i) {
      n = chain.InternChild(n, f);
      if (i % 3 != 0) chain.AddValue(n, ns, i);
    }
    Write("tree_codec", "dense-decoded", fuzz::SectionInput(store::EncodeTree(chain)));
  }

  std::vector<cct::NodeId> identity(small.size());
  for (cct::NodeId n = 0; n < identity.size(); ++n) identity[n] = n;
  Write("iteration_codec", "three", store::EncodeIterations(Iterations(small), small, identity)->payload);
  Write("iteration_codec", "none", store::EncodeIterations({}, small, identity)->payload);
  {
    // Two threads' samples, an open and a closed range, a copy and a kernel
    // on two streams; and a trace whose every event was dropped.
    store::RunTrace trace;
    const int64_t t0 = 1700000000000000000;
    trace.samples.push_back({1, {t0, t0 + 1000000, t0 + 1000000, t0 + 2001000}, {2, 2, 3, 7}});
    trace.samples.push_back({4, {t0 + 500}, {5}});
    trace.ranges.push_back({1, 3, t0, t0 + 1500000});
    trace.ranges.push_back({1, 4, t0 + 10, store::kTraceOpenEnd});
    trace.gpu.push_back({0, 7, cct::GpuOpKind::kCopyIn, t0 + 20, t0 + 900, 1 << 20, 6});
    trace.gpu.push_back({0, 13, cct::GpuOpKind::kKernel, t0 + 30, t0 + 40000, 0, 7});
    trace.limit_bytes = 1 << 20;
    Write("trace_codec", "small", store::EncodeTrace(trace, small, identity)->payload);
    store::RunTrace dropped;
    dropped.limit_bytes = 4096;
    dropped.dropped = 12;
    Write("trace_codec", "dropped", store::EncodeTrace(dropped, small, identity)->payload);
    // A run file with a trace (version 2).
    store::RunFile traced;
    traced.meta = Meta();
    traced.key = "k2";
    traced.sections = *store::EncodeRun(traced.meta, &small, nullptr, &trace);
    Write("run_file", "traced.run", store::EncodeRunFile(traced));
  }

  store::RunMeta meta = Meta();
  Write("run_meta", "full.json", meta.ToJson().dump(1));
  Write("run_meta", "minimal.json", store::RunMeta{}.ToJson().dump());

  store::RunFile rf;
  rf.meta = meta;
  rf.key = "k1";
  rf.parent_key = "k0";
  rf.root_key = "k0";
  const store::RunIterations its = Iterations(small);
  rf.sections = *store::EncodeRun(rf.meta, &small, &its);
  Write("run_file", "small.run", store::EncodeRunFile(rf));

  // A database of two runs (one with iterations), as cct-record leaves it.
  const std::string scratch = out_dir + "/.seed.db";
  std::filesystem::remove(scratch);
  {
    auto db = store::Database::Open(scratch, store::Database::Mode::kWrite);
    store::RunMeta a = meta, b = meta;
    if (!db.ok() || !(*db)->CreateRun(a, &small, &its).ok() || !(*db)->CreateRun(b, &rich).ok()) {
      std::cerr << "make_seeds: cannot write the database seed\n";
      return 1;
    }
  }
  std::ifstream in(scratch, std::ios::binary);
  Write("database", "two-runs.mdb", std::string(std::istreambuf_iterator<char>(in), {}));
  std::filesystem::remove(scratch);
  std::filesystem::remove(scratch + "-lock");

  // A raw GPU dump: every record type.
  const std::string raw = out_dir + "/.seed.cctraw";
  {
    auto w = collector::RawDumpWriter::Create(raw, 42, meta.ToJson().dump());
    if (!w.ok()) return 1;
    const collector::RawCorrelation corr[] = {{7, 1, 0, 0}, {8, 2, 1, collector::kNoIteration}};
    (*w)->Correlations(corr);
    collector::GpuActivity api;
    api.kind = collector::GpuActivityKind::kMemoryApi;
    api.correlation_id = 8;
    api.start_ns = 10;
    api.end_ns = 20;
    (*w)->Batch(nullptr, 0, std::span<const collector::GpuActivity>(&api, 1), 3);
    collector::GpuPcSample pc;
    pc.correlation_id = 7;
    pc.function_name = "gemm<float>";
    pc.file = "gemm.cu";
    pc.line = 12;
    pc.samples = 5;
    pc.stall[0] = 5;
    (*w)->PcSamples(std::span<const collector::GpuPcSample>(&pc, 1));
    const collector::RawSiteNode sites[] = {{1, 3}, {2, 5}};
    (*w)->Snapshot(small, meta.ToJson().dump(), sites, &its);
    if (!(*w)->status().ok()) return 1;
  }
  std::ifstream rin(raw, std::ios::binary);
  Write("cupti_raw", "all-records.cctraw", std::string(std::istreambuf_iterator<char>(rin), {}));
  std::filesystem::remove(raw);

  // pprof: the rich tree through cct-query's export (gzipped), and its
  // executable's mapping named as a recorded run names it.
  {
    query::Profile profile;
    profile.tree = rich;
    profile.runs.push_back(Meta());
    std::ostringstream pprof;
    if (!exporters::WritePprof(profile, {}, pprof, nullptr).ok()) return 1;
    Write("pprof", "rich.pb.gz", pprof.str());
  }
  // The shared row table's header after its file's size (u64 LE): the size
  // cct-record makes, and a file one entry short of its header's count.
  for (const auto& [name, entries, size] :
       {std::tuple{"default", collector::kSharedRowsEntries, collector::SharedRowsBytes(collector::kSharedRowsEntries)},
        std::tuple{"short-file", size_t{64}, collector::SharedRowsBytes(63)}}) {
    std::string input(8, '\0');
    for (int i = 0; i < 8; ++i) input[i] = static_cast<char>(static_cast<uint64_t>(size) >> (8 * i));
    Write("shared_rows", name, input + collector::EncodeSharedRowsHeader(entries));
  }
  return 0;
}
