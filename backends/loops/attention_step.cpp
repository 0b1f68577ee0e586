// Pass: attention. softmax(f(q @ k)) @ v, with f a pointwise chain that
// reads the scores at their own index (a scale, a causal or padding mask by
// `where`, an additive bias: its other operands may be anything, broadcast),
// becomes one step (loop_ir.h AttentionStep) in place of the two matmuls,
// the chain and the softmax. Neither the scores nor the probabilities get a
// buffer: the step keeps one tile of them per task.
//
// plan_attention (after plan_buffers) finds the pattern and takes the
// scores and probabilities off the buffers' list; attention_step builds the
// step when lowering reaches the final matmul: q, k and v as BLAS operands
// (in place by strides where they can be) and the tile's code, three phases
// per query row as the softmax's:
//   0. over the tile's keys: f(scores), stored back in the tile; their max;
//   1. over the tile's keys rounded up to whole vectors: p = exp(f - m), m
//      the running max (0 while it is -inf, so that a row masked so far adds
//      nothing); stored; their sum;
//   2. the row's state: the new max, the rescaled sum, the factor that
//      rescales the row's accumulator, the tile's own sum.
#include <cmath>
#include <functional>
#include <optional>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

namespace {

// Finds softmax(f(q @ k)) @ v at a final matmul: the graph, its types, who
// reads each value, and the buffer plan so far.
class AttentionFinder {
 public:
  AttentionFinder(const ir::SpecializedGraph& sg, const BufferPlan& buffers)
      : g_(*sg.graph), types_(sg.types), producer_(buffers.producer), need_(buffers.need), users_(g_.num_values()),
        is_output_(g_.num_values(), false) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const ir::Operand& o : g_.nodes[i].in) {
        if (o.is_value() && types_[o.value].is_tensor) users_[o.value].push_back(static_cast<int>(i));
      }
    }
    for (int v : g_.outputs) is_output_[v] = true;
  }

  // The pattern ending at matmul `node`, with f's operands from outside
  // the chain (its leaves).
  struct Match {
    Attention attention;
    std::vector<int> leaves;
  };
  std::optional<Match> match(int node) const {
    const ir::Node& out = g_.nodes[node];
    if (ir::op_info(out.op).cls != OpClass::kMatmul || !out.in[0].is_value() || !out.in[1].is_value()) return std::nullopt;
    const int probs = out.in[0].value, v = out.in[1].value, o = out.out[0];
    const DType dt = types_[o].dtype;
    if (!ir::is_float(dt) || !made_by(probs, Op::kSoftmax) || is_output_[probs] || users_[probs].size() != 1) return std::nullopt;
    const std::vector<Expr>& ps = shape(probs);
    const size_t rank = ps.size();
    if (rank < 2 || shape(v).size() < 2 || norm_axis(g_.nodes[producer_[probs]].attrs.dim, rank) != static_cast<int>(rank) - 1) return std::nullopt;
    // The result's batch is the scores' (v broadcasts into it, not beyond).
    const std::vector<Expr>& os = shape(o);
    if (os.size() != rank || !std::equal(ps.begin(), ps.end() - 1, os.begin())) return std::nullopt;
    const int logits = g_.nodes[producer_[probs]].in[0].value;
    Chain f;
    walk(logits, ps, dt, f);
    if (!f.ok || f.scores < 0 || is_output_[f.scores]) return std::nullopt;
    // Every use of the scores and of f's values is f's own (or the softmax's).
    std::vector<bool> in_chain(g_.num_values(), false);
    for (int u : f.values) in_chain[u] = true;
    auto used_inside = [&](int u) {
      for (int user : users_[u]) {
        const int r = g_.nodes[user].out[0];
        if (!(u == logits ? user == producer_[probs] : in_chain[r])) return false;
      }
      return true;
    };
    bool ok = used_inside(f.scores);
    for (int u : f.values) ok = ok && !is_output_[u] && !need_[u] && used_inside(u);
    for (int leaf : f.leaves) ok = ok && !reaches(leaf, f.scores);
    const ir::Node& mm = g_.nodes[producer_[f.scores]];
    if (!ok || !mm.in[0].is_value() || !mm.in[1].is_value() || shape(mm.in[0].value).size() < 2 || shape(mm.in[1].value).size() < 2) {
      return std::nullopt;
    }
    return Match{{f.scores, probs, logits, mm.in[0].value, mm.in[1].value, v}, std::move(f.leaves)};
  }

  // A leaf of f that is the same for every query row (a padding mask made
  // an additive bias: [b, 1, 1, s]) and is computed pointwise.
  bool same_for_every_query_row(int leaf) const {
    const std::vector<Expr>& ls = shape(leaf);
    const bool per_row = ls.size() >= 2 && ls[ls.size() - 2].as_const() != 1;
    return producer_[leaf] >= 0 && !per_row && ir::is_pointwise(ir::op_info(g_.nodes[producer_[leaf]].op).cls);
  }

 private:
  // f: pointwise values of the scores' shape and dtype, down to one matmul.
  struct Chain {
    int scores = -1;
    bool ok = true;
    std::vector<int> values, leaves;
  };
  void walk(int u, const std::vector<Expr>& scores_shape, DType dt, Chain& f) const {
    if (!f.ok) return;
    if (producer_[u] < 0 || shape(u) != scores_shape || types_[u].dtype != dt) {
      f.leaves.push_back(u);
      return;
    }
    const OpClass cls = ir::op_info(g_.nodes[producer_[u]].op).cls;
    if (cls == OpClass::kMatmul) {
      if (f.scores >= 0 && f.scores != u) f.ok = false;
      f.scores = u;
      return;
    }
    if (!ir::is_pointwise(cls)) {
      f.leaves.push_back(u);
      return;
    }
    f.values.push_back(u);
    for (const ir::Operand& in : g_.nodes[producer_[u]].in) {
      if (in.is_value() && types_[in.value].is_tensor) walk(in.value, scores_shape, dt, f);
    }
  }

  // Whether `from` is computed from `target` (through any ops).
  bool reaches(int from, int target) const {
    std::vector<bool> seen(g_.num_values(), false);
    std::function<bool(int)> go = [&](int v) {
      if (v == target) return true;
      if (seen[v] || producer_[v] < 0) return false;
      seen[v] = true;
      for (const ir::Operand& o : g_.nodes[producer_[v]].in) {
        if (o.is_value() && go(o.value)) return true;
      }
      return false;
    };
    return go(from);
  }

  bool made_by(int v, Op op) const { return producer_[v] >= 0 && g_.nodes[producer_[v]].op == op; }
  const std::vector<Expr>& shape(int v) const { return types_[v].shape; }

  const ir::Graph& g_;
  const std::vector<ir::ValueType>& types_;
  const std::vector<int>& producer_;
  const std::vector<bool>& need_;
  std::vector<std::vector<int>> users_;
  std::vector<bool> is_output_;
};

}  // namespace

AttentionPlan plan_attention(const ir::SpecializedGraph& sg, const LowerOptions& options, BufferPlan& buffers) {
  AttentionPlan found;
  if (!options.fuse_attention || !options.blas || options.tile <= 0) return found;
  const AttentionFinder finder(sg, buffers);
  for (size_t node = 0; node < sg.graph->nodes.size(); ++node) {
    std::optional<AttentionFinder::Match> m = finder.match(static_cast<int>(node));
    if (!m) continue;
    found[static_cast<int>(node)] = m->attention;
    buffers.need[m->attention.scores] = buffers.need[m->attention.probs] = false;
    // A leaf the same for every query row gets a buffer of its own, computed
    // once, not once per head and row in the tiles (an int64 mask's
    // conversion alone has no AVX2 instruction).
    for (int leaf : m->leaves) {
      if (finder.same_for_every_query_row(leaf)) buffers.need[leaf] = true;
    }
  }
  return found;
}

Status Lowering::attention_step(int node, int buffer) {
  const Attention& a = attention_.at(node);
  const std::vector<Expr>& ss = shape(a.scores);
  const size_t rank = ss.size();
  const DType dt = types_[a.scores].dtype;
  Step st{Step::Kind::kAttention};
  st.label = label(node) + ", attention";
  AttentionStep& at = st.attention;
  at.batch.assign(ss.begin(), ss.end() - 2);
  at.t = ss[rank - 2];
  at.s = ss[rank - 1];
  at.d = shape(a.q).back();
  at.dv = shape(a.v).back();
  at.q = SJ_TRY(blas_operand(a.q, false, at.batch, node, std::nullopt, false));
  at.k = SJ_TRY(blas_operand(a.k, false, at.batch, node, std::nullopt, false));
  at.v = SJ_TRY(blas_operand(a.v, false, at.batch, node, std::nullopt, false));
  at.out = buffer;
  constexpr int64_t tq = AttentionStep::kTileQ, tk = AttentionStep::kTileK;
  // The tile has the scores' rank (its batch dims 1) so that f's loads of
  // the scores fold as anywhere; their offsets are then set to the cell.
  std::vector<Expr> tile_shape(rank, Expr(1)), tile_strides(rank, Expr(0));
  tile_shape[rank - 2] = tq;
  tile_shape[rank - 1] = tk;
  tile_strides[rank - 2] = tk;
  tile_strides[rank - 1] = 1;
  at.tile = add_buffer(Buffer::Kind::kScratch, 0, dt, tile_shape, tile_strides);
  at.state = add_buffer(Buffer::Kind::kScratch, 1, dt, {Expr(4), Expr(tq)}, {Expr(tq), Expr(1)});
  at.first_symbol = task_symbol_;
  const Expr batch_index = Expr::symbol(task_symbol_), first_row = Expr::symbol(task_symbol_ + 1),
             first_key = Expr::symbol(task_symbol_ + 2), keys = Expr::symbol(task_symbol_ + 3),
             padded_keys = Expr::symbol(task_symbol_ + 4);

  LoopStep& ls = st.loops;
  const Expr i = new_symbol(), j = new_symbol();
  ls.outer_vars = {i.symbol_id()};
  ls.outer_extents = {at.t};
  ls.work_per_row = keys;
  // f's index: the batch unraveled from the task's flat index, the row, the key.
  std::vector<Expr> idx(rank);
  Expr inner = 1;
  for (size_t d = rank - 2; d-- > 0;) {
    const Expr q = sym::floordiv(batch_index, inner);
    idx[d] = d == 0 ? q : sym::mod(q, ss[d]);
    inner = inner * ss[d];
  }
  idx[rank - 2] = i;
  idx[rank - 1] = first_key + j;
  const Expr row = i - first_row, cell = row * tk + j;
  auto tile_load = [&](BodyBuilder& b) {
    Inst ld{InstKind::kLoad, dt};
    ld.buffer = at.tile;
    ld.expr = cell;
    return b.emit(ld);
  };
  auto state = [&](BodyBuilder& b, int which) {
    Inst ld{InstKind::kLoad, dt};
    ld.buffer = at.state;
    ld.expr = row + which * tq;
    return b.emit(ld);
  };
  // The running max after this tile, and the one exponents subtract: 0
  // while the max is -inf (a row masked so far: exp(-inf - 0) is 0).
  auto new_max = [&](BodyBuilder& b, int old_max, int tile_max) {
    const int m = b.op(Op::kMaximum, dt, {old_max, tile_max});
    const int masked = b.op(Op::kEq, DType::kBool, {m, b.constant(dt, -INFINITY)});
    return std::make_pair(m, b.op(Op::kWhere, dt, {masked, b.constant(dt, 0), m}));
  };

  // 0: f at the tile's cells, where the scores are (plan_attention saw that
  // f reads them at their own index only).
  Phase& p0 = add_phase(ls, {j}, {keys});
  BodyBuilder b0(*this, p0);
  buffer_of_[a.scores] = at.tile;
  const int f = b0.value(a.logits, idx);
  buffer_of_[a.scores] = -1;
  for (Inst& in : p0.body) {
    if (in.kind == InstKind::kLoad && in.buffer == at.tile) in.expr = cell;
  }
  p0.stores.push_back({at.tile, cell, f});
  p0.reductions.push_back({Combine::kMaxSkipNaN, f, -1, dt});
  SJ_TRY(check_budget(p0, node));
  // 1: the tile's probabilities, unnormalized, and their sum, over the
  // keys rounded up to whole vectors (cells past the keys hold -inf).
  Phase& p1 = add_phase(ls, {j}, {padded_keys});
  BodyBuilder b1(*this, p1);
  const int shift = new_max(b1, state(b1, 0), b1.acc(0, 0, dt)).second;
  const int p = b1.exp_nonpositive(b1.op(Op::kSub, dt, {tile_load(b1), shift}), dt);
  p1.stores.push_back({at.tile, cell, p});
  p1.reductions.push_back({Combine::kSum, p, -1, dt});
  // 2: the row's state.
  Phase& p2 = add_phase(ls, {}, {});
  BodyBuilder b2(*this, p2);
  const int old_max = state(b2, 0);
  const auto [m, shift2] = new_max(b2, old_max, b2.acc(0, 0, dt));
  const int rescale = b2.exp_nonpositive(b2.op(Op::kSub, dt, {old_max, shift2}), dt);
  const int tile_sum = b2.acc(1, 0, dt);
  const int sum = b2.op(Op::kAdd, dt, {b2.op(Op::kMul, dt, {state(b2, 1), rescale}), tile_sum});
  const std::pair<int, int> row_state[] = {{0, m}, {1, sum}, {2, rescale}, {3, tile_sum}};
  for (const auto& [which, value] : row_state) p2.stores.push_back({at.state, row + which * tq, value});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

}  // namespace shapejit::backends::loops
