// Fault injection: a testing mode that makes a stage of a call fail, to
// show that every failure on shapejit's side becomes NumPy's answer (the
// Python front end's guarantee) or the reference interpreter's, never a
// wrong one, an exception of shapejit's own or a crash.
//
//   SHAPEJIT_FAULTS="stage[:rate],..."   the stages that fail, each at every
//                                        chance (rate 1, the default) or at a
//                                        fraction of them
//   SHAPEJIT_FAULT_SEED=N                which chances a rate below 1 picks
//   SHAPEJIT_FAULT_LOG=1                 each failure made, a line on stderr
//
// Read once per process. Unset, `fault()` is one load and a branch. The
// stages, in the order a call meets them:
//   trace      a node the trace adds raises (the Python package's tracing values)
//   numpy      a NumPy function or ufunc is not in the table (a graph break)
//   symbolic   a question about sizes that needs the call's sizes is not answered
//   lower      lowering a specialized graph to loops fails
//   compile    the backend's compile fails (the reference interpreter runs it)
//   fallback   the reference interpreter's compile fails too
//   load       a kernel cache lookup misses (every tier)
//   run        a kernel cannot finish the call (a run-time error)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shapejit::support {

enum class Fault : uint8_t { kTrace, kNumpy, kSymbolic, kLower, kCompile, kFallback, kLoad, kRun, kCount };

// The stage's name, as SHAPEJIT_FAULTS spells it.
const char* fault_name(Fault f);

// What SHAPEJIT_FAULTS says: each stage's rate (0: it never fails), and
// the seed of the draws of those below 1.
struct FaultSpec {
  std::array<double, static_cast<size_t>(Fault::kCount)> rate{};
  uint64_t seed = 0;
  bool any = false;
  // Whether stage `f` fails at chance number `chance` (the process counts
  // its chances; the same seed and order of chances, the same failures).
  bool fires(Fault f, uint64_t chance) const;
};
// `names` as SHAPEJIT_FAULTS spells it; a name that is no stage is added
// to `unknown` (quoted, comma-separated) and fails nothing.
FaultSpec parse_faults(std::string_view names, uint64_t seed, std::string* unknown = nullptr);

namespace detail {
extern const bool any_fault;  // whether SHAPEJIT_FAULTS names a stage
bool fault_fires(Fault f);
}  // namespace detail

// Whether stage `f` fails at this chance.
inline bool fault(Fault f) { return detail::any_fault && detail::fault_fires(f); }

// The stages SHAPEJIT_FAULTS names (the Python package asks for its own).
std::vector<std::string> faults_named();

}  // namespace shapejit::support
