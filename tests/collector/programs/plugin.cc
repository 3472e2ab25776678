// A library the dl_host program loads with dlopen and unloads. With
// CCT_TEST_PLUGIN_INIT_MS set, its constructor burns that many
// milliseconds: code that runs inside dlopen, before the library is in the
// collector's published module set.
#include <stdlib.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void plugin_work() { BURN_NS(300000000); }

// One short step, for dl_loop's dlopen/call/dlclose cycles.
extern "C" __attribute__((noinline)) void plugin_step(long ns) { BURN_NS(ns); }

extern "C" __attribute__((noinline)) void plugin_init() {
  if (const char* ms = getenv("CCT_TEST_PLUGIN_INIT_MS")) BURN_NS(atol(ms) * 1000000L);
}
__attribute__((constructor)) static void PluginLoaded() { plugin_init(); }
