// corpus_diagnose_test.cc — no false alarm on real machines: every file of the shared
// corpus of real captures (../shared/fixtures/real) is diagnosed on its own, and every
// warning or critical finding must be one this table names, with the reason it is real.
// Every entry must also still fire, so a rule that goes quiet fails here too.
// Skips when the corpus folder is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "gpuvet/diagnose.h"
#include "import/load.h"

namespace gpuvet {
namespace {

namespace fs = std::filesystem;

// (file relative to the corpus root, finding id) → why the capture really shows it.
// Not listed on purpose (healthy by design, info at most): the 2× H100 PCIe nvlink -s with 12 of
// 18 links up (all three bridges' links), the 2× RTX 2080 Ti p2pBandwidthLatencyTest that
// cannot access its peer (GeForce: no PCIe P2P in NVIDIA's driver), the RTX 3090 whose
// requested and enforced limits agree at 200 W of 350 W (an administrator's nvidia-smi -pl),
// the AutoDL 2× RTX 2080 Ti topo -p2p matrix alone (NS with no GPU model in the file: info,
// since GeForce cards have no PCIe P2P and nothing says these are datacenter cards), the gpud
// burst of Xid 13 and tinygrad's Xid 31 (NVIDIA's catalog: RESTART_APP, the program's fault:
// info with action fix-application).
const std::map<std::pair<std::string, std::string>, const char*> kRealProblems = {
    {{"nvbandwidth/"
      "nvbandwidth-issue34-8x-a100-sxm4-80gb-d2d-read-ce-pattern-verification-assert.txt",
      "data-corruption"},
     "nvbandwidth's own data check failed on a device-to-device read: wrong data"},
    {{"nccl-log/basicsr-issue737-pytorch-watchdog-allreduce-timeout.log", "nccl-error"},
     "the log holds NCCL watchdog timeouts / IB completion errors"},
    {{"nccl-log/llamafactory-issue6269-watchdog-reduce-scatter-timeout.log", "nccl-error"},
     "the log holds NCCL watchdog timeouts / IB completion errors"},
    {{"nccl-log/nccl-issue1405-net-ib-completion-error-status12-vendor-err129.log", "nccl-error"},
     "the log holds NCCL watchdog timeouts / IB completion errors"},
    {{"nccl-log/ofa-issue271-8xv100-legacy-watchdog-timeout-1800s.log", "nccl-error"},
     "the log holds NCCL watchdog timeouts / IB completion errors"},
    {{"nccl-log/basicsr-issue737-pytorch-watchdog-allreduce-timeout.log", "collective-hang"},
     "every rank shown timed out inside all-reduce 808 (enqueued 811, completed 807): a hang "
     "with no single rank behind"},
    {{"nccl-log/llamafactory-issue6269-watchdog-reduce-scatter-timeout.log", "collective-hang"},
     "every rank shown timed out inside reduce-scatter 7753 (enqueued 7755, completed 7752)"},
    {{"nccl-log/ofa-issue271-8xv100-legacy-watchdog-timeout-1800s.log", "collective-hang"},
     "every rank shown timed out in all-reduce 469508 (old format: no progress line)"},
    {{"nvsmi-text/gpud-8x-h100-passthrough-q-drv535.183-pcie-replays.txt", "pcie-replay-errors"},
     "50+ PCIe replays since driver load"},
    {{"nvsmi-text/gpud-8x-h100-passthrough-q-drv535.183-pcie-replays.txt", "power-throttle"},
     "hw_power_brake_slowdown active"},
    {{"nvsmi-text/gpud-8x-h100-passthrough-q-drv535.183-pcie-replays.txt", "thermal-throttle"},
     "sw_thermal_slowdown active on GPU2"},
    {{"nvsmi-text/gpud-8x-h100-q-drv535.161-hw-power-brake-all-gpus.txt", "pcie-replay-errors"},
     "50+ PCIe replays since driver load"},
    {{"nvsmi-text/gpud-8x-h100-q-drv535.161-hw-power-brake-all-gpus.txt", "power-throttle"},
     "hw_power_brake_slowdown active"},
    {{"nvsmi-text/gpud-a10-passthrough-q-remapped-rows-pending.txt", "ecc-errors"},
     "row remapping pending"},
    {{"nvsmi-text/mleng-8x-a100-sxm4-80gb-q-ecc-remapped-rows-pending-excerpt.txt", "ecc-errors"},
     "row remapping pending"},
    {{"nvsmi-text/mleng-sram-uncorrectable-ecc-errors-excerpt.txt", "ecc-errors"},
     "uncorrectable ECC errors"},
    {{"nvsmi-xml/netdata-rtx2080-win-drv516.xml", "pcie-link-degraded"},
     "the link really trained at x8 of x16"},
    {{"nvsmi-xml/netdata-rtx3060-laptop-drv515.xml", "pcie-link-degraded"},
     "the link really trained at x8 of x16"},
    {{"nvsmi-xml/netdata-tesla-p100-pcie-16gb-drv510.xml", "ecc-errors"},
     "aggregate single-bit ECC errors"},
    {{"nvsmi-xml/telegraf-a10g-drv515.xml", "pcie-link-degraded"},
     "the link really trained at x8 of x16"},
    {{"nvsmi-xml/telegraf-dual-rtx2070-v13.xml", "pcie-link-degraded"},
     "the link really trained at x8 of x16"},
    {{"nvsmi-xml/telegraf-dual-rtx2080-v13.xml", "pcie-link-degraded"},
     "the link really trained at x8 of x16"},
    {{"nvsmi-xml/telegraf-quadro-p2000-drv525.xml", "pcie-link-degraded"},
     "the link really trained at x8 of x16"},
    {{"nvsmi-xml/telegraf-tesla-t4-drv515.xml", "pcie-link-degraded"},
     "the link really trained at x8 of x16"},
    {{"p2p/mleng-2x-l4-topo-p2p-r-cns-chipset-not-supported.txt", "p2p-unavailable"},
     "the capture shows P2P refused between the two GPUs"},
    {{"xid/bumblebee-issue554-legacy-gpu-fallen-off-bus.log", "gpu-unresponsive"},
     "the log says the GPU fell off the bus"},
    {{"xid/gpud-dmesg-xid-119-gsp-rpc-timeout.log", "xid-error"}, "the log holds that Xid"},
    {{"xid/gpud-readme-dmesg-ctime-xid13-xid109-peermem.log", "xid-error"},
     "the log holds that Xid"},
    {{"xid/mleng-a100-xid63-row-remapper-line.log", "xid-error"}, "the log holds that Xid"},
    {{"xid/nvsentinel-issue155-gpu-fallen-off-bus-multiline-no-xid.log", "gpu-unresponsive"},
     "the log says the GPU fell off the bus"},
    {{"xid/ogkm-issue1150-xid45-caused-by-xid149-xid145-multi-gpu.log", "xid-error"},
     "each Xid 45 names its cause, NVLink5 Xid 145/149: an NVLink fault, not the application"},
    {{"xid/vllm-issue40652-8xa100-xid119-gsp-timeout-pci-domain-0001.log", "xid-error"},
     "the log holds that Xid"},
};

TEST(CorpusDiagnose, NoWarningOnHealthyCapturesExceptRealProblems) {
  const fs::path root = GPUVET_SHARED_FIXTURES;
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " not present";
  // Every file this test names must still be there: a lost fixture fails, it does not skip.
  for (const auto& [key, why] : kRealProblems)
    EXPECT_TRUE(fs::exists(root / key.first)) << "named corpus file missing: " << key.first;
  std::set<std::pair<std::string, std::string>> seen;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().filename() == "PROVENANCE.md") continue;
    const std::string rel = fs::relative(entry.path(), root).string();
    auto imported = import::import_path(entry.path().string());
    if (!imported.is_ok()) continue;  // unsupported files are corpus_test's business
    ++files;
    const Diagnosis d = diagnose(imported.value());
    for (const auto& f : d.findings) {
      if (f.severity < Severity::kWarning) continue;
      const auto key = std::make_pair(rel, f.id);
      seen.insert(key);
      EXPECT_TRUE(kRealProblems.count(key)) << rel << ": unexpected " << severity_name(f.severity)
                                            << " " << f.id << ": " << f.evidence;
    }
  }
  EXPECT_GT(files, 100);
  for (const auto& [key, why] : kRealProblems)
    EXPECT_TRUE(seen.count(key)) << key.first << ": " << key.second << " no longer fires (" << why
                                 << ")";
}

}  // namespace
}  // namespace gpuvet
