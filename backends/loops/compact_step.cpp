// Step: nonzero and masked_select, whose result's size is the data's (a
// CompactStep, loop_ir.h). The mask and the values are read where they
// lie: an input or a buffer already made through its own strides, a value
// folded from others (x > 0.5) made a dense buffer first, by a pointwise
// step that fuses its chain. Broadcast dims read with stride 0.
#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

Status Lowering::compact_step(int node, int buffer) {
  const ir::Node& n = g_.nodes[node];
  const int out = n.out[0];
  if (!options_.compaction) return unsupported(label(node) + ": this backend has no compaction (nonzero, masked_select) yet");
  if (shape(out).empty() || !shape(out)[0].is_symbol() || !spec_.symbols[shape(out)[0].symbol_id()].unbacked) {
    return internal_error(label(node) + ": its count is not a data-dependent symbol");
  }
  Step st{Step::Kind::kCompact};
  st.label = label(node);
  CompactStep& c = st.compact;
  c.op = n.op;
  c.out = buffer;
  c.count = shape(out)[0].symbol_id();
  c.shape = n.op == Op::kMaskedSelect ? types_[out].aux : shape(n.in[0].value);
  // An operand's buffer, and its strides over the domain (right-aligned).
  auto operand = [&](int v, std::vector<Expr>& strides) -> Expected<int> {
    const int b = buffer_of_[v] >= 0 ? buffer_of_[v] : SJ_TRY(ensure_dense(v, node));
    const Buffer& buf = p_.buffers[b];
    const size_t lead = c.shape.size() - buf.shape.size();
    strides.assign(c.shape.size(), Expr(0));
    for (size_t d = 0; d < buf.shape.size(); ++d) {
      if (!is_one(buf.shape[d])) strides[lead + d] = buf.strides[d];
    }
    return b;
  };
  if (n.op == Op::kNonzero) {
    c.mask = SJ_TRY(operand(n.in[0].value, c.mask_strides));
  } else {
    c.values = SJ_TRY(operand(n.in[0].value, c.value_strides));
    c.mask = SJ_TRY(operand(n.in[1].value, c.mask_strides));
  }
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

}  // namespace shapejit::backends::loops
