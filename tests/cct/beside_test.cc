// cct::RunBeside (cct/beside.h): both pieces run, on two threads when asked
// and in turn (beside first) when not; an exception from either reaches the
// caller only after both are done.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "cct/beside.h"

TEST_CASE("RunBeside: in parallel the two pieces run on two threads, at the same time") {
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id beside_on, here_on;
  // Each waits until the other has started: run one after the other, they
  // would wait for ever, so the test would hang (doctest's CI timeout) or
  // the bounded wait below gives up and the check fails.
  std::atomic<int> started{0};
  auto meet = [&] {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return started.load() == 2;
  };
  bool beside_met = false, here_met = false;
  cct::RunBeside(
      true,
      [&] {
        beside_on = std::this_thread::get_id();
        beside_met = meet();
      },
      [&] {
        here_on = std::this_thread::get_id();
        here_met = meet();
      });
  CHECK(beside_met);
  CHECK(here_met);
  CHECK(here_on == caller);
  CHECK(beside_on != caller);
}

TEST_CASE("RunBeside: not in parallel, beside runs first, on the calling thread") {
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int> order;
  std::thread::id beside_on;
  cct::RunBeside(
      false,
      [&] {
        beside_on = std::this_thread::get_id();
        order.push_back(1);
      },
      [&] { order.push_back(2); });
  CHECK(order == std::vector<int>{1, 2});
  CHECK(beside_on == caller);
}

TEST_CASE("RunBeside: an exception beside reaches the caller after both pieces are done") {
  for (bool parallel : {true, false}) {
    CAPTURE(parallel);
    bool here_done = false;
    CHECK_THROWS_AS(cct::RunBeside(
                        parallel, [] { throw std::runtime_error("beside"); },
                        [&] {
                          std::this_thread::sleep_for(std::chrono::milliseconds(20));
                          here_done = true;
                        }),
                    std::runtime_error);
    CHECK(here_done);
  }
}

TEST_CASE("RunBeside: an exception here leaves only once the thread beside has finished") {
  std::atomic<bool> beside_done{false};
  bool beside_done_at_catch = false;
  try {
    cct::RunBeside(
        true,
        [&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          beside_done = true;
        },
        [] { throw std::runtime_error("here"); });
  } catch (const std::runtime_error& e) {
    beside_done_at_catch = beside_done.load();
    CHECK(std::string(e.what()) == "here");
  }
  CHECK(beside_done_at_catch);
}
