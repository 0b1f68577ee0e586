// A node of an expression, interned (expr.cpp): what the files that build
// and walk expressions share, and no other layer sees.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sym/expr.h"

namespace shapejit::sym {

struct Node {
  Kind kind;
  int64_t value = 0;                // kConst: the value; kSymbol: the id; kAdd: the constant term
  std::vector<const Node*> args;    // kAdd: monomials; kMul: sorted factors; others: operands
  std::vector<int64_t> coeffs;      // kAdd: one per monomial
  uint64_t hash = 0;
  int depth = 1;
};

// The value of a sum, product or operation node from its operands' values
// (`args`, one per operand), in evaluate()'s arithmetic (expr.cpp).
int64_t apply_node(const Node* n, const int64_t* args);

}  // namespace shapejit::sym
