// RunBeside: two pieces of work at once, on the calling thread and one more.
//
// For the readers' large steps (a 10^7-node tree: tenths of a second each)
// that touch disjoint data. The result is the same as running `beside`,
// then `here`, on the calling thread: when no thread can be had, or
// `parallel` is false (small inputs, where starting a thread costs more than
// it saves), that is what happens. Either way both pieces run: an exception
// thrown by `beside` (out of memory) is rethrown on the calling thread once
// `here` is done and the thread joined, so the caller reports it as it would
// without the thread; one thrown by `here` leaves after the join.
//
// Thread-safety: `beside` and `here` must not touch the same data unless
// both only read it.
#pragma once

#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>

namespace cct {

// Inputs from this many nodes are worth a second thread; below, starting
// one costs about what it saves.
inline constexpr size_t kParallelNodes = size_t{1} << 20;

template <class Beside, class Here>
void RunBeside(bool parallel, Beside&& beside, Here&& here) {
  std::exception_ptr thrown;
  auto run_beside = [&] {
    try {
      beside();
    } catch (...) {
      thrown = std::current_exception();
    }
  };
  {
    std::jthread thread;  // joined on the way out, whatever happens here
    if (parallel) {
      try {
        thread = std::jthread(run_beside);
      } catch (const std::system_error&) {
        // No thread to be had: run below, in turn.
      }
    }
    if (!thread.joinable()) run_beside();
    here();
  }
  if (thrown) std::rethrow_exception(thrown);
}

}  // namespace cct
