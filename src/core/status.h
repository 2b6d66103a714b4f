// Status and Result<T>: Reef's one error type (STYLE.md habit 3).
//
// A Status is a code from the table below plus a human-readable message that says what was
// wrong and which limit or rule it broke. Result<T> holds either a value or a non-OK Status.
// Exceptions never cross a layer boundary; fallible functions return one of these.
//
// Thread ownership: plain values; any thread, caller synchronizes shared instances.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace reef {

// The error codes, one row each: enumerator, stable lowercase name (used in protocol and
// HTTP error bodies), and the HTTP status a network edge maps it to.
#define REEF_STATUS_CODES(X)                         \
  X(kOk, "ok", 200)                                  \
  X(kInvalidArgument, "invalid_argument", 400)       \
  X(kNotFound, "not_found", 404)                     \
  X(kAlreadyExists, "already_exists", 409)           \
  X(kConflict, "conflict", 409)                      \
  X(kDuplicateEventId, "duplicate_event_id", 409)    \
  X(kFailedPrecondition, "failed_precondition", 412) \
  X(kLimitExceeded, "limit_exceeded", 413)           \
  X(kUnavailable, "unavailable", 503)                \
  X(kTrapped, "trapped", 500)                        \
  X(kUnimplemented, "unimplemented", 501)            \
  X(kDataLoss, "data_loss", 500)                     \
  X(kInternal, "internal", 500)

enum class Code {
#define REEF_X(name, text, http) name,
  REEF_STATUS_CODES(REEF_X)
#undef REEF_X
};

// Stable lowercase name of `code`, e.g. "invalid_argument".
std::string_view CodeName(Code code);
// The code named `name` (CodeName's inverse), or nullopt for a name not in the table.
std::optional<Code> CodeFromName(std::string_view name);
// HTTP status code a network edge answers with for `code`.
int CodeHttpStatus(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status Conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
  // An event id the event store already holds (ids are unique there; events/event_store.h).
  static Status DuplicateEventId(std::string m) { return {Code::kDuplicateEventId, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  // A configured limit was exceeded; the message names the limit and its value.
  static Status LimitExceeded(std::string m) { return {Code::kLimitExceeded, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Trapped(std::string m) { return {Code::kTrapped, std::move(m)}; }
  static Status Unimplemented(std::string m) { return {Code::kUnimplemented, std::move(m)}; }
  static Status DataLoss(std::string m) { return {Code::kDataLoss, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: <message>", or "ok".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a T or a non-OK Status. REQUIRES: never constructed from an OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // The error; Status::Ok() when this holds a value.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  // REQUIRES: ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace reef

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define REEF_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::reef::Status reef_status_ = (expr);        \
    if (!reef_status_.ok()) return reef_status_; \
  } while (0)

#define REEF_CONCAT_INNER_(a, b) a##b
#define REEF_CONCAT_(a, b) REEF_CONCAT_INNER_(a, b)

// `REEF_ASSIGN_OR_RETURN(auto x, F());` declares x = *F() or returns F()'s Status.
#define REEF_ASSIGN_OR_RETURN(lhs, expr) \
  REEF_ASSIGN_OR_RETURN_IMPL_(REEF_CONCAT_(reef_result_, __LINE__), lhs, expr)
#define REEF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
