// core/status_test.cc — Result: a value or a Status, and a wrong access that stops loudly.
#include "gpuvet/status.h"

#include <string>

#include <gtest/gtest.h>

namespace gpuvet {
namespace {

TEST(Result, HoldsAValueOrAStatus) {
  Result<std::string> ok(std::string("text"));
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(ok.value(), "text");
  EXPECT_EQ(ok->size(), 4u);
  Result<std::string> bad(Status::not_found("/proc/x"));
  EXPECT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bad.value_or("fallback"), "fallback");
}

TEST(ResultDeathTest, ValueOnAnErrorStopsWithTheStatusText) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Result<int> bad(Status::not_found("/proc/driver/nvidia/params"));
  EXPECT_DEATH((void)bad.value(), "Result::value\\(\\) on an error: .*/proc/driver/nvidia/params");
  const Result<std::string> cbad(Status::timeout("nvmlInit"));
  EXPECT_DEATH((void)cbad->size(), "on an error: .*nvmlInit");
}

}  // namespace
}  // namespace gpuvet
