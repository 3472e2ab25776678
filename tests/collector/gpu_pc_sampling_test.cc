// PC sampling without a GPU: CUPTI's stall-reason names onto HPCToolkit's
// classes, the index table, decoding CUpti_PCSamplingData built here from
// CUPTI's own structs, attribution of the samples into a tree (gins and
// gins:stl_* on kernel and line nodes), and the adapter entry points failing
// cleanly on a machine without a GPU.
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cct/node_values.h"
#include "cct/tree.h"
#include "collector/gpu/cupti/cupti_pc_decode.h"
#include "collector/gpu/cupti/cupti_pc_sampling.h"
#include "collector/gpu/gpu_metrics.h"
#include "collector/gpu/gpu_pc_sampling.h"

using namespace collector;
using collector::cupti::PcSampleDecoder;
using cct::GpuOpKind;

namespace {

constexpr int Slot(StallSlot s) { return static_cast<int>(s); }

std::string Full(std::string_view reason) { return std::string(kCuptiStallPrefix) + std::string(reason); }

// One PC record and the stall-reason array it points at.
struct PcRecord {
  uint32_t correlation;
  const char* function;
  uint64_t crc;
  uint64_t pc;
  std::vector<std::pair<uint32_t, uint32_t>> reasons;  // (index, samples)
};

// A CUpti_PCSamplingData as cuptiPCSamplingGetData leaves it.
class PcData {
 public:
  explicit PcData(const std::vector<PcRecord>& records, size_t collect = 0) {
    reasons_.resize(records.size());
    pcs_.resize(records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      for (auto [index, samples] : records[i].reasons) {
        CUpti_PCSamplingStallReason r;
        r.pcSamplingStallReasonIndex = index;
        r.samples = samples;
        reasons_[i].push_back(r);
      }
      CUpti_PCSamplingPCData& p = pcs_[i];
      std::memset(&p, 0, sizeof p);
      p.size = sizeof p;
      p.cubinCrc = records[i].crc;
      p.pcOffset = records[i].pc;
      p.functionName = const_cast<char*>(records[i].function);
      p.stallReasonCount = reasons_[i].size();
      p.stallReason = reasons_[i].data();
      p.correlationId = records[i].correlation;
    }
    std::memset(&data_, 0, sizeof data_);
    data_.size = sizeof data_;
    data_.collectNumPcs = collect != 0 ? collect : records.size() + 1;
    data_.totalNumPcs = records.size();
    data_.pPcData = pcs_.data();
  }
  CUpti_PCSamplingData& data() { return data_; }

 private:
  std::vector<std::vector<CUpti_PCSamplingStallReason>> reasons_;
  std::vector<CUpti_PCSamplingPCData> pcs_;
  CUpti_PCSamplingData data_;
};

// The stall reasons of the decoding tests, as cuptiPCSamplingGetStallReasons
// could list them (indexes need not be contiguous).
StallSlotTable TestTable() {
  const std::vector<std::pair<uint32_t, std::string>> names = {
      {2, Full("selected")},       {3, Full("selected_not_issued")}, {5, Full("long_scoreboard")},
      {6, Full("long_scoreboard_not_issued")}, {7, Full("barrier")},  {9, Full("math_pipe_throttle")},
      {10, Full("not_selected")}, {12, Full("wait")},                 {40, Full("some_future_reason")},
  };
  std::vector<std::pair<uint32_t, std::string_view>> pairs;
  for (const auto& [i, n] : names) pairs.emplace_back(i, n);
  return StallSlotTable(pairs);
}

constexpr uint64_t kCrc = 0xC0FFEE;
const char* const kVecAdd = "_Z6vecAddPfS_i";
const char* const kAxpy = "_Z4axpyfPfS_";

// The records of the decoding and attribution tests (see the expected
// values there): index 99 is not in TestTable.
std::vector<PcRecord> TestRecords() {
  return {
      {1, kVecAdd, kCrc, 0x40, {{2, 10}, {3, 4}, {5, 5}, {6, 3}}},  // R0
      {1, kVecAdd, kCrc, 0xd0, {{5, 20}, {12, 6}, {99, 2}}},        // R1
      {2, kVecAdd, kCrc, 0x40, {{2, 8}, {7, 4}}},                   // R2: the same PC, another launch
      {1, kVecAdd, kCrc, 0x40, {{10, 3}, {9, 1}, {5, 0}}},          // R3: R0's PC again
      {1, kVecAdd, kCrc, 0x100, {{6, 9}}},                          // R4: latency samples only
      {0, kAxpy, kCrc, 0x10, {{40, 7}}},                            // R5: no correlation id
      {3, kVecAdd, kCrc, 0xd0, {{12, 2}}},                          // R6: a launch never filed
  };
}

// Knows the lines of vecAdd's PCs 0x40 and 0xd0; counts its calls.
struct LineLookup {
  int calls = 0;
  cupti::SourceLineFn Fn() {
    return [this](uint64_t crc, uint64_t pc, std::string_view function, std::string* file, uint32_t* line) {
      ++calls;
      if (crc != kCrc || function != kVecAdd) return false;
      if (pc == 0x40) *file = "/src/vec.cu", *line = 12;
      else if (pc == 0xd0) *file = "/src/vec.cu", *line = 14;
      else return false;
      return true;
    };
  }
};

uint64_t Sum(const GpuPcSample& s) {
  uint64_t n = 0;
  for (uint64_t v : s.stall) n += v;
  return n;
}

}  // namespace

// ------------------------------------------------------------ stall classes

TEST_CASE("gpu pc sampling: CUPTI stall-reason names map to HPCToolkit's stall classes") {
  // NVIDIA's Stall Reasons Mapping Table (CUPTI guide, PC Sampling API),
  // through the activity API's reasons to HPCToolkit's classes, written
  // out here independently of the implementation's table.
  const std::vector<std::pair<std::string_view, StallSlot>> expected = {
      {"selected", StallSlot::kNone},         {"branch_resolving", StallSlot::kIfet},
      {"no_instructions", StallSlot::kIfet},  {"short_scoreboard", StallSlot::kIdep},
      {"wait", StallSlot::kIdep},             {"long_scoreboard", StallSlot::kGmem},
      {"tex_throttle", StallSlot::kTmem},     {"barrier", StallSlot::kSync},
      {"membar", StallSlot::kSync},           {"imc_miss", StallSlot::kCmem},
      {"mio_throttle", StallSlot::kPipe},     {"math_pipe_throttle", StallSlot::kPipe},
      {"drain", StallSlot::kMthr},            {"lg_throttle", StallSlot::kMthr},
      {"not_selected", StallSlot::kNsel},     {"misc", StallSlot::kOthr},
      {"dispatch_stall", StallSlot::kOthr},   {"sleeping", StallSlot::kSlp},
      {"warpgroup_arrive", StallSlot::kSync}, {"gmma", StallSlot::kSync},
  };
  for (const auto& entry : expected) {
    const auto& reason = entry.first;
    const auto& slot = entry.second;
    CAPTURE(reason);
    const std::optional<StallSlot> full = StallSlotOfCuptiName(Full(reason));
    REQUIRE(full.has_value());
    CHECK(*full == slot);
    const std::optional<StallSlot> bare = StallSlotOfCuptiName(reason);
    REQUIRE(bare.has_value());
    CHECK(*bare == slot);
    // The latency samples of every reason are a subset of its samples.
    CHECK_FALSE(StallSlotOfCuptiName(Full(reason) + "_not_issued").has_value());
    CHECK_FALSE(StallSlotOfCuptiName(std::string(reason) + "_not_issued").has_value());
  }
  // The implementation's table lists exactly these.
  CHECK(KnownCuptiStallReasons().size() == expected.size());
  for (const KnownStallReason& k : KnownCuptiStallReasons()) {
    CAPTURE(k.reason);
    bool listed = false;
    for (const auto& [reason, slot] : expected) listed |= reason == k.reason && slot == k.slot;
    CHECK(listed);
  }
  // Every class but none... is reachable from some name: each metric can fill.
  for (int s = 0; s < kStallSlots; ++s) {
    bool reached = false;
    for (const auto& [reason, slot] : expected) reached |= Slot(slot) == s;
    CAPTURE(s);
    CHECK(reached);
  }

  // Totals are not reasons; unknown names are "other".
  CHECK_FALSE(StallSlotOfCuptiName("smsp__pcsamp_sample_count").has_value());
  CHECK_FALSE(StallSlotOfCuptiName("smsp__pcsamp_samples_data_dropped").has_value());
  CHECK(StallSlotOfCuptiName(Full("tensor_memory_wait")) == StallSlot::kOthr);
  CHECK(StallSlotOfCuptiName("something_else") == StallSlot::kOthr);
  CHECK(StallSlotOfCuptiName("") == StallSlot::kOthr);
  // A prefix alone is not a reason name.
  CHECK(StallSlotOfCuptiName("smsp__pcsamp_warps_issue_stalled_selectedx") == StallSlot::kOthr);

  // The class names are the metric suffixes.
  const char* names[] = {"none", "ifet", "idep", "gmem", "tmem", "sync", "cmem", "pipe", "mthr", "nsel", "othr", "slp"};
  for (int s = 0; s < kStallSlots; ++s) CHECK(StallSlotName(static_cast<StallSlot>(s)) == names[s]);
}

TEST_CASE("gpu pc sampling: StallSlotTable maps CUPTI's stall-reason indexes") {
  const std::string lsb = Full("long_scoreboard"), lsb_ni = Full("long_scoreboard_not_issued"),
                    sel = Full("selected"), odd = Full("new_in_sm_200"), slp = Full("sleeping");
  const std::vector<std::pair<uint32_t, std::string_view>> pairs = {
      {0, sel}, {17, lsb}, {18, lsb_ni}, {3, odd}, {5000, slp}};
  StallSlotTable t(pairs);
  CHECK(t.size() == 5);
  CHECK_FALSE(t.empty());
  CHECK(t.Known(0));
  CHECK(t.Known(5000));
  CHECK_FALSE(t.Known(1));
  CHECK_FALSE(t.Known(4999));
  CHECK(t.Slot(0) == StallSlot::kNone);
  CHECK(t.Slot(17) == StallSlot::kGmem);
  CHECK_FALSE(t.Slot(18).has_value());      // latency samples: not counted
  CHECK(t.Slot(3) == StallSlot::kOthr);     // an unknown name
  CHECK(t.Slot(5000) == StallSlot::kSlp);   // a large index
  CHECK(t.Slot(1) == StallSlot::kOthr);     // never given
  CHECK(t.Slot(123456) == StallSlot::kOthr);

  // Adding an index again replaces its class without growing the table.
  t.Add(17, Full("barrier"));
  t.Add(5000, Full("sleeping_not_issued"));
  CHECK(t.size() == 5);
  CHECK(t.Slot(17) == StallSlot::kSync);
  CHECK_FALSE(t.Slot(5000).has_value());

  StallSlotTable empty;
  CHECK(empty.empty());
  CHECK_FALSE(empty.Known(0));
  CHECK(empty.Slot(0) == StallSlot::kOthr);
}

// ------------------------------------------------------------ decoding

TEST_CASE("gpu pc decode: CUpti_PCSamplingData into per-PC samples with stall classes and lines") {
  LineLookup lines;
  PcSampleDecoder decoder(lines.Fn());
  const StallSlotTable table = TestTable();
  PcData in(TestRecords());
  in.data().totalSamples = 100;
  in.data().droppedSamples = 3;
  in.data().nonUsrKernelsTotalSamples = 5;
  in.data().remainingNumPcs = 0;

  std::vector<GpuPcSample> out;
  decoder.Decode(in.data(), table, /*device_id=*/1, out);
  REQUIRE(out.size() == 5);

  // R0 + R3 (same launch, same PC): selected 10, long_scoreboard 5,
  // not_selected 3, math_pipe_throttle 1; the _not_issued 4 + 3 not counted.
  const GpuPcSample& a = out[0];
  CHECK(a.correlation_id == 1);
  CHECK(a.device_id == 1);
  CHECK(a.cubin_crc == kCrc);
  CHECK(a.pc_offset == 0x40);
  CHECK(a.function_name == "vecAdd(float*, float*, int)");
  CHECK(a.file == "/src/vec.cu");
  CHECK(a.line == 12);
  CHECK(a.samples == 19);
  CHECK(a.stall[Slot(StallSlot::kNone)] == 10);
  CHECK(a.stall[Slot(StallSlot::kGmem)] == 5);
  CHECK(a.stall[Slot(StallSlot::kNsel)] == 3);
  CHECK(a.stall[Slot(StallSlot::kPipe)] == 1);
  CHECK(Sum(a) == a.samples);

  // R1: long_scoreboard 20, wait 6, and 2 of an index CUPTI never listed.
  const GpuPcSample& b = out[1];
  CHECK(b.correlation_id == 1);
  CHECK(b.pc_offset == 0xd0);
  CHECK(b.line == 14);
  CHECK(b.samples == 28);
  CHECK(b.stall[Slot(StallSlot::kGmem)] == 20);
  CHECK(b.stall[Slot(StallSlot::kIdep)] == 6);
  CHECK(b.stall[Slot(StallSlot::kOthr)] == 2);
  CHECK(Sum(b) == b.samples);

  // R2: the same PC in another launch stays apart.
  const GpuPcSample& c = out[2];
  CHECK(c.correlation_id == 2);
  CHECK(c.pc_offset == 0x40);
  CHECK(c.line == 12);
  CHECK(c.samples == 12);
  CHECK(c.stall[Slot(StallSlot::kNone)] == 8);
  CHECK(c.stall[Slot(StallSlot::kSync)] == 4);

  // R4 had latency samples only: no sample. R5: no correlation, no line,
  // a reason the mapping does not know (other).
  const GpuPcSample& d = out[3];
  CHECK(d.correlation_id == 0);
  CHECK(d.function_name == "axpy(float, float*, float*)");
  CHECK(d.file.empty());
  CHECK(d.line == 0);
  CHECK(d.samples == 7);
  CHECK(d.stall[Slot(StallSlot::kOthr)] == 7);

  const GpuPcSample& e = out[4];
  CHECK(e.correlation_id == 3);
  CHECK(e.line == 14);
  CHECK(e.samples == 2);
  CHECK(e.stall[Slot(StallSlot::kIdep)] == 2);

  // One lookup per distinct (cubin, function, PC) with samples: vecAdd
  // 0x40 and 0xd0, axpy 0x10.
  CHECK(lines.calls == 3);
  const cupti::PcDecodeStats& st = decoder.stats();
  CHECK(st.buffers == 1);
  CHECK(st.pcs == 7);
  CHECK(st.samples == 19 + 28 + 12 + 7 + 2);
  CHECK(st.latency_samples == 4 + 3 + 9);
  CHECK(st.unknown_reason_samples == 2);
  CHECK(st.pcs_without_correlation == 1);
  CHECK(st.pcs_with_line == 5);  // R0, R1, R2, R3, R6
  CHECK(st.line_lookups == 3);
  CHECK(st.total_samples == 100);
  CHECK(st.dropped_samples == 3);
  CHECK(st.non_user_samples == 5);
  CHECK(st.remaining_pcs == 0);
  CHECK(st.hardware_buffer_full == 0);
  CHECK(decoder.function_count() == 2);

  // A second buffer: names stay interned (same storage), lines come from
  // the cache, and no more records are read than collectNumPcs allows.
  PcData more({{4, kVecAdd, kCrc, 0x40, {{2, 1}}}, {4, kAxpy, kCrc, 0x10, {{5, 2}}}, {4, kVecAdd, kCrc, 0xd0, {{2, 50}}}},
              /*collect=*/2);
  more.data().remainingNumPcs = 17;
  more.data().hardwareBufferFull = 1;
  more.data().droppedSamples = 4;
  std::vector<GpuPcSample> out2;
  decoder.Decode(more.data(), table, 0, out2);
  REQUIRE(out2.size() == 2);
  CHECK(out2[0].function_name.data() == a.function_name.data());
  CHECK(out2[0].file.data() == a.file.data());
  CHECK(out2[0].line == 12);
  CHECK(out2[1].function_name.data() == d.function_name.data());
  CHECK(out2[1].stall[Slot(StallSlot::kGmem)] == 2);
  CHECK(lines.calls == 3);
  CHECK(decoder.stats().pcs == 9);
  CHECK(decoder.stats().remaining_pcs == 17);
  CHECK(decoder.stats().hardware_buffer_full == 1);
  CHECK(decoder.stats().dropped_samples == 7);
  CHECK(decoder.function_count() == 2);

  // Nothing to read: no samples, no crash.
  CUpti_PCSamplingData none;
  std::memset(&none, 0, sizeof none);
  none.totalNumPcs = 3;  // with no records array
  std::vector<GpuPcSample> out3;
  decoder.Decode(none, table, 0, out3);
  CHECK(out3.empty());
}

TEST_CASE("gpu pc decode: without a line lookup or function name, samples still count") {
  PcSampleDecoder decoder;
  const StallSlotTable table = TestTable();
  PcData in({{7, nullptr, 1, 0x20, {{2, 3}, {12, 1}}}, {7, kVecAdd, 1, 0x20, {{2, 2}}}});
  std::vector<GpuPcSample> out;
  decoder.Decode(in.data(), table, 0, out);
  REQUIRE(out.size() == 2);  // a record without a name is its own PC
  CHECK(out[0].function_name.empty());
  CHECK(out[0].samples == 4);
  CHECK(out[0].line == 0);
  CHECK(out[1].function_name == "vecAdd(float*, float*, int)");
  CHECK(out[1].line == 0);
  CHECK(decoder.stats().line_lookups == 0);
}

// ------------------------------------------------------------ attribution

TEST_CASE("gpu pc sampling: decoded samples attribute to kernel and line nodes in the tree") {
  cct::Tree tree;
  const cct::NodeId thread = tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kThread, "main"));
  const cct::NodeId site = tree.InternChild(
      thread, tree.InternFrame(cct::FrameKind::kGpuOp, cct::GpuOpPlaceholder(GpuOpKind::kKernel)));
  const cct::NodeId unknown = tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kUnknown, "<unknown>"));

  int kernel_calls = 0, line_calls = 0;
  KernelNodeFn kernel_node = [&](uint32_t s, std::string_view name) {
    ++kernel_calls;
    return tree.InternChild(s, tree.InternFrame(cct::FrameKind::kKernel, name));
  };
  LineNodeFn line_node = [&](uint32_t k, std::string_view file, uint32_t line) {
    ++line_calls;
    return tree.InternChild(k, tree.InternFrame(cct::FrameKind::kLine, file, {}, file, line));
  };
  GpuAttributor attr(unknown, kernel_node);
  attr.SetLineNode(line_node);
  // Launches 1 and 2 were filed at `site`; 3 never was; 0 is no launch.
  LaunchSites sites = {{1, {site, GpuOpKind::kKernel}}, {2, {site, GpuOpKind::kKernel}}};

  LineLookup lines;
  PcSampleDecoder decoder(lines.Fn());
  PcData in(TestRecords());
  std::vector<GpuPcSample> samples;
  decoder.Decode(in.data(), TestTable(), 0, samples);
  REQUIRE(samples.size() == 5);
  attr.AddPcSamples(sites, samples);
  CHECK(attr.stats().pc_samples == 5);
  CHECK(attr.stats().pc_samples_unknown == 2);  // R5 (no correlation) and R6 (launch 3)

  GpuMetricWriter writer(tree);
  for (const auto& [node, m] : attr.metrics()) writer.Add(node, m);

  const cct::FrameId vec_frame = tree.InternFrame(cct::FrameKind::kKernel, "vecAdd(float*, float*, int)");
  const cct::NodeId kernel = tree.FindChild(site, vec_frame);
  REQUIRE(kernel != cct::kNoNode);
  const cct::NodeId l12 =
      tree.FindChild(kernel, tree.InternFrame(cct::FrameKind::kLine, "/src/vec.cu", {}, "/src/vec.cu", 12));
  const cct::NodeId l14 =
      tree.FindChild(kernel, tree.InternFrame(cct::FrameKind::kLine, "/src/vec.cu", {}, "/src/vec.cu", 14));
  const cct::NodeId u14 =
      tree.FindChild(unknown, tree.InternFrame(cct::FrameKind::kLine, "/src/vec.cu", {}, "/src/vec.cu", 14));
  REQUIRE(l12 != cct::kNoNode);
  REQUIRE(l14 != cct::kNoNode);
  REQUIRE(u14 != cct::kNoNode);
  CHECK(kernel_calls == 1);  // one kernel under one site, cached
  CHECK(line_calls == 3);    // (kernel, 12), (kernel, 14), (unknown, 14)

  const cct::MetricRegistry& reg = tree.metrics();
  auto id = [&](const char* name) {
    const cct::MetricId m = reg.Find(name);
    REQUIRE(m != cct::kNoMetric);
    return m;
  };
  cct::NodeValues v(tree);
  auto excl = [&](const char* name, cct::NodeId n) { return v.Exclusive(id(name))[n]; };
  auto incl = [&](const char* name, cct::NodeId n) { return v.Inclusive(id(name))[n]; };

  // Line 12: launch 1 (selected 10, long_scoreboard 5, not_selected 3,
  // math_pipe 1) + launch 2 (selected 8, barrier 4).
  CHECK(excl("gins", l12) == 31);
  CHECK(excl("gins:stl_none", l12) == 18);
  CHECK(excl("gins:stl_any", l12) == 13);
  CHECK(excl("gins:stl_gmem", l12) == 5);
  CHECK(excl("gins:stl_nsel", l12) == 3);
  CHECK(excl("gins:stl_pipe", l12) == 1);
  CHECK(excl("gins:stl_sync", l12) == 4);
  CHECK(excl("gins:stl_idep", l12) == 0);
  // Line 14: long_scoreboard 20, wait 6, 2 unknown → other.
  CHECK(excl("gins", l14) == 28);
  CHECK(excl("gins:stl_any", l14) == 28);
  CHECK(excl("gins:stl_none", l14) == 0);
  CHECK(excl("gins:stl_gmem", l14) == 20);
  CHECK(excl("gins:stl_idep", l14) == 6);
  CHECK(excl("gins:stl_othr", l14) == 2);
  // The kernel node holds nothing itself (every sample had a line) and
  // everything inclusively.
  CHECK(excl("gins", kernel) == 0);
  CHECK(incl("gins", kernel) == 59);
  CHECK(incl("gins:stl_none", kernel) == 18);
  CHECK(incl("gins:stl_any", kernel) == 41);
  CHECK(incl("gins:stl_gmem", kernel) == 25);
  CHECK(incl("gins:stl_idep", kernel) == 6);
  CHECK(incl("gins:stl_othr", kernel) == 2);
  CHECK(incl("gins", site) == 59);
  // Unknown launches: axpy without a line on the unknown node itself,
  // launch 3's line-14 sample on a line node under it.
  CHECK(excl("gins", unknown) == 7);
  CHECK(excl("gins:stl_othr", unknown) == 7);
  CHECK(excl("gins", u14) == 2);
  CHECK(excl("gins:stl_idep", u14) == 2);
  CHECK(incl("gins", unknown) == 9);
  CHECK(v.Total(id("gins")) == 68);
  CHECK(v.Total(id("gins:stl_any")) == 68 - 18);
  // Classes with no samples are not registered; nor are kernel metrics.
  CHECK(reg.Find("gins:stl_tmem") == cct::kNoMetric);
  CHECK(reg.Find("gins:stl_slp") == cct::kNoMetric);
  CHECK(reg.Find("gker") == cct::kNoMetric);
}

// ------------------------------------------------------------ the adapter

TEST_CASE("gpu pc sampling: adapter entry points fail cleanly without a GPU") {
  int deliveries = 0;
  auto deliver = [&](std::vector<GpuPcSample>&&) { ++deliveries; };
  // The adapter's counters are process-wide: compare with where they stand.
  const cupti::PcSamplingStats start = cupti::GetPcSamplingStats();
  const uint64_t dropped_start = cupti::PcDroppedSamples();

  // Arguments are checked before anything else.
  for (uint32_t bad : {1u, 4u, 32u, 100u}) {
    CAPTURE(bad);
    cct::Status st = cupti::PcSamplingInit(bad, deliver);
    CHECK(st.code() == cct::ErrorCode::kInvalidArgument);
    CHECK(st.message().rfind("PC sampling: ", 0) == 0);
    CHECK(st.message().find('\n') == std::string::npos);
  }
  CHECK(cupti::PcSamplingInit(0, nullptr).code() == cct::ErrorCode::kInvalidArgument);
  REQUIRE(cupti::PcSamplingInit(0, deliver).ok());
  REQUIRE(cupti::PcSamplingInit(5, deliver).ok());

  // No context yet: flushes and API exits do nothing.
  cupti::PcFlush();
  cupti::PcOnApiExit(CUPTI_CB_DOMAIN_RUNTIME_API, 0, nullptr);
  CUpti_CallbackData cb;
  std::memset(&cb, 0, sizeof cb);
  cb.callbackSite = CUPTI_API_EXIT;
  cupti::PcOnApiExit(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
  cupti::PcOnResource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, nullptr);
  const cupti::PcSamplingStats before = cupti::GetPcSamplingStats();
  CHECK(before.get_data_calls == start.get_data_calls);
  CHECK(before.context_failures == start.context_failures);
  CHECK(deliveries == 0);

  // A context CUPTI cannot sample (here: no driver, no context): the
  // failure is kept as one line, nothing is enabled.
  CUpti_ResourceData rd;
  std::memset(&rd, 0, sizeof rd);
  rd.context = nullptr;
  cupti::PcOnResource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
  const cupti::PcSamplingStats after = cupti::GetPcSamplingStats();
  CHECK(after.contexts == before.contexts);
  CHECK(after.context_failures == before.context_failures + 1);
  const cct::Status err = cupti::PcLastError();
  REQUIRE_FALSE(err.ok());
  MESSAGE("PC sampling on a null context: " << err.message());
  CHECK(err.message().rfind("PC sampling: cupti", 0) == 0);
  CHECK(err.message().find(" failed: ") != std::string::npos);
  CHECK(err.message().find('\n') == std::string::npos);

  // Still no context: launches fetch nothing.
  cupti::PcOnApiExit(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
  CHECK(cupti::GetPcSamplingStats().get_data_calls == start.get_data_calls);

  cupti::PcStop();
  CHECK(deliveries == 0);
  CHECK(cupti::PcDroppedSamples() == dropped_start);
  // After stop, callbacks are ignored.
  cupti::PcOnResource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
  CHECK(cupti::GetPcSamplingStats().context_failures == after.context_failures);
  cupti::PcStop();  // twice: a no-op
}
