// The driver API entry points of the mock (mock_cuda.h): one device with an
// H100's limits, its primary context, streams and events, memory, modules
// and launches. Every call checks what a real driver checks and says why it
// refuses (cuGetErrorString).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>

#include "tests/backends/cuda/mock_driver/mock_cuda.h"

namespace shapejit::mock_cuda {

namespace {

constexpr int kSms = 132;                  // an H100 SXM
constexpr int kMaxThreads = 1024;          // per block
constexpr unsigned kMaxSharedBytes = 48 << 10;  // per block without opting in
constexpr int kDriverVersion = 13000;

struct Context {};
Context g_primary;
std::atomic<bool> g_initialized{false};
thread_local CUcontext t_current = nullptr;

struct Event {
  bool recorded = false;
  std::chrono::steady_clock::time_point at;
};

// Handles are numbers, never addresses, from 4096 up (streams 0, 1 and 2
// are the driver's own).
struct Registry {
  std::mutex mu;
  uintptr_t next = 4096;
  std::set<const void*> streams;
  std::map<const void*, Event> events;
  std::map<const void*, Module> modules;
  std::map<const void*, std::pair<const void*, size_t>> functions;  // module, kernel
  template <class H>
  H handle() {
    return reinterpret_cast<H>(next++);
  }
};
Registry& reg() {
  static Registry* r = new Registry;  // lives as long as the process, as a driver does
  return *r;
}

thread_local CUresult t_code = CUDA_SUCCESS;
thread_local std::string t_reason;

// A call that needs the context current on its thread.
CUresult need_context(const char* what) {
  if (!g_initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, std::string(what) + ": cuInit was not called");
  if (t_current != reinterpret_cast<CUcontext>(&g_primary)) {
    return fail(CUDA_ERROR_INVALID_CONTEXT, std::string(what) + ": no context is current on this thread (cuCtxSetCurrent)");
  }
  return CUDA_SUCCESS;
}

CUresult need_stream(CUstream s, const char* what) {
  return stream_is_live(s) ? CUDA_SUCCESS : fail(CUDA_ERROR_INVALID_HANDLE, std::string(what) + ": not a live stream");
}

CUresult need_device(const void* p, size_t bytes, const std::string& what) {
  const std::string e = DeviceMemory::get().check(p, bytes);
  return e.empty() ? CUDA_SUCCESS : fail(CUDA_ERROR_INVALID_VALUE, what + ": " + e);
}

CUresult need_host(const void* p, size_t bytes, const std::string& what) {
  if (bytes > 0 && p == nullptr) return fail(CUDA_ERROR_INVALID_VALUE, what + ": a null host pointer");
  if (DeviceMemory::get().in_range(p)) return fail(CUDA_ERROR_INVALID_VALUE, what + ": a device pointer where a host one belongs");
  return CUDA_SUCCESS;
}

const void* ptr(CUdeviceptr p) { return reinterpret_cast<const void*>(p); }

#define SJ_CHECK(x)                        \
  do {                                     \
    if (CUresult r_ = (x); r_ != CUDA_SUCCESS) return r_; \
  } while (0)

}  // namespace

CUresult fail(CUresult code, const std::string& why) {
  t_code = code;
  t_reason = "shapejit mock driver: " + why;
  return code;
}

bool stream_is_live(CUstream s) {
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return true;
  std::lock_guard<std::mutex> lock(reg().mu);
  return reg().streams.count(s) != 0;
}

const char* reason(CUresult code) { return code == t_code && !t_reason.empty() ? t_reason.c_str() : nullptr; }

}  // namespace shapejit::mock_cuda

using namespace shapejit::mock_cuda;

extern "C" {

__attribute__((visibility("default"))) void shapejitModuleSource(const void* image, size_t bytes, const char* source) {
  remember_source(image, bytes, source);
}

CUresult cuInit(unsigned flags) {
  if (flags != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0");
  g_initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* v) {
  if (!v) return fail(CUDA_ERROR_INVALID_VALUE, "cuDriverGetVersion: null");
  *v = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char** name) {
  switch (r) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDA_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_NOT_READY: *name = "CUDA_ERROR_NOT_READY"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: *name = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult r, const char** text) {
  const char* why = reason(r);
  *text = why ? why : "refused by the shapejit mock driver";
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* n) {
  if (!g_initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGetCount: cuInit was not called");
  *n = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (ordinal != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGet: the mock has one device, 0");
  *d = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice d) {
  if (d != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute: no device " + std::to_string(d));
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = kSms; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = kMaxThreads; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = kMaxSharedBytes; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    default: return fail(CUDA_ERROR_NOT_SUPPORTED, "cuDeviceGetAttribute: attribute " + std::to_string(a) + " is not mocked");
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  if (d != 0 || len <= 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName: bad device or length");
  std::snprintf(name, static_cast<size_t>(len), "%s", "shapejit mock (H100 limits, runs on the CPU)");
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  if (!g_initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuDevicePrimaryCtxRetain: cuInit was not called");
  if (d != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuDevicePrimaryCtxRetain: no device " + std::to_string(d));
  *c = reinterpret_cast<CUcontext>(&g_primary);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c) {
  if (c != nullptr && c != reinterpret_cast<CUcontext>(&g_primary)) return fail(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent: not a context");
  t_current = c;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* c) {
  *c = t_current;
  return CUDA_SUCCESS;
}

// ---- memory ----

CUresult cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  SJ_CHECK(need_context("cuMemAlloc"));
  if (!p || bytes == 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc: a null result or 0 bytes");
  void* at = DeviceMemory::get().allocate(bytes);
  if (!at) return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc: " + std::to_string(bytes) + " bytes");
  *p = reinterpret_cast<CUdeviceptr>(at);
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr p) {
  SJ_CHECK(need_context("cuMemFree"));
  if (p == 0) return CUDA_SUCCESS;
  if (!DeviceMemory::get().release(reinterpret_cast<void*>(p))) {
    return fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree: " + DeviceMemory::get().check(ptr(p), 0) + " (not the start of a live allocation)");
  }
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream s) {
  SJ_CHECK(need_context("cuMemcpyHtoDAsync"));
  SJ_CHECK(need_stream(s, "cuMemcpyHtoDAsync"));
  SJ_CHECK(need_device(ptr(dst), bytes, "cuMemcpyHtoDAsync: the destination"));
  SJ_CHECK(need_host(src, bytes, "cuMemcpyHtoDAsync: the source"));
  if (bytes) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream s) {
  SJ_CHECK(need_context("cuMemcpyDtoHAsync"));
  SJ_CHECK(need_stream(s, "cuMemcpyDtoHAsync"));
  SJ_CHECK(need_device(ptr(src), bytes, "cuMemcpyDtoHAsync: the source"));
  SJ_CHECK(need_host(dst, bytes, "cuMemcpyDtoHAsync: the destination"));
  if (bytes) std::memcpy(dst, ptr(src), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  SJ_CHECK(need_context("cuMemcpyDtoDAsync"));
  SJ_CHECK(need_stream(s, "cuMemcpyDtoDAsync"));
  SJ_CHECK(need_device(ptr(src), bytes, "cuMemcpyDtoDAsync: the source"));
  SJ_CHECK(need_device(ptr(dst), bytes, "cuMemcpyDtoDAsync: the destination"));
  if (bytes) std::memmove(reinterpret_cast<void*>(dst), ptr(src), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  SJ_CHECK(need_context("cuMemsetD8Async"));
  SJ_CHECK(need_stream(s, "cuMemsetD8Async"));
  SJ_CHECK(need_device(ptr(dst), n, "cuMemsetD8Async"));
  if (n) std::memset(reinterpret_cast<void*>(dst), v, n);
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr p) {
  SJ_CHECK(need_context("cuPointerGetAttribute"));
  if (a != CU_POINTER_ATTRIBUTE_MEMORY_TYPE) return fail(CUDA_ERROR_NOT_SUPPORTED, "cuPointerGetAttribute: only the memory type is mocked");
  SJ_CHECK(need_device(ptr(p), 0, "cuPointerGetAttribute"));
  *static_cast<unsigned*>(data) = CU_MEMORYTYPE_DEVICE;
  return CUDA_SUCCESS;
}

// ---- streams and events: work runs when submitted ----

CUresult cuStreamCreate(CUstream* s, unsigned flags) {
  SJ_CHECK(need_context("cuStreamCreate"));
  std::lock_guard<std::mutex> lock(reg().mu);
  *s = reg().handle<CUstream>();
  reg().streams.insert(*s);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream s) {
  SJ_CHECK(need_context("cuStreamDestroy"));
  std::lock_guard<std::mutex> lock(reg().mu);
  if (!reg().streams.erase(s)) return fail(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy: not a live stream");
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s) {
  SJ_CHECK(need_context("cuStreamSynchronize"));
  return need_stream(s, "cuStreamSynchronize");
}

CUresult cuEventCreate(CUevent* e, unsigned flags) {
  SJ_CHECK(need_context("cuEventCreate"));
  std::lock_guard<std::mutex> lock(reg().mu);
  *e = reg().handle<CUevent>();
  reg().events[*e] = Event{};
  return CUDA_SUCCESS;
}

namespace {
Event* event(CUevent e) {
  std::lock_guard<std::mutex> lock(reg().mu);
  auto it = reg().events.find(e);
  return it == reg().events.end() ? nullptr : &it->second;  // map nodes stay put
}
}  // namespace

CUresult cuEventRecord(CUevent e, CUstream s) {
  SJ_CHECK(need_context("cuEventRecord"));
  SJ_CHECK(need_stream(s, "cuEventRecord"));
  Event* ev = event(e);
  if (!ev) return fail(CUDA_ERROR_INVALID_HANDLE, "cuEventRecord: not a live event");
  ev->recorded = true;
  ev->at = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e) {
  SJ_CHECK(need_context("cuEventSynchronize"));
  return event(e) ? CUDA_SUCCESS : fail(CUDA_ERROR_INVALID_HANDLE, "cuEventSynchronize: not a live event");
}

CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
  SJ_CHECK(need_context("cuEventElapsedTime"));
  Event *x = event(a), *y = event(b);
  if (!x || !y) return fail(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: not a live event");
  if (!x->recorded || !y->recorded) return fail(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event was never recorded");
  *ms = std::chrono::duration<float, std::milli>(y->at - x->at).count();
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent e) {
  SJ_CHECK(need_context("cuEventDestroy"));
  std::lock_guard<std::mutex> lock(reg().mu);
  if (!reg().events.erase(e)) return fail(CUDA_ERROR_INVALID_HANDLE, "cuEventDestroy: not a live event");
  return CUDA_SUCCESS;
}

// ---- modules and launches ----

CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  SJ_CHECK(need_context("cuModuleLoadData"));
  Module code;
  SJ_CHECK(load_module(image, code));
  std::lock_guard<std::mutex> lock(reg().mu);
  *m = reg().handle<CUmodule>();
  reg().modules[*m] = std::move(code);
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
  SJ_CHECK(need_context("cuModuleUnload"));
  std::lock_guard<std::mutex> lock(reg().mu);
  // The host library stays loaded (another module may share it); its
  // functions are forgotten, so a launch of one is refused.
  if (!reg().modules.erase(m)) return fail(CUDA_ERROR_INVALID_HANDLE, "cuModuleUnload: not a loaded module");
  for (auto it = reg().functions.begin(); it != reg().functions.end();) {
    it = it->second.first == m ? reg().functions.erase(it) : std::next(it);
  }
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  SJ_CHECK(need_context("cuModuleGetFunction"));
  std::lock_guard<std::mutex> lock(reg().mu);
  auto it = reg().modules.find(m);
  if (it == reg().modules.end()) return fail(CUDA_ERROR_INVALID_HANDLE, "cuModuleGetFunction: not a loaded module");
  for (size_t k = 0; k < it->second.kernels.size(); ++k) {
    if (it->second.kernels[k].name == name) {
      *f = reg().handle<CUfunction>();
      reg().functions[*f] = {m, k};
      return CUDA_SUCCESS;
    }
  }
  return fail(CUDA_ERROR_NOT_FOUND, std::string("cuModuleGetFunction: no kernel ") + name);
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                        CUstream s, void** params, void** extra) {
  SJ_CHECK(need_context("cuLaunchKernel"));
  SJ_CHECK(need_stream(s, "cuLaunchKernel"));
  Kernel k;
  {
    std::lock_guard<std::mutex> lock(reg().mu);
    auto it = reg().functions.find(f);
    if (it == reg().functions.end()) return fail(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel: not a function of a loaded module");
    k = reg().modules.at(it->second.first).kernels[it->second.second];
  }
  const std::string what = "cuLaunchKernel " + k.name + ": ";
  if (gx == 0 || gy == 0 || gz == 0 || gx > 2147483647u || gy > 65535 || gz > 65535) {
    return fail(CUDA_ERROR_INVALID_VALUE, what + "grid (" + std::to_string(gx) + ", " + std::to_string(gy) + ", " + std::to_string(gz) + ")");
  }
  const uint64_t threads = uint64_t{bx} * by * bz;
  if (bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || threads > kMaxThreads) {
    return fail(CUDA_ERROR_INVALID_VALUE, what + "block (" + std::to_string(bx) + ", " + std::to_string(by) + ", " + std::to_string(bz) + ")");
  }
  if (threads > static_cast<uint64_t>(k.max_threads)) {
    return fail(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, what + std::to_string(threads) + " threads, over its __launch_bounds__ of " + std::to_string(k.max_threads));
  }
  if (shared_bytes > kMaxSharedBytes) return fail(CUDA_ERROR_INVALID_VALUE, what + std::to_string(shared_bytes) + " bytes of dynamic shared memory");
  if (extra != nullptr) return fail(CUDA_ERROR_NOT_SUPPORTED, what + "parameters through `extra` are not mocked");
  if (!k.param_sizes.empty() && params == nullptr) return fail(CUDA_ERROR_INVALID_VALUE, what + "no kernelParams for its parameters");
  for (size_t i = 0; i < k.param_sizes.size(); ++i) {
    const char* p = static_cast<const char*>(params[i]);
    if (p == nullptr) return fail(CUDA_ERROR_INVALID_VALUE, what + "parameter " + std::to_string(i) + " is null");
    for (size_t w = 0; w + 8 <= k.param_sizes[i]; w += 8) {
      uint64_t word = 0;
      std::memcpy(&word, p + w, 8);
      const std::string e = DeviceMemory::get().check_word(word);
      if (!e.empty()) return fail(CUDA_ERROR_INVALID_VALUE, what + "parameter " + std::to_string(i) + ", byte " + std::to_string(w) + ": " + e);
    }
  }
  // One launch at a time in the process: a module's __shared__ memory is a
  // single static copy (kernel_prelude.h).
  static std::mutex launching;
  std::lock_guard<std::mutex> lock(launching);
  const std::string e = run_grid(k, params, SjDim3{gx, gy, gz}, SjDim3{bx, by, bz});
  if (!e.empty()) return fail(CUDA_ERROR_LAUNCH_FAILED, what + e);
  return CUDA_SUCCESS;
}

}  // extern "C"
