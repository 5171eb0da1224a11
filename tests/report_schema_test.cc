// docs/schema/gpuvet.report-1.schema.json is the schema tests/report_schema.h builds from the
// code that writes the document: this fails when the file is not current. Run with
// GPUVET_UPDATE_SCHEMA=1 to rewrite it. (That real outputs validate against it is the
// schema.validates_real_outputs ctest, with Debian's python3-jsonschema.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "report_schema.h"

namespace gpuvet {
namespace {

const std::string kPath =
    std::string(GPUVET_SOURCE_DIR) + "/docs/schema/gpuvet.report-1.schema.json";

TEST(ReportSchema, FileIsCurrent) {
  const test::ojson schema = test::report_schema();
  const std::string want = schema.dump(2) + "\n";
  if (std::getenv("GPUVET_UPDATE_SCHEMA")) {
    std::ofstream(kPath, std::ios::binary) << want;
    GTEST_SKIP() << "rewrote " << kPath;
  }
  std::ifstream in(kPath, std::ios::binary);
  ASSERT_TRUE(in) << kPath << " missing: run GPUVET_UPDATE_SCHEMA=1 build/gpuvet_tests "
                  << "--gtest_filter=ReportSchema.*";
  std::stringstream have;
  have << in.rdbuf();
  EXPECT_EQ(nlohmann::json::parse(have.str()), nlohmann::json::parse(want))
      << kPath << " is not current: run GPUVET_UPDATE_SCHEMA=1 build/gpuvet_tests "
      << "--gtest_filter=ReportSchema.*";
}

TEST(ReportSchema, DescribesTheFactsAndDiagnoseKeys) {
  const test::ojson s = test::report_schema();
  const auto& props = s["properties"];
  for (const char* key :
       {"schema", "tool", "host", "gpus", "pairs", "kernel_log", "xids", "findings", "bottleneck",
        "symptoms", "verdict", "exit_code", "notes", "coverage"})
    EXPECT_TRUE(props.contains(key)) << key;
  const auto& gpu = s["$defs"]["GpuFacts"]["properties"];
  for (const char* key : {"index", "uuid", "pci_bus_id", "pcie", "clocks", "power"})
    EXPECT_TRUE(gpu.contains(key)) << key;
  EXPECT_FALSE(s["$defs"]["KernelLog"]["properties"].contains("xids"));  // written beside it
  EXPECT_TRUE(s["$defs"]["GpuPair"]["properties"].contains("subject"));
  const auto& finding = s["$defs"]["Finding"]["properties"];
  EXPECT_EQ(finding["action"]["enum"].size(), 6u);
  for (const char* key : {"gpus", "observed", "expected", "action"})
    EXPECT_TRUE(finding.contains(key)) << key;
}

}  // namespace
}  // namespace gpuvet
