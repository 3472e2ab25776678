// Decoding the records of CUPTI's PC Sampling API (cupti_pcsampling.h) into
// GpuPcSample values (src/collector/gpu/gpu_activity.h).
//
// Pure code over CUPTI's structs: includes the header only, calls no CUPTI
// function, needs no GPU, so tests build CUpti_PCSamplingData by hand. The
// adapter (cupti_pc_sampling.h) fills a CUpti_PCSamplingData with
// cuptiPCSamplingGetData and hands it here with the context's stall-reason
// table and device.
//
// What one Decode does with data.pPcData[0 .. totalNumPcs):
// - per PC record, the samples of every stall reason are mapped to a class
//   through the StallSlotTable (gpu_pc_sampling.h): reasons not counted
//   ("_not_issued" latency samples) are tallied in stats().latency_samples
//   only; an index the table does not know counts as kOthr (and in
//   stats().unknown_reason_samples). GpuPcSample::samples is the sum of the
//   counted reasons, so stall[] always sums to samples;
// - records with the same (correlation id, cubin CRC, function, PC offset)
//   within one call are summed into one GpuPcSample; records with no counted
//   sample produce none;
// - the function name is demangled (collector::Demangle) once per distinct
//   name and interned: GpuPcSample::function_name and ::file are views into
//   the decoder's tables (deques; views stay valid as they grow), so the
//   decoder must outlive the samples (the adapter's lives as long as the
//   process);
// - the source line comes from the SourceLineFn, asked once per distinct
//   (cubin CRC, function, PC offset) and cached (the adapter's calls
//   cuptiGetSassToSourceCorrelation, which parses the cubin). It gets the
//   function name as CUPTI reported it (mangled: the cubin's symbol name).
// - CUpti_PCSamplingData's counters go to stats(): totalNumPcs,
//   totalSamples, droppedSamples, nonUsrKernelsTotalSamples, the last
//   remainingNumPcs and hardwareBufferFull.
//
// CUPTI's records are packed structs: fields are copied, never bound to
// references. Function-name strings belong to CUPTI (it shares one string
// per function across records); the decoder copies them and never frees them.
//
// Not thread-safe: one decoder per thread, or a lock (the adapter's).
#pragma once

#include <cupti_pcsampling.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collector/gpu/cupti/cupti_decode.h"
#include "collector/gpu/gpu_activity.h"
#include "collector/gpu/gpu_pc_sampling.h"

namespace collector::cupti {

// Source line of a PC: true with *file (a path) and *line (> 0) filled when
// the cubin has line information for it.
using SourceLineFn = std::function<bool(uint64_t cubin_crc, uint64_t pc_offset, std::string_view function,
                                        std::string* file, uint32_t* line)>;

struct PcDecodeStats {
  uint64_t buffers = 0;                 // Decode calls
  uint64_t pcs = 0;                     // PC records looked at (sum of totalNumPcs)
  uint64_t samples = 0;                 // samples counted (sum of GpuPcSample::samples produced)
  uint64_t latency_samples = 0;         // samples of reasons not counted ("_not_issued")
  uint64_t unknown_reason_samples = 0;  // samples of indexes the table did not know (counted as othr)
  uint64_t pcs_without_correlation = 0; // PC records with correlationId 0 (continuous mode, or unknown)
  uint64_t pcs_with_line = 0;           // PC records that got a source line
  uint64_t line_lookups = 0;            // SourceLineFn calls (cache misses)
  uint64_t total_samples = 0;           // sum of CUPTI's totalSamples
  uint64_t dropped_samples = 0;         // sum of CUPTI's droppedSamples (hardware backpressure)
  uint64_t non_user_samples = 0;        // sum of nonUsrKernelsTotalSamples (no PC records for those)
  uint64_t remaining_pcs = 0;           // remainingNumPcs of the last buffer
  uint64_t hardware_buffer_full = 0;    // buffers with hardwareBufferFull set
};

class PcSampleDecoder {
 public:
  explicit PcSampleDecoder(SourceLineFn source_line = nullptr);
  PcSampleDecoder(const PcSampleDecoder&) = delete;
  PcSampleDecoder& operator=(const PcSampleDecoder&) = delete;

  void set_source_line(SourceLineFn source_line) { source_line_ = std::move(source_line); }

  // Appends the samples of `data` (see above) to `out`, each with
  // `device_id`. totalNumPcs is bounded by collectNumPcs when that is set.
  void Decode(const CUpti_PCSamplingData& data, const StallSlotTable& stalls, uint32_t device_id,
              std::vector<GpuPcSample>& out);

  const PcDecodeStats& stats() const { return stats_; }
  // The interned function names (demangled); id 0 is the empty name.
  std::string_view FunctionName(uint32_t id) const { return names_.Name(id); }
  size_t function_count() const { return names_.size(); }

 private:
  struct Line {
    uint32_t file = 0;  // index into files_ (0: none)
    uint32_t line = 0;
  };
  struct PcKey {
    uint64_t crc, pc;
    uint32_t function, correlation;
    bool operator==(const PcKey&) const = default;
  };
  struct PcKeyHash {
    size_t operator()(const PcKey& k) const;
  };

  uint32_t InternFile(const std::string& file);
  Line LineOf(uint64_t crc, uint64_t pc, uint32_t function);

  SourceLineFn source_line_;
  PcDecodeStats stats_;
  DemangledNames names_;                                       // function names
  std::deque<std::string> files_;                              // by index; 0 is ""
  std::unordered_map<std::string_view, uint32_t> by_file_;     // views into files_
  std::unordered_map<PcKey, Line, PcKeyHash> lines_;           // correlation 0 in the key
};

}  // namespace collector::cupti
