// gpuprof's error type: Status and StatusOr<T>.
//
// Library code reports failure by returning a [[nodiscard]] Status or StatusOr<T>; it never throws
// across a component boundary and never exits. A Status is a code plus a message that names the
// failed operation and its context (address, size, kernel). Both types are value types, cheap to
// move, and not synchronized: share one between threads only with external locking.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gpuprof {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kResourceExhausted,  // out of host or device memory, or over a configured budget
  kDeadlineExceeded,   // a bounded wait ran out (e.g. a device that does not drain)
  kUnavailable,        // a vendor service is absent or taken (CUPTI slot, driver)
  kAborted,
  kDataLoss,
  kInternal,
  kUnimplemented,
};

std::string_view StatusCodeName(StatusCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() noexcept { return {}; }

  bool ok() const noexcept { return code_ == StatusCode::kOk; }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // "CODE: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: message" (no-op on OK), for adding the caller's
  // context as an error travels up.
  Status WithContext(std::string_view context) const;

  // Explicitly discards a status that the caller has decided not to act on.
  void IgnoreError() const noexcept {}

  friend bool operator==(const Status& a, const Status& b) noexcept {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() noexcept { return {}; }
inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status ResourceExhaustedError(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status AbortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status UnimplementedError(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }

// Holds either a T or a non-OK Status. Accessing value() of an error aborts with the status
// printed (a programming error, like dereferencing an empty optional).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) { CheckNotOk(); }        // NOLINT: implicit by design
  StatusOr(Status&& status) : status_(std::move(status)) { CheckNotOk(); }  // NOLINT
  StatusOr(const T& value) : value_(value) {}                               // NOLINT
  StatusOr(T&& value) : value_(std::move(value)) {}                         // NOLINT

  bool ok() const noexcept { return value_.has_value(); }
  const Status& status() const& noexcept { return status_; }
  Status status() && noexcept { return std::move(status_); }

  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T& value() & {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void CheckOk() const;
  void CheckNotOk();

  Status status_;
  std::optional<T> value_;
};

namespace internal {
[[noreturn]] void DieOnBadStatusOrAccess(const Status& status) noexcept;
}  // namespace internal

template <typename T>
void StatusOr<T>::CheckOk() const {
  if (!value_.has_value()) internal::DieOnBadStatusOrAccess(status_);
}

template <typename T>
void StatusOr<T>::CheckNotOk() {
  // A StatusOr built from an OK status has neither value nor error: make it an internal error
  // so the mistake surfaces where it is read rather than as an empty success.
  if (status_.ok()) status_ = InternalError("StatusOr constructed from an OK Status without a value");
}

}  // namespace gpuprof

#define GPUPROF_STATUS_CONCAT_INNER_(a, b) a##b
#define GPUPROF_STATUS_CONCAT_(a, b) GPUPROF_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (a Status); returns it from the enclosing function when it is not OK.
#define GPUPROF_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::gpuprof::Status gpuprof_status_ = (expr);        \
    if (!gpuprof_status_.ok()) return gpuprof_status_; \
  } while (false)

// Evaluates `rexpr` (a StatusOr<T>); on error returns its status, else moves the value into
// `lhs` (a declaration such as `auto x` or an existing variable).
#define GPUPROF_ASSIGN_OR_RETURN(lhs, rexpr) \
  GPUPROF_ASSIGN_OR_RETURN_IMPL_(GPUPROF_STATUS_CONCAT_(gpuprof_statusor_, __LINE__), lhs, rexpr)

#define GPUPROF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                   \
  if (!tmp.ok()) return std::move(tmp).status();        \
  lhs = std::move(tmp).value()
