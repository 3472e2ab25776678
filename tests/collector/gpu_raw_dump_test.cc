// Raw GPU dumps (collector/gpu/gpu_raw_dump.h): a dump written by RawDumpWriter
// the way the collector runtime writes one — correlations, batches whose
// bytes are CUPTI records built from CUPTI's own structs (kernel name
// pointers scrambled, as they are in a dump read by another process), PC
// samples, snapshots of a hand-built tree — is replayed, and every GPU
// metric is checked against values computed by hand from the records.
// Then damaged dumps (torn tail, flipped bytes, foreign files, another
// version) and `cct-import --from cupti-raw`.
#include <cupti.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <zlib.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "cct/tree.h"
#include "cct/tree_ops.h"
#include "collector/gpu/cupti/cupti_decode.h"
#include "collector/gpu/gpu_nodes.h"
#include "collector/gpu/gpu_raw_dump.h"
#include "collector/cpu/symbolizer.h"
#include "store/database.h"
#include "tests/test_util.h"
#include "tests/collector/cupti_records.h"

using namespace collector;
using cct::FrameKind;
using cct::GpuOpKind;
using cct::NodeId;
using testutil::ReadFileOrDie;
using testutil::TempDir;
using testutil::WriteFileOrDie;

using namespace cupti_records;

namespace {

GpuActivity MemoryApi(uint32_t corr, uint64_t start, uint64_t end) {
  GpuActivity a;
  a.kind = GpuActivityKind::kMemoryApi;
  a.correlation_id = corr;
  a.start_ns = start;
  a.end_ns = end;
  return a;
}

GpuPcSample Pc(uint32_t corr, std::string_view function, std::string_view file, uint32_t line, StallSlot slot,
               uint64_t n) {
  GpuPcSample s;
  s.correlation_id = corr;
  s.function_name = function;
  s.file = file;
  s.line = line;
  s.samples = n;
  s.stall[static_cast<int>(slot)] = n;
  s.pc_offset = 0x100 + line;
  return s;
}


// The child of `parent` of that kind and name (kNoNode when absent).
NodeId Child(const cct::Tree& t, NodeId parent, FrameKind kind, std::string_view name) {
  for (NodeId n = 1; n < t.size(); ++n)
    if (t.parent(n) == parent && t.kind(n) == kind && t.name(n) == name) return n;
  return cct::kNoNode;
}
size_t Children(const cct::Tree& t, NodeId parent) {
  size_t c = 0;
  for (NodeId n = 1; n < t.size(); ++n) c += t.parent(n) == parent;
  return c;
}
double V(const cct::Tree& t, NodeId n, std::string_view metric) {
  REQUIRE(n != cct::kNoNode);
  const cct::MetricId m = t.metrics().Find(metric);
  return m == cct::kNoMetric ? 0 : t.Value(n, m);
}
double Total(const cct::Tree& t, std::string_view metric) {
  const cct::MetricId m = t.metrics().Find(metric);
  if (m == cct::kNoMetric) return 0;
  double sum = 0;
  for (NodeId n = 0; n < t.size(); ++n) sum += t.Value(n, m);
  return sum;
}

// The CPU side of the recorded run: a thread, main → step with the launch
// sites of the test's operations, main → cudaGraphLaunch with a graph
// launch. Site nodes by the runtime's handles.
struct SampleTree {
  cct::Tree tree;
  NodeId step = 0, kernel_site = 0, copyin = 0, copyout = 0, memset = 0, sync = 0, alloc = 0, gemm_site = 0,
         graph_site = 0;
  std::vector<RawSiteNode> sites;
};

SampleTree BuildTree(bool with_graph) {
  SampleTree s;
  cct::Tree& t = s.tree;
  const NodeId thread = t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kThread, "main"));
  const NodeId main = t.InternChild(thread, t.InternFrame(FrameKind::kFunction, "main", "app", "app.cc", 10));
  s.step = t.InternChild(main, t.InternFrame(FrameKind::kFunction, "step", "app", "app.cc", 20));
  const cct::MetricId cputime = *t.metrics().RegisterStandard("cputime");
  t.AddValue(s.step, cputime, 5e6);
  // Nodes are made in preorder, so the replay's (stored, preorder) ids are these.
  s.kernel_site = GpuPlaceholderNode(t, s.step, GpuOpKind::kKernel);
  // A launch that named its kernel: the site is the kernel node.
  s.gemm_site = GpuKernelNode(t, s.kernel_site, Demangle(kMangledGemm));
  s.copyin = GpuPlaceholderNode(t, s.step, GpuOpKind::kCopyIn);
  s.copyout = GpuPlaceholderNode(t, s.step, GpuOpKind::kCopyOut);
  s.memset = GpuPlaceholderNode(t, s.step, GpuOpKind::kMemset);
  s.sync = GpuPlaceholderNode(t, s.step, GpuOpKind::kSync);
  s.alloc = GpuPlaceholderNode(t, s.step, GpuOpKind::kAlloc);
  s.sites = {{101, s.kernel_site}, {102, s.copyin}, {104, s.gemm_site}, {105, s.copyout},
             {106, s.memset},      {107, s.sync},   {108, s.alloc}};
  if (with_graph) {
    const NodeId launch = t.InternChild(main, t.InternFrame(FrameKind::kFunction, "cudaGraphLaunch"));
    s.graph_site = GpuPlaceholderNode(t, launch, GpuOpKind::kKernel);
    s.sites.push_back({103, s.graph_site});
  }
  return s;
}

std::string RunMetaJson(const std::string& name) {
  return nlohmann::json{{"name", name},
                        {"state", "recording"},
                        {"source", "cct-record"},
                        {"command", {"./train", "--steps", "2"}},
                        {"tags", {{"model", "mlp"}}},
                        {"pid", 4242},
                        {"diagnostics", {{"partial_unwinds", 2}}}}
      .dump();
}

// Writes the test's dump as the runtime would: correlations before the
// batches that need them, each batch the adapter's delivery (decoded
// activities, then the kMemoryApi timings), a snapshot after the first
// batch and one at the end (the one that counts).
void WriteSampleDump(const std::string& path) {
  auto created = RawDumpWriter::Create(path, 4242, R"({"pid":4242})");
  REQUIRE(created.ok());
  RawDumpWriter& w = **created;
  cupti::ActivityDecoder adapter;  // the recording process's decoder
  const auto deliver = [&](const RecordBuffer* b, std::vector<GpuActivity> api, uint64_t dropped) {
    std::vector<GpuActivity> all;
    std::vector<uint8_t> bytes;
    if (b) {
      adapter.DecodeBuffer(b->data(), b->size(), all);
      bytes = b->Scrambled();
    }
    all.insert(all.end(), api.begin(), api.end());
    w.Batch(b ? bytes.data() : nullptr, bytes.size(), all, dropped);
  };
  const uint8_t kernel = static_cast<uint8_t>(GpuOpKind::kKernel);

  const RawCorrelation first[] = {{1, 101, kernel}, {2, 101, kernel}, {5, 102, uint8_t(GpuOpKind::kCopyIn)}};
  w.Correlations(first);
  RecordBuffer b1;
  b1.Add(Device(0, 9, 0));
  b1.Add(Kernel(1, kMangledSaxpy, 1000, 4000, 120, 1, 1, 256, 1, 1, 32));
  b1.Add(Kernel(2, kMangledSaxpy, 5000, 5500, 60, 1, 1, 128, 1, 1, 32));
  b1.Add(Memcpy(5, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, 6000, 8000));
  deliver(&b1, {}, 0);

  const std::string saxpy = Demangle(kMangledSaxpy), gemm = Demangle(kMangledGemm);
  const GpuPcSample pc1[] = {Pc(1, saxpy, "/src/kern/saxpy.cu", 12, StallSlot::kNone, 4),
                             Pc(1, saxpy, "/src/kern/saxpy.cu", 12, StallSlot::kGmem, 6),
                             Pc(2, saxpy, "/src/kern/saxpy.cu", 12, StallSlot::kIdep, 5),
                             Pc(1, saxpy, "/src/kern/saxpy.cu", 13, StallSlot::kNone, 3)};
  w.PcSamples(pc1);

  {
    SampleTree early = BuildTree(/*with_graph=*/false);
    w.Snapshot(early.tree, RunMetaJson("early"), early.sites);
  }

  const RawCorrelation second[] = {{3, 103, kernel},
                                   {4, 104, kernel},
                                   {6, 105, uint8_t(GpuOpKind::kCopyOut)},
                                   {7, 106, uint8_t(GpuOpKind::kMemset)},
                                   {8, 107, uint8_t(GpuOpKind::kSync)},
                                   {9, 108, uint8_t(GpuOpKind::kAlloc)},
                                   {10, 999, kernel}};  // a handle without a node in the snapshot
  w.Correlations(second);
  RecordBuffer b2;
  b2.Add(Kernel(3, kMangledGemm, 10000, 10900, 64, 64, 1, 128, 1, 1, 64));  // two kernels of one graph launch
  b2.Add(Kernel(3, kMangledSaxpy, 11000, 11200, 10, 1, 1, 256, 1, 1, 32));
  b2.Add(Kernel(4, kMangledGemm, 12000, 14000, 32, 32, 1, 128, 1, 1, 64));
  b2.Add(Memcpy(6, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 4096, 15000, 15300));
  b2.Add(Memset(7, 65536, 16000, 16100));
  b2.Add(Sync(8, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 17000, 17700));
  b2.Add(Memory(9, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 18000));
  b2.Add(Kernel(10, kMangledSaxpy, 19000, 19111, 1, 1, 1, 32, 1, 1, 16));
  b2.Add(Memcpy(77, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 10, 20000, 20040));  // never launched
  b2.Add(RuntimeApi(11));
  deliver(&b2, {MemoryApi(9, 17750, 18000)}, 3);

  const GpuPcSample pc2[] = {Pc(3, gemm, "/src/kern/gemm.cu", 40, StallSlot::kPipe, 7),
                             Pc(4, gemm, "/src/kern/gemm.cu", 41, StallSlot::kNone, 2),
                             Pc(555, saxpy, "x.cu", 9, StallSlot::kOthr, 1)};
  w.PcSamples(pc2);
  deliver(nullptr, {MemoryApi(9, 18100, 18150)}, 2);  // adapter timings after the last buffer

  SampleTree last = BuildTree(/*with_graph=*/true);
  w.Snapshot(last.tree, RunMetaJson("train"), last.sites);
  CHECK(w.status().ok());
  CHECK(w.bytes_written() == std::filesystem::file_size(path));
}

// Checks the replay of the complete sample dump against the hand-computed
// values.
void CheckSampleReplay(const RawReplay& r) {
  const cct::Tree& t = r.tree;
  const SampleTree ref = BuildTree(true);  // same construction order: same preorder ids
  const std::string saxpy = Demangle(kMangledSaxpy), gemm = Demangle(kMangledGemm);
  REQUIRE(t.name(ref.step) == "step");
  CHECK(V(t, ref.step, "cputime") == 5e6);  // the snapshot's CPU metrics are kept

  // <gpu kernel> under step: the saxpy launches (1: 3000 ns, 2: 500 ns).
  const NodeId k = Child(t, ref.kernel_site, FrameKind::kKernel, saxpy);
  REQUIRE(k != cct::kNoNode);
  CHECK(V(t, k, "gker") == 3500);
  CHECK(V(t, k, "gker:count") == 2);
  CHECK(V(t, k, "gker:blk_thr_acc") == 256 + 128);
  CHECK(V(t, k, "gker:blks_acc") == 120 + 60);
  CHECK(V(t, k, "gker:thr_reg_acc") == 64);
  CHECK(V(t, k, "gker:occ_acc") > 0);  // the device record came first
  CHECK(V(t, ref.kernel_site, "gker") == 0);
  // Its lines: saxpy.cu:12 (4 + 6 + 5 samples), saxpy.cu:13 (3, not stalled).
  const NodeId l12 = Child(t, k, FrameKind::kLine, "saxpy.cu:12");
  const NodeId l13 = Child(t, k, FrameKind::kLine, "saxpy.cu:13");
  REQUIRE(l12 != cct::kNoNode);
  REQUIRE(l13 != cct::kNoNode);
  CHECK(t.str(t.frames().Get(t.frame_id(l12)).file) == "/src/kern/saxpy.cu");
  CHECK(t.frames().Get(t.frame_id(l12)).line == 12);
  CHECK(V(t, l12, "gins") == 15);
  CHECK(V(t, l12, "gins:stl_none") == 4);
  CHECK(V(t, l12, "gins:stl_gmem") == 6);
  CHECK(V(t, l12, "gins:stl_idep") == 5);
  CHECK(V(t, l12, "gins:stl_any") == 11);
  CHECK(V(t, l13, "gins") == 3);
  CHECK(V(t, l13, "gins:stl_any") == 0);
  CHECK(V(t, k, "gins") == 0);

  // The graph launch: a kernel child per kernel the graph ran.
  const NodeId g_gemm = Child(t, ref.graph_site, FrameKind::kKernel, gemm);
  const NodeId g_saxpy = Child(t, ref.graph_site, FrameKind::kKernel, saxpy);
  REQUIRE(g_gemm != cct::kNoNode);
  REQUIRE(g_saxpy != cct::kNoNode);
  CHECK(V(t, g_gemm, "gker") == 900);
  CHECK(V(t, g_gemm, "gker:blks_acc") == 64 * 64);
  CHECK(V(t, g_saxpy, "gker") == 200);
  CHECK(V(t, g_saxpy, "gker:count") == 1);
  CHECK(V(t, Child(t, g_gemm, FrameKind::kLine, "gemm.cu:40"), "gins:stl_pipe") == 7);

  // The launch that named gemm: its site is the kernel node, no child.
  CHECK(V(t, ref.gemm_site, "gker") == 2000);
  CHECK(V(t, ref.gemm_site, "gker:count") == 1);
  CHECK(Child(t, ref.gemm_site, FrameKind::kKernel, gemm) == cct::kNoNode);
  CHECK(V(t, Child(t, ref.gemm_site, FrameKind::kLine, "gemm.cu:41"), "gins") == 2);

  CHECK(V(t, ref.copyin, "gxcopy") == 2000);
  CHECK(V(t, ref.copyin, "gxcopy:h2d") == 1 << 20);
  CHECK(V(t, ref.copyin, "gxcopy:count") == 1);
  CHECK(V(t, ref.copyout, "gxcopy") == 300);
  CHECK(V(t, ref.copyout, "gxcopy:d2h") == 4096);
  CHECK(V(t, ref.memset, "gmset") == 100);
  CHECK(V(t, ref.memset, "gmset:bytes") == 65536);
  CHECK(V(t, ref.memset, "gmset:count") == 1);
  CHECK(V(t, ref.sync, "gsync") == 700);
  CHECK(V(t, ref.sync, "gsync:str") == 700);
  CHECK(V(t, ref.sync, "gsync:count") == 1);
  CHECK(V(t, ref.alloc, "gmem") == 250 + 50);
  CHECK(V(t, ref.alloc, "gmem:dev") == 1 << 20);
  CHECK(V(t, ref.alloc, "gmem:count") == 1);

  // <gpu unknown> under the root: the copy nobody launched, the kernel of
  // a handle without a node, the PC sample of an unknown launch.
  const NodeId unknown = Child(t, cct::kRootNode, FrameKind::kGpuOp, "<gpu unknown>");
  REQUIRE(unknown != cct::kNoNode);
  CHECK(V(t, unknown, "gxcopy") == 40);
  CHECK(V(t, unknown, "gxcopy:h2d") == 10);
  CHECK(V(t, Child(t, unknown, FrameKind::kKernel, saxpy), "gker") == 111);
  CHECK(V(t, Child(t, unknown, FrameKind::kLine, "x.cu:9"), "gins:stl_othr") == 1);
  CHECK(Children(t, unknown) == 2);

  CHECK(Total(t, "gker") == 3500 + 900 + 200 + 2000 + 111);
  CHECK(Total(t, "gker:count") == 6);
  CHECK(Total(t, "gxcopy:h2d") == (1 << 20) + 10);
  CHECK(Total(t, "gins") == 15 + 3 + 7 + 2 + 1);
  CHECK(t.metrics().Find("gpuop") != cct::kNoMetric);
  // Nothing else was made: the snapshot's nodes, 3 kernel children, 4
  // lines, <gpu unknown> and its 2 children (a kernel, a line).
  CHECK(t.size() == ref.tree.size() + 3 + 4 + 1 + 2);

  CHECK(r.batches == 3);
  CHECK(r.records == 4 + 10);
  CHECK(r.activities == 14);
  CHECK(r.pc_samples == 4 + 6 + 5 + 3 + 7 + 2 + 1);
  CHECK(r.dropped == 5);
  CHECK(r.unknown == 1);
  CHECK(r.snapshots == 2);
}

// Appends a framed record as RawDumpWriter frames it (for hand-made dumps).
std::string Frame(uint8_t type, const std::string& payload) {
  std::string h(16, '\0');
  const auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) h[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  h[0] = static_cast<char>(type);
  put32(4, static_cast<uint32_t>(payload.size()));
  put32(8, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(payload.data()), payload.size())));
  put32(12, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(h.data()), 12)));
  return h + payload;
}

std::vector<RawRecord> Records(const std::string& path) {
  auto r = RawDumpReader::Open(path);
  REQUIRE(r.ok());
  std::vector<RawRecord> out;
  RawRecord rec;
  for (;;) {
    auto more = (*r)->Next(&rec);
    REQUIRE(more.ok());
    if (!*more) break;
    out.push_back(rec);
  }
  return out;
}

// A dump of a run cut into iterations: two ended (CPU time on `step` in
// each), launches in them, outside them, in the still open third one, and
// one with an index beyond any iteration (a damaged or hand-made dump: it
// must count in the run only, not allocate 2^32 iterations). Returns the
// CPU tree it was written with.
SampleTree WriteIterationDump(const std::string& path) {
  SampleTree s = BuildTree(/*with_graph=*/false);
  const cct::MetricId cputime = s.tree.metrics().Find("cputime");
  store::RunIterations its;
  its.range = "^step$";
  for (uint32_t k = 0; k < 2; ++k) {
    store::Iteration it;
    it.index = k;
    it.start_ns = 1000000 * (k + 1);
    it.duration_ns = 500000;
    it.columns.push_back(store::IterationColumn{cputime, {s.step}, {1e6 * (k + 1)}});
    its.iterations.push_back(it);
  }
  {
    auto created = RawDumpWriter::Create(path, 7, R"({"pid":7})");
    REQUIRE(created.ok());
    RawDumpWriter& w = **created;
    const uint8_t kernel = static_cast<uint8_t>(GpuOpKind::kKernel);
    // Launches 1 (iteration 0), 2 and 3 (iteration 1), 4 (outside), 5 (the
    // open iteration 2), a copy in iteration 1.
    // Launch 7: an index beyond any iteration.
    const RawCorrelation cs[] = {{1, 101, kernel, 0},          {2, 101, kernel, 1}, {3, 101, kernel, 1},
                                 {4, 101, kernel},             {5, 101, kernel, 2}, {6, 102, uint8_t(GpuOpKind::kCopyIn), 1},
                                 {7, 101, kernel, 0xFFFFFFF0u}};
    w.Correlations(cs);
    RecordBuffer b;
    b.Add(Device(0, 9, 0));
    b.Add(Kernel(1, kMangledSaxpy, 1000, 1100, 10, 1, 1, 256, 1, 1, 32));
    b.Add(Kernel(2, kMangledSaxpy, 2000, 2200, 20, 1, 1, 256, 1, 1, 32));
    b.Add(Kernel(3, kMangledSaxpy, 3000, 3300, 30, 1, 1, 256, 1, 1, 32));
    b.Add(Kernel(4, kMangledSaxpy, 4000, 4400, 40, 1, 1, 256, 1, 1, 32));
    b.Add(Kernel(5, kMangledSaxpy, 5000, 5500, 50, 1, 1, 256, 1, 1, 32));
    b.Add(Memcpy(6, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 6000, 6060));
    b.Add(Kernel(7, kMangledSaxpy, 7000, 7700, 70, 1, 1, 256, 1, 1, 32));
    cupti::ActivityDecoder adapter;
    std::vector<GpuActivity> all;
    adapter.DecodeBuffer(b.data(), b.size(), all);
    const std::vector<uint8_t> bytes = b.Scrambled();
    w.Batch(bytes.data(), bytes.size(), all, 0);
    w.Snapshot(s.tree, RunMetaJson("steps"), s.sites, &its);
    REQUIRE(w.status().ok());
  }
  return s;
}

}  // namespace

TEST_CASE("gpu raw dump: gpu_nodes places kernels, lines and unknown activity") {
  cct::Tree t;
  const NodeId site = GpuPlaceholderNode(t, cct::kRootNode, GpuOpKind::kCopyIn);
  CHECK(t.name(site) == "<gpu copyin>");
  CHECK(t.kind(site) == FrameKind::kGpuOp);
  const NodeId k = GpuKernelNode(t, site, "k(int)");
  CHECK(GpuKernelNode(t, site, "k(int)") == k);
  CHECK(t.kind(k) == FrameKind::kKernel);
  const NodeId l = GpuLineNode(t, k, "/a/b/kern.cu", 7);
  CHECK(t.name(l) == "kern.cu:7");
  CHECK(t.kind(l) == FrameKind::kLine);
  CHECK(t.frames().Get(t.frame_id(l)).line == 7);
  CHECK(t.str(t.frames().Get(t.frame_id(l)).file) == "/a/b/kern.cu");
  CHECK(cct::LineName("plain.cu", 3) == "plain.cu:3");
  // A site that is the launch's own kernel node.
  CHECK(GpuSiteKernelNode(t, k, "k(int)") == k);
  const NodeId other = GpuSiteKernelNode(t, k, "j(float)");
  CHECK(t.parent(other) == site);
  CHECK(t.name(other) == "j(float)");
  CHECK(GpuSiteKernelNode(t, site, "k(int)") == k);
  const NodeId u = GpuUnknownNode(t);
  CHECK(t.parent(u) == cct::kRootNode);
  CHECK(t.name(u) == "<gpu unknown>");
  CHECK(GpuUnknownNode(t) == u);
  CHECK(t.parent(GpuSiteKernelNode(t, u, "k(int)")) == u);
}

TEST_CASE("gpu raw dump: activities round-trip through the fixed layout") {
  GpuActivity a;
  a.kind = GpuActivityKind::kKernel;
  a.copy = CopyDirection::kP2P;
  a.memory_kind = GpuMemoryKind::kManagedStatic;
  a.memory_op = MemoryOp::kFree;
  a.sync = SyncKind::kContext;
  a.external_kind = 3;
  a.registers_per_thread = 255;
  a.correlation_id = 0xfffffff0;
  a.device_id = 2, a.peer_device_id = 3, a.stream_id = 4, a.graph_id = 5;
  a.graph_node_id = uint64_t{1} << 40;
  a.start_ns = 11, a.end_ns = uint64_t{1} << 62, a.bytes = 12345678901ull, a.external_id = 77;
  a.grid_x = 1, a.grid_y = 2, a.grid_z = 3, a.block_x = 4, a.block_y = 5, a.block_z = 6;
  a.static_shared_bytes = 7, a.dynamic_shared_bytes = 8, a.local_bytes_per_thread = 9, a.shared_config_bytes = 10;
  a.device = {9, 0, 132, 64, 32, 65536, 233472, 49152, 1024};
  store::ByteWriter writer;
  AppendRawActivity(writer, a, 42);
  std::string bytes = writer.Take();
  REQUIRE(bytes.size() == kRawActivitySize);
  CHECK(static_cast<uint8_t>(bytes[28]) == 42);  // little-endian name id at offset 28
  GpuActivity b;
  uint32_t id = 0;
  REQUIRE(ReadRawActivity(bytes.data(), &b, &id));
  CHECK(id == 42);
  CHECK(b.kind == a.kind);
  CHECK(b.copy == a.copy);
  CHECK(b.memory_kind == a.memory_kind);
  CHECK(b.memory_op == a.memory_op);
  CHECK(b.sync == a.sync);
  CHECK(b.external_kind == 3);
  CHECK(b.registers_per_thread == 255);
  CHECK(b.correlation_id == a.correlation_id);
  CHECK(b.peer_device_id == 3);
  CHECK(b.graph_id == 5);
  CHECK(b.graph_node_id == a.graph_node_id);
  CHECK(b.end_ns == a.end_ns);
  CHECK(b.bytes == a.bytes);
  CHECK(b.external_id == 77);
  CHECK(b.grid_z == 3);
  CHECK(b.block_z == 6);
  CHECK(b.shared_config_bytes == 10);
  CHECK(b.device.max_threads_per_block == 1024);
  CHECK(b.device.smem_per_sm == 233472);
  bytes[1] = 9;  // no such copy direction
  CHECK_FALSE(ReadRawActivity(bytes.data(), &b, &id));
}

TEST_CASE("gpu raw dump: replay rebuilds the run, metric by metric") {
  TempDir dir;
  const std::string path = dir / "gpu-4242.cctraw";
  WriteSampleDump(path);

  // The framing: header (checked by Open), then the records in write order.
  const auto records = Records(path);
  std::vector<int> types;
  for (const RawRecord& r : records) types.push_back(r.type);
  CHECK(types == std::vector<int>{2, 3, 4, 5, 2, 3, 4, 3, 5});

  auto replay = ReplayRawDump(path);
  REQUIRE_MESSAGE(replay.ok(), replay.status().message());
  CHECK_FALSE(replay->truncated);
  CheckSampleReplay(*replay);

  const auto meta = nlohmann::json::parse(replay->meta_json);
  CHECK(meta["name"] == "train");  // the last snapshot's
  CHECK(meta["tags"]["model"] == "mlp");
  CHECK(meta["node_count"] == replay->tree.size());
  const auto& d = meta["diagnostics"];
  CHECK(d["partial_unwinds"] == 2);  // the recording's own
  CHECK(d["gpu_raw_batches"] == 3);
  CHECK(d["gpu_records"] == 14);
  CHECK(d["gpu_skipped_records"] == 1);
  CHECK(d["gpu_dropped_records"] == 5);
  CHECK(d["gpu_unknown_activities"] == 1);
  CHECK(d["gpu_pc_samples"] == 28);
  CHECK(d["gpu_pc_samples_unknown"] == 1);
  CHECK(d["gpu_raw_sites_without_node"] == 1);
  CHECK_FALSE(d.contains("gpu_raw_unnamed_kernels"));
  CHECK_FALSE(d.contains("gpu_raw_truncated"));
  CHECK_FALSE(d.contains("gpu_kernels_without_device"));

  // Replaying twice gives the same tree.
  auto again = ReplayRawDump(path);
  REQUIRE(again.ok());
  CHECK(again->tree.size() == replay->tree.size());
  CHECK(Total(again->tree, "gker:occ_acc") == Total(replay->tree, "gker:occ_acc"));
}

TEST_CASE("gpu raw dump: a batch written with the kMemoryApi activities only replays its kernels without names") {
  TempDir dir;
  const std::string path = dir / "api-only.cctraw";
  {
    auto w = RawDumpWriter::Create(path, 1, "{}");
    REQUIRE(w.ok());
    const RawCorrelation c[] = {{1, 7, static_cast<uint8_t>(GpuOpKind::kKernel)}};
    (*w)->Correlations(c);
    RecordBuffer b;
    b.Add(Kernel(1, kMangledSaxpy, 0, 100, 1, 1, 1, 32, 1, 1, 8));
    const GpuActivity api[] = {MemoryApi(1, 0, 10)};
    const auto bytes = b.Scrambled();
    (*w)->Batch(bytes.data(), bytes.size(), api, 0);
    SampleTree s = BuildTree(false);
    const RawSiteNode sites[] = {{7, s.kernel_site}};
    (*w)->Snapshot(s.tree, RunMetaJson("api-only"), sites);
  }
  auto r = ReplayRawDump(path);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const SampleTree ref = BuildTree(false);
  CHECK(V(r->tree, ref.kernel_site, "gker") == 100);  // on the site: no name, no kernel child
  CHECK(V(r->tree, ref.kernel_site, "gmem") == 10);
  CHECK(nlohmann::json::parse(r->meta_json)["diagnostics"]["gpu_raw_unnamed_kernels"] == 1);
}

TEST_CASE("gpu raw dump: a torn last record is ignored, everything before it replays") {
  TempDir dir;
  const std::string path = dir / "full.cctraw";
  WriteSampleDump(path);
  const std::string full = ReadFileOrDie(path);
  const auto records = Records(path);
  const RawRecord& batch3 = records[7];
  REQUIRE(batch3.type == 3);

  SUBCASE("a record cut inside its payload after the complete dump") {
    const std::string torn = dir / "torn.cctraw";
    WriteFileOrDie(torn, full + full.substr(batch3.offset, 30));
    auto r = ReplayRawDump(torn);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    CHECK(r->truncated);
    CheckSampleReplay(*r);
    CHECK(nlohmann::json::parse(r->meta_json)["diagnostics"]["gpu_raw_truncated"] == 1);
  }
  SUBCASE("a record cut inside its 16-byte header") {
    const std::string torn = dir / "torn.cctraw";
    WriteFileOrDie(torn, full + full.substr(batch3.offset, 9));
    auto r = ReplayRawDump(torn);
    REQUIRE(r.ok());
    CHECK(r->truncated);
    CheckSampleReplay(*r);
  }
  SUBCASE("zeros where an append did not finish") {
    const std::string torn = dir / "torn.cctraw";
    WriteFileOrDie(torn, full + std::string(100, '\0'));
    auto r = ReplayRawDump(torn);
    REQUIRE(r.ok());
    CHECK(r->truncated);
    CheckSampleReplay(*r);
  }
  SUBCASE("the file cut inside the last snapshot: the earlier snapshot is the tree") {
    const std::string torn = dir / "torn.cctraw";
    WriteFileOrDie(torn, full.substr(0, full.size() - 7));
    auto r = ReplayRawDump(torn);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    CHECK(r->truncated);
    CHECK(r->snapshots == 1);
    CHECK(nlohmann::json::parse(r->meta_json)["name"] == "early");
    // Every batch still counts; the graph site (not in the early snapshot)
    // sends its kernels to <gpu unknown>.
    CHECK(r->batches == 3);
    CHECK(Total(r->tree, "gker") == 3500 + 900 + 200 + 2000 + 111);
    const SampleTree ref = BuildTree(false);
    CHECK(V(r->tree, Child(r->tree, ref.kernel_site, FrameKind::kKernel, Demangle(kMangledSaxpy)), "gker") == 3500);
    const NodeId unknown = Child(r->tree, cct::kRootNode, FrameKind::kGpuOp, "<gpu unknown>");
    CHECK(V(r->tree, Child(r->tree, unknown, FrameKind::kKernel, Demangle(kMangledGemm)), "gker") == 900);
  }
}

TEST_CASE("gpu raw dump: a format-1 dump (correlations without iterations) still replays") {
  // The sample dump rewritten as format 1 wrote it: the header's version
  // 1, correlation entries of 9 bytes (id, handle, kind); every other
  // record as it is.
  TempDir dir;
  const std::string path = dir / "v2.cctraw";
  WriteSampleDump(path);
  std::string v1;
  auto v2 = RawDumpReader::Open(path);
  REQUIRE(v2.ok());
  {
    store::ByteWriter header;  // as the format-1 writer wrote it
    header.Bytes(kRawDumpMagic);
    header.U32(1);
    header.U32(4242);
    header.String(R"({"pid":4242})");
    v1 += Frame(static_cast<uint8_t>(RawRecordType::kHeader), header.Take());
  }
  RawRecord rec;
  for (;;) {
    auto more = (*v2)->Next(&rec);
    REQUIRE(more.ok());
    if (!*more) break;
    std::string payload(rec.payload);
    if (rec.type == static_cast<uint8_t>(RawRecordType::kCorrelations)) {
      std::vector<RawCorrelation> cs;
      REQUIRE(ParseRawCorrelations(payload, 2, &cs).ok());
      store::ByteWriter w;
      w.U32(static_cast<uint32_t>(cs.size()));
      for (const RawCorrelation& c : cs) {
        CHECK(c.iteration == kNoIteration);
        w.U32(c.correlation_id);
        w.U32(c.handle);
        w.U8(c.kind);
      }
      payload = w.Take();
    }
    v1 += Frame(rec.type, payload);
  }
  const std::string old = dir / "v1.cctraw";
  WriteFileOrDie(old, v1);
  auto reader = RawDumpReader::Open(old);
  REQUIRE(reader.ok());
  CHECK((*reader)->format_version() == 1);
  auto r = ReplayRawDump(old);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CheckSampleReplay(*r);
  // A format-1 correlation entry read as format 2 is 4 bytes short.
  std::vector<RawCorrelation> cs;
  CHECK_FALSE(ParseRawCorrelations(std::string("\x01\0\0\0\x07\0\0\0\x09\0\0\0\x01", 13), 2, &cs).ok());
  REQUIRE(ParseRawCorrelations(std::string("\x01\0\0\0\x07\0\0\0\x09\0\0\0\x01", 13), 1, &cs).ok());
  CHECK(cs.back().handle == 9);
  CHECK(cs.back().iteration == kNoIteration);
}

TEST_CASE("gpu raw dump: iterations replay with their CPU values and the GPU work launched in them") {
  TempDir dir;
  const std::string path = dir / "gpu-7.cctraw";
  const SampleTree s = WriteIterationDump(path);
  auto r = ReplayRawDump(path);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;
  REQUIRE(r->iterations.iterations.size() == 2);
  CHECK(r->iterations.range == "^step$");
  const NodeId k = Child(t, s.kernel_site, FrameKind::kKernel, Demangle(kMangledSaxpy));
  REQUIRE(k != cct::kNoNode);
  CHECK(V(t, k, "gker:count") == 6);  // the run: every launch
  const auto value = [&](size_t it, std::string_view metric, NodeId node) {
    const cct::MetricId m = t.metrics().Find(metric);
    double v = 0;
    for (const store::IterationColumn& c : r->iterations.iterations[it].columns)
      for (size_t i = 0; c.metric == m && i < c.nodes.size(); ++i)
        if (c.nodes[i] == node) v += c.values[i];
    return v;
  };
  CHECK(r->iterations.iterations[1].start_ns == 2000000);
  CHECK(value(0, "cputime", s.step) == 1e6);
  CHECK(value(1, "cputime", s.step) == 2e6);
  CHECK(value(0, "gker", k) == 100);
  CHECK(value(0, "gker:count", k) == 1);
  CHECK(value(0, "gker:blks_acc", k) == 10);
  CHECK(value(1, "gker", k) == 200 + 300);
  CHECK(value(1, "gker:count", k) == 2);
  CHECK(value(1, "gker:blks_acc", k) == 50);
  CHECK(value(1, "gxcopy:h2d", s.copyin) == 4096);
  CHECK(value(1, "gxcopy", s.copyin) == 60);
  CHECK(value(0, "gxcopy:h2d", s.copyin) == 0);

  // Stored by cct-import, the iterations come back from the database.
  const std::string db = dir / "steps.db";
  auto imp = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "cupti-raw", path});
  INFO(imp.err);
  REQUIRE(imp.exit_code == 0);
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto runs = (*d)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  auto stored = (*d)->ReadIterations(runs->front().id);
  REQUIRE(stored.ok());
  REQUIRE(stored->has_value());
  CHECK((*stored)->iterations.size() == 2);
  CHECK((*stored)->range == "^step$");
}

TEST_CASE("gpu raw dump: a dump from another CUPTI version replays with a warning") {
  TempDir dir;
  const auto dump_with = [&](const std::string& name, uint32_t cupti_api, uint32_t layout_api = 0) {
    const std::string path = dir / name;
    auto created = RawDumpWriter::Create(path, 9, R"({"pid":9})");
    REQUIRE(created.ok());
    SampleTree s = BuildTree(/*with_graph=*/false);
    auto meta = nlohmann::json::parse(RunMetaJson(name));
    meta["gpu"] = {{"tracing", "on"}, {"facts", {{"gpu_model", "NVIDIA H100 80GB HBM3"}, {"cupti_api", cupti_api}}}};
    if (layout_api != 0) meta["gpu"]["facts"]["cupti_layout_api"] = layout_api;
    (*created)->Snapshot(s.tree, meta.dump(), s.sites);
    REQUIRE((*created)->status().ok());
    return path;
  };
  const std::string same = dump_with("same.cctraw", CUPTI_API_VERSION);
  const std::string older = dump_with("older.cctraw", CUPTI_API_VERSION - 1000);
  auto a = ReplayRawDump(same);
  REQUIRE(a.ok());
  CHECK(a->recorded_cupti_api == CUPTI_API_VERSION);
  CHECK(a->decoder_cupti_api == CUPTI_API_VERSION);
  CHECK_FALSE(nlohmann::json::parse(a->meta_json)["diagnostics"].contains("gpu_raw_recorded_cupti_api"));
  auto b = ReplayRawDump(older);
  REQUIRE(b.ok());
  CHECK(b->recorded_cupti_api == CUPTI_API_VERSION - 1000);
  CHECK(nlohmann::json::parse(b->meta_json)["diagnostics"]["gpu_raw_recorded_cupti_api"] == CUPTI_API_VERSION - 1000);

  const std::string db = dir / "v.db";
  auto ok = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "cupti-raw", same});
  CHECK(ok.exit_code == 0);
  CHECK(ok.err.empty());
  auto warned = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "cupti-raw", older});
  CHECK(warned.exit_code == 0);
  CHECK(testutil::LineCount(warned.err) == 1);
  CHECK(warned.err.find("recorded with CUPTI API version " + std::to_string(CUPTI_API_VERSION - 1000)) !=
        std::string::npos);

  // Another libcupti, but the adapter laid its records out in the layout of
  // this build's headers (cupti_layout_api): nothing to warn about.
  const std::string relaid = dump_with("relaid.cctraw", CUPTI_API_VERSION - 1000, CUPTI_API_VERSION);
  auto c = ReplayRawDump(relaid);
  REQUIRE(c.ok());
  CHECK(c->recorded_cupti_api == CUPTI_API_VERSION);
  CHECK_FALSE(nlohmann::json::parse(c->meta_json)["diagnostics"].contains("gpu_raw_recorded_cupti_api"));
  // And a layout other than this build's warns whatever the libcupti was.
  const std::string other = dump_with("other.cctraw", CUPTI_API_VERSION, CUPTI_API_VERSION - 1000);
  auto d = ReplayRawDump(other);
  REQUIRE(d.ok());
  CHECK(nlohmann::json::parse(d->meta_json)["diagnostics"]["gpu_raw_recorded_cupti_api"] == CUPTI_API_VERSION - 1000);
}

TEST_CASE("gpu raw dump: damaged dumps are refused with one line") {
  TempDir dir;
  const std::string path = dir / "good.cctraw";
  WriteSampleDump(path);
  const std::string full = ReadFileOrDie(path);
  const auto records = Records(path);
  const std::string bad = dir / "bad.cctraw";
  const auto refused = [&](const std::string& data, const std::string& needle) {
    WriteFileOrDie(bad, data);
    auto r = ReplayRawDump(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == cct::ErrorCode::kCorrupt);
    CHECK(r.status().message().find('\n') == std::string::npos);
    CHECK_MESSAGE(r.status().message().find(needle) != std::string::npos, r.status().message());
  };
  SUBCASE("a flipped byte in the middle") {
    std::string d = full;
    d[d.size() / 2] ^= 0x10;
    refused(d, "damaged raw GPU dump");
  }
  SUBCASE("a flipped byte in a batch's raw bytes") {
    std::string d = full;
    d[records[1].offset + 16 + 100] ^= 0x01;
    refused(d, "checksum mismatch");
  }
  SUBCASE("the last record's length damaged: corrupt, not torn") {
    std::string d = full;
    d[records.back().offset + 6] ^= 0x40;
    refused(d, "record header");
  }
  SUBCASE("wrong magic") {
    std::string d = full;
    d[16] = 'X';
    refused(d, "not a cctdb raw GPU dump");
  }
  SUBCASE("a foreign file") { refused("#!/bin/sh\necho hello, this is not a dump at all\n", "not a cctdb raw GPU dump"); }
  SUBCASE("an empty file") { refused("", "empty file"); }
  SUBCASE("another format version") {
    std::string payload(kRawDumpMagic);
    payload += std::string("\x03\0\0\0\x01\0\0\0\x02\0\0\0{}", 14);
    refused(Frame(1, payload), "format 3");
  }
  SUBCASE("format 0") {
    std::string payload(kRawDumpMagic);
    payload += std::string("\0\0\0\0\x01\0\0\0\x02\0\0\0{}", 14);
    refused(Frame(1, payload), "format 0");
  }
  SUBCASE("a snapshot whose tree does not decode") {
    // A well-framed snapshot record whose sections are garbage.
    std::string payload("\x01\0\0\0\x04\0\0\0\0\0\0\0junk", 16);
    refused(full + Frame(5, payload), "snapshot");
  }
  SUBCASE("a batch naming an undefined kernel") {
    std::string payload(8, '\0');                              // dropped
    payload += std::string("\0\0\0\0\x01\0\0\0\x09\0\0\0", 12);  // no names, one kernel: id 9
    payload += std::string(8, '\0') + std::string(8, '\0');      // no raw bytes, no api
    payload[payload.size() - 4] = static_cast<char>(kRawActivitySize);
    refused(full + Frame(3, payload), "undefined kernel");
  }
  SUBCASE("a missing file is not found, not corrupt") {
    auto r = ReplayRawDump(dir / "missing.cctraw");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == cct::ErrorCode::kNotFound);
  }
}

TEST_CASE("gpu raw dump: the writer reports errors once and skips the rest") {
  auto w = RawDumpWriter::Create("/nonexistent-dir/x.cctraw", 1, "{}");
  REQUIRE_FALSE(w.ok());
  CHECK(w.status().message().find("/nonexistent-dir/x.cctraw") != std::string::npos);
  if (std::filesystem::exists("/dev/full")) {
    auto full = RawDumpWriter::Create("/dev/full", 1, "{}");
    CHECK_FALSE(full.ok());  // the header cannot be written
  }

  // A file-size limit: the batch that crosses it is written in part (a
  // short write, then EFBIG), the error is kept, and nothing more is
  // written; what is on disk reads as a dump with a torn tail.
  TempDir dir;
  const std::string path = dir / "limited.cctraw";
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  uint64_t written = 0;
  cct::Status status;
  {
    auto lw = RawDumpWriter::Create(path, 1, "{}");
    if (lw.ok()) {
      const RawCorrelation c[] = {{1, 1, 0}};
      (*lw)->Correlations(c);
      const std::vector<uint8_t> big(8192, 0x5a);
      (*lw)->Batch(big.data(), big.size(), {}, 0);
      status = (*lw)->status();
      written = (*lw)->bytes_written();
      (*lw)->Correlations(c);  // skipped
      CHECK((*lw)->bytes_written() == written);
    }
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  CHECK_FALSE(status.ok());
  CHECK(status.message().find("write failed") != std::string::npos);
  CHECK(written == 4096);
  CHECK(std::filesystem::file_size(path) == 4096);
  auto r = ReplayRawDump(path);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->truncated);
  CHECK(r->batches == 0);
}

TEST_CASE("gpu raw dump: records written from several threads at once stay whole") {
  TempDir dir;
  const std::string path = dir / "threads.cctraw";
  {
    auto w = RawDumpWriter::Create(path, 1, "{}");
    REQUIRE(w.ok());
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (uint32_t i = 0; i < 200; ++i) {
          const RawCorrelation c[] = {{t * 1000 + i + 1, t, 0}};
          (*w)->Correlations(c);
          const GpuActivity api[] = {MemoryApi(t * 1000 + i + 1, 0, 1 + t)};
          (*w)->Batch(nullptr, 0, api, 0);
        }
      });
    for (std::thread& t : threads) t.join();
    CHECK((*w)->status().ok());
  }
  const auto records = Records(path);
  CHECK(records.size() == 4 * 200 * 2);
  auto r = ReplayRawDump(path);
  REQUIRE(r.ok());
  CHECK(r->batches == 800);
  CHECK(r->unknown == 0);  // every batch's correlation was written before it
  CHECK(Total(r->tree, "gmem") == 200 * (1 + 2 + 3 + 4));  // no snapshot: all under <gpu unknown>
}

TEST_CASE("gpu raw dump: cct-import --from cupti-raw") {
  TempDir dir;
  const std::string dump = dir / "gpu-4242.cctraw";
  WriteSampleDump(dump);
  const std::string db = dir / "cct.db";
  auto r = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "cupti-raw", dump, "--tag", "ci=yes"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(testutil::LineCount(r.out) == 1);
  CHECK(r.out.find("imported " + dump + " as run 1 'train'") == 0);
  CHECK(r.err.empty());
  {
    auto d = store::Database::Open(db, store::Database::Mode::kRead);
    REQUIRE(d.ok());
    auto runs = (*d)->ListRuns();
    REQUIRE(runs.ok());
    REQUIRE(runs->size() == 1);
    const store::RunMeta& m = runs->front();
    CHECK(m.source == "cupti-raw-replay");
    CHECK(m.name == "train");
    CHECK(m.state == store::RunState::kComplete);
    CHECK(m.tags.at("model") == "mlp");
    CHECK(m.tags.at("ci") == "yes");
    CHECK(m.diagnostics.at("gpu_raw_batches") == 3);
    auto t = (*d)->ReadTree(m.id);
    REQUIRE(t.ok());
    CHECK(Total(*t, "gker") == 3500 + 900 + 200 + 2000 + 111);
    CHECK(Total(*t, "gxcopy:h2d") == (1 << 20) + 10);
    CHECK(Total(*t, "cputime") == 5e6);
  }

  // A torn dump: a warning, the run is created (crashed: the recording died).
  const std::string torn = dir / "torn.cctraw";
  const std::string full = ReadFileOrDie(dump);
  WriteFileOrDie(torn, full + full.substr(Records(dump)[7].offset, 40));
  r = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "cupti-raw", torn, "--name", "torn"});
  REQUIRE(r.exit_code == 0);
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK(r.err.find("warning") != std::string::npos);
  CHECK(r.out.find("as run 2 'torn'") != std::string::npos);
  {
    auto d = store::Database::Open(db, store::Database::Mode::kRead);
    REQUIRE(d.ok());
    auto m = (*d)->GetRun(2);
    REQUIRE(m.ok());
    CHECK(m->state == store::RunState::kCrashed);
  }

  // A damaged dump: exit 2, one line, no run.
  const std::string bad = dir / "bad.cctraw";
  std::string damaged = full;
  damaged[damaged.size() / 2] ^= 0x10;
  WriteFileOrDie(bad, damaged);
  r = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "cupti-raw", bad});
  CHECK(r.exit_code == 2);
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK(r.err.find("cct-import: ") == 0);
  CHECK(r.out.empty());
  r = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "cupti-raw", dump, "--unit", "ns"});
  CHECK(r.exit_code == 2);
  CHECK(testutil::LineCount(r.err) == 1);
}

TEST_CASE("gpu raw dump: payloads damaged behind valid checksums never crash the replay") {
  // Random damage is caught by the checksums; this damages the payloads and
  // frames them again with valid checksums, so every payload parser, the
  // record walk over the raw bytes, the snapshot's tree and iterations, and
  // the attribution meet garbage. Each replay must return — a run or one
  // line of kCorrupt — and cct-import must exit 0 or 2.
  TempDir dir;
  std::vector<std::string> bases = {dir / "sample.cctraw", dir / "iterations.cctraw"};
  WriteSampleDump(bases[0]);
  WriteIterationDump(bases[1]);
  struct Rec {
    uint8_t type;
    std::string payload;
  };
  std::vector<std::vector<Rec>> dumps;
  for (const std::string& base : bases) {
    std::vector<Rec> recs;
    const std::string full = ReadFileOrDie(base);
    // The header record too (the reader does not return it).
    const uint32_t header_len = static_cast<uint8_t>(full[4]) | static_cast<uint8_t>(full[5]) << 8 |
                                static_cast<uint8_t>(full[6]) << 16 | static_cast<uint32_t>(static_cast<uint8_t>(full[7])) << 24;
    recs.push_back({static_cast<uint8_t>(RawRecordType::kHeader), full.substr(16, header_len)});
    auto reader = RawDumpReader::Open(base);
    REQUIRE(reader.ok());
    RawRecord rec;
    for (;;) {
      auto more = (*reader)->Next(&rec);
      REQUIRE(more.ok());
      if (!*more) break;
      recs.push_back({rec.type, std::string(rec.payload)});
    }
    dumps.push_back(std::move(recs));
  }

  std::mt19937_64 rng(20261124);
  const std::string bad = dir / "bad.cctraw";
  const uint32_t extremes[] = {0, 1, 2, 7, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFF0u, 0xFFFFFFFFu};
  int replayed = 0, refused = 0;
  const int kCases = 4000;
  for (int i = 0; i < kCases; ++i) {
    std::vector<Rec> recs = dumps[rng() % dumps.size()];
    Rec& victim = recs[1 + rng() % (recs.size() - 1)];  // not the header: that one is checked first
    std::string& p = victim.payload;
    switch (rng() % 5) {
      case 0:  // a few flipped bytes
        for (int k = 1 + rng() % 4; k > 0 && !p.empty(); --k) p[rng() % p.size()] ^= static_cast<char>(1 + rng() % 255);
        break;
      case 1:  // an extreme 32-bit value (counts, lengths, ids, kinds) at a 4-byte boundary
        if (p.size() >= 4) {
          const uint32_t v = extremes[rng() % std::size(extremes)];
          std::memcpy(p.data() + 4 * (rng() % (p.size() / 4)), &v, 4);
        }
        break;
      case 2:  // cut short
        p.resize(rng() % (p.size() + 1));
        break;
      case 3:  // trailing garbage
        for (int k = 1 + rng() % 64; k > 0; --k) p.push_back(static_cast<char>(rng()));
        break;
      default:  // a byte anywhere set to an extreme
        if (!p.empty()) p[rng() % p.size()] = static_cast<char>(rng() % 2 ? 0xFF : 0x00);
        break;
    }
    if (rng() % 8 == 0) victim.type = static_cast<uint8_t>(1 + rng() % 7);  // a record of another type
    std::string file;
    for (const Rec& r : recs) file += Frame(r.type, r.payload);
    WriteFileOrDie(bad, file);
    auto r = ReplayRawDump(bad);
    if (r.ok()) {
      ++replayed;
    } else {
      ++refused;
      INFO("case " << i << ": " << r.status().message());
      CHECK(r.status().message().find('\n') == std::string::npos);
      CHECK((r.status().code() == cct::ErrorCode::kCorrupt || r.status().code() == cct::ErrorCode::kIo));
    }
    if (i % 100 == 0) {  // the tool as well
      auto imp = testutil::Run({testutil::Tool("cct-import"), "-d", dir / "fuzz.db", "--from", "cupti-raw", bad});
      INFO("case " << i << ": " << imp.err);
      CHECK(imp.signal == 0);
      CHECK((imp.exit_code == 0 || imp.exit_code == 2));
      if (imp.exit_code == 2) CHECK(testutil::LineCount(imp.err) == 1);
    }
  }
  MESSAGE(replayed << " damaged dumps replayed, " << refused << " refused");
  // The damage reached both outcomes: the parsers refused some, and damage
  // that still made sense (a changed duration, a name byte) replayed.
  CHECK(replayed > kCases / 20);
  CHECK(refused > kCases / 20);
}
