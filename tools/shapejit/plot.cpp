#include "tools/shapejit/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace shapejit::tools {

namespace {

constexpr double kWidth = 960, kHeight = 540;
constexpr double kLeft = 80, kRight = 24, kTop = 48, kBottom = 56;
constexpr size_t kMaxPoints = 1500;  // per line; a cumulative curve loses nothing visible
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A tick step of 1, 2 or 5 times a power of ten, giving about `ticks` ticks.
double nice_step(double range, int ticks) {
  if (range <= 0) return 1;
  const double raw = range / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

std::string num(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) >= 1e6 || std::fabs(v) < 1e-2)) std::snprintf(buf, sizeof buf, "%.3g", v);
  else std::snprintf(buf, sizeof buf, "%.10g", std::round(v * 100) / 100);
  return buf;
}

}  // namespace

std::string cumulative_time_svg(const std::vector<PlotSeries>& series, const std::string& title) {
  size_t calls = 0;
  double top_ms = 0;
  for (const PlotSeries& s : series) {
    calls = std::max(calls, s.cumulative_ms.size());
    if (!s.cumulative_ms.empty()) top_ms = std::max(top_ms, static_cast<double>(s.cumulative_ms.back()));
  }
  const bool seconds = top_ms >= 2000;
  const double unit = seconds ? 1000.0 : 1.0;
  const double y_step = nice_step(std::max(top_ms / unit, 1e-3), 5);
  const double y_max = std::max(y_step, std::ceil(top_ms / unit / y_step) * y_step);
  const double x_step = nice_step(std::max<double>(static_cast<double>(calls), 1), 6);
  const double x_max = std::max(x_step, std::ceil(static_cast<double>(calls) / x_step) * x_step);
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + pw * x / x_max; };
  auto py = [&](double y) { return kTop + ph * (1 - y / y_max); };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight << "\" viewBox=\"0 0 " << kWidth
    << ' ' << kHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << kWidth / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" << xml_escape(title) << "</text>\n";
  // Grid and axes.
  for (double y = 0; y <= y_max + y_step / 2; y += y_step) {
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << py(y) << "\" y2=\"" << py(y) << "\" stroke=\"#e0e0e0\"/>\n";
    o << "<text x=\"" << kLeft - 6 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\">" << num(y) << "</text>\n";
  }
  for (double x = 0; x <= x_max + x_step / 2; x += x_step) {
    o << "<line x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << kTop << "\" y2=\"" << kTop + ph << "\" stroke=\"#f0f0f0\"/>\n";
    o << "<text x=\"" << px(x) << "\" y=\"" << kTop + ph + 18 << "\" text-anchor=\"middle\">" << num(x) << "</text>\n";
  }
  o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph << "\" fill=\"none\" stroke=\"#444\"/>\n";
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kHeight - 14 << "\" text-anchor=\"middle\">call number</text>\n";
  o << "<text transform=\"translate(20," << kTop + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">cumulative total time ("
    << (seconds ? "s" : "ms") << ")</text>\n";
  // One line per config, from (0, 0).
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& y = series[k].cumulative_ms;
    const char* color = kColors[k % std::size(kColors)];
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.8\" points=\"" << px(0) << ',' << py(0);
    const size_t n = y.size();
    const size_t points = std::min(n, kMaxPoints);
    for (size_t p = 0; p < points; ++p) {
      const size_t i = points == 1 ? n - 1 : p * (n - 1) / (points - 1);
      o << ' ' << px(static_cast<double>(i + 1)) << ',' << py(y[i] / unit);
    }
    o << "\"><title>" << xml_escape(series[k].name) << "</title></polyline>\n";
    // Legend, top left, with each config's total.
    const double ly = kTop + 18 + 18 * static_cast<double>(k);
    const double total = n ? y[n - 1] / unit : 0;
    o << "<line x1=\"" << kLeft + 12 << "\" x2=\"" << kLeft + 36 << "\" y1=\"" << ly - 4 << "\" y2=\"" << ly - 4 << "\" stroke=\"" << color
      << "\" stroke-width=\"3\"/>\n";
    o << "<text x=\"" << kLeft + 42 << "\" y=\"" << ly << "\">" << xml_escape(series[k].name) << " (" << num(total) << ' '
      << (seconds ? "s" : "ms") << ")</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace shapejit::tools
