// PC sampling through CUPTI's PC Sampling API (cupti_pcsampling.h; Turing
// and later, the API current drivers support on Hopper and Blackwell — not
// the deprecated activity kind CUPTI_ACTIVITY_KIND_PC_SAMPLING): the CUPTI
// calls behind `cct-record --gpu-pc-sampling`. The adapter (cupti_adapter.cc)
// owns the CUPTI subscriber and forwards callbacks here; decoding is
// cupti_pc_decode.h, the stall classes gpu_pc_sampling.h.
//
// What the adapter must do:
//
//   1. Before enabling callbacks (before any CUDA context exists):
//        PcSamplingInit(period, deliver)
//      `period`: CUPTI's CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD
//      value, an exponent: one sample every 2^period cycles per SM, 5..31;
//      0 leaves CUPTI's default (chosen by CUPTI from the SM count).
//      `deliver` receives the decoded samples (then on_pc_samples).
//   2. Enable, in addition to its own callbacks, in the resource domain
//      (CUPTI_CB_DOMAIN_RESOURCE):
//        CUPTI_CBID_RESOURCE_CONTEXT_CREATED
//        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING
//        CUPTI_CBID_RESOURCE_MODULE_LOADED
//      and forward every resource callback:  PcOnResource(cbid, cbdata)
//      (cbdata: the CUpti_ResourceData* CUPTI passed; other cbids are ignored).
//   3. Forward the API-exit callbacks (callbackSite == CUPTI_API_EXIT) of
//      the runtime- and driver-API calls it tracks:
//        PcOnApiExit(domain, cbid, cbdata)
//      Only kernel/graph launches and synchronizations matter (decided here
//      with cupti_api_kinds.h's LaunchKindOf); other calls return at once.
//   4. At checkpoints (the adapter's flush):  PcFlush()
//   5. At exit, before unsubscribing:        PcStop()
//   6. For its stats: PcDroppedSamples(), GetPcSamplingStats().
//
// What happens, per context (CONTEXT_CREATED): cuptiPCSamplingEnable;
// cuptiPCSamplingGetNumStallReasons / GetStallReasons (after Enable: CUPTI
// requires it) → the context's StallSlotTable; one configuration call with
// collection mode CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED (so
// every record carries the correlation id of its kernel launch: kernels run
// one at a time while sampling), all stall reasons, the sampling period
// when given, and the sampling data buffer CUPTI fills (kConfigBufferPcs PC
// records). Start/stop control stays off (CUPTI's default), so sampling runs
// from enable to disable: cuptiPCSamplingStart/Stop are not called (CUPTI
// rejects them unless ENABLE_START_STOP_CONTROL is set).
//
// Gathering: CUPTI's guide says that in kernel-serialized mode the data
// must be fetched with cuptiPCSamplingGetData after each kernel completes
// (each kernel is its own range). So after every kernel launch and every
// synchronization call (PcOnApiExit), at PcFlush (every context), at
// MODULE_LOADED and at CONTEXT_DESTROY_STARTING the context's data is
// fetched: cuptiPCSamplingGetData into a separate buffer (kGetBufferPcs
// records; never the configured one) until it returns nothing more. At
// CONTEXT_DESTROY_STARTING and PcStop the context is then disabled
// (cuptiPCSamplingDisable), and the records CUPTI moves into the configured
// buffer at disable are decoded too.
//
// Source lines: at MODULE_LOADED the module's cubin (CUpti_ModuleResourceData
// ::pCubin) is copied and keyed by cuptiGetCubinCrc, the CRC the PC records
// carry; a PC's line comes from cuptiGetSassToSourceCorrelation on that
// cubin (cached per PC by the decoder). Cubins are kept up to
// kMaxCubinBytes in all; later modules get no lines (counted).
//
// Errors: a context whose setup fails is left unsampled and the first
// error is kept (PcLastError: "PC sampling: <call> failed: <CUPTI's text>",
// one line); no function here throws or aborts. CUPTI_ERROR_OUT_OF_MEMORY
// from GetData means the hardware buffer filled: counted, samples lost.
//
// Thread-safety: every function may be called from any thread, at once
// (CUPTI calls callbacks on the application's threads). One mutex guards
// the contexts, buffers and decoder, and is held across the CUPTI calls;
// `deliver` runs after that mutex is released, under a second one, so
// deliveries never overlap. `deliver` must not call back into these
// functions. Function-name strings CUPTI allocates are never freed (CUPTI
// shares one per function, possibly with activity records).
#pragma once

#include <cupti_callbacks.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cct/status.h"
#include "collector/gpu/gpu_activity.h"

namespace collector::cupti {

inline constexpr size_t kConfigBufferPcs = 10000;   // records in the buffer CUPTI fills
inline constexpr size_t kGetBufferPcs = 5000;       // records per cuptiPCSamplingGetData
inline constexpr size_t kMaxCubinBytes = size_t{1} << 30;

using PcDeliverFn = std::function<void(std::vector<GpuPcSample>&&)>;

// CUPTI's text for a result ("CUPTI_ERROR_INVALID_PARAMETER"), or "CUPTI
// error N" when it has none; for the adapter's messages and these.
std::string CuptiResultText(CUptiResult r);

// Sets up (no CUPTI call): the sampling period (0, or 5..31) and where
// samples go. InvalidArgument for another period or no `deliver`. Calling
// it again replaces both (for contexts created afterwards).
cct::Status PcSamplingInit(uint32_t period, PcDeliverFn deliver);

// A resource-domain callback (see above). `resource_data`: the
// CUpti_ResourceData* CUPTI passed. Ignored before PcSamplingInit and
// after PcStop.
void PcOnResource(CUpti_CallbackId cbid, const void* resource_data);

// The exit of a tracked runtime/driver API call: fetches the call's
// context's samples after kernel launches and synchronizations.
void PcOnApiExit(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data);

// Fetches and delivers the samples of every context now.
void PcFlush();

// Fetches everything, disables PC sampling on every context, delivers, and
// ignores further callbacks (until PcSamplingInit again).
void PcStop();

// Samples the hardware dropped (CUpti_PCSamplingData::droppedSamples).
uint64_t PcDroppedSamples();

struct PcSamplingStats {
  uint64_t contexts = 0;         // contexts PC sampling was enabled on
  uint64_t context_failures = 0; // contexts whose setup failed
  uint64_t get_data_calls = 0;   // cuptiPCSamplingGetData calls
  uint64_t get_data_errors = 0;  // of those, failed (other than a full hardware buffer)
  uint64_t hardware_buffer_full = 0;  // CUPTI_ERROR_OUT_OF_MEMORY / hardwareBufferFull
  uint64_t pcs = 0;              // PC records decoded
  uint64_t samples = 0;          // samples delivered (sum of GpuPcSample::samples)
  uint64_t latency_samples = 0;  // "_not_issued" samples (not counted again)
  uint64_t dropped_samples = 0;  // hardware-dropped samples
  uint64_t non_user_samples = 0; // samples in non-user kernels (no records)
  uint64_t delivered = 0;        // GpuPcSample values delivered
  uint64_t modules = 0;          // cubins kept for line lookup
  uint64_t modules_skipped = 0;  // cubins not kept (over kMaxCubinBytes, or no CRC)
  uint64_t line_lookups = 0;     // cuptiGetSassToSourceCorrelation calls
  uint64_t pcs_with_line = 0;    // PC records that got a line
};
PcSamplingStats GetPcSamplingStats();

// The first error seen (OK when none): for the run's diagnostics.
cct::Status PcLastError();

}  // namespace collector::cupti
