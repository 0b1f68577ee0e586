// Walks over an expression's tree: the symbols it reads, a substitution
// (what changed is rebuilt by the arithmetic of expr.cpp), its text.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/sym/expr.h"
#include "core/sym/node.h"

namespace shapejit::sym {

namespace {
void collect(const Node* n, std::vector<int>& out) {
  if (n->kind == Kind::kSymbol) out.push_back(static_cast<int>(n->value));
  for (const Node* a : n->args) collect(a, out);
}
}  // namespace

std::vector<int> symbols_of(Expr e) {
  std::vector<int> out;
  collect(e.node(), out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// e with its operands replaced by what `child` makes of them; a subtree in
// which nothing changed is returned as it is, not rebuilt.
Expr rebuild(Expr e, const std::function<Expr(Expr)>& child) {
  const Node* n = e.node();
  std::vector<Expr> args;
  args.reserve(n->args.size());
  bool changed = false;
  for (const Node* a : n->args) {
    args.push_back(child(Expr(a)));
    changed |= args.back().node() != a;
  }
  if (!changed) return e;
  switch (n->kind) {
    case Kind::kAdd: {
      Expr acc(n->value);
      for (size_t i = 0; i < args.size(); ++i) acc = acc + Expr(n->coeffs[i]) * args[i];
      return acc;
    }
    case Kind::kMul: {
      Expr acc(1);
      for (const Expr& a : args) acc = acc * a;
      return acc;
    }
    case Kind::kFloorDiv: return floordiv(args[0], args[1]);
    case Kind::kMod: return mod(args[0], args[1]);
    case Kind::kMin: return min(args[0], args[1]);
    case Kind::kMax: return max(args[0], args[1]);
    default: return e;
  }
}

}  // namespace

Expr substitute(Expr e, const std::function<std::optional<Expr>(int)>& f, SubstituteMemo* memo) {
  const Node* n = e.node();
  if (n->kind == Kind::kConst) return e;
  if (n->kind == Kind::kSymbol) {
    auto r = f(static_cast<int>(n->value));
    return r ? *r : e;
  }
  if (memo) {
    if (auto it = memo->find(n); it != memo->end()) return it->second;
  }
  const Expr r = rebuild(e, [&](Expr a) { return substitute(a, f, memo); });
  if (memo) memo->emplace(n, r);
  return r;
}

Expr rewrite(Expr e, const std::function<std::optional<Expr>(Expr)>& f) {
  if (std::optional<Expr> r = f(e)) return *r;
  return rebuild(e, [&](Expr a) { return rewrite(a, f); });
}

namespace {

// |c|, of INT64_MIN too.
uint64_t magnitude(int64_t c) { return c < 0 ? uint64_t{0} - static_cast<uint64_t>(c) : static_cast<uint64_t>(c); }

void print(const Node* n, const std::vector<std::string>* names, std::string& out) {
  auto sub = [&](const Node* a) { print(a, names, out); };
  switch (n->kind) {
    case Kind::kConst: out += std::to_string(n->value); return;
    case Kind::kSymbol:
      if (names && n->value < static_cast<int64_t>(names->size())) out += (*names)[n->value];
      else out += "s" + std::to_string(n->value);
      return;
    case Kind::kAdd: {
      bool first = true;
      for (size_t i = 0; i < n->args.size(); ++i) {
        int64_t c = n->coeffs[i];
        if (!first) out += c < 0 ? " - " : " + ";
        else if (c < 0) out += "-";
        const uint64_t mag = magnitude(c);
        if (mag != 1) out += std::to_string(mag) + "*";
        sub(n->args[i]);
        first = false;
      }
      if (n->value != 0) {
        out += n->value < 0 ? " - " : " + ";
        out += std::to_string(magnitude(n->value));
      }
      return;
    }
    case Kind::kMul:
      for (size_t i = 0; i < n->args.size(); ++i) {
        if (i) out += "*";
        bool paren = n->args[i]->kind == Kind::kAdd;
        if (paren) out += "(";
        sub(n->args[i]);
        if (paren) out += ")";
      }
      return;
    case Kind::kFloorDiv:
    case Kind::kMod: {
      auto operand = [&](const Node* a) {
        const bool paren = a->kind == Kind::kAdd;
        if (paren) out += "(";
        sub(a);
        if (paren) out += ")";
      };
      out += "(";
      operand(n->args[0]);
      out += n->kind == Kind::kFloorDiv ? " // " : " % ";
      operand(n->args[1]);
      out += ")";
      return;
    }
    case Kind::kMin:
    case Kind::kMax:
      out += n->kind == Kind::kMin ? "min(" : "max(";
      sub(n->args[0]);
      out += ", ";
      sub(n->args[1]);
      out += ")";
      return;
  }
}
}  // namespace

std::string Expr::str(const std::vector<std::string>* names) const {
  std::string out;
  print(n_, names, out);
  return out;
}

}  // namespace shapejit::sym
