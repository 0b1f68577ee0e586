/* shapejit's C API: for interpreters written in C, or bound through an FFI.
 *
 * Arguments are DLPack DLTensors on the CPU; results are DLManagedTensors
 * owned by the caller. Every function returns a status; on failure,
 * sj_last_error() gives the message (per thread, valid until the next call).
 * No C++ exception crosses this API.
 *
 * Tracing: on a miss that needs a trace, sj_call calls the caller's trace
 * function with a tracer. Values are small integer handles. An interpreter
 * that needs a size as an integer calls sj_tracer_guard_int; when that
 * returns SJ_GRAPH_BREAK the trace function should return it, and sj_call
 * then returns SJ_GRAPH_BREAK: the interpreter runs that call itself.
 */
#ifndef SHAPEJIT_CAPI_SHAPEJIT_H_
#define SHAPEJIT_CAPI_SHAPEJIT_H_

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  SJ_OK = 0,
  SJ_INVALID_ARGUMENT = 1,
  SJ_GRAPH_BREAK = 2,
  SJ_UNSUPPORTED = 3,
  SJ_RUNTIME_ERROR = 4,
  SJ_IO_ERROR = 5,
  SJ_INTERNAL = 6,
} sj_status;

typedef struct sj_jit sj_jit;
typedef struct sj_site sj_site;
typedef struct sj_tracer sj_tracer;
typedef struct sj_graph sj_graph;
typedef int32_t sj_value;

typedef enum { SJ_OPERAND_VALUE = 0, SJ_OPERAND_INT = 1, SJ_OPERAND_FLOAT = 2 } sj_operand_kind;

typedef struct {
  sj_operand_kind kind;
  sj_value value; /* SJ_OPERAND_VALUE */
  int64_t i;      /* SJ_OPERAND_INT */
  double f;       /* SJ_OPERAND_FLOAT */
} sj_operand;

typedef sj_status (*sj_trace_fn)(sj_tracer* tracer, void* user_data);

const char* sj_last_error(void);

/* config_json: a config document ("{}" for the defaults). */
sj_status sj_create(const char* config_json, sj_jit** out);
/* With compile.async, the background compile running finishes first; those
   not begun are dropped. */
void sj_destroy(sj_jit* jit);
/* A handle to the named site, valid while the jit lives. */
sj_status sj_site_get(sj_jit* jit, const char* name, sj_site** out);

/* On success *outputs is an array of *num_outputs results; release it with
 * sj_free_outputs (or call each deleter and free() the array yourself). */
sj_status sj_call(sj_site* site, const DLTensor* const* args, int32_t num_args, sj_trace_fn trace, void* user_data,
                  DLManagedTensor*** outputs, int32_t* num_outputs);
/* The same for a graph in TRACE_FORMAT.md's JSON. */
sj_status sj_call_graph(sj_site* site, const char* graph_json, const DLTensor* const* args, int32_t num_args,
                        DLManagedTensor*** outputs, int32_t* num_outputs);
/* The same on a stream (a CUstream; NULL is the default stream) for the cuda
 * backend, whose inputs and outputs are kDLCUDA tensors. */
sj_status sj_call_on_stream(sj_site* site, void* stream, const DLTensor* const* args, int32_t num_args, sj_trace_fn trace,
                            void* user_data, DLManagedTensor*** outputs, int32_t* num_outputs);
sj_status sj_call_graph_on_stream(sj_site* site, void* stream, const char* graph_json, const DLTensor* const* args, int32_t num_args,
                                  DLManagedTensor*** outputs, int32_t* num_outputs);
void sj_free_outputs(DLManagedTensor** outputs, int32_t num_outputs);

/* A graph parsed once, for a caller that calls the same graph many times
 * (sj_call_graph parses its text on every call). The handle is immutable:
 * any thread may call with it while it lives; free it after the last. */
sj_status sj_graph_parse(const char* graph_json, sj_graph** out);
void sj_graph_free(sj_graph* graph);
/* sj_call_graph and sj_call_graph_on_stream with a parsed graph. */
sj_status sj_call_graph_handle(sj_site* site, const sj_graph* graph, const DLTensor* const* args, int32_t num_args,
                               DLManagedTensor*** outputs, int32_t* num_outputs);
sj_status sj_call_graph_handle_on_stream(sj_site* site, void* stream, const sj_graph* graph, const DLTensor* const* args,
                                         int32_t num_args, DLManagedTensor*** outputs, int32_t* num_outputs);

/* Frozen memory, for the process: the caller promises that the bytes of a
 * host tensor (a model's weights) stay as they are until sj_thaw, and
 * kernels may keep what they derive from them across calls (the CPU
 * backend keeps a weight packed for its matrix product: no packing per
 * call). Writing to frozen memory before thawing it is an error that
 * shapejit does not catch: calls may go on reading the old bytes. Freezing
 * the same tensor again counts; it is frozen until thawed as many times.
 * A tensor that overlaps a frozen one without being it is refused. */
sj_status sj_freeze(const DLTensor* tensor);
sj_status sj_thaw(const DLTensor* tensor);

/* Statistics as a JSON document; free it with sj_free_string. */
sj_status sj_stats_json(sj_jit* jit, char** out);
void sj_free_string(char* s);

/* Tracer. `op` is an op name of TRACE_FORMAT.md; attrs_json is its attrs
 * object ("{\"axes\": [-1]}") or NULL. cmp is eq, ne, lt, le, gt or ge. */
int32_t sj_tracer_num_inputs(sj_tracer* t);
sj_value sj_tracer_input(sj_tracer* t, int32_t i);
sj_status sj_tracer_op(sj_tracer* t, const char* op, const sj_operand* operands, int32_t num_operands, const char* attrs_json,
                       sj_value* out);
sj_status sj_tracer_size(sj_tracer* t, sj_value tensor, int32_t dim, sj_value* out);
sj_status sj_tracer_guard_int(sj_tracer* t, sj_value symint, const char* label, int64_t* out);
sj_status sj_tracer_guard_bool(sj_tracer* t, const char* cmp, sj_operand lhs, sj_operand rhs, const char* label, int32_t* out);
sj_status sj_tracer_output(sj_tracer* t, sj_value tensor);

#ifdef __cplusplus
}
#endif

#endif /* SHAPEJIT_CAPI_SHAPEJIT_H_ */
