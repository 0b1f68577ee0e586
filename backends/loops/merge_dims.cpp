// Pass: dim merging. A pointwise step's dims of extent 1 read index 0, and
// adjacent dims that every access (loads, stores) strides alike become one
// loop: a dense [a, b, c] chain is a single loop of a*b*c. Dims a gather's
// index reads stay apart.
#include <algorithm>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

LoopDims merge_dims(Phase& ph, LoopDims dims) {
  std::vector<Expr>& vars = dims.vars;
  std::vector<Expr>& extents = dims.extents;
  auto rewrite = [&](const std::function<std::optional<Expr>(int)>& f) { substitute_indices(ph, f); };
  auto is_var = [&](int id) {
    return std::any_of(vars.begin(), vars.end(), [&](const Expr& v) { return v.symbol_id() == id; });
  };
  // Dims of extent 1 read index 0.
  for (size_t d = vars.size(); d-- > 0;) {
    if (is_one(extents[d]) && vars.size() > 1) {
      int id = vars[d].symbol_id();
      rewrite([&](int s) -> std::optional<Expr> { return s == id ? std::optional<Expr>(Expr(0)) : std::nullopt; });
      vars.erase(vars.begin() + static_cast<int64_t>(d));
      extents.erase(extents.begin() + static_cast<int64_t>(d));
    }
  }
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
    auto at = [&](int64_t x) { return sym::substitute(e, [&](int s) { return s == id ? std::optional<Expr>(Expr(x)) : std::nullopt; }); };
    Expr base = at(0), c = at(1) - base;
    for (int s : sym::symbols_of(c)) {
      if (is_var(s)) return std::nullopt;
    }
    if (!(base + c * Expr::symbol(id) == e)) return std::nullopt;
    return c;
  };
  for (size_t d = vars.size(); d-- > 1;) {
    if (pinned[d] || pinned[d - 1]) continue;
    const int inner = vars[d].symbol_id(), outer = vars[d - 1].symbol_id();
    bool ok = true;
    for (Expr* e : accesses) {
      auto ci = coefficient(*e, inner), co = coefficient(*e, outer);
      if (!ci || !co || !(*co == *ci * extents[d])) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    rewrite([&](int s) -> std::optional<Expr> { return s == outer ? std::optional<Expr>(Expr(0)) : std::nullopt; });
    extents[d] = extents[d - 1] * extents[d];
    vars.erase(vars.begin() + static_cast<int64_t>(d - 1));
    extents.erase(extents.begin() + static_cast<int64_t>(d - 1));
    pinned.erase(pinned.begin() + static_cast<int64_t>(d - 1));
  }
  return dims;
}

}  // namespace shapejit::backends::loops
