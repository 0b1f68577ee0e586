#include "backends/llvm/session.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Utils/LCSSA.h>
#include <llvm/Transforms/Utils/LoopSimplify.h>
#include <llvm/Transforms/Vectorize/LoopVectorize.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/support/clock.h"

namespace shapejit::backends::llvm {

namespace {

using support::ms_since;

std::string message(::llvm::Error e) { return ::llvm::toString(std::move(e)); }

class Code;

// With SHAPEJIT_PERF_MAP set, each linked step's code is named in
// /tmp/perf-<pid>.map, where `perf report` finds names for JIT code: the
// step's label (the graph node it lowers) in place of a bare address.
class PerfMap {
 public:
  static PerfMap* get() {
    static PerfMap* map = [] {
      const char* on = std::getenv("SHAPEJIT_PERF_MAP");
      return on && *on && std::strcmp(on, "0") != 0 ? new PerfMap : nullptr;
    }();
    return map;
  }
  // The sizes of an object's symbols, by name, before ORC links it.
  static std::unordered_map<std::string, uint64_t> sizes(const ::llvm::MemoryBuffer& object) {
    std::unordered_map<std::string, uint64_t> out;
    auto file = ::llvm::object::ObjectFile::createObjectFile(object.getMemBufferRef());
    if (!file) {
      ::llvm::consumeError(file.takeError());
      return out;
    }
    for (const ::llvm::object::SymbolRef& sym : (*file)->symbols()) {
      ::llvm::Expected<::llvm::StringRef> name = sym.getName();
      if (!name) {
        ::llvm::consumeError(name.takeError());
        continue;
      }
      out[name->str()] = ::llvm::object::ELFSymbolRef(sym).getSize();
    }
    return out;
  }
  void add(uint64_t address, uint64_t size, const std::string& label) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!file_) return;
    std::fprintf(file_, "%llx %llx shapejit %s\n", static_cast<unsigned long long>(address), static_cast<unsigned long long>(size),
                 label.c_str());
    std::fflush(file_);
  }

 private:
  PerfMap() : file_(std::fopen(("/tmp/perf-" + std::to_string(::getpid()) + ".map").c_str(), "a")) {}
  std::mutex mu_;
  std::FILE* file_;
};

class Session {
 public:
  static Session* get(std::string* why) {
    static std::once_flag once;
    static Session* session = nullptr;
    static std::string failure;
    std::call_once(once, [] {
      auto s = std::unique_ptr<Session>(new Session);
      if (Status st = s->init(); !st.is_ok()) failure = st.message();
      else session = s.release();
    });
    if (!session && why) *why = failure;
    return session;
  }

  Expected<std::unique_ptr<JitCode>> compile(const loops::LoopProgram& p, int opt_level, std::string* object, JitTimes* times);
  Expected<std::unique_ptr<JitCode>> load(const loops::LoopProgram& p, std::string_view object);
  std::string target(int opt_level) const {
    const std::string width = vector_width_.empty() ? "" : "/vector-width-" + vector_width_;
    return jtmb_.getTargetTriple().str() + "/" + cpu_ + "/" + features_ + width + "/llvm-" LLVM_VERSION_STRING "/O" + std::to_string(opt_level);
  }
  ::llvm::orc::LLJIT& jit() { return *jit_; }

 private:
  Session() : jtmb_(::llvm::Triple()) {}
  Status init();
  // A fresh JITDylib for one kernel, linked to the runtime's symbols.
  std::unique_ptr<Code> open_dylib(std::string* name);
  // Adds `object` to the kernel's dylib and looks its step functions up
  // (ORC links the object then).
  Status link(Code& code, const loops::LoopProgram& p, std::unique_ptr<::llvm::MemoryBuffer> object);

  ::llvm::orc::JITTargetMachineBuilder jtmb_;
  std::string cpu_, features_;
  std::string vector_width_;  // preferred_vector_width's; empty: LLVM's tuning
  std::unique_ptr<::llvm::orc::LLJIT> jit_;
  ::llvm::orc::JITDylib* runtime_ = nullptr;
  std::atomic<uint64_t> next_id_{0};
};

class Code final : public JitCode {
 public:
  Code(Session& s, ::llvm::orc::JITDylib& jd) : session_(s), jd_(jd) {}
  ~Code() override {
    // Removing the JITDylib removes its resource tracker: the code is freed.
    if (::llvm::Error e = session_.jit().getExecutionSession().removeJITDylib(jd_)) ::llvm::consumeError(std::move(e));
  }
  ::llvm::orc::JITDylib& dylib() { return jd_; }
  void set(std::vector<StepFn> steps, size_t bytes) {
    steps_ = std::move(steps);
    code_bytes_ = bytes;
  }

 private:
  Session& session_;
  ::llvm::orc::JITDylib& jd_;
};

// MachineLICM hoists a loop-invariant instruction out of a loop nest only
// where it would run anyway (LLVM's `avoid-speculation`): the vector loop
// of a dynamic row, which a short row skips, then reloads every constant of
// its exp on every iteration, and a dynamic kernel runs slower than its
// static twin. What MachineLICM hoists is
// safe to run speculatively either way, so the JIT turns the guard off,
// unless the process chose it itself. LLVM's options are the process's:
// this one changes where code runs, never what it computes.
void hoist_speculatively() {
  ::llvm::StringMap<::llvm::cl::Option*>& options = ::llvm::cl::getRegisteredOptions();
  auto it = options.find("avoid-speculation");
  if (it == options.end() || it->second->getNumOccurrences() > 0) return;
  (void)it->second->addOccurrence(0, "avoid-speculation", "false");
}

Status Session::init() {
  hoist_speculatively();
  ::llvm::InitializeNativeTarget();
  ::llvm::InitializeNativeTargetAsmPrinter();
  auto jtmb = ::llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return unsupported("llvm: cannot describe the host: " + message(jtmb.takeError()));
  jtmb_ = std::move(*jtmb);
  cpu_ = jtmb_.getCPU();
  features_ = jtmb_.getFeatures().getString();
  vector_width_ = preferred_vector_width(cpu_, cpu::tile_choice().probe);
  // ORC only links here: compile() makes each object itself.
  auto jit = ::llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb_).create();
  if (!jit) return unsupported("llvm: cannot start the JIT: " + message(jit.takeError()));
  jit_ = std::move(*jit);
  // What generated code calls: libm from the process, and our helpers.
  ::llvm::orc::ExecutionSession& es = jit_->getExecutionSession();
  runtime_ = &es.createBareJITDylib("shapejit_runtime");
  auto process = ::llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
  if (!process) return unsupported("llvm: cannot search the process's symbols: " + message(process.takeError()));
  runtime_->addGenerator(std::move(*process));
  ::llvm::orc::SymbolMap helpers;
  helpers[jit_->mangleAndIntern("shapejit_ipow_i64")] =
      ::llvm::JITEvaluatedSymbol(::llvm::pointerToJITTargetAddress(&shapejit_ipow_i64), ::llvm::JITSymbolFlags::Exported | ::llvm::JITSymbolFlags::Callable);
  helpers[jit_->mangleAndIntern("shapejit_gcd_u64")] =
      ::llvm::JITEvaluatedSymbol(::llvm::pointerToJITTargetAddress(&shapejit_gcd_u64), ::llvm::JITSymbolFlags::Exported | ::llvm::JITSymbolFlags::Callable);
  helpers[jit_->mangleAndIntern("shapejit_udiv_magic")] =
      ::llvm::JITEvaluatedSymbol(::llvm::pointerToJITTargetAddress(&shapejit_udiv_magic), ::llvm::JITSymbolFlags::Exported | ::llvm::JITSymbolFlags::Callable);
  if (::llvm::Error e = runtime_->define(::llvm::orc::absoluteSymbols(std::move(helpers)))) return unsupported("llvm: " + message(std::move(e)));
  return Status::ok();
}

Status optimize(::llvm::Module& m, ::llvm::TargetMachine& tm, int opt_level) {
  ::llvm::LoopAnalysisManager lam;
  ::llvm::FunctionAnalysisManager fam;
  ::llvm::CGSCCAnalysisManager cgam;
  ::llvm::ModuleAnalysisManager mam;
  // Vectorize, but do not unroll or interleave on top: the loops are
  // memory-bound, and unrolled AVX-512 code costs compile time and size.
  ::llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;
  tuning.LoopInterleaving = false;
  ::llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  ::llvm::ModulePassManager mpm;
  if (opt_level <= 0) {
    // The quick tier: the loops' values out of their stack slots, and the
    // loops vectorized, and nothing else: a third of O2's compile time for
    // kernels about half as fast (O0's own pipeline gives a sixth as fast).
    ::llvm::FunctionPassManager fpm;
    fpm.addPass(::llvm::SROAPass(::llvm::SROAOptions::ModifyCFG));
    fpm.addPass(::llvm::LoopSimplifyPass());
    fpm.addPass(::llvm::LCSSAPass());
    fpm.addPass(::llvm::LoopVectorizePass());
    mpm.addPass(::llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  } else {
    static const ::llvm::OptimizationLevel* kLevels[] = {&::llvm::OptimizationLevel::O1, &::llvm::OptimizationLevel::O2,
                                                       &::llvm::OptimizationLevel::O3};
    mpm = pb.buildPerModuleDefaultPipeline(*kLevels[std::min(opt_level, 3) - 1]);
  }
  mpm.run(m, mam);
  return Status::ok();
}

std::unique_ptr<Code> Session::open_dylib(std::string* name) {
  *name = "shapejit_kernel_" + std::to_string(next_id_++);
  ::llvm::orc::JITDylib& jd = jit_->getExecutionSession().createBareJITDylib(*name);
  jd.addToLinkOrder(*runtime_);
  return std::make_unique<Code>(*this, jd);
}

Status Session::link(Code& code, const loops::LoopProgram& p, std::unique_ptr<::llvm::MemoryBuffer> object) {
  const size_t bytes = object->getBufferSize();
  PerfMap* const perf = PerfMap::get();
  const std::unordered_map<std::string, uint64_t> sizes = perf ? PerfMap::sizes(*object) : std::unordered_map<std::string, uint64_t>{};
  if (::llvm::Error e = jit_->addObjectFile(code.dylib(), std::move(object))) return internal_error("llvm: adding an object: " + message(std::move(e)));
  std::vector<StepFn> steps;
  const std::vector<std::string> names = step_names(p);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.empty()) {
      steps.push_back(nullptr);
      continue;
    }
    auto addr = jit_->lookup(code.dylib(), n);
    if (!addr) return internal_error("llvm: linking " + n + ": " + message(addr.takeError()));
    steps.push_back(addr->toPtr<StepFn>());
    if (perf) {
      const auto size = sizes.find(n);
      perf->add(addr->getValue(), size == sizes.end() ? 1 : size->second, p.steps[i].label);
    }
  }
  code.set(std::move(steps), bytes);
  return Status::ok();
}

Expected<std::unique_ptr<JitCode>> Session::compile(const loops::LoopProgram& p, int opt_level, std::string* object, JitTimes* times) {
  JitTimes own;
  if (!times) times = &own;
  auto t0 = std::chrono::steady_clock::now();
  std::string name;
  std::unique_ptr<Code> code = open_dylib(&name);
  auto ctx = std::make_unique<::llvm::LLVMContext>();
  auto module = std::make_unique<::llvm::Module>(name, *ctx);
  ::llvm::orc::JITTargetMachineBuilder jtmb = jtmb_;
  jtmb.setCodeGenOptLevel(opt_level >= 3 ? ::llvm::CodeGenOpt::Aggressive : opt_level == 0 ? ::llvm::CodeGenOpt::None : ::llvm::CodeGenOpt::Default);
  auto tm = jtmb.createTargetMachine();
  if (!tm) return internal_error("llvm: no target machine: " + message(tm.takeError()));
  module->setDataLayout((*tm)->createDataLayout());
  module->setTargetTriple(jtmb.getTargetTriple().str());
  SJ_TRY(emit_program(p, *module));
  for (::llvm::Function& f : *module) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", cpu_);
    f.addFnAttr("target-features", features_);
    if (!vector_width_.empty()) f.addFnAttr("prefer-vector-width", vector_width_);
  }
  times->emit_ms += ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  SJ_TRY(optimize(*module, **tm, opt_level));
  times->optimize_ms += ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  // Machine code is made here, on the compiling thread and at the
  // compile's own level. Left to ORC's compile layer, a module is compiled
  // by whichever thread next drains the session's queue of pending work:
  // a call's quick compile could wait on a background thread (nice 10) that
  // had taken it up, or make another kernel's code at the JIT's level.
  // Linking can still run on another thread; it is short, and each image
  // is the buffer made here.
  ::llvm::orc::SimpleCompiler codegen(**tm);
  auto built = codegen(*module);
  if (!built) return internal_error("llvm: " + message(built.takeError()));
  if (object) object->assign((*built)->getBufferStart(), (*built)->getBufferSize());
  SJ_TRY(link(*code, p, std::move(*built)));
  times->codegen_ms += ms_since(t0);
  return std::unique_ptr<JitCode>(std::move(code));
}

// An image is one ELF object, whose section headers LLVM writes last: one
// that holds more (a record of an older build, which could take another
// kernel's object into an image) is refused, and the cache compiles again.
Status check_one_object(std::string_view object) {
  auto field = [&](size_t at, size_t bytes) {
    uint64_t v = 0;
    std::memcpy(&v, object.data() + at, bytes);  // little-endian host and object
    return v;
  };
  if (object.size() < 64 || object.substr(0, 4) != "\x7f" "ELF" || object[4] != 2) {
    return unsupported("llvm: the image is not a 64-bit ELF object");
  }
  const uint64_t end = field(0x28, 8) + field(0x3C, 2) * field(0x3A, 2);  // e_shoff + e_shnum * e_shentsize
  if (end != object.size()) {
    return unsupported("llvm: the image is " + std::to_string(object.size()) + " bytes, its object " + std::to_string(end));
  }
  return Status::ok();
}

// An object this session compiled, in this process or another with the
// same target (the cache key holds it): linked, not compiled.
Expected<std::unique_ptr<JitCode>> Session::load(const loops::LoopProgram& p, std::string_view object) {
  SJ_TRY(check_one_object(object));
  std::string name;
  std::unique_ptr<Code> code = open_dylib(&name);
  SJ_TRY(link(*code, p, ::llvm::MemoryBuffer::getMemBufferCopy(::llvm::StringRef(object.data(), object.size()), name)));
  return std::unique_ptr<JitCode>(std::move(code));
}

}  // namespace

std::string preferred_vector_width(std::string_view cpu, const cpu::TileProbe& probe) {
  if (!(cpu.empty() || cpu == "generic" || cpu == "unknown") || !probe.avx512 || !probe.measured) return "";
  return cpu::full_width_512(probe) ? "512" : "256";
}

Status jit_available() {
  std::string why;
  return Session::get(&why) ? Status::ok() : unsupported(why);
}

std::string jit_target(int opt_level) {
  Session* s = Session::get(nullptr);
  return s ? s->target(opt_level) : "llvm-unavailable";
}

Expected<std::unique_ptr<JitCode>> jit_compile(const loops::LoopProgram& p, int opt_level, std::string* object, JitTimes* times) {
  std::string why;
  Session* s = Session::get(&why);
  if (!s) return unsupported(why);
  return s->compile(p, opt_level, object, times);
}

Expected<std::unique_ptr<JitCode>> jit_load(const loops::LoopProgram& p, std::string_view object) {
  std::string why;
  Session* s = Session::get(&why);
  if (!s) return unsupported(why);
  return s->load(p, object);
}

}  // namespace shapejit::backends::llvm
