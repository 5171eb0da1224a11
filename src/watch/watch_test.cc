// gpuvet::Watch end to end on a fixture tree with the fake NVML: the collection at the start,
// intervals as they come, the series in the facts at the end.
#include "gpuvet/watch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "fakes/file_systems.h"

namespace gpuvet {
namespace {

class NoDmesg final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>&, std::chrono::milliseconds,
                            std::size_t) const override {
    CommandResult r;
    r.exit_code = 1;
    return r;
  }
};

struct Node {
  explicit Node(const char* scenario) {
    ::setenv("GPUVET_FAKE_NVML_SCENARIO",
             (std::string(GPUVET_TEST_DATA) + "/scenarios/" + scenario).c_str(), 1);
    fs = make_rooted_file_system(root);
  }
  WatchOptions options() const {
    WatchOptions o;
    o.interval_s = 0.05;
    o.collect.root = root;
    o.collect.nvml_library = GPUVET_FAKE_NVML;
    o.collect.pressure_window = std::chrono::milliseconds(5);
    o.collect.kernel_log = false;
    o.collect.hwloc = false;
    return o;
  }
  Env env() const { return Env{*fs, runner, *clock}; }
  std::string root = std::string(GPUVET_TEST_DATA) + "/fixtures/sysroot-2numa-4gpu";
  std::unique_ptr<FileSystem> fs;
  NoDmesg runner;
  std::unique_ptr<Clock> clock = make_system_clock();
};

TEST(Watch, IntervalsCarryEveryWatchedGpuAndTheEndHasTheWholeSeries) {
  Node node("sysroot-2numa-4gpu.json");
  auto o = node.options();
  o.gpus = {1, 3};
  const Env env = node.env();
  Watch w(o, env);
  const Collection& c = w.start();
  ASSERT_EQ(c.facts.gpus.size(), 4u);  // the collection sees the node; the series only 1 and 3
  std::atomic<bool> stop{false};
  int intervals = 0;
  double last_t = -1;
  for (int i = 0; i < 5; ++i) {
    auto iv = w.next(stop);
    ASSERT_TRUE(iv);
    EXPECT_GT(iv->t_s, last_t);  // each interval once, in order
    last_t = iv->t_s;
    std::set<int> gpus;
    for (const auto& s : iv->gpus) {
      gpus.insert(s.gpu);
      EXPECT_EQ(s.t_s, iv->t_s);
      EXPECT_TRUE(s.sm_mhz);
      EXPECT_TRUE(s.power_limit_w);  // the health counters are on
    }
    EXPECT_EQ(gpus, (std::set<int>{1, 3}));
    ++intervals;
  }
  const Facts f = w.finish();
  EXPECT_GE(f.samples.size(), 2u * intervals);
  EXPECT_EQ(f.gpus.size(), 4u);
  EXPECT_FALSE(w.abandoned_probes());
}

TEST(Watch, TheDurationEndsTheSeriesAndStopEndsItAtOnce) {
  Node node("2gpu-pcie-sys.json");
  auto o = node.options();
  o.duration_s = 0.3;
  const Env env = node.env();
  Watch w(o, env);
  w.start();
  std::atomic<bool> stop{false};
  int n = 0;
  while (w.next(stop) && n < 1000) ++n;  // bounded: the duration must end it
  EXPECT_GE(n, 1);
  EXPECT_LT(n, 1000);
  EXPECT_GE(w.elapsed_s(), 0.3);

  Watch w2(node.options(), env);
  w2.start();
  stop = true;
  EXPECT_FALSE(w2.next(stop));
}

TEST(Watch, ANodeWithoutGpusIsNotSampled) {
  Node node("fault-driver-not-loaded.json");
  const Env env = node.env();
  Watch w(node.options(), env);
  const Collection& c = w.start();
  EXPECT_TRUE(c.facts.gpus.empty());
  std::atomic<bool> stop{false};
  EXPECT_FALSE(w.next(stop));  // at once, not after a duration that was never set
  EXPECT_TRUE(w.finish().samples.empty());
}

}  // namespace
}  // namespace gpuvet
