// hw/xid_table_test.cc — the Xid table: the common codes, their meanings, origins and
// default severities, order and uniqueness.
#include "hw/xid_table.h"

#include <iterator>
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

// Every code of the table with the severity the xid-error finding takes for it and NVIDIA's
// immediate action. NVIDIA's Xid catalog for Ampere and newer
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) gives the action bucket;
// the severity is gpuvet's reading of it: RESET_GPU, RESTART_BM and the ECC/NVLink workflows
// are critical, RESTART_APP and CONTACT_SUPPORT warnings, IGNORE an info or a warning.
struct PinnedXid {
  int code;
  Severity severity;
  const char* action;
};
constexpr PinnedXid kPinned[] = {
    {8, Severity::kWarning, "RESTART_APP"},
    {13, Severity::kInfo, "RESTART_APP"},
    {31, Severity::kInfo, "RESTART_APP"},
    {32, Severity::kWarning, "RESTART_APP"},
    {38, Severity::kWarning, "IGNORE"},
    {43, Severity::kInfo, "IGNORE"},
    {45, Severity::kInfo, "WORKFLOW_XID_45"},
    {46, Severity::kCritical, "RESET_GPU"},
    {48, Severity::kCritical, "WORKFLOW_XID_48"},
    {54, Severity::kCritical, "CHECK_MECHANICALS"},
    {61, Severity::kWarning, "CONTACT_SUPPORT"},
    {62, Severity::kCritical, "RESET_GPU"},
    {63, Severity::kWarning, "IGNORE"},
    {64, Severity::kCritical, "RESET_GPU"},
    {68, Severity::kWarning, "RESTART_APP"},
    {69, Severity::kInfo, "RESTART_APP"},
    {74, Severity::kCritical, "WORKFLOW_NVLINK_ERR"},  // a GPU reset or node reboot clears it
    {79, Severity::kCritical, "RESTART_BM"},
    {92, Severity::kWarning, "IGNORE"},
    {94, Severity::kWarning, "RESTART_APP"},  // contained: only the application is hit
    {95, Severity::kCritical, "RESET_GPU"},   // uncontained: every application, reset
    {109, Severity::kCritical, "RESET_GPU"},
    {119, Severity::kCritical, "RESET_GPU"},  // GSP RPC timeout
    {120, Severity::kCritical, "RESET_GPU"},
    {121, Severity::kWarning, "IGNORE"},
    {122, Severity::kWarning, "CONTACT_SUPPORT"},
    {123, Severity::kWarning, "CONTACT_SUPPORT"},
    {136, Severity::kCritical, "RESET_GPU"},
    {137, Severity::kWarning, "IGNORE"},
    {140, Severity::kCritical, "RESET_GPU"},
    {143, Severity::kCritical, "RESET_GPU"},
    {144, Severity::kWarning, "WORKFLOW_NVLINK5_ERR"},  // fatal or not: the message says
    {145, Severity::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {146, Severity::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {147, Severity::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {148, Severity::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {149, Severity::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {150, Severity::kWarning, "WORKFLOW_NVLINK5_ERR"},
    {154, Severity::kWarning, "XID_154"},
    {155, Severity::kCritical, "RESET_GPU"},
    {156, Severity::kWarning, "RESET_GPU"},  // the retirement takes effect at the next reset
    {157, Severity::kCritical, "IGNORE"},    // the faulty resource stays in use
    {158, Severity::kCritical, "RESET_GPU"},
};

TEST(XidCatalog, EveryCodeHasItsPinnedSeverityAndAction) {
  for (const PinnedXid& pin : kPinned) {
    const XidInfo* info = find_xid(pin.code);
    ASSERT_NE(info, nullptr) << "Xid " << pin.code;
    EXPECT_EQ(info->severity, pin.severity)
        << "Xid " << pin.code << " is " << severity_name(info->severity) << ", pinned "
        << severity_name(pin.severity);
    EXPECT_STREQ(info->action, pin.action) << "Xid " << pin.code;
  }
  // A code added to the table must be added here too, with its severity reviewed.
  EXPECT_EQ(xid_catalog().size(), std::size(kPinned));
}

TEST(XidCatalog, ResetOrRebootActionsAreCritical) {
  for (const XidInfo& info : xid_catalog()) {
    const std::string action = info.action;
    if (action != "RESET_GPU" && action != "RESTART_BM") continue;
    if (info.code == 156) continue;  // a retirement that waits for the next reset: a warning
    EXPECT_EQ(info.severity, Severity::kCritical) << "Xid " << info.code << " (" << action << ")";
  }
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

TEST(XidChains, NamedCauseAndRecoveryAction) {
  EXPECT_TRUE(xid_is_consequence(45));
  EXPECT_TRUE(xid_is_consequence(154));
  EXPECT_FALSE(xid_is_consequence(79));
  EXPECT_EQ(xid_named_cause("pid=1, name=python3, Ch 0000000c caused by previous Xid 149"), 149);
  EXPECT_EQ(xid_named_cause("pid=1, name=python3, Ch 00000002"), std::nullopt);
  auto a = xid_recovery_action(
      "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->code, 2);
  EXPECT_EQ(a->text, "Node Reboot Required");
  EXPECT_EQ(a->severity, Severity::kCritical);
  a = xid_recovery_action(
      "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->severity, Severity::kInfo);
  a = xid_recovery_action("GPU recovery action changed to 0x3");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->text, "Drain P2P");
  EXPECT_EQ(a->severity, Severity::kWarning);
  EXPECT_FALSE(xid_recovery_action("Ch 00000001, intr 10000000").has_value());
}

}  // namespace
}  // namespace gpuvet::hw

namespace gpuvet::hw {
namespace {

// The channel an Xid names, in the spellings drivers 418 to 595 print; none in a message that
// names no channel, and not inside a word ("Subchannel", "Mismatch").
TEST(XidChains, TheChannelAMessageNames) {
  EXPECT_EQ(xid_channel("Ch 0000003a, intr 10000000. MMU Fault: ENGINE GRAPHICS"), 0x3au);
  EXPECT_EQ(xid_channel("Graphics Exception: ChID 0052, Class 00000000, Offset 00001b0c"), 0x52u);
  EXPECT_EQ(xid_channel("Channel ID 00000052 intr 02000000"), 0x52u);
  EXPECT_EQ(xid_channel("pid=9468, name=CrimsonDesert.e, channel 0x0000000f, errorString CTX"),
            0xfu);
  EXPECT_EQ(xid_channel("Channel 00000020 Instance 00000000 Intr 00100000"), 0x20u);
  EXPECT_FALSE(xid_channel("Graphics Exception: Class 0x0 Subchannel 0x0 Mismatch"));
  EXPECT_FALSE(xid_channel("Graphics Exception: ESR 0x404000=0x80000002"));
}

}  // namespace
}  // namespace gpuvet::hw
