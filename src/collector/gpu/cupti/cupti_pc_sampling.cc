#include "collector/gpu/cupti/cupti_pc_sampling.h"

#include <cupti_activity.h>
#include <cupti_pcsampling.h>
#include <cupti_result.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "collector/gpu/cupti/cupti_api_kinds.h"
#include "collector/gpu/cupti/cupti_pc_decode.h"
#include "collector/gpu/gpu_pc_sampling.h"

namespace collector::cupti {

namespace {

// GetData rounds per fetch: kGetBufferPcs records each; a kernel with more
// distinct sampled PCs than this × kGetBufferPcs leaves the rest to the
// next fetch.
constexpr int kMaxRounds = 256;

cct::Status PcError(const std::string& call, CUptiResult r) {
  return {cct::ErrorCode::kUnavailable, "PC sampling: " + call + " failed: " + CuptiResultText(r)};
}

// A CUpti_PCSamplingData with room for `num_pcs` records of `num_reasons`
// stall reasons each.
struct PcBuffer {
  CUpti_PCSamplingData data;
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> reasons;
  size_t per_pc = 0;

  void Allocate(size_t num_pcs, size_t num_reasons) {
    per_pc = std::max<size_t>(num_reasons, 1);
    pcs.assign(num_pcs, CUpti_PCSamplingPCData{});
    reasons.assign(num_pcs * per_pc, CUpti_PCSamplingStallReason{});
    std::memset(&data, 0, sizeof data);
    data.size = sizeof(CUpti_PCSamplingData);
    data.collectNumPcs = num_pcs;
    data.pPcData = pcs.data();
    Reset();
  }
  // Every record points at its own stall-reason array with its full
  // capacity: CUPTI writes stallReasonCount back, and a record left with a
  // smaller count would have less room on the next call.
  void Reset() {
    for (size_t i = 0; i < pcs.size(); ++i) {
      pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      pcs[i].stallReasonCount = per_pc;
      pcs[i].stallReason = &reasons[i * per_pc];
    }
    data.totalNumPcs = 0;
    data.remainingNumPcs = 0;
    data.totalSamples = 0;
    data.droppedSamples = 0;
    data.nonUsrKernelsTotalSamples = 0;
    data.hardwareBufferFull = 0;
  }
};

struct Context {
  CUcontext ctx = nullptr;
  uint32_t device_id = 0;
  StallSlotTable stalls;
  std::vector<uint32_t> reason_index;  // handed to CUPTI's STALL_REASON attribute: kept alive
  PcBuffer config;                     // the buffer CUPTI fills (SAMPLING_DATA_BUFFER)
  PcBuffer get;                        // cuptiPCSamplingGetData's target
};

struct State {
  std::mutex mu;  // everything below but deliver_mu
  bool active = false;
  uint32_t period = 0;
  PcDeliverFn deliver;
  std::unordered_map<CUcontext, std::unique_ptr<Context>> contexts;
  std::unordered_map<uint64_t, std::vector<char>> cubins;  // by cuptiGetCubinCrc
  size_t cubin_bytes = 0;
  PcSampleDecoder decoder;
  PcSamplingStats stats;
  cct::Status first_error;
  std::atomic<bool> any_context{false};  // a cheap test before taking mu
  std::mutex deliver_mu;                 // one delivery at a time; never held with mu
};

bool LineFromCubin(State& s, uint64_t crc, uint64_t pc, std::string_view function, std::string* file,
                   uint32_t* line);

State& S() {
  // Never destroyed: samples already delivered view the decoder's names.
  static State* state = [] {
    auto* st = new State();
    st->decoder.set_source_line([st](uint64_t crc, uint64_t pc, std::string_view function, std::string* file,
                                     uint32_t* line) { return LineFromCubin(*st, crc, pc, function, file, line); });
    return st;
  }();
  return *state;
}

void NoteError(State& s, cct::Status st) {
  if (s.first_error.ok() && !st.ok()) s.first_error = std::move(st);
}

// Called with s.mu held (from the decoder).
bool LineFromCubin(State& s, uint64_t crc, uint64_t pc, std::string_view function, std::string* file,
                   uint32_t* line) {
  auto it = s.cubins.find(crc);
  if (it == s.cubins.end() || function.empty()) return false;
  const std::string name(function);
  CUpti_GetSassToSourceCorrelationParams p;
  std::memset(&p, 0, sizeof p);
  p.size = CUpti_GetSassToSourceCorrelationParamsSize;
  p.cubin = it->second.data();
  p.cubinSize = it->second.size();
  p.functionName = name.c_str();
  p.pcOffset = pc;
  const CUptiResult r = cuptiGetSassToSourceCorrelation(&p);
  bool found = false;
  if (r == CUPTI_SUCCESS && p.lineNumber != 0 && p.fileName != nullptr && *p.fileName != '\0') {
    std::string path = p.fileName;
    if (path.front() != '/' && p.dirName != nullptr && *p.dirName != '\0') {
      std::string dir = p.dirName;
      if (dir.back() != '/') dir += '/';
      path = dir + path;
    }
    *file = std::move(path);
    *line = p.lineNumber;
    found = true;
  }
  // CUPTI allocates both strings; the caller frees them (cupti_pcsampling.h).
  std::free(p.fileName);
  std::free(p.dirName);
  return found;
}

// Fetches everything CUPTI holds for the context into `out`.
void Gather(State& s, Context& c, std::vector<GpuPcSample>& out) {
  for (int round = 0; round < kMaxRounds; ++round) {
    c.get.Reset();
    CUpti_PCSamplingGetDataParams p;
    std::memset(&p, 0, sizeof p);
    p.size = CUpti_PCSamplingGetDataParamsSize;
    p.ctx = c.ctx;
    p.pcSamplingData = &c.get.data;
    ++s.stats.get_data_calls;
    const CUptiResult r = cuptiPCSamplingGetData(&p);
    const bool full = r == CUPTI_ERROR_OUT_OF_MEMORY;
    if (full) {
      ++s.stats.hardware_buffer_full;
      NoteError(s, cct::Status(cct::ErrorCode::kUnavailable,
                               "PC sampling: hardware buffer full, samples lost (cuptiPCSamplingGetData: " +
                                   CuptiResultText(r) + ")"));
    } else if (r != CUPTI_SUCCESS) {
      ++s.stats.get_data_errors;
      NoteError(s, PcError("cuptiPCSamplingGetData", r));
      return;
    }
    const size_t got = c.get.data.totalNumPcs;
    s.decoder.Decode(c.get.data, c.stalls, c.device_id, out);
    if (got == 0 || full) return;
    if (got < c.get.pcs.size() && c.get.data.remainingNumPcs == 0) return;
  }
}

cct::Status Configure(State& s, Context& c) {
  size_t num = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np;
  std::memset(&np, 0, sizeof np);
  np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  np.ctx = c.ctx;
  np.numStallReasons = &num;
  CUptiResult r = cuptiPCSamplingGetNumStallReasons(&np);
  if (r != CUPTI_SUCCESS) return PcError("cuptiPCSamplingGetNumStallReasons", r);
  if (num == 0) return {cct::ErrorCode::kUnavailable, "PC sampling: the device reports no stall reasons"};

  std::vector<std::vector<char>> names(num, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, '\0'));
  std::vector<char*> name_ptrs(num);
  for (size_t i = 0; i < num; ++i) name_ptrs[i] = names[i].data();
  c.reason_index.assign(num, 0);
  CUpti_PCSamplingGetStallReasonsParams sp;
  std::memset(&sp, 0, sizeof sp);
  sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  sp.ctx = c.ctx;
  sp.numStallReasons = num;
  sp.stallReasonIndex = c.reason_index.data();
  sp.stallReasons = name_ptrs.data();
  r = cuptiPCSamplingGetStallReasons(&sp);
  if (r != CUPTI_SUCCESS) return PcError("cuptiPCSamplingGetStallReasons", r);
  for (size_t i = 0; i < num; ++i) {
    names[i].back() = '\0';
    c.stalls.Add(c.reason_index[i], std::string_view(names[i].data(), std::strlen(names[i].data())));
  }

  c.config.Allocate(kConfigBufferPcs, num);
  c.get.Allocate(kGetBufferPcs, num);

  std::vector<CUpti_PCSamplingConfigurationInfo> attrs;
  auto attr = [&](CUpti_PCSamplingConfigurationAttributeType type) -> CUpti_PCSamplingConfigurationInfo& {
    CUpti_PCSamplingConfigurationInfo info;
    std::memset(&info, 0, sizeof info);
    info.attributeType = type;
    attrs.push_back(info);
    return attrs.back();
  };
  attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE).attributeData.collectionModeData.collectionMode =
      CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
  {
    auto& a = attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON);
    a.attributeData.stallReasonData.stallReasonCount = num;
    a.attributeData.stallReasonData.pStallReasonIndex = c.reason_index.data();
  }
  attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
      .attributeData.samplingDataBufferData.samplingDataBuffer = &c.config.data;
  if (s.period != 0) {
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD).attributeData.samplingPeriodData.samplingPeriod =
        s.period;
  }
  CUpti_PCSamplingConfigurationInfoParams cp;
  std::memset(&cp, 0, sizeof cp);
  cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  cp.ctx = c.ctx;
  cp.numAttributes = attrs.size();
  cp.pPCSamplingConfigurationInfo = attrs.data();
  r = cuptiPCSamplingSetConfigurationAttribute(&cp);
  if (r != CUPTI_SUCCESS) return PcError("cuptiPCSamplingSetConfigurationAttribute", r);
  for (const CUpti_PCSamplingConfigurationInfo& a : attrs) {
    if (a.attributeStatus != CUPTI_SUCCESS) {
      return PcError("cuptiPCSamplingSetConfigurationAttribute (attribute " + std::to_string(a.attributeType) + ")",
                     a.attributeStatus);
    }
  }

  uint32_t device = 0;
  if (cuptiGetDeviceId(c.ctx, &device) == CUPTI_SUCCESS) c.device_id = device;
  return cct::Status::Ok();
}

void Disable(State& s, CUcontext ctx) {
  CUpti_PCSamplingDisableParams d;
  std::memset(&d, 0, sizeof d);
  d.size = CUpti_PCSamplingDisableParamsSize;
  d.ctx = ctx;
  const CUptiResult r = cuptiPCSamplingDisable(&d);
  if (r != CUPTI_SUCCESS) NoteError(s, PcError("cuptiPCSamplingDisable", r));
}

void EnableOn(State& s, CUcontext ctx) {
  if (s.contexts.count(ctx) != 0) return;
  auto c = std::make_unique<Context>();
  c->ctx = ctx;
  CUpti_PCSamplingEnableParams e;
  std::memset(&e, 0, sizeof e);
  e.size = CUpti_PCSamplingEnableParamsSize;
  e.ctx = ctx;
  const CUptiResult r = cuptiPCSamplingEnable(&e);
  if (r != CUPTI_SUCCESS) {
    ++s.stats.context_failures;
    NoteError(s, PcError("cuptiPCSamplingEnable", r));
    return;
  }
  cct::Status st = Configure(s, *c);
  if (!st.ok()) {
    ++s.stats.context_failures;
    NoteError(s, std::move(st));
    Disable(s, ctx);
    return;
  }
  s.contexts.emplace(ctx, std::move(c));
  ++s.stats.contexts;
  s.any_context.store(true, std::memory_order_release);
}

// Fetches, disables, and decodes what CUPTI moves into the configured
// buffer at disable.
void Retire(State& s, Context& c, std::vector<GpuPcSample>& out) {
  Gather(s, c, out);
  Disable(s, c.ctx);
  if (c.config.data.totalNumPcs > 0) s.decoder.Decode(c.config.data, c.stalls, c.device_id, out);
}

void KeepCubin(State& s, const void* descriptor) {
  const auto* m = static_cast<const CUpti_ModuleResourceData*>(descriptor);
  if (m == nullptr || m->pCubin == nullptr || m->cubinSize == 0 || s.cubin_bytes + m->cubinSize > kMaxCubinBytes) {
    ++s.stats.modules_skipped;
    return;
  }
  CUpti_GetCubinCrcParams p;
  std::memset(&p, 0, sizeof p);
  p.size = CUpti_GetCubinCrcParamsSize;
  p.cubinSize = m->cubinSize;
  p.cubin = m->pCubin;
  const CUptiResult r = cuptiGetCubinCrc(&p);
  if (r != CUPTI_SUCCESS) {
    ++s.stats.modules_skipped;
    NoteError(s, PcError("cuptiGetCubinCrc", r));
    return;
  }
  if (s.cubins.count(p.cubinCrc) != 0) return;  // the same module again
  s.cubins.emplace(p.cubinCrc, std::vector<char>(m->pCubin, m->pCubin + m->cubinSize));
  s.cubin_bytes += m->cubinSize;
  ++s.stats.modules;
}

// Samples on their way out, with the function to give them to.
struct Batch {
  std::vector<GpuPcSample> samples;
  PcDeliverFn deliver;
};

// With s.mu held: counts the batch and takes the delivery function.
void Seal(State& s, Batch& b) {
  if (b.samples.empty()) return;
  for (const GpuPcSample& p : b.samples) s.stats.samples += p.samples;
  s.stats.delivered += b.samples.size();
  b.deliver = s.deliver;
}

// Without s.mu.
void Deliver(State& s, Batch& b) {
  if (b.samples.empty() || !b.deliver) return;
  std::lock_guard<std::mutex> lock(s.deliver_mu);
  try {
    b.deliver(std::move(b.samples));
  } catch (...) {
  }
}

}  // namespace

std::string CuptiResultText(CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) return "CUPTI error " + std::to_string(r);
  return text;
}

cct::Status PcSamplingInit(uint32_t period, PcDeliverFn deliver) {
  if (period != 0 && (period < 5 || period > 31)) {
    return cct::InvalidArgument("PC sampling: sampling period " + std::to_string(period) +
                                " out of range (5..31: 2^period cycles; 0 for CUPTI's default)");
  }
  if (!deliver) return cct::InvalidArgument("PC sampling: no delivery function");
  try {
    State& s = S();
    std::lock_guard<std::mutex> lock(s.mu);
    s.period = period;
    s.deliver = std::move(deliver);
    s.active = true;
  } catch (...) {
    return {cct::ErrorCode::kInternal, "PC sampling: out of memory"};
  }
  return cct::Status::Ok();
}

void PcOnResource(CUpti_CallbackId cbid, const void* resource_data) {
  if (resource_data == nullptr) return;
  if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_CREATED && cbid != CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING &&
      cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    return;
  }
  const auto* rd = static_cast<const CUpti_ResourceData*>(resource_data);
  try {
    State& s = S();
    Batch b;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (!s.active) return;
      switch (cbid) {
        case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
          EnableOn(s, rd->context);
          break;
        case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
          auto it = s.contexts.find(rd->context);
          if (it == s.contexts.end()) break;
          Retire(s, *it->second, b.samples);
          s.contexts.erase(it);
          break;
        }
        case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
          KeepCubin(s, rd->resourceDescriptor);
          // A module loaded after another was unloaded may reuse its
          // addresses: fetch what was sampled before it.
          auto it = s.contexts.find(rd->context);
          if (it != s.contexts.end()) Gather(s, *it->second, b.samples);
          break;
        }
        default:
          break;
      }
      Seal(s, b);
    }
    Deliver(s, b);
  } catch (...) {
  }
}

void PcOnApiExit(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) {
  if (data == nullptr || data->callbackSite != CUPTI_API_EXIT) return;
  const std::optional<cct::GpuOpKind> kind = LaunchKindOf(domain, cbid);
  if (!kind || (*kind != cct::GpuOpKind::kKernel && *kind != cct::GpuOpKind::kSync)) return;
  try {
    State& s = S();
    if (!s.any_context.load(std::memory_order_acquire)) return;
    Batch b;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (!s.active) return;
      auto it = s.contexts.find(data->context);
      if (it == s.contexts.end()) return;
      Gather(s, *it->second, b.samples);
      Seal(s, b);
    }
    Deliver(s, b);
  } catch (...) {
  }
}

void PcFlush() {
  try {
    State& s = S();
    Batch b;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (!s.active) return;
      for (auto& [ctx, c] : s.contexts) Gather(s, *c, b.samples);
      Seal(s, b);
    }
    Deliver(s, b);
  } catch (...) {
  }
}

void PcStop() {
  try {
    State& s = S();
    Batch b;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (!s.active) return;
      for (auto& [ctx, c] : s.contexts) Retire(s, *c, b.samples);
      s.contexts.clear();
      s.any_context.store(false, std::memory_order_release);
      s.cubins.clear();
      s.cubin_bytes = 0;
      s.active = false;
      Seal(s, b);
    }
    Deliver(s, b);
  } catch (...) {
  }
}

uint64_t PcDroppedSamples() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.decoder.stats().dropped_samples;
}

PcSamplingStats GetPcSamplingStats() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  PcSamplingStats out = s.stats;
  const PcDecodeStats& d = s.decoder.stats();
  out.pcs = d.pcs;
  out.latency_samples = d.latency_samples;
  out.dropped_samples = d.dropped_samples;
  out.non_user_samples = d.non_user_samples;
  out.line_lookups = d.line_lookups;
  out.pcs_with_line = d.pcs_with_line;
  out.hardware_buffer_full = std::max(s.stats.hardware_buffer_full, d.hardware_buffer_full);
  return out;
}

cct::Status PcLastError() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.first_error;
}

}  // namespace collector::cupti
