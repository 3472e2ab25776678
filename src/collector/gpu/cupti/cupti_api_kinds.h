// Which CUDA API calls launch GPU work, and of what kind: the table that
// decides which CUPTI API callbacks the adapter enables and what the
// collector runtime is told at each launch (GpuHooks::on_launch).
//
// Pure functions of CUPTI's callback ids (cupti_runtime_cbid.h,
// cupti_driver_cbid.h of the CUDA 13 toolkit); no CUPTI call.
#pragma once

#include <cupti_callbacks.h>

#include <optional>

#include "cct/frame.h"

namespace collector::cupti {

// The GPU operation an API call launches, or nullopt for calls that launch
// none. Covers the runtime and driver API: kernel launches (classic,
// cudaLaunchKernelExC / cuLaunchKernelEx, cooperative, CUDA 13's
// __cudaLaunchKernel) and graph launches (cudaGraphLaunch / cuGraphLaunch →
// kKernel: their records carry the graph launch's correlation id); copies
// of every family, synchronous and asynchronous, 1D/2D/3D/array/symbol/peer/
// batch, per-thread-stream variants included (driver HtoD/HtoA → kCopyIn,
// DtoH/AtoH → kCopyOut, others → kCopy); memsets (8/16/32-bit, 1D/2D/3D,
// sync/async); allocations (device, pitch, array, 3D, mipmapped, host,
// pinned, registered host memory, managed, stream-ordered and pool
// allocations, cuMemCreate) → kAlloc and their releases → kFree;
// synchronization (device, context, stream, event, stream-wait-event) →
// kSync. Other domains give nullopt.
std::optional<cct::GpuOpKind> LaunchKindOf(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

// The copy kind of a runtime cudaMemcpyKind value: cudaMemcpyHostToDevice
// (1) → kCopyIn, cudaMemcpyDeviceToHost (2) → kCopyOut, anything else
// (host-to-host, device-to-device, default/unified) → kCopy.
cct::GpuOpKind CopyKindOfMemcpyKind(int cuda_memcpy_kind);

// LaunchKindOf refined by the call's parameters where they say more: the
// runtime's cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D, cudaMemcpy2DAsync
// (and their per-thread-stream variants) name their direction. `params` is
// CUpti_CallbackData::functionParams (may be null).
cct::GpuOpKind RefineLaunchKind(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params,
                                cct::GpuOpKind kind);

}  // namespace collector::cupti
