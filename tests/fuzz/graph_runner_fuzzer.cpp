// Structure-aware: the bytes build a graph and its inputs, and the graph runs
// on the reference interpreter (the oracle) and on the LLVM backend under a
// policy mode the bytes choose. The two must agree: equal results (floats
// within a tolerance for reassociated sums and vector math), or errors of the
// same code, except that a runtime check may fail on the reference alone
// (see below). A crash, an internal error or a disagreement aborts.
//
// The bytes choose the inputs (dtype, rank, sizes among 0, 1, small ones and
// huge ones, the huge ones only beside a 0 so the tensor holds nothing), then
// up to 24 ops from the whole op set, with operands among earlier values and
// literals (small, boundary and extreme int64s) and attributes. The Tracer
// keeps the ops shape inference accepts (that is the interpreter's path);
// a graph whose values would hold more than 2^16 elements is not run.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/ir/graph_json.h"
#include "jit/runtime/jit.h"
#include "jit/trace/tracer.h"

using namespace shapejit;

namespace {

constexpr int64_t kMaxElements = 1 << 16;

int64_t pick_size(FuzzedDataProvider& in) {
  static const int64_t kSizes[] = {0, 1, 1, 2, 3, 4, 5, 7, 8, 16, int64_t{1} << 31, int64_t{1} << 62, INT64_MAX};
  return kSizes[in.ConsumeIntegralInRange<size_t>(0, std::size(kSizes) - 1)];
}

int64_t pick_literal(FuzzedDataProvider& in) {
  static const int64_t kLiterals[] = {-1, 0, 1, 2, 3, -2, -3, 4, 8, INT64_MAX, INT64_MIN, int64_t{1} << 62, -(int64_t{1} << 62), int64_t{1} << 31};
  if (in.ConsumeBool()) return kLiterals[in.ConsumeIntegralInRange<size_t>(0, std::size(kLiterals) - 1)];
  return in.ConsumeIntegral<int64_t>();
}

std::vector<int64_t> pick_ints(FuzzedDataProvider& in, size_t max) {
  std::vector<int64_t> v(in.ConsumeIntegralInRange<size_t>(0, max));
  for (int64_t& x : v) x = in.ConsumeIntegralInRange<int64_t>(-4, 4);
  return v;
}

ir::Attrs pick_attrs(FuzzedDataProvider& in, const ir::OpInfo& info) {
  ir::Attrs a;
  for (uint32_t b = 1; b <= ir::kAttrApproximate; b <<= 1) {
    if (!(info.attrs & b) || (!(info.required & b) && in.ConsumeBool())) continue;
    a.present |= b;
    switch (static_cast<ir::AttrBit>(b)) {
      case ir::kAttrAxes: a.axes = pick_ints(in, 3); break;
      case ir::kAttrPerm: a.perm = pick_ints(in, 4); break;
      case ir::kAttrDims: a.dims = pick_ints(in, 2); break;
      case ir::kAttrDim: a.dim = in.ConsumeIntegralInRange<int64_t>(-4, 4); break;
      case ir::kAttrDim0: a.dim0 = in.ConsumeIntegralInRange<int64_t>(-3, 3); break;
      case ir::kAttrDim1: a.dim1 = in.ConsumeIntegralInRange<int64_t>(-3, 3); break;
      case ir::kAttrKeepdim: a.keepdim = in.ConsumeBool(); break;
      case ir::kAttrDtype: a.dtype = static_cast<ir::DType>(in.ConsumeIntegralInRange<int>(0, 4)); break;
      case ir::kAttrEps: a.eps = in.ConsumeBool() ? 1e-5 : 0.0; break;
      case ir::kAttrValue:
        if (in.ConsumeBool()) a.value = {true, 0, in.ConsumeFloatingPointInRange<double>(-4, 4)};
        else a.value = {false, in.ConsumeIntegralInRange<int64_t>(-4, 4), 0};
        break;
      case ir::kAttrApproximate: a.approximate_tanh = in.ConsumeBool(); break;
    }
  }
  return a;
}

ir::Tensor make_input(FuzzedDataProvider& in, ir::DType dt, std::vector<int64_t> shape) {
  ir::Tensor t = ir::Tensor::empty(dt, std::move(shape));
  uint32_t seed = in.ConsumeIntegral<uint32_t>();
  ir::visit_dtype(dt, [&]<typename T>() {
    T* p = t.ptr<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      seed = seed * 1664525u + 1013904223u;
      const int r = static_cast<int>(seed >> 24) % 9 - 4;  // -4..4
      if constexpr (std::is_same_v<T, bool>) p[i] = r > 0;
      else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(r);
      else p[i] = static_cast<T>(r) * static_cast<T>(0.375);
    }
  });
  return t;
}

bool close(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (std::isinf(x) || std::isinf(y)) return x == y || std::fabs(std::isinf(x) ? y : x) > 1e30;
  return std::fabs(x - y) <= 1e-3 + 1e-3 * std::max(std::fabs(x), std::fabs(y));
}

std::string agree(const ir::Tensor& a, const ir::Tensor& b) {
  if (a.dtype() != b.dtype()) return "dtypes differ";
  if (a.shape() != b.shape()) return "shapes differ";
  ir::Tensor x = a.contiguous(), y = b.contiguous();
  std::string bad;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    for (int64_t i = 0; i < x.numel() && bad.empty(); ++i) {
      const double u = static_cast<double>(x.ptr<T>()[i]), v = static_cast<double>(y.ptr<T>()[i]);
      if (ir::is_float(x.dtype()) ? !close(u, v) : u != v) bad = "element " + std::to_string(i) + ": " + std::to_string(u) + " vs " + std::to_string(v);
    }
  });
  return bad;
}

// Which values a kernel may rightly give otherwise than the reference: a
// step that is discontinuous (a rounding, a comparison, a cast, an argmax)
// of a float the two compute within a few ulps of each other (libm's
// functions against inline ones, sums reassociated, a product contracted
// into an fma), and what follows from such a step. rint(log(cbrt(exp(1.5))))
// is rint(0.5 +- 1 ulp): 0 or 1. Such a value's elements are no answer to
// compare; its dtype and shape still are.
std::vector<bool> fragile_values(const ir::Graph& g, const std::vector<ir::ValueType>& types) {
  std::vector<bool> inexact(types.size(), false), fragile(types.size(), false);
  for (const ir::Node& n : g.nodes) {
    const int out = n.out[0];
    bool in_inexact = false, in_fragile = false;
    for (const ir::Operand& o : n.in) {
      if (o.kind == ir::Operand::Kind::kFloat) in_inexact = true;  // a float literal: rounded into f32 or not
      if (!o.is_value()) continue;
      in_inexact |= inexact[o.value];
      in_fragile |= fragile[o.value];
    }
    using ir::Op;
    bool exact = false, discontinuous = false;
    switch (n.op) {
      case Op::kNeg: case Op::kAbs: case Op::kRelu: case Op::kMaximum: case Op::kMinimum: case Op::kWhere:
      case Op::kMax: case Op::kMin: case Op::kCummax: case Op::kCummin: case Op::kSort:
      case Op::kReshape: case Op::kPermute: case Op::kTranspose: case Op::kExpand: case Op::kSlice: case Op::kConcat:
      case Op::kSqueeze: case Op::kUnsqueeze: case Op::kIndexSelect: case Op::kEmbedding: case Op::kMaskedSelect:
      case Op::kIndexPut: case Op::kIndexMax: case Op::kIndexMin: case Op::kFull: exact = true; break;
      case Op::kFloor: case Op::kCeil: case Op::kTrunc: case Op::kRint: case Op::kCast: case Op::kEq: case Op::kNe:
      case Op::kLt: case Op::kLe: case Op::kGt: case Op::kGe: case Op::kArgmax: case Op::kArgsort: case Op::kFmod:
      case Op::kNonzero: discontinuous = true; exact = true; break;
      default: break;
    }
    const bool is_float = types[out].is_tensor && ir::is_float(types[out].dtype);
    inexact[out] = in_inexact || (is_float && !exact);
    fragile[out] = in_fragile || (discontinuous && in_inexact);
  }
  return fragile;
}

Status run(const std::string& config, const ir::Graph& g, const std::vector<ir::Tensor>& inputs, std::vector<ir::Tensor>& out) {
  std::unique_ptr<runtime::Jit> jit = SJ_TRY(runtime::Jit::create(config));
  jit->set_log([](const std::string&) {});
  std::vector<DLTensor> dl;
  std::vector<const DLTensor*> ptrs;
  for (const ir::Tensor& t : inputs) dl.push_back(t.dl());
  for (const DLTensor& d : dl) ptrs.push_back(&d);
  return jit->call_graph("fuzz", g, {}, runtime::Args(ptrs.data(), ptrs.size()), out);
}

[[noreturn]] void fail(const std::string& what, const ir::Graph& g) {
  std::fprintf(stderr, "graph runner: %s\ngraph: %s\n", what.c_str(), ir::graph_to_json(g).dump().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // Inputs: every dim a symbol, as the JIT traces them.
  std::vector<ir::InputSpec> specs;
  ir::ShapeHints hints;
  std::vector<ir::Tensor> tensors;
  const int num_inputs = in.ConsumeIntegralInRange<int>(1, 3);
  int symbol = 0;
  for (int i = 0; i < num_inputs; ++i) {
    ir::InputSpec spec;
    spec.name = "in" + std::to_string(i);
    spec.dtype = static_cast<ir::DType>(in.ConsumeIntegralInRange<int>(0, 4));
    std::vector<int64_t> shape(in.ConsumeIntegralInRange<size_t>(0, 3));
    bool empty = false;
    for (int64_t& d : shape) {
      d = pick_size(in);
      empty |= d == 0;
    }
    for (int64_t& d : shape) {
      if (!empty && d > 16) d = 2;  // only a tensor with no elements may be huge
    }
    for (size_t d = 0; d < shape.size(); ++d) spec.shape.push_back(ir::DimSpec::symbol("s" + std::to_string(symbol++)));
    specs.push_back(spec);
    hints.push_back(shape);
    tensors.push_back(make_input(in, spec.dtype, shape));
  }
  auto tracer = trace::Tracer::create(specs, hints, {});
  if (!tracer.is_ok()) fail("the tracer refused the inputs: " + tracer.status().to_string(), ir::Graph());
  trace::Tracer& t = **tracer;

  const int num_ops = in.ConsumeIntegralInRange<int>(1, 24);
  for (int k = 0; k < num_ops && in.remaining_bytes() > 0; ++k) {
    const auto op = static_cast<ir::Op>(in.ConsumeIntegralInRange<int>(0, static_cast<int>(ir::kNumOps) - 1));
    const ir::OpInfo& info = ir::op_info(op);
    const int max_in = info.max_in < 0 ? info.min_in + 2 : info.max_in;
    const int n = in.ConsumeIntegralInRange<int>(info.min_in, max_in);
    std::vector<trace::Tracer::Arg> args;
    for (int i = 0; i < n; ++i) {
      const int values = t.graph().num_values();
      switch (in.ConsumeIntegralInRange<int>(0, 5)) {
        case 0: args.push_back(pick_literal(in)); break;
        case 1: args.push_back(in.ConsumeFloatingPointInRange<double>(-3, 3)); break;
        default: args.push_back(trace::Tracer::Value{values - 1 - in.ConsumeIntegralInRange<int>(0, values - 1)}); break;
      }
    }
    auto v = t.op(op, args, pick_attrs(in, info));
    if (!v.is_ok()) {
      const Code c = v.status().code();
      if (c != Code::kInvalidArgument && c != Code::kGraphBreak && c != Code::kUnsupported) {
        fail(std::string("tracing ") + info.name + ": " + v.status().to_string(), t.graph());
      }
      continue;
    }
    if (!t.is_tensor(*v)) continue;
    // Keep the graph small enough to run.
    int64_t elements = 1;
    const sym::ShapeEnv& env = t.env();
    for (int d = 0; d < t.rank(*v); ++d) {
      const auto h = env.hint(t.types()[v->id].shape[d]);
      if (!h) return 0;
      if (*h == 0) elements = 0;
      else if (elements > 0 && (*h > kMaxElements || (elements *= *h) > kMaxElements)) return 0;
    }
  }
  // Outputs: the last tensor and one before it.
  std::vector<int> outputs;
  for (int v = t.graph().num_values(); v-- > 0 && outputs.size() < 2;) {
    if (t.is_tensor({v}) && (outputs.empty() || in.ConsumeBool())) outputs.push_back(v);
  }
  for (int v : outputs) {
    if (!t.output({v}).is_ok()) return 0;
  }
  const ir::Graph g = t.graph();

  static const char* kModes[] = {"always_dynamic", "always_static", "start_dynamic", "start_static", "bucketed"};
  const std::string mode = kModes[in.ConsumeIntegralInRange<int>(0, 4)];
  std::vector<ir::Tensor> want, got;
  const Status ref = run(R"({"compile": {"backend": "reference"}})", g, tensors, want);
  const Status llvm = run(R"({"compile": {"backend": "llvm"}, "policy": {"mode": ")" + mode + R"("}})", g, tensors, got);
  if (ref.code() == Code::kInternal || llvm.code() == Code::kInternal) fail("internal error: " + ref.to_string() + " / " + llvm.to_string(), g);
  // A compiled kernel computes only the elements its outputs read, and makes a
  // runtime check (an index in range, an integer power's exponent) only on
  // those; the reference computes every live node in full. So the reference
  // may fail a check the kernel never makes (an embedding whose rows are
  // empty, a gather sliced away): allowed. The other way round is not.
  const bool checked_only_by_reference = ref.code() == Code::kRuntime && llvm.is_ok();
  const std::vector<bool> fragile = fragile_values(g, t.types());
  const bool any_fragile = std::find(fragile.begin(), fragile.end(), true) != fragile.end();
  if (ref.code() != llvm.code() && !checked_only_by_reference && !any_fragile) {  // a fragile index may be in range or not
    fail("reference: " + ref.to_string() + "; llvm (" + mode + "): " + llvm.to_string(), g);
  }
  if (!ref.is_ok() || !llvm.is_ok()) return 0;
  if (want.size() != got.size()) fail("output counts differ", g);
  for (size_t i = 0; i < want.size(); ++i) {
    if (fragile[g.outputs[i]] && want[i].dtype() == got[i].dtype() && want[i].shape() == got[i].shape()) continue;
    const std::string why = agree(want[i], got[i]);
    if (!why.empty()) fail("output " + std::to_string(i) + " (llvm, " + mode + "): " + why, g);
  }
  return 0;
}
