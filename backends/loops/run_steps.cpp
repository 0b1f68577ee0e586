#include "backends/loops/run_steps.h"

#include <algorithm>

namespace shapejit::backends::loops {

RunPlan::RunPlan(const LoopProgram& p) {
  const std::vector<std::pair<int, int>> life = buffer_lifetimes(p);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    if (b.kind == Buffer::Kind::kInput || life[i].first < 0) continue;
    if (std::any_of(b.shape.begin(), b.shape.end(), [&](const sym::Expr& d) { return p.is_data_dependent(d); })) {
      sized_later_.push_back({static_cast<int>(i), life[i].first});
    }
  }
}

bool RunPlan::is_sized_later(int buffer) const {
  return std::any_of(sized_later_.begin(), sized_later_.end(), [&](const auto& x) { return x.first == buffer; });
}

Status run_steps(const LoopProgram& p, const RunPlan& plan, StepRunner& runner, std::span<int64_t> values, std::span<int64_t> symbols) {
  if (p.check_fails(values, false)) return use_reference();
  SJ_TRY(runner.place(values));
  auto allocate_at = [&](size_t s) -> Status {
    for (const auto& [buffer, first] : plan.sized_later()) {
      if (first == static_cast<int>(s)) SJ_TRY(runner.allocate(buffer, values));
    }
    return Status::ok();
  };
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const Step& step = p.steps[s];
    const bool has_epilogue = (step.kind == Step::Kind::kMatmul && step.matmul.epilogue) || (step.kind == Step::Kind::kCompact && step.compact.epilogue);
    const int epilogue = has_epilogue ? static_cast<int>(s + 1) : -1;
    // A compaction allocates what its count sizes once it has counted;
    // every other step finds its buffers allocated before it runs.
    if (step.kind != Step::Kind::kCompact) SJ_TRY(allocate_at(s));
    switch (step.kind) {
      case Step::Kind::kCompact: {
        const int64_t count = SJ_TRY(runner.count(s, values));
        values[step.compact.count] = count;
        symbols[step.compact.count] = count;
        runner.recount(values);
        SJ_TRY(allocate_at(s));
        SJ_TRY(runner.fill(s, epilogue, values));
        break;
      }
      case Step::Kind::kLoops: SJ_TRY(runner.loops(s, values)); break;
      case Step::Kind::kMatmul: SJ_TRY(runner.matmul(s, epilogue, values)); break;
      case Step::Kind::kScan: SJ_TRY(runner.scan(s, values)); break;
      case Step::Kind::kScatter: SJ_TRY(runner.scatter(s, values)); break;
      case Step::Kind::kAttention: SJ_TRY(runner.attention(s, values)); break;
    }
    if (has_epilogue) ++s;
  }
  SJ_TRY(runner.finish());
  if (p.check_fails(values, true)) return use_reference();
  return Status::ok();
}

}  // namespace shapejit::backends::loops
