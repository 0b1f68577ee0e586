// The CUDA backend's code generation, which needs no GPU: every op of the
// op set, each graph fully dynamic and fully static, lowered and compiled by
// NVRTC to PTX (compute_90) and to cubin (sm_90, sm_80). CI runs these; the
// kernels' results are checked on a GPU by cuda_test.cpp.
#include <gtest/gtest.h>

#ifdef SHAPEJIT_HAVE_CUDA

#include <tbb/parallel_for.h>

#include <algorithm>
#include <fstream>

#include "backends/cuda/codegen.h"
#include "backends/cuda/nvrtc.h"
#include "backends/loops/lower.h"
#include "jit/ir/infer.h"
#include "tests/test_util.h"

namespace shapejit {
namespace {

namespace gpu = backends::gpu;
namespace loops = backends::loops;

struct Case {
  std::string what, graph;
  ir::ShapeHints hints;
};

Expected<gpu::CudaSource> source_for(const Case& c, bool specialize) {
  ir::Graph g = SJ_TRY(ir::parse_graph(c.graph));
  sym::ShapeEnv env;
  SJ_TRY(ir::infer(g, env, &c.hints));
  if (specialize) {
    for (size_t i = 0; i < env.symbols().size(); ++i) {
      const sym::Symbol& s = env.symbols()[i];
      if (s.hint && !s.unbacked) SJ_TRY(env.bind(static_cast<int>(i), *s.hint, sym::Origin::kPolicy));
    }
  }
  env.set_contiguous(std::vector<bool>(g.inputs.size(), true));
  loops::LowerOptions options;
  options.tile = 0;
  loops::Program p = SJ_TRY(loops::lower(g, env.specialization(), options));
  return gpu::emit_cuda(p);
}

// A graph of one op over inputs a, b, c with symbolic dims (names) and hints.
Case op_case(const std::string& op, const std::vector<std::pair<std::string, std::vector<std::string>>>& ins,
             const ir::ShapeHints& hints, const std::string& extra = "", const std::string& attrs = "") {
  std::string inputs, names;
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string shape;
    for (size_t d = 0; d < ins[i].second.size(); ++d) {
      const std::string& s = ins[i].second[d];
      shape += (d ? ", " : "") + (std::isdigit(static_cast<unsigned char>(s[0])) ? s : "\"" + s + "\"");
    }
    const std::string name(1, static_cast<char>('a' + i));
    inputs += std::string(i ? ", " : "") + R"({"name": ")" + name + R"(", "dtype": ")" + ins[i].first + R"(", "shape": [)" + shape + "]}";
    names += std::string(i ? ", " : "") + "\"" + name + "\"";
  }
  if (!extra.empty()) names += ", " + extra;
  std::string node = R"({"op": ")" + op + R"(", "in": [)" + names + R"(], "out": "y")" + (attrs.empty() ? "" : R"(, "attrs": )" + attrs) + "}";
  std::string what = op;
  for (const auto& in : ins) what += " " + in.first;
  return {what + (attrs.empty() ? "" : " " + attrs), R"({"inputs": [)" + inputs + R"(], "nodes": [)" + node + R"(], "outputs": ["y"]})", hints};
}

std::vector<Case> every_op() {
  std::vector<Case> cases;
  for (const char* t : {"f32", "f64"}) {
    for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu", "sin", "cos", "erf", "gelu"}) {
      cases.push_back(op_case(op, {{t, {"n", "m"}}}, {{3, 37}}));
    }
    cases.push_back(op_case("gelu", {{t, {"n"}}}, {{37}}, "", R"({"approximate": "tanh"})"));
    cases.push_back(op_case("softmax", {{t, {"n", "m"}}}, {{4, 33}}, "", R"({"dim": -1})"));
    cases.push_back(op_case("softmax", {{t, {"n", "m", "k"}}}, {{4, 5, 6}}, "", R"({"dim": 1})"));
    cases.push_back(op_case("log_softmax", {{t, {"n", "m"}}}, {{4, 33}}, "", R"({"dim": 1})"));
    cases.push_back(op_case("layer_norm", {{t, {"n", "m"}}, {t, {"m"}}, {t, {"m"}}}, {{4, 33}, {33}, {33}}));
    cases.push_back(op_case("layer_norm", {{t, {"n", "k", "m"}}}, {{4, 5, 33}}, "", R"({"axes": [-2, -1], "eps": 0.001})"));
    cases.push_back(op_case("rms_norm", {{t, {"n", "m"}}, {t, {"m"}}}, {{6, 65}, {65}}));
    cases.push_back(op_case("matmul", {{t, {"b", "n", "k"}}, {t, {"k", "m"}}}, {{2, 5, 7}, {7, 3}}));
    cases.push_back(op_case("mean", {{t, {"n", "m"}}}, {{3, 9}}, "", R"({"axes": [0]})"));
  }
  for (const char* t : {"f32", "f64", "i32", "i64"}) {
    for (const char* op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}) {
      cases.push_back(op_case(op, {{t, {"n", "1", "m"}}, {t, {"k", "1"}}}, {{3, 1, 5}, {4, 1}}));
    }
    for (const char* op : {"sum", "max", "min"}) {
      cases.push_back(op_case(op, {{t, {"n", "k", "m"}}}, {{3, 5, 33}}, "", R"({"axes": [1, 2], "keepdim": true})"));
      cases.push_back(op_case(op, {{t, {"n", "m"}}}, {{7, 9}}));
    }
    cases.push_back(op_case("argmax", {{t, {"n", "m"}}}, {{6, 7}}, "", R"({"dim": 0})"));
    cases.push_back(op_case("argmax", {{t, {"n", "m"}}}, {{6, 7}}, "", R"({"dim": 1, "keepdim": true})"));
    cases.push_back(op_case("where", {{"bool", {"n", "1"}}, {t, {"m"}}, {t, {"n", "m"}}}, {{4, 1}, {5}, {4, 5}}));
    cases.push_back(op_case("matmul", {{t, {"n", "k"}}, {t, {"k"}}}, {{5, 7}, {7}}));
  }
  for (const char* t : {"i32", "i64"}) {
    for (const char* op : {"neg", "abs", "relu"}) cases.push_back(op_case(op, {{t, {"n"}}}, {{9}}));
    cases.push_back(op_case("embedding", {{"f32", {"v", "d"}}, {t, {"n", "m"}}}, {{10, 7}, {2, 3}}));
    cases.push_back(op_case("index_select", {{"f32", {"v", "d"}}, {t, {"k"}}}, {{10, 7}, {4}}, "", R"({"dim": 1})"));
  }
  for (const char* t : {"f32", "f64", "i32", "i64", "bool"}) {
    for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) cases.push_back(op_case(op, {{t, {"n"}}, {t, {"n"}}}, {{11}, {11}}));
    for (const char* to : {"f32", "f64", "i32", "i64", "bool"}) {
      cases.push_back(op_case("cast", {{t, {"n"}}}, {{11}}, "", std::string(R"({"dtype": ")") + to + "\"}"));
    }
  }
  cases.push_back(op_case("not", {{"bool", {"n"}}}, {{11}}));
  cases.push_back(op_case("and", {{"bool", {"n", "m"}}, {"bool", {"m"}}}, {{2, 7}, {7}}));
  cases.push_back(op_case("or", {{"bool", {"n", "m"}}, {"bool", {"m"}}}, {{2, 7}, {7}}));
  // Views and concat fold into the indexing of the step that reads them.
  const std::string views[] = {
      R"({"op": "reshape", "in": ["e", 6, -1], "out": "v"})",
      R"({"op": "permute", "in": ["e"], "out": "v", "attrs": {"perm": [2, 0, 1]}})",
      R"({"op": "transpose", "in": ["e"], "out": "v", "attrs": {"dim0": 0, "dim1": 2}})",
      R"({"op": "expand", "in": ["e", 3, -1, -1, -1], "out": "v"})",
      R"({"op": "slice", "in": ["e", 1, 20, 3], "out": "v", "attrs": {"dim": 2}})",
      R"({"op": "concat", "in": ["e", "x", "e"], "out": "v", "attrs": {"dim": 1}})",
      R"({"op": "unsqueeze", "in": ["e"], "out": "v", "attrs": {"dim": 1}})",
      R"({"op": "squeeze", "in": ["e"], "out": "v", "attrs": {"dims": [0]}})",
  };
  for (const std::string& node : views) {
    cases.push_back({node, R"({"inputs": [{"name": "x", "dtype": "f32", "shape": [1, "m", "k"]}],
      "nodes": [{"op": "exp", "in": ["x"], "out": "e"}, )" + node + R"(, {"op": "mul", "in": ["v", 2], "out": "y"}],
      "outputs": ["y"]})", {{1, 4, 30}}});
  }
  cases.push_back({"full and arange", R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "sym_size", "in": ["x"], "out": "n", "attrs": {"dim": 0}},
              {"op": "full", "in": [2, "n"], "out": "f", "attrs": {"value": 7.9, "dtype": "i32"}},
              {"op": "arange", "in": ["n", 0, -2], "out": "r"},
              {"op": "arange", "in": [1, "n", 1], "out": "rf", "attrs": {"dtype": "f64"}},
              {"op": "full", "in": ["n"], "out": "b", "attrs": {"value": 1, "dtype": "bool"}}],
    "outputs": ["f", "r", "rf", "b"]})", {{9}}});
  return cases;
}

// Each graph's dynamic kernels to a cubin, its static ones to PTX (a cubin
// of each too would double the test's time for little more).
TEST(CudaCodegen, EveryOpCompilesToPtxAndCubinDynamicAndStatic) {
  const std::vector<Case> cases = every_op();
  std::vector<std::string> failures(cases.size() * 2);
  tbb::parallel_for(size_t{0}, failures.size(), [&](size_t i) {
    const Case& c = cases[i / 2];
    const bool specialize = i % 2;
    std::string& failed = failures[i];
    const std::string what = c.what + (specialize ? " (static)" : " (dynamic)") + ": ";
    auto src = source_for(c, specialize);
    if (!src.is_ok()) {
      failed = what + src.status().to_string();
      return;
    }
    const bool has_kernels = std::any_of(src->steps.begin(), src->steps.end(),
                                         [](const gpu::StepPlan& s) { return s.kind != gpu::StepPlan::Kind::kMatmul; });
    auto image = gpu::nvrtc_compile(src->code, 90, /*ptx=*/specialize);
    if (!image.is_ok()) failed = what + image.status().to_string();
    else if (specialize && (image->find(".entry") != std::string::npos) != has_kernels) failed = what + "PTX entries do not match the steps";
    else if (!specialize && image->substr(0, 4) != "\x7f" "ELF") failed = what + "not an ELF cubin";
  });
  for (const std::string& f : failures) EXPECT_TRUE(f.empty()) << f;
}

TEST(CudaCodegen, OlderArchitecturesCompileToo) {
  std::vector<int> archs = gpu::nvrtc_archs();
  ASSERT_FALSE(archs.empty());
  const Case c = op_case("softmax", {{"f32", {"n", "m"}}}, {{4, 33}}, "", R"({"dim": -1})");
  auto src = source_for(c, false);
  ASSERT_TRUE(src.is_ok()) << src.status().to_string();
  for (int arch : {75, 80, 89}) {
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) continue;
    auto cubin = gpu::nvrtc_compile(src->code, arch, false);
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
  EXPECT_EQ(dynamic->steps[0].kind, gpu::StepPlan::Kind::kPointwise);
}

TEST(CudaCodegen, ShapesOfEachStepKind) {
  auto plan = [](const Case& c) {
    auto src = source_for(c, false);
    EXPECT_TRUE(src.is_ok()) << src.status().to_string();
    return src.is_ok() ? src->steps : std::vector<gpu::StepPlan>{};
  };
  auto softmax = plan(op_case("softmax", {{"f32", {"n", "m"}}}, {{4, 33}}, "", R"({"dim": -1})"));
  ASSERT_EQ(softmax.size(), 1u);
  EXPECT_EQ(softmax[0].kind, gpu::StepPlan::Kind::kRows);
  EXPECT_EQ(softmax[0].phases, 3);
  EXPECT_EQ(softmax[0].slots, 2);  // the max, the sum of exponentials
  auto mm = plan(op_case("matmul", {{"f32", {"n", "k"}}, {"f32", {"k", "m"}}}, {{5, 7}, {7, 3}}));
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(mm[0].kind, gpu::StepPlan::Kind::kMatmul);
}

TEST(CudaCodegen, NvrtcErrorsCarryTheLogAndTheSourcePath) {
  const std::string bad = std::string(gpu::prelude()) + "extern \"C\" __global__ void k() { undeclared_thing = 1; }\n";
  auto r = gpu::nvrtc_compile(bad, 90, false);
  ASSERT_FALSE(r.is_ok());
  const std::string msg = r.status().message();
  EXPECT_NE(msg.find("undeclared_thing"), std::string::npos) << msg;
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
