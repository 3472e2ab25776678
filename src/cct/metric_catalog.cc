// The standard metric vocabulary. HPCToolkit's GPU metric names, lower case,
// with ":…_acc" accumulators behind per-launch averages; docs/metrics.md is
// the reader's version of this table and must stay in step with it.
#include "cct/metric.h"

namespace cct {

namespace {

MetricDesc Add(std::string name, Unit unit, std::string description) {
  return MetricDesc{std::move(name), unit, MetricKind::kAdditive, std::move(description), ""};
}
MetricDesc Derived(std::string name, Unit unit, std::string formula, std::string description) {
  return MetricDesc{std::move(name), unit, MetricKind::kDerived, std::move(description), std::move(formula)};
}

std::vector<MetricDesc> BuildCatalog() {
  const Unit ns = Unit::kNanoseconds, bytes = Unit::kBytes, count = Unit::kCount, none = Unit::kNone;
  std::vector<MetricDesc> m = {
      // CPU sampling
      Add("cputime", ns, "CPU time of the sampled thread (thread CPU clock), time since its previous sample"),
      Add("realtime", ns, "wall-clock time of the sampled thread, time since its previous sample"),
      Add("samples", count, "number of samples"),
      // NVTX
      Add("nvtx:time", ns, "wall time of NVTX ranges, push/start to pop/end; inclusive: the range's, exclusive: not in nested ranges"),
      Add("nvtx:count", count, "number of NVTX range instances"),
      Add("nvtx:marks", count, "number of NVTX marks (instantaneous events)"),
      // GPU kernels
      Add("gker", ns, "GPU kernel execution time"),
      Add("gker:count", count, "GPU kernel launches"),
      Add("gker:blk_thr_acc", none, "sum over launches of threads per block"),
      Add("gker:blks_acc", none, "sum over launches of grid size in blocks"),
      Add("gker:thr_reg_acc", none, "sum over launches of registers per thread"),
      Add("gker:stmem_acc", bytes, "sum over launches of static shared memory per block"),
      Add("gker:dymem_acc", bytes, "sum over launches of dynamic shared memory per block"),
      Add("gker:lmem_acc", bytes, "sum over launches of local memory per thread"),
      Add("gker:occ_acc", Unit::kPercent, "sum over launches of theoretical occupancy"),
      Derived("gker:blk_thr", none, "gker:blk_thr_acc / {gker:count}", "threads per block, average per launch"),
      Derived("gker:blks", none, "gker:blks_acc / {gker:count}", "grid size in blocks, average per launch"),
      Derived("gker:thr_reg", none, "gker:thr_reg_acc / {gker:count}", "registers per thread, average per launch"),
      Derived("gker:stmem", bytes, "gker:stmem_acc / {gker:count}",
              "static shared memory per block, average per launch"),
      Derived("gker:dymem", bytes, "gker:dymem_acc / {gker:count}",
              "dynamic shared memory per block, average per launch"),
      Derived("gker:lmem", bytes, "gker:lmem_acc / {gker:count}", "local memory per thread, average per launch"),
      Derived("gker:occ", Unit::kPercent, "gker:occ_acc / {gker:count}",
              "theoretical occupancy from the device's limits, average per launch"),
      // Copies
      Add("gxcopy", ns, "GPU explicit copy time"),
      Add("gxcopy:h2d", bytes, "bytes copied host to device"),
      Add("gxcopy:d2h", bytes, "bytes copied device to host"),
      Add("gxcopy:d2d", bytes, "bytes copied device to device (same device)"),
      Add("gxcopy:h2h", bytes, "bytes copied host to host by the copy engine"),
      Add("gxcopy:p2p", bytes, "bytes copied peer to peer (between devices)"),
      Add("gxcopy:count", count, "explicit copies"),
      // Memsets
      Add("gmset", ns, "GPU memset time"),
      Add("gmset:bytes", bytes, "bytes set"),
      Add("gmset:count", count, "memsets"),
      // Allocation
      Add("gmem", ns, "GPU memory allocation and free time, where the driver reports it"),
      Add("gmem:dev", bytes, "device memory allocated"),
      Add("gmem:pin", bytes, "pinned host memory allocated"),
      Add("gmem:pag", bytes, "pageable host memory registered or allocated"),
      Add("gmem:man", bytes, "managed (unified) memory allocated"),
      Add("gmem:ary", bytes, "CUDA array memory allocated"),
      Add("gmem:unk", bytes, "memory of unknown kind allocated"),
      Add("gmem:freed", bytes, "memory freed"),
      Add("gmem:count", count, "allocations"),
      Add("gmem:free:count", count, "frees"),
      // Synchronization
      Add("gsync", ns, "GPU synchronization time (CPU waiting for the GPU)"),
      Add("gsync:evt", ns, "time in event synchronization"),
      Add("gsync:stre", ns, "time in stream-wait-event synchronization"),
      Add("gsync:str", ns, "time in stream synchronization"),
      Add("gsync:ctx", ns, "time in context or device synchronization"),
      Add("gsync:count", count, "synchronizations"),
      // PC sampling
      Add("gins", count, "GPU instruction samples (PC sampling)"),
      Add("gins:stl_any", count, "instruction samples with any stall"),
      Add("gins:stl_none", count, "instruction samples not stalled (selected)"),
      Add("gins:stl_ifet", count, "stalled on instruction fetch"),
      Add("gins:stl_idep", count, "stalled on an execution dependency"),
      Add("gins:stl_gmem", count, "stalled on global/local memory (long scoreboard)"),
      Add("gins:stl_tmem", count, "stalled on texture memory"),
      Add("gins:stl_sync", count, "stalled on synchronization (barrier, membar)"),
      Add("gins:stl_cmem", count, "stalled on constant memory"),
      Add("gins:stl_pipe", count, "stalled on a busy pipe"),
      Add("gins:stl_mthr", count, "stalled on memory throttle"),
      Add("gins:stl_nsel", count, "eligible but not selected"),
      Add("gins:stl_othr", count, "stalled for other reasons"),
      Add("gins:stl_slp", count, "sleeping"),
  };
  m.push_back(Derived("gpuop", ns, "gker + gxcopy + gmset + gmem + gsync",
                      "total time of GPU operations (kernels, copies, memsets, allocations, synchronization)"));
  return m;
}

}  // namespace

const std::vector<MetricDesc>& StandardMetrics() {
  // Never destroyed: the collector writes its final profile from an exit
  // handler, which may run after this library's static destructors.
  static const std::vector<MetricDesc>* catalog = new std::vector<MetricDesc>(BuildCatalog());
  return *catalog;
}

const MetricDesc* FindStandardMetric(std::string_view name) {
  for (const MetricDesc& d : StandardMetrics())
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace cct
