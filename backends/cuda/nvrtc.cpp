#include "backends/cuda/nvrtc.h"

#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <memory>
#include <sstream>
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

namespace {

using Program = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

// `source` compiled with `target` (--gpu-architecture=...) and `extra`
// options; the program, and its log in `log`.
Expected<Program> compile(const std::string& source, const std::string& target, const std::vector<std::string>& extra, std::string& log) {
  nvrtcProgram raw = nullptr;
  if (nvrtcResult r = nvrtcCreateProgram(&raw, source.c_str(), "shapejit.cu", 0, nullptr, nullptr); r != NVRTC_SUCCESS) {
    return internal_error(std::string("nvrtc: creating the program: ") + nvrtcGetErrorString(r));
  }
  Program prog(raw);
  std::vector<const char*> options = {target.c_str(), "--std=c++17", "--device-as-default-execution-space"};
  for (const std::string& o : extra) options.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(raw, static_cast<int>(options.size()), options.data());
  size_t size = 0;
  nvrtcGetProgramLogSize(raw, &size);
  log.assign(size, '\0');
  if (size) nvrtcGetProgramLog(raw, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (r != NVRTC_SUCCESS) {
    return internal_error(std::string("nvrtc: ") + nvrtcGetErrorString(r) + " compiling for " + target.substr(target.find('=') + 1) + " (source: " +
                          keep_source(source) + "):\n" + log);
  }
  return prog;
}

int number_before(const std::string& line, const std::string& what) {
  const size_t at = line.find(what);
  if (at == std::string::npos) return 0;
  size_t b = at;
  while (b > 0 && line[b - 1] == ' ') --b;
  size_t a = b;
  while (a > 0 && std::isdigit(static_cast<unsigned char>(line[a - 1]))) --a;
  return a < b ? std::stoi(line.substr(a, b - a)) : 0;
}

}  // namespace

Expected<std::vector<KernelResources>> nvrtc_resources(const std::string& source, int arch) {
  std::string log;
  SJ_TRY(compile(source, "--gpu-architecture=sm_" + std::to_string(arch), {"--ptxas-options=-v"}, log));
  // ptxas info    : Compiling entry function 'k' for 'sm_90'
  // ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  // ptxas info    : Used 14 registers, used 1 barriers, 256 bytes smem
  std::vector<KernelResources> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (const size_t at = line.find("Compiling entry function '"); at != std::string::npos) {
      const size_t from = at + 26;
      out.push_back({line.substr(from, line.find('\'', from) - from)});
    } else if (out.empty()) {
      continue;
    } else if (line.find("stack frame") != std::string::npos) {
      out.back().stack_bytes = number_before(line, "bytes stack frame");
      out.back().spill_stores = number_before(line, "bytes spill stores");
      out.back().spill_loads = number_before(line, "bytes spill loads");
    } else if (line.find(" registers") != std::string::npos) {
      out.back().registers = number_before(line, "registers");
      out.back().shared_bytes = number_before(line, "bytes smem");
    }
  }
  return out;
}

Expected<std::string> nvrtc_compile(const std::string& source, int arch, bool ptx) {
  std::string log;
  const std::string target = std::string(ptx ? "--gpu-architecture=compute_" : "--gpu-architecture=sm_") + std::to_string(arch);
  Program prog = SJ_TRY(compile(source, target, {}, log));
  nvrtcProgram raw = prog.get();
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
