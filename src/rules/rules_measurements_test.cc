#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hw/expectations.h"
#include "hw/test_facts.h"
#include "rules/rule.h"

namespace gpuvet::rules {

// What a healthy link should carry (hw/expectations.h).
using namespace gpuvet::hw;
namespace {

// ---------------------------------------------------------------- fixtures

using test::gpu;
using test::pair;

Measurement bw(const char* tool, const char* test, std::optional<int> src, std::optional<int> dst,
               double gbps, std::optional<std::uint64_t> size = std::nullopt) {
  Measurement m;
  m.tool = tool;
  m.test = test;
  m.src_gpu = src;
  m.dst_gpu = dst;
  m.bandwidth_gbps = gbps;
  m.size_bytes = size;
  return m;
}

ScaleRun run(const char* workload, const char* preset, int gpus, std::optional<double> thr,
             std::optional<double> comm = std::nullopt) {
  ScaleRun r;
  r.workload = workload;
  r.preset = preset;
  r.gpus = gpus;
  r.throughput = thr;
  r.comm_share = comm;
  return r;
}

ScaleRun infer(int gpus, double thr, double p50, double p99) {
  ScaleRun r = run("infer", "decoder", gpus, thr);
  r.p50_ms = p50;
  r.p99_ms = p99;
  return r;
}

struct Check {
  Facts f;
  Thresholds t;
  DiagnoseOptions o;
  Emitter e;

  Emitter& go() {
    Context c{f, t, o};
    check_measurements(c, e);
    return e;
  }
  std::vector<const Finding*> with(std::string_view id) const {
    std::vector<const Finding*> out;
    for (const auto& x : e.findings())
      if (x.id == id) out.push_back(&x);
    return out;
  }
  const Finding* one(std::string_view id) const {
    auto v = with(id);
    return v.size() == 1 ? v.front() : nullptr;
  }
  bool noted(std::string_view word) const {
    return std::any_of(e.notes().begin(), e.notes().end(),
                       [&](const std::string& n) { return n.find(word) != std::string::npos; });
  }
};

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// A 2×H200 box, Gen5 x16 each, joined by NV18.
Check h200_pair() {
  Check c;
  c.f.gpus = {gpu(0, "NVIDIA H200", 5, 16), gpu(1, "NVIDIA H200", 5, 16)};
  c.f.pairs = {pair(0, 1, PathType::kNVLink, 18)};
  return c;
}

// ================================================================ h2d-bandwidth-low

TEST(MeasurementRules, H2dOnHealthyGen5LinkIsQuiet) {
  Check c = h200_pair();
  c.f.measurements = {bw("nvbandwidth", "host_to_device_memcpy_ce", std::nullopt, 0, 55.0),
                      bw("nvbandwidth", "device_to_host_memcpy_ce", 0, std::nullopt, 54.3)};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
}

TEST(MeasurementRules, H2dFarUnderTheLinkFires) {
  Check c = h200_pair();
  c.f.measurements = {bw("nvbandwidth", "host_to_device_memcpy_ce", std::nullopt, 0, 55.0),
                      bw("nvbandwidth", "host_to_device_memcpy_ce", std::nullopt, 1, 11.2)};
  c.go();
  ASSERT_EQ(c.e.findings().size(), 1u);
  const Finding& f = c.e.findings()[0];
  EXPECT_EQ(f.id, "h2d-bandwidth-low");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.subjects, std::vector<std::string>{"GPU1"});
  EXPECT_TRUE(has(f.evidence,
                  "GPU1 host→device 11.2 GB/s; a Gen5 x16 link carries 63.0 GB/s per direction "
                  "(18 % of theoretical)"))
      << f.evidence;
  EXPECT_TRUE(has(f.evidence, "the link reads Gen5 x16 now")) << f.evidence;
  EXPECT_TRUE(has(f.evidence, "nvbandwidth host_to_device_memcpy_ce")) << f.evidence;
}

TEST(MeasurementRules, H2dJudgedAgainstTheMaximumLinkNotTheDegradedOne) {
  Check c = h200_pair();
  c.f.gpus[0].pcie.width_current = 4;  // a Gen5 x4 link carries ~15.8: 14 GB/s "fits" it
  c.f.measurements = {bw("gpuvet", "host_to_device_ce", std::nullopt, 0, 14.0)};
  c.go();
  const Finding* f = c.one("h2d-bandwidth-low");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->evidence, "a Gen5 x16 link carries 63.0")) << f->evidence;
  EXPECT_TRUE(has(f->evidence, "the link reads Gen5 x4 now")) << f->evidence;
}

TEST(MeasurementRules, H2dBothDirectionsInOneFinding) {
  Check c = h200_pair();
  c.f.measurements = {bw("gpuvet", "host_to_device_ce", std::nullopt, 0, 11.2),
                      bw("gpuvet", "device_to_host_ce", 0, std::nullopt, 12.6)};
  c.go();
  const Finding* f = c.one("h2d-bandwidth-low");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->evidence,
                  "GPU0 host→device 11.2 GB/s (18 % of theoretical), "
                  "device→host 12.6 GB/s (20 % of theoretical)"))
      << f->evidence;
}

TEST(MeasurementRules, H2dBestSizeCountsAndTinyTransfersAreNotJudged) {
  Check c;
  c.f.gpus = {gpu(0, "NVIDIA H200", 5, 16)};
  // bandwidthTest range mode: the 1 kB row is latency, the 32 MB row is the link. The sole GPU
  // owns figures that do not name one.
  c.f.measurements = {
      bw("bandwidthTest", "host_to_device_pinned", std::nullopt, std::nullopt, 0.4, 1000),
      bw("bandwidthTest", "host_to_device_pinned", std::nullopt, std::nullopt, 52.0, 32000000),
      bw("bandwidthTest", "device_to_host_pinned", std::nullopt, std::nullopt, 0.3, 1000)};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());

  // Only a low bulk figure: it fires, and the single GPU is the subject.
  Check d;
  d.f.gpus = c.f.gpus;
  d.f.measurements = {
      bw("bandwidthTest", "device_to_host_pinned", std::nullopt, std::nullopt, 9.9, 32000000)};
  d.go();
  const Finding* f = d.one("h2d-bandwidth-low");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->subjects, std::vector<std::string>{"GPU0"});
  EXPECT_TRUE(has(f->evidence, "device→host 9.9 GB/s")) << f->evidence;

  // Only tiny transfers: nothing judged, said so.
  Check s;
  s.f.gpus = c.f.gpus;
  s.f.measurements = {bw("bandwidthTest", "host_to_device_pinned", std::nullopt, 0, 0.4, 1000)};
  s.go();
  EXPECT_TRUE(s.e.findings().empty());
  EXPECT_TRUE(s.noted("too small")) << (s.e.notes().empty() ? "" : s.e.notes()[0]);
}

TEST(MeasurementRules, H2dIgnoresSmPageableAndBidirectionalFigures) {
  Check c = h200_pair();
  Measurement bidir =
      bw("nvbandwidth", "host_to_device_bidirectional_memcpy_ce", std::nullopt, 0, 9);
  bidir.note = "bidirectional";
  Measurement sum = bw("nvbandwidth", "host_to_device_memcpy_ce", std::nullopt, std::nullopt, 9);
  sum.note = "sum";
  c.f.measurements = {bw("nvbandwidth", "host_to_device_memcpy_sm", std::nullopt, 0, 35.2),
                      bw("bandwidthTest", "host_to_device_pageable", std::nullopt, 1, 9.0), bidir,
                      sum};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
}

TEST(MeasurementRules, H2dUnknownLinkIsANoteNotAFinding) {
  Check c = h200_pair();
  for (auto& g : c.f.gpus) g.pcie = PcieLink{};
  c.f.measurements = {bw("nvbandwidth", "host_to_device_memcpy_ce", std::nullopt, 0, 1.0),
                      bw("nvbandwidth", "host_to_device_memcpy_ce", std::nullopt, 1, 1.0)};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
  ASSERT_EQ(c.e.notes().size(), 1u);
  EXPECT_TRUE(has(c.e.notes()[0], "GPU0, GPU1")) << c.e.notes()[0];
  EXPECT_TRUE(has(c.e.notes()[0], "unknown")) << c.e.notes()[0];
}

TEST(MeasurementRules, H2dFollowsTheThreshold) {
  Check c = h200_pair();
  c.t.h2d_fraction = 0.9;
  c.f.measurements = {bw("nvbandwidth", "host_to_device_memcpy_ce", std::nullopt, 0, 55.0)};
  c.go();
  EXPECT_TRUE(c.one("h2d-bandwidth-low"));
}

// ================================================================ p2p-bandwidth-low

TEST(MeasurementRules, P2pHealthyNvlinkIsQuiet) {
  Check c = h200_pair();
  c.f.measurements = {bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 1, 389.2),
                      bw("nvbandwidth", "device_to_device_memcpy_write_ce", 1, 0, 390.1)};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
}

TEST(MeasurementRules, P2pFarUnderNvlinkFiresAndSaysRoutedViaHost) {
  Check c = h200_pair();
  c.f.pairs[0].p2p_read = P2PStatus::kChipsetNotSupported;
  c.f.measurements = {bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 1, 20.0),
                      bw("nvbandwidth", "device_to_device_memcpy_read_ce", 1, 0, 19.5)};
  c.go();
  ASSERT_EQ(c.e.findings().size(), 1u);
  const Finding& f = c.e.findings()[0];
  EXPECT_EQ(f.id, "p2p-bandwidth-low");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_TRUE(has(f.evidence, "GPU0→GPU1 20.0 GB/s")) << f.evidence;
  EXPECT_TRUE(has(f.evidence, "path NV18 carries 450 GB/s per direction in theory")) << f.evidence;
  EXPECT_TRUE(has(f.evidence, "18 links × 25 GB/s): 4 % of theoretical")) << f.evidence;
  EXPECT_TRUE(has(f.evidence, "P2P read CNS")) << f.evidence;
  EXPECT_TRUE(has(f.evidence, "routed via host")) << f.evidence;
}

TEST(MeasurementRules, P2pUsesTheBestFigureOfThePair) {
  Check c = h200_pair();
  c.f.measurements = {bw("gpuvet", "device_to_device_ce", 0, 1, 20.0, 16u << 20),
                      bw("gpuvet", "device_to_device_ce", 0, 1, 400.0, 1u << 30)};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
  // Without the good figure the same pair fires, and without a P2P problem no routing claim.
  c.f.measurements.pop_back();
  Check d = h200_pair();
  d.f.measurements = c.f.measurements;
  d.go();
  const Finding* f = d.one("p2p-bandwidth-low");
  ASSERT_TRUE(f);
  EXPECT_FALSE(has(f->evidence, "routed via host")) << f->evidence;
}

TEST(MeasurementRules, P2pCudaSamplesBidirectionalCountsBothWays) {
  // HPE DL380a, 2× H100 PCIe with an NVLink bridge (NV12): 256.6 one way, 509.4 both ways.
  Check c;
  c.f.gpus = {gpu(0, "NVIDIA H100 PCIe", 5, 16), gpu(1, "NVIDIA H100 PCIe", 5, 16)};
  c.f.pairs = {pair(0, 1, PathType::kNVLink, 12)};
  c.f.measurements = {bw("p2pBandwidthLatencyTest", "unidirectional p2p enabled", 0, 1, 256.62),
                      bw("p2pBandwidthLatencyTest", "bidirectional p2p enabled", 0, 1, 509.35),
                      // Staged through the host on purpose: not a peer figure.
                      bw("p2pBandwidthLatencyTest", "unidirectional p2p disabled", 0, 1, 26.10),
                      // The diagonal is a local copy.
                      bw("p2pBandwidthLatencyTest", "unidirectional p2p enabled", 0, 0, 1634.15)};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());

  // 300 GB/s both ways is half of 2 × 300: fires, and says it is both ways.
  Check d = c;
  d.e = Emitter{};
  d.f.measurements = {bw("p2pBandwidthLatencyTest", "bidirectional p2p enabled", 0, 1, 300)};
  d.go();
  const Finding* f = d.one("p2p-bandwidth-low");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->evidence, "GPU0↔GPU1 300 GB/s both directions together")) << f->evidence;
  EXPECT_TRUE(has(f->evidence, "path NV12 carries 300 GB/s per direction in theory"))
      << f->evidence;
  EXPECT_TRUE(has(f->evidence, "600 GB/s both ways: 50 % of theoretical")) << f->evidence;
}

TEST(MeasurementRules, P2pOverPcieByPath) {
  Check c;
  c.f.gpus = {gpu(0, "NVIDIA RTX A6000", 4, 16), gpu(1, "NVIDIA RTX A6000", 4, 16),
              gpu(2, "NVIDIA RTX A6000", 4, 16)};
  c.f.pairs = {pair(0, 1, PathType::kPIX), pair(0, 2, PathType::kSYS), pair(1, 2, PathType::kSYS)};
  // nvbandwidth issue 50: 26.3 under one switch, 21.9 between halves: both healthy.
  c.f.measurements = {bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 1, 26.34),
                      bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 2, 21.95),
                      bw("simpleP2P", "cudaMemcpyPeer", 1, 2, 8.0)};
  c.go();
  ASSERT_EQ(c.e.findings().size(), 1u);
  const Finding& f = c.e.findings()[0];
  EXPECT_EQ(f.subjects, std::vector<std::string>{"GPU1-GPU2"});
  EXPECT_TRUE(has(f.evidence, "GPU1→GPU2 8.0 GB/s")) << f.evidence;
  // 8.0 of the link's 31.5 is 25 %, under the 30 % (0.5 × 60 %) a SYS path is held to.
  EXPECT_TRUE(has(f.evidence,
                  "path SYS carries 31.5 GB/s per direction in theory (the Gen4 x16 "
                  "link of the slower GPU): 25 % of theoretical (a SYS path is judged "
                  "under 30 % of theoretical, 0.5 × 60 %: the traffic crosses the CPU "
                  "interconnect)"))
      << f.evidence;

  Check pix = c;
  pix.e = Emitter{};
  pix.f.measurements = {bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 1, 10.0)};
  pix.go();
  const Finding* p = pix.one("p2p-bandwidth-low");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_TRUE(has(p->evidence, "path PIX carries 31.5 GB/s per direction in theory"))
      << p->evidence;
  EXPECT_TRUE(has(p->evidence, ": 32 % of theoretical")) << p->evidence;
  EXPECT_FALSE(has(p->evidence, "judged under")) << p->evidence;
}

TEST(MeasurementRules, P2pHostBridgeAndCrossSocketPathsAreHeldToTheirAllowance) {
  // Gen4 x16: 31.51 GB/s theoretical. PIX is held to 60 % (18.9), PHB/NODE to 0.8 × 60 % = 48 %
  // (15.1), SYS to 0.5 × 60 % = 30 % (9.45).
  struct Row {
    PathType path;
    double quiet;  // just over the line
    double fires;  // just under it
  };
  for (const Row& r : {Row{PathType::kPIX, 19.2, 18.6}, Row{PathType::kPHB, 15.4, 14.8},
                       Row{PathType::kNODE, 15.4, 14.8}, Row{PathType::kSYS, 9.7, 9.2}}) {
    for (const double v : {r.quiet, r.fires}) {
      Check c;
      c.f.gpus = {gpu(0, "NVIDIA RTX A6000", 4, 16), gpu(1, "NVIDIA RTX A6000", 4, 16)};
      c.f.pairs = {pair(0, 1, r.path)};
      c.f.measurements = {bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 1, v)};
      c.go();
      EXPECT_EQ(c.one("p2p-bandwidth-low") != nullptr, v == r.fires)
          << path_type_name(r.path) << " " << v;
    }
  }
}

TEST(MeasurementRules, P2pUnknownPathIsANote) {
  Check c = h200_pair();
  c.f.pairs[0].path = PathType::kUnknown;
  Measurement sum = bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 1, 1.0);
  sum.note = "sum";
  c.f.measurements = {bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 1, 1.0), sum};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
  EXPECT_TRUE(c.noted("GPU0-GPU1"));

  Check none;  // no pair facts at all
  none.f.measurements = c.f.measurements;
  none.go();
  EXPECT_TRUE(none.e.findings().empty());
  EXPECT_TRUE(none.noted("p2p-bandwidth-low"));
}

// ================================================================ data corruption

TEST(MeasurementRules, NcclTestsWrongCountIsDataCorruption) {
  Check c;
  Measurement ok = bw("nccl-tests", "all_reduce_perf", std::nullopt, std::nullopt, 180, 1u << 30);
  ok.note = "in-place";
  Measurement bad = ok;
  bad.note = "out-of-place";
  bad.wrong_data = "#wrong 3";
  c.f.measurements = {ok, bad};
  c.go();
  ASSERT_EQ(c.e.findings().size(), 1u);
  const Finding& f = c.e.findings()[0];
  EXPECT_EQ(f.id, "data-corruption");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_TRUE(has(f.evidence, "nccl-tests all_reduce_perf reported 3 wrong results at 1 GiB"))
      << f.evidence;
  EXPECT_TRUE(c.with("nccl-error").empty()) << "wrong results are not a timeout or error";

  // The smallest count nccl-tests can report is enough.
  Check one;
  one.f.measurements = {ok};
  one.f.measurements[0].wrong_data = "#wrong 1";
  one.go();
  const Finding* g = one.one("data-corruption");
  ASSERT_TRUE(g);
  EXPECT_TRUE(has(g->evidence, "reported 1 wrong result at")) << g->evidence;

  // Checked and right ("0"), or not checked ("N/A"): no wrong_data, no finding.
  Check clean;
  clean.f.measurements = {ok};
  clean.go();
  EXPECT_TRUE(clean.e.findings().empty());
}

TEST(MeasurementRules, NvbandwidthPatternFailureIsDataCorruption) {
  Check c;
  Measurement m;
  m.tool = "nvbandwidth";
  m.test = "device_to_device_memcpy_read_ce";
  m.note = "failed: Invalid value when checking the pattern at 0x70a640000000";
  m.wrong_data = "Invalid value when checking the pattern at 0x70a640000000 (offset 11136)";
  c.f.measurements = {m};
  c.go();
  const Finding* f = c.one("data-corruption");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_TRUE(has(f->evidence,
                  "nvbandwidth device_to_device_memcpy_read_ce: the data it moved "
                  "failed its check (Invalid value when checking the pattern at "
                  "0x70a640000000 (offset 11136))"))
      << f->evidence;
  // A failed test without a data check (a CUDA error) is not corruption.
  Check err;
  m.wrong_data.reset();
  m.note = "failed: CUDA_ERROR_OUT_OF_MEMORY";
  err.f.measurements = {m};
  err.go();
  EXPECT_TRUE(err.e.findings().empty());
}

TEST(MeasurementRules, WrongDataFiguresAreNotJudgedAsBandwidth) {
  // A pair that copies at 10 GB/s over NV18 and a GPU at 5 GB/s over Gen5 x16, both with
  // wrong data: data-corruption on each, and no bandwidth finding either way.
  Check c = h200_pair();
  Measurement peer = bw("gpuvet", "device_to_device_read_ce", 0, 1, 10.0, 64u << 20);
  peer.wrong_data = "wrong data: 12 mismatched words";
  Measurement h2d = bw("gpuvet", "host_to_device_ce", std::nullopt, 0, 5.0, 64u << 20);
  h2d.wrong_data = "wrong data: 1 mismatched words";
  c.f.measurements = {peer, h2d};
  c.go();
  EXPECT_TRUE(c.with("p2p-bandwidth-low").empty());
  EXPECT_TRUE(c.with("h2d-bandwidth-low").empty());
  auto all = c.with("data-corruption");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->subjects, (std::vector<std::string>{"GPU0-GPU1"}));
  EXPECT_EQ(all[1]->subjects, (std::vector<std::string>{"GPU0"}));
  EXPECT_TRUE(has(all[1]->evidence,
                  "gpuvet host_to_device_ce: the data it moved failed its "
                  "check (wrong data: 1 mismatched words) on GPU0"))
      << all[1]->evidence;

  // Nor does a fast figure with wrong data hide a slow one that was right.
  Check d = h200_pair();
  Measurement fast = bw("gpuvet", "device_to_device_read_ce", 0, 1, 450.0, 64u << 20);
  fast.wrong_data = "wrong data: 3 mismatched words";
  d.f.measurements = {fast, bw("gpuvet", "device_to_device_read_ce", 1, 0, 40.0, 64u << 20)};
  d.go();
  EXPECT_TRUE(d.one("p2p-bandwidth-low"));
  EXPECT_TRUE(d.one("data-corruption"));
}

TEST(MeasurementRules, DataCorruptionBlocksFrameworkTuning) {
  Check c;
  Measurement bad = bw("nccl-tests", "all_reduce_perf", std::nullopt, std::nullopt, 180, 1u << 30);
  bad.wrong_data = "#wrong 2";
  c.f.measurements = {bad};
  c.f.scale_runs = {run("train", "llm-7b-layer", 1, 100, 0.02),
                    run("train", "llm-7b-layer", 2, 120, 0.45)};
  c.go();
  const Finding* s = c.one("scaling-inefficient");
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->decision_note);
  EXPECT_TRUE(has(*s->decision_note, "data-corruption")) << *s->decision_note;
  EXPECT_TRUE(c.with("tune-framework").empty());
}

TEST(MeasurementRules, NvbandwidthBidirectionalTotalIsBothDirections) {
  // nvbandwidth v0.8: Read1 and Read2 are one direction each, Total their sum. At 200 GB/s
  // per direction over NV18 (≈ 450 expected) the Total of 400 must not pass as one direction.
  Check c = h200_pair();
  auto cell = [](const char* note, int src, int dst, double gbps) {
    Measurement m =
        bw("nvbandwidth", "device_to_device_bidirectional_memcpy_read_ce", src, dst, gbps);
    m.note = note;
    return m;
  };
  c.f.measurements = {cell("bidirectional", 0, 1, 200.15), cell("bidirectional", 1, 0, 200.31),
                      cell("bidirectional total", 0, 1, 400.02),
                      cell("bidirectional total", 1, 0, 400.33)};
  c.go();
  const Finding* f = c.one("p2p-bandwidth-low");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->evidence, "200 GB/s")) << f->evidence;

  // Healthy per direction: 2 × 430 total is as good as 430 each way.
  Check ok = h200_pair();
  ok.f.measurements = {cell("bidirectional total", 0, 1, 860)};
  ok.go();
  EXPECT_TRUE(ok.e.findings().empty());
  Check low = h200_pair();
  low.f.measurements = {cell("bidirectional total", 0, 1, 400)};
  low.go();
  const Finding* g = low.one("p2p-bandwidth-low");
  ASSERT_TRUE(g);
  EXPECT_TRUE(has(g->evidence, "both directions together")) << g->evidence;
}

// ================================================================ scaling-inefficient

TEST(MeasurementRules, ScalingEfficientIsQuiet) {
  Check c;
  c.f.scale_runs = {run("train", "llm-7b-layer", 1, 100, 0.05),
                    run("train", "llm-7b-layer", 2, 190, 0.45)};  // 0.95
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
}

TEST(MeasurementRules, ScalingLostToCommsFiresAndPointsToTheFramework) {
  Check c;
  c.f.scale_runs = {run("train", "llm-7b-layer", 1, 100, 0.02),
                    run("train", "llm-7b-layer", 2, 120, 0.45)};
  c.go();
  const Finding* s = c.one("scaling-inefficient");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->severity, Severity::kWarning);
  EXPECT_EQ(s->subjects, std::vector<std::string>{"train/llm-7b-layer"});
  ASSERT_TRUE(s->bottleneck);
  EXPECT_EQ(*s->bottleneck, Bottleneck::kComms);
  EXPECT_TRUE(has(s->evidence,
                  "train/llm-7b-layer: 2 GPUs give 1.20× one GPU (efficiency 0.60); 45 % of "
                  "each step is communication"))
      << s->evidence;
  EXPECT_FALSE(s->decision_note);

  const Finding* t = c.one("tune-framework");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->severity, Severity::kInfo);
  EXPECT_TRUE(has(t->evidence, "scaling-inefficient")) << t->evidence;
  EXPECT_TRUE(has(t->evidence, "train/llm-7b-layer (efficiency 0.60")) << t->evidence;
  ASSERT_TRUE(t->decision_note);
  EXPECT_TRUE(has(*t->decision_note, "gradient accumulation")) << *t->decision_note;
  EXPECT_TRUE(has(*t->decision_note, "bucket")) << *t->decision_note;
  EXPECT_TRUE(has(*t->decision_note, "overlap")) << *t->decision_note;
  EXPECT_TRUE(has(*t->decision_note, "mixed precision")) << *t->decision_note;
}

TEST(MeasurementRules, TopologyWarningFirstMeansNoFrameworkTuning) {
  Check c;
  c.e.add("pcie-link-degraded", Severity::kWarning, {"GPU1"}, "GPU1 Gen5 x8 of x16");
  c.f.scale_runs = {run("train", "llm-7b-layer", 1, 100, 0.02),
                    run("train", "llm-7b-layer", 2, 120, 0.45)};
  c.go();
  const Finding* s = c.one("scaling-inefficient");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->bottleneck, Bottleneck::kComms);
  ASSERT_TRUE(s->decision_note);
  EXPECT_TRUE(has(*s->decision_note, "pcie-link-degraded GPU1")) << *s->decision_note;
  EXPECT_TRUE(c.with("tune-framework").empty());
}

TEST(MeasurementRules, InfoLevelTopologyFindingsDoNotBlockTuning) {
  Check c;
  c.e.add("gpu-pair-crosses-numa", Severity::kInfo, {"GPU0-GPU1"}, "SYS");
  c.e.add("xid-error", Severity::kWarning, {"GPU0"}, "Xid 13");  // not a topology finding
  c.f.scale_runs = {run("train", "llm-7b-layer", 1, 100, 0.02),
                    run("train", "llm-7b-layer", 2, 120, 0.45)};
  c.go();
  EXPECT_TRUE(c.one("tune-framework"));
}

TEST(MeasurementRules, MeasuredBandwidthFindingsOfThisGroupBlockTuning) {
  Check c = h200_pair();
  c.f.measurements = {bw("nvbandwidth", "device_to_device_memcpy_read_ce", 0, 1, 20.0)};
  c.f.scale_runs = {run("train", "llm-7b-layer", 1, 100, 0.02),
                    run("train", "llm-7b-layer", 2, 120, 0.45)};
  c.go();
  EXPECT_TRUE(c.one("p2p-bandwidth-low"));
  EXPECT_TRUE(c.one("scaling-inefficient"));
  EXPECT_TRUE(c.with("tune-framework").empty());
}

TEST(MeasurementRules, ScalingWithLittleCommsIsCompute) {
  Check c;
  c.f.scale_runs = {run("train", "cnn-small", 1, 1000, 0.01),
                    run("train", "cnn-small", 2, 1200, 0.10)};
  c.go();
  const Finding* s = c.one("scaling-inefficient");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->bottleneck, Bottleneck::kCompute);
  EXPECT_TRUE(has(s->evidence, "only 10 % of each step is communication")) << s->evidence;
  EXPECT_TRUE(c.with("tune-framework").empty());
}

TEST(MeasurementRules, ScalingWithoutCommShareIsUnknown) {
  Check c;
  c.f.scale_runs = {run("train", "cnn-small", 1, 1000), run("train", "cnn-small", 2, 1100)};
  c.go();
  const Finding* s = c.one("scaling-inefficient");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->bottleneck, Bottleneck::kUnknown);
  EXPECT_TRUE(has(s->evidence, "efficiency 0.55")) << s->evidence;
  EXPECT_TRUE(c.with("tune-framework").empty());
}

TEST(MeasurementRules, ScalingReportsTheWorstGpuCountPerGroup) {
  Check c;
  c.f.scale_runs = {run("train", "llm-7b-layer", 1, 100, 0.02),
                    run("train", "llm-7b-layer", 2, 150, 0.35),  // 0.75
                    run("train", "llm-7b-layer", 4, 200, 0.60),  // 0.50
                    run("train", "llm-7b-layer", 4, 180, 0.70),  // slower repeat: not used
                    run("train", "other", 2, 150, 0.5)};         // no 1-GPU baseline
  c.go();
  auto all = c.with("scaling-inefficient");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(has(all[0]->evidence, "4 GPUs give 2.00× one GPU (efficiency 0.50); 60 %"))
      << all[0]->evidence;
  EXPECT_TRUE(has(all[0]->evidence, "2 GPUs: efficiency 0.75")) << all[0]->evidence;
  EXPECT_TRUE(c.noted("train/other"));
}

TEST(MeasurementRules, ScalingFollowsTheThresholds) {
  Check c;
  c.t.scaling_efficiency = 0.5;
  c.f.scale_runs = {run("train", "x", 1, 100, 0.02), run("train", "x", 2, 120, 0.45)};
  c.go();
  EXPECT_TRUE(c.e.findings().empty());

  Check d;
  d.t.comm_share_high = 0.5;  // 45 % is no longer "high": compute
  d.f.scale_runs = c.f.scale_runs;
  d.go();
  ASSERT_TRUE(d.one("scaling-inefficient"));
  EXPECT_EQ(*d.one("scaling-inefficient")->bottleneck, Bottleneck::kCompute);
}

// ================================================================ tail-latency-amplified

TEST(MeasurementRules, TailLatencyAmplifiedFires) {
  Check c;
  c.f.scale_runs = {infer(1, 100, 12.0, 21.0), infer(2, 170, 12.5, 38.0)};
  c.go();
  const Finding* f = c.one("tail-latency-amplified");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(f->subjects, std::vector<std::string>{"infer/decoder"});
  ASSERT_TRUE(f->bottleneck);
  EXPECT_EQ(*f->bottleneck, Bottleneck::kComms);
  EXPECT_TRUE(has(f->evidence,
                  "infer/decoder: throughput 1.7× on 2 GPUs but p99 38.0 ms vs 21.0 ms on one "
                  "(1.81×)"))
      << f->evidence;
}

TEST(MeasurementRules, TailLatencyModestIsQuietAndTrainingIsNotJudged) {
  Check c;
  c.f.scale_runs = {infer(1, 100, 12.0, 21.0), infer(2, 190, 12.0, 25.2)};  // 1.2×
  ScaleRun t1 = run("train", "x", 1, 100), t2 = run("train", "x", 2, 190);
  t1.p99_ms = 10;
  t2.p99_ms = 30;
  c.f.scale_runs.push_back(t1);
  c.f.scale_runs.push_back(t2);
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
}

TEST(MeasurementRules, TailLatencyWidenedSpreadFires) {
  // p99 only 1.36× worse, but the median halved: p99/p50 went from 1.1 to 3.0.
  Check c;
  c.f.scale_runs = {infer(1, 100, 20.0, 22.0), infer(2, 190, 10.0, 30.0)};
  c.go();
  const Finding* f = c.one("tail-latency-amplified");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has(f->evidence, "p99 30.0 ms vs 22.0 ms on one (1.36×)")) << f->evidence;
  EXPECT_TRUE(has(f->evidence, "p99/p50 3.0 on 2 GPUs vs 1.1 on one")) << f->evidence;
}

TEST(MeasurementRules, NothingToJudgeIsQuiet) {
  Check c = h200_pair();
  c.go();
  EXPECT_TRUE(c.e.findings().empty());
  EXPECT_TRUE(c.e.notes().empty());
}

}  // namespace
}  // namespace gpuvet::rules
