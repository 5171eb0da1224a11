// The CPU side of `gpuvet bench`: suite selection, labels, the P2P truth verdicts,
// expectations, the bridge to the rules, the renderers, and a run on a machine without a
// GPU (every benchmark skipped with the reason, nothing crashes).
#include "bench/registry.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "gpuvet/baseline.h"
#include "gpuvet/bench.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"

namespace gpuvet {
namespace {

bool has(const std::vector<std::string>& v, const std::string& k) {
  return std::find(v.begin(), v.end(), k) != v.end();
}

TEST(BenchRegistry, QuickFullAndOnly) {
  std::vector<std::string> keys;
  BenchOptions o;
  ASSERT_TRUE(bench::select(o, keys).is_ok());
  EXPECT_TRUE(has(keys, "host_to_device_ce"));
  EXPECT_TRUE(has(keys, "all_reduce"));
  EXPECT_FALSE(has(keys, "host_to_device_pageable"));  // --full only
  const std::size_t quick = keys.size();
  o.full = true;
  ASSERT_TRUE(bench::select(o, keys).is_ok());
  EXPECT_EQ(keys.size(), bench_catalog().size());
  EXPECT_GT(keys.size(), quick);
  o.only = {"device_local_copy"};
  ASSERT_TRUE(bench::select(o, keys).is_ok());
  EXPECT_EQ(keys, std::vector<std::string>{"device_local_copy"});
  o.only = {"no_such_benchmark"};
  EXPECT_FALSE(bench::select(o, keys).is_ok());
}

// --match nvbandwidth runs what nvbandwidth also runs, at its sizes, and says so; the quick
// suite says it is not that.
TEST(BenchRegistry, MatchNvbandwidthRunsItsTestcasesAtItsSizes) {
  std::vector<std::string> keys;
  BenchOptions o;
  o.match = "nvbandwidth";
  ASSERT_TRUE(bench::select(o, keys).is_ok());
  EXPECT_TRUE(has(keys, "host_to_device_ce"));
  EXPECT_TRUE(has(keys, "device_to_host_bidir_ce"));
  EXPECT_TRUE(has(keys, "device_local_copy"));
  EXPECT_TRUE(has(keys, "host_to_device_sm"));  // --full only otherwise
  EXPECT_FALSE(has(keys, "all_reduce"));        // nvbandwidth has no collectives
  EXPECT_FALSE(has(keys, "host_to_device_pageable"));
  EXPECT_FALSE(has(keys, "p2p_truth"));
  for (const auto& b : bench_catalog())
    EXPECT_EQ(has(keys, b.key), b.nvbandwidth != nullptr) << b.key;
  const bench::SuiteSizes z = bench::suite_sizes(o);
  EXPECT_EQ(z.copy.bytes, std::size_t{512} << 20);
  EXPECT_EQ(z.copy.iterations, 16);
  EXPECT_EQ(z.copy.samples, 3);
  EXPECT_EQ(z.local.bytes, z.copy.bytes);  // nvbandwidth's device_local_copy: same buffer
  EXPECT_EQ(z.local.iterations, 16);
  EXPECT_NE(bench::suite_text(o, keys).find("match nvbandwidth: 16 of"), std::string::npos)
      << bench::suite_text(o, keys);
  // --only narrows it, but only to testcases nvbandwidth has.
  o.only = {"device_local_copy"};
  ASSERT_TRUE(bench::select(o, keys).is_ok());
  EXPECT_EQ(keys, std::vector<std::string>{"device_local_copy"});
  o.only = {"all_reduce"};
  EXPECT_FALSE(bench::select(o, keys).is_ok());
  o.only.clear();
  o.match = "nccl-tests";
  EXPECT_FALSE(bench::select(o, keys).is_ok());
  // The quick suite labels its scope and its sizes against nvbandwidth's.
  BenchOptions quick;
  ASSERT_TRUE(bench::select(quick, keys).is_ok());
  const std::string q = bench::suite_text(quick, keys);
  EXPECT_NE(q.find("quick: " + std::to_string(keys.size()) + " of "), std::string::npos) << q;
  EXPECT_NE(q.find("64 MiB × 8 copies × 5 samples"), std::string::npos) << q;
  EXPECT_NE(q.find("not nvbandwidth's sizes (512 MiB × 16 × 3)"), std::string::npos) << q;
}

TEST(BenchRegistry, KeysAreUniqueSnakeCase) {
  std::vector<std::string> seen;
  for (const auto& b : bench_catalog()) {
    EXPECT_FALSE(has(seen, b.key)) << b.key;
    seen.push_back(b.key);
    for (char ch : std::string(b.key))
      EXPECT_TRUE((ch >= 'a' && ch <= 'z') || ch == '_' || (ch >= '0' && ch <= '9')) << b.key;
  }
}

TEST(BenchRegistry, SizesAndLabels) {
  EXPECT_EQ(bench::size_label(8), "8 B");
  EXPECT_EQ(bench::size_label(1u << 20), "1 MiB");
  EXPECT_EQ(bench::size_label(std::uint64_t{4} << 30), "4 GiB");
  EXPECT_EQ(bench::size_label(1536), "1536 B");
  const auto full = bench::collective_sizes(true);
  EXPECT_EQ(full.front(), 8u);
  EXPECT_EQ(full.back(), std::size_t{4} << 30);  // nccl-tests -b 8 -e 4G -f 2
  EXPECT_EQ(full.size(), 30u);
  EXPECT_LE(bench::collective_sizes(false).size(), 5u);
}

TEST(BenchRegistry, P2PTruthVerdicts) {
  std::vector<P2PTruth> t(4);
  t[0].cuda_can_access = true;  // all good
  t[0].copy_verified = true;
  t[0].nccl_allreduce_ok = true;
  t[1].nvml_read = P2PStatus::kOk;  // claimed, garbage
  t[1].cuda_can_access = true;
  t[1].copy_verified = false;
  t[2].cuda_can_access = false;  // honest: no P2P, host path works
  t[2].copy_verified = true;
  t[3].cuda_can_access = true;  // claimed, enabling fails
  t[3].enable_error = "cudaErrorPeerAccessUnsupported: peer access is not supported";
  bench::judge_p2p_truth(t);
  EXPECT_EQ(t[0].verdict, "P2P works (data checked)");
  EXPECT_EQ(t[1].verdict, "claimed, but data came back wrong");
  EXPECT_EQ(t[2].verdict, "no P2P: traffic goes through the host");
  EXPECT_NE(t[3].verdict.find("enabling peer access failed"), std::string::npos);
}

Facts h200_node() {
  Facts f;
  GpuFacts g;
  g.index = 0;
  g.name = "NVIDIA H200";
  g.pcie.gen_current = g.pcie.gen_max = 5;
  g.pcie.width_current = g.pcie.width_max = 16;
  f.gpus = {g};
  return f;
}

BenchMatrix host_matrix(const char* key, double gbps) {
  BenchMatrix m;
  m.key = key;
  m.unit = "GB/s";
  m.rows = {"GPU0"};
  m.cols = {"host"};
  m.row_gpu = {0};
  m.col_gpu = {-1};
  m.size_bytes = 256u << 20;
  BenchCell c;
  c.value = gbps;
  c.spread_pct = 0.4;
  c.verified = true;
  m.cells = {{c}};
  return m;
}

TEST(BenchRegistry, ExpectationsAndRulesJudgeTheFigures) {
  const Facts f = h200_node();
  BenchReport r;
  r.cuda_available = true;
  r.results = {host_matrix("host_to_device_ce", 53.9), host_matrix("device_to_host_ce", 11.0)};
  attach_expectations(r, f);
  ASSERT_TRUE(r.results[0].cells[0][0].expected);
  // Gen5 x16 theoretical: 32 GT/s × 16 × 128/130 / 8, nothing taken off.
  EXPECT_NEAR(*r.results[0].cells[0][0].expected, 63.0, 0.02);
  // The note states the source and the TLP/DLLP ceiling (256 / 284 of the link).
  bool ceiling = false;
  for (const auto& n : r.results[0].notes)
    ceiling |= n.find("theoretical: Gen5 x16, 63.0 GB/s per direction") != std::string::npos &&
               n.find("56.8 GB/s (90 % of theoretical)") != std::string::npos;
  EXPECT_TRUE(ceiling);

  Facts judged = f;
  judged.measurements = bench_measurements(r);
  ASSERT_EQ(judged.measurements.size(), 2u);
  EXPECT_EQ(judged.measurements[0].dst_gpu, 0);  // host → GPU0
  EXPECT_EQ(judged.measurements[1].src_gpu, 0);  // GPU0 → host
  const Diagnosis d = diagnose(judged);
  int low = 0;
  for (const auto& x : d.findings)
    if (x.id == "h2d-bandwidth-low") {
      ++low;
      EXPECT_NE(x.evidence.find("11"), std::string::npos) << x.evidence;
    }
  EXPECT_EQ(low, 1);  // only the slow direction

  const std::string text = render_bench_text(r);
  EXPECT_NE(text.find("53.90"), std::string::npos) << text;
  // 53.9 of 63.0: 86 % of theoretical.
  EXPECT_NE(text.find("GPU0: 53.90 GB/s = 86 % of theoretical (63.0)"), std::string::npos) << text;
  EXPECT_EQ(text.find("expected"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(bench_to_json(r));
  EXPECT_EQ(j["schema"], "gpuvet.bench/1");
  EXPECT_EQ(j["results"][0]["cells"][0][0]["verified"], true);
}

TEST(BenchRegistry, LocalCopyIsComparedWithHalfTheDataSheetPeak) {
  BenchReport r;
  r.cuda_available = true;
  BenchMatrix m = host_matrix("device_local_copy", 2091.5);
  m.cols = {"GPU0"};
  m.col_gpu = {0};
  r.results = {m};
  attach_expectations(r, h200_node());
  ASSERT_TRUE(r.results[0].cells[0][0].expected);
  EXPECT_DOUBLE_EQ(*r.results[0].cells[0][0].expected, 2400);  // 4.8 TB/s / 2, no derating
  ASSERT_FALSE(r.results[0].notes.empty());
  EXPECT_NE(r.results[0].notes.back().find("NVIDIA H200 Tensor Core GPU data sheet"),
            std::string::npos)
      << r.results[0].notes.back();
  const std::string text = render_bench_text(r);
  EXPECT_NE(text.find("2091.50 GB/s = 87 % of theoretical (2400.0)"), std::string::npos) << text;
}

TEST(BenchRegistry, WrongCollectiveResultsBecomeDataCorruption) {
  BenchReport r;
  r.cuda_available = true;
  BenchMatrix m;
  m.key = "all_reduce";
  m.unit = "GB/s";
  m.rows = {"1 MiB"};
  m.cols = {"algbw", "busbw", "time_us"};
  m.row_gpu = {-1};
  m.col_gpu = {-1, -1, -1};
  BenchCell bad;
  bad.value = 100;
  bad.error = "3 wrong values";
  bad.wrong_data = true;
  m.cells = {{bad, bad, bad}};
  r.results = {m};
  Facts f = h200_node();
  f.measurements = bench_measurements(r);
  ASSERT_EQ(f.measurements.size(), 1u);
  EXPECT_EQ(f.measurements[0].wrong_data, "#wrong 3");
  const Diagnosis d = diagnose(f);
  EXPECT_TRUE(std::any_of(d.findings.begin(), d.findings.end(), [](const Finding& x) {
    return x.id == "data-corruption" && x.severity == Severity::kCritical;
  }));
}

TEST(BenchRegistry, NoGpuHereEveryBenchmarkSkippedWithTheReason) {
  // This machine (and CI) has no GPU: built with or without CUDA, nothing runs and each
  // result says why; the run never crashes.
  BenchOptions o;
  const BenchReport r = run_benchmarks(h200_node(), o);
  EXPECT_FALSE(r.cuda_available);
  ASSERT_FALSE(r.results.empty());
  for (const auto& m : r.results) {
    ASSERT_TRUE(m.skipped) << m.key;
    EXPECT_FALSE(m.skipped->empty());
  }
  EXPECT_FALSE(r.notes.empty());
  const std::string text = render_bench_text(r);
  EXPECT_NE(text.find("skipped"), std::string::npos);
}

TEST(BenchJson, ADocumentOfAnotherSchemaIsRefusedAndOursGivesItsMeasurements) {
  EXPECT_FALSE(bench_json_measurements("{\"schema\":\"gpuvet.report/1\"}", "x.json").is_ok());
  EXPECT_FALSE(bench_json_measurements("not json", "x.json").is_ok());
  auto m = bench_json_measurements(
      R"({"schema":"gpuvet.bench/1","results":[{"key":"host_to_device_ce","unit":"GB/s",
          "rows":["GPU0"],"cols":["host"],"row_gpu":[0],"col_gpu":[-1],
          "cells":[[{"value":55.3}]]}]})",
      "b.json");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const auto v = bandwidth_values(m.value());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subject, "GPU0");
  EXPECT_DOUBLE_EQ(v[0].gbps, 55.3);
}

// The cell's wrong_data flag, not its error text, makes a figure wrong data; a bench file
// written before the flag existed is read by its text.
TEST(BenchJson, WrongDataTravelsAsItsOwnFieldAndOldFilesByTheirText) {
  BenchReport r;
  r.cuda_available = true;
  BenchMatrix m;
  m.key = "host_to_device_ce";
  m.unit = "GB/s";
  m.rows = {"GPU0", "GPU1"};
  m.cols = {"host"};
  m.row_gpu = {0, 1};
  m.col_gpu = {-1};
  BenchCell bad;
  bad.value = 55;
  bad.wrong_data = true;
  bad.error = "device → host at the same time: wrong data: 2 mismatched words";
  BenchCell failed;  // an error that mentions no data check is no corruption
  failed.value = 54;
  failed.error = "cudaErrorLaunchTimeout: the launch timed out";
  m.cells = {{bad}, {failed}};
  r.results = {m};
  EXPECT_TRUE(bench_has_wrong_data(r));
  auto back = bench_json_measurements(bench_to_json(r, 0), "b.json");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  int wrong = 0;
  for (const auto& x : back.value()) wrong += x.wrong_data ? 1 : 0;
  EXPECT_EQ(wrong, 1);

  r.results[0].cells = {{failed}, {failed}};
  EXPECT_FALSE(bench_has_wrong_data(r));

  auto old = bench_json_measurements(
      R"({"schema":"gpuvet.bench/1","results":[{"key":"host_to_device_ce","unit":"GB/s",
          "rows":["GPU0"],"cols":["host"],"row_gpu":[0],"col_gpu":[-1],
          "cells":[[{"value":55.3,"error":"wrong data: 1 mismatched words in 1 of 16 samples"}]]}]})",
      "old.json");
  ASSERT_TRUE(old.is_ok()) << old.status().to_string();
  ASSERT_EQ(old.value().size(), 1u);
  EXPECT_TRUE(old.value()[0].wrong_data);
  EXPECT_TRUE(bandwidth_values(old.value()).empty());
}

}  // namespace
}  // namespace gpuvet
