// Status and Expected<T>: how shapejit reports bad input.
//
// Bad input from a user or an interpreter (a malformed graph, config, trace or
// call) is a value, never an exception and never an abort. Its message names
// the place: a JSON pointer, a trace line, an input index. A broken internal
// invariant is not bad input: SJ_CHECK aborts at once with file and line.
//
// One macro propagates errors: SJ_TRY(expr) returns the error of a failed
// Status or Expected from the enclosing function, and otherwise yields the
// Expected's value (or nothing, for a Status).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace shapejit {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // malformed input: graph, config, trace, call arguments
  kGraphBreak,       // the interpreter must run this part itself
  kUnsupported,      // valid input that this build or backend cannot handle
  kRuntime,          // a failure while running a kernel (index out of range)
  kIo,               // files
  kInternal,         // a bug in shapejit, reported rather than crashing
  kUseReference,     // a kernel cannot finish this call: its reference fallback runs it
                     // (backends/fallback.h; never leaves the runtime)
  kRetry,            // the interpreter's trace function asks for the call again, with
                     // other arguments (it found arrays the function captures); not an error
  kRaised,           // the interpreter's function raised an error of its own, on this call
                     // or, cached, on one its guards take alike; the message is the
                     // interpreter's label for it (Tracer::raise_error)
};

const char* code_name(Code code);

// Which bad input, where a front end raises errors by type (Python's
// TypeError for an operand of the wrong type or dtype, IndexError for an
// index out of range, ValueError for a value an op refuses); the code says
// the rest.
enum class Detail : uint8_t {
  kNone,
  kType,   // an operand of the wrong kind or dtype
  kIndex,  // an index out of range, found at run time
  kValue,  // a value the op refuses, found at run time (a negative integer power, the max of nothing)
  kOverflow,  // a size, or an integer computed from sizes, that int64 cannot hold at this call
  kMemory,    // a tensor of this call too large to allocate
};

// An ok Status is one null pointer, so returning it through the dispatch
// path costs nothing; an error carries its message on the heap.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message, Detail detail = Detail::kNone)
      : code_(code), detail_(detail), message_(code == Code::kOk ? nullptr : std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& o)
      : code_(o.code_), detail_(o.detail_), message_(o.message_ ? std::make_unique<std::string>(*o.message_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) *this = Status(o);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  Detail detail() const { return detail_; }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

  // Prefixes the message with a place ("graph: /nodes/3: ...").
  Status with_context(const std::string& where) const {
    if (is_ok()) return *this;
    return Status(code_, where + ": " + message(), detail_);
  }
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  Detail detail_ = Detail::kNone;
  std::unique_ptr<std::string> message_;
};

inline Status invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }
inline Status unsupported(std::string message) { return Status(Code::kUnsupported, std::move(message)); }
inline Status graph_break(std::string message) { return Status(Code::kGraphBreak, std::move(message)); }
inline Status runtime_error(std::string message) { return Status(Code::kRuntime, std::move(message)); }
inline Status internal_error(std::string message) { return Status(Code::kInternal, std::move(message)); }
// `why` empty: an expected detour (a failed runtime check the reference
// reports in its words); else a warning for the log.
inline Status use_reference(std::string why = {}) { return Status(Code::kUseReference, std::move(why)); }

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) {
    if (std::get<Status>(v_).is_ok()) {
      v_ = Status(Code::kInternal, "Expected constructed from an ok Status");
    }
  }

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  Status status() const { return is_ok() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

namespace detail {
inline Status error_of(Status&& s) { return std::move(s); }
template <typename T>
Status error_of(Expected<T>&& e) { return e.status(); }
inline void value_of(Status&&) {}
template <typename T>
T value_of(Expected<T>&& e) { return std::move(e).value(); }
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* msg);
}  // namespace detail

}  // namespace shapejit

// Propagates the error of a Status or Expected<T>; yields T's value on success.
#define SJ_TRY(expr)                                                      \
  ({                                                                      \
    auto&& sj_try_result_ = (expr);                                       \
    if (!sj_try_result_.is_ok())                                          \
      return ::shapejit::detail::error_of(std::move(sj_try_result_));     \
    ::shapejit::detail::value_of(std::move(sj_try_result_));              \
  })

// Past a switch whose every case returns: `what` the switch was over (a
// value out of its enum's range).
#define SJ_UNREACHABLE(what) ::shapejit::detail::check_failed(__FILE__, __LINE__, "unreachable", "a value past every case of " what)

// A broken internal invariant: abort with the place.
#define SJ_CHECK(cond, msg)                                                         \
  do {                                                                              \
    if (!(cond)) ::shapejit::detail::check_failed(__FILE__, __LINE__, #cond, msg);  \
  } while (0)
