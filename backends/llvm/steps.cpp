#include "backends/llvm/steps.h"

#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <map>

#include "backends/llvm/session.h"
#include "backends/loops/detach_step.h"
#include "core/support/clock.h"

namespace shapejit::backends::llvm {

namespace {

using support::Clock;
using support::ms_since;

// Steps a Jit's backend keeps for itself when no Jit lends it a cache: a
// kernel's equal steps still compile once.
constexpr size_t kOwnCacheBytes = size_t{64} << 20;
// What a step takes to compile, for the estimate that decides whether a
// compile is slow enough to tell the user about (a step of a decoder
// block or GPT-2 takes 10 to 20 ms at O2 on one core).
constexpr double kStepEstimateMs = 20;

// One step's code, a part in the kernel cache.
class StepArtifact final : public cache::Artifact {
 public:
  explicit StepArtifact(std::unique_ptr<JitCode> code) : code_(std::move(code)) {}
  StepFn fn() const { return code_->steps()[0]; }
  size_t code_bytes() const override { return code_->code_bytes() + sizeof(*this); }

 private:
  std::unique_ptr<JitCode> code_;
};

#if defined(__SANITIZE_THREAD__)
// Under ThreadSanitizer steps compile on the calling thread: Debian's TBB
// is not instrumented, so TSan cannot see its workers join, and it reports
// the stack a parallel_for waited on as raced when the caller reuses it.
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif

// The cores this process may run on (its affinity, as TBB sees it).
int arena_threads(int threads) {
  if (kThreadSanitizer) return 1;
  const int cores = std::max(1, tbb::info::default_concurrency());
  return threads > 0 ? std::min(threads, cores) : cores;
}

}  // namespace

StepCompiler::StepCompiler(int opt_level, std::string target)
    : opt_level_(opt_level),
      target_(std::move(target)),
      threads_(arena_threads(0)),
      own_(std::make_unique<cache::KernelCache>(kOwnCacheBytes)),
      cache_(own_.get()),
      arena_(std::make_unique<tbb::task_arena>(threads_)) {}

StepCompiler::~StepCompiler() = default;

void StepCompiler::attach(const CompileServices& s) {
  services_ = s;
  if (s.cache) {
    cache_ = s.cache;
    own_.reset();
  }
  threads_ = arena_threads(s.threads);
  arena_ = std::make_unique<tbb::task_arena>(threads_);
}

Expected<std::vector<BoundStep>> StepCompiler::bind(const loops::LoopProgram& p, size_t nodes, CompilePhases& phases,
                                                     const CompileContext& context) {
  const Clock::time_point t0 = Clock::now();
  std::vector<BoundStep> bound(p.steps.size());
  // 1. Each step detached; equal ones under one key.
  std::vector<loops::DetachedStep> distinct;
  std::map<std::pair<uint64_t, uint64_t>, size_t> index;
  std::vector<size_t> of_step(p.steps.size(), SIZE_MAX);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const loops::Step::Kind kind = p.steps[s].kind;
    if (kind != loops::Step::Kind::kLoops && kind != loops::Step::Kind::kAttention) continue;
    loops::DetachedStep d = loops::detach_step(p, static_cast<int>(s));
    bound[s].buffers = d.buffers;
    bound[s].symbols = d.symbols;
    bound[s].offsets = d.offsets;
    auto [it, fresh] = index.emplace(std::make_pair(d.key.hi, d.key.lo), distinct.size());
    if (fresh) distinct.push_back(std::move(d));
    of_step[s] = it->second;
    ++phases.steps;
  }
  phases.distinct_steps = static_cast<int>(distinct.size());
  std::vector<Hash128> keys;
  for (const loops::DetachedStep& d : distinct) keys.push_back(cache::make_key(d.key, Hash128{}, "llvm-step", target_));

  // A compile slow enough to notice is told about (the steps not in
  // memory, at the time a step takes, on the threads there are).
  CompileServices::Notice notice;
  if (services_.notice) {
    for (const Hash128& k : keys) notice.to_compile += cache_->find(k) == nullptr;
    notice.site = context.site;
    notice.nodes = nodes;
    notice.steps = phases.steps;
    notice.distinct_steps = phases.distinct_steps;
    notice.estimate_ms = notice.to_compile * kStepEstimateMs / threads_;
    if (notice.estimate_ms >= services_.slow_ms) services_.notice(notice);
  }

  // 2. The distinct steps from the cache, or compiled, several at once.
  std::vector<Expected<cache::Found>> found(distinct.size(), Status(Code::kInternal, "not compiled"));
  std::vector<JitTimes> times(distinct.size());
  auto get = [&](size_t i) {
    const loops::LoopProgram& program = distinct[i].program;
    JitTimes& t = times[i];
    cache::Maker maker;
    maker.target = "llvm step " + target_;
    maker.part = true;
    const int opt = opt_level_;
    maker.compile = [&program, &t, opt](std::string* image) -> Expected<std::unique_ptr<cache::Artifact>> {
      std::unique_ptr<JitCode> code = SJ_TRY(jit_compile(program, opt, image, &t));
      return std::unique_ptr<cache::Artifact>(new StepArtifact(std::move(code)));
    };
    maker.load = [&program](std::string_view image) -> Expected<std::unique_ptr<cache::Artifact>> {
      std::unique_ptr<JitCode> code = SJ_TRY(jit_load(program, image));
      return std::unique_ptr<cache::Artifact>(new StepArtifact(std::move(code)));
    };
    found[i] = cache_->get(keys[i], maker);
  };
  if (distinct.size() > 1 && threads_ > 1 && !context.background) {
    arena_->execute([&] { tbb::parallel_for(size_t{0}, distinct.size(), get); });
  } else {
    for (size_t i = 0; i < distinct.size(); ++i) get(i);
  }

  // 3. Each step bound to its code.
  for (size_t i = 0; i < distinct.size(); ++i) {
    if (!found[i].is_ok()) return found[i].status().with_context("llvm: " + distinct[i].program.steps[0].label);
    phases.compiled_steps += found[i]->origin == cache::Origin::kCompile;
    phases.emit_ms += times[i].emit_ms;
    phases.optimize_ms += times[i].optimize_ms;
    phases.codegen_ms += times[i].codegen_ms;
  }
  for (size_t s = 0; s < p.steps.size(); ++s) {
    if (of_step[s] == SIZE_MAX) continue;
    const auto& artifact = found[of_step[s]]->artifact;
    bound[s].fn = static_cast<const StepArtifact&>(*artifact).fn();
    bound[s].code = artifact;
  }
  phases.steps_ms += ms_since(t0);
  if (services_.notice && notice.estimate_ms >= services_.slow_ms) {
    notice.done = true;
    notice.elapsed_ms = ms_since(t0);
    services_.notice(notice);
  }
  return bound;
}

}  // namespace shapejit::backends::llvm
