// The process's one ORC LLJIT, and the code of each kernel in it. Internal
// to backends/llvm; no LLVM types cross this header.
//
// Each kernel's module lives in its own JITDylib: destroying its JitCode
// removes the JITDylib and frees the code. A compile runs wholly on the
// calling thread, concurrently if several threads compile (one LLVMContext
// and TargetMachine each): it emits, optimizes and makes the object itself,
// and ORC links it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu/tile_choice.h"
#include "backends/llvm/codegen.h"
#include "backends/loops/loop_ir.h"
#include "core/support/status.h"

namespace shapejit::backends::llvm {

class JitCode {
 public:
  virtual ~JitCode() = default;
  const std::vector<StepFn>& steps() const { return steps_; }  // nullptr for non-loop steps
  size_t code_bytes() const { return code_bytes_; }

 protected:
  std::vector<StepFn> steps_;
  size_t code_bytes_ = 0;
};

// Milliseconds a compile spent in its phases.
struct JitTimes {
  double emit_ms = 0, optimize_ms = 0, codegen_ms = 0;
};

// The vector width generated loops prefer ("prefer-vector-width"), for a
// host LLVM names `cpu` and the probe measured as `probe`: none (LLVM's
// tuning for the CPU it knows) unless LLVM does not know the CPU ("generic",
// as on a VM that hides its model), whose features are still the host's:
// then 512 where the probe found full-width 512-bit FMAs, 256 where
// AVX-512's run as two halves, none without AVX-512 or a measurement.
std::string preferred_vector_width(std::string_view cpu, const cpu::TileProbe& probe);

// Whether the JIT could start here (a host LLVM knows), with the reason when not.
Status jit_available();
// What the code depends on: triple, CPU, its features, the preferred
// vector width where it is set, LLVM version, opt level.
std::string jit_target(int opt_level);
// Emits, optimizes (O0-O3 for the host CPU, IR and machine code alike) and
// links `p`; with `object`, also gives the relocatable object it linked
// (what jit_load takes).
Expected<std::unique_ptr<JitCode>> jit_compile(const loops::LoopProgram& p, int opt_level, std::string* object = nullptr, JitTimes* times = nullptr);
// Links an object jit_compile gave for the same program and target.
Expected<std::unique_ptr<JitCode>> jit_load(const loops::LoopProgram& p, std::string_view object);

}  // namespace shapejit::backends::llvm
