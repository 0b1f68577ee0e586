// Tracer: what an interpreter drives while tracing a call.
//
// Every input dim starts as a symbol. `size(t, d)` returns a SymInt and
// records nothing: arithmetic on SymInts is traced into the graph, so a
// shape computed from sizes stays dynamic. Only an observation specializes:
//   - guard_bool(cmp, a, b): the interpreter branches on a comparison; the
//     outcome on this call is returned and guarded (`s1 != 10`), the value
//     is not;
//   - guard_int(n): the interpreter needs the integer; it is returned and
//     its symbols become static for this entry (a semantic guard). When the
//     policy has backed the dim off, guard_int returns a GraphBreak error
//     instead: the interpreter runs that part itself.
// Ops are checked as they are added (operand kinds, dtypes, shapes), so a
// tracing error names the op at fault.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/infer.h"
#include "core/support/status.h"
#include "core/sym/shape_env.h"

namespace shapejit::trace {

enum class Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
const char* cmp_name(Cmp c);
std::optional<Cmp> parse_cmp(std::string_view s);

// What the interpreter read as a number while tracing, in the trace format's
// terms: an input dim needed as an int, or compared with a value.
struct Observation {
  int input = 0, dim = 0;
  bool as_int = true;
  Cmp cmp = Cmp::kEq;  // when !as_int
  int64_t value = 0;   // when !as_int
};

// What guard_int does with an input dim: specialize it, or raise a
// GraphBreak whose message says why (the interpreter runs that part itself).
struct IntUse {
  bool graph_break = false;
  std::string why;
  static IntUse specialize() { return {}; }
  static IntUse break_graph(std::string why) { return {true, std::move(why)}; }
};

struct TraceOptions {
  bool specialize_zero_one = true;
  // The recompile policy's answer for input `input`'s dim `dim`; unset: specialize.
  std::function<IntUse(int input, int dim)> on_guard_int;
};

// A finished trace: the graph, the env with every decision, the types.
struct Trace {
  ir::Graph graph;
  sym::ShapeEnv env;
  std::vector<ir::ValueType> types;
  std::vector<Observation> observed;
};

class Tracer {
 public:
  struct Value {
    int id = -1;
  };
  // An operand: a traced value or a literal.
  using Arg = std::variant<Value, int64_t, double>;

  // `inputs` describes the inputs (their dims symbols or pinned sizes);
  // `hints` are this call's concrete shapes.
  static Expected<std::unique_ptr<Tracer>> create(std::vector<ir::InputSpec> inputs, ir::ShapeHints hints, TraceOptions options);

  int num_inputs() const { return static_cast<int>(graph_.inputs.size()); }
  Value input(int i) const { return {i}; }

  // Adds a node; returns its result.
  Expected<Value> op(ir::Op op, const std::vector<Arg>& in, ir::Attrs attrs = {}, std::string name = {});
  // Adds a node read from a graph whose values are numbered as this trace's.
  Status append(const ir::Node& node, const std::string& name);

  Expected<Value> size(Value t, int dim) {
    ir::Attrs a;
    a.present = ir::kAttrDim;
    a.dim = dim;
    return op(ir::Op::kSymSize, {t}, a);
  }
  bool is_tensor(Value v) const { return types_[v.id].is_tensor; }
  ir::DType dtype(Value v) const { return types_[v.id].dtype; }
  int rank(Value v) const { return static_cast<int>(types_[v.id].shape.size()); }
  const std::vector<ir::ValueType>& types() const { return types_; }

  Expected<int64_t> guard_int(Value symint, const std::string& label = {});
  Expected<bool> guard_bool(Cmp cmp, Arg lhs, Arg rhs, const std::string& label = {});
  // Replays an observation from a recorded trace (no graph nodes added).
  Status observe(const Observation& o);

  Status output(Value t);

  // The interpreter met what it cannot trace (a branch on tensor data, a
  // call it has no op for): returns the GraphBreak for the trace function to
  // return, and marks it as following from the decisions taken so far (the
  // same trace would meet it again), so the site caches the break.
  Status break_graph(const std::string& why) {
    broke_ = true;
    return graph_break(why);
  }

  // Whether this tracer raised a GraphBreak (a backed-off or data-dependent
  // dim): such a break is determined by the decisions recorded so far.
  bool broke() const { return broke_; }

  // The interpreter's function raised an error of its own (NumPy's
  // IndexError for an index past a size, the function's `raise`), whose
  // label, the interpreter's, names it: returns the Raised status for the
  // trace function to return, and marks it as following from the
  // decisions taken so far, so the site caches it as it caches a break.
  Status raise_error(const std::string& label) {
    raised_ = true;
    return Status(Code::kRaised, label);
  }
  bool raised() const { return raised_; }

  const ir::Graph& graph() const { return graph_; }
  const sym::ShapeEnv& env() const { return env_; }
  Trace finish() &&;

 private:
  Tracer(TraceOptions options) : options_(std::move(options)), env_(options_.specialize_zero_one) {}
  Expected<sym::Expr> symint_expr(const Arg& a) const;
  Expected<int64_t> guard_int_expr(sym::Expr e, const std::string& label);
  Expected<bool> guard_bool_expr(Cmp cmp, sym::Expr a, sym::Expr b, const std::string& label);
  Status add_node(ir::Node node, std::string name);

  TraceOptions options_;
  ir::Graph graph_;
  sym::ShapeEnv env_;
  std::vector<ir::ValueType> types_;
  std::vector<Observation> observed_;
  bool broke_ = false;
  bool raised_ = false;
};

}  // namespace shapejit::trace
