// Loads a library with dlopen, runs its plugin_work, unloads it, then burns
// in host_work (so samples exist after the unload).  dl_host LIBRARY
#include <dlfcn.h>
#include <stdio.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void host_work() { BURN_NS(200000000); }

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto fn = reinterpret_cast<void (*)()>(dlsym(h, "plugin_work"));
  if (!fn) return 1;
  fn();
  dlclose(h);
  host_work();
  return 0;
}
