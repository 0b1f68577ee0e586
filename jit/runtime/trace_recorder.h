// TraceRecorder: writes the trace of real calls when `log.record` names a
// file. Every line is flushed as it is written, so a crash loses at most the
// call in progress.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "core/support/status.h"
#include "jit/trace/trace_file.h"

namespace shapejit::runtime {

class TraceRecorder {
 public:
  static Expected<std::unique_ptr<TraceRecorder>> open(const std::string& path);
  ~TraceRecorder();

  void graph(const std::string& site, const ir::Graph& g, const std::vector<trace::Observation>& observed);
  void call(const std::string& site, std::span<const DLTensor* const> args);

 private:
  explicit TraceRecorder(std::FILE* f) : file_(f), start_(std::chrono::steady_clock::now()) {}
  void write(const std::string& line);

  std::mutex mu_;
  std::FILE* file_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace shapejit::runtime
