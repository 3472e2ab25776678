// Is there a GPU to trace? The cheap checks made before anything loads CUPTI:
// by cct-record (to say "GPU tracing off: <reason>" once, or fail --gpu on
// with 125 before the program runs) and by the adapter. Pure functions of the
// file system and the dynamic loader; thread-safe.
#pragma once

#include "cct/status.h"

namespace collector {

// Whether an NVIDIA device node is present (/dev/nvidiaN, or an entry under
// /proc/driver/nvidia/gpus).
bool GpuDevicePresent();

// OK when libcuda.so.1 can be loaded and (with `need_device`) a device node
// is present; otherwise kUnavailable with a one-line reason: "no CUDA driver
// (libcuda.so.1 cannot be loaded)" or "no GPU (...)". Loading the driver
// runs no CUDA call; the library stays loaded.
cct::Status ProbeGpu(bool need_device);

}  // namespace collector
