// hw/xid_table_test.cc — the Xid table: the common codes, their meanings, origins and
// default severities, order and uniqueness.
#include "hw/xid_table.h"

#include <string>

#include <gtest/gtest.h>

namespace gpuvet::hw {
namespace {

TEST(XidCatalog, CoversTheCommonCodes) {
  for (int code :
       {8,  13,  31,  32,  38,  43,  45,  48,  61,  62,  63,  64,  68,  69,  74,  79,  92, 94,
        95, 109, 119, 120, 121, 122, 123, 140, 143, 144, 145, 146, 147, 148, 149, 150, 154}) {
    const XidInfo* info = find_xid(code);
    ASSERT_NE(info, nullptr) << code;
    EXPECT_EQ(info->code, code);
    EXPECT_NE(std::string(info->mnemonic), "");
    EXPECT_NE(std::string(info->name), "");
    EXPECT_GT(std::string(info->meaning).size(), 20u) << code;
    const Severity severity = info->severity;
    EXPECT_TRUE(severity == Severity::kInfo || severity == Severity::kWarning ||
                severity == Severity::kCritical)
        << code;
    EXPECT_NE(std::string(info->action), "");
  }
}

TEST(XidCatalog, KnownMeaningsAndOrigins) {
  const XidInfo* x79 = find_xid(79);
  ASSERT_NE(x79, nullptr);
  EXPECT_STREQ(x79->name, "GPU has fallen off the bus");
  EXPECT_STREQ(x79->mnemonic, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
  EXPECT_EQ(x79->severity, Severity::kCritical);
  EXPECT_STREQ(xid_origin_name(x79->origin), "hardware");
  EXPECT_EQ(find_xid(48)->severity, Severity::kCritical);
  EXPECT_STREQ(xid_origin_name(find_xid(48)->origin), "memory");
  for (int app : {13, 31, 43}) EXPECT_STREQ(xid_origin_name(find_xid(app)->origin), "application");
  EXPECT_STREQ(xid_origin_name(find_xid(74)->origin), "nvlink");
  EXPECT_STREQ(xid_origin_name(find_xid(149)->origin), "nvlink");
  EXPECT_STREQ(xid_origin_name(find_xid(119)->origin), "driver");
  EXPECT_STREQ(xid_origin_name(find_xid(54)->origin), "thermal-power");
  EXPECT_STREQ(find_xid(119)->name, "GSP RPC Timeout");
  EXPECT_STREQ(find_xid(154)->name, "GPU Recovery Action Changed");
  EXPECT_STREQ(xid_origin_name(XidOrigin::kUnknown), "unknown");
}

TEST(XidCatalog, UnknownCodesAreNull) {
  EXPECT_EQ(find_xid(0), nullptr);
  EXPECT_EQ(find_xid(-1), nullptr);
  EXPECT_EQ(find_xid(1), nullptr);
  EXPECT_EQ(find_xid(100000), nullptr);
}

TEST(XidCatalog, SortedAndUnique) {
  auto all = xid_catalog();
  ASSERT_GT(all.size(), 30u);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].code, all[i].code);
  for (const XidInfo& info : all) EXPECT_EQ(find_xid(info.code), &info);
}

}  // namespace
}  // namespace gpuvet::hw
