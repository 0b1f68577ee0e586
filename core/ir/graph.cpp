#include "core/ir/graph.h"

#include <unordered_map>

namespace shapejit::ir {

void normalize_attrs(Node& node) {
  Attrs& a = node.attrs;
  uint32_t allowed = op_info(node.op).attrs;
  if ((allowed & kAttrKeepdim) && !a.has(kAttrKeepdim)) {
    a.keepdim = false;
    a.present |= kAttrKeepdim;
  }
  if (op_info(node.op).cls == OpClass::kSoftmax && !a.has(kAttrDim)) {
    a.dim = -1;
    a.present |= kAttrDim;
  }
  if ((allowed & kAttrEps) && !a.has(kAttrEps)) {
    a.eps = node.op == Op::kRmsNorm ? 1e-6 : 1e-5;
    a.present |= kAttrEps;
  }
  if ((allowed & kAttrAxes) && !a.has(kAttrAxes) &&
      (node.op == Op::kLayerNorm || node.op == Op::kRmsNorm)) {
    a.axes = {-1};
    a.present |= kAttrAxes;
  }
  if ((allowed & kAttrApproximate) && !a.has(kAttrApproximate)) {
    a.approximate_tanh = false;
    a.present |= kAttrApproximate;
  }
  if (node.op == Op::kArange && !a.has(kAttrDtype)) {
    a.dtype = DType::kI64;
    a.present |= kAttrDtype;
  }
}

namespace {

void hash_attrs(Hasher& h, const Attrs& a) {
  h.add(a.present);
  auto list = [&](const std::vector<int64_t>& v) {
    h.add(v.size());
    for (int64_t x : v) h.add_i64(x);
  };
  if (a.has(kAttrAxes)) list(a.axes);
  if (a.has(kAttrPerm)) list(a.perm);
  if (a.has(kAttrDims)) list(a.dims);
  if (a.has(kAttrKeepdim)) h.add(a.keepdim);
  if (a.has(kAttrDim)) h.add_i64(a.dim);
  if (a.has(kAttrDim0)) h.add_i64(a.dim0);
  if (a.has(kAttrDim1)) h.add_i64(a.dim1);
  if (a.has(kAttrDtype)) h.add(static_cast<uint64_t>(a.dtype));
  if (a.has(kAttrEps)) h.add_f64(a.eps);
  if (a.has(kAttrValue)) h.add(a.value.is_float).add_i64(a.value.i).add_f64(a.value.f);
  if (a.has(kAttrApproximate)) h.add(a.approximate_tanh);
}

}  // namespace

Hash128 Graph::canonical_hash() const {
  // A value's hash is that of the computation producing it: inputs by
  // position, dtype and dim specs (symbol names replaced by their order of
  // first appearance), node results by op, attributes and operand hashes.
  std::vector<Hash128> vh(value_names.size());
  std::unordered_map<std::string, int> symbol_order;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Hasher h;
    h.add_str("input").add(i).add(static_cast<uint64_t>(inputs[i].dtype)).add(inputs[i].shape.size());
    for (const DimSpec& d : inputs[i].shape) {
      if (d.is_symbol) {
        auto [it, inserted] = symbol_order.emplace(d.name, static_cast<int>(symbol_order.size()));
        h.add(1).add(it->second);
      } else {
        h.add(0).add_i64(d.value);
      }
    }
    vh[i] = h.finish();
  }
  for (const Node& n : nodes) {
    Hasher h;
    h.add_str("node").add(static_cast<uint64_t>(n.op)).add(n.in.size());
    hash_attrs(h, n.attrs);
    for (const Operand& o : n.in) {
      h.add(static_cast<uint64_t>(o.kind));
      if (o.is_value()) h.add_hash(vh[o.value]);
      else if (o.kind == Operand::Kind::kInt) h.add_i64(o.i);
      else h.add_f64(o.f);
    }
    Hash128 base = h.finish();
    for (size_t k = 0; k < n.out.size(); ++k) vh[n.out[k]] = Hasher().add_hash(base).add(k).finish();
  }
  Hasher h;
  h.add_str("graph").add(inputs.size()).add(outputs.size());
  for (int o : outputs) h.add_hash(vh[o]);
  return h.finish();
}

}  // namespace shapejit::ir
