// A library the dl_host program loads with dlopen and unloads.
#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void plugin_work() { BURN_NS(300000000); }

// One short step, for dl_loop's dlopen/call/dlclose cycles.
extern "C" __attribute__((noinline)) void plugin_step(long ns) { BURN_NS(ns); }
