// The whole service driven through the C API only (plain DLTensors, C
// callbacks, status codes).
#include "jit/capi/shapejit.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/support/host_tensor.h"

namespace {

using shapejit::testing::Host;

struct TraceState {
  int traces = 0;
  bool need_int = false;
};

// y = sum(x * w, axes=[-1]) + 1; optionally needs x.size(1) as an int.
sj_status trace_fn(sj_tracer* t, void* user) {
  auto* st = static_cast<TraceState*>(user);
  ++st->traces;
  sj_value x = sj_tracer_input(t, 0), w = sj_tracer_input(t, 1), xw, s, y, n;
  sj_operand ops[2] = {{SJ_OPERAND_VALUE, x, 0, 0}, {SJ_OPERAND_VALUE, w, 0, 0}};
  sj_status rc;
  if ((rc = sj_tracer_op(t, "mul", ops, 2, nullptr, &xw)) != SJ_OK) return rc;
  sj_operand one[1] = {{SJ_OPERAND_VALUE, xw, 0, 0}};
  if ((rc = sj_tracer_op(t, "sum", one, 1, "{\"axes\": [-1]}", &s)) != SJ_OK) return rc;
  if (st->need_int) {
    if ((rc = sj_tracer_size(t, x, 1, &n)) != SJ_OK) return rc;
    int64_t value = 0;
    if ((rc = sj_tracer_guard_int(t, n, "x.size(1)", &value)) != SJ_OK) return rc;
  }
  sj_operand add[2] = {{SJ_OPERAND_VALUE, s, 0, 0}, {SJ_OPERAND_FLOAT, 0, 0, 1.0}};
  if ((rc = sj_tracer_op(t, "add", add, 2, nullptr, &y)) != SJ_OK) return rc;
  return sj_tracer_output(t, y);
}

TEST(CApi, TracesCallsAndReturnsOwnedOutputs) {
  sj_jit* jit = nullptr;
  ASSERT_EQ(sj_create("{}", &jit), SJ_OK);
  sj_site* site = nullptr;
  ASSERT_EQ(sj_site_get(jit, "f", &site), SJ_OK);
  TraceState st;
  for (int64_t n : {4, 5, 6}) {
    Host x({2, n}, 2.0f), w({n}, 3.0f);
    const DLTensor* args[] = {&x.dl, &w.dl};
    DLManagedTensor** outs = nullptr;
    int32_t num = 0;
    ASSERT_EQ(sj_call(site, args, 2, trace_fn, &st, &outs, &num), SJ_OK) << sj_last_error();
    ASSERT_EQ(num, 1);
    const DLTensor& y = outs[0]->dl_tensor;
    ASSERT_EQ(y.ndim, 1);
    EXPECT_EQ(y.shape[0], 2);
    EXPECT_EQ(static_cast<const float*>(y.data)[1], 6.0f * static_cast<float>(n) + 1.0f);
    sj_free_outputs(outs, num);
  }
  EXPECT_EQ(st.traces, 1);  // start_dynamic: one trace, one entry
  char* stats = nullptr;
  ASSERT_EQ(sj_stats_json(jit, &stats), SJ_OK);
  EXPECT_NE(std::string(stats).find("\"compiles\":1"), std::string::npos) << stats;
  sj_free_string(stats);
  sj_destroy(jit);
}

TEST(CApi, GraphBreakAndErrorsAreStatusCodes) {
  sj_jit* jit = nullptr;
  EXPECT_EQ(sj_create(R"({"policy": {"mode": "nope"}})", &jit), SJ_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sj_last_error()).find("/policy/mode"), std::string::npos);
  ASSERT_EQ(sj_create(R"({"policy": {"mode": "always_dynamic"}})", &jit), SJ_OK);
  sj_site* site = nullptr;
  ASSERT_EQ(sj_site_get(jit, "f", &site), SJ_OK);
  TraceState st;
  st.need_int = true;
  Host x({2, 4}, 1.0f), w({4}, 1.0f);
  const DLTensor* args[] = {&x.dl, &w.dl};
  DLManagedTensor** outs = nullptr;
  int32_t num = 0;
  EXPECT_EQ(sj_call(site, args, 2, trace_fn, &st, &outs, &num), SJ_GRAPH_BREAK);
  EXPECT_NE(std::string(sj_last_error()).find("always_dynamic"), std::string::npos) << sj_last_error();
  EXPECT_EQ(outs, nullptr);
  // An unknown op inside the callback surfaces as the call's error.
  auto bad = [](sj_tracer* t, void*) -> sj_status {
    sj_value out;
    sj_operand o = {SJ_OPERAND_VALUE, sj_tracer_input(t, 0), 0, 0};
    return sj_tracer_op(t, "frobnicate", &o, 1, nullptr, &out);
  };
  sj_site* other = nullptr;
  ASSERT_EQ(sj_site_get(jit, "g", &other), SJ_OK);
  EXPECT_EQ(sj_call(other, args, 2, bad, nullptr, &outs, &num), SJ_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sj_last_error()).find("unknown op 'frobnicate'"), std::string::npos);
  EXPECT_EQ(sj_call(nullptr, args, 2, bad, nullptr, &outs, &num), SJ_INVALID_ARGUMENT);
  sj_destroy(jit);
}

TEST(CApi, CallGraphTakesTheJsonFormat) {
  sj_jit* jit = nullptr;
  ASSERT_EQ(sj_create(nullptr, &jit), SJ_OK);
  sj_site* site = nullptr;
  ASSERT_EQ(sj_site_get(jit, "g", &site), SJ_OK);
  const char* graph = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "relu", "in": ["x"], "out": "y"}], "outputs": ["y"]})";
  Host x({3}, -1.0f);
  x.data[1] = 5.0f;
  const DLTensor* args[] = {&x.dl};
  DLManagedTensor** outs = nullptr;
  int32_t num = 0;
  ASSERT_EQ(sj_call_graph(site, graph, args, 1, &outs, &num), SJ_OK) << sj_last_error();
  const float* y = static_cast<const float*>(outs[0]->dl_tensor.data);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 5.0f);
  sj_free_outputs(outs, num);
  EXPECT_EQ(sj_call_graph(site, "{\"inputs\": 3}", args, 1, &outs, &num), SJ_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sj_last_error()).find("/inputs"), std::string::npos);
  sj_destroy(jit);
}

// A graph parsed once serves every call, from any site; a bad text is an
// error at the parse, and null handles are errors, not crashes.
TEST(CApi, AGraphParsedOnceServesEveryCall) {
  sj_jit* jit = nullptr;
  ASSERT_EQ(sj_create(nullptr, &jit), SJ_OK);
  sj_site* site = nullptr;
  ASSERT_EQ(sj_site_get(jit, "g", &site), SJ_OK);
  sj_graph* graph = nullptr;
  ASSERT_EQ(sj_graph_parse(R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["n"]}],
    "nodes": [{"op": "mul", "in": ["x", 2.0], "out": "y"}], "outputs": ["y"]})", &graph), SJ_OK) << sj_last_error();
  for (int64_t n : {3, 5, 3}) {
    Host x({n}, 1.5f);
    const DLTensor* args[] = {&x.dl};
    DLManagedTensor** outs = nullptr;
    int32_t num = 0;
    ASSERT_EQ(sj_call_graph_handle(site, graph, args, 1, &outs, &num), SJ_OK) << sj_last_error();
    ASSERT_EQ(num, 1);
    ASSERT_EQ(outs[0]->dl_tensor.shape[0], n);
    EXPECT_EQ(static_cast<const float*>(outs[0]->dl_tensor.data)[n - 1], 3.0f);
    sj_free_outputs(outs, num);
  }
  char* stats = nullptr;
  ASSERT_EQ(sj_stats_json(jit, &stats), SJ_OK);
  EXPECT_NE(std::string(stats).find("\"compiles\":1"), std::string::npos) << stats;
  sj_free_string(stats);
  sj_graph* bad = nullptr;
  EXPECT_EQ(sj_graph_parse("{\"inputs\": 3}", &bad), SJ_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(std::string(sj_last_error()).find("/inputs"), std::string::npos);
  DLManagedTensor** outs = nullptr;
  int32_t num = 0;
  EXPECT_EQ(sj_call_graph_handle(site, nullptr, nullptr, 0, &outs, &num), SJ_INVALID_ARGUMENT);
  EXPECT_EQ(sj_graph_parse(nullptr, &bad), SJ_INVALID_ARGUMENT);
  sj_graph_free(graph);
  sj_graph_free(nullptr);
  sj_destroy(jit);
}

// A weight frozen through the C API serves calls as before; it is thawed
// as often as it was frozen, and errors are status codes with a message.
TEST(CApi, FreezeAndThawWeights) {
  sj_jit* jit = nullptr;
  ASSERT_EQ(sj_create(nullptr, &jit), SJ_OK);
  sj_site* site = nullptr;
  ASSERT_EQ(sj_site_get(jit, "mm", &site), SJ_OK);
  const char* graph = R"({"inputs": [{"name": "x", "dtype": "f32", "shape": ["m", 8]}, {"name": "w", "dtype": "f32", "shape": [8, 20]}],
    "nodes": [{"op": "matmul", "in": ["x", "w"], "out": "y"}], "outputs": ["y"]})";
  Host x({30, 8}, 0.5f), w({8, 20}, 2.0f);
  ASSERT_EQ(sj_freeze(&w.dl), SJ_OK) << sj_last_error();
  ASSERT_EQ(sj_freeze(&w.dl), SJ_OK) << sj_last_error();
  const DLTensor* args[] = {&x.dl, &w.dl};
  DLManagedTensor** outs = nullptr;
  int32_t num = 0;
  for (int call = 0; call < 2; ++call) {
    ASSERT_EQ(sj_call_graph(site, graph, args, 2, &outs, &num), SJ_OK) << sj_last_error();
    const float* y = static_cast<const float*>(outs[0]->dl_tensor.data);
    EXPECT_EQ(y[0], 8.0f);
    EXPECT_EQ(y[30 * 20 - 1], 8.0f);
    sj_free_outputs(outs, num);
  }
  // A view into the frozen weight overlaps it without being it.
  Host view({4}, 0.0f);
  view.dl.data = w.data.data() + 3;
  EXPECT_EQ(sj_freeze(&view.dl), SJ_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sj_last_error()).find("overlaps frozen memory"), std::string::npos) << sj_last_error();
  EXPECT_EQ(sj_thaw(&w.dl), SJ_OK);
  EXPECT_EQ(sj_thaw(&w.dl), SJ_OK);
  EXPECT_EQ(sj_thaw(&w.dl), SJ_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sj_last_error()).find("not frozen"), std::string::npos) << sj_last_error();
  EXPECT_EQ(sj_freeze(nullptr), SJ_INVALID_ARGUMENT);
  sj_destroy(jit);
}

}  // namespace
