// Python thread names (python_threads.cc): threads started by Python's
// `threading` named by their Thread's name. Normal context only; none of
// this runs in a signal handler.
#pragma once

#include <cstdint>

namespace collector::internal {
struct ThreadState;
}

namespace collector::python {

// Finds CPython's C API in the process and starts the namer thread; since
// 3.12 (`minor`) also adds the audit hook that names a thread as threading
// starts it, passing the name to its pthread_create of interpreter code
// ([text_lo, text_hi)). False when this interpreter lacks a function it
// needs (nothing is named then).
bool StartThreadNamer(int minor, uintptr_t text_lo, uintptr_t text_hi);

// The thread_started hook's part (registry_mutex held): a new thread may
// be a Python one, to be named soon.
void NoteThreadRegistered(const internal::ThreadState& t);

// In a fork child, before StartThreadNamer.
void ForgetThreadNames();

// How many registered threads have a Python name (the run's diagnostics).
// Takes registry_mutex.
int64_t NamedThreads();

}  // namespace collector::python
