// The stand-in of an entry whose kernel compiles in the background
// (compile.async), chosen by cost on every call.
//
// While an entry's kernel compiles, its calls can run on the reference
// interpreter, which costs in proportion to the call's work, or wait for
// the compile, which costs what is left of it. A stand-in runs whichever
// is cheaper for the call it has: a short call runs at once, a long
// prefill waits (on the reference it took 4.7 s against an 80 ms compile),
// so that no call of the async run takes longer than the same call
// compiled synchronously would.
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
  // `make` gets the kernel through the kernel cache on the calling thread:
  // it joins the background's compile when that has begun, or compiles it
  // now (the background's task then finds it made); null when it fails.
  explicit PendingKernel(std::function<std::shared_ptr<backends::Kernel>()> make) : make_(std::move(make)) {}
  // The background task began compiling it.
  void started();
  // The compile is done: its kernel, or null when it failed.
  void finish(std::shared_ptr<backends::Kernel> kernel);
  // The kernel when it has landed, null otherwise.
  std::shared_ptr<backends::Kernel> ready() const;
  // The kernel, made on this thread if need be (see `make`); null when it failed.
  std::shared_ptr<backends::Kernel> get();
  // Of the compile's estimated `total_ms`, what is left: all of it until it
  // has begun (a compile queued behind others is this call's to make).
  double left_ms(double total_ms) const;

 private:
  const std::function<std::shared_ptr<backends::Kernel>()> make_;
  mutable std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> started_;
  bool done_ = false;
  std::shared_ptr<backends::Kernel> kernel_;
};

class StandInKernel final : public backends::Kernel {
 public:
  // `waits` counts the calls that waited (the site's stat).
  StandInKernel(std::unique_ptr<backends::Kernel> reference, const ir::SpecializedGraph& graph, std::shared_ptr<PendingKernel> pending,
                StandInCosts& costs, std::atomic<uint64_t>& waits);

  Status run(const backends::RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols,
             std::span<ir::Tensor> outputs) override;
  size_t code_bytes() const override { return reference_->code_bytes(); }
  const std::string& fallback_reason() const override { return reference_->fallback_reason(); }

  // The work of a call, in units (stand_in.cpp says what one is).
  double work(std::span<const int64_t> symbols) const;

 private:
  std::unique_ptr<backends::Kernel> reference_;
  std::shared_ptr<PendingKernel> pending_;
  StandInCosts& costs_;
  size_t nodes_;
  // Per node, the dims whose product is its work.
  std::vector<std::vector<sym::Expr>> work_;
  std::atomic<uint64_t>& waits_;
};

}  // namespace shapejit::runtime
