// The dispatch hit path: guard check, GuardTree lookup and the call of an
// empty kernel, on a site with 1, 8 and 64 entries; 3 inputs of rank 3.
// Entries differ in dim 0 (always_static), and every iteration calls the
// next entry's shape, so the lookup is exercised across all of them. The
// output is a scalar, so its buffer is reused and the loop allocates nothing.
#include <benchmark/benchmark.h>

#include "guards/guard_tree.h"
#include "jit/runtime/jit.h"

namespace {

using namespace shapejit;

class NullKernel final : public backends::Kernel {
 public:
  Status run(const backends::RunContext&, std::span<const DLTensor* const>, std::span<int64_t>, std::span<ir::Tensor>) override {
    return Status::ok();
  }
  size_t code_bytes() const override { return 64; }
  // It has no runtime checks (as a pointwise LLVM kernel has none): nothing
  // stands between the dispatch and it.
  bool may_use_reference() const override { return false; }
};

class NullBackend final : public backends::Backend {
 public:
  const char* name() const override { return "null"; }
  std::string target() const override { return "null"; }
  Expected<std::unique_ptr<backends::Kernel>> compile(const ir::SpecializedGraphPtr&, const backends::CompileRequest& r) override {
    if (r.quick) return no_quick_tier();
    return std::unique_ptr<backends::Kernel>(new NullKernel());
  }
};

struct Call {
  std::vector<ir::Tensor> tensors;
  std::vector<DLTensor> dl;
  std::vector<const DLTensor*> ptrs;
};

void BM_DispatchHit(benchmark::State& state) {
  const int entries = static_cast<int>(state.range(0));
  policy::Config config;
  config.policy.mode = "always_static";
  config.policy.cache_size_limit = 1000;
  config.log.recompiles = false;
  auto jit = std::move(runtime::Jit::create(config, std::make_unique<NullBackend>())).value();
  runtime::CallSite& site = jit->site("bench");
  runtime::TraceFn trace = [](trace::Tracer& t) -> Status {
    auto xy = SJ_TRY(t.op(ir::Op::kMul, {t.input(0), t.input(1)}));
    auto s = SJ_TRY(t.op(ir::Op::kAdd, {xy, t.input(2)}));
    return t.output(SJ_TRY(t.op(ir::Op::kSum, {s})));
  };
  std::vector<Call> calls(entries);
  std::vector<ir::Tensor> out;
  for (int k = 0; k < entries; ++k) {
    Call& c = calls[k];
    for (int i = 0; i < 3; ++i) c.tensors.push_back(ir::Tensor::empty(ir::DType::kF32, {2 + k, 4, 8}));
    for (const ir::Tensor& t : c.tensors) c.dl.push_back(t.dl());
    for (const DLTensor& d : c.dl) c.ptrs.push_back(&d);
    if (!site.call(runtime::Args(c.ptrs.data(), 3), trace, out).is_ok()) state.SkipWithError("warm-up call failed");
  }
  if (site.num_entries() != static_cast<size_t>(entries)) state.SkipWithError("unexpected number of entries");
  int k = 0;
  for (auto _ : state) {
    Status s = site.call(runtime::Args(calls[k].ptrs.data(), 3), trace, out);
    benchmark::DoNotOptimize(s);
    if (++k == entries) k = 0;
  }
  state.counters["entries"] = entries;
}
BENCHMARK(BM_DispatchHit)->Arg(1)->Arg(8)->Arg(64);

// The GuardTree lookup alone, on the same guard sets as above.
void BM_GuardTreeLookup(benchmark::State& state) {
  const int entries = static_cast<int>(state.range(0));
  std::vector<Call> calls(entries);
  guards::GuardTree tree;
  for (int k = 0; k < entries; ++k) {
    Call& c = calls[k];
    for (int i = 0; i < 3; ++i) c.tensors.push_back(ir::Tensor::empty(ir::DType::kF32, {2 + k, 4, 8}));
    for (const ir::Tensor& t : c.tensors) c.dl.push_back(t.dl());
    for (const DLTensor& d : c.dl) c.ptrs.push_back(&d);
    std::vector<guards::Guard> gs;
    for (int i = 0; i < 3; ++i) {
      gs.push_back({guards::Kind::kDType, sym::Origin::kStructural, i, -1, -1, -1, ir::dl_word(ir::to_dl(ir::DType::kF32))});
      gs.push_back({guards::Kind::kRank, sym::Origin::kStructural, i, -1, -1, -1, 3});
      gs.push_back({guards::Kind::kDevice, sym::Origin::kStructural, i, -1, -1, -1, kDLCPU, 0});
    }
    for (int i = 0; i < 3; ++i) gs.push_back({guards::Kind::kContiguous, sym::Origin::kLayout, i});
    gs.push_back({guards::Kind::kDimEq, sym::Origin::kPolicy, 0, 0, -1, -1, 2 + k});
    gs.push_back({guards::Kind::kDimEq, sym::Origin::kPolicy, 0, 1, -1, -1, 4});
    gs.push_back({guards::Kind::kDimEq, sym::Origin::kPolicy, 0, 2, -1, -1, 8});
    for (int i = 1; i < 3; ++i) {
      for (int d = 0; d < 3; ++d) gs.push_back({guards::Kind::kDimsEq, sym::Origin::kBroadcast, i, d, 0, d});
    }
    tree.add(k, guards::GuardSet(3, gs));
  }
  int k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tree.lookup(runtime::Args(calls[k].ptrs.data(), 3)));
    if (++k == entries) k = 0;
  }
}
BENCHMARK(BM_GuardTreeLookup)->Arg(1)->Arg(64);

}  // namespace

BENCHMARK_MAIN();
