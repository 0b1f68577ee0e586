// Step: nonzero and masked_select, whose result's size is the data's (a
// CompactStep, loop_ir.h). The mask and the values are read where they
// lie: an input or a buffer already made, through its own strides
// (broadcast dims with stride 0). A mask folded from others (x > 0.5) is
// computed by a loop step of its own over the domain's blocks, which
// stores it dense and counts each block as it goes, so that the
// backend's routine only sums the counts and fills; folded values of the
// domain's shape are stored by the same step. With `count_steps` (a GPU)
// there is always a count step, and mask and values always dense.
#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

// The loop step that counts `mask` over the domain `shape`, per block of
// CompactStep::kBlock, into `counts`, storing it dense into `mask_buffer`
// (-1: it is one already) and `values` into `values_buffer` (-1: none).
Status Lowering::count_step(int node, const std::vector<Expr>& shape, int mask, int mask_buffer, int values, int values_buffer, int counts) {
  constexpr int64_t kBlock = CompactStep::kBlock;
  Step st{Step::Kind::kLoops};
  st.label = label(node) + " (its mask, counted)";
  const Expr size = product(shape), b = new_symbol(), j = new_symbol();
  st.loops.outer_vars = {b.symbol_id()};
  st.loops.outer_extents = {sym::floordiv(size + (kBlock - 1), kBlock)};
  st.loops.work_per_row = Expr(kBlock);
  Phase& p0 = add_phase(st.loops, {j}, {sym::min(Expr(kBlock), size - b * kBlock)});
  // The flat index's coordinates, row-major; an operand's, right-aligned,
  // with 0 along the dims it broadcasts.
  const Expr flat = b * kBlock + j;
  const std::vector<Expr> strides = dense_strides(shape);
  std::vector<Expr> at(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    at[d] = sym::floordiv(flat, strides[d]);
    if (d > 0) at[d] = sym::mod(at[d], shape[d]);
  }
  auto at_of = [&](int v) {
    const std::vector<Expr>& vs = this->shape(v);
    const size_t lead = shape.size() - vs.size();
    std::vector<Expr> idx(vs.size());
    for (size_t d = 0; d < vs.size(); ++d) idx[d] = is_one(vs[d]) ? Expr(0) : at[lead + d];
    return idx;
  };
  BodyBuilder b0(*this, p0);
  const int m = b0.value(mask, at_of(mask));
  if (mask_buffer >= 0) p0.stores.push_back({mask_buffer, flat, b0.cast(m, p_.buffers[mask_buffer].dtype)});
  if (values_buffer >= 0) p0.stores.push_back({values_buffer, flat, b0.cast(b0.value(values, at_of(values)), p_.buffers[values_buffer].dtype)});
  const DType dt = b0.dtype(m);
  const int set = dt == DType::kBool ? m : b0.op(Op::kNe, DType::kBool, {m, b0.constant(dt, 0)});
  p0.reductions.push_back({Combine::kSum, b0.cast(set, DType::kI64), -1, DType::kI64});
  SJ_TRY(check_budget(p0, node));
  Phase& p1 = add_phase(st.loops, {}, {});
  BodyBuilder b1(*this, p1);
  p1.stores.push_back({counts, b, b1.acc(0, 0, DType::kI64)});
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

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
  p_.count_bounds.push_back({c.count, spec_.symbols[c.count].bound});
  c.shape = n.op == Op::kMaskedSelect ? types_[out].aux : shape(n.in[0].value);
  const int mask = n.in[n.op == Op::kMaskedSelect ? 1 : 0].value, values = n.op == Op::kMaskedSelect ? n.in[0].value : -1;
  // Strides of buffer b over the domain (right-aligned, 0 where it broadcasts).
  auto strides_of = [&](int b) {
    const Buffer& buf = p_.buffers[b];
    const size_t lead = c.shape.size() - buf.shape.size();
    std::vector<Expr> s(c.shape.size(), Expr(0));
    for (size_t d = 0; d < buf.shape.size(); ++d) {
      if (!is_one(buf.shape[d])) s[lead + d] = buf.strides[d];
    }
    return s;
  };
  const auto folded_over_domain = [&](int v) { return buffer_of_[v] < 0 && shape(v) == c.shape; };
  const auto dense_over_domain = [&](int v) {
    return buffer_of_[v] >= 0 && p_.buffers[buffer_of_[v]].shape == c.shape && p_.buffers[buffer_of_[v]].strides == dense_strides(c.shape);
  };
  const auto domain_temp = [&](int v) { return add_buffer(Buffer::Kind::kTemp, p_.num_temps++, types_[v].dtype, c.shape, dense_strides(c.shape)); };
  if (folded_over_domain(mask) || options_.count_steps) {
    // A count step: the mask (and values) stored dense where they are not.
    int mask_store = -1, values_store = -1;
    c.mask = dense_over_domain(mask) ? buffer_of_[mask] : (mask_store = domain_temp(mask));
    if (values >= 0 && dense_over_domain(values)) c.values = buffer_of_[values];
    else if (values >= 0 && (folded_over_domain(values) || options_.count_steps)) c.values = values_store = domain_temp(values);
    const Expr blocks = sym::floordiv(product(c.shape) + (CompactStep::kBlock - 1), CompactStep::kBlock);
    c.counts = add_buffer(Buffer::Kind::kTemp, p_.num_temps++, DType::kI64, {blocks}, {Expr(1)});
    SJ_TRY(count_step(node, c.shape, mask, mask_store, values_store >= 0 ? values : -1, values_store, c.counts));
  } else {
    c.mask = buffer_of_[mask] >= 0 ? buffer_of_[mask] : SJ_TRY(ensure_dense(mask, node));
  }
  if (values >= 0 && c.values < 0) c.values = buffer_of_[values] >= 0 ? buffer_of_[values] : SJ_TRY(ensure_dense(values, node));
  c.mask_strides = strides_of(c.mask);
  if (c.values >= 0) c.value_strides = strides_of(c.values);
  p_.steps.push_back(std::move(st));
  return Status::ok();
}

}  // namespace shapejit::backends::loops
