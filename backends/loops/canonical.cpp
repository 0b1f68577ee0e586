// Pass: canonical forms. Before the pattern matchers run (plan_attention),
// a spelling that computes what an op of the set computes is rewritten to
// that op, so that the fusions that look for the op fire on the spelling
// too. Rewritten:
//
//   exp(x - max(x, a)) / sum(exp(x - max(x, a)), a)      -> softmax(x, a)
//   (x - max(x, a)) - log(sum(exp(x - max(x, a)), a))    -> log_softmax(x, a)
//
// each reduction over one axis with its dim kept, as NumPy code and a
// PyTorch module's export write them. The rewritten node keeps its value;
// the other nodes of the spelling, which nothing else reads, leave the
// graph (the matchers count who reads a value). A spelling whose parts are
// read elsewhere (an output, another node) is left as it is: rewriting it
// would compute them twice. Only the max-subtracted form is taken:
// exp(x) / sum(exp(x)) overflows where the op does not, and NumPy's answer
// is the overflowed one.
#include <optional>
#include <vector>

#include "backends/loops/lowering.h"

namespace shapejit::backends::loops {

namespace {

bool same_value(const ir::Operand& a, const ir::Operand& b) { return a.is_value() && b.is_value() && a.value == b.value; }

class Canonical {
 public:
  explicit Canonical(const ir::SpecializedGraph& sg) : sg_(sg), g_(*sg.graph), producer_(g_.num_values(), -1), uses_(g_.num_values(), 0) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (int o : g_.nodes[i].out) producer_[o] = static_cast<int>(i);
      for (const ir::Operand& o : g_.nodes[i].in) {
        if (o.is_value()) ++uses_[o.value];
      }
    }
    for (int v : g_.outputs) ++uses_[v];
  }

  // The graph with every match rewritten; nullopt when nothing matched.
  std::optional<ir::Graph> run() const {
    std::vector<std::optional<ir::Node>> rewritten(g_.nodes.size());
    std::vector<bool> gone(g_.nodes.size(), false);
    bool any = false;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      std::vector<int> spelling;
      rewritten[i] = softmax(g_.nodes[i], spelling);
      if (!rewritten[i]) continue;
      any = true;
      for (int s : spelling) gone[static_cast<size_t>(s)] = true;
    }
    if (!any) return std::nullopt;
    ir::Graph out = g_;
    out.nodes.clear();
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!gone[i]) out.nodes.push_back(rewritten[i] ? std::move(*rewritten[i]) : g_.nodes[i]);
    }
    return out;
  }

 private:
  // The node making v when it is `op` and v is read once (by the spelling).
  const ir::Node* made_by(const ir::Operand& o, Op op) const {
    if (!o.is_value() || producer_[o.value] < 0 || uses_[o.value] != 1) return nullptr;
    const ir::Node& n = g_.nodes[producer_[o.value]];
    return n.op == op && n.out.size() == 1 ? &n : nullptr;
  }

  // The axis of a reduction over one axis with its dim kept.
  static std::optional<int64_t> kept_axis(const ir::Node& n) {
    if (!n.attrs.keepdim || n.attrs.axes.size() != 1) return std::nullopt;
    return n.attrs.axes[0];
  }

  bool same_axis(int64_t a, int64_t b, int x) const {
    const size_t rank = sg_.types[x].shape.size();
    return norm_axis(a, rank) == norm_axis(b, rank);
  }

  // `x - max(x, a)`: x, the axis, and the sub and max nodes.
  struct Shift {
    int x;
    int64_t axis;
    int sub, max;
  };
  // The shift `o` is, read `reads` times (by the spelling).
  std::optional<Shift> shifted(const ir::Operand& o, int reads) const {
    if (!o.is_value() || producer_[o.value] < 0 || uses_[o.value] != reads) return std::nullopt;
    const int sub_node = producer_[o.value];
    const ir::Node& sub = g_.nodes[sub_node];
    if (sub.op != Op::kSub || !sub.in[0].is_value()) return std::nullopt;
    const ir::Node* max = made_by(sub.in[1], Op::kMax);
    if (!max || !same_value(max->in[0], sub.in[0])) return std::nullopt;
    const std::optional<int64_t> a = kept_axis(*max);
    const int x = sub.in[0].value;
    if (!a || !ir::is_float(sg_.types[x].dtype) || !sg_.types[x].is_tensor) return std::nullopt;
    if (sg_.types[x].shape != sg_.types[o.value].shape || sg_.types[x].dtype != sg_.types[o.value].dtype) return std::nullopt;
    return Shift{x, *a, sub_node, producer_[sub.in[1].value]};
  }

  // The op `n` spells, with the nodes of the spelling besides n in `spelling`.
  std::optional<ir::Node> softmax(const ir::Node& n, std::vector<int>& spelling) const {
    if (n.out.size() != 1 || n.in.size() != 2) return std::nullopt;
    const ir::Node *sum = nullptr, *exp = nullptr;
    std::optional<Shift> x;
    Op op = Op::kSoftmax;
    if (n.op == Op::kDiv) {  // e / sum(e): e read by both
      if (!n.in[0].is_value() || producer_[n.in[0].value] < 0 || uses_[n.in[0].value] != 2) return std::nullopt;
      exp = &g_.nodes[producer_[n.in[0].value]];
      sum = made_by(n.in[1], Op::kSum);
      if (exp->op != Op::kExp || !sum || !same_value(sum->in[0], n.in[0])) return std::nullopt;
      x = shifted(exp->in[0], 1);
    } else if (n.op == Op::kSub) {  // d - log(sum(exp(d))): d read by both
      const ir::Node* log = made_by(n.in[1], Op::kLog);
      sum = log ? made_by(log->in[0], Op::kSum) : nullptr;
      exp = sum ? made_by(sum->in[0], Op::kExp) : nullptr;
      if (!exp || !same_value(exp->in[0], n.in[0])) return std::nullopt;
      x = shifted(n.in[0], 2);
      op = Op::kLogSoftmax;
    } else {
      return std::nullopt;
    }
    const std::optional<int64_t> a = kept_axis(*sum);
    if (!x || !a || !same_axis(*a, x->axis, x->x)) return std::nullopt;
    const ir::ValueType& t = sg_.types[n.out[0]];
    if (t.shape != sg_.types[x->x].shape || t.dtype != sg_.types[x->x].dtype) return std::nullopt;
    spelling = {x->sub, x->max, producer_[exp->out[0]], producer_[sum->out[0]]};
    if (op == Op::kLogSoftmax) spelling.push_back(producer_[n.in[1].value]);  // the log
    ir::Node out{op, {ir::Operand::of(x->x)}, n.out, {}};
    out.attrs.present = ir::kAttrDim;
    out.attrs.dim = x->axis;
    return out;
  }

  const ir::SpecializedGraph& sg_;
  const ir::Graph& g_;
  std::vector<int> producer_, uses_;
};

}  // namespace

std::optional<ir::SpecializedGraph> canonical_forms(const ir::SpecializedGraph& sg) {
  std::optional<ir::Graph> g = Canonical(sg).run();
  if (!g) return std::nullopt;
  ir::SpecializedGraph out = sg;
  out.graph = std::make_shared<const ir::Graph>(std::move(*g));
  return out;
}

}  // namespace shapejit::backends::loops
