// Status values: how every cctdb module reports failure.
//
// No exception crosses a module boundary; functions that can fail return a
// Status or a Result<T>. The message is one human-readable line, written so a
// tool can print it after its own name and exit. Plain values; thread-compatible.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace cct {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad usage: option, selector, formula, metric name
  kNotFound,         // a run, metric or file that is not there
  kCorrupt,          // damaged or foreign input data
  kVersion,          // data written by a newer format version
  kIo,               // the operating system refused (open, write, lock)
  kBadInput,         // malformed input file (import)
  kUnavailable,      // a facility that cannot work here (e.g. no GPU)
  kInternal,
  kFindings,         // not a failure: the command ran and found what it looks
                     // for (damaged runs); the tools exit 1, not 2
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("reading cct.db: ") to the message; keeps the code.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status Corrupt(std::string m) { return {ErrorCode::kCorrupt, std::move(m)}; }
inline Status IoError(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
inline Status BadInput(std::string m) { return {ErrorCode::kBadInput, std::move(m)}; }

// A value or the Status explaining why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace cct

// Early-return helpers for Status/Result-returning code.
#define CCT_RETURN_IF_ERROR(expr)            \
  do {                                       \
    ::cct::Status cct_status_ = (expr);      \
    if (!cct_status_.ok()) return cct_status_; \
  } while (0)

#define CCT_CONCAT_INNER(a, b) a##b
#define CCT_CONCAT(a, b) CCT_CONCAT_INNER(a, b)
#define CCT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
#define CCT_ASSIGN_OR_RETURN(lhs, expr) \
  CCT_ASSIGN_OR_RETURN_IMPL(CCT_CONCAT(cct_result_, __LINE__), lhs, expr)
