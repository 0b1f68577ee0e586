#include "core/support/status.h"

namespace shapejit {

const char* code_name(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kGraphBreak: return "graph break";
    case Code::kUnsupported: return "unsupported";
    case Code::kRuntime: return "runtime error";
    case Code::kIo: return "i/o error";
    case Code::kInternal: return "internal error";
    case Code::kUseReference: return "use the reference";
    case Code::kRetry: return "retry";
    case Code::kRaised: return "raised";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(code_name(code_)) + ": " + message();
}

namespace detail {
void check_failed(const char* file, int line, const char* cond, const char* msg) {
  std::fprintf(stderr, "shapejit: internal error at %s:%d: %s (%s)\n", file, line, msg, cond);
  std::abort();
}
}  // namespace detail

}  // namespace shapejit
