#include "collector/gpu/cupti/cupti_pc_decode.h"

#include <algorithm>
#include <cstring>

#include "cct/flat_index.h"

namespace collector::cupti {

size_t PcSampleDecoder::PcKeyHash::operator()(const PcKey& k) const {
  return static_cast<size_t>(cct::MixHash(k.crc ^ cct::MixHash(k.pc ^ cct::MixHash((uint64_t{k.function} << 32) | k.correlation))));
}

PcSampleDecoder::PcSampleDecoder(SourceLineFn source_line) : source_line_(std::move(source_line)) {
  files_.emplace_back();
}

uint32_t PcSampleDecoder::InternFile(const std::string& file) {
  if (file.empty()) return 0;
  auto it = by_file_.find(file);
  if (it != by_file_.end()) return it->second;
  const auto id = static_cast<uint32_t>(files_.size());
  files_.push_back(file);
  by_file_.emplace(files_.back(), id);
  return id;
}

PcSampleDecoder::Line PcSampleDecoder::LineOf(uint64_t crc, uint64_t pc, uint32_t function) {
  const PcKey key{crc, pc, function, 0};
  auto it = lines_.find(key);
  if (it != lines_.end()) return it->second;
  Line result;
  if (source_line_ && function != 0) {
    ++stats_.line_lookups;
    std::string file;
    uint32_t line = 0;
    bool found = false;
    try {
      found = source_line_(crc, pc, names_.Mangled(function), &file, &line);
    } catch (...) {
      found = false;
    }
    if (found && line != 0) result = Line{InternFile(file), line};
  }
  lines_.emplace(key, result);
  return result;
}

void PcSampleDecoder::Decode(const CUpti_PCSamplingData& data, const StallSlotTable& stalls, uint32_t device_id,
                             std::vector<GpuPcSample>& out) {
  ++stats_.buffers;
  stats_.total_samples += data.totalSamples;
  stats_.dropped_samples += data.droppedSamples;
  stats_.non_user_samples += data.nonUsrKernelsTotalSamples;
  stats_.remaining_pcs = data.remainingNumPcs;
  if (data.hardwareBufferFull) ++stats_.hardware_buffer_full;

  size_t n = data.totalNumPcs;
  if (data.collectNumPcs != 0) n = std::min(n, static_cast<size_t>(data.collectNumPcs));
  const CUpti_PCSamplingPCData* pcs = data.pPcData;
  if (pcs == nullptr) return;

  // Samples of one (correlation, cubin, function, pc) are summed into one
  // GpuPcSample; the map gives its position in `out`.
  std::unordered_map<PcKey, size_t, PcKeyHash> at;
  for (size_t i = 0; i < n; ++i) {
    const CUpti_PCSamplingPCData& r = pcs[i];
    ++stats_.pcs;
    const uint64_t crc = r.cubinCrc;
    const uint64_t pc = r.pcOffset;
    const uint32_t correlation = r.correlationId;
    const size_t reasons = r.stallReasonCount;
    const CUpti_PCSamplingStallReason* stall = r.stallReason;
    if (correlation == 0) ++stats_.pcs_without_correlation;

    uint64_t by_slot[kStallSlots] = {};
    uint64_t counted = 0;
    for (size_t j = 0; stall != nullptr && j < reasons; ++j) {
      const uint32_t index = stall[j].pcSamplingStallReasonIndex;
      const uint64_t samples = stall[j].samples;
      if (samples == 0) continue;
      if (!stalls.Known(index)) {
        stats_.unknown_reason_samples += samples;
        by_slot[static_cast<int>(StallSlot::kOthr)] += samples;
        counted += samples;
        continue;
      }
      const std::optional<StallSlot> slot = stalls.Slot(index);
      if (!slot) {
        stats_.latency_samples += samples;
        continue;
      }
      by_slot[static_cast<int>(*slot)] += samples;
      counted += samples;
    }
    if (counted == 0) continue;
    stats_.samples += counted;

    const uint32_t function = names_.Intern(r.functionName);
    const Line line = LineOf(crc, pc, function);
    if (line.line != 0) ++stats_.pcs_with_line;

    const PcKey key{crc, pc, function, correlation};
    auto [it, inserted] = at.try_emplace(key, out.size());
    if (inserted) {
      GpuPcSample s;
      s.correlation_id = correlation;
      s.device_id = device_id;
      s.cubin_crc = crc;
      s.pc_offset = pc;
      s.function_name = names_.Name(function);
      s.file = files_[line.file];
      s.line = line.line;
      out.push_back(s);
    }
    GpuPcSample& s = out[it->second];
    s.samples += counted;
    for (int k = 0; k < kStallSlots; ++k) s.stall[k] += by_slot[k];
  }
}

}  // namespace collector::cupti
