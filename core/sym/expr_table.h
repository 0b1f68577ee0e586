// ExprTable: expressions evaluated together, each distinct subexpression
// once. A kernel's runner evaluates its steps' extents, sizes and strides
// on every call; they share most of their subexpressions (a slice's length
// in every step that reads the slice), which evaluate() would walk again
// for each. The table lays the distinct nodes out operands first (nodes
// are interned, so one pointer is one subexpression) and evaluates them in
// one pass into slots.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/sym/expr.h"

namespace shapejit::sym {

class ExprTable {
 public:
  // The slot of e's value (e and its subexpressions are added once).
  int add(Expr e);
  size_t size() const { return nodes_.size(); }
  // Every slot's value, symbol i read from values[i], as evaluate() gives it.
  void evaluate(std::span<const int64_t> values, std::vector<int64_t>& out) const;

 private:
  std::unordered_map<const Node*, int> slot_;
  std::vector<const Node*> nodes_;            // by slot, operands before what reads them
  std::vector<int32_t> arg_slots_;            // each node's operands' slots, in turn
  std::vector<int32_t> first_arg_;            // by slot: where its operands start in arg_slots_
};

}  // namespace shapejit::sym
