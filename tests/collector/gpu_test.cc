// GPU tracing without a GPU: activity buffers built from CUPTI's own record
// structs (filled, then laid out back to back as CUPTI lays them out) are
// decoded and attributed; the API table, occupancy (by hand and against the
// CUDA toolkit's cuda_occupancy.h) and the adapter's clean failure on a
// machine without a driver are checked.
#include <cuda_occupancy.h>
#include <cupti.h>
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/tree.h"
#include "collector/gpu/cupti/cupti_adapter.h"
#include "collector/gpu/cupti/cupti_api_kinds.h"
#include "collector/gpu/cupti/cupti_decode.h"
#include "collector/gpu/gpu_metrics.h"
#include "tests/collector/cupti_records.h"

using namespace collector;
using cct::GpuOpKind;
using namespace cupti_records;

namespace {

std::vector<GpuActivity> DecodeAll(cupti::ActivityDecoder& d, const RecordBuffer& b) {
  std::vector<GpuActivity> out;
  d.DecodeBuffer(b.data(), b.size(), out);
  return out;
}

Occupancy Occ(uint32_t major, uint32_t minor, uint32_t threads, uint32_t regs, uint32_t static_smem = 0,
              uint32_t dyn_smem = 0, uint32_t config = 0) {
  const GpuArchLimits* arch = FindArchLimits(major, minor);
  REQUIRE(arch != nullptr);
  KernelLaunchConfig c;
  c.threads_per_block = threads;
  c.registers_per_thread = regs;
  c.static_shared_bytes = static_smem;
  c.dynamic_shared_bytes = dyn_smem;
  c.shared_config_bytes = config;
  return TheoreticalOccupancy(*arch, c);
}


}  // namespace

// ------------------------------------------------------------ decoding

TEST_CASE("gpu decode: kernel record fields, grid size in blocks") {
  RecordBuffer b;
  auto k = Kernel(41, kMangledSaxpy, 1000, 4000, /*grid*/ 120, 2, 1, /*block*/ 256, 1, 1, /*regs*/ 40,
                  /*static*/ 2048, /*dynamic*/ 4096, /*local*/ 16);
  k.graphId = 3;
  k.graphNodeId = 77;
  k.deviceId = 1;
  k.sharedMemoryExecuted = 100 * 1024;
  b.Add(k);
  cupti::ActivityDecoder d;
  const auto out = DecodeAll(d, b);
  REQUIRE(out.size() == 1);
  const GpuActivity& a = out[0];
  CHECK(a.kind == GpuActivityKind::kKernel);
  CHECK(a.correlation_id == 41);
  CHECK(a.start_ns == 1000);
  CHECK(a.end_ns == 4000);
  CHECK(a.duration_ns() == 3000);
  CHECK(a.kernel_name == "saxpy(int, float, float const*, float*)");
  CHECK(a.kernel_name_id == 1);
  CHECK(a.grid_x == 120);
  CHECK(a.grid_y == 2);
  CHECK(a.block_x == 256);
  CHECK(a.threads_per_block() == 256);
  // Grid size is the product of the GRID dimensions (HPCToolkit repeats
  // the block size here).
  CHECK(a.blocks() == 240);
  CHECK(a.registers_per_thread == 40);
  CHECK(a.static_shared_bytes == 2048);
  CHECK(a.dynamic_shared_bytes == 4096);
  CHECK(a.local_bytes_per_thread == 16);
  CHECK(a.shared_config_bytes == 100 * 1024);
  CHECK(a.graph_id == 3);
  CHECK(a.graph_node_id == 77);
  CHECK(a.device_id == 1);
  CHECK(a.stream_id == 7);
  CHECK(d.stats().records == 1);
  CHECK(d.stats().decoded == 1);
  CHECK(d.stats().unparsed_bytes == 0);
}

TEST_CASE("gpu decode: copies of every direction, memsets, memory, syncs, external correlation, devices") {
  RecordBuffer b;
  const std::pair<CUpti_ActivityMemcpyKind, CopyDirection> copies[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CopyDirection::kH2D}, {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CopyDirection::kH2D},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CopyDirection::kD2H}, {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, CopyDirection::kD2H},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CopyDirection::kD2D}, {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, CopyDirection::kD2D},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, CopyDirection::kD2D}, {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, CopyDirection::kD2D},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CopyDirection::kH2H}, {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CopyDirection::kP2P},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CopyDirection::kUnknown},
  };
  uint32_t corr = 100;
  for (const auto& [kind, dir] : copies) {
    b.Add(Memcpy(corr, kind, 1000 + corr, 10, 20));
    ++corr;
  }
  b.Add(Peer(200, 1 << 20, /*src*/ 0, /*dst*/ 1, 5, 55));
  b.Add(Memset(201, 4096, 100, 130));
  b.Add(Memory(202, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 16, 900));
  b.Add(Memory(203, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 4096, 950));
  b.Add(Sync(204, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 10, 11));
  b.Add(Sync(205, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 10, 12));
  b.Add(Sync(206, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 10, 13));
  b.Add(Sync(207, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 10, 14));
  b.Add(External(208, 0xabcdef));
  b.Add(Device(3, 9, 0));

  cupti::ActivityDecoder d;
  const auto out = DecodeAll(d, b);
  REQUIRE(out.size() == std::size(copies) + 10);
  size_t i = 0;
  for (const auto& entry : copies) {
    const auto& kind = entry.first;
    const auto& dir = entry.second;
    CAPTURE(static_cast<int>(kind));
    CHECK(out[i].kind == GpuActivityKind::kMemcpy);
    CHECK(out[i].copy == dir);
    CHECK(out[i].bytes == 1000 + out[i].correlation_id);
    CHECK(out[i].duration_ns() == 10);
    ++i;
  }
  const GpuActivity& peer = out[i++];
  CHECK(peer.kind == GpuActivityKind::kMemcpy);
  CHECK(peer.copy == CopyDirection::kP2P);
  CHECK(peer.device_id == 0);
  CHECK(peer.peer_device_id == 1);
  CHECK(peer.bytes == 1 << 20);
  const GpuActivity& memset = out[i++];
  CHECK(memset.kind == GpuActivityKind::kMemset);
  CHECK(memset.bytes == 4096);
  CHECK(memset.memory_kind == GpuMemoryKind::kDevice);
  CHECK(memset.duration_ns() == 30);
  const GpuActivity& alloc = out[i++];
  CHECK(alloc.kind == GpuActivityKind::kMemory);
  CHECK(alloc.memory_op == MemoryOp::kAlloc);
  CHECK(alloc.memory_kind == GpuMemoryKind::kDevice);
  CHECK(alloc.bytes == 1 << 16);
  CHECK(alloc.start_ns == 900);
  CHECK(alloc.duration_ns() == 0);
  const GpuActivity& release = out[i++];
  CHECK(release.memory_op == MemoryOp::kFree);
  CHECK(release.memory_kind == GpuMemoryKind::kPinned);
  for (SyncKind k : {SyncKind::kEvent, SyncKind::kStreamWaitEvent, SyncKind::kStream, SyncKind::kContext}) {
    CHECK(out[i].kind == GpuActivityKind::kSync);
    CHECK(out[i].sync == k);
    ++i;
  }
  CHECK(out[i - 1].duration_ns() == 4);
  const GpuActivity& ext = out[i++];
  CHECK(ext.kind == GpuActivityKind::kExternalCorrelation);
  CHECK(ext.correlation_id == 208);
  CHECK(ext.external_id == 0xabcdef);
  CHECK(ext.external_kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
  const GpuActivity& dev = out[i++];
  CHECK(dev.kind == GpuActivityKind::kDevice);
  CHECK(dev.device_id == 3);
  CHECK(dev.device.cc_major == 9);
  CHECK(dev.device.max_warps_per_sm == 64);
  CHECK(dev.device.smem_per_sm == 228 * 1024);
  CHECK(d.stats().skipped == 0);
}

// A libcupti other than the headers' may write records of another size
// (a kind grew fields, or this build is newer). CUPTI's iterator still finds
// them; the raw dump's bytes are laid out again in this build's sizes so
// its replay (WalkRecords) reads the same records. Expected bytes: the same
// records in a RecordBuffer, which lays them out with the headers' sizes.
TEST_CASE("gpu decode: records of another CUPTI's sizes are laid out again in this build's") {
  const auto kernel = Kernel(11, "_Z3fooPf", 1000, 2000, 64, 1, 1, 256, 1, 1, 32);
  const auto copy = Memcpy(12, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 2000, 2500);
  const auto sync = Sync(13, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 3000, 3100);
  const auto device = Device(0, 9, 0);
  RecordBuffer expected;
  expected.Add(device);
  expected.Add(kernel);
  expected.Add(copy);
  expected.Add(sync);

  // Lays records out as a libcupti would whose every record is `delta`
  // bytes longer (negative: shorter) than these headers' structs; the
  // extra bytes are not zero, as a newer CUPTI's fields would not be.
  struct Laid {
    std::vector<uint64_t> words;
    std::vector<size_t> offsets;
    size_t bytes = 0;
    const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(words.data()); }
  };
  const auto lay = [&](int delta, bool with_unknown_kind) {
    Laid l;
    std::vector<uint8_t> bytes;
    const auto put = [&](const void* record, size_t size) {
      l.offsets.push_back(bytes.size());
      const size_t stride = static_cast<size_t>(static_cast<long>(size) + delta);
      const auto* p = static_cast<const uint8_t*>(record);
      bytes.insert(bytes.end(), p, p + std::min(size, stride));
      bytes.resize(l.offsets.back() + stride, 0xAB);
    };
    put(&device, sizeof device);
    put(&kernel, sizeof kernel);
    if (with_unknown_kind) {
      uint64_t unknown[4] = {};
      const auto kind = static_cast<CUpti_ActivityKind>(0x7fff0000);
      std::memcpy(unknown, &kind, sizeof kind);
      put(unknown, sizeof unknown);
    }
    put(&copy, sizeof copy);
    put(&sync, sizeof sync);
    l.bytes = bytes.size();
    l.words.assign((bytes.size() + 7) / 8, 0);
    std::memcpy(l.words.data(), bytes.data(), bytes.size());
    return l;
  };
  const auto same_bytes = [&](const std::vector<uint64_t>& words, size_t n) {
    return n == expected.size() && std::memcmp(words.data(), expected.data(), n) == 0;
  };

  SUBCASE("the headers' own sizes: nothing to do") {
    const Laid l = lay(0, false);
    REQUIRE(l.bytes == expected.size());
    CHECK(cupti::MatchesBuildLayout(l.data(), l.bytes, l.offsets));
  }
  SUBCASE("longer records (a newer CUPTI): each cut to the struct this build reads") {
    const Laid l = lay(16, false);
    CHECK_FALSE(cupti::MatchesBuildLayout(l.data(), l.bytes, l.offsets));
    std::vector<uint64_t> out;
    const size_t n = cupti::RepackRecords(l.data(), l.bytes, l.offsets, out);
    CHECK(same_bytes(out, n));
    // Walked with this build's sizes, the unrepacked bytes do not decode to
    // the four records (the reason for laying them out again).
    cupti::ActivityDecoder d;
    std::vector<GpuActivity> wrong;
    d.DecodeBuffer(l.data(), l.bytes, wrong);
    CHECK((wrong.size() != 4 || d.stats().unparsed_bytes != 0 || d.stats().skipped != 0));
  }
  SUBCASE("shorter records (an older CUPTI): zero-filled to the struct") {
    // The kernel's last 8 bytes are zero in the expected record, so a
    // record without them lays out to the same bytes.
    const auto* k = reinterpret_cast<const uint8_t*>(&kernel);
    REQUIRE(std::all_of(k + sizeof kernel - 8, k + sizeof kernel, [](uint8_t b) { return b == 0; }));
    const auto* dv = reinterpret_cast<const uint8_t*>(&device);
    const auto* cp = reinterpret_cast<const uint8_t*>(&copy);
    const auto* sy = reinterpret_cast<const uint8_t*>(&sync);
    REQUIRE(std::all_of(dv + sizeof device - 8, dv + sizeof device, [](uint8_t b) { return b == 0; }));
    REQUIRE(std::all_of(cp + sizeof copy - 8, cp + sizeof copy, [](uint8_t b) { return b == 0; }));
    REQUIRE(std::all_of(sy + sizeof sync - 8, sy + sizeof sync, [](uint8_t b) { return b == 0; }));
    const Laid l = lay(-8, false);
    CHECK_FALSE(cupti::MatchesBuildLayout(l.data(), l.bytes, l.offsets));
    std::vector<uint64_t> out;
    CHECK(same_bytes(out, cupti::RepackRecords(l.data(), l.bytes, l.offsets, out)));
  }
  SUBCASE("a kind of unknown size is left out") {
    const Laid l = lay(0, true);
    CHECK_FALSE(cupti::MatchesBuildLayout(l.data(), l.bytes, l.offsets));
    std::vector<uint64_t> out;
    CHECK(same_bytes(out, cupti::RepackRecords(l.data(), l.bytes, l.offsets, out)));
  }
}

TEST_CASE("gpu decode: CUPTI's own record iterator walks these buffers like DecodeBuffer") {
  // cuptiActivityGetNextRecord (what the adapter uses) needs no GPU: it
  // must find the same records at the same offsets as the struct-size walk,
  // for every decoded kind and a skipped one.
  RecordBuffer b;
  b.Add(Device(0, 9, 0));
  b.Add(Kernel(1, kMangledSaxpy, 0, 10, 2, 1, 1, 64, 1, 1, 16));
  b.Add(Memcpy(2, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 100, 0, 5));
  b.Add(Peer(3, 100, 0, 1, 0, 5));
  b.Add(Memset(4, 64, 0, 1));
  b.Add(RuntimeApi(5));
  b.Add(Memory(6, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 64, 0));
  b.Add(Sync(7, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 0, 3));
  b.Add(External(8, 42));
  b.Add(Kernel(9, kMangledGemm, 0, 10, 2, 1, 1, 64, 1, 1, 16));
  std::vector<uint8_t> bytes(b.data(), b.data() + b.size());  // CUPTI wants a mutable pointer
  std::vector<const CUpti_Activity*> seen;
  CUpti_Activity* record = nullptr;
  CUptiResult r;
  while ((r = cuptiActivityGetNextRecord(bytes.data(), bytes.size(), &record)) == CUPTI_SUCCESS)
    seen.push_back(record);
  if (r == CUPTI_ERROR_NOT_INITIALIZED) {
    MESSAGE("cuptiActivityGetNextRecord is not available here; skipped");
    return;
  }
  CHECK(r == CUPTI_ERROR_MAX_LIMIT_REACHED);
  REQUIRE(seen.size() == 10);
  size_t offset = 0;
  cupti::ActivityDecoder by_cupti, by_walk;
  std::vector<GpuActivity> a, w;
  for (const CUpti_Activity* rec : seen) {
    CHECK(reinterpret_cast<const uint8_t*>(rec) - bytes.data() == static_cast<ptrdiff_t>(offset));
    offset += cupti::RecordSize(rec->kind);
    by_cupti.Decode(rec, a);
  }
  by_walk.DecodeBuffer(bytes.data(), bytes.size(), w);
  REQUIRE(a.size() == w.size());
  CHECK(a.size() == 9);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].kind == w[i].kind);
    CHECK(a[i].correlation_id == w[i].correlation_id);
  }
}

TEST_CASE("gpu decode: unknown kinds are counted and skipped") {
  RecordBuffer b;
  b.Add(RuntimeApi(1));  // a kind with a known size that is not decoded
  b.Add(Kernel(2, kMangledSaxpy, 0, 10, 1, 1, 1, 32, 1, 1, 8));
  b.Add(Memory(3, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 8, 0));
  b.Add(Kernel(4, kMangledSaxpy, 0, 10, 1, 1, 1, 32, 1, 1, 8));
  cupti::ActivityDecoder d;
  auto out = DecodeAll(d, b);
  CHECK(out.size() == 2);
  CHECK(d.stats().records == 4);
  CHECK(d.stats().decoded == 2);
  CHECK(d.stats().skipped == 2);

  // A kind without a known size ends a buffer walk: the record and the rest
  // of the buffer are counted, never misread.
  RecordBuffer bad;
  bad.Add(Kernel(5, kMangledSaxpy, 0, 10, 1, 1, 1, 32, 1, 1, 8));
  CUpti_ActivityExternalCorrelation weird = External(6, 1);
  weird.kind = static_cast<CUpti_ActivityKind>(9999);
  bad.Add(weird);
  bad.Add(Kernel(7, kMangledSaxpy, 0, 10, 1, 1, 1, 32, 1, 1, 8));
  cupti::ActivityDecoder d2;
  out = DecodeAll(d2, bad);
  REQUIRE(out.size() == 1);
  CHECK(out[0].correlation_id == 5);
  CHECK(d2.stats().skipped == 1);
  CHECK(d2.stats().unparsed_bytes == sizeof(CUpti_ActivityExternalCorrelation) + sizeof(CUpti_ActivityKernel10));

  // Record-by-record decoding (the adapter's path) skips any kind.
  cupti::ActivityDecoder d3;
  std::vector<GpuActivity> one;
  d3.Decode(reinterpret_cast<const CUpti_Activity*>(&weird), one);
  CHECK(one.empty());
  CHECK(d3.stats().skipped == 1);

  // A truncated buffer: the partial record is not read.
  cupti::ActivityDecoder d4;
  std::vector<GpuActivity> part;
  d4.DecodeBuffer(b.data(), sizeof(CUpti_ActivityAPI) + sizeof(CUpti_ActivityKernel10) - 8, part);
  CHECK(part.empty());
  CHECK(d4.stats().unparsed_bytes == sizeof(CUpti_ActivityKernel10) - 8);
}

TEST_CASE("gpu decode: kernel names are demangled once and interned") {
  char copy_of_saxpy[sizeof kMangledSaxpy];
  std::memcpy(copy_of_saxpy, kMangledSaxpy, sizeof kMangledSaxpy);
  char reused[64];
  std::strcpy(reused, "plain_c_kernel");
  RecordBuffer b;
  b.Add(Kernel(1, kMangledSaxpy, 0, 1, 1, 1, 1, 32, 1, 1, 8));
  b.Add(Kernel(2, copy_of_saxpy, 0, 1, 1, 1, 1, 32, 1, 1, 8));  // same text, other pointer
  b.Add(Kernel(3, kMangledGemm, 0, 1, 1, 1, 1, 32, 1, 1, 8));
  b.Add(Kernel(4, reused, 0, 1, 1, 1, 1, 32, 1, 1, 8));
  b.Add(Kernel(5, nullptr, 0, 1, 1, 1, 1, 32, 1, 1, 8));
  cupti::ActivityDecoder d;
  auto out = DecodeAll(d, b);
  REQUIRE(out.size() == 5);
  CHECK(out[0].kernel_name_id == out[1].kernel_name_id);
  CHECK(out[2].kernel_name == "void gemm<128>(float const*, float const*, float*, int, int, int)");
  CHECK(out[3].kernel_name == "plain_c_kernel");
  CHECK(out[4].kernel_name_id == 0);
  CHECK(out[4].kernel_name.empty());
  CHECK(d.kernel_name_count() == 3);
  // The same address later holding another name (an unloaded module's
  // memory reused) is a different kernel.
  std::strcpy(reused, "other_kernel");
  RecordBuffer b2;
  b2.Add(Kernel(6, reused, 0, 1, 1, 1, 1, 32, 1, 1, 8));
  out = DecodeAll(d, b2);
  CHECK(out[0].kernel_name == "other_kernel");
  CHECK(out[0].kernel_name_id == 4);
}

// ------------------------------------------------------------ the API table

TEST_CASE("gpu cupti: callback ids map to GPU operation kinds") {
  auto rt = [](CUpti_CallbackId id) { return cupti::LaunchKindOf(CUPTI_CB_DOMAIN_RUNTIME_API, id); };
  auto dr = [](CUpti_CallbackId id) { return cupti::LaunchKindOf(CUPTI_CB_DOMAIN_DRIVER_API, id); };
  // Kernel launches, cooperative launches, graph launches.
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) == GpuOpKind::kKernel);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000) == GpuOpKind::kKernel);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060) == GpuOpKind::kKernel);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000) == GpuOpKind::kKernel);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000) == GpuOpKind::kKernel);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000) == GpuOpKind::kKernel);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000) == GpuOpKind::kKernel);
  CHECK(rt(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000) == GpuOpKind::kKernel);
  CHECK(dr(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == GpuOpKind::kKernel);
  CHECK(dr(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) == GpuOpKind::kKernel);
  CHECK(dr(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) == GpuOpKind::kKernel);
  CHECK(dr(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel) == GpuOpKind::kKernel);
  CHECK(dr(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice) == GpuOpKind::kKernel);
  CHECK(dr(CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid) == GpuOpKind::kKernel);
  CHECK(dr(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch) == GpuOpKind::kKernel);
  CHECK(dr(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) == GpuOpKind::kKernel);
  // Copies: sync/async, 1D/2D/3D, arrays, symbols, peer, batches.
  for (CUpti_CallbackId id :
       {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArray_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_v4000,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000}) {
    CAPTURE(id);
    CHECK(rt(id) == GpuOpKind::kCopy);
  }
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2,
                              CUPTI_DRIVER_TRACE_CBID_cu64MemcpyHtoD}) {
    CAPTURE(id);
    CHECK(dr(id) == GpuOpKind::kCopyIn);
  }
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2_ptds}) {
    CAPTURE(id);
    CHECK(dr(id) == GpuOpKind::kCopyOut);
  }
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2}) {
    CAPTURE(id);
    CHECK(dr(id) == GpuOpKind::kCopy);
  }
  // Memsets.
  for (CUpti_CallbackId id :
       {CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000})
    CHECK(rt(id) == GpuOpKind::kMemset);
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
                              CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2_ptds, CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz})
    CHECK(dr(id) == GpuOpKind::kMemset);
  // Allocation and release.
  for (CUpti_CallbackId id :
       {CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
        CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000})
    CHECK(rt(id) == GpuOpKind::kAlloc);
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
                              CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2, CUPTI_DRIVER_TRACE_CBID_cuMemCreate})
    CHECK(dr(id) == GpuOpKind::kAlloc);
  for (CUpti_CallbackId id :
       {CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000})
    CHECK(rt(id) == GpuOpKind::kFree);
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
                              CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, CUPTI_DRIVER_TRACE_CBID_cuMemRelease})
    CHECK(dr(id) == GpuOpKind::kFree);
  // Synchronization: device/context, stream, event, stream-wait-event.
  for (CUpti_CallbackId id :
       {CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020})
    CHECK(rt(id) == GpuOpKind::kSync);
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
                              CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz})
    CHECK(dr(id) == GpuOpKind::kSync);
  // Calls that launch nothing.
  for (CUpti_CallbackId id :
       {CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000,
        CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaMemGetInfo_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaMemSetMemPool_v13000})
    CHECK_FALSE(rt(id).has_value());
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuModuleLoad,
                              CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemcpyNode, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32})
    CHECK_FALSE(dr(id).has_value());
  CHECK_FALSE(cupti::LaunchKindOf(CUPTI_CB_DOMAIN_RESOURCE, 1).has_value());
  CHECK_FALSE(cupti::LaunchKindOf(CUPTI_CB_DOMAIN_NVTX, 1).has_value());

  // The table's size: every launching call of the CUDA 13.0 headers.
  int runtime = 0, driver = 0;
  for (CUpti_CallbackId id = 0; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id) runtime += rt(id).has_value();
  for (CUpti_CallbackId id = 0; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) driver += dr(id).has_value();
  CHECK(runtime == 107);
  CHECK(driver == 185);
}

TEST_CASE("gpu cupti: copy direction from cudaMemcpy parameters") {
  CHECK(cupti::CopyKindOfMemcpyKind(cudaMemcpyHostToDevice) == GpuOpKind::kCopyIn);
  CHECK(cupti::CopyKindOfMemcpyKind(cudaMemcpyDeviceToHost) == GpuOpKind::kCopyOut);
  CHECK(cupti::CopyKindOfMemcpyKind(cudaMemcpyDeviceToDevice) == GpuOpKind::kCopy);
  CHECK(cupti::CopyKindOfMemcpyKind(cudaMemcpyDefault) == GpuOpKind::kCopy);
  cudaMemcpy_v3020_params p{nullptr, nullptr, 16, cudaMemcpyDeviceToHost};
  CHECK(cupti::RefineLaunchKind(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &p,
                                GpuOpKind::kCopy) == GpuOpKind::kCopyOut);
  cudaMemcpyAsync_v3020_params pa{nullptr, nullptr, 16, cudaMemcpyHostToDevice, nullptr};
  CHECK(cupti::RefineLaunchKind(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &pa,
                                GpuOpKind::kCopy) == GpuOpKind::kCopyIn);
  cudaMemcpy2D_v3020_params p2{nullptr, 0, nullptr, 0, 4, 4, cudaMemcpyHostToHost};
  CHECK(cupti::RefineLaunchKind(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, &p2,
                                GpuOpKind::kCopy) == GpuOpKind::kCopy);
  // Without parameters, or for other calls, the table's kind stands.
  CHECK(cupti::RefineLaunchKind(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, nullptr,
                                GpuOpKind::kCopy) == GpuOpKind::kCopy);
  CHECK(cupti::RefineLaunchKind(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &p,
                                GpuOpKind::kCopyIn) == GpuOpKind::kCopyIn);
}

// ------------------------------------------------------------ occupancy

TEST_CASE("occupancy: configurations computed by hand from the CUDA occupancy formula") {
  // sm_90, 256 threads, 32 regs, no shared memory.
  //   warps/block = 256/32 = 8; warp slots: 64/8 = 8 blocks.
  //   registers: 32·32 = 1024 per warp (a multiple of 256); each of the 4
  //   partitions has 65536/4 = 16384 → 16 warps, 64 per SM → 64/8 = 8 blocks.
  //   shared memory: 0 + 1 KiB reserve = 1024 B → 228 KiB / 1 KiB = 228.
  //   blocks/SM limit 32.  min = 8 blocks = 64 warps = 64/64 = 100 %.
  Occupancy o = Occ(9, 0, 256, 32);
  CHECK(o.active_blocks_per_sm == 8);
  CHECK(o.percent == doctest::Approx(100.0));
  CHECK((o.limiters & kLimitWarps) != 0);

  // sm_90, 1024 threads, 64 regs: limited by registers.
  //   warps/block = 32; warp slots: 64/32 = 2 blocks.
  //   registers: 64·32 = 2048 per warp; 16384/2048 = 8 warps per partition,
  //   32 per SM → 32/32 = 1 block (the block's 65536 registers fit the
  //   65536-per-block limit exactly).  min = 1 block = 32 warps = 50 %.
  o = Occ(9, 0, 1024, 64);
  CHECK(o.active_blocks_per_sm == 1);
  CHECK(o.percent == doctest::Approx(50.0));
  CHECK(o.limiters == kLimitRegisters);

  // sm_90, 1024 threads, 72 regs: 72·32 = 2304 per warp, 32 warps need
  // 73728 > 65536 registers per block: cannot launch → 0 %.
  CHECK(Occ(9, 0, 1024, 72).percent == 0);

  // sm_90, 96 threads, 37 regs: register rounding.
  //   warps/block = 3; warp slots 64/3 = 21.
  //   registers: 37·32 = 1184 → rounded up to 1280; 16384/1280 = 12 warps
  //   per partition, 48 per SM → 48/3 = 16 blocks.  min = 16 blocks =
  //   48 warps = 75 %.
  o = Occ(9, 0, 96, 37);
  CHECK(o.active_blocks_per_sm == 16);
  CHECK(o.percent == doctest::Approx(75.0));

  // sm_86, 128 threads, 40 regs, 16 KiB static shared memory.
  //   warps/block = 4; warp slots 48/4 = 12.
  //   registers: 40·32 = 1280 per warp; 16384/1280 = 12 warps per
  //   partition, 48 per SM → 12 blocks.  blocks/SM 16.
  //   shared memory: 16384 + 1024 reserve = 17408 (a multiple of 128);
  //   100 KiB = 102400 / 17408 = 5 blocks.
  //   min = 5 blocks = 20 warps of 48 = 41.67 %.
  o = Occ(8, 6, 128, 40, 16 * 1024);
  CHECK(o.active_blocks_per_sm == 5);
  CHECK(o.percent == doctest::Approx(100.0 * 20 / 48));
  CHECK(o.limiters == kLimitSharedMemory);

  // sm_80, 256 threads, 32 regs, 48 KiB dynamic shared memory.
  //   shared memory: 49152 + 1024 = 50176 = 392·128; 164 KiB = 167936 /
  //   50176 = 3 blocks (warps would allow 8, registers 8).
  //   3 blocks = 24 warps of 64 = 37.5 %.
  o = Occ(8, 0, 256, 32, 0, 48 * 1024);
  CHECK(o.active_blocks_per_sm == 3);
  CHECK(o.percent == doctest::Approx(37.5));
  // The same launch with the carveout the driver chose (100 KiB):
  // 102400 / 50176 = 2 blocks = 16 warps = 25 %.
  CHECK(Occ(8, 0, 256, 32, 0, 48 * 1024, 100 * 1024).percent == doctest::Approx(25.0));

  // sm_75 (Turing: 32 warps, 16 blocks per SM, no reserve), 1024 threads,
  // 32 regs: warp slots 32/32 = 1 block → 32 warps of 32 = 100 %.
  o = Occ(7, 5, 1024, 32);
  CHECK(o.active_blocks_per_sm == 1);
  CHECK(o.percent == doctest::Approx(100.0));

  // The blocks-per-SM limit differs per architecture (HPCToolkit used one
  // fixed value). 32-thread blocks (1 warp), 16 regs:
  //   sm_90: 32 blocks → 32 of 64 warps = 50 %; sm_89: 24 of 48 = 50 %;
  //   sm_86: 16 of 48 = 33.3 %; sm_120: 24 of 48 = 50 %; sm_70: 32 of 64.
  CHECK(Occ(9, 0, 32, 16).percent == doctest::Approx(50.0));
  CHECK(Occ(8, 9, 32, 16).percent == doctest::Approx(50.0));
  CHECK(Occ(8, 6, 32, 16).percent == doctest::Approx(100.0 / 3));
  CHECK(Occ(12, 0, 32, 16).percent == doctest::Approx(50.0));
  CHECK(Occ(7, 0, 32, 16).percent == doctest::Approx(50.0));
  CHECK(Occ(8, 6, 32, 16).limiters == kLimitBlocks);

  // Too many threads, registers or shared memory: cannot run.
  CHECK(Occ(9, 0, 2048, 16).percent == 0);
  CHECK(Occ(9, 0, 128, 256).percent == 0);
  CHECK(Occ(8, 6, 128, 16, 0, 120 * 1024).percent == 0);

  // Minor versions fall back to the closest lower one of the same major.
  CHECK(FindArchLimits(8, 7) == FindArchLimits(8, 6));
  CHECK(FindArchLimits(10, 3) == FindArchLimits(10, 0));
  CHECK(FindArchLimits(12, 1) == FindArchLimits(12, 0));
  CHECK(FindArchLimits(6, 0) == nullptr);
  CHECK(KnownArchitectures().size() == 8);
}

TEST_CASE("occupancy: agrees with the CUDA toolkit's cuda_occupancy.h") {
  const uint32_t threads[] = {32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024};
  const uint32_t regs[] = {0, 16, 24, 32, 37, 40, 48, 64, 80, 96, 128, 168, 255};
  const uint32_t smem[] = {0, 1024, 4000, 16 * 1024, 40 * 1024, 48 * 1024, 64 * 1024, 90 * 1024};
  int compared = 0;
  for (const GpuArchLimits& arch : KnownArchitectures()) {
    cudaOccDeviceProp prop;
    prop.computeMajor = static_cast<int>(arch.cc_major);
    prop.computeMinor = static_cast<int>(arch.cc_minor);
    prop.maxThreadsPerBlock = 1024;
    prop.maxThreadsPerMultiprocessor = static_cast<int>(arch.max_warps_per_sm * 32);
    prop.regsPerBlock = 65536;
    prop.regsPerMultiprocessor = 65536;
    prop.warpSize = 32;
    prop.sharedMemPerBlock = 48 * 1024;
    prop.sharedMemPerMultiprocessor = arch.smem_per_sm;
    prop.numSms = 1;
    prop.sharedMemPerBlockOptin = arch.smem_per_block_optin;
    prop.reservedSharedMemPerBlock = arch.smem_reserved_per_block;
    cudaOccDeviceState state;
    for (uint32_t t : threads)
      for (uint32_t r : regs)
        for (uint32_t s : smem) {
          if (s + arch.smem_reserved_per_block >= arch.smem_per_block_optin) continue;  // boundary differs: see gpu_metrics.cc
          cudaOccFuncAttributes attr;
          attr.maxThreadsPerBlock = 1024;
          attr.numRegs = static_cast<int>(r);
          attr.sharedSizeBytes = s / 2;
          attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
          attr.maxDynamicSharedSizeBytes = arch.smem_per_block_optin - s / 2;
          attr.numBlockBarriers = 1;
          cudaOccResult result;
          REQUIRE(cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, static_cast<int>(t),
                                                          s - s / 2) == CUDA_OCC_SUCCESS);
          KernelLaunchConfig c;
          c.threads_per_block = t;
          c.registers_per_thread = r;
          c.static_shared_bytes = s / 2;
          c.dynamic_shared_bytes = s - s / 2;
          const Occupancy o = TheoreticalOccupancy(arch, c);
          CAPTURE(arch.cc_major);
          CAPTURE(arch.cc_minor);
          CAPTURE(t);
          CAPTURE(r);
          CAPTURE(s);
          CHECK(static_cast<int>(o.active_blocks_per_sm) == result.activeBlocksPerMultiprocessor);
          ++compared;
        }
  }
  CHECK(compared > 5000);
}

TEST_CASE("occupancy: a device record's limits take precedence over the table") {
  GpuDeviceLimits d;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.max_warps_per_sm = 64;
  d.max_blocks_per_sm = 32;
  d.regs_per_sm = 65536;
  d.smem_per_sm = 228 * 1024;
  GpuArchLimits a;
  REQUIRE(LimitsForDevice(d, &a));
  CHECK(a.smem_reserved_per_block == 1024);
  CHECK(a.max_blocks_per_sm == 32);
  d.max_blocks_per_sm = 16;  // a (hypothetical) device that says otherwise
  REQUIRE(LimitsForDevice(d, &a));
  CHECK(a.max_blocks_per_sm == 16);
  // An architecture newer than the table: the device's own limits.
  GpuDeviceLimits future{14, 0, 200, 64, 32, 65536, 256 * 1024, 48 * 1024, 1024};
  REQUIRE(LimitsForDevice(future, &a));
  CHECK(a.max_warps_per_sm == 64);
  KernelLaunchConfig c;
  c.threads_per_block = 256;
  c.registers_per_thread = 32;
  CHECK(TheoreticalOccupancy(a, c).percent == doctest::Approx(100.0));
  // Nothing to go on.
  CHECK_FALSE(LimitsForDevice(GpuDeviceLimits{14, 0}, &a));
}

// ------------------------------------------------------------ attribution

namespace {

GpuActivity KernelActivity(uint32_t corr, uint32_t threads, uint32_t grid, uint16_t regs, uint64_t ns,
                           uint32_t name_id = 0, std::string_view name = {}) {
  GpuActivity a;
  a.kind = GpuActivityKind::kKernel;
  a.correlation_id = corr;
  a.start_ns = 1000;
  a.end_ns = 1000 + ns;
  a.block_x = threads, a.block_y = 1, a.block_z = 1;
  a.grid_x = grid, a.grid_y = 1, a.grid_z = 1;
  a.registers_per_thread = regs;
  a.kernel_name_id = name_id;
  a.kernel_name = name;
  return a;
}

// A host-to-device copy of `bytes` taking `ns`.
GpuActivity CopyInActivity(uint32_t corr, uint64_t bytes, uint64_t ns) {
  GpuActivity a;
  a.kind = GpuActivityKind::kMemcpy;
  a.copy = CopyDirection::kH2D;
  a.correlation_id = corr;
  a.bytes = bytes;
  a.end_ns = ns;
  return a;
}

const GpuNodeMetrics& At(const GpuAttributor& attr, uint32_t node) {
  const GpuNodeMetrics* m = attr.Find(node);
  REQUIRE(m != nullptr);
  return *m;
}

GpuActivity DeviceActivity(uint32_t id, uint32_t major, uint32_t minor) {
  GpuActivity a;
  a.kind = GpuActivityKind::kDevice;
  a.device_id = id;
  a.device.cc_major = major;
  a.device.cc_minor = minor;
  return a;
}

}  // namespace

TEST_CASE("gpu attribution: decoded buffers accumulate per launch site") {
  RecordBuffer b;
  b.Add(Device(0, 9, 0));
  // Site 10 (node 1): two launches of one kernel; site 11 (node 2): another.
  b.Add(Kernel(10, kMangledSaxpy, 0, 100, 120, 1, 1, 256, 1, 1, 32, 0, 0, 8));
  b.Add(Kernel(12, kMangledSaxpy, 0, 300, 40, 2, 1, 256, 1, 1, 32, 1024, 2048, 0));
  b.Add(Kernel(11, kMangledGemm, 0, 1000, 8, 8, 1, 32, 32, 1, 64));
  // Copies, one site per direction (node 3).
  b.Add(Memcpy(20, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1000, 0, 10));
  b.Add(Memcpy(20, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 2000, 0, 20));
  b.Add(Memcpy(20, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 3000, 0, 30));
  b.Add(Memcpy(20, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, 4000, 0, 40));
  b.Add(Peer(20, 5000, 0, 1, 0, 50));
  b.Add(Memcpy(20, CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, 6000, 0, 60));
  // Memset (node 4), allocations and frees (node 5), syncs (node 6).
  b.Add(Memset(30, 4096, 0, 7));
  b.Add(Memset(30, 4096, 0, 9));
  b.Add(Memory(40, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 5));
  b.Add(Memory(40, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 4096, 6));
  b.Add(Memory(40, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 8192, 6));
  b.Add(Memory(40, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20, 7));
  b.Add(Sync(50, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 0, 100));
  b.Add(Sync(50, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 0, 200));
  b.Add(Sync(50, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 0, 300));
  b.Add(Sync(50, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 0, 400));
  b.Add(Sync(50, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN, 0, 500));
  b.Add(External(10, 99));

  cupti::ActivityDecoder d;
  auto activities = DecodeAll(d, b);
  // The adapter's timed allocation call (kMemoryApi) for site 40.
  GpuActivity api;
  api.kind = GpuActivityKind::kMemoryApi;
  api.correlation_id = 40;
  api.start_ns = 100;
  api.end_ns = 1100;
  activities.push_back(api);

  LaunchSites sites = {{10, {1, GpuOpKind::kKernel}}, {12, {1, GpuOpKind::kKernel}}, {11, {2, GpuOpKind::kKernel}},
                       {20, {3, GpuOpKind::kCopy}},   {30, {4, GpuOpKind::kMemset}}, {40, {5, GpuOpKind::kAlloc}},
                       {50, {6, GpuOpKind::kSync}}};
  GpuAttributor attr(/*unknown_node=*/99);
  attr.Add(sites, activities);
  attr.Flush(sites, /*give_up=*/true);
  CHECK(attr.stats().unknown == 0);
  CHECK(attr.stats().devices == 1);
  CHECK(attr.stats().activities == activities.size() - 2);  // all but the device and external records
  REQUIRE(attr.external().count(10) == 1);
  CHECK(attr.external().at(10).id == 99);

  const GpuNodeMetrics& k1 = At(attr, 1);
  CHECK(k1.gker_count == 2);
  CHECK(k1.gker_ns == 400);
  CHECK(k1.blk_thr_acc == 512);
  CHECK(k1.blks_acc == 120 + 80);  // grid sizes: 120·1·1 and 40·2·1 blocks
  CHECK(k1.thr_reg_acc == 64);
  CHECK(k1.stmem_acc == 1024);
  CHECK(k1.dymem_acc == 2048);
  CHECK(k1.lmem_acc == 8);
  // sm_90, 256 threads, 32 regs: 100 % (see the occupancy test); with
  // 1 KiB static + 2 KiB dynamic + 1 KiB reserve = 4 KiB per block, 57
  // blocks fit in 228 KiB: still warp-limited at 8 → 100 %.
  CHECK(k1.occ_acc == doctest::Approx(200.0));
  const GpuNodeMetrics& k2 = At(attr, 2);
  CHECK(k2.gker_count == 1);
  CHECK(k2.blk_thr_acc == 1024);  // 32·32·1 threads per block
  CHECK(k2.blks_acc == 64);       // 8·8·1 blocks
  CHECK(k2.occ_acc == doctest::Approx(50.0));  // 1024 threads, 64 regs on sm_90
  const GpuNodeMetrics& c = At(attr, 3);
  CHECK(c.gxcopy_count == 6);
  CHECK(c.gxcopy_ns == 210);
  CHECK(c.gxcopy_bytes[0] == 1000);  // h2d
  CHECK(c.gxcopy_bytes[1] == 2000);  // d2h
  CHECK(c.gxcopy_bytes[2] == 3000);  // d2d
  CHECK(c.gxcopy_bytes[3] == 4000);  // h2h
  CHECK(c.gxcopy_bytes[4] == 5000);  // p2p
  const GpuNodeMetrics& s = At(attr, 4);
  CHECK(s.gmset_count == 2);
  CHECK(s.gmset_ns == 16);
  CHECK(s.gmset_bytes == 8192);
  const GpuNodeMetrics& mem = At(attr, 5);
  CHECK(mem.gmem_count == 3);
  CHECK(mem.gmem_free_count == 1);
  CHECK(mem.gmem_bytes[GmemSlot(GpuMemoryKind::kDevice)] == 1 << 20);
  CHECK(mem.gmem_bytes[GmemSlot(GpuMemoryKind::kPinned)] == 4096);
  CHECK(mem.gmem_bytes[GmemSlot(GpuMemoryKind::kManaged)] == 8192);
  CHECK(mem.gmem_freed == 1 << 20);
  CHECK(mem.gmem_ns == 1000);
  const GpuNodeMetrics& sy = At(attr, 6);
  CHECK(sy.gsync_count == 5);
  CHECK(sy.gsync_ns == 1500);
  CHECK(sy.gsync_kind_ns[0] == 100);  // evt
  CHECK(sy.gsync_kind_ns[1] == 200);  // stre
  CHECK(sy.gsync_kind_ns[2] == 300);  // str
  CHECK(sy.gsync_kind_ns[3] == 400);  // ctx
}

TEST_CASE("gpu attribution: unknown correlation ids are counted and go to the unknown node") {
  GpuAttributor attr(/*unknown_node=*/99, nullptr, /*patience=*/2);
  attr.SetDevice(0, GpuDeviceLimits{9, 0});
  LaunchSites sites = {{1, {1, GpuOpKind::kKernel}}};
  std::vector<GpuActivity> batch = {KernelActivity(1, 256, 10, 32, 100), KernelActivity(777, 256, 10, 32, 50),
                                    KernelActivity(0, 128, 1, 16, 5)};
  attr.Add(sites, batch);
  // Correlation id 0 (no launching call): unknown at once.
  CHECK(attr.stats().no_correlation == 1);
  CHECK(At(attr, 99).gker_count == 1);
  // Id 777 waits for `patience` flushes, then goes to unknown.
  CHECK(attr.pending() == 1);
  attr.Flush(sites, false);
  CHECK(attr.pending() == 1);
  attr.Flush(sites, false);
  CHECK(attr.pending() == 0);
  CHECK(attr.stats().unknown == 2);
  CHECK(At(attr, 99).gker_count == 2);
  CHECK(At(attr, 99).gker_ns == 55);
  CHECK(At(attr, 1).gker_count == 1);
  CHECK(attr.stats().activities == 3);
}

TEST_CASE("gpu attribution: out-of-order records wait for their launch") {
  GpuAttributor attr(/*unknown_node=*/99);
  attr.SetDevice(0, GpuDeviceLimits{8, 0});
  LaunchSites sites;
  // The activity arrives before the runtime has recorded its launch.
  const GpuActivity copy = CopyInActivity(5, 64, 8);
  attr.Add(sites, std::vector<GpuActivity>{copy, KernelActivity(6, 64, 1, 8, 10)});
  CHECK(attr.pending() == 2);
  CHECK(attr.metrics().empty());
  // The launches become known; the next flush attributes them.
  sites[5] = {7, GpuOpKind::kCopyIn};
  sites[6] = {8, GpuOpKind::kKernel};
  attr.Flush(sites, false);
  CHECK(attr.pending() == 0);
  CHECK(attr.stats().late == 2);
  CHECK(attr.stats().unknown == 0);
  CHECK(At(attr, 7).gxcopy_bytes[0] == 64);
  CHECK(At(attr, 8).gker_count == 1);
  // And records after their launch (the usual order) attribute at once.
  attr.Add(sites, std::vector<GpuActivity>{copy});
  CHECK(At(attr, 7).gxcopy_count == 2);
  // Giving up at exit sends whatever still waits to unknown.
  attr.Add(sites, std::vector<GpuActivity>{KernelActivity(1234, 64, 1, 8, 10)});
  attr.Flush(sites, /*give_up=*/true);
  CHECK(attr.pending() == 0);
  CHECK(At(attr, 99).gker_count == 1);
  // A full pending queue sends new strays to unknown at once.
  GpuAttributor small(99, nullptr, 2, /*max_pending=*/1);
  small.Add(LaunchSites{}, std::vector<GpuActivity>{KernelActivity(1, 64, 1, 8, 10), KernelActivity(2, 64, 1, 8, 10)});
  CHECK(small.pending() == 1);
  CHECK(small.stats().pending_overflow == 1);
  CHECK(At(small, 99).gker_count == 1);
}

TEST_CASE("gpu attribution: kernels of a CUDA graph attribute to the graph launch site") {
  // cudaGraphLaunch has correlation id 70; its kernels' records carry it,
  // with their graph id and node ids, and names the launch never saw.
  std::map<std::pair<uint32_t, std::string>, uint32_t> children;
  KernelNodeFn kernel_node = [&](uint32_t site, std::string_view name) {
    auto key = std::make_pair(site, std::string(name));
    auto it = children.find(key);
    if (it != children.end()) return it->second;
    const uint32_t node = 1000 + static_cast<uint32_t>(children.size());
    children.emplace(key, node);
    return node;
  };
  GpuAttributor attr(/*unknown_node=*/99, kernel_node);
  LaunchSites sites = {{70, {5, GpuOpKind::kKernel}}};
  std::vector<GpuActivity> batch = {DeviceActivity(0, 9, 0)};
  for (int i = 0; i < 3; ++i) {
    GpuActivity a = KernelActivity(70, 128, 4, 16, 10, 1, "step_a(float*)");
    a.graph_id = 2;
    a.graph_node_id = 10 + i;
    batch.push_back(a);
    GpuActivity b = KernelActivity(70, 128, 4, 16, 20, 2, "step_b(float*)");
    b.graph_id = 2;
    batch.push_back(b);
  }
  GpuActivity gcopy;
  gcopy.kind = GpuActivityKind::kMemcpy;
  gcopy.copy = CopyDirection::kD2H;
  gcopy.correlation_id = 70;
  gcopy.bytes = 128;
  gcopy.graph_id = 2;
  batch.push_back(gcopy);
  attr.Add(sites, batch);
  CHECK(attr.stats().unknown == 0);
  REQUIRE(children.size() == 2);
  const uint32_t a_node = children.at({5, "step_a(float*)"});
  const uint32_t b_node = children.at({5, "step_b(float*)"});
  CHECK(At(attr, a_node).gker_count == 3);
  CHECK(At(attr, a_node).gker_ns == 30);
  CHECK(At(attr, b_node).gker_count == 3);
  CHECK(At(attr, b_node).gker_ns == 60);
  // Non-kernel graph nodes go to the launch site itself.
  CHECK(At(attr, 5).gxcopy_bytes[1] == 128);
  // Without a resolver, everything goes to the launch site.
  GpuAttributor flat(99);
  flat.Add(sites, batch);
  CHECK(At(flat, 5).gker_count == 6);
}

TEST_CASE("gpu attribution: dropped-record counts and kernels without device limits") {
  GpuAttributor attr(99);
  attr.AddDropped(17);
  attr.AddDropped(3);
  CHECK(attr.stats().dropped == 20);
  LaunchSites sites = {{1, {1, GpuOpKind::kKernel}}};
  attr.Add(sites, std::vector<GpuActivity>{KernelActivity(1, 256, 1, 32, 10)});
  CHECK(attr.stats().kernels_without_device == 1);
  CHECK(At(attr, 1).occ_acc == 0);
  // A device learned later serves every device id it does not know.
  attr.Add(sites, std::vector<GpuActivity>{DeviceActivity(0, 9, 0)});
  GpuActivity k = KernelActivity(1, 256, 1, 32, 10);
  k.device_id = 4;
  attr.Add(sites, std::vector<GpuActivity>{k});
  CHECK(attr.stats().kernels_without_device == 1);
  CHECK(At(attr, 1).occ_acc == doctest::Approx(100.0));
  // TakeMetrics hands over and starts afresh.
  auto taken = attr.TakeMetrics();
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].node == 1);
  CHECK(taken[0].metrics.gker_count == 2);
  CHECK(attr.metrics().empty());
  attr.Add(sites, std::vector<GpuActivity>{k});
  CHECK(At(attr, 1).gker_count == 1);
}

TEST_CASE("gpu metrics: AddTo registers the catalog metrics and averages come out per launch") {
  cct::Tree tree;
  const cct::FrameId thread = tree.InternFrame(cct::FrameKind::kThread, "main");
  const cct::FrameId ph = tree.InternFrame(cct::FrameKind::kGpuOp, cct::GpuOpPlaceholder(GpuOpKind::kKernel));
  const cct::FrameId k1 = tree.InternFrame(cct::FrameKind::kKernel, "k1");
  const cct::FrameId k2 = tree.InternFrame(cct::FrameKind::kKernel, "k2");
  const cct::NodeId t = tree.InternChild(cct::kRootNode, thread);
  const cct::NodeId p = tree.InternChild(t, ph);
  const cct::NodeId n1 = tree.InternChild(p, k1);
  const cct::NodeId n2 = tree.InternChild(p, k2);

  GpuAttributor attr(0);
  attr.SetDevice(0, GpuDeviceLimits{9, 0});
  LaunchSites sites = {{1, {n1, GpuOpKind::kKernel}}, {2, {n2, GpuOpKind::kKernel}}, {3, {p, GpuOpKind::kSync}}};
  std::vector<GpuActivity> batch;
  for (int i = 0; i < 3; ++i) batch.push_back(KernelActivity(1, 256, 100, 32, 1000));
  batch.push_back(KernelActivity(2, 1024, 10, 64, 4000));
  GpuActivity sync;
  sync.kind = GpuActivityKind::kSync;
  sync.sync = SyncKind::kContext;
  sync.correlation_id = 3;
  sync.end_ns = 500;
  batch.push_back(sync);
  attr.Add(sites, batch);
  GpuMetricWriter writer(tree);
  for (const auto& [node, m] : attr.metrics()) writer.Add(node, m);

  const cct::MetricRegistry& reg = tree.metrics();
  for (const char* name : {"gker", "gker:count", "gker:blk_thr_acc", "gker:blks_acc", "gker:thr_reg_acc",
                           "gker:occ_acc", "gker:blk_thr", "gker:blks", "gker:thr_reg", "gker:occ", "gsync",
                           "gsync:ctx", "gsync:count", "gpuop"}) {
    CAPTURE(name);
    CHECK(reg.Find(name) != cct::kNoMetric);
  }
  // Nothing copied, nothing allocated: those columns stay unregistered,
  // except the parts of gpuop's formula.
  CHECK(reg.Find("gxcopy:h2d") == cct::kNoMetric);
  CHECK(reg.Find("gmem:dev") == cct::kNoMetric);
  CHECK(reg.Find("gxcopy") != cct::kNoMetric);

  cct::NodeValues values(tree);
  // Per-launch averages over the placeholder's subtree: (3·256 + 1024)/4.
  CHECK(values.Inclusive(reg.Find("gker:blk_thr"))[p] == doctest::Approx(448.0));
  // Grid size in blocks: (3·100 + 10)/4.
  CHECK(values.Inclusive(reg.Find("gker:blks"))[p] == doctest::Approx(77.5));
  CHECK(values.Inclusive(reg.Find("gker:occ"))[n1] == doctest::Approx(100.0));
  CHECK(values.Inclusive(reg.Find("gker:occ"))[n2] == doctest::Approx(50.0));
  CHECK(values.Inclusive(reg.Find("gker:occ"))[p] == doctest::Approx(87.5));
  // gpuop = kernels + sync.
  CHECK(values.Total(reg.Find("gpuop")) == doctest::Approx(3 * 1000 + 4000 + 500));
  CHECK(values.Total(reg.Find("gker:count")) == 4);

  // The one-call form registers and adds the same way.
  cct::Tree other;
  const cct::NodeId on = other.InternChild(cct::kRootNode, other.InternFrame(cct::FrameKind::kKernel, "k"));
  AddTo(other, on, At(attr, n1));
  CHECK(other.Value(on, other.metrics().Find("gker:count")) == 3);
  CHECK(other.metrics().Find("gker:blks") != cct::kNoMetric);
}

TEST_CASE("gpu attribution: launches inside an iteration also count toward it") {
  cct::Tree tree;
  const cct::NodeId t = tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kThread, "main"));
  const cct::NodeId kn = tree.InternChild(t, tree.InternFrame(cct::FrameKind::kKernel, "k"));
  const cct::NodeId cn = tree.InternChild(t, tree.InternFrame(cct::FrameKind::kGpuOp, "<gpu copyin>"));

  GpuAttributor attr(/*unknown_node=*/0);
  attr.SetDevice(0, GpuDeviceLimits{9, 0});
  // Launch k in iteration 0, twice in iteration 1, once outside; a copy in
  // iteration 1; a kernel of iteration 2 whose record comes before its launch.
  LaunchSites sites = {{1, {kn, GpuOpKind::kKernel, 0}}, {2, {kn, GpuOpKind::kKernel, 1}},
                       {3, {kn, GpuOpKind::kKernel, 1}}, {4, {kn, GpuOpKind::kKernel}},
                       {5, {cn, GpuOpKind::kCopyIn, 1}}};
  const GpuActivity copy = CopyInActivity(5, 4096, 30);
  attr.Add(sites, std::vector<GpuActivity>{KernelActivity(1, 256, 10, 32, 100), KernelActivity(2, 256, 20, 32, 200),
                                           KernelActivity(3, 256, 30, 32, 300), KernelActivity(4, 256, 40, 32, 400),
                                           copy, KernelActivity(6, 128, 5, 32, 600)});
  CHECK(attr.pending() == 1);
  sites[6] = {kn, GpuOpKind::kKernel, 2};
  attr.Flush(sites, false);
  CHECK(attr.stats().late == 1);
  // A PC sample of the iteration-1 launch.
  GpuPcSample pc;
  pc.correlation_id = 2;
  pc.samples = 7;
  pc.stall[static_cast<int>(StallSlot::kGmem)] = 7;
  attr.AddPcSamples(sites, std::vector<GpuPcSample>{pc});
  // The run totals are unchanged by iterations: every launch counts once.
  CHECK(At(attr, kn).gker_count == 5);
  CHECK(At(attr, kn).gker_ns == 1600);

  // The run has ended iterations 0 and 1 so far; iteration 2 is still open.
  store::RunIterations its;
  its.iterations.resize(2);
  its.iterations[0].index = 0;
  its.iterations[1].index = 1;
  attr.SealIterations();
  GpuMetricWriter writer(tree);
  for (const GpuNodeEntry& e : attr.metrics()) writer.Add(e.node, e.metrics);
  attr.iteration_values().AppendTo(its, writer, [](uint32_t h) { return cct::NodeId{h}; });
  auto value = [&](size_t k, const char* metric, cct::NodeId node) {
    const cct::MetricId m = tree.metrics().Find(metric);
    REQUIRE(m != cct::kNoMetric);
    double v = 0;
    for (const store::IterationColumn& c : its.iterations[k].columns)
      for (size_t i = 0; c.metric == m && i < c.nodes.size(); ++i)
        if (c.nodes[i] == node) v += c.values[i];
    return v;
  };
  CHECK(value(0, "gker:count", kn) == 1);
  CHECK(value(0, "gker", kn) == 100);
  CHECK(value(0, "gker:blks_acc", kn) == 10);
  CHECK(value(0, "gker:occ_acc", kn) == doctest::Approx(100.0));  // sm_90, 256 threads, 32 registers
  CHECK(value(1, "gker:count", kn) == 2);
  CHECK(value(1, "gker", kn) == 500);
  CHECK(value(1, "gker:blks_acc", kn) == 50);
  CHECK(value(1, "gxcopy:h2d", cn) == 4096);
  CHECK(value(1, "gxcopy:count", cn) == 1);
  CHECK(value(1, "gxcopy:h2d", kn) == 0);
  CHECK(value(1, "gins", kn) == 7);
  CHECK(value(1, "gins:stl_gmem", kn) == 7);
  CHECK(value(0, "gins", kn) == 0);
  // Nothing of the open iteration 2, nothing of the launch outside.
  double count = 0;
  for (const auto& it : its.iterations)
    for (const auto& c : it.columns)
      if (c.metric == tree.metrics().Find("gker:count"))
        for (double v : c.values) count += v;
  CHECK(count == 3);
  // Once iteration 2 has ended too, its late kernel is there.
  its.iterations.resize(3);
  its.iterations[2].index = 2;
  for (auto& it : its.iterations) it.columns.clear();
  attr.iteration_values().AppendTo(its, writer, [](uint32_t h) { return cct::NodeId{h}; });
  CHECK(value(2, "gker:count", kn) == 1);
  CHECK(value(2, "gker", kn) == 600);
}

TEST_CASE("gpu attribution: many (iteration, node) pairs are folded into sparse values without loss") {
  // More pairs than the dense working set: values survive the folding, and
  // a pair folded twice (activity in two deliveries) sums.
  GpuAttributor attr(/*unknown_node=*/0);
  const uint32_t pairs = GpuAttributor::kIterationWorkingSet * 2 + 17;
  LaunchSites sites;
  std::vector<GpuActivity> batch;
  for (uint32_t i = 0; i < pairs; ++i) {
    sites[i + 1] = {1 + i % 64, GpuOpKind::kKernel, i / 64};
    batch.push_back(KernelActivity(i + 1, 32, 1, 16, 10 + i % 7));
  }
  attr.Add(sites, batch);
  attr.Add(sites, std::vector<GpuActivity>{KernelActivity(1, 32, 1, 16, 5)});  // again, pair (0, node 1)
  attr.SealIterations();
  CHECK(attr.iteration_values().values() > 0);
  cct::Tree tree;
  std::vector<cct::NodeId> nodes{0};
  for (uint32_t n = 1; n <= 64; ++n)
    nodes.push_back(tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kKernel, "k" + std::to_string(n))));
  store::RunIterations its;
  its.iterations.resize(pairs / 64 + 1);
  GpuMetricWriter writer(tree);
  attr.iteration_values().AppendTo(its, writer, [&](uint32_t h) { return nodes.at(h); });
  const cct::MetricId gker = tree.metrics().Find("gker"), count = tree.metrics().Find("gker:count");
  double total_ns = 0, total_count = 0, first = 0;
  for (const auto& it : its.iterations)
    for (const auto& c : it.columns)
      for (size_t i = 0; i < c.nodes.size(); ++i) {
        if (c.metric == gker) total_ns += c.values[i];
        if (c.metric == count) total_count += c.values[i];
        if (c.metric == gker && &it == &its.iterations[0] && c.nodes[i] == nodes[1]) first += c.values[i];
      }
  double expect_ns = 5;
  for (uint32_t i = 0; i < pairs; ++i) expect_ns += 10 + i % 7;
  CHECK(total_count == pairs + 1);
  CHECK(total_ns == expect_ns);
  CHECK(first == 10 + 5);
}

TEST_CASE("gpu correlation table: keeps each launch's iteration only when asked to") {
  CorrelationTable with(/*iterations=*/true), without;
  with.Insert(7, LaunchSite{3, GpuOpKind::kKernel, 4});
  without.Insert(7, LaunchSite{3, GpuOpKind::kKernel, 4});
  LaunchSite a, b;
  REQUIRE(with.Find(7, &a));
  REQUIRE(without.Find(7, &b));
  CHECK(a.node == 3);
  CHECK(a.iteration == 4);
  CHECK(b.node == 3);
  CHECK(b.iteration == kNoIteration);
  // A launch outside iterations, and an id 2^20 higher taking the slot.
  with.Insert(8, LaunchSite{5, GpuOpKind::kCopy});
  REQUIRE(with.Find(8, &a));
  CHECK(a.iteration == kNoIteration);
  with.Insert(7 + (1u << 20), LaunchSite{9, GpuOpKind::kSync, 1});
  CHECK_FALSE(with.Find(7, &a));
  REQUIRE(with.Find(7 + (1u << 20), &a));
  CHECK(a.iteration == 1);
  CHECK(a.kind == GpuOpKind::kSync);
}

// ------------------------------------------------------------ the adapter

TEST_CASE("gpu cupti: tracing fails cleanly without a driver or GPU") {
  int launches = 0, deliveries = 0;
  GpuHooks hooks;
  hooks.on_launch = [&](uint64_t, GpuOpKind, const char*) { ++launches; };
  hooks.on_activity = [&](std::vector<GpuActivity>&&, uint64_t, const uint8_t*, size_t) { ++deliveries; };

  // Off: nothing starts, and that is not an error.
  CHECK(StartGpuTracing(GpuMode::kOff, hooks).ok());
  CHECK_FALSE(GpuTracingActive());
  // Flush and stop before any start are no-ops.
  FlushGpuActivity();
  StopGpuTracing();

  const bool have_driver = [] {
    void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    return h != nullptr;
  }();
  for (GpuMode mode : {GpuMode::kAuto, GpuMode::kOn}) {
    cct::Status st = StartGpuTracing(mode, hooks);
    if (st.ok()) {  // a machine with a GPU
      CHECK(GpuTracingActive());
      FlushGpuActivity();
      StopGpuTracing();
      CHECK_FALSE(GpuTracingActive());
      continue;
    }
    MESSAGE("StartGpuTracing: " << st.message());
    CHECK(st.code() == cct::ErrorCode::kUnavailable);
    CHECK_FALSE(st.message().empty());
    CHECK(st.message().find('\n') == std::string::npos);
    CHECK_FALSE(GpuTracingActive());
    if (!have_driver) CHECK(st.message().rfind("no CUDA driver", 0) == 0);
  }

  // CUPTI itself, without the probe: here it must fail with its own reason
  // and leave nothing half started; with a GPU it starts and stops.
  cct::Status st = gpu_internal::StartCupti(hooks);
  if (st.ok()) {
    StopGpuTracing();
  } else {
    MESSAGE("StartCupti: " << st.message());
    CHECK(st.message().rfind("CUPTI: ", 0) == 0);
    CHECK(st.message().find('\n') == std::string::npos);
    CHECK_FALSE(GpuTracingActive());
    // A second attempt fails the same way (state was undone).
    cct::Status again = gpu_internal::StartCupti(hooks);
    CHECK_FALSE(again.ok());
    CHECK_FALSE(GpuTracingActive());
  }
  FlushGpuActivity();
  StopGpuTracing();
  CHECK(launches == 0);
  const GpuTracingStats stats = GetGpuTracingStats();
  CHECK(stats.hook_exceptions == 0);
}
