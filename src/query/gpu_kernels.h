// GPU kernels across tools: normalized kernel names (to match Nsight
// Compute's names with ours and count a kernel's popularity across runs),
// the ncu metric names cctdb reads, and the bottleneck rule.
//
// Pure functions; thread-safe.
#pragma once

#include <cmath>
#include <string>
#include <string_view>

namespace query {

// A kernel name as the demangler wrote it, reduced for matching:
// NormalizeKernelName("void ns::gemm<float, 128>(float const*, int)") is
// "ns::gemm": no return type, no parameter list, no template arguments,
// whitespace collapsed. KernelSignatureName keeps the template arguments
// ("ns::gemm<float, 128>"); KernelBaseName keeps only the last name
// ("gemm"), which is what ncu prints with its default --kernel-name-base
// function.
std::string KernelSignatureName(std::string_view name);
std::string NormalizeKernelName(std::string_view name);
std::string KernelBaseName(std::string_view name);

// Metric names cctdb gives meaning to (Nsight Compute's names; the
// per-launch averages of the attached accumulators, see AttachNcuMetrics).
inline constexpr std::string_view kNcuCount = "ncu:count";
inline constexpr std::string_view kNcuSmThroughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kNcuMemoryThroughput =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kNcuDramThroughput = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kNcuAchievedOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kNcuDuration = "gpu__time_duration.sum";
inline constexpr std::string_view kNcuDescriptionPrefix = "Nsight Compute: ";

// The bottleneck rule (docs/metrics.md). From Speed Of Light: SM = compute
// throughput % of peak, MEM = the larger of memory throughput and DRAM
// throughput % of peak.
//   memory-bound              MEM >= 60 and SM < 60
//   compute-bound             SM >= 60 and MEM < 60
//   latency/occupancy-bound   SM < 40 and MEM < 40 (neither unit is kept busy)
//   mixed                     anything else (both high, or in between)
// NaN inputs (metric not attached) give "-".
enum class Bottleneck { kUnknown, kCompute, kMemory, kLatency, kMixed };
Bottleneck ClassifyBottleneck(double sm_pct, double mem_pct);
std::string_view BottleneckName(Bottleneck b);

}  // namespace query
