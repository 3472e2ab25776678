#include "collector/gpu/cupti/cupti_api_kinds.h"

#include <cupti.h>  // with the runtime API parameter structs

namespace collector::cupti {

namespace {

// Generated from the CUDA 13.0 cbid headers by name: every id whose
// function launches a GPU operation (see cupti_api_kinds.h).
std::optional<cct::GpuOpKind> RuntimeKind(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      return cct::GpuOpKind::kKernel;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyArrayToArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DArrayToArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArrayAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArrayAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArray_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArray_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArray_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArray_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyArrayToArray_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DArrayToArray_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArrayAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArrayAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v12080:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v12080:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_v12080:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v12080:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v13000:
      return cct::GpuOpKind::kCopy;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000:
      return cct::GpuOpKind::kMemset;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocMipmappedArray_v5000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020:
      return cct::GpuOpKind::kAlloc;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeMipmappedArray_v5000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
      return cct::GpuOpKind::kFree;
    case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000:
      return cct::GpuOpKind::kSync;
    default:
      return std::nullopt;
  }
}

std::optional<cct::GpuOpKind> DriverKind(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      return cct::GpuOpKind::kKernel;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemcpyHtoD:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemcpyHtoDAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
      return cct::GpuOpKind::kCopyIn;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemcpyDtoH:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemcpyDtoHAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
      return cct::GpuOpKind::kCopyOut;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemcpyDtoD:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemcpyDtoA:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemcpyAtoD:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D:
    case CUPTI_DRIVER_TRACE_CBID_cu64Memcpy3D:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemcpyDtoDAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync:
    case CUPTI_DRIVER_TRACE_CBID_cu64Memcpy3DAsync:
    case CUPTI_DRIVER_TRACE_CBID_cu64Memcpy2D:
    case CUPTI_DRIVER_TRACE_CBID_cu64Memcpy2DUnaligned:
    case CUPTI_DRIVER_TRACE_CBID_cu64Memcpy2DAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2_ptsz:
      return cct::GpuOpKind::kCopy;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD8:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD16:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD32:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD2D8:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD2D16:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD2D32:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD2D8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD2D16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemsetD2D32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz:
      return cct::GpuOpKind::kMemset;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemAllocPitch:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemHostAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cu64ArrayCreate:
    case CUPTI_DRIVER_TRACE_CBID_cu64Array3DCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister:
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      return cct::GpuOpKind::kAlloc;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree:
    case CUPTI_DRIVER_TRACE_CBID_cu64MemFree:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
    case CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      return cct::GpuOpKind::kFree;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
      return cct::GpuOpKind::kSync;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<cct::GpuOpKind> LaunchKindOf(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  switch (domain) {
    case CUPTI_CB_DOMAIN_RUNTIME_API:
      return RuntimeKind(cbid);
    case CUPTI_CB_DOMAIN_DRIVER_API:
      return DriverKind(cbid);
    default:
      return std::nullopt;
  }
}

cct::GpuOpKind CopyKindOfMemcpyKind(int cuda_memcpy_kind) {
  switch (cuda_memcpy_kind) {
    case cudaMemcpyHostToDevice:
      return cct::GpuOpKind::kCopyIn;
    case cudaMemcpyDeviceToHost:
      return cct::GpuOpKind::kCopyOut;
    default:
      return cct::GpuOpKind::kCopy;
  }
}

cct::GpuOpKind RefineLaunchKind(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params,
                                cct::GpuOpKind kind) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || params == nullptr) return kind;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
      return CopyKindOfMemcpyKind(static_cast<const cudaMemcpy_v3020_params*>(params)->kind);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
      return CopyKindOfMemcpyKind(static_cast<const cudaMemcpy_ptds_v7000_params*>(params)->kind);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
      return CopyKindOfMemcpyKind(static_cast<const cudaMemcpyAsync_v3020_params*>(params)->kind);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
      return CopyKindOfMemcpyKind(static_cast<const cudaMemcpyAsync_ptsz_v7000_params*>(params)->kind);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
      return CopyKindOfMemcpyKind(static_cast<const cudaMemcpy2D_v3020_params*>(params)->kind);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000:
      return CopyKindOfMemcpyKind(static_cast<const cudaMemcpy2D_ptds_v7000_params*>(params)->kind);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
      return CopyKindOfMemcpyKind(static_cast<const cudaMemcpy2DAsync_v3020_params*>(params)->kind);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000:
      return CopyKindOfMemcpyKind(static_cast<const cudaMemcpy2DAsync_ptsz_v7000_params*>(params)->kind);
    default:
      return kind;
  }
}

}  // namespace collector::cupti
