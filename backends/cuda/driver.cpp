#include "backends/cuda/driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>

#include "backends/cuda/nvrtc.h"

namespace shapejit::backends::cuda {

namespace {

#define SJ_NAME(x) SJ_NAME2(x)
#define SJ_NAME2(x) #x

// $name when set and not empty, else `fallback`.
std::string library(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

Expected<std::unique_ptr<Driver>> open_driver(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return unsupported("cuda: no CUDA driver on this machine (dlopen " + path + ": " + (why ? why : "not found") + ")");
  }
  auto cu = std::make_unique<Driver>();
#define SJ_RESOLVE(f)                                                                             \
  cu->f = reinterpret_cast<decltype(cu->f)>(dlsym(lib, SJ_NAME(f)));                              \
  if (!cu->f) return unsupported("cuda: the CUDA driver lacks " SJ_NAME(f) " (driver too old?)");
  SJ_CUDA_DRIVER_FUNCTIONS(SJ_RESOLVE)
#undef SJ_RESOLVE
  cu->module_source = reinterpret_cast<decltype(cu->module_source)>(dlsym(lib, "shapejitModuleSource"));
  return cu;
}

}  // namespace

Expected<const Device*> open_device(const std::string& driver_library) {
  std::unique_ptr<Driver> owned = SJ_TRY(open_driver(driver_library));
  const Driver* cu = owned.get();
  CUresult r = cu->cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) return unsupported("cuda: " + driver_library + " is the toolkit's stub, not a driver: no GPU here");
  if (r == CUDA_ERROR_NO_DEVICE) return unsupported("cuda: the driver finds no GPU");
  SJ_TRY(check(*cu, r, "cuInit"));
  auto d = std::make_unique<Device>();
  d->cu = cu;
  SJ_TRY(check(*cu, cu->cuDriverGetVersion(&d->driver_version), "cuDriverGetVersion"));
  int count = 0;
  SJ_TRY(check(*cu, cu->cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0) return unsupported("cuda: the driver finds no GPU");
  // What NVRTC emits needs a driver of its major version or newer.
  const std::string nvrtc = nvrtc_version();
  const int needed = std::stoi(nvrtc.substr(0, nvrtc.find('.'))) * 1000;
  if (d->driver_version < needed) {
    return unsupported("cuda: the driver supports CUDA " + std::to_string(d->driver_version / 1000) + "." +
                       std::to_string(d->driver_version % 1000 / 10) + "; code from NVRTC " + nvrtc + " needs a driver for CUDA " +
                       std::to_string(needed / 1000) + " or newer");
  }
  SJ_TRY(check(*cu, cu->cuDeviceGet(&d->dev, 0), "cuDeviceGet"));
  int major = 0, minor = 0;
  SJ_TRY(check(*cu, cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev), "cuDeviceGetAttribute"));
  SJ_TRY(check(*cu, cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev), "cuDeviceGetAttribute"));
  SJ_TRY(check(*cu, cu->cuDeviceGetAttribute(&d->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev), "cuDeviceGetAttribute"));
  d->arch = 10 * major + minor;
  char name[256] = {};
  SJ_TRY(check(*cu, cu->cuDeviceGetName(name, sizeof name, d->dev), "cuDeviceGetName"));
  d->name = name;
  SJ_TRY(check(*cu, cu->cuDevicePrimaryCtxRetain(&d->ctx, d->dev), "cuDevicePrimaryCtxRetain"));
  owned.release();  // the driver and the device live as long as the process, as libcuda does
  return static_cast<const Device*>(d.release());
}

std::string Driver::error(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) + (text ? std::string(" (") + text + ")" : "");
}

Status check(const Driver& cu, CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return Status::ok();
  return internal_error("cuda: " + what + " failed: " + cu.error(r));
}

Status Device::bind() const {
  CUcontext current = nullptr;
  if (cu->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == ctx) return Status::ok();
  return check(*cu, cu->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

Expected<const Device*> device() {
  static const Expected<const Device*> d = open_device(library("SHAPEJIT_CUDA_DRIVER", "libcuda.so.1"));
  return d;
}

Expected<const Cublas*> cublas() {
  static const Expected<Cublas*> b = []() -> Expected<Cublas*> {
    const std::string so = library("SHAPEJIT_CUBLAS", "libcublas.so." + nvrtc_version().substr(0, nvrtc_version().find('.')));
    void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      return unsupported("cuda: cannot open " + so + " (" + (why ? why : "not found") + "); matmuls run as generated loops");
    }
    auto* b = new Cublas;
#define SJ_RESOLVE(f)                                                                      \
  b->f = reinterpret_cast<decltype(b->f)>(dlsym(lib, SJ_NAME(f)));                         \
  if (!b->f) return unsupported("cuda: " + so + " lacks " SJ_NAME(f));
    SJ_CUBLAS_FUNCTIONS(SJ_RESOLVE)
#undef SJ_RESOLVE
    return b;
  }();
  if (!b.is_ok()) return b.status();
  return static_cast<const Cublas*>(b.value());
}

}  // namespace shapejit::backends::cuda
