#include "output/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "output/format.h"

namespace output {

namespace {
double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Progress::Progress(std::string label, bool enabled, std::ostream* out, Clock clock)
    : label_(std::move(label)), enabled_(enabled), out_(out ? out : &std::cerr), clock_(std::move(clock)) {
  if (!clock_) clock_ = MonotonicSeconds;
  start_ = clock_();
  if (const char* d = std::getenv("CCT_PROGRESS_DELAY_MS"); d != nullptr && *d != '\0')
    delay_ = std::atof(d) / 1000.0;
}

Progress Progress::ForStderr(std::string label) { return Progress(std::move(label), isatty(STDERR_FILENO) != 0); }

void Progress::Tick() {
  if (!enabled_) return;
  const double now = clock_();
  const double elapsed = now - start_;
  if (elapsed < delay_ || (last_draw_ >= 0 && now - last_draw_ < 0.1)) return;
  last_draw_ = now;
  char tail[96];
  std::snprintf(tail, sizeof tail, " %s  %.1f s", FormatValue(static_cast<double>(bytes_), cct::Unit::kBytes).c_str(),
                elapsed);
  std::string line = label_;
  if (total_ > 0) {
    const double frac = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    constexpr int kBar = 30;
    const int full = static_cast<int>(frac * kBar);
    line += " [";
    line.append(static_cast<size_t>(full), '#');
    line.append(static_cast<size_t>(kBar - full), '.');
    char pct[16];
    std::snprintf(pct, sizeof pct, "] %3d%%", static_cast<int>(frac * 100));
    line += pct;
  }
  if (bytes_ > 0) line += tail;
  else {
    char t[32];
    std::snprintf(t, sizeof t, "  %.1f s", elapsed);
    line += t;
  }
  const size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  *out_ << '\r' << line << std::flush;
  drawn_ = true;
}

void Progress::Finish() {
  if (!drawn_) return;
  *out_ << '\r' << std::string(last_width_, ' ') << '\r' << std::flush;
  drawn_ = false;
  enabled_ = false;
}

CountingStreambuf::int_type CountingStreambuf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  if (progress_) progress_->AddBytes(1);
  return target_->sputc(traits_type::to_char_type(c));
}

std::streamsize CountingStreambuf::xsputn(const char* s, std::streamsize n) {
  if (progress_) progress_->AddBytes(static_cast<uint64_t>(n));
  return target_->sputn(s, n);
}

}  // namespace output
