// The CUDA backend's code generation, which needs no GPU: every op of the
// op set, each graph fully dynamic and fully static, lowered and compiled by
// NVRTC to PTX (compute_90) and to cubin (sm_90, sm_80), with ptxas's
// report of registers and spills; the kernels' results are checked by
// cuda_test.cpp (on a GPU, or on the mock driver).
#include <gtest/gtest.h>

#ifdef SHAPEJIT_HAVE_CUDA

#include <tbb/parallel_for.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "backends/cuda/codegen.h"
#include "backends/cuda/nvrtc.h"
#include "backends/loops/lower.h"
#include "core/ir/infer.h"
#include "tests/support/op_cases.h"
#include "tests/support/test_util.h"

namespace shapejit {
namespace {

namespace cuda = backends::cuda;
namespace loops = backends::loops;
using testing::Case;
using testing::every_op;
using testing::op_case;

Expected<cuda::CudaSource> source_for(const Case& c, bool specialize) {
  ir::Graph g = SJ_TRY(ir::parse_graph(c.graph));
  sym::ShapeEnv env;
  SJ_TRY(ir::infer(g, env, &c.hints));
  if (specialize) {
    for (size_t i = 0; i < env.symbols().size(); ++i) {
      const sym::Symbol& s = env.symbols()[i];
      if (s.hint && !s.unbacked) SJ_TRY(env.bind(static_cast<int>(i), *s.hint, sym::Origin::kPolicy));
    }
  }
  env.set_layouts(std::vector<sym::Layout>(g.inputs.size(), sym::Layout::dense()));
  ir::SpecializedGraphPtr sg = SJ_TRY(ir::specialize(g, env.specialization()));
  loops::LoopProgram p = SJ_TRY(loops::lower(*sg, cuda::lower_options(/*blas=*/true)));
  return cuda::emit_cuda(p);
}

// Every op, each graph compiled three ways: its dynamic kernels to a cubin
// for sm_90 (H100), its static ones to a cubin for sm_80 (A100) and to PTX
// for compute_90 (what a driver newer than NVRTC takes). ptxas's report
// (-v) of each cubin is read: no kernel may spill, and none may need more
// registers than lets kBlocksPerSm blocks of 256 threads share an SM's
// 65,536 (the grids are sized for up to 8 blocks per SM, in waves of at
// least this many), except the spills listed in kKnownSpills, each a save
// around a call that the slow path of a division or of f64 math makes.
TEST(CudaCodegen, EveryOpCompilesWithinItsRegistersDynamicAndStatic) {
  constexpr int kBlocksPerSm = 4;
  constexpr int kMaxRegisters = 65536 / (kBlocksPerSm * cuda::kBlock);
  const std::set<std::string> kKnownSpills = {
      // f64 division (div, sigmoid, the softmax's 1 / sum) and f64 atan and
      // exp2 call out of line for their slow paths; ptxas saves the
      // unrolled four-wide path's live values around the call.
      "div f64 f64 (dynamic, sm_90) s0", "sigmoid f64 (dynamic, sm_90) s0",
      "atan f64 (dynamic, sm_90) s0", "exp2 f64 (dynamic, sm_90) s0", "log_softmax f64 {\"dim\": 1} (dynamic, sm_90) s0_p1",
      // The flattened form's 64-bit division of the index by the row length
      // is a call too.
      "index_select f32 i64 {\"dim\": 1} (dynamic, sm_90) s0",
  };
  const std::vector<Case> cases = every_op();
  std::vector<std::string> failures(cases.size() * 3);
  std::vector<std::vector<std::string>> spills(failures.size());
  std::vector<int> most(failures.size(), 0);
  tbb::parallel_for(size_t{0}, failures.size(), [&](size_t i) {
    const Case& c = cases[i / 3];
    const int way = static_cast<int>(i % 3);
    const bool specialize = way > 0;
    std::string& failed = failures[i];
    const std::string what = c.what + (way == 0 ? " (dynamic, sm_90)" : way == 1 ? " (static, sm_80)" : " (static, compute_90)");
    auto src = source_for(c, specialize);
    if (!src.is_ok()) {
      failed = what + ": " + src.status().to_string();
      return;
    }
    if (way == 2) {
      const bool has_kernels = std::any_of(src->steps.begin(), src->steps.end(),
                                           [](const cuda::StepPlan& s) { return s.kind != cuda::StepPlan::Kind::kMatmul; });
      auto ptx = cuda::nvrtc_compile(src->code, 90, /*ptx=*/true);
      if (!ptx.is_ok()) failed = what + ": " + ptx.status().to_string();
      else if ((ptx->find(".entry") != std::string::npos) != has_kernels) failed = what + ": PTX entries do not match the steps";
      return;
    }
    auto kernels = cuda::nvrtc_resources(src->code, way == 0 ? 90 : 80);
    if (!kernels.is_ok()) {
      failed = what + ": " + kernels.status().to_string();
      return;
    }
    for (const cuda::KernelResources& k : *kernels) {
      most[i] = std::max(most[i], k.registers);
      if (k.registers > kMaxRegisters) failed += what + " " + k.name + ": " + std::to_string(k.registers) + " registers\n";
      if (k.spill_stores || k.spill_loads) spills[i].push_back(what + " " + k.name);
    }
  });
  std::set<std::string> seen;
  for (size_t i = 0; i < failures.size(); ++i) {
    EXPECT_TRUE(failures[i].empty()) << failures[i];
    for (const std::string& s : spills[i]) {
      seen.insert(s);
      EXPECT_TRUE(kKnownSpills.count(s)) << "spills: " << s;
    }
  }
  for (const std::string& s : kKnownSpills) EXPECT_TRUE(seen.count(s)) << "no longer spills (take it off the list): " << s;
  std::printf("the most registers a kernel uses: %d (at most %d)\n", *std::max_element(most.begin(), most.end()), kMaxRegisters);
}

TEST(CudaCodegen, OlderArchitecturesCompileToo) {
  std::vector<int> archs = cuda::nvrtc_archs();
  ASSERT_FALSE(archs.empty());
  const Case c = op_case("softmax", {{"f32", {"n", "m"}}}, {{4, 33}}, "", R"({"dim": -1})");
  auto src = source_for(c, false);
  ASSERT_TRUE(src.is_ok()) << src.status().to_string();
  for (int arch : {75, 80, 89}) {
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) continue;
    auto cubin = cuda::nvrtc_compile(src->code, arch, false);
    EXPECT_TRUE(cubin.is_ok()) << "sm_" << arch << ": " << cubin.status().to_string();
  }
}

TEST(CudaCodegen, DynamicSymbolsAreParametersStaticOnesConstants) {
  const Case c = op_case("exp", {{"f32", {"n", "m"}}}, {{3, 37}});
  auto dynamic = source_for(c, false), fixed = source_for(c, true);
  ASSERT_TRUE(dynamic.is_ok() && fixed.is_ok());
  EXPECT_NE(dynamic->code.find("const i64 E = (S0 * S1)"), std::string::npos) << dynamic->code;
  EXPECT_NE(fixed->code.find("const i64 E = (111LL)"), std::string::npos) << fixed->code;
  ASSERT_EQ(dynamic->steps.size(), 1u);
  EXPECT_EQ(dynamic->steps[0].kind, cuda::StepPlan::Kind::kPointwise);
}

TEST(CudaCodegen, ShapesOfEachStepKind) {
  auto plan = [](const Case& c) {
    auto src = source_for(c, false);
    EXPECT_TRUE(src.is_ok()) << src.status().to_string();
    return src.is_ok() ? src->steps : std::vector<cuda::StepPlan>{};
  };
  auto softmax = plan(op_case("softmax", {{"f32", {"n", "m"}}}, {{4, 33}}, "", R"({"dim": -1})"));
  ASSERT_EQ(softmax.size(), 1u);
  EXPECT_EQ(softmax[0].kind, cuda::StepPlan::Kind::kRows);
  EXPECT_EQ(softmax[0].phases, 3);
  EXPECT_EQ(softmax[0].slots, 2);  // the max, the sum of exponentials
  auto mm = plan(op_case("matmul", {{"f32", {"n", "k"}}, {"f32", {"k", "m"}}}, {{5, 7}, {7, 3}}));
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(mm[0].kind, cuda::StepPlan::Kind::kMatmul);
}

// layer_norm over a dynamic row: `sum / n` is written once per row, before
// the loop that uses it, and divides by a reciprocal of n (computed once per
// launch); static n = 1024 is left to the compiler (a product by 2^-10), and
// a divisor loaded per element stays a division. Measured on an H200: the
// dynamic kernel was 1.20x the static one when each thread divided per row.
TEST(CudaCodegen, RowInvariantsLeaveTheLoopAndLaunchInvariantDivisorsUseAReciprocal) {
  const Case ln = op_case("layer_norm", {{"f32", {"n", "m"}}}, {{4, 1024}});
  auto dynamic = source_for(ln, false), fixed = source_for(ln, true);
  ASSERT_TRUE(dynamic.is_ok() && fixed.is_ok());
  const std::string& code = dynamic->code;
  const size_t mean = code.find("= sj_div_inv(x1_2, x1_3);");
  ASSERT_NE(mean, std::string::npos) << code;
  const size_t loop = code.find("for (i64 f = t", mean);
  ASSERT_NE(loop, std::string::npos);
  EXPECT_EQ(code.find("x1_0 = B0[", mean), code.find("x1_0 = B0[", loop)) << "the load stays in the loop";
  EXPECT_EQ(fixed->code.find("sj_div_inv(x1_2"), std::string::npos) << "1024 is a power of two";
  auto div = source_for(op_case("div", {{"f32", {"n"}}, {"f32", {"n"}}}, {{5}, {5}}), false);
  ASSERT_TRUE(div.is_ok());
  EXPECT_EQ(div->code.find("sj_div_inv(x0_"), std::string::npos) << div->code;
}

// A kernel declares the buffers and symbols it names, not the program's:
// ten unrelated steps (each its own input and output, two symbols) are ten
// kernels of two buffers and two symbols each. Declaring every one in every
// kernel made the MiniLM-size encoder's source 2 MB (278 KB now), NVRTC 15.7
// s on it against 10.3 s.
TEST(CudaCodegen, AKernelDeclaresWhatItNames) {
  std::string inputs, nodes, outputs;
  ir::ShapeHints hints;
  for (int i = 0; i < 10; ++i) {
    const std::string k = std::to_string(i);
    inputs += std::string(i ? ", " : "") + R"({"name": "x)" + k + R"(", "dtype": "f32", "shape": ["n)" + k + R"(", "m)" + k + R"("]})";
    nodes += std::string(i ? ", " : "") + R"({"op": "exp", "in": ["x)" + k + R"("], "out": "y)" + k + R"("})";
    outputs += std::string(i ? ", " : "") + "\"y" + k + "\"";
    hints.push_back({3 + i, 5 + i});
  }
  const Case c{"ten steps", R"({"inputs": [)" + inputs + R"(], "nodes": [)" + nodes + R"(], "outputs": [)" + outputs + "]}", hints};
  auto src = source_for(c, false);
  ASSERT_TRUE(src.is_ok()) << src.status().to_string();
  ASSERT_EQ(src->steps.size(), 10u);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = src->code.find(what); at != std::string::npos; at = src->code.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("= (const float*)a.b["), 10u) << src->code;
  EXPECT_EQ(count("= (float*)a.b["), 10u);
  EXPECT_EQ(count("= a.s["), 20u);
  EXPECT_TRUE(cuda::nvrtc_compile(src->code, 90, true).is_ok());
}

TEST(CudaCodegen, NvrtcErrorsCarryTheLogAndTheSourcePath) {
  const std::string bad = std::string(cuda::prelude()) + "extern \"C\" __global__ void k() { undeclared_thing = 1; }\n";
  auto r = cuda::nvrtc_compile(bad, 90, false);
  ASSERT_FALSE(r.is_ok());
  const std::string msg = r.status().message();
  EXPECT_NE(msg.find("undeclared_thing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("compiling for sm_90 (source: "), std::string::npos) << msg;
  const size_t at = msg.find("(source: ");
  ASSERT_NE(at, std::string::npos) << msg;
  const std::string path = msg.substr(at + 9, msg.find(')', at) - at - 9);
  std::ifstream kept(path);
  ASSERT_TRUE(kept.good()) << path;
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, bad);
}

}  // namespace
}  // namespace shapejit

#endif  // SHAPEJIT_HAVE_CUDA
