// Python thread names (python_threads.cc): threads started by Python's
// `threading` named by their Thread's name. Normal context only; none of
// this runs in a signal handler.
#pragma once

#include <cstdint>

namespace collector::internal {
struct ThreadState;
}

namespace collector::python {

// Finds CPython's C API in the process and starts the namer thread; false
// when this interpreter lacks a function it needs (nothing is named then).
bool StartThreadNamer();

// The thread_started hook's part (registry_mutex held): a new thread may
// be a Python one, to be named soon.
void NoteThreadRegistered(const internal::ThreadState& t);

// In a fork child, before StartThreadNamer.
void ForgetThreadNames();

// How many registered threads have a Python name (the run's diagnostics).
// Takes registry_mutex.
int64_t NamedThreads();

}  // namespace collector::python
