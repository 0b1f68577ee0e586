// The C API over Jit, CallSite and Tracer. Every entry point catches
// everything: no exception crosses into C.
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "backends/frozen.h"
#include "jit/capi/shapejit.h"
#include "core/support/json.h"
#include "core/ir/graph_json.h"
#include "jit/runtime/jit.h"

struct sj_site;
struct sj_jit {
  std::unique_ptr<shapejit::runtime::Jit> jit;
  std::mutex mu;  // handles
  std::map<shapejit::runtime::CallSite*, std::unique_ptr<sj_site>> sites;
};
struct sj_site {
  shapejit::runtime::CallSite* site;
};
struct sj_tracer {
  shapejit::trace::Tracer* tracer;
};
struct sj_graph {
  shapejit::ir::Graph graph;
};

namespace {

using shapejit::Code;
using shapejit::Status;

thread_local std::string g_last_error;

sj_status to_c(Code code) {
  switch (code) {
    case Code::kOk: return SJ_OK;
    case Code::kInvalidArgument: return SJ_INVALID_ARGUMENT;
    case Code::kGraphBreak: return SJ_GRAPH_BREAK;
    case Code::kUnsupported: return SJ_UNSUPPORTED;
    case Code::kRuntime: return SJ_RUNTIME_ERROR;
    case Code::kIo: return SJ_IO_ERROR;
    case Code::kInternal:
    case Code::kUseReference:  // the runtime consumes it; never seen here
    case Code::kRetry:
    case Code::kRaised: return SJ_INTERNAL;  // only the Python package's trace function returns them
  }
  return SJ_INTERNAL;
}

Code from_c(sj_status s) {
  switch (s) {
    case SJ_OK: return Code::kOk;
    case SJ_INVALID_ARGUMENT: return Code::kInvalidArgument;
    case SJ_GRAPH_BREAK: return Code::kGraphBreak;
    case SJ_UNSUPPORTED: return Code::kUnsupported;
    case SJ_RUNTIME_ERROR: return Code::kRuntime;
    case SJ_IO_ERROR: return Code::kIo;
    default: return Code::kInternal;
  }
}

sj_status report(const Status& s) {
  if (s.is_ok()) return SJ_OK;
  g_last_error = s.message();
  return to_c(s.code());
}

template <typename F>
sj_status guarded(F&& f) {
  try {
    return report(f());
  } catch (const std::exception& e) {
    return report(Status(Code::kInternal, std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return report(Status(Code::kInternal, "unexpected exception"));
  }
}

Status null_arg(const char* what) { return shapejit::invalid(std::string(what) + " is null"); }

shapejit::trace::Tracer::Arg to_arg(const sj_operand& o) {
  switch (o.kind) {
    case SJ_OPERAND_INT: return o.i;
    case SJ_OPERAND_FLOAT: return o.f;
    default: return shapejit::trace::Tracer::Value{o.value};
  }
}

struct Owned {
  shapejit::ir::Tensor tensor;
  DLManagedTensor managed;
};

DLManagedTensor* to_managed(shapejit::ir::Tensor t) {
  auto* owned = new Owned{std::move(t), {}};
  owned->managed.dl_tensor = owned->tensor.dl();
  owned->managed.manager_ctx = owned;
  owned->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Owned*>(self->manager_ctx); };
  return &owned->managed;
}

Status deliver(std::vector<shapejit::ir::Tensor>& results, DLManagedTensor*** outputs, int32_t* num_outputs) {
  auto** array = static_cast<DLManagedTensor**>(std::calloc(results.size() + 1, sizeof(DLManagedTensor*)));
  if (!array) return Status(Code::kInternal, "out of memory");
  for (size_t i = 0; i < results.size(); ++i) array[i] = to_managed(std::move(results[i]));
  *outputs = array;
  *num_outputs = static_cast<int32_t>(results.size());
  return Status::ok();
}

}  // namespace

extern "C" {

const char* sj_last_error(void) { return g_last_error.c_str(); }

sj_status sj_create(const char* config_json, sj_jit** out) {
  return guarded([&]() -> Status {
    if (!out) return null_arg("out");
    *out = nullptr;
    auto jit = shapejit::runtime::Jit::create(config_json ? config_json : "{}");
    if (!jit.is_ok()) return jit.status();
    auto handle = std::make_unique<sj_jit>();
    handle->jit = std::move(jit).value();
    *out = handle.release();
    return Status::ok();
  });
}

void sj_destroy(sj_jit* jit) {
  try {
    delete jit;
  } catch (...) {
  }
}

sj_status sj_site_get(sj_jit* jit, const char* name, sj_site** out) {
  return guarded([&]() -> Status {
    if (!jit || !name || !out) return null_arg("jit, name or out");
    // Sites live as long as the jit; so do their C handles (one per site).
    shapejit::runtime::CallSite* site = &jit->jit->site(name);
    std::lock_guard<std::mutex> lock(jit->mu);
    auto& h = jit->sites[site];
    if (!h) h = std::make_unique<sj_site>(sj_site{site});
    *out = h.get();
    return Status::ok();
  });
}

sj_status sj_call(sj_site* site, const DLTensor* const* args, int32_t num_args, sj_trace_fn trace, void* user_data,
                  DLManagedTensor*** outputs, int32_t* num_outputs) {
  return sj_call_on_stream(site, nullptr, args, num_args, trace, user_data, outputs, num_outputs);
}

sj_status sj_call_on_stream(sj_site* site, void* stream, const DLTensor* const* args, int32_t num_args, sj_trace_fn trace,
                            void* user_data, DLManagedTensor*** outputs, int32_t* num_outputs) {
  return guarded([&]() -> Status {
    if (!site || !outputs || !num_outputs || !trace || (num_args > 0 && !args)) return null_arg("site, args, trace or outputs");
    if (num_args < 0) return shapejit::invalid("num_args is negative");
    *outputs = nullptr;
    *num_outputs = 0;
    shapejit::runtime::TraceFn fn = [&](shapejit::trace::Tracer& t) -> Status {
      sj_tracer handle{&t};
      g_last_error.clear();
      sj_status s = trace(&handle, user_data);
      if (s == SJ_OK) return Status::ok();
      std::string msg = g_last_error.empty() ? "the trace function returned status " + std::to_string(s) : g_last_error;
      return Status(from_c(s), msg);
    };
    std::vector<shapejit::ir::Tensor> results;
    SJ_TRY(site->site->call(shapejit::runtime::Args(args, static_cast<size_t>(num_args)), fn, results, stream));
    return deliver(results, outputs, num_outputs);
  });
}

sj_status sj_call_graph(sj_site* site, const char* graph_json, const DLTensor* const* args, int32_t num_args,
                        DLManagedTensor*** outputs, int32_t* num_outputs) {
  return sj_call_graph_on_stream(site, nullptr, graph_json, args, num_args, outputs, num_outputs);
}

namespace {

// A call of a parsed graph: the entry points' checks and delivery.
Status call_parsed(sj_site* site, void* stream, const shapejit::ir::Graph& graph, const DLTensor* const* args, int32_t num_args,
                   DLManagedTensor*** outputs, int32_t* num_outputs) {
  *outputs = nullptr;
  *num_outputs = 0;
  std::vector<shapejit::ir::Tensor> results;
  SJ_TRY(site->site->call_graph(graph, {}, shapejit::runtime::Args(args, static_cast<size_t>(num_args)), results, stream));
  return deliver(results, outputs, num_outputs);
}

Status check_call(const sj_site* site, const void* graph, const DLTensor* const* args, int32_t num_args, DLManagedTensor*** outputs,
                  const int32_t* num_outputs) {
  if (!site || !graph || !outputs || !num_outputs || (num_args > 0 && !args)) return null_arg("site, graph, args or outputs");
  if (num_args < 0) return shapejit::invalid("num_args is negative");
  return Status::ok();
}

}  // namespace

sj_status sj_call_graph_on_stream(sj_site* site, void* stream, const char* graph_json, const DLTensor* const* args, int32_t num_args,
                                  DLManagedTensor*** outputs, int32_t* num_outputs) {
  return guarded([&]() -> Status {
    SJ_TRY(check_call(site, graph_json, args, num_args, outputs, num_outputs));
    const shapejit::ir::Graph g = SJ_TRY(shapejit::ir::parse_graph(graph_json));
    return call_parsed(site, stream, g, args, num_args, outputs, num_outputs);
  });
}

sj_status sj_graph_parse(const char* graph_json, sj_graph** out) {
  return guarded([&]() -> Status {
    if (!graph_json || !out) return null_arg("graph or out");
    *out = nullptr;
    shapejit::ir::Graph g = SJ_TRY(shapejit::ir::parse_graph(graph_json));
    *out = new sj_graph{std::move(g)};
    return Status::ok();
  });
}

void sj_graph_free(sj_graph* graph) { delete graph; }

sj_status sj_call_graph_handle(sj_site* site, const sj_graph* graph, const DLTensor* const* args, int32_t num_args,
                               DLManagedTensor*** outputs, int32_t* num_outputs) {
  return sj_call_graph_handle_on_stream(site, nullptr, graph, args, num_args, outputs, num_outputs);
}

sj_status sj_call_graph_handle_on_stream(sj_site* site, void* stream, const sj_graph* graph, const DLTensor* const* args,
                                         int32_t num_args, DLManagedTensor*** outputs, int32_t* num_outputs) {
  return guarded([&]() -> Status {
    SJ_TRY(check_call(site, graph, args, num_args, outputs, num_outputs));
    return call_parsed(site, stream, graph->graph, args, num_args, outputs, num_outputs);
  });
}

void sj_free_outputs(DLManagedTensor** outputs, int32_t num_outputs) {
  if (!outputs) return;
  for (int32_t i = 0; i < num_outputs; ++i) {
    if (outputs[i] && outputs[i]->deleter) outputs[i]->deleter(outputs[i]);
  }
  std::free(outputs);
}

sj_status sj_stats_json(sj_jit* jit, char** out) {
  return guarded([&]() -> Status {
    if (!jit || !out) return null_arg("jit or out");
    std::string s = jit->jit->stats_json().dump();
    *out = static_cast<char*>(std::malloc(s.size() + 1));
    if (!*out) return Status(Code::kInternal, "out of memory");
    std::memcpy(*out, s.c_str(), s.size() + 1);
    return Status::ok();
  });
}

void sj_free_string(char* s) { std::free(s); }

sj_status sj_freeze(const DLTensor* tensor) {
  return guarded([&]() -> Status { return tensor ? shapejit::backends::FrozenMemory::process().freeze({&tensor, 1}) : null_arg("tensor"); });
}

sj_status sj_thaw(const DLTensor* tensor) {
  return guarded([&]() -> Status { return tensor ? shapejit::backends::FrozenMemory::process().thaw({&tensor, 1}) : null_arg("tensor"); });
}

int32_t sj_tracer_num_inputs(sj_tracer* t) { return t ? t->tracer->num_inputs() : 0; }

sj_value sj_tracer_input(sj_tracer* t, int32_t i) {
  if (!t || i < 0 || i >= t->tracer->num_inputs()) return -1;
  return t->tracer->input(i).id;
}

sj_status sj_tracer_op(sj_tracer* t, const char* op, const sj_operand* operands, int32_t num_operands, const char* attrs_json,
                       sj_value* out) {
  return guarded([&]() -> Status {
    if (!t || !op || !out || (num_operands > 0 && !operands)) return null_arg("tracer, op, operands or out");
    auto parsed = shapejit::ir::parse_op(op);
    if (!parsed) return shapejit::invalid(std::string("unknown op '") + op + "'");
    shapejit::ir::Node node{*parsed, {}, {}, {}};
    if (attrs_json) {
      const nlohmann::json j = SJ_TRY(shapejit::parse_json(attrs_json, std::string("attrs of '") + op + "'"));
      SJ_TRY(shapejit::ir::parse_node_attrs(j, "/attrs", node));
    }
    std::vector<shapejit::trace::Tracer::Arg> in;
    for (int32_t i = 0; i < num_operands; ++i) in.push_back(to_arg(operands[i]));
    auto v = SJ_TRY(t->tracer->op(*parsed, in, node.attrs));
    *out = v.id;
    return Status::ok();
  });
}

sj_status sj_tracer_size(sj_tracer* t, sj_value tensor, int32_t dim, sj_value* out) {
  return guarded([&]() -> Status {
    if (!t || !out) return null_arg("tracer or out");
    *out = SJ_TRY(t->tracer->size({tensor}, dim)).id;
    return Status::ok();
  });
}

sj_status sj_tracer_guard_int(sj_tracer* t, sj_value symint, const char* label, int64_t* out) {
  return guarded([&]() -> Status {
    if (!t || !out) return null_arg("tracer or out");
    *out = SJ_TRY(t->tracer->guard_int({symint}, label ? label : ""));
    return Status::ok();
  });
}

sj_status sj_tracer_guard_bool(sj_tracer* t, const char* cmp, sj_operand lhs, sj_operand rhs, const char* label, int32_t* out) {
  return guarded([&]() -> Status {
    if (!t || !cmp || !out) return null_arg("tracer, cmp or out");
    auto c = shapejit::trace::parse_cmp(cmp);
    if (!c) return shapejit::invalid(std::string("unknown comparison '") + cmp + "' (eq, ne, lt, le, gt, ge)");
    *out = SJ_TRY(t->tracer->guard_bool(*c, to_arg(lhs), to_arg(rhs), label ? label : "")) ? 1 : 0;
    return Status::ok();
  });
}

sj_status sj_tracer_output(sj_tracer* t, sj_value tensor) {
  return guarded([&]() -> Status {
    if (!t) return null_arg("tracer");
    return t->tracer->output({tensor});
  });
}

}  // extern "C"
