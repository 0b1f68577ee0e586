// Pass: dim merging. A pointwise step's dims of extent 1 read index 0, and
// adjacent dims that every access (loads, stores) strides alike become one
// loop: a dense [a, b, c] chain is a single loop of a*b*c. Dims a gather's
// index reads stay apart.
#include <algorithm>
#include <map>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

namespace {

bool mentions(Expr e, int id) {
  if (e.is_symbol()) return e.symbol_id() == id;
  for (size_t i = 0; i < e.num_args(); ++i) {
    if (mentions(e.arg(i), id)) return true;
  }
  return false;
}

// c, where e is b + c*x with neither b nor c mentioning symbol x (`id`),
// read off e's canonical sum of products; nullopt when e is not affine in x
// (x in a quotient, a min, or a square).
std::optional<Expr> affine_coefficient(Expr e, int id) {
  // A product's coefficient: the other factors, when x is one of them once.
  auto of_product = [&](Expr m) -> std::optional<Expr> {
    if (m.is_symbol()) return m.symbol_id() == id ? std::optional<Expr>(Expr(1)) : std::optional<Expr>(Expr(0));
    if (m.kind() != sym::Kind::kMul) return mentions(m, id) ? std::nullopt : std::optional<Expr>(Expr(0));
    Expr rest(1);
    int seen = 0;
    for (size_t f = 0; f < m.num_args(); ++f) {
      const Expr factor = m.arg(f);
      if (factor.is_symbol() && factor.symbol_id() == id) {
        ++seen;
      } else if (mentions(factor, id)) {
        return std::nullopt;
      } else {
        rest = rest * factor;
      }
    }
    if (seen > 1) return std::nullopt;
    return seen == 1 ? rest : Expr(0);
  };
  if (e.kind() != sym::Kind::kAdd) return of_product(e);
  Expr c(0);
  for (size_t i = 0; i < e.num_args(); ++i) {
    const std::optional<Expr> ci = of_product(e.arg(i));
    if (!ci) return std::nullopt;
    if (!ci->is_const() || ci->const_value() != 0) c = c + Expr(e.coeff(i)) * *ci;
  }
  return c;
}

}  // namespace

LoopDims merge_dims(Phase& ph, LoopDims dims) {
  std::vector<Expr>& vars = dims.vars;
  std::vector<Expr>& extents = dims.extents;
  // The accesses are rewritten once for each kind of change: the vars set
  // to 0 are set together.
  auto zero = [&](const std::vector<int>& ids) {
    if (ids.empty()) return;
    substitute_indices(ph, [&](int s) -> std::optional<Expr> {
      return std::find(ids.begin(), ids.end(), s) != ids.end() ? std::optional<Expr>(Expr(0)) : std::nullopt;
    });
  };
  auto is_var = [&](int id) {
    return std::any_of(vars.begin(), vars.end(), [&](const Expr& v) { return v.symbol_id() == id; });
  };
  // Dims of extent 1 read index 0.
  std::vector<int> zeroed;
  for (size_t d = vars.size(); d-- > 0;) {
    if (is_one(extents[d]) && vars.size() > 1) {
      zeroed.push_back(vars[d].symbol_id());
      vars.erase(vars.begin() + static_cast<int64_t>(d));
      extents.erase(extents.begin() + static_cast<int64_t>(d));
    }
  }
  zero(zeroed);
  zeroed.clear();
  // The accesses, and each var's coefficient in each (nullopt: not affine).
  std::vector<Expr*> accesses;
  std::vector<bool> pinned(vars.size(), false);
  for (Inst& i : ph.body) {
    if (i.kind == InstKind::kLoad) accesses.push_back(&i.expr);
    if (i.kind == InstKind::kIndex) {
      for (int s : sym::symbols_of(i.expr)) {
        for (size_t d = 0; d < vars.size(); ++d) pinned[d] = pinned[d] || vars[d].symbol_id() == s;
      }
    }
  }
  for (Store& s : ph.stores) accesses.push_back(&s.offset);
  auto coefficient = [&](Expr e, int id) -> std::optional<Expr> {
    std::optional<Expr> c = affine_coefficient(e, id);
    if (!c) return std::nullopt;
    for (int s : sym::symbols_of(*c)) {
      if (is_var(s)) return std::nullopt;
    }
    return c;
  };
  // Each access's coefficient of each var, worked out once, on the accesses
  // before any merge: a merge sets its outer var to 0 (all of them at the
  // end), which leaves the others' coefficients as they were. (A merged var
  // is in no other's coefficient: a product of the two would have made its
  // own not affine.)
  std::map<std::pair<size_t, int>, std::optional<Expr>> coefficients;
  auto coefficient_of = [&](size_t a, int id) -> const std::optional<Expr>& {
    auto [it, fresh] = coefficients.try_emplace({a, id});
    if (fresh) it->second = coefficient(*accesses[a], id);
    return it->second;
  };
  for (size_t d = vars.size(); d-- > 1;) {
    if (pinned[d] || pinned[d - 1]) continue;
    const int inner = vars[d].symbol_id(), outer = vars[d - 1].symbol_id();
    bool ok = true;
    for (size_t a = 0; a < accesses.size(); ++a) {
      const std::optional<Expr>& ci = coefficient_of(a, inner);
      const std::optional<Expr>& co = coefficient_of(a, outer);
      if (!ci || !co || !(*co == *ci * extents[d])) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    zeroed.push_back(outer);
    extents[d] = extents[d - 1] * extents[d];
    vars.erase(vars.begin() + static_cast<int64_t>(d - 1));
    extents.erase(extents.begin() + static_cast<int64_t>(d - 1));
    pinned.erase(pinned.begin() + static_cast<int64_t>(d - 1));
  }
  zero(zeroed);
  return dims;
}

}  // namespace shapejit::backends::loops
