#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include "fixture_util.h"

#include <cstdio>
#include <cstdlib>

#include <string>
#include <vector>

#include "gpuvet/sched.h"

namespace gpuvet {
namespace {

// `scontrol show node` as Slurm 22.05 prints it (trimmed to the fields that matter).
std::string show_node(const std::string& state, const std::string& reason = "") {
  std::string s =
      "NodeName=vm Arch=x86_64 CoresPerSocket=1 \n"
      "   CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.90\n"
      "   NodeAddr=127.0.0.1 NodeHostName=vm Version=22.05.8\n"
      "   State=" +
      state +
      " ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
      "   Partitions=test \n";
  if (!reason.empty()) s += "   Reason=" + reason + " [root@2026-12-03T17:26:44]\n";
  s += "\n";
  return s;
}

using testing::exited;

// An scontrol that answers `show node` with a canned node and records every call.
class FakeScontrol final : public CommandRunner {
 public:
  explicit FakeScontrol(std::string shown, CommandResult update = exited(0, ""))
      : shown_(std::move(shown)), update_(std::move(update)) {}
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                            std::size_t) const override {
    calls.push_back(argv);
    timeouts.push_back(timeout);
    if (missing) return Status::not_found("scontrol: No such file or directory");
    if (argv.size() > 1 && argv[1] == "show") {
      if (hang_show) {
        CommandResult r;
        r.timed_out = true;
        return r;
      }
      return exited(0, shown_);
    }
    return update_;
  }
  std::vector<std::vector<std::string>> updates() const {
    std::vector<std::vector<std::string>> u;
    for (const auto& c : calls)
      if (c.size() > 1 && c[1] != "show") u.push_back(c);
    return u;
  }
  mutable std::vector<std::vector<std::string>> calls;
  mutable std::vector<std::chrono::milliseconds> timeouts;
  bool missing = false;
  bool hang_show = false;

 private:
  std::string shown_;
  CommandResult update_;
};

SlurmNodeAction unhealthy(std::string reason = "gpuvet: GPU count 3 (baseline 1)") {
  return {"vm", SlurmHealth::kUnhealthy, std::move(reason)};
}
SlurmNodeAction healthy() { return {"vm", SlurmHealth::kHealthy, "gpuvet: pass"}; }

using Argv = std::vector<std::string>;

TEST(SlurmShowNode, ParsesStateFlagsAndReasonWithoutTheUserSuffix) {
  auto s = parse_scontrol_show_node(show_node("IDLE+DRAIN", "admin: bad fan | psu"), "vm");
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s.value().state, "IDLE+DRAIN");
  EXPECT_EQ(s.value().base, "IDLE");
  EXPECT_EQ(s.value().flags, std::vector<std::string>{"DRAIN"});
  EXPECT_EQ(s.value().reason, "admin: bad fan | psu");
  EXPECT_TRUE(s.value().drain);
  EXPECT_FALSE(s.value().down);
  EXPECT_FALSE(s.value().reason_is_ours());
}

TEST(SlurmShowNode, ParsesTheOneLineFormWithReasonLast) {
  const std::string one =
      "NodeName=vm Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 State=MIXED+DRAIN ThreadsPerCore=1 "
      "Partitions=test  CapWatts=n/a Reason=gpuvet: GPU0 lost [root@2026-12-03T17:26:44]\n";
  auto s = parse_scontrol_show_node(one, "vm");
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s.value().base, "MIXED");
  EXPECT_TRUE(s.value().drain);
  EXPECT_EQ(s.value().reason, "gpuvet: GPU0 lost");
  EXPECT_TRUE(s.value().reason_is_ours());
}

TEST(SlurmShowNode, NotRespondingSuffixAndDownAreRecognised) {
  auto s = parse_scontrol_show_node(show_node("DOWN*+DRAIN", "Not responding"), "vm");
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s.value().base, "DOWN");
  EXPECT_TRUE(s.value().down);
  EXPECT_TRUE(s.value().drain);
  auto idle = parse_scontrol_show_node(show_node("IDLE*"), "vm");
  ASSERT_TRUE(idle.is_ok());
  EXPECT_EQ(idle.value().base, "IDLE");
  EXPECT_FALSE(idle.value().drain);
  EXPECT_EQ(idle.value().reason, "");
}

TEST(SlurmShowNode, NextStateIsNotTakenForState) {
  auto s = parse_scontrol_show_node(
      "NodeName=vm NextState=RESUME State=IDLE+DRAIN+REBOOT_REQUESTED Reason=x [a@b]", "vm");
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s.value().base, "IDLE");
  EXPECT_EQ(s.value().flags, (std::vector<std::string>{"DRAIN", "REBOOT_REQUESTED"}));
}

TEST(SlurmShowNode, RefusesTextWithoutStateOrForAnotherNode) {
  EXPECT_FALSE(parse_scontrol_show_node("Node vm not found\n", "vm").is_ok());
  EXPECT_FALSE(parse_scontrol_show_node(show_node("IDLE"), "other").is_ok());
}

TEST(SlurmDrain, UnhealthyIdleNodeIsDrainedWithGpuvetReason) {
  FakeScontrol sc(show_node("IDLE"));
  auto o = apply_slurm_drain(unhealthy(), sc);
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_EQ(o.value().change, SlurmChange::kDrained);
  ASSERT_EQ(sc.updates().size(), 1u);
  EXPECT_EQ(sc.updates()[0], (Argv{"scontrol", "update", "nodename=vm", "state=drain",
                                   "reason=gpuvet: GPU count 3 (baseline 1)"}));
  EXPECT_EQ(sc.calls[0], (Argv{"scontrol", "show", "node", "vm"}));
}

TEST(SlurmDrain, EveryScontrolCallHasTheTimeout) {
  FakeScontrol sc(show_node("IDLE"));
  SlurmDrainOptions opt;
  opt.timeout = std::chrono::milliseconds(1234);
  ASSERT_TRUE(apply_slurm_drain(unhealthy(), sc, opt).is_ok());
  ASSERT_EQ(sc.timeouts.size(), 2u);
  for (auto t : sc.timeouts) EXPECT_EQ(t.count(), 1234);
}

TEST(SlurmDrain, SomeoneElsesDrainIsNeverOverwritten) {
  FakeScontrol sc(show_node("IDLE+DRAIN", "admin: bad fan"));
  auto o = apply_slurm_drain(unhealthy(), sc);
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(o.value().change, SlurmChange::kKeptForeign);
  EXPECT_TRUE(sc.updates().empty());
  EXPECT_NE(o.value().message.find("someone else"), std::string::npos) << o.value().message;
  EXPECT_NE(o.value().message.find("admin: bad fan"), std::string::npos);
}

TEST(SlurmDrain, SomeoneElsesDrainIsNeverResumed) {
  FakeScontrol sc(show_node("IDLE+DRAIN", "admin: bad fan"));
  auto o = apply_slurm_drain(healthy(), sc);
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(o.value().change, SlurmChange::kKeptForeign);
  EXPECT_TRUE(sc.updates().empty());
}

TEST(SlurmDrain, AReasonThatMerelyContainsThePrefixIsNotOurs) {
  FakeScontrol sc(show_node("IDLE+DRAIN", "admin: gpuvet: said so, check fan"));
  ASSERT_TRUE(apply_slurm_drain(healthy(), sc).is_ok());
  EXPECT_TRUE(sc.updates().empty());
}

TEST(SlurmDrain, OwnDrainWithAnotherReasonGetsTheNewReason) {
  FakeScontrol sc(show_node("IDLE+DRAIN", "gpuvet: GPU1 link x8 (baseline x16)"));
  auto o = apply_slurm_drain(unhealthy(), sc);
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(o.value().change, SlurmChange::kReasonUpdated);
  ASSERT_EQ(sc.updates().size(), 1u);
  EXPECT_EQ(sc.updates()[0].back(), "reason=gpuvet: GPU count 3 (baseline 1)");
}

TEST(SlurmDrain, OwnDrainWithTheSameReasonIsLeftAsItIs) {
  FakeScontrol sc(show_node("IDLE+DRAIN", "gpuvet: GPU count 3 (baseline 1)"));
  auto o = apply_slurm_drain(unhealthy(), sc);
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(o.value().change, SlurmChange::kNone);
  EXPECT_TRUE(sc.updates().empty());
}

TEST(SlurmDrain, HealthyNodeDrainedByGpuvetIsResumedEvenWhileDraining) {
  for (const char* state : {"IDLE+DRAIN", "MIXED+DRAIN", "ALLOCATED+DRAIN"}) {
    FakeScontrol sc(show_node(state, "gpuvet: GPU count 3 (baseline 1)"));
    auto o = apply_slurm_drain(healthy(), sc);
    ASSERT_TRUE(o.is_ok());
    EXPECT_EQ(o.value().change, SlurmChange::kResumed) << state;
    ASSERT_EQ(sc.updates().size(), 1u);
    EXPECT_EQ(sc.updates()[0], (Argv{"scontrol", "update", "nodename=vm", "state=resume"}));
  }
}

TEST(SlurmDrain, HealthyNodeInServiceIsNotTouched) {
  FakeScontrol sc(show_node("ALLOCATED"));
  auto o = apply_slurm_drain(healthy(), sc);
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(o.value().change, SlurmChange::kNone);
  EXPECT_TRUE(sc.updates().empty());
}

TEST(SlurmDrain, DownNodeIsNeverTouchedEvenWithOurReason) {
  for (auto action : {unhealthy(), healthy()}) {
    FakeScontrol sc(show_node("DOWN*+DRAIN", "gpuvet: GPU count 3 (baseline 1)"));
    auto o = apply_slurm_drain(action, sc);
    ASSERT_TRUE(o.is_ok());
    EXPECT_EQ(o.value().change, SlurmChange::kLeftDown);
    EXPECT_TRUE(sc.updates().empty());
  }
}

TEST(SlurmDrain, UnknownVerdictChangesNothing) {
  FakeScontrol sc(show_node("IDLE+DRAIN", "gpuvet: GPU count 3 (baseline 1)"));
  auto o = apply_slurm_drain({"vm", SlurmHealth::kUnknown, "gpuvet: unknown"}, sc);
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(o.value().change, SlurmChange::kUnknownHealth);
  EXPECT_TRUE(sc.updates().empty());
}

TEST(SlurmDrain, ReasonWithoutThePrefixIsRefusedBeforeAnyCall) {
  FakeScontrol sc(show_node("IDLE"));
  auto o = apply_slurm_drain(unhealthy("GPU lost"), sc);
  EXPECT_FALSE(o.is_ok());
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(sc.calls.empty());
}

TEST(SlurmDrain, MissingScontrolIsAClearError) {
  FakeScontrol sc(show_node("IDLE"));
  sc.missing = true;
  auto o = apply_slurm_drain(unhealthy(), sc);
  ASSERT_FALSE(o.is_ok());
  EXPECT_EQ(o.status().code(), StatusCode::kNotFound);
  EXPECT_NE(o.status().message().find("scontrol not found"), std::string::npos);
}

TEST(SlurmDrain, ScontrolTimingOutIsAnError) {
  FakeScontrol sc(show_node("IDLE"));
  sc.hang_show = true;
  auto o = apply_slurm_drain(unhealthy(), sc);
  ASSERT_FALSE(o.is_ok());
  EXPECT_EQ(o.status().code(), StatusCode::kTimeout);
  EXPECT_TRUE(sc.updates().empty());
}

TEST(SlurmDrain, FailingUpdateIsAnErrorWithScontrolsMessage) {
  FakeScontrol sc(show_node("IDLE"), exited(1, "", "slurm_update error: Invalid user id\n"));
  auto o = apply_slurm_drain(unhealthy(), sc);
  ASSERT_FALSE(o.is_ok());
  EXPECT_NE(o.status().message().find("Invalid user id"), std::string::npos)
      << o.status().message();
}

TEST(SlurmDrain, UnknownNodeIsAnError) {
  FakeScontrol sc("Node vm not found\n");
  EXPECT_FALSE(apply_slurm_drain(healthy(), sc).is_ok());
}

TEST(SlurmNodeName, ComesFromSlurmdNodenameOrIsRefused) {
  EXPECT_EQ(slurm_node_name("gpu-17").value_or(""), "gpu-17");
  auto none = slurm_node_name(nullptr);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("SLURMD_NODENAME"), std::string::npos);
  EXPECT_FALSE(slurm_node_name("").is_ok());
  EXPECT_FALSE(slurm_node_name("a b").is_ok());
}

}  // namespace
}  // namespace gpuvet

namespace gpuvet {
namespace {

// `gpuvet gate --drain slurm` as a health check would run it, through the real binary.
int run_gpuvet(const std::string& shell_line, std::string* out) {
  std::string cmd = shell_line + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(GateDrainSlurm, RefusesWithoutSlurmdNodename) {
  std::string out;
  const int rc =
      run_gpuvet(std::string("/usr/bin/env -u SLURMD_NODENAME timeout 60 ") + GPUVET_BINARY +
                     " gate --baseline /nonexistent.toml --drain slurm "
                     "--exit-style slurm",
                 &out);
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("SLURMD_NODENAME is not set"), std::string::npos) << out;
}

TEST(GateDrainSlurm, MissingScontrolIsExit3WithAMessage) {
  const std::string dir = ::testing::TempDir() + "gpuvet-drain-" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  const std::string live =
      std::string(" --nvml ") + GPUVET_FAKE_NVML + " --no-kernel-log --sample-window 0";
  const std::string scenario = std::string("GPUVET_FAKE_NVML_SCENARIO=") + GPUVET_TEST_DATA +
                               "/scenarios/h200-1gpu-idle.json ";
  std::string out;
  ASSERT_EQ(run_gpuvet("/usr/bin/env " + scenario + GPUVET_BINARY + " baseline capture" + live +
                           " --force -o " + dir + "/b.toml",
                       &out),
            0)
      << out;
  out.clear();
  const int rc = run_gpuvet("/usr/bin/env PATH=/nonexistent SLURMD_NODENAME=vm " + scenario +
                                GPUVET_BINARY + " gate --baseline " + dir + "/b.toml" + live +
                                " --drain slurm --exit-style slurm --one-line",
                            &out);
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("scontrol not found"), std::string::npos) << out;
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
// The cause first in sinfo -R's 20 characters, then the marker gpuvet recognises its own
// drains by; the older "gpuvet:" reasons stay gpuvet's, an admin's never.
TEST(SlurmDrain, TheReasonFitsSinfosColumnAndEndsWithTheMarker) {
  EXPECT_EQ(slurm_drain_reason("GPU3 PCIe x8<x16", 0), "GPU3 PCIe x8<x16 [gpuvet]");
  EXPECT_EQ(slurm_drain_reason("GPU1 lost", 3), "GPU1 lost +3 [gpuvet]");
  const std::string r = slurm_drain_reason("a cause far longer than twenty characters\n", 0);
  EXPECT_EQ(r, "a cause far longer t [gpuvet]");
  EXPECT_TRUE(is_gpuvet_reason(r));
  EXPECT_TRUE(is_gpuvet_reason("gpuvet: GPU count 3 (baseline 1)"));
  EXPECT_FALSE(is_gpuvet_reason("admin: gpuvet: said so, check fan"));
  EXPECT_FALSE(is_gpuvet_reason("fan broken [gpuvet] said the vendor"));
  FakeScontrol sc(show_node("IDLE+DRAIN", "GPU1 lost [gpuvet]"));
  auto o = apply_slurm_drain(healthy(), sc);
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_EQ(o.value().change, SlurmChange::kResumed);
}

}  // namespace gpuvet
