// The lowering's own declarations, shared by its passes (lower.cpp lists
// them in order). Internal to backends/loops.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/loops/lower.h"
#include "core/ir/infer.h"

namespace shapejit::backends::loops {

using ir::DType;
using ir::Op;
using ir::OpClass;
using sym::Expr;

inline bool is_view(OpClass c) {
  switch (c) {
    case OpClass::kReshape:
    case OpClass::kPermute:
    case OpClass::kTranspose:
    case OpClass::kExpand:
    case OpClass::kSlice:
    case OpClass::kSqueeze:
    case OpClass::kUnsqueeze: return true;
    SJ_POINTWISE_CLASSES(SJ_CLASS_CASE)
    SJ_ALONG_AXES_CLASSES(SJ_CLASS_CASE)
    SJ_INDEXING_CLASSES(SJ_CLASS_CASE)
    SJ_SYM_CLASSES(SJ_CLASS_CASE)
    case OpClass::kMatmul: return false;
  }
  return false;
}

inline bool is_gather(OpClass c) { return c == OpClass::kIndexSelect || c == OpClass::kEmbedding; }

// The longest chain of ops folded into one loop (buffers.cpp).
inline constexpr int kMaxFusedDepth = 128;
// A folded value that more than one node reads, and that reads this many
// buffers or more, gets a buffer of its own: each step that reads it would
// otherwise recompute it, and a chain that every layer extends (a model's
// residual stream) would be recomputed whole by every later layer.
inline constexpr size_t kSharedReads = 3;

// Folded into the loops that read it.
inline bool is_fusible(OpClass c) {
  return ir::is_pointwise(c) || is_view(c) || is_gather(c) || c == OpClass::kFull || c == OpClass::kArange;
}

inline int norm_axis(int64_t d, size_t rank) { return static_cast<int>(d < 0 ? d + static_cast<int64_t>(rank) : d); }

inline Expr product(const std::vector<Expr>& v) {
  Expr p = 1;
  for (const Expr& e : v) p = p * e;
  return p;
}

inline std::vector<Expr> dense_strides(const std::vector<Expr>& shape) {
  std::vector<Expr> s(shape.size(), Expr(1));
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// The strides of a dense array of `shape` whose dims lie in `order`,
// outermost first (sym::Layout): dense_strides of the permuted shape, each
// at its own dim.
inline std::vector<Expr> permuted_strides(const std::vector<Expr>& shape, const std::vector<int>& order) {
  std::vector<Expr> s(shape.size(), Expr(1));
  Expr inner = 1;
  for (size_t i = order.size(); i-- > 0;) {
    s[static_cast<size_t>(order[i])] = inner;
    inner = inner * shape[static_cast<size_t>(order[i])];
  }
  return s;
}

inline bool is_one(const Expr& e) { return e.as_const() == int64_t{1}; }

// Substitutes symbols in every index of a phase (loads, index values, stores).
inline void substitute_indices(Phase& ph, const std::function<std::optional<Expr>(int)>& f) {
  for (Inst& i : ph.body) {
    if (i.kind == InstKind::kLoad || i.kind == InstKind::kIndex) i.expr = sym::substitute(i.expr, f);
  }
  for (Store& s : ph.stores) s.offset = sym::substitute(s.offset, f);
}

// A new phase of `step` over `vars` (loop symbols) with `extents`.
inline Phase& add_phase(LoopStep& step, const std::vector<Expr>& vars, const std::vector<Expr>& extents) {
  step.phases.emplace_back();
  Phase& ph = step.phases.back();
  for (const Expr& v : vars) ph.vars.push_back(v.symbol_id());
  ph.extents = extents;
  return ph;
}

// "node 3 (add -> 'y')", for messages and step labels.
std::string node_label(const ir::Graph& g, int node);

// A loop nest's dims, outermost first: its variables (symbols) and extents.
struct LoopDims {
  std::vector<Expr> vars, extents;
};

// Pass 1 (buffers.cpp): which values get buffers.
struct BufferPlan {
  std::vector<int> producer;  // node index per value; -1 for inputs
  std::vector<bool> need;     // per value: gets a buffer
  std::vector<bool> live;     // per value: an output depends on it
  // Per value: a masked_select whose result only full sums, products and
  // means read, through pointwise ops on it and literals: no compaction, the
  // reductions run over its domain with the mask (a masked reduction).
  std::vector<bool> summed_selection;
};
Expected<BufferPlan> plan_buffers(const ir::SpecializedGraph& g, const LowerOptions& options);

// Pass 0 (canonical.cpp): the graph with spellings of the set's ops written
// as those ops (a softmax written out as exp over a sum), so that the
// passes after it match them; nullopt when there were none.
std::optional<ir::SpecializedGraph> canonical_forms(const ir::SpecializedGraph& g);

// Pass 2 (attention_step.cpp): softmax(f(q @ k)) @ v, by the final matmul's
// node. Its scores and probabilities are taken off `buffers.need`; an
// operand of f that is the same for every query row is put on it.
struct Attention {
  int scores, probs;  // the first matmul's value, the softmax's
  int logits;         // the softmax's operand: f(scores)
  int q, k, v;
};
using AttentionPlan = std::map<int, Attention>;
AttentionPlan plan_attention(const ir::SpecializedGraph& g, const LowerOptions& options, BufferPlan& buffers);

// A pointwise phase's dims, merged where every access strides alike (and
// dims of extent 1 dropped); the phase's indices are rewritten to match.
LoopDims merge_dims(Phase& ph, LoopDims dims);
// A pointwise step's loops from its dims: the innermost split into tiles
// of `tile` elements (0: not split), the rest the step's outer loops.
void tile(LoopStep& step, LoopDims dims, int64_t tile, const std::function<Expr()>& new_symbol);

// A reshape that merges the run [first, last) of its operand's dims into
// one and keeps the others (pointwise_steps.cpp).
struct MergedRun {
  int operand;
  size_t first, last;
};

class Lowering;

// fold_index.cpp: builds one phase's body: each (value, index) once.
class BodyBuilder {
 public:
  BodyBuilder(Lowering& l, Phase& phase) : l_(l), ph_(phase) {}
  int value(int v, const std::vector<Expr>& idx);
  int emit(Inst inst);
  int constant(DType dt, double f);
  int index(Expr e, DType dt);
  int op(Op o, DType dt, std::vector<int> args);
  // exp of an argument known to be <= 0 or NaN (x - max): a cheaper exp.
  int exp_nonpositive(int arg, DType dt);
  int cast(int inst, DType to);
  int acc(int phase, int which, DType dt, int part = 0);
  // From now on the selection `v` (a summed_selection) reads its values at
  // the domain's index `at` (the masked reduction's loop variables).
  void select_at(int v, std::vector<Expr> at) { selection_ = {v, std::move(at)}; }
  // Operand value `v` of the domain `shape` at its index `at`, broadcast.
  int broadcast_value(int v, const std::vector<Expr>& shape, const std::vector<Expr>& at);
  DType dtype(int inst) const { return ph_.body[inst].dtype; }

 private:
  // A value not in a buffer, by its producer's family.
  int compute(int v, const std::vector<Expr>& idx);
  int load(int buffer, Expr offset);
  int pointwise(const ir::Node& node, const ir::ValueType& t, const std::vector<Expr>& idx);
  int operand(const ir::Node& node, size_t i, DType dt, const std::vector<Expr>& out_shape, const std::vector<Expr>& idx);
  int view(const ir::Node& node, const ir::ValueType& t, const std::vector<Expr>& idx);
  int reshape(const ir::Node& node, const ir::ValueType& t, const std::vector<Expr>& idx);
  int gather(const ir::Node& node, const std::vector<Expr>& idx);

  Lowering& l_;
  Phase& ph_;
  std::map<std::vector<uintptr_t>, int> memo_;
  std::pair<int, std::vector<Expr>> selection_{-1, {}};  // see select_at
};

// Passes 3 to 5: the steps, in the graph's order, into one LoopProgram.
class Lowering {
 public:
  Lowering(const ir::SpecializedGraph& g, const LowerOptions& o, BufferPlan buffers, AttentionPlan attention);

  Expected<LoopProgram> run() &&;

 private:
  friend class BodyBuilder;  // reads the graph, its types and buffers; takes symbols

  const std::vector<Expr>& shape(int v) const { return types_[v].shape; }
  Expr new_symbol() { return Expr::symbol(next_symbol_++); }
  std::vector<Expr> new_vars(size_t n) {
    std::vector<Expr> v;
    for (size_t i = 0; i < n; ++i) v.push_back(new_symbol());
    return v;
  }
  Expr offset(int buffer, const std::vector<Expr>& idx) const {
    const Buffer& b = p_.buffers[buffer];
    Expr o = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (!is_one(b.shape[d])) o = o + idx[d] * b.strides[d];
    }
    return o;
  }
  int add_buffer(Buffer::Kind kind, int index, DType dt, std::vector<Expr> shape, std::vector<Expr> strides) {
    p_.buffers.push_back({kind, index, dt, std::move(shape), std::move(strides)});
    return static_cast<int>(p_.buffers.size()) - 1;
  }
  int new_temp(int v) { return add_buffer(Buffer::Kind::kTemp, p_.num_temps++, types_[v].dtype, shape(v), dense_strides(shape(v))); }
  std::string label(int node) const { return node_label(g_, node); }
  Status check_budget(const Phase& ph, int node) const {
    if (ph.body.size() > 20000) return unsupported(label(node) + ": the fused loop body grew past 20000 instructions");
    return Status::ok();
  }

  // Steps.
  Status materialize(int v, int buffer, int node);
  Status pointwise_step(int v, int buffer, const std::vector<Expr>& store_shift, int node);
  // v's merged run where a step storing v can loop over its operand's dims.
  std::optional<MergedRun> merged_reshape(int v) const;
  Status reduce_step(int node, int buffer);
  Status column_reduce_step(int node, int buffer, const std::vector<int>& axes);
  // `selection`: the masked_select node whose summed selection the
  // reduction reads (-1: none); it then runs over its domain, masked.
  Status full_reduce_step(int node, int buffer, int selection = -1);
  int selection_under(int v) const;
  Status argmax_step(int node, int buffer);
  Status softmax_step(int node, int buffer);
  Status norm_step(int node, int buffer);
  Status matmul_step(int node, int buffer);
  // A batch dim of a product read as two, extent / factor by factor
  // (batch_split, matmul_step.cpp).
  struct BatchSplit {
    size_t dim;
    int64_t factor;
  };
  // With `convert` (B's operand, where the options allow), a float cast of
  // what is read in place is read in place too: the backend converts as it
  // packs (MatmulStep).
  Expected<MatmulOperand> blas_operand(int v, bool vec, const std::vector<Expr>& batch, int node, std::optional<BatchSplit> split,
                                       bool convert);
  std::optional<MatmulOperand> strided_operand(int v, const std::vector<Expr>& batch, std::optional<BatchSplit> split = std::nullopt,
                                               bool convert = false);
  std::optional<BatchSplit> batch_split(int av, int bv, const std::vector<Expr>& batch);
  Status concat_step(int node, int buffer);
  Status concat_step(int node, int buffer, const std::vector<Expr>& shift);
  // Whether no step reads the block `box` of v ([lo, hi) per dim); see
  // pointwise_steps.cpp. `depth` bounds the readers' chain followed.
  bool unread(int v, std::vector<std::pair<Expr, Expr>> box, int depth = 8) const;
  Status scan_step(int node, int buffer);
  Status scatter_step(int node, int buffer);
  Status compact_step(int node, int buffer);
  Status count_step(int node, const std::vector<Expr>& shape, int mask, int mask_buffer, int values, int values_buffer, int counts);
  Status attention_step(int node, int buffer);
  void finish_pointwise(LoopStep& step, std::vector<Expr> vars, std::vector<Expr> extents);
  bool as_epilogue(LoopStep& step, const std::vector<Expr>& vars, const std::vector<Expr>& shape);
  bool as_compact_epilogue(LoopStep& step, const std::vector<Expr>& vars, const std::vector<Expr>& shape);
  Expected<int> ensure_dense(int v, int node);

  const ir::Graph& g_;
  const sym::Specialization& spec_;
  LowerOptions options_;
  const std::vector<ir::ValueType>& types_;
  std::vector<int> producer_;   // node index per value; -1 for inputs
  std::vector<bool> need_;      // per value: gets a buffer
  std::vector<bool> live_;      // per value: an output depends on it
  std::vector<bool> absorbed_;  // per value: a concat written in place by the concat that reads it (lower.cpp)
  std::vector<bool> summed_selection_;  // per value: see BufferPlan
  std::vector<int> buffer_of_;  // per value, once materialized
  std::vector<std::vector<int>> readers_;  // per value: the nodes that read it, once each (lower.cpp)
  std::vector<bool> is_output_;  // per value: the graph returns it
  mutable sym::ShapeEnv env_;  // the specialization's: what unread() proves with (remembering its proofs)
  AttentionPlan attention_;
  int task_symbol_ = -1;  // the first of the attention steps' task symbols
  LoopProgram p_;
  int next_symbol_ = 0;
};

}  // namespace shapejit::backends::loops
