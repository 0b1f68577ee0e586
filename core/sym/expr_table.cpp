#include "core/sym/expr_table.h"

#include "core/support/status.h"
#include "core/sym/node.h"

namespace shapejit::sym {

int ExprTable::add(Expr e) {
  const Node* n = e.node();
  if (auto it = slot_.find(n); it != slot_.end()) return it->second;
  std::vector<int32_t> args;
  args.reserve(n->args.size());
  for (const Node* a : n->args) args.push_back(add(Expr(a)));
  const int slot = static_cast<int>(nodes_.size());
  nodes_.push_back(n);
  first_arg_.push_back(static_cast<int32_t>(arg_slots_.size()));
  arg_slots_.insert(arg_slots_.end(), args.begin(), args.end());
  slot_.emplace(n, slot);
  return slot;
}

void ExprTable::evaluate(std::span<const int64_t> values, std::vector<int64_t>& out) const {
  out.resize(nodes_.size());
  std::vector<int64_t> args;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node* n = nodes_[i];
    if (n->kind == Kind::kConst) {
      out[i] = n->value;
    } else if (n->kind == Kind::kSymbol) {
      SJ_CHECK(n->value >= 0 && static_cast<size_t>(n->value) < values.size(), "symbol without a value");
      out[i] = values[n->value];
    } else {
      args.resize(n->args.size());
      for (size_t a = 0; a < n->args.size(); ++a) args[a] = out[arg_slots_[first_arg_[i] + a]];
      out[i] = apply_node(n, args.data());
    }
  }
}

}  // namespace shapejit::sym
