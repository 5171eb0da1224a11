#include <gtest/gtest.h>

#include "gpuvet/bench.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"

namespace gpuvet {
namespace {

// One host → device matrix on GPU0 with one cell.
BenchReport one_cell(BenchCell cell) {
  BenchReport r;
  r.cuda_available = true;
  BenchMatrix m;
  m.key = "host_to_device_ce";
  m.title = "host → device, copy engine, pinned";
  m.unit = "GB/s";
  m.rows = {"GPU0"};
  m.cols = {"host"};
  m.row_gpu = {0};
  m.col_gpu = {-1};
  m.cells = {{std::move(cell)}};
  r.results.push_back(std::move(m));
  return r;
}

BenchCell measured(double gbps) {
  BenchCell c;
  c.value = gbps;
  c.verified = true;
  return c;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(BenchVerdict, NoBenchFindingOnVerifiedDataSaysTheLinksAreFast) {
  Diagnosis d;
  Finding other;  // not one of bench's findings: not its verdict's business
  other.id = "xid-critical";
  other.severity = Severity::kCritical;
  d.findings.push_back(other);
  const std::string v = render_bench_verdict(one_cell(measured(55.0)), d);
  EXPECT_NE(v.find("every measured link is as fast as it should be"), std::string::npos) << v;
  EXPECT_EQ(v.find("xid-critical"), std::string::npos) << v;
}

TEST(BenchVerdict, WrongDataIsCriticalEvenWithoutTheFindingAndNeverFast) {
  BenchCell bad = measured(55.0);  // a fast figure beside wrong data
  bad.verified = false;
  bad.wrong_data = true;
  bad.error = "wrong data: 3 mismatched words in 1 of 16 samples";
  const std::string v = render_bench_verdict(one_cell(bad), Diagnosis{});
  EXPECT_NE(v.find("critical  data-corruption"), std::string::npos) << v;
  EXPECT_EQ(v.find("as fast as it should be"), std::string::npos) << v;
}

TEST(BenchVerdict, AnErrorThatIsNotWrongDataIsNotCorruption) {
  BenchCell failed;
  failed.error =
      "cudaErrorPeerAccessUnsupported: peer access is not supported between these two devices";
  const std::string v = render_bench_verdict(one_cell(failed), Diagnosis{});
  EXPECT_EQ(v.find("data-corruption"), std::string::npos) << v;
}

TEST(BenchVerdict, BenchFindingsAreListedAndDataCorruptionNamedOnce) {
  BenchCell bad = measured(20.0);
  bad.wrong_data = true;
  bad.error = "wrong data: 1 mismatched words in 1 of 16 samples";
  Diagnosis d;
  Finding low;
  low.id = "h2d-bandwidth-low";
  low.severity = Severity::kWarning;
  low.evidence = "GPU0 host → device 20.0 GB/s, 31 % of theoretical";
  Finding corrupt;
  corrupt.id = "data-corruption";
  corrupt.severity = Severity::kCritical;
  corrupt.evidence = "GPU0 host → device: wrong data";
  d.findings = {low, corrupt};
  const std::string v = render_bench_verdict(one_cell(bad), d);
  EXPECT_NE(v.find("warning  h2d-bandwidth-low: GPU0 host → device 20.0 GB/s"), std::string::npos)
      << v;
  EXPECT_EQ(count(v, "data-corruption"), 1u) << v;
  EXPECT_EQ(v.find("as fast as it should be"), std::string::npos) << v;
}

// A reason every benchmark shares (no CUDA on the node) is printed once, with the keys it
// stopped. Catches the per-benchmark block repeated 13 times, and the run's note repeating it.
TEST(BenchText, AFailureSharedByEveryBenchmarkIsPrintedOnce) {
  BenchReport r;
  const std::string why =
      "CUDA unavailable: CUDA driver version is insufficient for CUDA runtime version";
  r.notes.push_back(why);
  for (const char* key :
       {"host_to_device_ce", "device_to_host_ce", "device_local_copy", "all_reduce", "p2p_truth"}) {
    BenchMatrix m;
    m.key = key;
    m.title = key;
    m.skipped = why;
    r.results.push_back(m);
  }
  const std::string text = render_bench_text(r);
  EXPECT_EQ(count(text, why), 1u) << text;
  EXPECT_NE(text.find("all 5 benchmarks skipped: " + why), std::string::npos) << text;
  EXPECT_NE(text.find("(host_to_device_ce, device_to_host_ce, device_local_copy, all_reduce, "
                      "p2p_truth)"),
            std::string::npos)
      << text;
  // The same for an error every benchmark ran into.
  for (auto& m : r.results) {
    m.skipped.reset();
    m.error = "out of memory";
  }
  const std::string failed = render_bench_text(r);
  EXPECT_EQ(count(failed, "out of memory"), 1u) << failed;
  EXPECT_NE(failed.find("all 5 benchmarks failed: out of memory"), std::string::npos) << failed;
}

// The quiet counterpart: reasons that differ, or one benchmark that ran, stay per benchmark.
TEST(BenchText, DifferentReasonsStayPerBenchmark) {
  BenchReport r = one_cell(measured(50));
  BenchMatrix a;
  a.key = "all_reduce";
  a.title = "all_reduce";
  a.skipped = "NCCL unavailable: libnccl.so.2 not found";
  r.results.push_back(a);
  BenchMatrix b = a;
  b.key = "all_gather";
  r.results.push_back(b);
  std::string text = render_bench_text(r);
  EXPECT_EQ(count(text, "skipped: NCCL unavailable"), 2u) << text;
  EXPECT_EQ(text.find("all 3 benchmarks"), std::string::npos) << text;
  EXPECT_NE(text.find("host_to_device_ce"), std::string::npos) << text;
  r.results.erase(r.results.begin());
  r.results[1].skipped = "needs 2 or more GPUs (this machine has 1)";
  text = render_bench_text(r);
  EXPECT_NE(text.find("skipped: NCCL unavailable"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped: needs 2 or more GPUs"), std::string::npos) << text;
  EXPECT_EQ(text.find("all 2 benchmarks"), std::string::npos) << text;
}

TEST(BenchVerdict, WithoutCudaNothingIsCalledFast) {
  BenchReport r;
  r.cuda_available = false;
  EXPECT_EQ(render_bench_verdict(r, Diagnosis{}).find("as fast"), std::string::npos);
}

}  // namespace
}  // namespace gpuvet
