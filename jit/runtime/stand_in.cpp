#include "jit/runtime/stand_in.h"

#include <algorithm>
#include <cmath>

namespace shapejit::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// A running average that follows what it sees, starting from the guess.
void fold(std::atomic<double>& average, double seen) {
  if (!(seen > 0) || !std::isfinite(seen)) return;
  double old = average.load(std::memory_order_relaxed);
  while (!average.compare_exchange_weak(old, 0.7 * old + 0.3 * seen, std::memory_order_relaxed)) {
  }
}

}  // namespace

void StandInCosts::saw_reference(double units, double ms) {
  if (units >= 1e5) fold(ns_per_unit_, ms * 1e6 / units);  // a small call is mostly fixed cost: not a rate
}

void StandInCosts::saw_compile(size_t nodes, double ms) {
  if (nodes > 0) fold(ms_per_node_, ms / static_cast<double>(nodes));
}

void PendingKernel::started() {
  std::lock_guard<std::mutex> lock(mu_);
  started_ = Clock::now();
}

void PendingKernel::finish(std::shared_ptr<backends::Kernel> kernel) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  kernel_ = std::move(kernel);
}

std::shared_ptr<backends::Kernel> PendingKernel::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernel_;
}

std::shared_ptr<backends::Kernel> PendingKernel::get() {
  bool begun;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return kernel_;
    begun = started_.has_value();
  }
  // Kept for the calls after this one until the background's lands: a
  // kernel made beside it is in no cache.
  std::shared_ptr<backends::Kernel> kernel = make_(begun);
  std::lock_guard<std::mutex> lock(mu_);
  if (kernel && !done_) {
    done_ = true;
    kernel_ = kernel;
  }
  return kernel;
}

std::shared_ptr<backends::Kernel> QuickKernel::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernel_;
}

std::shared_ptr<backends::Kernel> QuickKernel::get() {
  std::lock_guard<std::mutex> making(making_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tried_) return kernel_;
  }
  std::shared_ptr<backends::Kernel> kernel = make_();
  std::lock_guard<std::mutex> lock(mu_);
  tried_ = true;
  kernel_ = std::move(kernel);
  return kernel_;
}

void PendingKernel::hurry() {
  if (hurry_ && !hurried_.exchange(true, std::memory_order_relaxed)) hurry_(this);
}

double PendingKernel::left_ms(double total_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) return total_ms;
  return total_ms - std::chrono::duration<double, std::milli>(Clock::now() - *started_).count();
}

// A unit of work is an element a node computes, or a multiply-add of a
// product (M * N * K), or an element a reduction reads: what the reference
// interpreter's loops run once each.
StandInKernel::StandInKernel(std::unique_ptr<backends::Kernel> reference, const ir::SpecializedGraph& graph,
                             std::shared_ptr<PendingKernel> pending, StandInCosts& costs, StandInCounts& counts,
                             std::shared_ptr<backends::Kernel> dynamic, std::shared_ptr<QuickKernel> quick)
    : reference_(std::move(reference)),
      dynamic_(std::move(dynamic)),
      pending_(std::move(pending)), quick_(std::move(quick)), costs_(costs), nodes_(graph.graph->nodes.size()), counts_(counts) {
  const ir::Graph& g = *graph.graph;
  for (const ir::Node& n : g.nodes) {
    const ir::ValueType& out = graph.types[n.out[0]];
    if (!out.is_tensor) continue;
    std::vector<sym::Expr> dims = out.shape;
    const ir::OpClass cls = ir::op_info(n.op).cls;
    if (cls == ir::OpClass::kMatmul && n.in[0].is_value()) {
      const std::vector<sym::Expr>& a = graph.types[n.in[0].value].shape;
      if (!a.empty()) dims.push_back(a.back());  // K
    } else if ((cls == ir::OpClass::kReduce || cls == ir::OpClass::kArgmax || cls == ir::OpClass::kSoftmax ||
                cls == ir::OpClass::kLayerNorm || cls == ir::OpClass::kRmsNorm) &&
               n.in[0].is_value()) {
      dims = graph.types[n.in[0].value].shape;  // what it reads
    }
    work_.push_back(std::move(dims));
  }
}

double StandInKernel::work(std::span<const int64_t> symbols) const {
  double total = 0;
  for (const std::vector<sym::Expr>& dims : work_) {
    double node = 1;
    for (const sym::Expr& d : dims) node *= static_cast<double>(std::max<int64_t>(0, sym::evaluate(d, symbols)));
    total += node;
  }
  return total;
}

Status StandInKernel::run(const backends::RunContext& ctx, std::span<const DLTensor* const> args, std::span<int64_t> symbols,
                          std::span<ir::Tensor> outputs) {
  // Landed since this entry was looked up: the kernel itself.
  if (std::shared_ptr<backends::Kernel> k = pending_->ready()) return k->run(ctx, args, symbols, outputs);
  if (dynamic_) {
    counts_.dynamic.fetch_add(1, std::memory_order_relaxed);
    return dynamic_->run(ctx, args, symbols, outputs);
  }
  // Made by an earlier call that would have waited.
  auto run_quick = [&](const std::shared_ptr<backends::Kernel>& k) {
    counts_.quick.fetch_add(1, std::memory_order_relaxed);
    return k->run(ctx, args, symbols, outputs);
  };
  if (quick_) {
    if (std::shared_ptr<backends::Kernel> k = quick_->ready()) return run_quick(k);
  }
  // The reference runs a call only where it should take at most half what
  // is left of the compile: both are estimates, and a call that waits
  // without need costs at most the compile, as it would synchronously. A
  // compile past its estimate is taken to have a quarter of it left.
  const double units = work(symbols);
  const double total_ms = costs_.compile_ms(nodes_);
  const double left_ms = std::max(pending_->left_ms(total_ms), 0.25 * total_ms);
  if (costs_.reference_ms(units) > 0.5 * left_ms) {
    counts_.waits.fetch_add(1, std::memory_order_relaxed);
    if (quick_) {
      if (std::shared_ptr<backends::Kernel> k = quick_->get()) {
        // The entry's calls run on the quick kernel until its own lands: its
        // compile, if not begun, starts now (not beside the quick one).
        pending_->hurry();
        return run_quick(k);
      }
    }
    if (std::shared_ptr<backends::Kernel> k = pending_->get()) return k->run(ctx, args, symbols, outputs);
    // A failed compile leaves the reference interpreter to run it.
  }
  const Clock::time_point t0 = Clock::now();
  Status s = reference_->run(ctx, args, symbols, outputs);
  costs_.saw_reference(units, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  return s;
}

}  // namespace shapejit::runtime
