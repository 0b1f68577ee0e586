#include "backends/cuda/nvrtc.h"

#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/support/hash.h"

namespace shapejit::backends::cuda {

namespace {

// Where the source of a failed compile goes: $TMPDIR/shapejit-cuda, named
// by the source's hash so that a repeated failure overwrites one file.
std::string keep_source(const std::string& source) {
  const char* tmp = std::getenv("TMPDIR");
  std::filesystem::path dir = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / "shapejit-cuda";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::path path = dir / (Hasher().add_str(source).finish().hex() + ".cu");
  std::ofstream out(path);
  out << source;
  if (ec || !out) return "(not written: " + dir.string() + " is not writable)";
  return path.string();
}

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> nvrtc_archs() {
  int n = 0;
  std::vector<int> archs;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS) return archs;
  archs.resize(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) archs.clear();
  return archs;
}

Expected<std::string> nvrtc_compile(const std::string& source, int arch, bool ptx) {
  nvrtcProgram raw = nullptr;
  if (nvrtcResult r = nvrtcCreateProgram(&raw, source.c_str(), "shapejit.cu", 0, nullptr, nullptr); r != NVRTC_SUCCESS) {
    return internal_error(std::string("nvrtc: creating the program: ") + nvrtcGetErrorString(r));
  }
  std::unique_ptr<_nvrtcProgram, ProgramDeleter> prog(raw);
  const std::string target = std::string(ptx ? "--gpu-architecture=compute_" : "--gpu-architecture=sm_") + std::to_string(arch);
  const char* options[] = {target.c_str(), "--std=c++17", "--device-as-default-execution-space"};
  const nvrtcResult r = nvrtcCompileProgram(raw, 3, options);
  if (r != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(raw, &size);
    std::string log(size, '\0');
    if (size) nvrtcGetProgramLog(raw, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return internal_error(std::string("nvrtc: ") + nvrtcGetErrorString(r) + " compiling for " + target.substr(21) + " (source: " +
                          keep_source(source) + "):\n" + log);
  }
  size_t size = 0;
  std::string image;
  if (ptx) {
    nvrtcGetPTXSize(raw, &size);
    image.resize(size);
    nvrtcGetPTX(raw, image.data());
  } else {
    nvrtcGetCUBINSize(raw, &size);
    image.resize(size);
    nvrtcGetCUBIN(raw, image.data());
  }
  return image;
}

}  // namespace shapejit::backends::cuda
