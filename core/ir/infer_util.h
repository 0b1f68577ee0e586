// Helpers shared by the shape rules (infer.cpp, infer_views.cpp). Internal.
#pragma once

#include <string>
#include <vector>

#include "core/ir/infer.h"

namespace shapejit::ir::detail {

using sym::Expr;
using sym::Origin;
using sym::Rel;

struct Ctx {
  const Graph& g;
  const Node& node;
  std::vector<ValueType>& types;
  sym::ShapeEnv& env;

  Status error(const std::string& msg) const;
  // An operand of the wrong kind or dtype (Detail::kType).
  Status type_error(const std::string& msg) const;
  const Attrs& attrs() const { return node.attrs; }
  ValueType& result() const { return types[node.out[0]]; }

  bool is_tensor(size_t i) const;
  Expected<const ValueType*> tensor(size_t i) const;
  Expected<Expr> symint(size_t i) const;
  Expected<int> axis(int64_t d, size_t rank, const char* what) const;
  Expected<Expr> broadcast_dim(Expr a, Expr b) const;
  Expected<std::vector<Expr>> broadcast(const std::vector<Expr>& a, const std::vector<Expr>& b) const;
  std::string str(Expr e) const { return env.str(e); }
};

Status infer_views(Ctx& c);  // reshape, permute, ..., nonzero, masked_select

}  // namespace shapejit::ir::detail
