// The LLVM backend's kernels, each measured against its baseline in the
// same benchmark, alternating, so every ratio comes from one run:
//   - a fused chain of 10 pointwise ops over 64 MiB of f32 vs memcpy of the
//     same bytes (target: chain bandwidth >= 80% of memcpy's);
//   - dynamic vs static kernels of one graph on the same shapes, for
//     pointwise, sum, softmax, layer_norm, attention and matmul+bias+gelu
//     (target <= 1.10 for softmax, layer_norm and attention; 1.15 for the rest);
//   - matmul+bias+gelu vs the matmul alone (target >= 95%);
//   - the backend's own GEMM (B packed, then multiplied) vs OpenBLAS's
//     sgemm, one thread, on the MiniLM encoder's products; and for 16 and
//     64 rows, B streamed from memory;
//   - one query row's attention products (a decode step) vs OpenBLAS's
//     matrix-vector products;
//   - compile latency of the 10-op kernel (target: median < 20 ms).
// Kernels are run directly (Backend::compile, Kernel::run): no dispatch.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "backends/cpu/gemm.h"
#include "backends/cpu/query_row.h"
#include "backends/cpu/row_product.h"
#include "backends/cpu/huge_pages.h"
#include "bench/bench_util.h"

namespace shapejit {
namespace {

using Clock = std::chrono::steady_clock;
using bench::chain10;

struct Compiled {
  std::unique_ptr<backends::Kernel> kernel;
  std::vector<ir::Tensor> inputs, outputs;
  std::vector<DLTensor> dl;
  std::vector<const DLTensor*> args;
  std::vector<int64_t> symbols;

  void run() {
    Status s = kernel->run({}, args, symbols, outputs);
    if (!s.is_ok()) std::abort();
  }
};

backends::Backend& llvm_backend() {
  static std::unique_ptr<backends::Backend> b = [] {
    auto r = backends::make_llvm_backend(2);
    if (!r.is_ok()) std::abort();
    return std::move(r).value();
  }();
  return *b;
}

// Compiles `json` for inputs of `shapes`; `dynamic` leaves every dim a
// symbol, otherwise each is bound to its value (as always_static does).
Compiled compile(const std::string& json, const std::vector<std::vector<int64_t>>& shapes, bool dynamic) {
  Compiled c;
  const bench::Specialized s = bench::specialize(json, shapes, dynamic);
  const ir::Graph& g = *s.graph->graph;
  c.kernel = std::move(llvm_backend().compile(s.graph, {})).value();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-2, 2);
  for (size_t i = 0; i < shapes.size(); ++i) {
    c.inputs.push_back(ir::Tensor::empty(g.inputs[i].dtype, shapes[i]));
    float* p = c.inputs.back().ptr<float>();
    for (int64_t k = 0; k < c.inputs.back().numel(); ++k) p[k] = u(rng);
  }
  for (const ir::Tensor& t : c.inputs) c.dl.push_back(t.dl());
  for (const DLTensor& d : c.dl) c.args.push_back(&d);
  c.symbols = s.symbols;
  bench::allocate_outputs(llvm_backend(), *s.graph, c.args, c.symbols, c.outputs);
  c.run();
  return c;
}

double seconds(const std::function<void()>& f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Alternates a and b each iteration; reports both times and b's time over a's.
void compare(benchmark::State& state, const std::function<void()>& a, const std::function<void()>& b, const char* a_name, const char* b_name) {
  a();
  b();
  std::vector<double> ta, tb;
  for (auto _ : state) {
    ta.push_back(seconds(a));
    tb.push_back(seconds(b));
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  state.counters[std::string(a_name) + "_ms"] = median(ta) * 1e3;
  state.counters[std::string(b_name) + "_ms"] = median(tb) * 1e3;
  state.counters[std::string(b_name) + "/" + a_name] = median(tb) / median(ta);
}


void BM_Chain10VsMemcpy64MiB(benchmark::State& state) {
  const int64_t n = (64 << 20) / 4;
  Compiled c = compile(chain10("n"), {{n}}, /*dynamic=*/true);
  std::vector<char> src(64 << 20, 1), dst(64 << 20);
  compare(state, [&] { std::memcpy(dst.data(), src.data(), src.size()); benchmark::DoNotOptimize(dst.data()); },
          [&] { c.run(); }, "memcpy", "chain");
  double chain_ms = state.counters["chain_ms"], memcpy_ms = state.counters["memcpy_ms"];
  state.counters["memcpy_GBps"] = 2.0 * 64 * (1 << 20) / (memcpy_ms * 1e6);
  state.counters["chain_GBps"] = 2.0 * 64 * (1 << 20) / (chain_ms * 1e6);
  state.counters["chain_bw/memcpy_bw"] = memcpy_ms / chain_ms;
}
BENCHMARK(BM_Chain10VsMemcpy64MiB)->Iterations(20)->Unit(benchmark::kMillisecond);

void dynamic_vs_static(benchmark::State& state, const std::string& json, const std::vector<std::vector<int64_t>>& shapes) {
  Compiled s = compile(json, shapes, false), d = compile(json, shapes, true);
  compare(state, [&] { s.run(); }, [&] { d.run(); }, "static", "dynamic");
}

void BM_DynamicVsStatic_Pointwise(benchmark::State& state) { dynamic_vs_static(state, chain10("n"), {{1 << 22}}); }
BENCHMARK(BM_DynamicVsStatic_Pointwise)->Iterations(30)->Unit(benchmark::kMillisecond);

void BM_DynamicVsStatic_Sum(benchmark::State& state) {
  dynamic_vs_static(state, R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "h"]}],
    "nodes": [{"op": "sum", "in": ["x"], "out": "y", "attrs": {"axes": [-1]}}], "outputs": ["y"]})",
                    {{4096, 1024}});
}
BENCHMARK(BM_DynamicVsStatic_Sum)->Iterations(30)->Unit(benchmark::kMillisecond);

// Over the first axis: the accumulators run along the contiguous one.
void BM_DynamicVsStatic_SumAxis0(benchmark::State& state) {
  dynamic_vs_static(state, R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "h"]}],
    "nodes": [{"op": "sum", "in": ["x"], "out": "y", "attrs": {"axes": [0]}}], "outputs": ["y"]})",
                    {{4096, 1024}});
}
BENCHMARK(BM_DynamicVsStatic_SumAxis0)->Iterations(30)->Unit(benchmark::kMillisecond);

void BM_DynamicVsStatic_Softmax(benchmark::State& state) {
  dynamic_vs_static(state, R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "h"]}],
    "nodes": [{"op": "softmax", "in": ["x"], "out": "y"}], "outputs": ["y"]})",
                    {{4096, 1024}});
}
BENCHMARK(BM_DynamicVsStatic_Softmax)->Iterations(20)->Unit(benchmark::kMillisecond);

void BM_DynamicVsStatic_LayerNorm(benchmark::State& state) {
  dynamic_vs_static(state, R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["b", "h"]},
      {"name": "w", "dtype": "f32", "shape": ["h"]}, {"name": "c", "dtype": "f32", "shape": ["h"]}],
    "nodes": [{"op": "layer_norm", "in": ["x", "w", "c"], "out": "y"}], "outputs": ["y"]})",
                    {{4096, 1024}, {1024}, {1024}});
}
BENCHMARK(BM_DynamicVsStatic_LayerNorm)->Iterations(20)->Unit(benchmark::kMillisecond);

// An encoder's attention: 8 sentences, 12 heads of 32, 128 positions, a
// padding bias; one fused step (loops::AttentionStep).
void BM_DynamicVsStatic_Attention(benchmark::State& state) {
  dynamic_vs_static(state, R"({"inputs": [{"name": "q", "dtype": "f32", "shape": ["b", "h", "t", "d"]}, {"name": "k", "dtype": "f32", "shape": ["b", "h", "t", "d"]},
      {"name": "v", "dtype": "f32", "shape": ["b", "h", "t", "d"]}, {"name": "bias", "dtype": "f32", "shape": ["b", 1, 1, "t"]}],
    "nodes": [{"op": "transpose", "in": ["k"], "out": "kt", "attrs": {"dim0": -1, "dim1": -2}}, {"op": "matmul", "in": ["q", "kt"], "out": "s"},
              {"op": "mul", "in": ["s", 0.17677669529663687], "out": "s1"}, {"op": "add", "in": ["s1", "bias"], "out": "s2"},
              {"op": "softmax", "in": ["s2"], "out": "p", "attrs": {"dim": -1}}, {"op": "matmul", "in": ["p", "v"], "out": "y"}], "outputs": ["y"]})",
                    {{8, 12, 128, 32}, {8, 12, 128, 32}, {8, 12, 128, 32}, {8, 1, 1, 128}});
}
BENCHMARK(BM_DynamicVsStatic_Attention)->Iterations(30)->Unit(benchmark::kMillisecond);

std::string mlp(bool epilogue) {
  return std::string(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["t", "k"]}, {"name": "w", "dtype": "f32", "shape": ["k", "n"]},
      {"name": "b", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "h"})") +
         (epilogue ? R"(, {"op": "add", "in": ["h", "b"], "out": "hb"}, {"op": "gelu", "in": ["hb"], "out": "y"}], "outputs": ["y"]})"
                   : R"(], "outputs": ["h"]})");
}
const std::vector<std::vector<int64_t>> kMlpShapes = {{512, 2048}, {2048, 2048}, {2048}};

void BM_DynamicVsStatic_MatmulBiasGelu(benchmark::State& state) { dynamic_vs_static(state, mlp(true), kMlpShapes); }
BENCHMARK(BM_DynamicVsStatic_MatmulBiasGelu)->Iterations(10)->Unit(benchmark::kMillisecond);

void BM_MatmulEpilogueVsBlas(benchmark::State& state) {
  Compiled blas = compile(mlp(false), kMlpShapes, true), fused = compile(mlp(true), kMlpShapes, true);
  compare(state, [&] { blas.run(); }, [&] { fused.run(); }, "blas", "fused");
  state.counters["blas/fused"] = 1.0 / state.counters["fused/blas"];
}
BENCHMARK(BM_MatmulEpilogueVsBlas)->Iterations(10)->Unit(benchmark::kMillisecond);

// Random floats in [-1, 1), from a fixed seed.
std::vector<float> random_floats(int64_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = u(rng);
  return v;
}

// C = A B by OpenBLAS's sgemm on the calling thread, all row-major and dense.
void openblas_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(k), b, static_cast<int>(n), 0.0f, c, static_cast<int>(n));
}

// m x k times k x n, row-major, on the calling thread: the encoder's
// projections and feed-forward products at 256 tokens, and a ragged 61.
void BM_GemmVsOpenBlas(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  std::mt19937 rng(3);
  const std::vector<float> a = random_floats(m * k, rng), b = random_floats(k * n, rng);
  std::vector<float> c(static_cast<size_t>(m * n));
  std::vector<float> packed(static_cast<size_t>(backends::cpu::packed_size<float>(k, n)));
  compare(
      state, [&] { openblas_sgemm(m, n, k, a.data(), b.data(), c.data()); },
      [&] {
        backends::cpu::pack<float>(k, n, b.data(), n, 1, packed.data(), 0, k);
        backends::cpu::multiply(m, n, k, a.data(), k, 1, packed.data(), c.data(), n, false);
      },
      "openblas", "ours");
}
BENCHMARK(BM_GemmVsOpenBlas)
    ->Args({256, 384, 384})
    ->Args({256, 384, 1536})
    ->Args({256, 1536, 384})
    ->Args({61, 384, 1536})
    ->Iterations(30)
    ->Unit(benchmark::kMillisecond);

// The same products for few rows, which stream B (cpu::multiply_streaming:
// each panel packed just before its tiles), with B read from memory: each
// timed call runs the product over 18 copies of B (42 MB for 384 x 1536,
// past the 32 MB L3), as a sentence's forward pass reads its layers'
// weights. Reported per product.
void BM_StreamedGemmVsOpenBlas(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2), copies = 18;
  std::mt19937 rng(3);
  const std::vector<float> a = random_floats(m * k, rng);
  std::vector<float> c(static_cast<size_t>(m * n));
  std::vector<std::vector<float>> bs;
  for (int64_t i = 0; i < copies; ++i) bs.push_back(random_floats(k * n, rng));
  compare(
      state,
      [&] {
        for (const std::vector<float>& b : bs) openblas_sgemm(m, n, k, a.data(), b.data(), c.data());
      },
      [&] {
        for (const std::vector<float>& b : bs) backends::cpu::multiply_streaming(m, n, k, a.data(), k, 1, b.data(), n, 1, c.data(), n, false);
      },
      "openblas", "ours");
  for (const char* name : {"openblas_ms", "ours_ms"}) state.counters[name] = state.counters[name] / static_cast<double>(copies);
}
BENCHMARK(BM_StreamedGemmVsOpenBlas)
    ->Args({16, 384, 1536})
    ->Args({16, 1536, 384})
    ->Args({64, 384, 1536})
    ->Args({64, 1536, 384})
    ->Iterations(30)
    ->Unit(benchmark::kMillisecond);

// Few rows against a B packed beforehand (frozen weights: packed once, kept
// across calls) and against B read where it lies (cpu::multiply_streaming),
// each over 18 copies of B as a forward pass reads its layers' weights.
// Reported per product.
void BM_PrepackedVsStreamedGemm(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2), copies = 18;
  std::mt19937 rng(3);
  const std::vector<float> a = random_floats(m * k, rng);
  std::vector<float> c(static_cast<size_t>(m * n));
  std::vector<std::vector<float>> bs, packed;
  for (int64_t i = 0; i < copies; ++i) {
    bs.push_back(random_floats(k * n, rng));
    packed.emplace_back(static_cast<size_t>(backends::cpu::packed_size<float>(k, n)));
    backends::cpu::pack<float>(k, n, bs.back().data(), n, 1, packed.back().data(), 0, k);
  }
  compare(
      state,
      [&] {
        for (const std::vector<float>& b : bs) backends::cpu::multiply_streaming(m, n, k, a.data(), k, 1, b.data(), n, 1, c.data(), n, false);
      },
      [&] {
        for (const std::vector<float>& p : packed) backends::cpu::multiply(m, n, k, a.data(), k, 1, p.data(), c.data(), n, false);
      },
      "streamed", "prepacked");
  for (const char* name : {"streamed_ms", "prepacked_ms"}) state.counters[name] = state.counters[name] / static_cast<double>(copies);
}
BENCHMARK(BM_PrepackedVsStreamedGemm)
    ->Args({16, 384, 1536})
    ->Args({16, 1536, 384})
    ->Args({16, 384, 384})
    ->Args({24, 384, 1536})
    ->Args({24, 1536, 384})
    ->Args({24, 384, 384})
    ->Args({48, 384, 1536})
    ->Iterations(30)
    ->Unit(benchmark::kMillisecond);

// A decode step's attention products for one query row against OpenBLAS's
// matrix-vector products (what the attention step called before): the
// scores of `heads` heads over `keys` keys of `d` floats (a cache,
// [heads, keys, d]), then the values weighted by them. Reported in us per
// head.
void BM_QueryRowVsSgemv(benchmark::State& state) {
  const int64_t keys = state.range(0), d = state.range(1), heads = state.range(2);
  std::mt19937 rng(3);
  const std::vector<float> q = random_floats(heads * d, rng), k = random_floats(heads * keys * d, rng), v = random_floats(heads * keys * d, rng);
  std::vector<float> s(static_cast<size_t>(keys)), acc(static_cast<size_t>(d));
  openblas_set_num_threads(1);
  compare(
      state,
      [&] {
        for (int64_t h = 0; h < heads; ++h) {
          const float* kh = k.data() + h * keys * d;
          cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(keys), static_cast<int>(d), 1.0f, kh, static_cast<int>(d), q.data() + h * d, 1,
                      0.0f, s.data(), 1);
          cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(keys), static_cast<int>(d), 1.0f, v.data() + h * keys * d, static_cast<int>(d),
                      s.data(), 1, 1.0f, acc.data(), 1);
        }
      },
      [&] {
        for (int64_t h = 0; h < heads; ++h) {
          backends::cpu::key_dots(keys, d, q.data() + h * d, k.data() + h * keys * d, d, s.data());
          backends::cpu::add_weighted_rows(keys, d, s.data(), v.data() + h * keys * d, d, acc.data());
        }
      },
      "sgemv", "rows");
  for (const char* name : {"sgemv", "rows"}) {
    const std::string ms = std::string(name) + "_ms";
    state.counters[std::string(name) + "_us"] = state.counters[ms] * 1e3 / static_cast<double>(heads);
    state.counters.erase(ms);
  }
}
BENCHMARK(BM_QueryRowVsSgemv)
    ->Args({1025, 16, 4})
    ->Args({4097, 16, 4})
    ->Args({1025, 64, 12})
    ->Args({129, 64, 12})
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);

// A decode step's single-row products over a LLaMA-style model's weights
// (per layer: four dim x dim projections, two dim x hidden, one hidden x
// dim; then the dim x vocab head), every matrix its own, in the model's
// order: all by OpenBLAS's sgemv (what a single row went to before),
// against the backend's choice (row_times_matrix for B of at most
// kSpillingPassColumns columns, sgemv for wider ones). Reported in ms per
// step, and the weights' GB/s.
// A decoder's weights, k x n each, in the order a step reads them: per
// layer four dim x dim projections, two dim x hidden, one hidden x dim;
// then the dim x vocab head (none for vocab 0).
std::vector<std::pair<int64_t, int64_t>> decoder_weight_shapes(int64_t dim, int64_t hidden, int64_t layers, int64_t vocab) {
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t l = 0; l < layers; ++l) {
    for (int q = 0; q < 4; ++q) shapes.emplace_back(dim, dim);
    shapes.emplace_back(dim, hidden), shapes.emplace_back(dim, hidden), shapes.emplace_back(hidden, dim);
  }
  if (vocab > 0) shapes.emplace_back(dim, vocab);
  return shapes;
}

void BM_RowProductsVsSgemv(benchmark::State& state) {
  if (!backends::cpu::row_product_available()) return state.SkipWithError("no AVX-512 on this host");
  const int64_t dim = state.range(0), hidden = state.range(1), layers = state.range(2), vocab = state.range(3);
  const std::vector<std::pair<int64_t, int64_t>> shapes = decoder_weight_shapes(dim, hidden, layers, vocab);
  std::mt19937 rng(3);
  std::vector<std::vector<float>> bs;
  double bytes = 0;
  for (const auto& [k, n] : shapes) bs.push_back(random_floats(k * n, rng)), bytes += 4.0 * static_cast<double>(k * n);
  const std::vector<float> x = random_floats(std::max(dim, hidden), rng);
  std::vector<float> y(static_cast<size_t>(std::max({dim, hidden, vocab})));
  openblas_set_num_threads(1);
  compare(
      state,
      [&] {
        for (size_t i = 0; i < shapes.size(); ++i) {
          const auto [k, n] = shapes[i];
          cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(k), static_cast<int>(n), 1.0f, bs[i].data(), static_cast<int>(n), x.data(), 1, 0.0f,
                      y.data(), 1);
        }
      },
      [&] {
        for (size_t i = 0; i < shapes.size(); ++i) {
          const auto [k, n] = shapes[i];
          if (n > backends::cpu::kSpillingPassColumns<float>) {
            cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(k), static_cast<int>(n), 1.0f, bs[i].data(), static_cast<int>(n), x.data(), 1,
                        0.0f, y.data(), 1);
          } else {
            backends::cpu::row_times_matrix(n, k, x.data(), 1, bs[i].data(), n, y.data(), false);
          }
        }
      },
      "sgemv", "rows");
  for (const char* name : {"sgemv", "rows"}) state.counters[std::string(name) + "_GBps"] = bytes / (state.counters[std::string(name) + "_ms"] * 1e6);
}
BENCHMARK(BM_RowProductsVsSgemv)
    ->Args({288, 768, 6, 4096})  // examples/llama_numpy.py's model: 29 MB, most of it in L3 from one step to the next
    ->Args({384, 1536, 12, 0})    // a MiniLM-wide decoder of 12 layers, 113 MB: from memory
    ->Iterations(40)
    ->Unit(benchmark::kMillisecond);

// The same single-row products (row_times_matrix) over weights on 4 KiB
// pages and over a copy that cpu::HugePageBacking moved onto 2 MiB pages,
// as a kernel does with weights passed as inputs once they recur. Each
// side's weights lie one after another in a mapping of their own. The
// sides alternate, 8 decode steps at a time: the first step of each run
// reads the weights from memory (the LLaMA example's 21 MB of layers,
// twice, past the 32 MB L3), the others mostly from L3, as a decode loop
// does. Reported in ms per step, the weights' GB/s, and the extents
// collapsed.
class WeightMapping {
 public:
  explicit WeightMapping(size_t bytes) : bytes_(bytes), base_(backends::cpu::map_huge_aligned(bytes)) {}
  ~WeightMapping() {
    if (base_) ::munmap(base_, bytes_);
  }
  char* base() const { return base_; }

 private:
  size_t bytes_;
  char* base_;
};

void BM_RowProductsOnHugePages(benchmark::State& state) {
  if (!backends::cpu::row_product_available()) return state.SkipWithError("no AVX-512 on this host");
  const std::vector<std::pair<int64_t, int64_t>> shapes = decoder_weight_shapes(state.range(0), state.range(1), state.range(2), 0);
  size_t bytes = 0;
  for (const auto& [k, n] : shapes) bytes += static_cast<size_t>(k * n) * sizeof(float);
  WeightMapping small(bytes), huge(bytes);
  if (!small.base() || !huge.base()) return state.SkipWithError("no memory");
  ::madvise(small.base(), bytes, MADV_NOHUGEPAGE);  // as NumPy leaves an array under 4 MB
  std::mt19937 rng(3);
  std::vector<const float*> on_small, on_huge;
  size_t at = 0;
  for (const auto& [k, n] : shapes) {
    const std::vector<float> w = random_floats(k * n, rng);
    on_small.push_back(reinterpret_cast<float*>(small.base() + at));
    on_huge.push_back(reinterpret_cast<float*>(huge.base() + at));
    std::memcpy(small.base() + at, w.data(), w.size() * sizeof(float));
    std::memcpy(huge.base() + at, w.data(), w.size() * sizeof(float));
    at += w.size() * sizeof(float);
  }
  backends::cpu::HugePageBacking backing(true);
  const backends::cpu::HugePageBacking::Range whole[] = {{huge.base(), bytes}};
  backing.request(whole);
  while (backing.stats().waiting > 0) backing.work();
  const std::vector<float> x = random_floats(std::max(state.range(0), state.range(1)), rng);
  std::vector<float> y(static_cast<size_t>(std::max(state.range(0), state.range(1))));
  constexpr int kSteps = 8;  // a timed run: the first step reads memory, the others mostly L3
  auto steps = [&](const std::vector<const float*>& ws) {
    for (int r = 0; r < kSteps; ++r) {
      for (size_t i = 0; i < shapes.size(); ++i) {
        const auto [k, n] = shapes[i];
        backends::cpu::row_times_matrix(n, k, x.data(), 1, ws[i], n, y.data(), false);
      }
    }
  };
  compare(state, [&] { steps(on_small); }, [&] { steps(on_huge); }, "small_pages", "huge_pages");
  for (const char* name : {"small_pages", "huge_pages"}) {
    const std::string ms = std::string(name) + "_ms";
    state.counters[ms] = state.counters[ms] / kSteps;
    state.counters[std::string(name) + "_GBps"] = static_cast<double>(bytes) / (state.counters[ms] * 1e6);
  }
  state.counters["extents_collapsed"] = static_cast<double>(backing.stats().collapsed);
}
BENCHMARK(BM_RowProductsOnHugePages)
    ->Args({288, 768, 6})  // examples/llama_numpy.py's layers
    ->Iterations(40)
    ->Unit(benchmark::kMillisecond);

// Each compile on a new backend: a backend keeps the steps it compiled,
// and the same graph again would be a lookup.
void BM_CompileLatency10Op(benchmark::State& state) {
  const ir::SpecializedGraphPtr g = bench::specialize(chain10("n"), {{1000}}, true).graph;
  (void)llvm_backend().compile(g, {});  // LLVM's first-use costs
  std::vector<double> t;
  for (auto _ : state) {
    std::unique_ptr<backends::Backend> fresh = std::move(backends::make_llvm_backend(2)).value();
    t.push_back(seconds([&] { benchmark::DoNotOptimize(fresh->compile(g, {})); }));
  }
  std::sort(t.begin(), t.end());
  state.counters["median_ms"] = t[t.size() / 2] * 1e3;
  state.counters["p90_ms"] = t[t.size() * 9 / 10] * 1e3;
}
BENCHMARK(BM_CompileLatency10Op)->Iterations(50)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shapejit

BENCHMARK_MAIN();
