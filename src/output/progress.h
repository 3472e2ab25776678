// Progress: a one-line progress bar on stderr for long exports.
//
// Shown only when stderr is a terminal and the work has already taken more
// than a second, so short runs and pipelines (CI logs, `2>file`) never see it.
// Exporters report work done in units they choose (nodes); when no total is
// known the line shows bytes written and time instead of a bar. The line is
// erased on Finish() so the terminal is left as it was.
//
// Redrawn at most ten times a second; Update() is cheap enough to call per
// node (it looks at the clock every 4096 calls). Owns nothing but its
// counters; borrows the stream it draws on. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <streambuf>
#include <string>

namespace output {

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic

  // `enabled` false makes every call a no-op. The default is "stderr is a
  // terminal"; CCT_PROGRESS_DELAY_MS overrides the one-second delay (tests).
  Progress(std::string label, bool enabled, std::ostream* out = nullptr, Clock clock = nullptr);
  static Progress ForStderr(std::string label);
  ~Progress() { Finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void SetTotal(uint64_t total) { total_ = total; }
  void Update(uint64_t done) {
    done_ = done;
    if (enabled_ && (++calls_ & 4095) == 0) Tick();
  }
  void AddBytes(uint64_t n) {
    bytes_ += n;
    if (enabled_ && (++calls_ & 4095) == 0) Tick();
  }
  // Draws now if due (callers with coarse steps call this directly).
  void Tick();
  // Erases the line if one was drawn.
  void Finish();

  bool drawn() const { return drawn_; }
  void set_delay(double seconds) { delay_ = seconds; }

 private:
  std::string label_;
  bool enabled_;
  std::ostream* out_;
  Clock clock_;
  double start_ = 0, last_draw_ = -1, delay_ = 1.0;
  uint64_t total_ = 0, done_ = 0, bytes_ = 0, calls_ = 0;
  bool drawn_ = false;
  size_t last_width_ = 0;
};

// A stream buffer that forwards to another and counts the bytes into a
// Progress, so any exporter's output shows how much has been written.
class CountingStreambuf : public std::streambuf {
 public:
  CountingStreambuf(std::streambuf* target, Progress* progress) : target_(target), progress_(progress) {}

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override { return target_->pubsync(); }

 private:
  std::streambuf* target_;
  Progress* progress_;
};

}  // namespace output
