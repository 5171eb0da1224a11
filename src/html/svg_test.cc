// The SVG writer and the figures: escaping, deterministic numbers, series with gaps, a single
// sample, no samples at all, thinning of long series.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "html/charts.h"
#include "html/svg.h"

namespace gpuvet::html {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlEscape, MarkupFromAnInputBecomesText) {
  EXPECT_EQ(escape("<script>alert(\"x\")</script> & 'q'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;");
  // UTF-8 stays as it is; tab and newline too.
  EXPECT_EQ(escape("°C → ≤\t\n"), "°C → ≤\t\n");
}

TEST(HtmlEscape, ControlCharactersAndBrokenUtf8BecomeReplacementCharacters) {
  const std::string rep = "\xEF\xBF\xBD";
  EXPECT_EQ(escape(std::string("a\x01"
                               "b\x7f"
                               "c",
                               5)),
            "a" + rep + "b" + rep + "c");
  EXPECT_EQ(escape("\xC2\x9B[31m"), rep + "[31m");     // C1 CSI
  EXPECT_EQ(escape("\xFF\xC3"), rep + rep);            // not UTF-8, truncated sequence
  EXPECT_EQ(escape("\xED\xA0\x80"), rep + rep + rep);  // a surrogate
  EXPECT_EQ(escape("\xC0\xBC"), rep + rep);            // overlong '<'
  EXPECT_EQ(escape(std::string("\0", 1)), rep);
}

TEST(HtmlNum, FixedPointWithoutNoise) {
  EXPECT_EQ(num(1.0), "1");
  EXPECT_EQ(num(1.23456), "1.23");
  EXPECT_EQ(num(-0.0001), "0");
  EXPECT_EQ(num(1980.5, 0), "1980");  // round half to even is fmt's: both are fine, stable
  EXPECT_EQ(num(std::nan("")), "0");
  EXPECT_EQ(num(std::numeric_limits<double>::infinity()), "0");
  EXPECT_EQ(num(250.10, 1), "250.1");
}

TEST(Svg, TextAndAttributesAreEscaped) {
  Svg svg(100, 50, "GPU <b>0</b>");
  svg.text(1, 2, "<script>alert(1)</script>");
  Paint p;
  p.title = "\"><script>x</script>";
  p.data = {{"gpu", "0\" onload=\"x"}};
  svg.rect(0, 0, 10, 10, p);
  const std::string s = svg.str();
  EXPECT_EQ(s.find("<script"), std::string::npos) << s;
  EXPECT_EQ(s.find("<b>"), std::string::npos) << s;
  EXPECT_EQ(s.find("onload=\"x"), std::string::npos) << s;
  EXPECT_NE(s.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_TRUE(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(s.ends_with("</svg>"));
}

TEST(Svg, OpenGroupsAreClosedAndOutputIsDeterministic) {
  auto draw = [] {
    Svg svg(10, 10, "x");
    Paint g;
    g.css_class = "a";
    svg.open_group(g);
    svg.open_group(g);
    svg.close_group();
    svg.line(0, 0, 1.0 / 3, 2.0 / 3, Paint{});
    return svg.str();
  };
  const std::string s = draw();
  EXPECT_EQ(count(s, "<g "), count(s, "</g>"));
  EXPECT_NE(s.find("x2=\"0.33\" y2=\"0.67\""), std::string::npos) << s;
  EXPECT_EQ(s, draw());
}

Series gpu_series(std::vector<SeriesPoint> points) {
  Series s;
  s.name = "GPU0";
  s.colour = series_colour(0);
  s.data = {{"gpu", "0"}};
  s.points = std::move(points);
  return s;
}

TEST(TimeSeries, AMissingValueBreaksTheLine) {
  TimeChart c;
  c.title = "SM clock";
  c.series = {gpu_series({{0, 1980}, {1, 1980}, {2, std::nullopt}, {3, 1700}, {4, 1690}})};
  const std::string s = time_series_svg(c);
  EXPECT_EQ(count(s, "<polyline"), 2u) << s;
  EXPECT_EQ(count(s, "data-gpu=\"0\""), 2u);
}

TEST(TimeSeries, ATimeGapBreaksTheLineButAnEvenSeriesDoesNot) {
  TimeChart c;
  c.series = {gpu_series({{0, 1}, {1, 2}, {2, 3}, {3, 4}, {30, 5}, {31, 6}})};
  EXPECT_EQ(count(time_series_svg(c), "<polyline"), 2u);
  c.series = {gpu_series({{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}})};
  EXPECT_EQ(count(time_series_svg(c), "<polyline"), 1u);
}

// A PSI series of a quiet host peaks at 0.12 %: its ticks step by 0.02 and must read as such,
// not as six "0.1" labels (one decimal for every axis).
TEST(TimeSeries, SmallRangesGetTickLabelsThatDiffer) {
  TimeChart c;
  c.unit = "%";
  c.series = {gpu_series({{0, 0.01}, {1, 0.12}, {2, 0.03}})};
  const std::string s = time_series_svg(c);
  std::vector<std::string> labels;
  for (auto at = s.find("text-anchor=\"end\""); at != std::string::npos;
       at = s.find("text-anchor=\"end\"", at + 1)) {
    const auto open = s.find('>', at), close = s.find("</text>", at);
    labels.push_back(s.substr(open + 1, close - open - 1));
  }
  ASSERT_GE(labels.size(), 4u) << s;
  std::set<std::string> distinct(labels.begin(), labels.end());
  EXPECT_EQ(distinct.size(), labels.size()) << s;
  EXPECT_TRUE(distinct.count("0.02")) << s;
}

TEST(TimeSeries, ALoneSampleIsADot) {
  TimeChart c;
  c.series = {gpu_series({{5, 1410}})};
  const std::string s = time_series_svg(c);
  EXPECT_EQ(count(s, "<polyline"), 0u);
  EXPECT_EQ(count(s, "<circle class=\"series-point\""), 1u) << s;
  EXPECT_EQ(s.find("no samples"), std::string::npos);
  // Between two gaps, too.
  c.series = {gpu_series({{0, 1}, {1, 1}, {2, std::nullopt}, {3, 1}, {4, std::nullopt}})};
  const std::string t = time_series_svg(c);
  EXPECT_EQ(count(t, "<polyline"), 1u);
  EXPECT_EQ(count(t, "<circle"), 1u);
}

TEST(TimeSeries, NoGpuOrNoValueSaysNoSamples) {
  TimeChart c;
  c.title = "SM clock";
  EXPECT_NE(time_series_svg(c).find("no samples"), std::string::npos);
  c.series = {gpu_series({{0, std::nullopt}, {1, std::nan("")}})};
  const std::string s = time_series_svg(c);
  EXPECT_NE(s.find("no samples"), std::string::npos);
  EXPECT_EQ(count(s, "<polyline"), 0u);
  EXPECT_EQ(lanes_svg("reasons", {}, 0, 0).find("<rect class=\"lane-band\""), std::string::npos);
}

TEST(TimeSeries, LongSeriesAreThinnedToThePlotAndKeepTheirExtremes) {
  std::vector<SeriesPoint> pts;
  for (int i = 0; i < 200000; ++i) pts.push_back({i * 0.01, i == 123456 ? 100.0 : 1500.0});
  TimeChart c;
  c.series = {gpu_series(std::move(pts))};
  const std::string s = time_series_svg(c);
  EXPECT_EQ(count(s, "<polyline"), 1u);
  EXPECT_LT(s.size(), 200000u);  // not 200,000 points
  // The one dip survives thinning: some point lies near the bottom of the plot (y grows
  // downwards; 1500 sits in the upper half of the 44..192 plot, 100 near its bottom).
  const auto at = s.find("points=\"") + 8;
  const std::string points = s.substr(at, s.find('"', at) - at);
  double lowest = 0;
  for (std::size_t k = points.find(','); k != std::string::npos; k = points.find(',', k + 1))
    lowest = std::max(lowest, std::stod(points.substr(k + 1)));
  EXPECT_GT(lowest, 180);
}

TEST(TimeSeries, BandsAreDrawnBehindWithTheirReason) {
  TimeChart c;
  c.series = {gpu_series({{0, 1980}, {10, 1600}})};
  c.bands = {{2, 6, "power cap", "#f28e2b"}};
  const std::string s = time_series_svg(c);
  EXPECT_EQ(count(s, "class=\"band\""), 1u);
  EXPECT_LT(s.find("class=\"band\""), s.find("<polyline"));
  EXPECT_NE(s.find("data-reason=\"power cap\""), std::string::npos);
}

TEST(Grid, CellsCarryTextTooltipAndColour) {
  Grid g;
  g.title = "P2P";
  g.rows = g.cols = {"GPU0", "GPU1"};
  g.cells = {{{"X"}, {"OK", "", "#66bd63", "GPU0-GPU1: OK"}}, {{"OK"}}};  // a short row
  const std::string s = grid_svg(g);
  EXPECT_EQ(count(s, "<rect class=\"cell\""), 3u);
  EXPECT_NE(s.find("<title>GPU0-GPU1: OK</title>"), std::string::npos);
}

TEST(HeatColours, RatioScaleEnds) {
  EXPECT_EQ(ratio_colour(0.1), "#d73027");
  EXPECT_EQ(ratio_colour(0.5), "#d73027");
  EXPECT_EQ(ratio_colour(0.95), "#66bd63");
  EXPECT_EQ(ratio_colour(std::nan("")), "#d73027");
  EXPECT_NE(ratio_colour(0.7), ratio_colour(0.8));
  EXPECT_EQ(shade_colour(-1), shade_colour(0));
}

TEST(Bars, OutlineAndBehindAreDrawnAndErrorsAreText) {
  BarChart c;
  c.title = "throughput";
  c.bars = {{"1 GPU", 100.0, std::nullopt, std::nullopt, "100"},
            {"8 GPUs", 600.0, 800.0, 700.0, "600 · efficiency 75 %"},
            {"4 GPUs", std::nullopt, std::nullopt, std::nullopt, "error: <NCCL>"}};
  const std::string s = bar_chart_svg(c);
  EXPECT_EQ(count(s, "class=\"bar\""), 2u);
  EXPECT_EQ(count(s, "class=\"bar-behind\""), 1u);
  EXPECT_EQ(count(s, "stroke-dasharray"), 1u);
  EXPECT_NE(s.find("error: &lt;NCCL&gt;"), std::string::npos);
  BarChart empty;
  EXPECT_NE(bar_chart_svg(empty).find("no results"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet::html
