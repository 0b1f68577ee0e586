// Steps: pointwise chains (one phase; what a buffer stores), a matmul's
// epilogue among them, and concat as one pointwise step per operand into
// its slice of the result.
#include <algorithm>
#include <optional>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

// A pointwise step's loops, once its body is built: merged, then tiled.
void Lowering::finish_pointwise(LoopStep& step, std::vector<Expr> vars, std::vector<Expr> extents) {
  LoopDims dims = merge_dims(step.phases[0], {std::move(vars), std::move(extents)});
  tile(step, std::move(dims), options_.tile, [this] { return new_symbol(); });
}

namespace {

// The run of a reshape's operand dims [first, last) that it merges into its
// dim `first`, keeping the dims before and after the run; nullopt for any
// other reshape.
std::optional<MergedRun> merged_run(int operand, const std::vector<Expr>& in, const std::vector<Expr>& out) {
  size_t pre = 0, post = 0;
  while (pre < in.size() && pre < out.size() && in[pre] == out[pre]) ++pre;
  while (post < in.size() - pre && post < out.size() - pre && in[in.size() - 1 - post] == out[out.size() - 1 - post]) ++post;
  if (out.size() - pre - post != 1 || in.size() - pre - post < 2) return std::nullopt;
  return MergedRun{operand, pre, in.size() - post};
}

// The reshape's index for its operand's index `vars`: the run's variables
// merged row-major (`shape`: the operand's).
std::vector<Expr> merged_index(const MergedRun& run, const std::vector<Expr>& shape, const std::vector<Expr>& vars) {
  const auto first = static_cast<std::ptrdiff_t>(run.first), last = static_cast<std::ptrdiff_t>(run.last);
  const std::vector<Expr> strides = dense_strides(std::vector<Expr>(shape.begin() + first, shape.begin() + last));
  Expr merged = 0;
  for (size_t d = run.first; d < run.last; ++d) merged = merged + vars[d] * strides[d - run.first];
  std::vector<Expr> at(vars.begin(), vars.begin() + first);
  at.push_back(merged);
  at.insert(at.end(), vars.begin() + last, vars.end());
  return at;
}

}  // namespace

std::optional<MergedRun> Lowering::merged_reshape(int v) const {
  const int p = producer_[v];
  if (p < 0 || ir::op_info(g_.nodes[p].op).cls != OpClass::kReshape) return std::nullopt;
  // After a product or a compaction the step may be its epilogue, over v's dims.
  if (!p_.steps.empty() && (p_.steps.back().kind == Step::Kind::kMatmul || p_.steps.back().kind == Step::Kind::kCompact)) return std::nullopt;
  const int u = g_.nodes[p].in[0].value;
  return buffer_of_[u] < 0 ? merged_run(u, shape(u), shape(v)) : std::nullopt;
}

Status Lowering::pointwise_step(int v, int buffer, const std::vector<Expr>& store_shift, int node) {
  Step st{Step::Kind::kLoops};
  st.label = node >= 0 ? label(node) : "output copy";
  st.loops.phases.emplace_back();
  Phase& ph = st.loops.phases[0];
  // A reshape that merges dims of a view ([b, h, t, d] attention heads
  // transposed and merged into [b, t, h * d]) is looped over the view's
  // dims: its loads are then the view's own index, where v's would read
  // the view at a quotient and a remainder of the merged index, element by
  // element, and they vectorize where the view is read in order.
  const std::optional<MergedRun> merged = merged_reshape(v);
  const std::vector<Expr>& s = merged ? shape(merged->operand) : shape(v);
  std::vector<Expr> vars = new_vars(s.size());
  BodyBuilder b(*this, ph);
  const int r = b.cast(b.value(merged ? merged->operand : v, vars), p_.buffers[buffer].dtype);
  std::vector<Expr> at = merged ? merged_index(*merged, s, vars) : vars;  // v's index
  for (size_t d = 0; d < at.size(); ++d) at[d] = at[d] + store_shift[d];
  ph.stores.push_back({buffer, offset(buffer, at), r});
  SJ_TRY(check_budget(ph, std::max(node, 0)));
  const bool shifted = std::any_of(store_shift.begin(), store_shift.end(), [](const Expr& e) { return !(e == Expr(0)); });
  if (merged || shifted || !(as_epilogue(st.loops, vars, s) || as_compact_epilogue(st.loops, vars, s))) finish_pointwise(st.loops, vars, s);
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

// A pointwise step right after a BLAS matmul that reads the product only
// at its own index, over the product's shape (bias, activation, residual),
// is the matmul's epilogue (MatmulStep::epilogue): its loops become the
// product's rows, flattened, and its columns, untiled.
bool Lowering::as_epilogue(LoopStep& step, const std::vector<Expr>& vars, const std::vector<Expr>& s) {
  if (options_.tile <= 0 || p_.steps.empty() || p_.steps.back().kind != Step::Kind::kMatmul) return false;
  MatmulStep& mm = p_.steps.back().matmul;
  const Buffer& c = p_.buffers[mm.c];
  const size_t rank = s.size();
  if (mm.epilogue || rank < 2 || c.shape != s || rank - 2 != mm.batch.size() || !(s[rank - 2] == mm.m) || !(s[rank - 1] == mm.n)) {
    return false;
  }
  Phase& ph = step.phases[0];
  const Expr own = offset(mm.c, vars);
  bool reads = false;
  for (const Inst& i : ph.body) {
    if (i.kind != InstKind::kLoad || i.buffer != mm.c) continue;
    if (!(i.expr == own)) return false;
    reads = true;
  }
  if (!reads) return false;
  // vars[0 .. rank-2] from the flat row r: row-major over (batch..., m).
  const Expr r = new_symbol();
  std::vector<std::optional<Expr>> of(static_cast<size_t>(next_symbol_));
  Expr inner = 1;
  for (size_t d = rank - 1; d-- > 0;) {
    Expr index = sym::floordiv(r, inner);
    of[vars[d].symbol_id()] = d == 0 ? index : sym::mod(index, s[d]);
    inner = inner * s[d];
  }
  substitute_indices(ph, [&](int id) { return id < static_cast<int>(of.size()) ? of[id] : std::nullopt; });
  step.outer_vars = {r.symbol_id()};
  step.outer_extents = {inner};
  ph.vars = {vars[rank - 1].symbol_id()};
  ph.extents = {s[rank - 1]};
  step.empty_if_zero = {s[rank - 1]};
  step.work_per_row = s[rank - 1];
  mm.epilogue = true;
  return true;
}

// A pointwise step right after a compaction, over the count's rows (its
// first dim is the count), that reads the compaction's result only in the
// row it writes (nonzero(m)[:, 0] + 1, x[m] * 2), is the compaction's
// epilogue (CompactStep::epilogue): its outer loop is the rows, its inner
// ones the rest, untiled.
bool Lowering::as_compact_epilogue(LoopStep& step, const std::vector<Expr>& vars, const std::vector<Expr>& s) {
  if (options_.tile <= 0 || p_.steps.empty() || p_.steps.back().kind != Step::Kind::kCompact) return false;
  CompactStep& c = p_.steps.back().compact;
  if (c.epilogue || s.empty() || !(s[0] == Expr::symbol(c.count))) return false;
  const Buffer& out = p_.buffers[c.out];
  const Expr width = out.shape.size() == 2 ? out.shape[1] : Expr(1);  // nonzero's rows are its coordinates
  if (!width.is_const()) return false;
  const int row = vars[0].symbol_id();
  Phase& ph = step.phases[0];
  bool reads = false;
  for (const Inst& i : ph.body) {
    if (i.kind != InstKind::kLoad || i.buffer != c.out) continue;
    // Row vars[0], at a constant column or at vars[1] across the row.
    const Expr column = sym::substitute(i.expr, [&](int id) { return id == row ? std::optional<Expr>(Expr(0)) : std::nullopt; });
    const bool in_row = column.is_const() ? column.const_value() >= 0 && column.const_value() < width.const_value()
                                          : s.size() == 2 && column == vars[1] && s[1] == width;
    if (!in_row || !(i.expr == vars[0] * width + column)) return false;
    reads = true;
  }
  if (!reads) return false;
  step.outer_vars = {row};
  step.outer_extents = {s[0]};
  ph.vars.clear();
  ph.extents.clear();
  for (size_t d = 1; d < s.size(); ++d) {
    ph.vars.push_back(vars[d].symbol_id());
    ph.extents.push_back(s[d]);
  }
  step.empty_if_zero = ph.extents;
  step.work_per_row = product(ph.extents);
  c.epilogue = true;
  return true;
}

Status Lowering::materialize(int v, int buffer, int node) {
  return pointwise_step(v, buffer, std::vector<Expr>(shape(v).size(), Expr(0)), node);
}

Expected<int> Lowering::ensure_dense(int v, int node) {
  if (buffer_of_[v] >= 0) {
    const Buffer& b = p_.buffers[buffer_of_[v]];
    if (b.strides == dense_strides(b.shape)) return buffer_of_[v];
  }
  int t = new_temp(v);
  SJ_TRY(materialize(v, t, node));
  return t;
}

// The reduction's loops: kept dims outer, reduced dims inner.

Status Lowering::concat_step(int node, int buffer) { return concat_step(node, buffer, std::vector<Expr>(shape(g_.nodes[node].out[0]).size(), Expr(0))); }

// Each operand into its place in `buffer`, shifted by `shift`; an operand
// that is a concat read by nothing else puts its own operands there. An
// operand whose place no step reads is not copied: a write into a block of
// an array is the concat of the parts before and after it around the block,
// and a decode step that writes row `pos` of its key/value cache reads the
// cache only up to that row (`cache[:, :pos + 1]`), not the rows after it.
Status Lowering::concat_step(int node, int buffer, const std::vector<Expr>& shift) {
  const ir::Node& n = g_.nodes[node];
  const int dim = norm_axis(n.attrs.dim, shift.size());
  const std::vector<Expr>& out = shape(n.out[0]);
  Expr at = 0;
  for (const ir::Operand& o : n.in) {
    std::vector<Expr> here = shift;
    here[dim] = here[dim] + at;
    const Expr next = at + shape(o.value)[dim];
    std::vector<std::pair<Expr, Expr>> place;
    for (size_t d = 0; d < out.size(); ++d) place.emplace_back(static_cast<int>(d) == dim ? at : Expr(0), static_cast<int>(d) == dim ? next : out[d]);
    if (!unread(n.out[0], std::move(place))) {
      if (absorbed_[o.value]) {
        SJ_TRY(concat_step(producer_[o.value], buffer, here));
      } else {
        SJ_TRY(pointwise_step(o.value, buffer, here, node));
      }
    }
    at = next;
  }
  return Status::ok();
}

// Unread when the graph does not return v and each live reader is
//   - a slice (of step 1) whose range misses the box along its dim, or
//     leaves the box, moved to its own indices, unread in turn;
//   - a concat whose copy of v, the box moved to where v lies in it, is
//     unread in turn.
// Any other reader may read anything. The proofs hold for every call of
// the specialization (the env's ranges and facts), never by its hints.
bool Lowering::unread(int v, std::vector<std::pair<Expr, Expr>> box, int depth) const {
  if (is_output_[v] || depth <= 0) return false;
  const auto proves_le = [&](const Expr& a, const Expr& b) {
    const std::optional<Expr> d = sym::difference(b, a);
    return d && env_.proves_nonneg(*d);
  };
  for (const int r : readers_[v]) {
    const ir::Node& reader = g_.nodes[r];
    const int out = reader.out[0];
    if (!live_[out]) continue;
    const OpClass cls = ir::op_info(reader.op).cls;
    if (cls == OpClass::kSlice && reader.in[0].is_value() && reader.in[0].value == v) {
      const ir::ValueType& t = types_[out];
      if (t.aux.size() != 2 || t.aux[1] != Expr(1)) return false;
      const int d = norm_axis(reader.attrs.dim, box.size());
      const Expr lo = t.aux[0], hi = lo + t.shape[d];  // what the slice reads of v along d
      if (proves_le(hi, box[d].first) || proves_le(box[d].second, lo)) continue;
      std::vector<std::pair<Expr, Expr>> moved = box;
      moved[d] = {box[d].first - lo, box[d].second - lo};
      if (!unread(out, std::move(moved), depth - 1)) return false;
    } else if (cls == OpClass::kConcat) {
      const int d = norm_axis(reader.attrs.dim, box.size());
      Expr at = 0;
      for (const ir::Operand& o : reader.in) {
        if (o.value == v) {
          std::vector<std::pair<Expr, Expr>> moved = box;
          moved[d] = {box[d].first + at, box[d].second + at};
          if (!unread(out, std::move(moved), depth - 1)) return false;
        }
        at = at + shape(o.value)[d];
      }
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace shapejit::backends::loops
