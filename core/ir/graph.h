// Graph: a traced tensor program as the interpreter described it.
//
// This is the description only, exactly what TRACE_FORMAT.md's JSON holds:
// inputs with their dim specs (an integer pins a dim, a name is a symbol, one
// name on two dims declares them equal), nodes in dataflow order, outputs.
// Values are numbered inputs first, then node results in node order; a node
// reads only earlier values. Shapes are not stored here: shape inference
// (infer.h) derives them under a ShapeEnv, because the same description is
// specialized differently for different calls.
//
// The canonical hash ignores value names and the order of independent nodes:
// two graphs with the same dataflow hash the same.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/ops.h"
#include "core/support/hash.h"

namespace shapejit::ir {

struct DimSpec {
  bool is_symbol = false;
  int64_t value = 0;  // when pinned
  std::string name;   // when a symbol
  static DimSpec pinned(int64_t v) { return {false, v, {}}; }
  static DimSpec symbol(std::string n) { return {true, 0, std::move(n)}; }
};

struct InputSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<DimSpec> shape;
};

// An operand: an earlier value (tensor or SymInt) or a literal.
struct Operand {
  enum class Kind : uint8_t { kValue, kInt, kFloat };
  Kind kind = Kind::kValue;
  int value = -1;
  int64_t i = 0;
  double f = 0;
  static Operand of(int v) { return {Kind::kValue, v, 0, 0}; }
  static Operand integer(int64_t x) { return {Kind::kInt, -1, x, 0}; }
  static Operand real(double x) { return {Kind::kFloat, -1, 0, x}; }
  bool is_value() const { return kind == Kind::kValue; }
};

// A scalar attribute (full's value): an integer or a float as written.
struct Scalar {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
};

// Attributes; `present` says which were given (or defaulted by
// normalize_attrs). Only the bits op_info(op).attrs allows may be set.
struct Attrs {
  uint32_t present = 0;
  std::vector<int64_t> axes, perm, dims;
  bool keepdim = false;
  int64_t dim = 0, dim0 = 0, dim1 = 0;
  DType dtype = DType::kF32;
  double eps = 0;
  Scalar value;
  bool approximate_tanh = false;
  bool has(AttrBit b) const { return (present & b) != 0; }
};

struct Node {
  Op op;
  std::vector<Operand> in;
  std::vector<int> out;
  Attrs attrs;
};

struct Graph {
  std::vector<InputSpec> inputs;
  std::vector<Node> nodes;
  std::vector<int> outputs;
  std::vector<std::string> value_names;  // inputs, then node results

  int num_values() const { return static_cast<int>(value_names.size()); }
  Hash128 canonical_hash() const;
};

// Fills the defaults of the op's optional attributes (keepdim false, softmax
// dim -1, eps, gelu's approximate, arange's dtype), so that spelling a
// default out or leaving it implicit gives one graph and one hash.
void normalize_attrs(Node& node);

}  // namespace shapejit::ir
