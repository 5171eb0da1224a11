// html/charts.h — the figures of the HTML report, each one self-contained <svg> element drawn
// with html/svg.h: time series, lanes of time bands, coloured grids (topology, P2P, bandwidth
// heat maps) and horizontal bars. Pure functions of their input; internal to src/html.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuvet::html {

// The colour of series `i` (a GPU): ten distinct colours, then again.
const char* series_colour(std::size_t i);

// ---------------------------------------------------------------- time series

struct SeriesPoint {
  double t = 0;
  std::optional<double> value;  // nullopt: not read at t (a gap in the line)
};

struct Series {
  std::string name;  // "GPU0": the legend and the tooltip
  std::string colour;
  std::vector<SeriesPoint> points;                        // in time order
  std::vector<std::pair<std::string, std::string>> data;  // data-* attributes of its lines
};

// A stretch of time [t0, t1) drawn behind the lines (a clock-event reason in force).
struct Band {
  double t0 = 0;
  double t1 = 0;
  std::string label;
  std::string colour;
};

struct TimeChart {
  std::string title;
  std::string unit;  // the y axis, e.g. "MHz"
  std::vector<Series> series;
  std::vector<Band> bands;
  double width = 1040;
  double height = 220;
};

// One line per series with its legend, axes with round ticks, the bands behind. A series is
// broken where a value is missing or where the time between two samples is more than three
// times its usual interval (the sampler stopped); a piece of one sample is a dot. More points
// than the plot has pixels are thinned to each pixel column's first, lowest, highest and last.
// Without any value the figure says "no samples".
std::string time_series_svg(const TimeChart& chart);

struct Lane {
  std::string name;  // "GPU0"
  std::vector<Band> bands;
};

// One row per lane over [t_min, t_max], its bands drawn as coloured stretches, with the
// legend of the band labels: which GPU had which reason when.
std::string lanes_svg(const std::string& title, const std::vector<Lane>& lanes, double t_min,
                      double t_max, double width = 1040);

// ---------------------------------------------------------------- grids

struct GridCell {
  std::string text;     // inside the cell (short)
  std::string subtext;  // a smaller second line (e.g. "88 %" of the expectation)
  std::string fill = "#eeeeee";
  std::string title;      // tooltip
  std::string css_class;  // e.g. "cell-bad"
};

struct Grid {
  std::string title;
  std::vector<std::string> rows;
  std::vector<std::string> cols;
  std::vector<std::vector<GridCell>> cells;  // rows × cols; missing cells are blank
  double cell_width = 72;
  double cell_height = 30;
  std::vector<std::pair<std::string, std::string>> legend;  // (colour, meaning)
};

std::string grid_svg(const Grid& grid);

// ---------------------------------------------------------------- bars

struct Bar {
  std::string label;              // "8 GPUs"
  std::optional<double> value;    // nullopt: no bar (the note says why)
  std::optional<double> outline;  // a dashed outline to compare with (ideal N × 1-GPU)
  std::optional<double> behind;   // a lighter, longer bar behind (p99 behind p50)
  std::string text;               // beside the bar
  std::string colour = "#4e79a7";
};

struct BarChart {
  std::string title;
  std::string unit;
  std::vector<Bar> bars;
  std::vector<std::pair<std::string, std::string>> legend;
  double width = 720;
};

std::string bar_chart_svg(const BarChart& chart);

// A heat-map colour for `ratio` of what was expected: red at or below 0.5, amber at 0.75,
// green at or above 0.9 (linear in between).
std::string ratio_colour(double ratio);
// A neutral shade (white to blue) for `fraction` of a matrix's largest value.
std::string shade_colour(double fraction);

}  // namespace gpuvet::html
