#include "collector/gpu/gpu_probe.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <string>

namespace collector {

bool GpuDevicePresent() {
  bool device = false;
  if (DIR* dir = opendir("/proc/driver/nvidia/gpus")) {
    while (const dirent* e = readdir(dir))
      if (e->d_name[0] != '.') device = true;
    closedir(dir);
  }
  for (int i = 0; i < 64 && !device; ++i) {
    const std::string node = "/dev/nvidia" + std::to_string(i);
    device = access(node.c_str(), F_OK) == 0;
  }
  return device;
}

cct::Status ProbeGpu(bool need_device) {
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (cuda == nullptr) cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (cuda == nullptr)
    return cct::Status(cct::ErrorCode::kUnavailable, "no CUDA driver (libcuda.so.1 cannot be loaded)");
  if (need_device && !GpuDevicePresent())
    return cct::Status(cct::ErrorCode::kUnavailable,
                       "no GPU (no /dev/nvidiaN device and nothing under /proc/driver/nvidia/gpus)");
  return cct::Status::Ok();
}

}  // namespace collector
