// Modules of the mock: an image's CUDA C, given by the backend, compiled for
// the host and loaded.
//
// The image itself is what NVRTC made for the GPU; the mock checks it is a
// cubin for a GPU (an ELF of machine EM_CUDA) or PTX, and that it defines
// every kernel of the source, so that the code that runs on the host is the
// code that would run on a GPU. The host library is compiled once per
// source and compiler flags into $XDG_CACHE_HOME/shapejit-mock-cuda (the
// tests' own folder), written under a temporary name and renamed, so that
// processes running side by side share it.
#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/backends/cuda/mock_driver/mock_cuda.h"

namespace shapejit::mock_cuda {

namespace {

std::mutex g_mu;
std::map<std::string, std::string> g_sources;  // image hash: source

std::string hash_hex(const void* data, size_t bytes) {
  const XXH128_hash_t h = XXH3_128bits(data, bytes);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64), static_cast<unsigned long long>(h.low64));
  return buf;
}

// The bytes of an image: a cubin's from its ELF header, PTX's to its NUL.
// 0 when it is neither.
size_t image_bytes(const void* image) {
  const auto* eh = static_cast<const Elf64_Ehdr*>(image);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0) {
    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_CUDA) return 0;
    size_t end = eh->e_shoff + size_t{eh->e_shnum} * eh->e_shentsize;
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(static_cast<const char*>(image) + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type != SHT_NOBITS) end = std::max<size_t>(end, sh[i].sh_offset + sh[i].sh_size);
    }
    return std::max<size_t>(end, eh->e_phoff + size_t{eh->e_phnum} * eh->e_phentsize);
  }
  const char* text = static_cast<const char*>(image);
  if (std::strncmp(text, "//", 2) != 0 && std::strstr(text, ".version") == nullptr) return 0;
  return std::strlen(text) + 1;
}

// Whether the image defines function `name`: a cubin's symbol table, PTX's
// `.entry` lines.
bool image_defines(const void* image, const std::string& name) {
  const auto* eh = static_cast<const Elf64_Ehdr*>(image);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) {
    return std::strstr(static_cast<const char*>(image), (".entry " + name + "(").c_str()) != nullptr;
  }
  const char* base = static_cast<const char*>(image);
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_SYMTAB) continue;
    const char* names = base + sh[sh[i].sh_link].sh_offset;
    const auto* sym = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
      if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && name == names + sym[k].st_name) return true;
    }
  }
  return false;
}

// The kernels a source defines: `__global__ void [__launch_bounds__(n)] name(`.
std::vector<Kernel> kernels_of(const std::string& src) {
  std::vector<Kernel> out;
  for (size_t at = src.find("__global__"); at != std::string::npos; at = src.find("__global__", at + 1)) {
    size_t p = src.find_first_not_of(" \n", at + 10);
    if (src.compare(p, 4, "void") != 0) continue;
    p = src.find_first_not_of(" \n", p + 4);
    Kernel k;
    if (src.compare(p, 18, "__launch_bounds__(") == 0) {
      k.max_threads = std::atoi(src.c_str() + p + 18);
      p = src.find_first_not_of(" \n", src.find(')', p) + 1);
    }
    const size_t end = src.find('(', p);
    k.name = src.substr(p, end - p);
    out.push_back(std::move(k));
  }
  return out;
}

std::string cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = xdg && *xdg ? std::string(xdg) : std::string(tmp && *tmp ? tmp : "/tmp");
  return dir + "/shapejit-mock-cuda";
}

// The preludes' text, part of a host library's key.
const std::string& prelude_text() {
  static const std::string text = [] {
    std::string all;
    const std::string dir = std::filesystem::path(SJ_MOCK_PRELUDE).parent_path();
    for (const std::string& path : {std::string(SJ_MOCK_PRELUDE), dir + "/kernel_prelude_abi.h"}) {
      std::ifstream in(path);
      std::stringstream ss;
      ss << in.rdbuf();
      all += ss.str();
    }
    return all;
  }();
  return text;
}

// The host library for `source` (with the kernel table after it), compiled
// or found; its path, or the compiler's words.
bool compile(const std::string& source, const std::vector<Kernel>& kernels, std::string& path_or_error) {
  std::string unit = source + "\n\nextern \"C\" SJ_MOCK_EXPORT void sj_mock_bind(const SjMockRuntime* rt) { sj_mock_rt = rt; }\n";
  unit += "extern \"C\" SJ_MOCK_EXPORT const SjMockKernel sj_mock_kernels[] = {\n";
  for (const Kernel& k : kernels) unit += "  SJ_MOCK_KERNEL(" + k.name + "),\n";
  unit += "  {nullptr, nullptr, 0, nullptr}};\n";
  const std::string flags = SJ_MOCK_KERNEL_FLAGS;
  const std::string keyed = unit + "\n" + flags + "\n" SJ_MOCK_CXX "\n" + prelude_text();
  const std::string key = hash_hex(keyed.data(), keyed.size());
  const std::string dir = cache_dir();
  const std::string so = dir + "/" + key + ".so";
  if (::access(so.c_str(), R_OK) == 0) {
    path_or_error = so;
    return true;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string stem = dir + "/tmp-" + std::to_string(::getpid()) + "-" + key;
  {
    std::ofstream out(stem + ".cpp");
    out << unit;
    if (!out) {
      path_or_error = "cannot write " + stem + ".cpp";
      return false;
    }
  }
  const std::string cmd = std::string(SJ_MOCK_CXX) + " " + flags + " -include " SJ_MOCK_PRELUDE " -o " + stem + ".so " + stem + ".cpp 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string log;
  char buf[4096];
  while (p && std::fgets(buf, sizeof buf, p)) log += buf;
  const int rc = p ? ::pclose(p) : -1;
  // $SHAPEJIT_MOCK_CUDA_KEEP keeps the unit beside its library, to read.
  if (const char* keep = std::getenv("SHAPEJIT_MOCK_CUDA_KEEP"); keep && *keep) {
    std::filesystem::rename(stem + ".cpp", dir + "/" + key + ".cpp", ec);
  } else {
    std::filesystem::remove(stem + ".cpp", ec);
  }
  if (rc != 0) {
    path_or_error = "compiling the module for the host failed (" + cmd + "):\n" + log;
    return false;
  }
  std::filesystem::rename(stem + ".so", so, ec);
  path_or_error = ec ? stem + ".so" : so;
  return true;
}

}  // namespace

void remember_source(const void* image, size_t bytes, const char* source) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_sources[hash_hex(image, bytes)] = source;
}

CUresult load_module(const void* image, Module& out) {
  const size_t bytes = image ? image_bytes(image) : 0;
  if (bytes == 0) return fail(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: the image is neither a cubin for a GPU nor PTX");
  std::string source;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_sources.find(hash_hex(image, bytes));
    if (it == g_sources.end()) {
      return fail(CUDA_ERROR_INVALID_IMAGE,
                  "cuModuleLoadData: the mock runs kernels from their CUDA C, and none was given for this image (shapejitModuleSource)");
    }
    source = it->second;
  }
  std::vector<Kernel> kernels = kernels_of(source);
  for (const Kernel& k : kernels) {
    if (!image_defines(image, k.name)) {
      return fail(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: the image lacks kernel " + k.name + " of its source");
    }
  }
  std::string so;
  if (!compile(source, kernels, so)) return fail(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: " + so);
  void* lib = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fail(CUDA_ERROR_INVALID_IMAGE, std::string("cuModuleLoadData: dlopen ") + so + ": " + ::dlerror());
  auto bind = reinterpret_cast<void (*)(const SjMockRuntime*)>(::dlsym(lib, "sj_mock_bind"));
  const auto* table = static_cast<const SjMockKernel*>(::dlsym(lib, "sj_mock_kernels"));
  if (!bind || !table) {
    ::dlclose(lib);
    return fail(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: " + so + " lacks the mock's table");
  }
  bind(&lane_runtime());
  for (size_t i = 0; i < kernels.size(); ++i) {
    kernels[i].run = table[i].run;
    kernels[i].param_sizes.assign(table[i].param_sizes, table[i].param_sizes + table[i].num_params);
  }
  out.library = lib;
  out.kernels = std::move(kernels);
  return CUDA_SUCCESS;
}

}  // namespace shapejit::mock_cuda
