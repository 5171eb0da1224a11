// `gpuvet advise` through the binary: the text lists every term, --json is gpuvet.advise/1, a
// saved diagnose of an io-bound node and the real H200 scale runs feed it, and impossible
// input is one sentence on stderr with exit 3.
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "fixture_util.h"
#include "gpuvet/env.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

CommandResult gpuvet(std::vector<std::string> args) { return gpuvet::testing::run_gpuvet(args); }

// Live on the fake NVML (one H200, idle), as the gate tests run it.
CommandResult gpuvet_fake_h200(std::vector<std::string> args) {
  return gpuvet::testing::run_gpuvet(args, "h200-1gpu-idle.json");
}

const std::vector<std::string> k13bOn2x4090 = {
    "advise",   "--mode", "train",   "--params", "13B",          "--layers", "40",
    "--hidden", "5120",   "--heads", "40",       "--candidates", "2xRTX4090"};

TEST(AdviseCli, TheTextNamesTheRecommendationAndEveryTerm) {
  auto r = gpuvet(k13bOn2x4090);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* want :
       {"Recommendation: does-not-fit",
        "Deciding numbers:", "What would change the answer:", "with ZeRO-3 it fits on 43×",
        "weights", "gradients", "optimizer states", "activations", "222", "19.2 GB usable",
        "compute per step", "Assumptions:", "data parallelism does not add VRAM"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in\n" << r.out;
}

TEST(AdviseCli, JsonIsTheAdviseDocument) {
  auto args = k13bOn2x4090;
  args.push_back("--json");
  auto r = gpuvet(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpuvet.advise/1");
  EXPECT_EQ(j["recommendation"], "does-not-fit");
  EXPECT_EQ(j["workload"]["params"], 13e9);
  ASSERT_EQ(j["candidates"].size(), 1u);
  const auto& c = j["candidates"][0];
  EXPECT_EQ(c["fits"], false);
  EXPECT_EQ(c["count"], 2);
  EXPECT_EQ(c["memory"].size(), 4u);
  EXPECT_DOUBLE_EQ(c["memory"][2]["value"].get<double>(), 156.0);  // 12 B × 13e9
  for (const char* key : {"deciding", "would_change", "assumptions", "host_limits", "notes"})
    EXPECT_TRUE(j[key].is_array()) << key;
  EXPECT_TRUE(j["allreduce_fit"].is_null());
}

TEST(AdviseCli, ImpossibleInputIsOneSentenceAndExitThree) {
  const std::vector<std::vector<std::string>> cases = {
      {"advise", "--mode", "train", "--params", "-5", "--layers", "2", "--hidden", "64",
       "--candidates", "1xH100"},
      {"advise", "--mode", "train", "--params", "1e9", "--layers", "2", "--hidden", "64",
       "--candidates", "0xH100"},
      {"advise", "--mode", "train", "--params", "1e9", "--layers", "2", "--hidden", "64",
       "--candidates", "2xH300"},
      {"advise", "--mode", "infer", "--model", "llama2-7b", "--latency-p99-ms", "0", "--candidates",
       "1xH100"},
      {"advise", "--mode", "train", "--model", "llama2-7b", "--batch-per-gpu", "0", "--candidates",
       "1xH100"},
      {"advise", "--mode", "train", "--model", "llama2-7b", "--seq-len", "-1", "--candidates",
       "1xH100"},
      {"advise", "--mode", "fly", "--model", "llama2-7b", "--candidates", "1xH100"},
      {"advise", "--model", "gpt-9", "--candidates", "1xH100"},
      {"advise", "--model", "llama2-7b", "--candidates", "2xthis", "--node",
       "/nonexistent/diagnose.json"},
      {"advise", "--model", "llama2-7b", "--workload", "/nonexistent/w.toml"},
  };
  for (const auto& args : cases) {
    auto r = gpuvet(args);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(r.exit_code, 3) << shown << "\n" << r.out << r.err;
    EXPECT_EQ(r.err.rfind("gpuvet: ", 0), 0u) << shown << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << shown << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << shown << ": " << r.out;
  }
}

TEST(AdviseCli, WrongKindsOfJsonAreRefused) {
  gpuvet::testing::TempDir dir("gpuvet-advise");
  const std::string scale = dir.path() + "/scale.json";
  const std::string bench = dir.path() + "/bench.json";
  std::ofstream(scale) << R"({"schema":"gpuvet.scale/1","ran":true,"results":[]})";
  std::ofstream(bench) << R"({"schema":"gpuvet.bench/1","results":[]})";
  const std::string diag = dir.path() + "/diag.json";
  auto d =
      gpuvet({"diagnose", "--from", gpuvet::testing::fixture("article/task-09.txt"), "--json"});
  std::ofstream(diag) << d.out;
  const std::vector<std::string> base = {"advise",     "--model", "llama2-7b",
                                         "--this-gpu", "H100",    "--candidates",
                                         "2xthis",     "--node",  diag};
  // A scale document given as the bench sweep, a bench document as the scale runs, a scale run
  // in which nothing ran.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bench", scale}, "is not gpuvet.bench/1"},
      {{"--scale", bench}, "is not gpuvet.scale/1"},
      {{"--scale", scale}, "no configuration that ran"}};
  for (const auto& [extra, why] : cases) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = gpuvet(args);
    EXPECT_EQ(r.exit_code, 3) << extra[0] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  }
  auto r = gpuvet({"advise", "--model", "llama2-7b", "--candidates", "2xthis", "--node", scale});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
}

TEST(AdviseCli, AnIoBoundNodesDiagnoseSaysFixTheHostFirst) {
  gpuvet::testing::TempDir dir("gpuvet-advise");
  const std::string diag = dir.path() + "/diag.json";
  auto d =
      gpuvet({"diagnose", "--from", gpuvet::testing::fixture("article/task-09.txt"), "--json"});
  ASSERT_NE(d.out.find("\"io-bound\""), std::string::npos) << d.out;
  std::ofstream(diag) << d.out;
  auto r = gpuvet({"advise", "--node", diag, "--this-gpu", "H100", "--mode", "train", "--params",
                   "1.3e9", "--layers", "24", "--hidden", "2048", "--heads", "16", "--candidates",
                   "2xthis"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Recommendation: fix-host-first"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("io-bound (nvme0n1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with the host fixed, the checklist says add-gpu-data-parallel"),
            std::string::npos)
      << r.out;
}

TEST(AdviseCli, TheH200ScaleRunsFeedTheComputeRateAndTheSpread) {
  // The recorded H200 runs (docs/results/h200-honest-2026-12-04): cuBLASLt bf16 on one GPU.
  const std::string runs =
      std::string(GPUVET_SOURCE_DIR) + "/docs/results/h200-honest-2026-12-04/raw-run2/scale/";
  auto r = gpuvet_fake_h200({"advise", "--json", "--mode", "train", "--model", "llama2-7b",
                             "--checkpointing", "--candidates", "2xthis,8xthis,1xB200", "--link",
                             "nvlink", "--scale", runs + "scale-llm-7b-layer.json", "--scale",
                             runs + "scale-decoder-7b.json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& two = j["candidates"][0];
  EXPECT_EQ(two["this_node"], true);
  EXPECT_EQ(two["compute_measured"], true);
  EXPECT_EQ(two["comm_measured"], false);
  EXPECT_NE(two["time"][0]["how"].get<std::string>().find("measured: "), std::string::npos)
      << two["time"][0];
  // 150,754,820,096 B of memory from the (fake) NVML.
  EXPECT_NEAR(two["capacity_gb"].get<double>(), 150.754820096, 1e-9);
  EXPECT_EQ(j["recommendation"], "add-gpu-data-parallel") << j["summary"];
}

}  // namespace
}  // namespace gpuvet
