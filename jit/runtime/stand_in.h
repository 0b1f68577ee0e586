// The stand-in of an entry whose kernel compiles in the background
// (compile.async), chosen by cost on every call.
//
// While an entry's kernel compiles, its calls can run on the reference
// interpreter, which costs in proportion to the call's work, or wait for
// the compile, which costs what is left of it. A stand-in runs whichever
// is cheaper for the call it has: a short call runs at once, a long
// prefill waits (on the reference it would take many times the compile),
// so that no call of the async run takes longer than the same call
// compiled synchronously would.
//
// Where the backend has a quicker tier (LLVM at O0: a fraction of the
// compile, a slower kernel, still far faster than the reference), a
// call that would wait compiles that instead, on every core, and runs on
// it; the calls after it run on it too until the entry's own kernel lands,
// whose compile starts then at the calls' priority if it has not begun.
// So the call that waits longest waits for less than a synchronous compile
// of the same kernel: compile.async's worst call is the quick compile, not
// the full one.
//
// A third runner beats both: the trace's dynamic kernel, compiled once for
// every shape the trace takes (its dims left symbolic, the entry's layout
// kept). Under a policy that compiles a kernel per shape (always_static,
// JAX's), each new shape of a graph is a miss, and its calls run on the
// dynamic kernel at compiled speed while their own kernel compiles: only a
// graph's first miss chooses between the reference and a wait. The
// dynamic kernel is compiled in the background after the first miss's own.
//
// Both sides are estimates that the Jit learns as it goes (StandInCosts):
// the reference interpreter's time per unit of work (an element computed,
// a multiply-add of a product) from the stand-ins' own runs, and a
// compile's time per graph node from the compiles calls waited for (a
// background compile shares the cores with the calls, and runs slower than
// the one the call would make). They start
// from figures measured on the project's machines; an estimate that errs
// makes a call wait when it need not, never run past the compile by more
// than the error.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/backend.h"
#include "core/ir/specialize.h"

namespace shapejit::runtime {

class StandInCosts {
 public:
  // What the Jit has seen, folded into running averages.
  void saw_reference(double units, double ms);
  void saw_compile(size_t nodes, double ms);
  double reference_ms(double units) const { return units * ns_per_unit_.load(std::memory_order_relaxed) * 1e-6; }
  double compile_ms(size_t nodes) const { return static_cast<double>(nodes) * ms_per_node_.load(std::memory_order_relaxed); }

 private:
  // Starting figures (the reference interpreter's pointwise and product
  // loops, an LLVM compile of a fused graph, on a 2-core EPYC).
  std::atomic<double> ns_per_unit_{2.0};
  std::atomic<double> ms_per_node_{2.0};
};

// A compile in the background, as its stand-in sees it.
class PendingKernel {
 public:
  // `make(begun)` makes the kernel on the calling thread, on every core
  // the calls have: through the kernel cache when the background has not
  // begun it (the background's task then finds it made), and otherwise
  // beside the background's compile, which runs on one thread at a lower
  // priority (background.h), sharing the steps either has compiled or is
  // compiling. Null when it fails.
  using Make = std::function<std::shared_ptr<backends::Kernel>(bool begun)>;
  // `hurry(this)` starts the compile's task at once if it has not begun (Background::hurry).
  using Hurry = std::function<void(const PendingKernel*)>;
  explicit PendingKernel(Make make, Hurry hurry = {}) : make_(std::move(make)), hurry_(std::move(hurry)) {}
  // The background task began compiling it.
  void started();
  // The compile is done: its kernel, or null when it failed.
  void finish(std::shared_ptr<backends::Kernel> kernel);
  // The kernel when it has landed, null otherwise.
  std::shared_ptr<backends::Kernel> ready() const;
  // The kernel, made on this thread if need be (see `make`); null when it failed.
  std::shared_ptr<backends::Kernel> get();
  // A call has made a quick kernel in its stead: if the background has not
  // begun it, it begins now, at the calls' priority (Background::hurry). Once.
  void hurry();
  // Of the compile's estimated `total_ms`, what is left: all of it until it
  // has begun (a compile queued behind others is this call's to make).
  double left_ms(double total_ms) const;

 private:
  const Make make_;
  const Hurry hurry_;
  std::atomic<bool> hurried_{false};
  mutable std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> started_;
  bool done_ = false;
  std::shared_ptr<backends::Kernel> kernel_;
};

// What a site's stand-ins count, read into its stats.
struct StandInCounts {
  std::atomic<uint64_t> waits{0};    // calls that waited for a compile (the quick one where there is one)
  std::atomic<uint64_t> dynamic{0};  // calls run on the trace's dynamic kernel
  std::atomic<uint64_t> quick{0};    // calls run on a quick kernel (CompileRequest::quick)
};

// A kernel of the quicker tier, made by the first call that needs it.
class QuickKernel {
 public:
  // `make` compiles it on the calling thread; null when the backend has no
  // quicker tier or the compile failed.
  using Make = std::function<std::shared_ptr<backends::Kernel>()>;
  explicit QuickKernel(Make make) : make_(std::move(make)) {}
  // The kernel once made, else null.
  std::shared_ptr<backends::Kernel> ready() const;
  // The kernel, made here if no call has tried yet (a call that comes
  // while another makes it waits for that one); null when there is none.
  std::shared_ptr<backends::Kernel> get();

 private:
  const Make make_;
  std::mutex making_;  // held while it compiles
  mutable std::mutex mu_;
  bool tried_ = false;
  std::shared_ptr<backends::Kernel> kernel_;
};

class StandInKernel final : public backends::Kernel {
 public:
  // `counts` are the site's. `dynamic`, when
  // given, is the trace's dynamic kernel, compiled, which takes every call
  // the entry does: the calls run on it, and never wait. `quick`, when
  // given, is made by the first call that would wait (see above).
  StandInKernel(std::unique_ptr<backends::Kernel> reference, const ir::SpecializedGraph& graph, std::shared_ptr<PendingKernel> pending,
                StandInCosts& costs, StandInCounts& counts, std::shared_ptr<backends::Kernel> dynamic = nullptr,
                std::shared_ptr<QuickKernel> quick = nullptr);

  Status run(const backends::RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols,
             std::span<ir::Tensor> outputs) override;
  size_t code_bytes() const override { return reference_->code_bytes(); }
  const std::string& fallback_reason() const override { return reference_->fallback_reason(); }

  // The work of a call, in units (stand_in.cpp says what one is).
  double work(std::span<const int64_t> symbols) const;

 private:
  std::unique_ptr<backends::Kernel> reference_;
  std::shared_ptr<backends::Kernel> dynamic_;
  std::shared_ptr<PendingKernel> pending_;
  std::shared_ptr<QuickKernel> quick_;
  StandInCosts& costs_;
  size_t nodes_;
  // Per node, the dims whose product is its work.
  std::vector<std::vector<sym::Expr>> work_;
  StandInCounts& counts_;
};

}  // namespace shapejit::runtime
