/* A C interpreter's first call through shapejit: a traced function
 * y = x * 2 + 1 on three sizes, checked, then the compile count. Exits 0
 * when every result is right. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shapejit/shapejit.h>

static sj_status trace(sj_tracer* t, void* user) {
  (void)user;
  sj_operand x = {SJ_OPERAND_VALUE, sj_tracer_input(t, 0), 0, 0};
  sj_operand two = {SJ_OPERAND_FLOAT, 0, 0, 2.0}, one = {SJ_OPERAND_FLOAT, 0, 0, 1.0};
  sj_value a, b;
  sj_operand mul[2] = {x, two};
  sj_status s = sj_tracer_op(t, "mul", mul, 2, NULL, &a);
  if (s != SJ_OK) return s;
  sj_operand add[2] = {{SJ_OPERAND_VALUE, a, 0, 0}, one};
  if ((s = sj_tracer_op(t, "add", add, 2, NULL, &b)) != SJ_OK) return s;
  return sj_tracer_output(t, b);
}

int main(void) {
  sj_jit* jit = NULL;
  sj_site* site = NULL;
  if (sj_create("{\"log\": {\"recompiles\": false}}", &jit) != SJ_OK || sj_site_get(jit, "f", &site) != SJ_OK) {
    fprintf(stderr, "hello_c: %s\n", sj_last_error());
    return 1;
  }
  for (int64_t n = 3; n <= 5; ++n) {
    float data[5];
    for (int64_t i = 0; i < n; ++i) data[i] = (float)i;
    int64_t shape[1] = {n};
    DLTensor x;
    memset(&x, 0, sizeof x);
    x.data = data;
    x.device.device_type = kDLCPU;
    x.ndim = 1;
    x.dtype.code = kDLFloat;
    x.dtype.bits = 32;
    x.dtype.lanes = 1;
    x.shape = shape;
    const DLTensor* args[1] = {&x};
    DLManagedTensor** out = NULL;
    int32_t num_out = 0;
    if (sj_call(site, args, 1, trace, NULL, &out, &num_out) != SJ_OK || num_out != 1) {
      fprintf(stderr, "hello_c: call failed: %s\n", sj_last_error());
      return 1;
    }
    const float* y = (const float*)out[0]->dl_tensor.data;
    for (int64_t i = 0; i < n; ++i) {
      if (y[i] != 2.0f * (float)i + 1.0f) {
        fprintf(stderr, "hello_c: y[%lld] = %g\n", (long long)i, y[i]);
        return 1;
      }
    }
    sj_free_outputs(out, num_out);
  }
  char* stats = NULL;
  if (sj_stats_json(jit, &stats) != SJ_OK) return 1;
  printf("hello_c: 3 calls right; stats %.60s...\n", stats);
  sj_free_string(stats);
  sj_destroy(jit);
  return 0;
}
