// html/svg.h — the small SVG and HTML writer of the HTML report (internal to src/html).
//
// Shapes and text go into one <svg> element as they are added; the element is closed by
// str(). Every text and attribute value passes through escape(), so what an input carries (a
// GPU name, a host name) is text in the page, never markup. Numbers are written with at most
// two decimals by num(), so the same input gives the same bytes (the report is diffable and
// its tests compare strings). Plain value types; no shared state; thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuvet::html {

// `text` safe as HTML/XML character data and as a quoted attribute value: & < > " ' become
// entities; C0 controls other than tab, newline and carriage return, DEL, C1 controls
// (U+0080–U+009F) and bytes that are not UTF-8 become U+FFFD (XML forbids most of them, and
// HTML treats them as errors).
std::string escape(std::string_view text);

// A coordinate, a length or a figure: fixed-point with at most `decimals` decimals, trailing
// zeros dropped, never "-0"; NaN and infinities (which SVG cannot draw) become "0".
std::string num(double v, int decimals = 2);

// How a shape is drawn and what it says on hover. Attribute names are the writer's own;
// every value is escaped.
struct Paint {
  std::string fill = "none";
  std::string stroke;  // empty: no stroke
  double stroke_width = 1;
  std::string dash;  // stroke-dasharray, e.g. "4 3"
  double opacity = 1;
  std::string css_class;
  std::string title;                                      // tooltip: a <title> child
  std::vector<std::pair<std::string, std::string>> data;  // data-NAME="value" attributes
};

enum class Anchor { kStart, kMiddle, kEnd };

struct Point {
  double x = 0;
  double y = 0;
};

class Svg {
 public:
  // `label` names the figure for screen readers and as its tooltip (role="img").
  Svg(double width, double height, std::string_view label);

  void rect(double x, double y, double w, double h, const Paint& paint);
  void line(double x1, double y1, double x2, double y2, const Paint& paint);
  // One polyline through the points in order; fewer than two points draw nothing (a single
  // point is a circle: the caller decides how it looks).
  void polyline(const std::vector<Point>& points, const Paint& paint);
  void circle(double cx, double cy, double r, const Paint& paint);
  // Text at (x, y) (the baseline); `rotate` degrees about that point.
  void text(double x, double y, std::string_view text, Anchor anchor = Anchor::kStart,
            std::string_view css_class = {}, double rotate = 0);
  // <g> with a class and data attributes; groups nest and must be closed.
  void open_group(const Paint& paint);
  void close_group();

  double width() const { return width_; }
  double height() const { return height_; }
  // The whole element, closed (open groups included).
  std::string str() const;

 private:
  void open_shape(std::string_view element, const Paint& paint);
  void close_shape(std::string_view element, const Paint& paint);
  double width_;
  double height_;
  std::string body_;
  int open_groups_ = 0;
};

}  // namespace gpuvet::html
