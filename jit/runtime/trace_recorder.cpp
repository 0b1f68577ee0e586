#include "jit/runtime/trace_recorder.h"

#include <cerrno>
#include <cstring>

namespace shapejit::runtime {

Expected<std::unique_ptr<TraceRecorder>> TraceRecorder::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return Status(Code::kIo, "log.record: cannot open " + path + ": " + std::strerror(errno));
  std::unique_ptr<TraceRecorder> r(new TraceRecorder(f));
  r->write(trace::trace_header_line("recorded by shapejit"));
  return r;
}

TraceRecorder::~TraceRecorder() { std::fclose(file_); }

void TraceRecorder::write(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  std::fputs(line.c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

void TraceRecorder::graph(const std::string& site, const ir::Graph& g, const std::vector<trace::Observation>& observed) {
  write(trace::trace_graph_line(site, g, observed));
}

void TraceRecorder::call(const std::string& site, std::span<const DLTensor* const> args) {
  std::vector<trace::TraceInput> inputs;
  for (const DLTensor* a : args) {
    auto dt = ir::from_dl(a->dtype);
    inputs.push_back({dt.value_or(ir::DType::kF32), std::vector<int64_t>(a->shape, a->shape + a->ndim)});
  }
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_).count();
  write(trace::trace_call_line(site, us, inputs));
}

}  // namespace shapejit::runtime
