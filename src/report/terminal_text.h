// report/terminal_text.h — text meant for a terminal, built like an ostringstream. Every
// string appended to it goes through terminal_safe() (report.h), so a GPU name, host name
// or process name from a pasted file cannot retitle the window, move the cursor or clear
// the screen; a Style is the only escape sequence written raw, and the renderer passes one
// only when colour is on. Internal to src/report; not thread-safe (one per rendering).
#pragma once

#include <concepts>
#include <sstream>
#include <string>
#include <string_view>

#include "gpuvet/report.h"

namespace gpuvet::report {

// An ANSI SGR sequence of gpuvet's own ("" for none).
struct Style {
  const char* code;
};
inline constexpr Style kNoStyle{""};

class TerminalText {
 public:
  TerminalText& operator<<(Style s) {
    out_ += s.code;
    return *this;
  }
  TerminalText& operator<<(std::string_view s) {
    out_ += terminal_safe(s);
    return *this;
  }
  TerminalText& operator<<(const std::string& s) { return *this << std::string_view(s); }
  TerminalText& operator<<(const char* s) { return *this << std::string_view(s); }
  TerminalText& operator<<(char c) { return *this << std::string_view(&c, 1); }
  // Numbers read as an ostream prints them.
  template <typename T>
  requires std::is_arithmetic_v<T> &&(!std::same_as<T, char>)TerminalText& operator<<(T v) {
    std::ostringstream s;
    s << v;
    out_ += s.str();
    return *this;
  }

  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

}  // namespace gpuvet::report
