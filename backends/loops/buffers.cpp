// Pass: which values get buffers. A value is materialized only when it
// must be: the results of reductions, normalizations, matmuls and concats
// (not fusible), a pointwise value that a view or gather reads at other
// indices besides another use (recomputing it per index would repeat its
// work), and one that a matmul reads through views (BLAS reads it in place;
// a float cast of a buffer as B is read where the buffer lies). Inputs and outputs have buffers of their own. Everything else is
// folded into the loops that read it (fold_index.cpp), up to a depth: a
// chain of more than kMaxFusedDepth folded ops gets a buffer, so that the
// folding (which recurses once per folded op) and the loop bodies stay
// bounded however long a chain the graph has; and a value that several
// nodes read and that reads kSharedReads buffers or more gets one, so that
// the steps reading it do not each recompute it.
#include <algorithm>
#include <functional>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

Expected<BufferPlan> plan_buffers(const ir::SpecializedGraph& sg, const LowerOptions& options) {
  const ir::Graph& g = *sg.graph;
  const std::vector<ir::ValueType>& types = sg.types;
  auto shape = [&](int v) -> const std::vector<Expr>& { return types[v].shape; };
  const int nv = g.num_values();
  BufferPlan plan;
  std::vector<int>& producer = plan.producer;
  std::vector<bool>& need = plan.need;
  std::vector<bool>& live = plan.live;
  producer.assign(nv, -1);
  need.assign(nv, false);
  std::vector<int> uses(nv, 0);
  std::vector<bool> read_by_index_op(nv, false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    for (int o : n.out) producer[o] = static_cast<int>(i);
    const OpClass cls = ir::op_info(n.op).cls;
    for (const ir::Operand& o : n.in) {
      if (!o.is_value() || !types[o.value].is_tensor) continue;
      ++uses[o.value];
      if (is_view(cls) || is_gather(cls)) read_by_index_op[o.value] = true;
    }
    if (types[n.out[0]].is_tensor && !is_fusible(cls)) need[n.out[0]] = true;
  }
  // Values an output depends on. A node none does is not lowered, as the
  // reference skips it: the cache's key hashes the graph's dataflow to its
  // outputs, so a kernel with the dead node's steps and one without would
  // share a key (the graph fuzzer loaded the one for the other and wrote
  // through the wrong buffers).
  live.assign(nv, false);
  for (int v : g.outputs) live[v] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const ir::Node& n = g.nodes[i];
    if (std::none_of(n.out.begin(), n.out.end(), [&](int o) { return live[o]; })) continue;
    for (const ir::Operand& o : n.in) {
      if (o.is_value()) live[o.value] = true;
    }
  }
  // A computed value read at other indices besides another use.
  for (int v = 0; v < nv; ++v) {
    if (producer[v] < 0 || !types[v].is_tensor) continue;
    const OpClass cls = ir::op_info(g.nodes[producer[v]].op).cls;
    if (ir::is_pointwise(cls) && uses[v] >= 2 && read_by_index_op[v]) need[v] = true;
  }
  // A computed value that a BLAS matmul of two matrices reads through views
  // only (attention heads: a projection plus its bias, split and transposed) is materialized
  // in its own layout, where it is computed (often as the epilogue of the
  // projection's matmul), and read by strides (matmul_step.cpp).
  if (options.blas && options.strided_operands) {
    for (const ir::Node& n : g.nodes) {
      if (ir::op_info(n.op).cls != OpClass::kMatmul || !ir::is_float(types[n.out[0]].dtype)) continue;
      // A vector's product reads its matrix once: loops compute it there
      // (matmul_step.cpp), where a buffer would write it and read it again.
      if (shape(n.in[0].value).size() == 1 || shape(n.in[1].value).size() == 1) continue;
      for (size_t i = 0; i < n.in.size(); ++i) {
        const ir::Operand& o = n.in[i];
        if (!o.is_value() || shape(o.value).size() < 2) continue;
        int v = o.value;
        bool viewed = false;
        while (producer[v] >= 0) {
          const ir::Node& p = g.nodes[producer[v]];
          const OpClass cls = ir::op_info(p.op).cls;
          if (!is_view(cls) || cls == OpClass::kExpand) break;
          v = p.in[0].value;
          viewed = true;
        }
        if (!viewed || producer[v] < 0) continue;
        // A float cast of a buffer as B is read through the views and
        // converted (LowerOptions::converting_operands): a weight's
        // transpose in another float type.
        const ir::Node& p = g.nodes[producer[v]];
        const int from = p.op == Op::kCast ? p.in[0].value : -1;
        const bool converted = i == 1 && options.converting_operands && from >= 0 && ir::is_float(types[from].dtype) &&
                               ir::is_float(types[v].dtype) && (producer[from] < 0 || need[from]);
        if (ir::is_pointwise(ir::op_info(p.op).cls) && !converted) need[v] = true;
      }
    }
  }
  // Selections only summed (BufferPlan::summed_selection): each node that
  // reads the value is a full sum, product or mean of it, or a pointwise op
  // of it and literals whose result is read the same way; none is an output.
  plan.summed_selection.assign(nv, false);
  if (options.tile > 0) {  // a CPU: the masked reduction splits across threads as a full reduction does
    std::vector<std::vector<int>> readers(nv);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const ir::Operand& o : g.nodes[i].in) {
        if (o.is_value() && (readers[o.value].empty() || readers[o.value].back() != static_cast<int>(i))) readers[o.value].push_back(static_cast<int>(i));
      }
    }
    std::vector<bool> output(nv, false);
    for (int v : g.outputs) output[v] = true;
    const std::function<bool(int, int)> only_summed = [&](int v, int depth) {
      if (output[v] || readers[v].empty() || depth > kMaxFusedDepth) return false;
      for (int r : readers[v]) {
        const ir::Node& n = g.nodes[r];
        const bool all_axes = !n.attrs.has(ir::kAttrAxes) || !n.attrs.axes.empty();  // the selection is 1-D: any axis is all
        if ((n.op == Op::kSum || n.op == Op::kProd || n.op == Op::kMean) && all_axes) continue;
        const bool on_v_alone = std::all_of(n.in.begin(), n.in.end(), [&](const ir::Operand& o) { return !o.is_value() || o.value == v; });
        if (!ir::is_pointwise(ir::op_info(n.op).cls) || !on_v_alone || !only_summed(n.out[0], depth + 1)) return false;
      }
      return true;
    };
    for (const ir::Node& n : g.nodes) {
      const int v = n.out[0];
      if (n.op == Op::kMaskedSelect && live[v] && only_summed(v, 0)) {
        plan.summed_selection[v] = true;
        need[v] = false;
      }
    }
  }
  // The folding depth of each value (0 where it is read from a buffer),
  // and the buffers its folded code reads (up to kSharedReads of them).
  std::vector<int> depth(nv, 0);
  std::vector<std::vector<int>> reads(nv);
  for (int v = 0; v < nv; ++v) {
    if (producer[v] < 0) reads[v] = {v};  // an input
  }
  for (const ir::Node& n : g.nodes) {
    const int v = n.out[0];
    if (!types[v].is_tensor) continue;
    if (need[v]) {
      reads[v] = {v};
      continue;
    }
    int d = 0;
    std::vector<int>& r = reads[v];
    for (const ir::Operand& o : n.in) {
      if (!o.is_value() || !types[o.value].is_tensor) continue;
      d = std::max(d, depth[o.value]);
      for (int b : reads[o.value]) {
        if (r.size() < kSharedReads && std::find(r.begin(), r.end(), b) == r.end()) r.push_back(b);
      }
    }
    depth[v] = d + 1;
    if (depth[v] > kMaxFusedDepth || (uses[v] >= 2 && r.size() >= kSharedReads)) {
      need[v] = true;
      depth[v] = 0;
      reads[v] = {v};
    }
  }
  return plan;
}

}  // namespace shapejit::backends::loops
