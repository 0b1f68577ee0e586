// A C++ interpreter's first calls through shapejit's C++ API: y = x * 2 + 1
// traced once and run on three sizes, then the site's counts. Exits 0 when
// every result is right and one trace served every size.
#include <shapejit/jit.h>

#include <cstdio>
#include <vector>

int main() {
  namespace sj = shapejit;
  auto created = sj::runtime::Jit::create(R"({"log": {"recompiles": false}})");
  if (!created.is_ok()) {
    std::fprintf(stderr, "hello_cpp: %s\n", created.status().to_string().c_str());
    return 1;
  }
  std::unique_ptr<sj::runtime::Jit> jit = std::move(created).value();
  sj::runtime::CallSite& site = jit->site("f");
  std::vector<sj::ir::Tensor> outputs;
  for (int64_t n = 3; n <= 5; ++n) {
    std::vector<float> data(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = static_cast<float>(i);
    int64_t shape[1] = {n};
    DLTensor x{};
    x.data = data.data();
    x.device = {kDLCPU, 0};
    x.ndim = 1;
    x.dtype = {kDLFloat, 32, 1};
    x.shape = shape;
    const DLTensor* args[1] = {&x};
    sj::Status s = site.call(args, [](sj::trace::Tracer& t) -> sj::Status {
      auto twice = SJ_TRY(t.op(sj::ir::Op::kMul, {t.input(0), 2.0}));
      auto y = SJ_TRY(t.op(sj::ir::Op::kAdd, {twice, 1.0}));
      return t.output(y);
    }, outputs);
    if (!s.is_ok() || outputs.size() != 1) {
      std::fprintf(stderr, "hello_cpp: call failed: %s\n", s.to_string().c_str());
      return 1;
    }
    const DLTensor y = outputs[0].dl();
    for (int64_t i = 0; i < n; ++i) {
      const float got = static_cast<const float*>(y.data)[i];
      if (got != 2.0f * static_cast<float>(i) + 1.0f) {
        std::fprintf(stderr, "hello_cpp: y[%lld] = %g\n", static_cast<long long>(i), got);
        return 1;
      }
    }
  }
  const sj::runtime::SiteStats stats = site.stats();
  if (stats.traces != 1) {
    std::fprintf(stderr, "hello_cpp: %llu traces for three sizes, expected 1\n", static_cast<unsigned long long>(stats.traces));
    return 1;
  }
  std::printf("hello_cpp: 3 calls right, %llu compile(s)\n", static_cast<unsigned long long>(stats.compiles));
  return 0;
}
