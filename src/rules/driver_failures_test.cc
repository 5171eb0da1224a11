// A GPU lost or never initialised, seen without NVML: the NVIDIA driver's own failure strings
// (open-gpu-kernel-modules: nv.c, osinit.c), lspci's "rev ff", nvidia-smi's table rows alone,
// the fabric's health and NVLinks all inactive; and a paste that covers part of the playbook
// is judged for that part (exit 3 only when nothing could be judged).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using testing::with_id;

Diagnosis judge(const std::string& text, const std::string& name) {
  return diagnose(import_text(text, name));
}

// The findings of one id in a diagnosis.
std::vector<Finding> ids(const Diagnosis& d, const std::string& id) {
  return rules::testing::with_id(d.findings, id);
}

TEST(DriverFailures, RmInitAdapterNamesTheGpuAsUnresponsive) {
  const Diagnosis d = judge(
      "[  903.609564] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM\n"
      "[  903.610907] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)\n"
      "[  903.611884] NVRM: GPU 0000:98:00.0: rm_init_adapter failed, device minor number 0\n"
      "[ 2052.745833] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)\n",
      "dmesg.txt");
  auto u = ids(d, "gpu-unresponsive");
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].severity, Severity::kCritical);
  EXPECT_EQ(u[0].subjects, std::vector<std::string>{"0000:98:00.0"});
  EXPECT_NE(u[0].evidence.find("2 lines"), std::string::npos) << u[0].evidence;
  // A kernel log alone is judged for what it covers: critical, not "incomplete".
  EXPECT_EQ(diagnosis_exit_code(d), 2);
}

TEST(DriverFailures, OldDriversWithoutABusIdAndResetRequired) {
  const Diagnosis old = judge(
      "[87669.726564] NVRM: RmInitAdapter failed! (0x26:0xffff:1375)\n"
      "[87669.726572] NVRM: rm_init_adapter failed for device bearing minor number 0\n",
      "dmesg.txt");
  auto u = ids(old, "gpu-unresponsive");
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].subjects, std::vector<std::string>{"host"});
  const Diagnosis reset = judge(
      "[ 1.0] NVRM: GPU0 nvAssertOkFailedNoLog: Assertion failed: Reset required "
      "[NV_ERR_RESET_REQUIRED] (0x00000063) returned from pRmApi->Control\n"
      "[ 2.0] NVRM: GPU0 something else\n"
      "[ 3.0] NVRM: GPU1 fine\n",
      "dmesg.txt");
  EXPECT_EQ(ids(reset, "gpu-unresponsive").size(), 1u);
}

TEST(DriverFailures, GpusTheDriverNeverTookAreMissing) {
  const Diagnosis d = judge(
      "[188549.976351] NVRM: The NVIDIA probe routine was not called for 3 device(s).\n"
      "[188549.977053] NVRM: This can occur when a driver such as: \n"
      "[188549.977060] NVRM: No NVIDIA graphics adapter probed!\n",
      "dmesg.txt");
  auto m = ids(d, "gpu-missing");
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m[0].severity, Severity::kCritical);
  EXPECT_EQ(m[0].action, Action::kFixConfig);
  // What it says to do follows the action: no "reseat" for a driver that never took the GPUs.
  EXPECT_EQ(finding_decision(m[0]).find("reseat"), std::string::npos) << finding_decision(m[0]);
}

// A rule that changes a finding's action changes the sentence shown with it: the catalog row's
// decision only goes with the row's own action.
TEST(DriverFailures, TheDecisionShownFollowsTheFindingsAction) {
  for (const auto& row : finding_catalog()) {
    Finding f;
    f.id = row.id;
    EXPECT_EQ(finding_decision(f), row.decision) << row.id;
    for (Action a : {Action::kNone, Action::kWatch, Action::kFixConfig, Action::kReseatOrRma,
                     Action::kDrain, Action::kFixApplication}) {
      f.action = a;
      if (a == row.action || row.action == Action::kUnset)
        EXPECT_EQ(finding_decision(f), row.decision) << row.id;
      else
        EXPECT_NE(finding_decision(f), row.decision) << row.id << " as " << action_name(a);
    }
  }
}

TEST(DriverFailures, AnNvrmLineThatIsNotAFailureRaisesNothing) {
  const Diagnosis d = judge(
      "[    5.111] nvidia: module verification failed: signature and/or required key missing - "
      "tainting kernel\n"
      "[    5.222] nvidia-nvlink: Nvlink Core is being initialized, major device number 511\n"
      "[    5.333] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  525.147.05\n",
      "dmesg.txt");
  EXPECT_LE(d.worst, Severity::kInfo);
  EXPECT_EQ(diagnosis_exit_code(d), 0);  // a clean kernel log is an answer for its part
}

TEST(DriverFailures, LspciRevisionFfIsAGpuThatNoLongerAnswers) {
  const Facts f = import_text(
      "1b:00.0 3D controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev a1)\n"
      "1c:00.0 3D controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev ff)\n"
      "1d:00.0 Ethernet controller: Intel Corporation I350 Gigabit (rev ff)\n",
      "lspci.txt");
  ASSERT_EQ(f.pci_devices.size(), 3u);
  EXPECT_EQ(f.pci_devices[0].revision, "a1");
  EXPECT_EQ(f.pci_devices[1].revision, "ff");
  const Diagnosis d = diagnose(f);
  auto u = ids(d, "gpu-unresponsive");
  ASSERT_EQ(u.size(), 1u);       // the NIC is not a GPU
  ASSERT_EQ(f.gpus.size(), 2u);  // lspci lists the two NVIDIA functions as GPUs
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:1c:00.0");
  EXPECT_EQ(u[0].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_NE(u[0].evidence.find("0000:1c:00.0"), std::string::npos) << u[0].evidence;
}

TEST(DriverFailures, NothingToJudgeIsStillIncomplete) {
  const Diagnosis d = judge(
      "Architecture:            x86_64\n  CPU op-mode(s):        32-bit, 64-bit\n"
      "  Address sizes:         46 bits physical, 57 bits virtual\n"
      "CPU(s):                  64\n  On-line CPU(s) list:   0-63\n"
      "Model name:              Intel(R) Xeon(R) Platinum 8468\n",
      "lscpu.txt");
  EXPECT_EQ(diagnosis_exit_code(d), 3);
}

// A program's graphics exception (Xid 13 on channel 0x52), then the driver's PBDMA error on the
// same channel (Xid 32 "Channel ID 00000052") as it tears the context down: one application
// fault, no hardware verdict. The same Xid 32 on another channel, or alone, stays a fault of its
// own.
TEST(DriverFailures, AnXidOnTheChannelOfAnApplicationFaultIsItsAftermath) {
  const std::string fault =
      "[31609.615374] NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ChID 0052, Class "
      "00000000, Offset 00001b0c, Data 1000f010\n";
  auto worst_xid = [](const Diagnosis& d) {
    Severity w = Severity::kOk;
    for (const auto& f : ids(d, "xid-error")) w = std::max(w, f.severity);
    return w;
  };
  const Diagnosis same = judge(
      fault + "[31609.615516] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000052 intr 02000000\n",
      "dmesg.txt");
  EXPECT_LE(worst_xid(same), Severity::kInfo);
  bool said = false;
  for (const auto& f : ids(same, "xid-error"))
    said = said || f.evidence.find("following Xid 13") != std::string::npos;
  EXPECT_TRUE(said);
  const Diagnosis other = judge(
      fault + "[31609.615516] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000060 intr 02000000\n",
      "dmesg.txt");
  EXPECT_GE(worst_xid(other), Severity::kWarning);
  const Diagnosis alone =
      judge("[31609.615516] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000052 intr 02000000\n",
            "dmesg.txt");
  EXPECT_GE(worst_xid(alone), Severity::kWarning);
}

TEST(DriverFailures, AnXid45BurstFollowedByHungTasksIsAStuckContext) {
  std::string log;
  for (int i = 0; i < 6; ++i)
    log += "[ " + std::to_string(5000 + 30 * i) +
           ".123456] NVRM: Xid (PCI:0000:3b:00): 45, pid=" + std::to_string(4400 + i) +
           ", name=python3, Ch 00000010\n";
  const std::string hung =
      "[ 5400.000001] INFO: task python3:4412 blocked for more than 122 seconds.\n"
      "[ 5400.000002]       Tainted: P           OE     6.5.0-41-generic #41-Ubuntu\n";
  const Facts burst = import_text(log + hung, "dmesg.txt");
  ASSERT_EQ(burst.kernel_log.hung_tasks.size(), 1u);
  EXPECT_EQ(burst.kernel_log.hung_tasks[0].process, "python3");
  EXPECT_EQ(burst.kernel_log.hung_tasks[0].pid, 4412);
  auto x = ids(diagnose(burst), "xid-error");
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].severity, Severity::kCritical);
  EXPECT_EQ(x[0].action, Action::kDrain);
  EXPECT_NE(x[0].evidence.find("stuck in the driver"), std::string::npos) << x[0].evidence;
  // The same burst without a hung task: processes torn down by earlier errors, info.
  auto plain = ids(diagnose(import_text(log, "dmesg.txt")), "xid-error");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_LE(plain[0].severity, Severity::kInfo);
}

TEST(DriverFailures, AStuckContextIsToldFromWallClockStampsToo) {
  // dmesg -T: no seconds since boot, only the wall clock; the burst and the hung task are
  // placed on it.
  std::string log;
  for (int i = 0; i < 6; ++i)
    log += "[Sat Oct 12 18:35:3" + std::to_string(i) +
           " 2024] NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, name=prover, Ch 0000000" +
           std::to_string(i) + "\n";
  const std::string hung =
      "[Sat Oct 12 18:38:44 2024] INFO: task cache_mgr_event:620917 blocked for more than 120 "
      "seconds.\n";
  auto x = ids(diagnose(import_text(log + hung, "dmesg.txt")), "xid-error");
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].severity, Severity::kCritical);
  EXPECT_NE(x[0].evidence.find("stuck in the driver"), std::string::npos) << x[0].evidence;
  // A hung task from before the burst is not its consequence.
  const std::string before =
      "[Sat Oct 12 18:30:00 2024] INFO: task cache_mgr_event:620917 blocked for more than 120 "
      "seconds.\n";
  auto y = ids(diagnose(import_text(before + log, "dmesg.txt")), "xid-error");
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].evidence.find("stuck in the driver"), std::string::npos) << y[0].evidence;
}

TEST(IommuFaults, WithPeerFailuresTheyPointAtTheIommu) {
  const std::string faults =
      "[  812.100001] nvidia 0000:07:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0003 "
      "address=0x80000040 flags=0x0020]\n"
      "[  812.100002] nvidia 0000:07:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0003 "
      "address=0x9e139068 flags=0x0020]\n";
  auto alone = ids(judge(faults, "dmesg.txt"), "iommu-fault");
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_FALSE(alone[0].decision_note.has_value());
  Facts f = import_text(faults, "dmesg.txt");
  const Facts nccl = import_text(
      "node:4412:4530 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer "
      "access is not supported between these two devices\n",
      "nccl.log");
  f.nccl_events = nccl.nccl_events;
  auto with = ids(diagnose(f), "iommu-fault");
  ASSERT_EQ(with.size(), 1u);
  EXPECT_EQ(with[0].action, Action::kFixConfig);
  ASSERT_TRUE(with[0].decision_note.has_value());
  EXPECT_NE(with[0].decision_note->find("ACS"), std::string::npos);
  EXPECT_NE(with[0].evidence.find("in the same inputs"), std::string::npos) << with[0].evidence;
}

TEST(NvsmiFields, FabricHealthUnhealthyIsDegraded) {
  const std::string q =
      "==============NVSMI LOG==============\n\n"
      "Driver Version                            : 570.86.15\n\n"
      "Attached GPUs                             : 1\n"
      "GPU 00000009:01:00.0\n"
      "    Product Name                          : NVIDIA GB200\n"
      "    Fabric\n"
      "        State                             : Completed\n"
      "        Status                            : Success\n"
      "        CliqueId                          : 2\n"
      "        ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278\n"
      "        Health\n"
      "            Summary                       : Unhealthy\n"
      "            Bandwidth                     : Full\n";
  const Facts f = import_text(q, "q.txt");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].fabric.health_summary, "Unhealthy");
  EXPECT_EQ(ids(diagnose(f), "fabric-degraded").size(), 1u);
  std::string healthy = q;
  healthy.replace(healthy.find("Unhealthy"), 9, "Healthy");
  EXPECT_TRUE(ids(diagnose(import_text(healthy, "q.txt")), "fabric-degraded").empty());
}

TEST(NvsmiFields, ARecoveryActionOtherThanNoneIsAGpuOutOfService) {
  auto q = [](const char* action) {
    return std::string(
               "==============NVSMI LOG==============\n\n"
               "Driver Version                            : 570.86.15\n\n"
               "Attached GPUs                             : 1\n"
               "GPU 00000000:CC:00.0\n"
               "    Product Name                          : NVIDIA RTX 4000 Ada Generation\n"
               "    GPU Recovery Action                   : ") +
           action + "\n";
  };
  const Facts reset = import_text(q("Reset"), "q.txt");
  ASSERT_EQ(reset.gpus.size(), 1u);
  EXPECT_EQ(reset.gpus[0].recovery_action, "Reset");
  auto u = ids(diagnose(reset), "gpu-unresponsive");
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].severity, Severity::kCritical);
  EXPECT_EQ(u[0].action, Action::kDrain);
  EXPECT_TRUE(ids(diagnose(import_text(q("None"), "q.txt")), "gpu-unresponsive").empty());
  auto p2p = ids(diagnose(import_text(q("Drain P2P"), "q.txt")), "gpu-unresponsive");
  ASSERT_EQ(p2p.size(), 1u);
  EXPECT_EQ(p2p[0].severity, Severity::kWarning);
}

TEST(NvsmiFields, ALoopedQueryIsOneGpuEachWithItsLastSample) {
  auto sample = [](int t0, int t1) {
    return "==============NVSMI LOG==============\n\n"
           "Driver Version                            : 535.154.05\n\n"
           "Attached GPUs                             : 2\n"
           "GPU 00000000:18:00.0\n"
           "    Product Name                          : NVIDIA H100 80GB HBM3\n"
           "    Temperature\n"
           "        GPU Current Temp                  : " +
           std::to_string(t0) +
           " C\n"
           "GPU 00000000:2A:00.0\n"
           "    Product Name                          : NVIDIA H100 80GB HBM3\n"
           "    Temperature\n"
           "        GPU Current Temp                  : " +
           std::to_string(t1) + " C\n\n";
  };
  const Facts f = import_text(sample(40, 41) + sample(60, 61) + sample(70, 71), "q-l.txt");
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].thermal.gpu_c, 70);
  EXPECT_EQ(f.gpus[1].thermal.gpu_c, 71);
  bool said = false;
  for (const auto& n : f.notes)
    said = said || n.find("3 samples of the same 2 GPU") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(NvsmiFields, AllNvlinksInactiveIsAFindingOnThatGpu) {
  const Facts f = import_text(
      "GPU 2: NVIDIA B200 (UUID: GPU-1b2c3d4e-0000-0000-0000-000000000000)\n"
      "NVML: Unable to retrieve NVLink information as all links are inActive\n",
      "nvlink.txt");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_TRUE(f.gpus[0].nvlinks_all_inactive);
  auto d = ids(diagnose(f), "nvlink-down");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].subjects, std::vector<std::string>{"GPU2"});
}

TEST(NvsmiFields, TableRowsWithoutTheHeaderAreRead) {
  const Facts f = import_text(
      "+-------------------------------+----------------------+----------------------+\n"
      "|   1  Tesla V100-PCIE...  On   | 00008ED0:00:00.0 Off |                    0 |\n"
      "| N/A   29C    P0   ERR! / 250W |    593MiB / 16160MiB |      0%      Default |\n"
      "|                               |                      |                  N/A |\n"
      "+-------------------------------+----------------------+----------------------+\n",
      "row.txt");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].index, 1);
  EXPECT_EQ(f.gpus[0].pci_bus_id, "8ed0:00:00.0");
  // One field read as ERR! is a failed sensor, not a lost GPU.
  EXPECT_FALSE(f.gpus[0].unresponsive);
  EXPECT_TRUE(ids(diagnose(f), "gpu-unresponsive").empty());
}

TEST(KernelLogStamps, DmesgHumanReadableRelativeStampsAreRead) {
  const Facts f = import_text(
      "[Feb22 10:31] pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: "
      "0000:00:03.0\n"
      "[  +0.000004] pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
      "type=Transaction Layer, (Requester ID)\n"
      "[  +0.000898] pcieport 0000:00:03.0:   device [8086:6f08] error "
      "status/mask=00004020/00000000\n"
      "[  +0.000894] pcieport 0000:00:03.0:    [14] CmpltTO                (First)\n"
      "[  +0.000921] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)\n",
      "dmesg.txt");
  ASSERT_FALSE(f.imported.empty());
  EXPECT_EQ(f.imported[0].format, "kernel-log");
  ASSERT_FALSE(f.kernel_log.pcie_aer.empty());
  EXPECT_FALSE(ids(diagnose(f), "pcie-aer-errors").empty());
}

}  // namespace
}  // namespace gpuvet::rules
