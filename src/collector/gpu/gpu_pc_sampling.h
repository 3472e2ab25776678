// PC sampling: CUPTI's stall-reason names mapped onto HPCToolkit's
// instruction-stall classes (the gins:stl_* metrics, StallSlot in
// gpu_activity.h).
//
// Pure code: no CUPTI include, no CUPTI call. The CUPTI adapter asks CUPTI
// for the stall reasons of a context (cuptiPCSamplingGetStallReasons gives
// (index, name) pairs), builds a StallSlotTable from them and decodes PC
// records through it (cupti/cupti_pc_decode.h).
//
// The names (CUPTI PC Sampling API, sm_70 and later) all start with
// "smsp__pcsamp_warps_issue_stalled_". The mapping follows NVIDIA's "Stall
// Reasons Mapping Table" in the CUPTI guide (PC Sampling API section), which
// maps each name onto the stall reason of the older activity-based PC
// sampling (CUpti_ActivityPCSamplingStallReason); HPCToolkit maps those onto
// its classes one to one (NONE → stl_none, INST_FETCH → stl_ifet, ...):
//
//   selected                              → none
//   branch_resolving, no_instructions     → ifet
//   short_scoreboard, wait                → idep
//   long_scoreboard                       → gmem
//   tex_throttle                          → tmem
//   barrier, membar                       → sync
//   imc_miss                              → cmem
//   mio_throttle, math_pipe_throttle      → pipe
//   drain, lg_throttle                    → mthr
//   not_selected                          → nsel
//   misc, dispatch_stall                  → othr
//   sleeping                              → slp
//   warpgroup_arrive, gmma (sm_90; not in NVIDIA's table: a warp waiting at
//     a warpgroup-MMA arrive barrier; our choice)  → sync
//
// Not counted (nullopt): every "..._not_issued" name. CUPTI reports, per
// reason X, both X (all samples of warps stalled on X) and X_not_issued
// (the "latency samples" among them: no instruction was issued from that
// scheduler in the sampled cycle), so X_not_issued is a subset of X and
// adding it would count those samples twice. Likewise the totals
// "smsp__pcsamp_sample_count" and "smsp__pcsamp_samples_data_dropped",
// should a CUPTI version list them among the reasons.
//
// Any other name (a reason added by a later architecture) counts as kOthr,
// so its samples are kept in gins and gins:stl_any.
//
// Thread-safety: the functions are pure; a StallSlotTable is immutable once
// built (const methods are safe from many threads).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collector/gpu/gpu_activity.h"

namespace collector {

// The prefix every PC Sampling API stall-reason name carries.
inline constexpr std::string_view kCuptiStallPrefix = "smsp__pcsamp_warps_issue_stalled_";

// The stall class of a CUPTI stall-reason name, with or without the prefix
// ("smsp__pcsamp_warps_issue_stalled_long_scoreboard" or "long_scoreboard").
// nullopt: a name whose samples must not be counted ("_not_issued"
// latency samples, the totals; see above). Unknown names: kOthr.
std::optional<StallSlot> StallSlotOfCuptiName(std::string_view name);

// The short class name, as in the metric "gins:stl_<name>": "none", "ifet",
// "idep", "gmem", "tmem", "sync", "cmem", "pipe", "mthr", "nsel", "othr",
// "slp".
std::string_view StallSlotName(StallSlot slot);

// The names (without the prefix) the mapping knows, with their class: the
// table above, for documentation and tests. `_not_issued` variants are not
// listed (each known X has one, not counted).
struct KnownStallReason {
  std::string_view reason;
  StallSlot slot;
};
std::span<const KnownStallReason> KnownCuptiStallReasons();

// Maps CUPTI's stall-reason indexes (CUpti_PCSamplingStallReason::
// pcSamplingStallReasonIndex) to stall classes, for one context's reasons.
class StallSlotTable {
 public:
  StallSlotTable() = default;
  // From CUPTI's (index, name) pairs, in any order.
  explicit StallSlotTable(std::span<const std::pair<uint32_t, std::string_view>> reasons);
  // Adds (or replaces) one reason.
  void Add(uint32_t index, std::string_view name);

  // Whether the table was given this index.
  bool Known(uint32_t index) const;
  // The class of an index: nullopt when its samples are not counted (see
  // StallSlotOfCuptiName); kOthr for an index the table was never given
  // (callers that care test Known first).
  std::optional<StallSlot> Slot(uint32_t index) const;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static constexpr uint8_t kUnset = 0xff;
  static constexpr uint8_t kSkip = 0xfe;
  static constexpr uint32_t kDense = 1024;  // indexes below this live in dense_
  uint8_t Code(uint32_t index) const;
  std::vector<uint8_t> dense_;                     // by index: a StallSlot, kSkip or kUnset
  std::unordered_map<uint32_t, uint8_t> sparse_;   // indexes >= kDense
  size_t size_ = 0;
};

}  // namespace collector
