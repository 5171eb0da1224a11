// What reaches a terminal: no control character from the input, colour only where wanted.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "gpuvet/report.h"

namespace gpuvet {
namespace {

// A paste that retitles the terminal window and clears the screen, plus a C1 CSI and a DEL.
const std::string kAttack =
    "H100\x1b]0;PWNED\x07\x1b[2J\r\xc2\x9b"
    "31m\x7f"
    "end";

// The rendered text with gpuvet's own colour codes taken out.
std::string without_own_styles(std::string s) {
  for (const char* code :
       {"\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[32m", "\x1b[1m", "\x1b[2m", "\x1b[0m"}) {
    for (auto at = s.find(code); at != std::string::npos; at = s.find(code))
      s.erase(at, std::string_view(code).size());
  }
  return s;
}

// The first control character in `s` other than tab and newline, or "" when there is none.
std::string first_control(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto ch = static_cast<unsigned char>(s[i]);
    const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7F ||
        (ch == 0xC2 && next >= 0x80 && next <= 0x9F))
      return std::string(s.substr(i < 20 ? 0 : i - 20, 40));
  }
  return "";
}

TEST(TerminalSafe, MakesC0ControlsVisibleButKeepsTabAndNewline) {
  EXPECT_EQ(terminal_safe("a\x1b]0;x\x07"
                          "b"),
            "a\\x1b]0;x\\x07b");
  EXPECT_EQ(terminal_safe("a\tb\nc\rd"), "a\tb\nc\\x0dd");
  EXPECT_EQ(terminal_safe(std::string_view("nul\0end", 7)), "nul\\x00end");
}

TEST(TerminalSafe, MakesDelAndC1ControlsVisible) {
  EXPECT_EQ(terminal_safe("a\x7f"
                          "b"),
            "a\\x7fb");
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\u009b2J");  // CSI
  EXPECT_EQ(terminal_safe("\xc2\x9d"
                          "0;x"),
            "\\u009d0;x");                           // OSC
  EXPECT_EQ(terminal_safe("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is printable
}

TEST(TerminalSafe, ReplacesBytesThatAreNotUtf8) {
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(terminal_safe("a\x9b"
                          "b"),
            "a" + fffd + "b");                                   // a raw 8-bit CSI
  EXPECT_EQ(terminal_safe("\xc0\x9b"), fffd + fffd);             // overlong ESC-ish form
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), fffd + fffd + fffd);  // a surrogate
  EXPECT_EQ(terminal_safe("cut \xe2\x80"), "cut " + fffd + fffd);
}

TEST(TerminalSafe, KeepsPrintableTextAsItIs) {
  for (const char* s : {"NVIDIA H100 80GB HBM3", "GPU0 — 84 °C · 8× H200", "名前 🚀", ""})
    EXPECT_EQ(terminal_safe(s), s);
}

Facts facts_with_attacks() {
  Facts f;
  f.host.hostname = "node" + kAttack;
  f.host.kernel = kAttack;
  f.host.os = kAttack;
  f.host.cpu_model = kAttack;
  f.host.driver_version = "580" + kAttack;
  GpuFacts g;
  g.index = 0;
  g.name = kAttack;
  g.pci_bus_id = "0000:3b:00.0" + kAttack;
  g.unresponsive = "not responding: " + kAttack;
  g.unreadable = {"ecc.mode: " + kAttack};
  f.gpus = {g};
  ProcessFacts p;
  p.host_pid = 42;
  p.name = "py" + kAttack;
  p.cpus_allowed = kAttack;
  f.processes = {p};
  f.kernel_log.source = "dmesg" + kAttack;
  f.kernel_log.readable = true;
  XidEvent x;
  x.code = 79;
  x.message = "fallen off the bus " + kAttack;
  f.kernel_log.xids = {x};
  f.notes = {"conflict: driver_version is " + kAttack};
  ImportedFile in;
  in.path = "paste" + kAttack;
  in.format = "nvidia-smi -q";
  f.imported = {in};
  return f;
}

TEST(TerminalText, NoControlCharacterFromTheInputReachesTheFactsText) {
  const Facts f = facts_with_attacks();
  for (bool color : {false, true}) {
    TextOptions options;
    options.color = color;
    options.verbose = true;
    const std::string text = render_facts_text(f, options);
    EXPECT_EQ(first_control(without_own_styles(text)), "") << "colour " << color;
    EXPECT_NE(text.find("H100\\x1b]0;PWNED\\x07"), std::string::npos) << text;
    if (!color) {
      EXPECT_EQ(text.find('\x1b'), std::string::npos);
    }
  }
}

TEST(TerminalText, NoControlCharacterFromTheInputReachesTheDiagnosisText) {
  const Facts f = facts_with_attacks();
  Diagnosis d;
  Finding finding;
  finding.id = "gpu-unresponsive";
  finding.severity = Severity::kCritical;
  finding.subjects = {"GPU0" + kAttack};
  finding.evidence = "GPU0 " + kAttack;
  finding.decision_note = kAttack;
  Finding info = finding;
  info.severity = Severity::kInfo;
  d.findings = {finding, info};
  d.worst = Severity::kCritical;
  d.bottleneck = Bottleneck::kHardware;
  d.bottleneck_reason = "because " + kAttack;
  d.notes = {"note " + kAttack};
  for (bool color : {false, true}) {
    TextOptions options;
    options.color = color;
    options.verbose = true;
    const std::string text = render_diagnosis_text(f, d, options);
    EXPECT_EQ(first_control(without_own_styles(text)), "") << "colour " << color;
    EXPECT_NE(text.find("node" + terminal_safe(kAttack)), std::string::npos) << text;
    if (!color) {
      EXPECT_EQ(text.find('\x1b'), std::string::npos);
    }
  }
}

TEST(TerminalText, ColoursStillComeThroughWhenAsked) {
  TextOptions options;
  options.color = true;
  const std::string text = render_facts_text(facts_with_attacks(), options);
  EXPECT_NE(text.find("\x1b[1mHost "), std::string::npos);
  EXPECT_NE(text.find("\x1b[31mXid 79\x1b[0m"), std::string::npos) << text;
}

TEST(JsonText, CarriesNoRawControlCharacterAndReadsBackTheSameString) {
  const Facts f = facts_with_attacks();
  const std::string text = facts_to_json(f);
  EXPECT_EQ(first_control(text), "");
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["gpus"][0]["name"], kAttack);
  EXPECT_EQ(j["host"]["hostname"], "node" + kAttack);
  const std::string report = diagnosis_to_json(f, Diagnosis{});
  EXPECT_EQ(first_control(report), "");
}

TEST(ColorWanted, OnlyOnATerminalThatCanShowIt) {
  const auto wanted = [](bool flag, bool tty, const char* term, const char* no_color) {
    return color_wanted(ColorContext{flag, tty, term, no_color});
  };
  EXPECT_TRUE(wanted(false, true, "xterm-256color", nullptr));
  EXPECT_TRUE(wanted(false, true, "xterm", ""));  // an empty NO_COLOR is not set
  EXPECT_FALSE(wanted(false, true, "xterm", "1"));
  EXPECT_FALSE(wanted(false, true, "xterm", "0"));  // any non-empty value
  EXPECT_FALSE(wanted(false, true, "dumb", nullptr));
  EXPECT_FALSE(wanted(false, true, nullptr, nullptr));
  EXPECT_FALSE(wanted(false, true, "", nullptr));
  EXPECT_FALSE(wanted(false, false, "xterm", nullptr));  // a pipe or a file
  EXPECT_FALSE(wanted(true, true, "xterm", nullptr));    // --no-color wins
  EXPECT_FALSE(wanted(true, true, "xterm", ""));
}

}  // namespace
}  // namespace gpuvet
