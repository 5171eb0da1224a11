#include "import/bench_outputs.h"

#include <gtest/gtest.h>

#include "fixture_util.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "import/host_tools.h"
#include "import/importer.h"
#include "import/nccl_log.h"

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

std::string local(const std::string& name) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/capture/tools/" + name;
}

// Every format of this family, as the registry will list them.
struct Format {
  const char* id;
  SniffFn sniff;
  ParseFn parse;
};
const std::vector<Format>& formats() {
  static const std::vector<Format> k = {
      {"numactl-hardware", sniff_numactl_hardware, import_numactl_hardware},
      {"numactl-show", sniff_numactl_show, import_numactl_show},
      {"lscpu", sniff_lscpu, import_lscpu},
      {"mpstat", sniff_mpstat, import_mpstat},
      {"iostat-x", sniff_iostat, import_iostat},
      {"sar-net-dev", sniff_sar_net_dev, import_sar_net_dev},
      {"nccl-debug-log", sniff_nccl_log, import_nccl_log},
      {"nccl-topo-xml", sniff_nccl_topo_xml, import_nccl_topo_xml},
      {"nccl-tests", sniff_nccl_tests, import_nccl_tests},
      {"nvbandwidth", sniff_nvbandwidth, import_nvbandwidth},
      {"bandwidthTest", sniff_bandwidth_test, import_bandwidth_test},
      {"p2pBandwidthLatencyTest", sniff_p2p_bandwidth_latency_test,
       import_p2p_bandwidth_latency_test},
      {"simpleP2P", sniff_simple_p2p, import_simple_p2p},
  };
  return k;
}

std::size_t fact_count(const Facts& f) {
  const auto& h = f.host;
  std::size_t n = f.measurements.size() + f.nccl_events.size() + f.gpus.size() + f.pairs.size() +
                  h.numa_nodes.size();
  n += h.cpu_model.has_value() + h.logical_cpus.has_value() + h.pressure.has_value();
  return n;
}

std::vector<Measurement> select(const Facts& f, const std::string& test,
                                const std::string& note = "") {
  std::vector<Measurement> out;
  for (const auto& m : f.measurements)
    if (m.test == test && (note.empty() || m.note.value_or("") == note)) out.push_back(m);
  return out;
}

// ================================================================== nccl-tests

TEST(BenchNcclTests, SuperbenchOldFormatWithoutRoot) {
  READ_LOCAL(text, "real-superbench-a100-sxm4-40gb-8gpu-all_reduce_perf.log");
  EXPECT_EQ(sniff_nccl_tests(text), 100);
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 69u);  // 34 sizes x 2 + the average
  const auto& last = f.measurements[66];
  EXPECT_EQ(last.tool, "nccl-tests");
  EXPECT_EQ(last.test, "all_reduce_perf");  // busbw/algbw = 1.75 = 2*7/8 with 8 ranks
  EXPECT_EQ(last.size_bytes, 8589934592ull);
  EXPECT_DOUBLE_EQ(*last.bandwidth_gbps, 134.44);
  EXPECT_DOUBLE_EQ(*last.busbw_gbps, 235.26);
  EXPECT_DOUBLE_EQ(*last.latency_us, 63896);
  EXPECT_EQ(last.note, "out-of-place");
  EXPECT_EQ(f.measurements[67].note, "in-place");
  EXPECT_DOUBLE_EQ(*f.measurements[67].busbw_gbps, 235.03);
  const auto& avg = f.measurements[68];
  EXPECT_EQ(avg.note, "avg bus bandwidth");
  EXPECT_DOUBLE_EQ(*avg.busbw_gbps, 68.4048);
  EXPECT_FALSE(avg.size_bytes);
  ASSERT_EQ(f.gpus.size(), 8u);
  EXPECT_EQ(f.gpus[7].name, "A100-SXM4-40GB");
  EXPECT_FALSE(f.gpus[7].pci_bus_id);  // "[0x00]" is not a bus id
  EXPECT_TRUE(f.nccl_events.empty());  // "NCCL INFO Launch mode Parallel" is no event
}

TEST(BenchNcclTests, UnnamedAlltoallIsUnknown) {
  READ_LOCAL(text, "real-superbench-a100-sxm4-40gb-8gpu-alltoall_perf.log");
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 69u);
  EXPECT_EQ(f.measurements[0].test, "unknown");
  EXPECT_DOUBLE_EQ(*f.measurements[67].bandwidth_gbps, 258.47);
  ASSERT_EQ(f.notes.size(), 1u);
}

TEST(BenchNcclTests, SrunLabelledTable) {
  READ_LOCAL(text, "real-aws-2x-p5-16x-h100-efa-all_reduce_perf-srun-labelled-table.log");
  EXPECT_EQ(sniff_nccl_tests(text), 100);
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 64u);  // 32 sizes, no average line in the excerpt
  const auto& m = f.measurements[62];
  EXPECT_EQ(m.test, "all_reduce_perf");
  EXPECT_EQ(m.size_bytes, 17179869184ull);
  EXPECT_DOUBLE_EQ(*m.bandwidth_gbps, 259.78);
  EXPECT_DOUBLE_EQ(*m.busbw_gbps, 487.09);
  EXPECT_DOUBLE_EQ(*m.latency_us, 66132);
}

TEST(BenchNcclTests, PreambleAndVersionLine) {
  READ_LOCAL(text, "real-oci-oke-a100-sxm4-40gb-2node-16gpu-all_reduce_perf-nccl2.25.1.log");
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 7u);
  EXPECT_EQ(f.measurements[0].size_bytes, 1073741824ull);
  EXPECT_DOUBLE_EQ(*f.measurements[0].busbw_gbps, 186.83);
  EXPECT_DOUBLE_EQ(*f.measurements[6].busbw_gbps, 188.648);
  EXPECT_TRUE(f.gpus.empty());  // two hosts: GPU indices would collide
  ASSERT_EQ(f.nccl_events.size(), 1u);
  EXPECT_EQ(f.nccl_events[0].kind, "version");
  EXPECT_EQ(f.nccl_events[0].detail, "2.25.1+cuda12.8");
}

TEST(BenchNcclTests, SingleSizeRun) {
  READ_LOCAL(text, "real-tinygrad-6x-rtx4090-p2p-hack-all_reduce_perf-32MB.log");
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 3u);
  EXPECT_EQ(f.measurements[0].test, "all_reduce_perf");
  EXPECT_DOUBLE_EQ(*f.measurements[0].busbw_gbps, 24.58);
  ASSERT_EQ(f.gpus.size(), 6u);
  EXPECT_EQ(f.gpus[5].name, "NVIDIA GeForce RTX 4090");
}

TEST(BenchNcclTests, HeaderWithoutHashAndBusIds) {
  READ_SHARED_OR_SKIP(
      text, "nccl-tests/gcp-a3mega-2node-16x-h100-all_reduce_perf-header-hash-stripped.log");
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 63u);
  EXPECT_DOUBLE_EQ(*f.measurements[60].busbw_gbps, 338.82);
  EXPECT_DOUBLE_EQ(*f.measurements[62].busbw_gbps, 70.742);
}

TEST(BenchNcclTests, TwoGpuNoP2pWithBusIds) {
  READ_SHARED_OR_SKIP(text, "nccl-tests/autodl-2x-rtx2080ti-no-p2p-all_reduce_perf.log");
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  EXPECT_EQ(f.measurements.size(), 57u);
  EXPECT_EQ(f.measurements[0].test, "all_reduce_perf");
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:b4:00.0");
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:b5:00.0");
  EXPECT_DOUBLE_EQ(*f.measurements[55].busbw_gbps, 4.00);
}

TEST(BenchNcclTests, WrongColumnNaAndRedopNone) {
  READ_SHARED_OR_SKIP(text, "nccl-tests/autodl-2x-rtx2080ti-no-p2p-alltoall_perf.log");
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  EXPECT_EQ(f.measurements[1].note, "in-place");  // "N/A" #wrong is no error
  EXPECT_EQ(f.measurements[0].test, "unknown");
}

TEST(BenchNcclTests, NamedBinaryAndWrongCount) {
  READ_LOCAL(text, "nccl-tests-sendrecv-named-wrong.log");
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 9u);
  for (const auto& m : f.measurements) EXPECT_EQ(m.test, "sendrecv_perf");
  EXPECT_EQ(f.measurements[4].note, "out-of-place");
  EXPECT_EQ(f.measurements[4].wrong_data, "#wrong 3");
  EXPECT_EQ(f.measurements[5].note, "in-place");
  EXPECT_FALSE(f.measurements[5].wrong_data);
  EXPECT_TRUE(f.gpus.empty());
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("3 FAILED"), std::string::npos);
}

TEST(BenchNcclTests, OneWrongElementIsNoted) {
  // One mismatched element in the in-place block, none out of place: the smallest count of
  // corrupted data nccl-tests can report must reach the measurement's wrong_data.
  const std::string text =
      "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576\n"
      "#  Rank  0 Group  0 Pid 1 on h device  0 [0x07] G\n"
      "#  Rank  1 Group  0 Pid 1 on h device  1 [0x0a] G\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1    20.00   52.43   52.43      0   "
      "20.10   52.17   52.17      1\n";
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 2u);
  EXPECT_EQ(f.measurements[0].note, "out-of-place");
  EXPECT_FALSE(f.measurements[0].wrong_data) << "0 is checked and right";
  EXPECT_EQ(f.measurements[1].note, "in-place");
  EXPECT_EQ(f.measurements[1].wrong_data, "#wrong 1");
}

TEST(BenchNcclTests, GuessReduceScatterFromRatio) {
  const std::string text =
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1048576\n"
      "#  Rank  0 Group  0 Pid 1 on h device  0 [0x07] G\n#  Rank  1 Group  0 Pid 1 on h device  1 "
      "[0x0a] G\n"
      "#  Rank  2 Group  0 Pid 1 on h device  2 [0x47] G\n#  Rank  3 Group  0 Pid 1 on h device  3 "
      "[0x4e] G\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "   268435456       8388608     float     sum      -1   1200.0  223.69  167.77      0   "
      "1201.0  223.51  167.63      0\n";
  Facts f;
  ASSERT_TRUE(import_nccl_tests(text, f).is_ok());
  EXPECT_EQ(f.measurements[0].test, "reduce_scatter_perf");  // 0.75 = (4-1)/4
}

// ================================================================== nvbandwidth

TEST(BenchNvbandwidth, ReadmeD2DWriteZeroDiagonal) {
  READ_LOCAL(text, "real-nvbandwidth-readme-8gpu-d2d-memcpy-write-ce-276GBps.txt");
  EXPECT_EQ(sniff_nvbandwidth(text), 100);
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 56u);  // 8x8 without the diagonal
  // "GPU(row) <- GPU(column)": row 6, column 0 is data from GPU 0 into GPU 6.
  auto it = std::find_if(f.measurements.begin(), f.measurements.end(),
                         [](const Measurement& m) { return m.src_gpu == 0 && m.dst_gpu == 6; });
  ASSERT_NE(it, f.measurements.end());
  EXPECT_DOUBLE_EQ(*it->bandwidth_gbps, 274.89);
  EXPECT_EQ(it->test, "device_to_device_memcpy_write_ce");
  EXPECT_EQ(it->tool, "nvbandwidth");
}

TEST(BenchNvbandwidth, HostToDevice) {
  READ_LOCAL(text, "real-nvbandwidth-readme-8gpu-h2d-memcpy-ce.txt");
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 8u);
  EXPECT_FALSE(f.measurements[4].src_gpu);  // the CPU
  EXPECT_EQ(f.measurements[4].dst_gpu, 4);
  EXPECT_DOUBLE_EQ(*f.measurements[4].bandwidth_gbps, 26.19);
}

TEST(BenchNvbandwidth, Bidirectional) {
  READ_LOCAL(text, "real-nvbandwidth-readme-8gpu-h2d-bidirectional-memcpy-ce.txt");
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 8u);
  EXPECT_EQ(f.measurements[3].note, "bidirectional");
  EXPECT_DOUBLE_EQ(*f.measurements[3].bandwidth_gbps, 19.59);
}

TEST(BenchNvbandwidth, NaDiagonalAndSumNameTheMatrix) {
  READ_SHARED_OR_SKIP(
      text, "nvbandwidth/nvbandwidth-issue50-6x-rtx-a6000-d2d-read-ce-pcie-na-diagonal.txt");
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 31u);  // 30 cells + SUM
  for (const auto& m : f.measurements) EXPECT_EQ(m.test, "device_to_device_memcpy_read_ce");
  EXPECT_EQ(f.measurements[2].src_gpu, 0);
  EXPECT_EQ(f.measurements[2].dst_gpu, 3);
  EXPECT_DOUBLE_EQ(*f.measurements[2].bandwidth_gbps, 21.95);
  EXPECT_EQ(f.measurements[30].note, "sum");
  EXPECT_DOUBLE_EQ(*f.measurements[30].bandwidth_gbps, 715.53);
  EXPECT_EQ(f.host.driver_version, "580.95.05");
  EXPECT_EQ(f.host.cuda_driver_version, "13.0");
}

TEST(BenchNvbandwidth, FailedTestIsAMeasurementWithItsError) {
  READ_SHARED_OR_SKIP(
      text,
      "nvbandwidth/"
      "nvbandwidth-issue34-8x-a100-sxm4-80gb-d2d-read-ce-pattern-verification-assert.txt");
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 1u);
  EXPECT_EQ(f.measurements[0].test, "device_to_device_memcpy_read_ce");
  EXPECT_FALSE(f.measurements[0].bandwidth_gbps);
  EXPECT_EQ(f.measurements[0].note,
            "failed: Invalid value when checking the pattern at 0x70a640000000");
  EXPECT_EQ(f.measurements[0].wrong_data,
            "Invalid value when checking the pattern at 0x70a640000000 (offset 11136)");
  ASSERT_EQ(f.gpus.size(), 8u);
  EXPECT_EQ(f.gpus[4].pci_bus_id, "0000:9b:00.0");
  EXPECT_EQ(f.gpus[4].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(f.host.driver_version, "550.127.08");
}

TEST(BenchNvbandwidth, PatternFailureAfterAHealthyTestIsWrongDataForItsTestOnly) {
  // The issue-34 failure lines after a healthy device_to_device_memcpy_write_ce matrix.
  READ_LOCAL(text, "nvbandwidth-d2d-write-ok-then-read-ce-pattern-failure.txt");
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 57u);  // 56 off-diagonal cells + the failed test
  for (std::size_t i = 0; i < 56; ++i) {
    EXPECT_EQ(f.measurements[i].test, "device_to_device_memcpy_write_ce");
    EXPECT_FALSE(f.measurements[i].wrong_data) << i;
  }
  const Measurement& bad = f.measurements[56];
  EXPECT_EQ(bad.tool, "nvbandwidth");
  EXPECT_EQ(bad.test, "device_to_device_memcpy_read_ce");
  EXPECT_FALSE(bad.bandwidth_gbps);
  EXPECT_EQ(bad.note, "failed: Invalid value when checking the pattern at 0x70a640000000");
  EXPECT_EQ(bad.wrong_data,
            "Invalid value when checking the pattern at 0x70a640000000 (offset 11136)");
}

TEST(BenchNvbandwidth, PatternFailureMarksTheFiguresOfItsTest) {
  // Should the check fail after a matrix of the same test (an ordering nvbandwidth does not
  // produce today), those figures are wrong data too; the ASSERT alone is enough.
  const std::string text =
      "Running device_to_device_memcpy_read_ce.\n"
      "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"
      "           0         1\n"
      " 0       N/A    389.10\n"
      " 1    390.02       N/A\n"
      "ASSERT in expression h_errorFlag == 0 in void memcmpPatternHelper(CUstream) : "
      "memcpy.cpp:165\n";
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 3u);
  for (const auto& m : f.measurements) {
    ASSERT_TRUE(m.wrong_data);
    EXPECT_NE(m.wrong_data->find("h_errorFlag == 0"), std::string::npos) << *m.wrong_data;
  }
  // Another failure (no data check) stays a failed test without wrong data.
  Facts g;
  ASSERT_TRUE(import_nvbandwidth("Running host_to_device_memcpy_ce.\nCUDA_ERROR_OUT_OF_MEMORY\n", g)
                  .is_ok());
  ASSERT_EQ(g.measurements.size(), 1u);
  EXPECT_EQ(g.measurements[0].note, "failed: CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_FALSE(g.measurements[0].wrong_data);
}

TEST(BenchNvbandwidth, V08BidirectionalTotalIsMarkedAsTheSumOfBothDirections) {
  // Built from nvbandwidth v0.8 (testcases_ce.cpp, inline_common.h): Read1, Read2, Total.
  READ_LOCAL(text, "nvbandwidth-v0.8-2gpu-d2d-bidirectional-read-ce-total.txt");
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 9u);  // 3 matrices × 2 cells + 3 SUM lines
  const char* notes[] = {"bidirectional",       "bidirectional",       "sum",
                         "bidirectional",       "bidirectional",       "sum",
                         "bidirectional total", "bidirectional total", "sum"};
  for (std::size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(f.measurements[i].note, notes[i]) << i;
    EXPECT_FALSE(f.measurements[i].wrong_data) << i;
  }
  EXPECT_EQ(f.measurements[0].test, "device_to_device_bidirectional_memcpy_read_ce");
  EXPECT_EQ(f.measurements[6].src_gpu, 0);
  EXPECT_EQ(f.measurements[6].dst_gpu, 1);
  EXPECT_DOUBLE_EQ(*f.measurements[6].bandwidth_gbps, 400.02);
  EXPECT_DOUBLE_EQ(*f.measurements[0].bandwidth_gbps, 200.15);
  EXPECT_EQ(f.measurements[8].test, "device_to_device_bidirectional_memcpy_read_ce_total");

  // How the rules judge these notes:
  // MeasurementRules.NvbandwidthBidirectionalTotalIsBothDirections.
}

TEST(BenchNvbandwidth, QuotedRunningLinesAndUnpaddedHeader) {
  READ_SHARED_OR_SKIP(text,
                      "nvbandwidth/nvbandwidth-issue24-8x-h100-h2d-vs-d2h-memcpy-sm-asymmetry.txt");
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 16u);
  EXPECT_EQ(f.measurements[8].test, "device_to_host_memcpy_sm");
  EXPECT_EQ(f.measurements[8].src_gpu, 0);  // "CPU(row) <- GPU(column)"
  EXPECT_FALSE(f.measurements[8].dst_gpu);
  EXPECT_DOUBLE_EQ(*f.measurements[8].bandwidth_gbps, 52.77);
}

TEST(BenchNvbandwidth, LatencyMatrixInNanoseconds) {
  const std::string text =
      "Running host_device_latency_sm.\n"
      "memory latency SM CPU(row) <-> GPU(column) (ns)\n"
      "           0         1\n"
      " 0    812.50    798.25\n"
      "\nSUM host_device_latency_sm 1610.75\n";
  Facts f;
  ASSERT_TRUE(import_nvbandwidth(text, f).is_ok());
  ASSERT_GE(f.measurements.size(), 2u);
  EXPECT_DOUBLE_EQ(*f.measurements[1].latency_us, 0.79825);
  EXPECT_EQ(f.measurements[1].dst_gpu, 1);
}

// ================================================================== cuda-samples

TEST(BenchBandwidthTest, ShmooCsv) {
  READ_LOCAL(text, "real-superbench-v100-pcie-32gb-bandwidthTest-h2d-shmoo.log");
  EXPECT_EQ(sniff_bandwidth_test(text), 100);
  Facts f;
  ASSERT_TRUE(import_bandwidth_test(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 81u);
  const auto& m = f.measurements[0];
  EXPECT_EQ(m.tool, "bandwidthTest");
  EXPECT_EQ(m.test, "host_to_device_pinned");
  EXPECT_EQ(m.size_bytes, 1000u);
  EXPECT_DOUBLE_EQ(*m.bandwidth_gbps, 0.4);
  EXPECT_EQ(m.dst_gpu, 0);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "Tesla V100-PCIE-32GB");
}

TEST(BenchBandwidthTest, QuickMode) {
  READ_SHARED_OR_SKIP(text, "cuda-samples/autodl-rtx2080ti-bandwidthTest-quick.txt");
  Facts f;
  ASSERT_TRUE(import_bandwidth_test(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 3u);
  EXPECT_EQ(f.measurements[0].test, "host_to_device_pinned");
  EXPECT_EQ(f.measurements[0].size_bytes, 32000000u);
  EXPECT_DOUBLE_EQ(*f.measurements[0].bandwidth_gbps, 12.2);
  EXPECT_EQ(f.measurements[1].test, "device_to_host_pinned");
  EXPECT_EQ(f.measurements[1].src_gpu, 0);
  EXPECT_DOUBLE_EQ(*f.measurements[2].bandwidth_gbps, 518.9);
}

TEST(BenchBandwidthTest, RangeModeTwoMachines) {
  READ_SHARED_OR_SKIP(text, "cuda-samples/princeton-tiger-p100-della-a100-bandwidthTest-range.txt");
  Facts f;
  ASSERT_TRUE(import_bandwidth_test(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 24u);
  EXPECT_EQ(f.measurements[15].test, "host_to_device_pinned");
  EXPECT_EQ(f.measurements[15].size_bytes, 1000000000u);
  EXPECT_DOUBLE_EQ(*f.measurements[15].bandwidth_gbps, 25.8);
  EXPECT_EQ(f.measurements[21].test, "device_to_device_pinned");
  EXPECT_DOUBLE_EQ(*f.measurements[21].bandwidth_gbps, 1602.7);
}

TEST(BenchP2p, CannotAccessPeer) {
  READ_SHARED_OR_SKIP(
      text, "cuda-samples/autodl-2x-rtx2080ti-p2pBandwidthLatencyTest-p2p-cannot-access.txt");
  EXPECT_EQ(sniff_p2p_bandwidth_latency_test(text), 100);
  Facts f;
  ASSERT_TRUE(import_p2p_bandwidth_latency_test(text, f).is_ok());
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].a, 0);
  EXPECT_EQ(f.pairs[0].b, 1);
  EXPECT_EQ(f.pairs[0].p2p_read, P2PStatus::kNotSupported);
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:b5:00.0");
  EXPECT_EQ(f.gpus[1].name, "NVIDIA GeForce RTX 2080 Ti");
  ASSERT_EQ(f.measurements.size(), 32u);  // 4 bandwidth + 4 latency matrices of 2x2
  auto uni = select(f, "unidirectional p2p enabled");
  ASSERT_EQ(uni.size(), 4u);
  EXPECT_EQ(uni[1].src_gpu, 0);
  EXPECT_EQ(uni[1].dst_gpu, 1);
  EXPECT_DOUBLE_EQ(*uni[1].bandwidth_gbps, 5.72);
  auto lat = select(f, "latency p2p disabled gpu");
  ASSERT_EQ(lat.size(), 4u);
  EXPECT_DOUBLE_EQ(*lat[1].latency_us, 14.76);
  auto cpu = select(f, "latency p2p enabled cpu");
  ASSERT_EQ(cpu.size(), 4u);
  EXPECT_DOUBLE_EQ(*cpu[2].latency_us, 10.47);
}

TEST(BenchP2p, NvlinkBridgeTrailingSpaces) {
  READ_SHARED_OR_SKIP(
      text, "cuda-samples/hpe-dl380a-2x-h100-pcie-nvlink-bridge-p2pBandwidthLatencyTest.txt");
  Facts f;
  ASSERT_TRUE(import_p2p_bandwidth_latency_test(text, f).is_ok());
  EXPECT_EQ(f.pairs[0].p2p_read, P2PStatus::kOk);
  auto bi = select(f, "bidirectional p2p enabled");
  ASSERT_EQ(bi.size(), 4u);
  EXPECT_DOUBLE_EQ(*bi[1].bandwidth_gbps, 509.35);
}

TEST(BenchP2p, MatrixExcerptOnly) {
  READ_LOCAL(text,
             "real-tinygrad-6x-rtx4090-p2p-hack-bidirectional-p2p-enabled-matrix-excerpt.txt");
  EXPECT_EQ(sniff_p2p_bandwidth_latency_test(text), 100);
  Facts f;
  ASSERT_TRUE(import_p2p_bandwidth_latency_test(text, f).is_ok());
  ASSERT_EQ(f.measurements.size(), 36u);
  EXPECT_EQ(f.measurements[9].test, "bidirectional p2p enabled");
  EXPECT_EQ(f.measurements[9].src_gpu, 1);
  EXPECT_EQ(f.measurements[9].dst_gpu, 3);
  EXPECT_DOUBLE_EQ(*f.measurements[9].bandwidth_gbps, 51.21);
}

TEST(BenchSimpleP2p, PeerAccessAndCopy) {
  READ_SHARED_OR_SKIP(text, "cuda-samples/hpe-dl380a-2x-h100-pcie-simpleP2P.txt");
  EXPECT_EQ(sniff_simple_p2p(text), 100);
  Facts f;
  ASSERT_TRUE(import_simple_p2p(text, f).is_ok());
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].p2p_read, P2PStatus::kOk);
  ASSERT_EQ(f.measurements.size(), 1u);
  EXPECT_EQ(f.measurements[0].tool, "simpleP2P");
  EXPECT_EQ(f.measurements[0].src_gpu, 0);
  EXPECT_EQ(f.measurements[0].dst_gpu, 1);
  EXPECT_DOUBLE_EQ(*f.measurements[0].bandwidth_gbps, 236.01);
}

// ================================================================== the whole corpus

// Every file of the five shared folders: recognised by exactly one format of this family,
// which reads at least one fact out of it. None is deliberately rejected today; add it here
// with its reason when one is.
const std::set<std::string> kRejected = {};

TEST(BenchCorpus, EverySharedFileOfOurFoldersParses) {
  const std::string root = GPUVET_SHARED_FIXTURES;
  GPUVET_REQUIRE_SHARED(root);
  std::size_t files = 0;
  for (const char* dir : {"host", "nccl-log", "nccl-tests", "nvbandwidth", "cuda-samples"}) {
    for (const auto& e : std::filesystem::directory_iterator(root + "/" + dir)) {
      const std::string rel = std::string(dir) + "/" + e.path().filename().string();
      auto text = read_text(e.path().string());
      ASSERT_TRUE(text) << rel;
      ++files;
      std::vector<const Format*> hits;
      for (const auto& fmt : formats())
        if (fmt.sniff(*text) > 0) hits.push_back(&fmt);
      if (kRejected.count(rel)) {
        EXPECT_TRUE(hits.empty()) << rel;
        continue;
      }
      ASSERT_EQ(hits.size(), 1u) << rel << " sniffed by " << hits.size() << " formats";
      Facts f;
      EXPECT_TRUE(hits[0]->parse(*text, f).is_ok()) << rel << " as " << hits[0]->id;
      EXPECT_GE(fact_count(f), 1u) << rel;
    }
  }
  EXPECT_GE(files, 40u);
}

TEST(BenchCorpus, OtherFormatsAreNotOurs) {
  const std::string root = GPUVET_SHARED_FIXTURES;
  GPUVET_REQUIRE_SHARED(root);
  const std::set<std::string> ours = {"host", "nccl-log", "nccl-tests", "nvbandwidth",
                                      "cuda-samples"};
  std::size_t files = 0;
  for (const auto& d : std::filesystem::directory_iterator(root)) {
    if (!d.is_directory() || ours.count(d.path().filename().string())) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(d.path())) {
      if (!e.is_regular_file()) continue;
      auto text = read_text(e.path().string());
      if (!text) continue;
      ++files;
      for (const auto& fmt : formats())
        EXPECT_EQ(fmt.sniff(*text), 0) << e.path() << " sniffed as " << fmt.id;
    }
  }
  EXPECT_GT(files, 0u);
}

TEST(BenchCorpus, LocalSamplesSniffOnlyAsTheirFormat) {
  const std::map<std::string, std::string> expected = {
      {"mpstat-P-ALL-12h-average.txt", "mpstat"},
      {"iostat-xz-sysstat12-two-reports.txt", "iostat-x"},
      {"sar-n-DEV-average.txt", "sar-net-dev"},
      {"numactl-show.txt", "numactl-show"},
      {"numactl-H-4node-cpuless-hbm.txt", "numactl-hardware"},
      {"nccl-debug-mixed-launchers.log", "nccl-debug-log"},
      {"nccl-tests-sendrecv-named-wrong.log", "nccl-tests"},
      {"nccl-topo-dump-2gpu-x8-nic.xml", "nccl-topo-xml"},
      {"real-superbench-v100-pcie-32gb-bandwidthTest-h2d-shmoo.log", "bandwidthTest"},
      {"real-nvbandwidth-readme-8gpu-h2d-memcpy-ce.txt", "nvbandwidth"},
      {"real-tinygrad-6x-rtx4090-p2p-hack-bidirectional-p2p-enabled-matrix-excerpt.txt",
       "p2pBandwidthLatencyTest"},
  };
  for (const auto& [file, id] : expected) {
    auto text = read_text(local(file));
    ASSERT_TRUE(text) << file;
    for (const auto& fmt : formats()) {
      if (fmt.id == id)
        EXPECT_GT(fmt.sniff(*text), 0) << file;
      else
        EXPECT_EQ(fmt.sniff(*text), 0) << file << " sniffed as " << fmt.id;
    }
  }
}

// ================================================================== robustness

std::string random_bytes(std::size_t n, unsigned seed) {
  std::string s;
  s.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    s.push_back(static_cast<char>(seed >> 16));
  }
  return s;
}

std::string repeat_to(const std::string& unit, std::size_t bytes) {
  std::string s;
  s.reserve(bytes + unit.size());
  while (s.size() < bytes) s += unit;
  return s;
}

TEST(BenchRobust, RandomBytesSniffAsNothingAndParseSafely) {
  const std::string junk = random_bytes(1 << 20, 7);
  const std::string nuls(4096, '\0');
  for (const auto& fmt : formats()) {
    EXPECT_EQ(fmt.sniff(junk), 0) << fmt.id;
    EXPECT_EQ(fmt.sniff(nuls), 0) << fmt.id;
    EXPECT_EQ(fmt.sniff(""), 0) << fmt.id;
    Facts f;
    (void)fmt.parse(junk, f);
    (void)fmt.parse(nuls, f);
    Facts g;
    EXPECT_FALSE(fmt.parse("", g).is_ok()) << fmt.id;
  }
}

TEST(BenchRobust, TruncatedRealInputs) {
  for (const char* name : {"real-superbench-a100-sxm4-40gb-8gpu-all_reduce_perf.log",
                           "real-nvbandwidth-readme-8gpu-d2d-memcpy-write-ce-276GBps.txt",
                           "real-superbench-v100-pcie-32gb-bandwidthTest-h2d-shmoo.log",
                           "nccl-debug-mixed-launchers.log", "nccl-topo-dump-2gpu-x8-nic.xml"}) {
    auto text = read_text(local(name));
    ASSERT_TRUE(text) << name;
    for (std::size_t cut = 0; cut < text->size(); cut += 13)
      for (const auto& fmt : formats()) {
        Facts f;
        (void)fmt.parse(std::string_view(*text).substr(0, cut), f);
      }
  }
}

TEST(BenchRobust, TenMegabyteInputsInBoundedTime) {
  const std::vector<std::string> units = {
      "       1048576        262144     float     sum      -1    52.31   20.05   20.05      0    "
      "51.87   20.22   20.22      0\n",
      "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n",
      "10:15:02 AM    3    1.01    0.00    3.03    9.09    0.00    0.00    0.00    0.00    0.00   "
      "86.87\n",
      " 0     26.34     26.35     21.95     22.64     21.80 N/A\n",
      "bandwidthTest-H2D-Pinned, Bandwidth = 0.4 GB/s, Time = 0.00000 s, Size = 1000 bytes\n",
      "<pci busid=\"0000:18:00.0\" link_width=\"16\"><gpu dev=\"0\"/></pci>\n",
      std::string(10 << 20, 'x'),  // one 10 MB line
  };
  std::string header =
      "# nThread 1 nGpus 8\n#       size         count      type   redop    root     time   "
      "algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "10:15:01 AM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice "
      "  %idle\n<system version=\"1\"><cpu>\n";
  for (const auto& unit : units) {
    const std::string text = header + repeat_to(unit, 10 << 20);
    for (const auto& fmt : formats()) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)fmt.sniff(text);
      Facts f;
      (void)fmt.parse(text, f);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(s, 10.0) << fmt.id << " on " << unit.substr(0, 40);
      EXPECT_LE(f.measurements.size(), 20000u);
      EXPECT_LE(f.nccl_events.size(), 4000u);
    }
  }
}

TEST(BenchNvbandwidth, WaivedTestcasesOfEveryEra) {
  // Written for this test after nvbandwidth's output code (testcase filter refused).
  const std::string head =
      "nvbandwidth Version: v0.4\n\nDevice 0: NVIDIA L40S (00000000:17:00)\n"
      "Device 1: NVIDIA L40S (00000000:18:00)\n\n";
  for (const auto& [line, test] : std::vector<std::pair<std::string, std::string>>{
           {"Waiving device_to_device_memcpy_read_ce.", "device_to_device_memcpy_read_ce"},
           {"device_to_device_memcpy_write_ce Waived.", "device_to_device_memcpy_write_ce"},
           {"Waived: ", "(a testcase nvbandwidth did not name)"}}) {
    Facts f;
    ASSERT_TRUE(import_nvbandwidth(head + line + "\n\n", f).is_ok()) << line;
    ASSERT_EQ(f.measurements.size(), 1u) << line;
    EXPECT_EQ(f.measurements[0].test, test);
    EXPECT_EQ(f.measurements[0].note, "waived");
    EXPECT_FALSE(f.measurements[0].bandwidth_gbps.has_value());
    EXPECT_EQ(f.gpus.size(), 2u);
  }
}

}  // namespace
}  // namespace gpuvet::import
