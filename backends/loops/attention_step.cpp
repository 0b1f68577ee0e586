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

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

AttentionPlan plan_attention(const ir::SpecializedGraph& sg, const LowerOptions& options, BufferPlan& buffers) {
  AttentionPlan found;
  if (!options.fuse_attention || !options.blas || options.tile <= 0) return found;
  const ir::Graph& g = *sg.graph;
  const std::vector<ir::ValueType>& types = sg.types;
  const std::vector<int>& producer = buffers.producer;
  std::vector<bool>& need = buffers.need;
  auto shape = [&](int v) -> const std::vector<Expr>& { return types[v].shape; };
  const int nv = g.num_values();
  std::vector<std::vector<int>> users(nv);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const ir::Operand& o : g.nodes[i].in) {
      if (o.is_value() && types[o.value].is_tensor) users[o.value].push_back(static_cast<int>(i));
    }
  }
  std::vector<bool> is_output(nv, false);
  for (int v : g.outputs) is_output[v] = true;
  auto made_by = [&](int v, Op op) { return producer[v] >= 0 && g.nodes[producer[v]].op == op; };
  // Whether `from` is computed from `target` (through any ops).
  auto reaches = [&](int from, int target) {
    std::vector<bool> seen(nv, false);
    std::function<bool(int)> go = [&](int v) {
      if (v == target) return true;
      if (seen[v] || producer[v] < 0) return false;
      seen[v] = true;
      for (const ir::Operand& o : g.nodes[producer[v]].in) {
        if (o.is_value() && go(o.value)) return true;
      }
      return false;
    };
    return go(from);
  };

  for (size_t node = 0; node < g.nodes.size(); ++node) {
    const ir::Node& out = g.nodes[node];
    if (ir::op_info(out.op).cls != OpClass::kMatmul || !out.in[0].is_value() || !out.in[1].is_value()) continue;
    const int probs = out.in[0].value, v = out.in[1].value, o = out.out[0];
    const DType dt = types[o].dtype;
    if (!ir::is_float(dt) || !made_by(probs, Op::kSoftmax) || is_output[probs] || users[probs].size() != 1) continue;
    const std::vector<Expr>& ps = shape(probs);
    const size_t rank = ps.size();
    if (rank < 2 || shape(v).size() < 2 || norm_axis(g.nodes[producer[probs]].attrs.dim, rank) != rank - 1) continue;
    // The result's batch is the scores' (v broadcasts into it, not beyond).
    const std::vector<Expr>& os = shape(o);
    if (os.size() != rank || !std::equal(ps.begin(), ps.end() - 1, os.begin())) continue;
    const int logits = g.nodes[producer[probs]].in[0].value;
    // f: pointwise values of the scores' shape, down to one matmul.
    int scores = -1;
    bool ok = true;
    std::vector<int> chain, leaves;
    std::function<void(int)> walk = [&](int u) {
      if (!ok) return;
      if (producer[u] < 0 || shape(u) != ps || types[u].dtype != dt) {
        leaves.push_back(u);
        return;
      }
      const OpClass cls = ir::op_info(g.nodes[producer[u]].op).cls;
      if (cls == OpClass::kMatmul) {
        if (scores >= 0 && scores != u) ok = false;
        scores = u;
        return;
      }
      if (!ir::is_pointwise(cls)) {
        leaves.push_back(u);
        return;
      }
      chain.push_back(u);
      for (const ir::Operand& in : g.nodes[producer[u]].in) {
        if (in.is_value() && types[in.value].is_tensor) walk(in.value);
      }
    };
    walk(logits);
    if (!ok || scores < 0 || is_output[scores]) continue;
    // Every use of the scores and of f's values is f's own (or the softmax's).
    std::vector<bool> in_chain(nv, false);
    for (int u : chain) in_chain[u] = true;
    auto used_inside = [&](int u) {
      for (int user : users[u]) {
        const int r = g.nodes[user].out[0];
        if (!(u == logits ? user == producer[probs] : in_chain[r])) return false;
      }
      return true;
    };
    for (int u : chain) ok = ok && !is_output[u] && !need[u] && used_inside(u);
    ok = ok && used_inside(scores);
    for (int leaf : leaves) ok = ok && !reaches(leaf, scores);
    const ir::Node& mm = g.nodes[producer[scores]];
    if (!ok || !mm.in[0].is_value() || !mm.in[1].is_value() || shape(mm.in[0].value).size() < 2 || shape(mm.in[1].value).size() < 2) continue;
    found[static_cast<int>(node)] = {scores, probs, logits, mm.in[0].value, mm.in[1].value, v};
    need[scores] = need[probs] = false;
    // A computed operand of f that is the same for every query row (a
    // padding mask made an additive bias: [b, 1, 1, s]) gets a buffer of
    // its own, computed once, not once per head and row in the tiles (an
    // int64 mask's conversion alone has no AVX2 instruction).
    for (int leaf : leaves) {
      const std::vector<Expr>& ls = shape(leaf);
      const bool per_row = ls.size() >= 2 && ls[ls.size() - 2].as_const() != 1;
      if (producer[leaf] >= 0 && !per_row && ir::is_pointwise(ir::op_info(g.nodes[producer[leaf]].op).cls)) need[leaf] = true;
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
  at.q = SJ_TRY(blas_operand(a.q, false, at.batch, node));
  at.k = SJ_TRY(blas_operand(a.k, false, at.batch, node));
  at.v = SJ_TRY(blas_operand(a.v, false, at.batch, node));
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
