// Graphs of every op of the op set, with symbolic dims and hints: what the
// CUDA tests compile (cuda_codegen_test.cpp) and run (cuda_test.cpp).
#pragma once

#include <cctype>
#include <string>
#include <vector>

#include "core/ir/infer.h"

namespace shapejit::testing {

struct Case {
  std::string what, graph;
  ir::ShapeHints hints;
};

// A graph of one op over inputs a, b, c with symbolic dims (names) and hints.
inline Case op_case(const std::string& op, const std::vector<std::pair<std::string, std::vector<std::string>>>& ins,
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

inline std::vector<Case> every_op() {
  std::vector<Case> cases;
  for (const char* t : {"f32", "f64"}) {
    for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu", "sin", "cos", "erf", "gelu",
                           "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p", "expm1", "log2", "log10", "exp2", "cbrt", "floor", "ceil", "trunc", "rint"}) {
      cases.push_back(op_case(op, {{t, {"n", "m"}}}, {{3, 37}}));
    }
    for (const char* op : {"atan2", "hypot", "fmod", "nextafter"}) cases.push_back(op_case(op, {{t, {"n", "1", "m"}}, {t, {"k", "1"}}}, {{3, 1, 5}, {4, 1}}));
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
    if (std::string(t)[0] == 'i') {
      for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd"}) {
        cases.push_back(op_case(op, {{t, {"n", "1", "m"}}, {t, {"k", "1"}}}, {{3, 1, 5}, {4, 1}}));
      }
      cases.push_back(op_case("invert", {{t, {"n"}}}, {{9}}));
    }
    for (const char* op : {"sum", "max", "min", "prod"}) {
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

}  // namespace shapejit::testing
