#include "tests/support/random_graph.h"

#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

namespace shapejit::testing {

namespace {

using nlohmann::json;

struct Value {
  std::string name;
  ir::DType dtype;
  std::vector<int64_t> shape;
  bool symint = false;
};

class Builder {
 public:
  explicit Builder(std::mt19937& rng) : rng_(rng) {}

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng_); }
  int64_t size() {
    static const int64_t kSizes[] = {0, 1, 2, 3, 3, 5, 7, 7, 8};
    return kSizes[pick(0, 8)];
  }

  Value input(ir::DType dt, std::vector<int64_t> shape) {
    Value v{"in" + std::to_string(inputs_.size()), dt, shape};
    json dims = json::array();
    for (size_t d = 0; d < shape.size(); ++d) dims.push_back("s" + std::to_string(symbol_++));
    graph_["inputs"].push_back({{"name", v.name}, {"dtype", ir::dtype_name(dt)}, {"shape", dims}});
    tensors_.push_back(random_tensor(dt, shape, rng_));
    inputs_.push_back(v);
    pool_.push_back(v);
    return v;
  }

  Value node(const std::string& op, json in, json attrs, ir::DType dt, std::vector<int64_t> shape, bool symint = false) {
    Value v{"v" + std::to_string(nodes_++), dt, std::move(shape), symint};
    json n = {{"op", op}, {"in", std::move(in)}, {"out", v.name}};
    if (!attrs.is_null()) n["attrs"] = std::move(attrs);
    graph_["nodes"].push_back(n);
    pool_.push_back(v);
    return v;
  }

  // A float value from the pool (the generator keeps at least one).
  Value some_float() {
    std::vector<Value> floats;
    for (Value v : pool_) {
      if (ir::is_float(v.dtype) && !v.symint) floats.push_back(v);
    }
    return floats[pick(0, static_cast<int>(floats.size()) - 1)];
  }

  // A new input that broadcasts against `shape`: same rank or fewer, each
  // dim equal or 1.
  Value broadcast_partner(Value x) {
    std::vector<int64_t> s;
    const size_t drop = x.shape.empty() ? 0 : static_cast<size_t>(pick(0, static_cast<int>(x.shape.size())));
    for (size_t d = drop; d < x.shape.size(); ++d) s.push_back(coin(0.25) ? 1 : x.shape[d]);
    return input(x.dtype, s);
  }

  void step() {
    Value x = some_float();
    const size_t r = x.shape.size();
    switch (pick(0, 13)) {
      case 0: {
        static const char* kUnary[] = {"neg", "abs", "exp", "tanh", "sigmoid", "relu", "silu", "sin", "cos", "erf", "gelu",
                                       "atan", "sinh", "cbrt", "floor", "rint", "expm1"};
        node(kUnary[pick(0, 16)], {x.name}, nullptr, x.dtype, x.shape);
        break;
      }
      case 1:
      case 2: {
        static const char* kBinary[] = {"add", "sub", "mul", "maximum", "minimum"};
        const char* op = kBinary[pick(0, 4)];
        if (coin(0.3)) {
          node(op, coin() ? json{x.name, 0.5} : json{1.5, x.name}, nullptr, x.dtype, x.shape);
        } else {
          Value y = broadcast_partner(x);
          node(op, coin() ? json{x.name, y.name} : json{y.name, x.name}, nullptr, x.dtype, x.shape);
        }
        break;
      }
      case 3: {  // where over a comparison
        Value c = node("gt", {x.name, 0.25}, nullptr, ir::DType::kBool, x.shape);
        node("where", {c.name, x.name, -1.0}, nullptr, x.dtype, x.shape);
        break;
      }
      case 4: {  // sum or mean (max and min need non-empty axes)
        if (r == 0) return;
        int axis = pick(0, static_cast<int>(r) - 1);
        bool keep = coin();
        std::vector<int64_t> s = x.shape;
        if (keep) s[axis] = 1;
        else s.erase(s.begin() + axis);
        node(coin() ? "sum" : "mean", {x.name}, {{"axes", {axis}}, {"keepdim", keep}}, x.dtype, s);
        break;
      }
      case 5: {
        if (r == 0) return;
        node(coin() ? "softmax" : "log_softmax", {x.name}, {{"dim", pick(0, static_cast<int>(r) - 1)}}, x.dtype, x.shape);
        break;
      }
      case 6: {
        if (r == 0) return;
        Value w = input(x.dtype, {x.shape.back()});
        node(coin() ? "layer_norm" : "rms_norm", {x.name, w.name}, nullptr, x.dtype, x.shape);
        break;
      }
      case 7: {
        if (r < 2) return;
        std::vector<int64_t> s = x.shape;
        std::swap(s[0], s[r - 1]);
        node("transpose", {x.name}, {{"dim0", 0}, {"dim1", static_cast<int>(r) - 1}}, x.dtype, s);
        break;
      }
      case 8: {  // flatten the last two dims through SymInts
        if (r < 2) return;
        Value a = node("sym_size", {x.name}, {{"dim", static_cast<int>(r) - 2}}, ir::DType::kI64, {}, true);
        Value b = node("sym_size", {x.name}, {{"dim", static_cast<int>(r) - 1}}, ir::DType::kI64, {}, true);
        Value ab = node("sym_mul", {a.name, b.name}, nullptr, ir::DType::kI64, {}, true);
        std::vector<int64_t> s(x.shape.begin(), x.shape.end() - 2);
        json in = {x.name};
        for (int64_t d : s) in.push_back(d);
        in.push_back(ab.name);
        // -1 for the first dim, when the others are non-zero (else it is not inferable).
        int64_t others = x.shape[r - 2] * x.shape[r - 1];
        for (size_t d = 1; d + 2 < r; ++d) others *= x.shape[d];
        if (r > 2 && others != 0 && coin()) in[1] = -1;
        s.push_back(x.shape[r - 2] * x.shape[r - 1]);
        node("reshape", in, nullptr, x.dtype, s);
        break;
      }
      case 9: {  // slice with Python bounds
        if (r == 0) return;
        int d = pick(0, static_cast<int>(r) - 1);
        int64_t n = x.shape[d];
        int64_t start = pick(-4, 4), stop = coin() ? 9223372036854775807LL : pick(-4, 8), step = pick(1, 3);
        auto clamp = [&](int64_t b) { return b < 0 ? std::max<int64_t>(b + n, 0) : std::min(b, n); };
        int64_t lo = clamp(start), hi = clamp(stop);
        std::vector<int64_t> s = x.shape;
        s[d] = std::max<int64_t>(0, (hi - lo + step - 1) / step);
        node("slice", {x.name, start, stop, step}, {{"dim", d}}, x.dtype, s);
        break;
      }
      case 10: {  // unsqueeze, then expand the new dim
        int d = pick(0, static_cast<int>(r));
        std::vector<int64_t> s = x.shape;
        s.insert(s.begin() + d, 1);
        Value u = node("unsqueeze", {x.name}, {{"dim", d}}, x.dtype, s);
        json in = {u.name};
        int64_t k = pick(1, 3);
        for (size_t i = 0; i < s.size(); ++i) in.push_back(static_cast<int>(i) == d ? json(k) : json(-1));
        s[d] = k;
        node("expand", in, nullptr, x.dtype, s);
        break;
      }
      case 11: {  // concat with itself
        if (r == 0) return;
        int d = pick(0, static_cast<int>(r) - 1);
        std::vector<int64_t> s = x.shape;
        s[d] *= 2;
        node("concat", {x.name, x.name}, {{"dim", d}}, x.dtype, s);
        break;
      }
      case 12: {  // matmul with a fresh weight
        if (r == 0) return;
        int64_t m = pick(1, 4);
        Value w = input(x.dtype, {x.shape.back(), m});
        std::vector<int64_t> s = x.shape;
        s.back() = m;
        node("matmul", {x.name, w.name}, nullptr, x.dtype, s);
        break;
      }
      case 13: {  // a round trip through f64 and back
        Value c = node("cast", {x.name}, {{"dtype", "f64"}}, ir::DType::kF64, x.shape);
        node("cast", {c.name}, {{"dtype", ir::dtype_name(x.dtype)}}, x.dtype, x.shape);
        break;
      }
    }
  }

  RandomGraph finish() {
    RandomGraph out;
    std::vector<std::string> tensors;
    for (Value v : pool_) {
      if (!v.symint) tensors.push_back(v.name);
    }
    graph_["outputs"] = json::array();
    graph_["outputs"].push_back(tensors.back());
    if (tensors.size() > 2) graph_["outputs"].push_back(tensors[tensors.size() / 2]);
    out.json = graph_.dump();
    out.inputs = tensors_;
    out.num_ops = nodes_;
    return out;
  }

  json graph_ = {{"inputs", json::array()}, {"nodes", json::array()}};

 private:
  std::mt19937& rng_;
  std::vector<Value> inputs_, pool_;
  std::vector<ir::Tensor> tensors_;
  int symbol_ = 0, nodes_ = 0;
};

}  // namespace

RandomGraph random_graph(std::mt19937& rng, int max_ops) {
  Builder b(rng);
  const int rank = b.pick(0, 3);
  std::vector<int64_t> shape;
  for (int d = 0; d < rank; ++d) shape.push_back(b.size());
  b.input(b.coin(0.8) ? ir::DType::kF32 : ir::DType::kF64, shape);
  const int steps = b.pick(1, max_ops);
  for (int i = 0; i < steps; ++i) b.step();
  if (b.graph_["nodes"].empty()) b.step();
  return b.finish();
}

}  // namespace shapejit::testing
