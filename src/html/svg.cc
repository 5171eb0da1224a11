// html/svg.cc — the SVG writer and the escaping every page fragment goes through.
#include "html/svg.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace gpuvet::html {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence at text[i] and its code point, or 0 when the bytes
// there are not one (overlong forms, surrogates and values past U+10FFFF included).
std::size_t utf8_sequence(std::string_view text, std::size_t i, std::uint32_t& cp) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  std::size_t n = 0;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3, cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4, cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = utf8_sequence(text, i, cp);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    switch (cp) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
      case '\r':
        out += static_cast<char>(cp);
        break;
      default:
        if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F))
          out += kReplacement;
        else
          out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string num(double v, int decimals) {
  if (!std::isfinite(v)) return "0";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

Svg::Svg(double width, double height, std::string_view label) : width_(width), height_(height) {
  body_ = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\"><title>{2}</title>",
      num(width), num(height), escape(label));
}

void Svg::open_shape(std::string_view element, const Paint& p) {
  body_ += '<';
  body_ += element;
  if (!p.css_class.empty()) body_ += " class=\"" + escape(p.css_class) + "\"";
  for (const auto& [name, value] : p.data) body_ += " data-" + name + "=\"" + escape(value) + "\"";
  if (element != "g") body_ += " fill=\"" + escape(p.fill) + "\"";
  if (!p.stroke.empty()) {
    body_ += " stroke=\"" + escape(p.stroke) + "\" stroke-width=\"" + num(p.stroke_width) + "\"";
    if (!p.dash.empty()) body_ += " stroke-dasharray=\"" + escape(p.dash) + "\"";
  }
  if (p.opacity < 1) body_ += " opacity=\"" + num(p.opacity) + "\"";
}

void Svg::close_shape(std::string_view element, const Paint& p) {
  if (p.title.empty()) {
    body_ += "/>";
    return;
  }
  body_ += "><title>" + escape(p.title) + "</title></";
  body_ += element;
  body_ += '>';
}

void Svg::rect(double x, double y, double w, double h, const Paint& paint) {
  open_shape("rect", paint);
  body_ += fmt::format(" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", num(x), num(y),
                       num(std::max(0.0, w)), num(std::max(0.0, h)));
  close_shape("rect", paint);
}

void Svg::line(double x1, double y1, double x2, double y2, const Paint& paint) {
  open_shape("line", paint);
  body_ +=
      fmt::format(" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"", num(x1), num(y1), num(x2), num(y2));
  close_shape("line", paint);
}

void Svg::polyline(const std::vector<Point>& points, const Paint& paint) {
  if (points.size() < 2) return;
  open_shape("polyline", paint);
  body_ += " points=\"";
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i) body_ += ' ';
    body_ += num(points[i].x) + "," + num(points[i].y);
  }
  body_ += "\" stroke-linejoin=\"round\"";
  close_shape("polyline", paint);
}

void Svg::circle(double cx, double cy, double r, const Paint& paint) {
  open_shape("circle", paint);
  body_ += fmt::format(" cx=\"{}\" cy=\"{}\" r=\"{}\"", num(cx), num(cy), num(r));
  close_shape("circle", paint);
}

void Svg::text(double x, double y, std::string_view text, Anchor anchor, std::string_view css_class,
               double rotate) {
  body_ += fmt::format("<text x=\"{}\" y=\"{}\"", num(x), num(y));
  if (anchor == Anchor::kMiddle) body_ += " text-anchor=\"middle\"";
  if (anchor == Anchor::kEnd) body_ += " text-anchor=\"end\"";
  if (!css_class.empty()) body_ += " class=\"" + escape(css_class) + "\"";
  if (rotate != 0)
    body_ += fmt::format(" transform=\"rotate({} {} {})\"", num(rotate), num(x), num(y));
  body_ += ">" + escape(text) + "</text>";
}

void Svg::open_group(const Paint& paint) {
  open_shape("g", paint);
  body_ += '>';
  if (!paint.title.empty()) body_ += "<title>" + escape(paint.title) + "</title>";
  ++open_groups_;
}

void Svg::close_group() {
  if (open_groups_ == 0) return;
  body_ += "</g>";
  --open_groups_;
}

std::string Svg::str() const {
  std::string out = body_;
  for (int i = 0; i < open_groups_; ++i) out += "</g>";
  return out + "</svg>";
}

}  // namespace gpuvet::html
