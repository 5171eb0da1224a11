// hw/facts_query: the PSI figure that the rules judge and the report shows (one chooser).
#include "hw/facts_query.h"

#include <gtest/gtest.h>

#include <string>

#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"

namespace gpuvet::hw {
namespace {

PsiReading reading(std::optional<double> window, std::optional<double> avg10) {
  PsiReading r;
  r.some_window_pct = window;
  r.some_avg10 = avg10;
  r.full_window_pct = window ? std::optional<double>(*window / 2) : std::nullopt;
  r.full_avg10 = avg10 ? std::optional<double>(*avg10 / 2) : std::nullopt;
  return r;
}

TEST(PsiChoice, WindowOfASecondOrMoreElseTheTenSecondAverage) {
  auto c = psi_choice(reading(1.5, 27.9), 2.0);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->windowed);
  EXPECT_DOUBLE_EQ(c->some_pct, 1.5);
  EXPECT_DOUBLE_EQ(*c->full_pct, 0.75);
  c = psi_choice(reading(1.5, 27.9), kPsiWindowMinS);  // the boundary is a window
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->windowed);
  c = psi_choice(reading(1.5, 27.9), 0.05);  // diagnose's default sample: too short
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->windowed);
  EXPECT_DOUBLE_EQ(c->some_pct, 27.9);
  EXPECT_DOUBLE_EQ(*c->full_pct, 13.95);
  c = psi_choice(reading(60, std::nullopt), 0.05);  // the window is all there is
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->windowed);
  EXPECT_DOUBLE_EQ(c->some_pct, 60);
  c = psi_choice(reading(std::nullopt, 4), 0);  // a capture's one reading
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->windowed);
  EXPECT_FALSE(psi_choice(reading(std::nullopt, std::nullopt), 2));
}

// The report's "Host pressure" line quotes the figure io-bound judged: a 0.05 s window that
// read 1.5 % beside an avg10 of 27.9 % is shown as 27.9 % (avg10), the io-bound figure, not as
// 1.5 % beside a warning about 27.9 %.
TEST(PsiChoice, ReportAndRuleQuoteTheSameFigure) {
  Facts f;
  f.host.pressure = HostPressure{};
  f.host.pressure->window_s = 0.05;
  f.host.pressure->psi_io = reading(1.5, 27.9);
  const std::string text = render_facts_text(f);
  EXPECT_NE(text.find("io PSI some 27.9% (avg10)"), std::string::npos) << text;
  EXPECT_EQ(text.find("io PSI some 1.5%"), std::string::npos) << text;
  const Diagnosis d = diagnose(f);
  bool io = false;
  for (const auto& x : d.findings)
    if (x.id == "io-bound") {
      io = true;
      EXPECT_NE(x.evidence.find("some 27.9 %"), std::string::npos) << x.evidence;
    }
  EXPECT_TRUE(io);
  f.host.pressure->window_s = 2;  // a window long enough: both say 1.5 %
  EXPECT_NE(render_facts_text(f).find("io PSI some 1.5%"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet::hw
