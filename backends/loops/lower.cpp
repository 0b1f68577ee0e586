// Graph -> loop IR, as an ordered list of passes (lower.h says what each
// does; each lives in its own file):
//   1. buffers.cpp        which values get buffers (a BufferPlan)
//   2. attention_step.cpp softmax(f(q @ k)) @ v found (an AttentionPlan)
//   3. (here)             symbols: the graph's, then the strides of inputs not known dense
//   4. per node that needs a buffer, its step:
//        attention_step.cpp   softmax(f(q @ k)) @ v as one tiled step
//        pointwise_steps.cpp  pointwise chains and concats, with
//                             fold_index.cpp (values at indices: fusion, views, gathers),
//                             merge_dims.cpp and tile.cpp (the loops)
//        reduce_steps.cpp     reductions, argmax, softmax, norms
//        matmul_step.cpp      matmuls (BLAS or loops)
//        scan_step.cpp        scans, sorts and scatters (a backend's routines)
//        compact_step.cpp     nonzero, masked_select (a backend's routine)
//   5. (here)             copies for outputs that are inputs or listed twice
#include "backends/loops/lower.h"

#include "backends/loops/lowering.h"
#include "core/support/faults.h"

namespace shapejit::backends::loops {


Lowering::Lowering(const ir::SpecializedGraph& g, const LowerOptions& o, BufferPlan buffers, AttentionPlan attention)
    : g_(*g.graph),
      spec_(g.spec),
      options_(o),
      types_(g.types),
      producer_(std::move(buffers.producer)),
      need_(std::move(buffers.need)),
      live_(std::move(buffers.live)),
      summed_selection_(std::move(buffers.summed_selection)),
      buffer_of_(g_.num_values(), -1),
      env_(sym::ShapeEnv::from_specialization(g.spec)),
      attention_(std::move(attention)) {}

std::string node_label(const ir::Graph& g, int node) {
  const ir::Node& n = g.nodes[node];
  return "node " + std::to_string(node) + " (" + ir::op_name(n.op) + " -> '" + g.value_names[n.out[0]] + "')";
}

Expected<LoopProgram> Lowering::run() && {
  const int nv = g_.num_values();
  // Symbols: the graph's, then input strides, then loops and bodies.
  p_.num_graph_symbols = static_cast<int>(spec_.symbols.size());
  std::vector<std::vector<Expr>> input_strides;
  int params = 0;
  for (size_t i = 0; i < g_.inputs.size(); ++i) {
    const sym::Layout layout = i < spec_.layouts.size() ? spec_.layouts[i] : sym::Layout();
    const std::vector<Expr>& dims = shape(static_cast<int>(i));
    if (!layout.is_strided()) {  // strides that are expressions of the dims
      input_strides.push_back(permuted_strides(dims, layout.order(static_cast<int>(dims.size()))));
      continue;
    }
    std::vector<Expr> s;
    for (size_t d = 0; d < shape(static_cast<int>(i)).size(); ++d) {
      s.push_back(Expr::symbol(p_.num_graph_symbols + params++));
      p_.params.emplace_back(static_cast<int>(i), static_cast<int>(d));
    }
    input_strides.push_back(std::move(s));
  }
  next_symbol_ = p_.num_graph_symbols + params;
  if (!attention_.empty()) {  // the attention steps' task symbols, shared by all of them
    task_symbol_ = next_symbol_;
    p_.task_symbols = 5;
    next_symbol_ += p_.task_symbols;
  }
  for (size_t i = 0; i < g_.inputs.size(); ++i) {
    int v = static_cast<int>(i);
    buffer_of_[v] = add_buffer(Buffer::Kind::kInput, v, types_[v].dtype, shape(v), input_strides[i]);
  }
  p_.num_inputs = static_cast<int>(g_.inputs.size());
  p_.num_outputs = static_cast<int>(g_.outputs.size());
  std::vector<int> out_buffer(g_.outputs.size());
  std::vector<int> first_output(nv, -1);
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    int v = g_.outputs[i];
    out_buffer[i] = add_buffer(Buffer::Kind::kOutput, static_cast<int>(i), types_[v].dtype, shape(v), dense_strides(shape(v)));
    if (first_output[v] < 0 && producer_[v] >= 0) first_output[v] = static_cast<int>(i);
  }

  // A concat read by nothing but another concat (an update of a block of
  // several dims: the block's row within its slab, the slab within the
  // array) is written by that one's steps where it lies in its buffer.
  std::vector<int> readers(nv, 0);
  readers_.assign(nv, {});
  is_output_.assign(nv, false);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (const ir::Operand& o : g_.nodes[i].in) {
      if (!o.is_value()) continue;
      ++readers[o.value];
      std::vector<int>& r = readers_[o.value];
      if (r.empty() || r.back() != static_cast<int>(i)) r.push_back(static_cast<int>(i));
    }
  }
  for (int v : g_.outputs) {
    ++readers[v];
    is_output_[v] = true;
  }
  absorbed_.assign(nv, false);
  for (const ir::Node& n : g_.nodes) {
    if (ir::op_info(n.op).cls != OpClass::kConcat) continue;
    for (const ir::Operand& o : n.in) {
      const int p = o.is_value() ? producer_[o.value] : -1;
      if (p < 0 || readers[o.value] != 1 || ir::op_info(g_.nodes[p].op).cls != OpClass::kConcat) continue;
      absorbed_[o.value] = types_[o.value].dtype == types_[n.out[0]].dtype;
    }
  }
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const int node = static_cast<int>(i);
    const ir::Node& n = g_.nodes[i];
    const int v = n.out[0];
    if (!types_[v].is_tensor || !live_[v] || (!need_[v] && first_output[v] < 0) || absorbed_[v]) continue;
    const int buffer = first_output[v] >= 0 ? out_buffer[first_output[v]] : new_temp(v);
    switch (ir::op_info(n.op).cls) {
      case OpClass::kReduce: SJ_TRY(reduce_step(node, buffer)); break;
      case OpClass::kArgmax: SJ_TRY(argmax_step(node, buffer)); break;
      case OpClass::kSoftmax: SJ_TRY(softmax_step(node, buffer)); break;
      case OpClass::kLayerNorm:
      case OpClass::kRmsNorm: SJ_TRY(norm_step(node, buffer)); break;
      case OpClass::kMatmul: SJ_TRY(attention_.count(node) ? attention_step(node, buffer) : matmul_step(node, buffer)); break;
      case OpClass::kConcat: SJ_TRY(concat_step(node, buffer)); break;
      case OpClass::kScan: SJ_TRY(scan_step(node, buffer)); break;
      case OpClass::kIndexPut: SJ_TRY(scatter_step(node, buffer)); break;
      case OpClass::kNonzero:
      case OpClass::kMaskedSelect: SJ_TRY(compact_step(node, buffer)); break;
      SJ_POINTWISE_CLASSES(SJ_CLASS_CASE)
      SJ_VIEW_CLASSES(SJ_CLASS_CASE)
      SJ_SYM_CLASSES(SJ_CLASS_CASE)
      case OpClass::kIndexSelect:
      case OpClass::kEmbedding:
      case OpClass::kFull:
      case OpClass::kArange: SJ_TRY(materialize(v, buffer, node)); break;
    }
    buffer_of_[v] = buffer;
  }
  for (const ir::Node& n : g_.nodes) {
    const OpClass cls = ir::op_info(n.op).cls;
    if ((cls == OpClass::kIndexSelect || cls == OpClass::kEmbedding) && live_[n.out[0]]) {
      p_.unread_indices.push_back({product(shape(n.out[0])), product(shape(n.in[1].value))});
    }
  }
  // Checks that no call can fail cost every call nothing: a static extent
  // that is not 0, a gather with a result or without indices.
  const auto never_zero = [](const Expr& e) { return e.is_const() && e.const_value() != 0; };
  std::erase_if(p_.empty_checks, [&](const LoopProgram::EmptyCheck& c) { return never_zero(c.count); });
  std::erase_if(p_.unread_indices,
                [&](const LoopProgram::UnreadIndices& c) { return never_zero(c.elements) || c.indices == Expr(0); });
  // Outputs that are inputs, or a value listed twice: copies.
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    int v = g_.outputs[i];
    if (first_output[v] == static_cast<int>(i)) continue;
    SJ_TRY(materialize(v, out_buffer[i], -1));
  }
  // Which steps have runtime checks (gather bounds, integer pow): a gather
  // is folded into whatever step reads it, a reduction's or a norm's too.
  for (Step& st : p_.steps) {
    if (st.kind != Step::Kind::kLoops && st.kind != Step::Kind::kAttention) continue;
    for (const Phase& ph : st.loops.phases) {
      for (const Inst& i : ph.body) {
        st.loops.may_fail |= i.kind == InstKind::kCheckIndex || (i.kind == InstKind::kOp && i.op == Op::kPow && ir::is_int(i.dtype));
      }
    }
  }
  p_.num_symbols = next_symbol_;
  return std::move(p_);
}

Expected<LoopProgram> lower(const ir::SpecializedGraph& g, const LowerOptions& options) {
  if (support::fault(support::Fault::kLower)) return Status(Code::kInternal, "lowering failed (fault injected)");
  const std::optional<ir::SpecializedGraph> rewritten = canonical_forms(g);
  const ir::SpecializedGraph& sg = rewritten ? *rewritten : g;
  BufferPlan buffers = SJ_TRY(plan_buffers(sg, options));
  AttentionPlan attention = plan_attention(sg, options, buffers);
  return Lowering(sg, options, std::move(buffers), std::move(attention)).run();
}

}  // namespace shapejit::backends::loops
