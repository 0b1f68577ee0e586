// `shapejit replay --plot out.svg`: cumulative total time against call
// number, one line per config, so a reader sees where each policy pays for
// its compiles (the steps) and what its kernels cost (the slope). A plain
// SVG document, written without a plotting library.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace shapejit::tools {

struct PlotSeries {
  std::string name;
  std::span<const float> cumulative_ms;  // one value per call
};

std::string cumulative_time_svg(const std::vector<PlotSeries>& series, const std::string& title);

}  // namespace shapejit::tools
