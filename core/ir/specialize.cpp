#include "core/ir/specialize.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_set>

#include "core/ir/tensor.h"

namespace shapejit::ir {

namespace {

using I128 = __int128;
constexpr I128 kMaxI64 = std::numeric_limits<int64_t>::max();
I128 abs128(int64_t v) { return v < 0 ? -I128{v} : I128{v}; }

// A bound on |e| and on every value its evaluation (sym::Program's, in any
// order of its terms and factors) passes through, from the symbols' ranges;
// nullopt when that could leave int64 or divide by zero.
std::optional<I128> magnitude(const sym::Expr& e, const sym::ShapeEnv& env) {
  using sym::Kind;
  const auto fits = [](I128 v) { return v <= kMaxI64 ? std::optional<I128>(v) : std::nullopt; };
  switch (e.kind()) {
    case Kind::kConst: return fits(abs128(e.const_value()));
    case Kind::kSymbol: {
      const sym::Range r = env.range(e);
      return fits(std::max(abs128(r.lo), abs128(r.hi)));
    }
    case Kind::kAdd: {  // every partial sum is at most the sum of the terms' bounds
      I128 sum = abs128(e.add_constant());
      for (size_t i = 0; i < e.num_args(); ++i) {
        const std::optional<I128> a = magnitude(e.arg(i), env);
        if (!a) return std::nullopt;
        sum += abs128(e.coeff(i)) * *a;  // both within 2^63: no overflow of 128 bits
        if (sum > kMaxI64) return std::nullopt;
      }
      return sum;
    }
    case Kind::kMul: {  // every partial product is at most the product of the factors' bounds (each taken as at least 1)
      I128 product = 1;
      for (size_t i = 0; i < e.num_args(); ++i) {
        const std::optional<I128> a = magnitude(e.arg(i), env);
        if (!a) return std::nullopt;
        const I128 f = std::max<I128>(*a, 1);
        if (product > kMaxI64 / f) return std::nullopt;
        product *= f;
      }
      return product;
    }
    case Kind::kFloorDiv:
    case Kind::kMod: {  // a divisor at least 1: the quotient is within the dividend's bound, the remainder within the divisor's
      const std::optional<I128> a = magnitude(e.arg(0), env), b = magnitude(e.arg(1), env);
      if (!a || !b || env.range(e.arg(1)).lo < 1) return std::nullopt;
      return fits(e.kind() == Kind::kFloorDiv ? *a : std::max(*a, *b));
    }
    case Kind::kMin:
    case Kind::kMax: {
      const std::optional<I128> a = magnitude(e.arg(0), env), b = magnitude(e.arg(1), env);
      if (!a || !b) return std::nullopt;
      return std::max(*a, *b);
    }
  }
  return std::nullopt;
}

// The sizes a call's symbols decide whose arithmetic could leave int64: the
// integers computed from sizes (SymInt values: an int argument squared) and
// each tensor's dims and element count, each distinct expression once. A
// constant, a single symbol (an input's dim, an int argument), or an
// expression the symbols' ranges keep within int64 (`s0 - 2`, dims being
// at most Range::kMaxDim) fits.
std::vector<SizeCheck> size_checks(const std::vector<ValueType>& types, const sym::ShapeEnv& env) {
  std::vector<SizeCheck> out;
  std::unordered_set<const sym::Node*> seen;
  const auto add = [&](const sym::Expr& e) {
    if (e.depth() <= 1 || !seen.insert(e.node()).second || magnitude(e, env)) return;
    out.push_back({sym::Program::compile(e, [](int id) { return std::make_pair(int32_t{id}, int32_t{0}); }), e.str(), env.has_unbacked(e)});
  };
  for (const ValueType& t : types) {
    if (!t.is_tensor) {
      add(t.scalar);
      continue;
    }
    for (const sym::Expr& d : t.shape) add(d);
    if (t.shape.size() > 1) {
      // Built as a probe: a product whose constants alone overflow is a
      // tensor no call can allocate, which allocation reports.
      if (std::optional<sym::Expr> n = sym::probe([&] {
            sym::Expr p(1);
            for (const sym::Expr& d : t.shape) p = p * d;
            return p;
          })) {
        add(*n);
      }
    }
  }
  return out;
}

}  // namespace

Expected<SpecializedGraphPtr> specialize(std::shared_ptr<const Graph> graph, sym::Specialization spec) {
  auto sg = std::make_shared<SpecializedGraph>();
  sym::ShapeEnv env = sym::ShapeEnv::from_specialization(spec);
  sg->types = SJ_TRY(infer(*graph, env, nullptr));
  for (int o : graph->outputs) {
    const ValueType& t = sg->types[o];
    if (t.shape.size() > static_cast<size_t>(kMaxRank)) {
      return invalid("output '" + graph->value_names[o] + "' has rank " + std::to_string(t.shape.size()) + "; at most " +
                     std::to_string(kMaxRank) + " is supported");
    }
    OutputType out{t.dtype, {}, false};
    for (const sym::Expr& d : t.shape) {
      out.data_dependent |= env.has_unbacked(d);
      out.shape.push_back(sym::Program::compile(d, [](int id) { return std::make_pair(int32_t{id}, int32_t{0}); }));
    }
    sg->outputs.push_back(std::move(out));
  }
  sg->size_checks = size_checks(sg->types, env);
  for (const SizeCheck& c : sg->size_checks) sg->size_checks_after_run |= c.after_run;
  sg->spec_hash = spec.hash();
  sg->spec = std::move(spec);
  sg->graph = std::move(graph);
  return SpecializedGraphPtr(std::move(sg));
}

}  // namespace shapejit::ir
