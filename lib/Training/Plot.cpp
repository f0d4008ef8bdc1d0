//===- Plot.cpp - SVG plots of a training run -----------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Plot.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace amp;

static std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string amp::renderTrainingPlot(llvm::StringRef title,
                                    llvm::ArrayRef<double> losses,
                                    llvm::ArrayRef<double> scales,
                                    llvm::ArrayRef<bool> skipped) {
  const double width = 800, height = 400, left = 60, right = 70, top = 40,
               bottom = 50;
  const double plotW = width - left - right, plotH = height - top - bottom;
  size_t n = losses.size();
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(losses[i]) && !(i < skipped.size() && skipped[i])) {
      lo = std::min(lo, losses[i]);
      hi = std::max(hi, losses[i]);
    }
  if (!std::isfinite(lo)) {
    lo = 0;
    hi = 1;
  }
  if (hi - lo < 1e-12)
    hi = lo + 1;
  lo = std::min(lo, 0.0);
  auto x = [&](size_t i) {
    return left + (n > 1 ? plotW * double(i) / double(n - 1) : plotW / 2);
  };
  auto y = [&](double v) { return top + plotH * (1 - (v - lo) / (hi - lo)); };

  // Coordinates with one decimal (raw_ostream would print doubles as %e).
  auto num = [](double v) { return llvm::format("%.1f", v); };
  std::string svg;
  llvm::raw_string_ostream os(svg);
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width)
     << "\" height=\"" << num(height) << "\" font-family=\"sans-serif\" "
     << "font-size=\"12\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << num(width / 2) << "\" y=\"22\" text-anchor=\"middle\" "
     << "font-size=\"15\">" << escape(title) << "</text>\n";
  // Axes and loss ticks.
  os << "<path d=\"M" << num(left) << " " << num(top) << " V"
     << num(top + plotH) << " H" << num(left + plotW)
     << "\" stroke=\"black\" fill=\"none\"/>\n";
  for (int t = 0; t <= 4; ++t) {
    double v = lo + (hi - lo) * t / 4;
    os << "<text x=\"" << num(left - 6) << "\" y=\"" << num(y(v) + 4)
       << "\" text-anchor=\"end\">" << llvm::format("%.3g", v) << "</text>\n";
  }
  os << "<text x=\"" << num(left + plotW / 2) << "\" y=\"" << num(height - 12)
     << "\" text-anchor=\"middle\">step (0 - " << (n ? n - 1 : 0)
     << ")</text>\n";
  os << "<text x=\"16\" y=\"" << num(top + plotH / 2)
     << "\" transform=\"rotate(-90 16 " << num(top + plotH / 2)
     << ")\" text-anchor=\"middle\" fill=\"#1f77b4\">loss</text>\n";
  // The loss.
  os << "<polyline class=\"loss\" fill=\"none\" stroke=\"#1f77b4\" "
     << "stroke-width=\"1.2\" points=\"";
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(losses[i]) && !(i < skipped.size() && skipped[i]))
      os << llvm::format("%.1f,%.1f ", x(i), y(losses[i]));
  os << "\"/>\n";
  // Skipped steps.
  for (size_t i = 0; i < skipped.size() && i < n; ++i)
    if (skipped[i])
      os << "<line class=\"skipped\" x1=\"" << llvm::format("%.1f", x(i))
         << "\" x2=\"" << llvm::format("%.1f", x(i)) << "\" y1=\""
         << num(top + plotH) << "\" y2=\"" << num(top + plotH - 8)
         << "\" stroke=\"#d62728\"/>\n";
  // The loss scale, log2 axis on the right.
  if (!scales.empty()) {
    double slo = INFINITY, shi = -INFINITY;
    for (double s : scales)
      if (s > 0 && std::isfinite(s)) {
        slo = std::min(slo, std::log2(s));
        shi = std::max(shi, std::log2(s));
      }
    if (std::isfinite(slo)) {
      slo = std::floor(slo) - 1;
      shi = std::ceil(shi) + 1;
      auto ys = [&](double s) {
        return top + plotH * (1 - (std::log2(s) - slo) / (shi - slo));
      };
      os << "<path d=\"M" << num(left + plotW) << " " << num(top) << " V"
         << num(top + plotH) << "\" stroke=\"black\" fill=\"none\"/>\n";
      for (double e = slo; e <= shi; e += std::max(1.0, (shi - slo) / 4))
        os << "<text x=\"" << num(left + plotW + 6) << "\" y=\""
           << num(ys(std::exp2(e)) + 4) << "\">2^" << int(e) << "</text>\n";
      os << "<text x=\"" << num(width - 10) << "\" y=\"" << num(top + plotH / 2)
         << "\" transform=\"rotate(90 " << num(width - 10) << " "
         << num(top + plotH / 2)
         << ")\" text-anchor=\"middle\" fill=\"#ff7f0e\">loss scale</text>\n";
      os << "<polyline class=\"scale\" fill=\"none\" stroke=\"#ff7f0e\" "
         << "stroke-width=\"1.2\" points=\"";
      for (size_t i = 0; i < scales.size() && i < n; ++i)
        if (scales[i] > 0 && std::isfinite(scales[i]))
          os << llvm::format("%.1f,%.1f ", x(i), ys(scales[i]));
      os << "\"/>\n";
    }
  }
  os << "</svg>\n";
  return svg;
}
