// Pass: tiling. A pointwise step's long (or unknown) innermost loop splits
// into tiles of `LowerOptions::tile` elements, the unit CPU threads share;
// the loops left become the step's outer loops (threads) and its phase's
// one inner loop. A GPU lowers untiled (tile 0): its grid spreads the loop.
#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

void tile(LoopStep& step, LoopDims dims, int64_t tile, const std::function<Expr()>& new_symbol) {
  std::vector<Expr>& vars = dims.vars;
  std::vector<Expr>& extents = dims.extents;
  Phase& ph = step.phases[0];
  auto rewrite = [&](const std::function<std::optional<Expr>(int)>& f) { substitute_indices(ph, f); };
  Expr work = vars.empty() ? Expr(1) : extents.back();
  if (!vars.empty()) step.empty_if_zero = {extents.back()};
  if (!vars.empty() && tile > 0) {
    Expr last = extents.back();
    auto c = last.as_const();
    if (!c || *c > 2 * tile) {
      Expr t = new_symbol(), j = vars.back();
      const int jid = j.symbol_id();
      Expr jj = new_symbol();
      rewrite([&](int s) -> std::optional<Expr> { return s == jid ? std::optional<Expr>(t * tile + jj) : std::nullopt; });
      vars.back() = t;
      extents.back() = sym::floordiv(last + (tile - 1), tile);
      vars.push_back(jj);
      extents.push_back(sym::min(Expr(tile), last - t * tile));
      work = sym::min(Expr(tile), last);
    }
  }
  step.work_per_row = work;
  if (vars.empty()) return;
  ph.vars = {vars.back().symbol_id()};
  ph.extents = {extents.back()};
  for (size_t d = 0; d + 1 < vars.size(); ++d) {
    step.outer_vars.push_back(vars[d].symbol_id());
    step.outer_extents.push_back(extents[d]);
  }
}

}  // namespace shapejit::backends::loops
