#include "collector/gpu/gpu_pc_sampling.h"

#include <array>

namespace collector {

namespace {

// NVIDIA's "Stall Reasons Mapping Table" (CUPTI guide, PC Sampling API):
// each PC Sampling API reason and the activity-API reason it corresponds
// to, which names HPCToolkit's class. Plus the sm_90 warpgroup reasons.
constexpr std::array<KnownStallReason, 20> kKnown = {{
    {"selected", StallSlot::kNone},
    {"branch_resolving", StallSlot::kIfet},
    {"no_instructions", StallSlot::kIfet},
    {"short_scoreboard", StallSlot::kIdep},
    {"wait", StallSlot::kIdep},
    {"long_scoreboard", StallSlot::kGmem},
    {"tex_throttle", StallSlot::kTmem},
    {"barrier", StallSlot::kSync},
    {"membar", StallSlot::kSync},
    {"imc_miss", StallSlot::kCmem},
    {"mio_throttle", StallSlot::kPipe},
    {"math_pipe_throttle", StallSlot::kPipe},
    {"drain", StallSlot::kMthr},
    {"lg_throttle", StallSlot::kMthr},
    {"not_selected", StallSlot::kNsel},
    {"misc", StallSlot::kOthr},
    {"dispatch_stall", StallSlot::kOthr},
    {"sleeping", StallSlot::kSlp},
    {"warpgroup_arrive", StallSlot::kSync},
    {"gmma", StallSlot::kSync},
}};

constexpr std::array<std::string_view, kStallSlots> kStallSlotNames = {
    "none", "ifet", "idep", "gmem", "tmem", "sync", "cmem", "pipe", "mthr", "nsel", "othr", "slp",
};

constexpr std::string_view kNotIssued = "_not_issued";

}  // namespace

std::optional<StallSlot> StallSlotOfCuptiName(std::string_view name) {
  // The totals CUPTI collects by default are not stall reasons.
  if (name == "smsp__pcsamp_sample_count" || name == "smsp__pcsamp_samples_data_dropped") return std::nullopt;
  if (name.starts_with(kCuptiStallPrefix)) name.remove_prefix(kCuptiStallPrefix.size());
  // Latency samples: a subset of the reason's own samples.
  if (name.ends_with(kNotIssued)) return std::nullopt;
  for (const KnownStallReason& k : kKnown) {
    if (k.reason == name) return k.slot;
  }
  return StallSlot::kOthr;
}

std::string_view StallSlotName(StallSlot slot) {
  const auto i = static_cast<size_t>(slot);
  return i < kStallSlotNames.size() ? kStallSlotNames[i] : std::string_view("othr");
}

std::span<const KnownStallReason> KnownCuptiStallReasons() { return kKnown; }

StallSlotTable::StallSlotTable(std::span<const std::pair<uint32_t, std::string_view>> reasons) {
  for (const auto& [index, name] : reasons) Add(index, name);
}

void StallSlotTable::Add(uint32_t index, std::string_view name) {
  const std::optional<StallSlot> slot = StallSlotOfCuptiName(name);
  const uint8_t code = slot ? static_cast<uint8_t>(*slot) : kSkip;
  if (index < kDense) {
    if (dense_.size() <= index) dense_.resize(index + 1, kUnset);
    if (dense_[index] == kUnset) ++size_;
    dense_[index] = code;
  } else {
    if (sparse_.insert_or_assign(index, code).second) ++size_;
  }
}

uint8_t StallSlotTable::Code(uint32_t index) const {
  if (index < kDense) return index < dense_.size() ? dense_[index] : kUnset;
  auto it = sparse_.find(index);
  return it == sparse_.end() ? kUnset : it->second;
}

bool StallSlotTable::Known(uint32_t index) const { return Code(index) != kUnset; }

std::optional<StallSlot> StallSlotTable::Slot(uint32_t index) const {
  const uint8_t code = Code(index);
  if (code == kSkip) return std::nullopt;
  if (code == kUnset) return StallSlot::kOthr;
  return static_cast<StallSlot>(code);
}

}  // namespace collector
