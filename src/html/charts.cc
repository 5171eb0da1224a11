// html/charts.cc — the report's figures on the SVG writer.
#include "html/charts.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "html/svg.h"

namespace gpuvet::html {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Paint fill(std::string colour, std::string css_class = {}, std::string title = {}) {
  Paint p;
  p.fill = std::move(colour);
  p.css_class = std::move(css_class);
  p.title = std::move(title);
  return p;
}

Paint stroke(std::string colour, double width = 1, std::string dash = {}) {
  Paint p;
  p.stroke = std::move(colour);
  p.stroke_width = width;
  p.dash = std::move(dash);
  return p;
}

// Round ticks over [lo, hi]: steps of 1, 2 or 5 times a power of ten, about `target` of them.
std::vector<double> ticks(double lo, double hi, int target = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9 && out.size() < 50; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

// Enough decimals to tell the ticks apart: a step of 0.02 needs two.
int tick_decimals(const std::vector<double>& t) {
  if (t.size() < 2) return 1;
  const double step = t[1] - t[0];
  return std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 6);
}

// The top of an axis from 0 that shows `v` with a little room: a whole number of tick steps.
double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  const auto t = ticks(0, v);
  const double step = t.size() > 1 ? t[1] - t[0] : v;
  return std::ceil(v * 1.05 / step) * step;
}

std::string time_label(double s, double range) {
  if (range < 180) return num(s, 1) + " s";
  const long long whole = std::llround(s);
  return fmt::format("{}:{:02}", whole / 60, whole % 60);
}

struct Frame {
  double x0, x1, y0, y1;       // the plot's pixels (y0 at the top)
  double t_min, t_max, v_max;  // what they show
  double x(double t) const { return x0 + (t - t_min) / (t_max - t_min) * (x1 - x0); }
  double y(double v) const { return y1 - v / v_max * (y1 - y0); }
};

void draw_axes(Svg& svg, const Frame& f, const std::string& unit) {
  const Paint grid = stroke("#e0e0e0");
  const auto vs = ticks(0, f.v_max);
  for (double v : vs) {
    svg.line(f.x0, f.y(v), f.x1, f.y(v), grid);
    svg.text(f.x0 - 6, f.y(v) + 4, num(v, tick_decimals(vs)), Anchor::kEnd, "tick");
  }
  const double range = f.t_max - f.t_min;
  for (double t : ticks(f.t_min, f.t_max, 8)) {
    svg.line(f.x(t), f.y1, f.x(t), f.y1 + 4, stroke("#888888"));
    svg.text(f.x(t), f.y1 + 16, time_label(t, range), Anchor::kMiddle, "tick");
  }
  svg.line(f.x0, f.y1, f.x1, f.y1, stroke("#888888"));
  svg.text(12, (f.y0 + f.y1) / 2, unit, Anchor::kMiddle, "axis", -90);
}

// One series cut into the pieces the line is drawn as.
std::vector<std::vector<SeriesPoint>> pieces(const std::vector<SeriesPoint>& points) {
  std::vector<double> steps;
  for (std::size_t i = 1; i < points.size(); ++i)
    if (points[i].value && points[i - 1].value) steps.push_back(points[i].t - points[i - 1].t);
  double usual = 0;
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
    usual = steps[steps.size() / 2];
  }
  std::vector<std::vector<SeriesPoint>> out;
  std::vector<SeriesPoint> cur;
  for (const auto& p : points) {
    if (!p.value || !std::isfinite(*p.value)) {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
      continue;
    }
    if (!cur.empty() && usual > 0 && p.t - cur.back().t > 3 * usual)
      out.push_back(std::move(cur)), cur.clear();
    cur.push_back(p);
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// Pixel-column thinning: a column's first, lowest, highest and last point, in time order.
std::vector<Point> thin(const std::vector<Point>& in, double plot_width) {
  if (in.size() <= static_cast<std::size_t>(plot_width * 2)) return in;
  std::vector<Point> out;
  std::size_t i = 0;
  while (i < in.size()) {
    const double column = std::floor(in[i].x);
    std::size_t j = i, lo = i, hi = i;
    while (j < in.size() && std::floor(in[j].x) == column) {
      if (in[j].y < in[lo].y) lo = j;  // screen y: smaller is higher
      if (in[j].y > in[hi].y) hi = j;
      ++j;
    }
    std::vector<std::size_t> keep = {i, lo, hi, j - 1};
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    for (std::size_t k : keep) out.push_back(in[k]);
    i = j;
  }
  return out;
}

void legend_item(Svg& svg, double x, double y, const std::string& colour, const std::string& label,
                 bool swatch) {
  if (swatch) {
    Paint p = fill(colour);
    p.opacity = 0.35;
    svg.rect(x, y - 9, 14, 10, p);
  } else {
    svg.line(x, y - 4, x + 14, y - 4, stroke(colour, 2.5));
  }
  svg.text(x + 18, y, label, Anchor::kStart, "legend");
}

}  // namespace

const char* series_colour(std::size_t i) {
  static const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#b8860b", "#b07aa1", "#ff6f91", "#9c755f", "#5f6b7a"};
  return kColours[i % 10];
}

std::string ratio_colour(double ratio) {
  struct Stop {
    double at;
    int r, g, b;
  };
  static const Stop kStops[] = {
      {0.5, 0xd7, 0x30, 0x27}, {0.75, 0xfd, 0xae, 0x61}, {0.9, 0x66, 0xbd, 0x63}};
  if (!std::isfinite(ratio)) ratio = 0;
  if (ratio <= kStops[0].at) return "#d73027";
  if (ratio >= kStops[2].at) return "#66bd63";
  const Stop& a = ratio < kStops[1].at ? kStops[0] : kStops[1];
  const Stop& b = ratio < kStops[1].at ? kStops[1] : kStops[2];
  const double k = (ratio - a.at) / (b.at - a.at);
  auto mix = [k](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * k)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b));
}

std::string shade_colour(double fraction) {
  if (!std::isfinite(fraction)) fraction = 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  auto mix = [fraction](int from, int to) {
    return static_cast<int>(std::lround(from + (to - from) * fraction));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0xf0, 0x6b), mix(0xf4, 0xae), mix(0xfa, 0xd6));
}

std::string time_series_svg(const TimeChart& chart) {
  Svg svg(chart.width, chart.height, chart.title);
  svg.text(4, 15, chart.title, Anchor::kStart, "figure-title");
  double t_min = kInf, t_max = -kInf, v_max = 0;
  std::size_t values = 0;
  for (const auto& s : chart.series)
    for (const auto& p : s.points) {
      if (!p.value || !std::isfinite(*p.value) || !std::isfinite(p.t)) continue;
      t_min = std::min(t_min, p.t), t_max = std::max(t_max, p.t);
      v_max = std::max(v_max, *p.value);
      ++values;
    }
  if (values == 0) {
    svg.text(chart.width / 2, chart.height / 2, "no samples", Anchor::kMiddle, "empty");
    return svg.str();
  }
  if (!(t_max > t_min)) t_max = t_min + 1;
  const Frame f{60, chart.width - 16, 44, chart.height - 28, t_min, t_max, nice_ceiling(v_max)};
  double lx = 60;
  for (const auto& s : chart.series) {
    legend_item(svg, lx, 32, s.colour, s.name, false);
    lx += 24 + 7.5 * static_cast<double>(s.name.size()) + 12;
  }
  std::vector<std::string> band_labels;
  for (const auto& b : chart.bands) {
    if (std::find(band_labels.begin(), band_labels.end(), b.label) != band_labels.end()) continue;
    band_labels.push_back(b.label);
    legend_item(svg, lx, 32, b.colour, b.label, true);
    lx += 24 + 7 * static_cast<double>(b.label.size()) + 12;
  }
  for (const auto& b : chart.bands) {
    const double a = f.x(std::clamp(b.t0, t_min, t_max));
    const double z = f.x(std::clamp(b.t1, t_min, t_max));
    Paint p = fill(b.colour, "band", b.label);
    p.opacity = 0.22;
    p.data = {{"reason", b.label}};
    svg.rect(a, f.y0, std::max(1.0, z - a), f.y1 - f.y0, p);
  }
  draw_axes(svg, f, chart.unit);
  for (const auto& s : chart.series) {
    for (const auto& piece : pieces(s.points)) {
      if (piece.size() == 1) {
        Paint p = fill(s.colour, "series-point", s.name);
        p.data = s.data;
        svg.circle(f.x(piece[0].t), f.y(*piece[0].value), 3, p);
        continue;
      }
      std::vector<Point> pts;
      pts.reserve(piece.size());
      for (const auto& p : piece) pts.push_back({f.x(p.t), f.y(*p.value)});
      Paint p = stroke(s.colour, 1.8);
      p.css_class = "series";
      p.title = s.name;
      p.data = s.data;
      svg.polyline(thin(pts, f.x1 - f.x0), p);
    }
  }
  return svg.str();
}

std::string lanes_svg(const std::string& title, const std::vector<Lane>& lanes, double t_min,
                      double t_max, double width) {
  const double row = 18;
  const double height = 44 + row * static_cast<double>(std::max<std::size_t>(lanes.size(), 1)) + 24;
  Svg svg(width, height, title);
  svg.text(4, 15, title, Anchor::kStart, "figure-title");
  if (!(t_max > t_min)) t_max = t_min + 1;
  const Frame f{60, width - 16, 44, height - 24, t_min, t_max, 1};
  std::vector<std::pair<std::string, std::string>> legend;
  for (const auto& lane : lanes)
    for (const auto& b : lane.bands)
      if (std::none_of(legend.begin(), legend.end(),
                       [&](const auto& l) { return l.first == b.label; }))
        legend.emplace_back(b.label, b.colour);
  double lx = 60;
  for (const auto& [label, colour] : legend) {
    legend_item(svg, lx, 32, colour, label, true);
    lx += 24 + 7 * static_cast<double>(label.size()) + 12;
  }
  if (legend.empty())
    svg.text(60, 32, "no clock-event reason limited a clock", Anchor::kStart, "legend");
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const double y = f.y0 + row * static_cast<double>(i);
    svg.text(f.x0 - 6, y + 13, lanes[i].name, Anchor::kEnd, "tick");
    svg.rect(f.x0, y + 2, f.x1 - f.x0, row - 4, fill("#f4f4f4"));
    for (const auto& b : lanes[i].bands) {
      const double a = f.x(std::clamp(b.t0, t_min, t_max));
      const double z = f.x(std::clamp(b.t1, t_min, t_max));
      Paint p = fill(b.colour, "lane-band", lanes[i].name + ": " + b.label);
      p.data = {{"gpu", lanes[i].name}, {"reason", b.label}};
      svg.rect(a, y + 2, std::max(1.0, z - a), row - 4, p);
    }
  }
  const double range = t_max - t_min;
  for (double t : ticks(t_min, t_max, 8))
    svg.text(f.x(t), height - 8, time_label(t, range), Anchor::kMiddle, "tick");
  return svg.str();
}

std::string grid_svg(const Grid& grid) {
  const double label_w = 64, head_h = 24, top = 22;
  const double w = label_w + grid.cell_width * static_cast<double>(grid.cols.size()) + 8;
  const double legend_h = grid.legend.empty() ? 0 : 22;
  const double h =
      top + head_h + grid.cell_height * static_cast<double>(grid.rows.size()) + legend_h + 6;
  Svg svg(std::max(w, 260.0), h, grid.title);
  svg.text(4, 15, grid.title, Anchor::kStart, "figure-title");
  for (std::size_t c = 0; c < grid.cols.size(); ++c)
    svg.text(label_w + grid.cell_width * (static_cast<double>(c) + 0.5), top + 16, grid.cols[c],
             Anchor::kMiddle, "tick");
  for (std::size_t r = 0; r < grid.rows.size(); ++r) {
    const double y = top + head_h + grid.cell_height * static_cast<double>(r);
    svg.text(label_w - 6, y + grid.cell_height / 2 + 4, grid.rows[r], Anchor::kEnd, "tick");
    for (std::size_t c = 0; c < grid.cols.size(); ++c) {
      const double x = label_w + grid.cell_width * static_cast<double>(c);
      if (r >= grid.cells.size() || c >= grid.cells[r].size()) continue;
      const GridCell& cell = grid.cells[r][c];
      Paint p =
          fill(cell.fill, cell.css_class.empty() ? "cell" : "cell " + cell.css_class, cell.title);
      p.stroke = "#ffffff";
      p.stroke_width = 2;
      svg.rect(x, y, grid.cell_width, grid.cell_height, p);
      if (cell.subtext.empty()) {
        svg.text(x + grid.cell_width / 2, y + grid.cell_height / 2 + 4, cell.text, Anchor::kMiddle,
                 "cell-text");
      } else {
        svg.text(x + grid.cell_width / 2, y + grid.cell_height / 2 - 2, cell.text, Anchor::kMiddle,
                 "cell-text");
        svg.text(x + grid.cell_width / 2, y + grid.cell_height / 2 + 11, cell.subtext,
                 Anchor::kMiddle, "cell-subtext");
      }
    }
  }
  double lx = 4;
  const double ly = h - 8;
  for (const auto& [colour, meaning] : grid.legend) {
    svg.rect(lx, ly - 10, 12, 12, fill(colour));
    svg.text(lx + 16, ly, meaning, Anchor::kStart, "legend");
    lx += 28 + 6.5 * static_cast<double>(meaning.size());
  }
  return svg.str();
}

std::string bar_chart_svg(const BarChart& chart) {
  const double label_w = 80, row = 26, top = 40, text_w = 260;
  const double h =
      top + row * static_cast<double>(std::max<std::size_t>(chart.bars.size(), 1)) + 26;
  Svg svg(chart.width, h, chart.title);
  svg.text(4, 15, chart.title, Anchor::kStart, "figure-title");
  double lx = label_w;
  for (const auto& [colour, meaning] : chart.legend) {
    Paint p = fill(colour);
    if (colour.empty()) p = stroke("#555555", 1.2, "4 3");
    svg.rect(lx, 23, 14, 10, p);
    svg.text(lx + 18, 32, meaning, Anchor::kStart, "legend");
    lx += 30 + 6.5 * static_cast<double>(meaning.size());
  }
  double v_max = 0;
  for (const auto& b : chart.bars)
    for (const auto& v : {b.value, b.outline, b.behind})
      if (v && std::isfinite(*v)) v_max = std::max(v_max, *v);
  if (chart.bars.empty() || v_max <= 0) {
    svg.text(chart.width / 2, top + 14, "no results", Anchor::kMiddle, "empty");
    return svg.str();
  }
  v_max = nice_ceiling(v_max);
  const double x0 = label_w, x1 = chart.width - text_w;
  auto x = [&](double v) { return x0 + v / v_max * (x1 - x0); };
  const auto vs = ticks(0, v_max, 4);
  for (double v : vs) {
    svg.line(x(v), top - 2, x(v), h - 22, stroke("#e6e6e6"));
    svg.text(x(v), h - 8, num(v, tick_decimals(vs)), Anchor::kMiddle, "tick");
  }
  svg.text(x1, h - 8, chart.unit, Anchor::kStart, "axis");
  for (std::size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& b = chart.bars[i];
    const double y = top + row * static_cast<double>(i);
    svg.text(x0 - 6, y + 16, b.label, Anchor::kEnd, "tick");
    if (b.behind) {
      Paint p = fill(b.colour, "bar-behind", b.label + ": " + b.text);
      p.opacity = 0.35;
      svg.rect(x0, y + 4, x(*b.behind) - x0, row - 8, p);
    }
    if (b.value)
      svg.rect(x0, y + 4, x(*b.value) - x0, row - 8,
               fill(b.colour, "bar", b.label + ": " + b.text));
    if (b.outline) svg.rect(x0, y + 3, x(*b.outline) - x0, row - 6, stroke("#555555", 1.2, "4 3"));
    svg.text(x1 + 8, y + 16, b.text, Anchor::kStart, "bar-text");
  }
  return svg.str();
}

}  // namespace gpuvet::html
