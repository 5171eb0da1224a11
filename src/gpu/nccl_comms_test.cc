// The communicator protocol without a GPU or NCCL: a function table of fakes stands in for
// libnccl, so init, the waits, close and abort run their real code. Checked: a stalled rank
// is named with its GPU (and the other pending ones listed), errors are pinned on their rank,
// a failed blocking init drops its handles, abort reaches every communicator once, and
// ncclGroupStart is paired with ncclGroupEnd even when a rank fails.
#include "gpu/nccl_comms.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpuvet::gpu {
namespace {

using std::chrono::milliseconds;

// What the fakes answer and what they saw (one test at a time).
struct Fake {
  ncclResult_t init_all = ncclSuccess;
  std::map<int, ncclResult_t> async;  // by rank; absent: ncclSuccess
  int group_start = 0, group_end = 0, init_rank = 0, finalize = 0, destroy = 0;
  std::vector<int> aborted;
};
Fake fake;

ncclComm_t handle_of(int rank) {
  return reinterpret_cast<ncclComm_t>(static_cast<std::uintptr_t>(0x1000 + rank));
}
int rank_of(ncclComm_t c) { return static_cast<int>(reinterpret_cast<std::uintptr_t>(c) - 0x1000); }

const char* error_string(ncclResult_t r) {
  return r == ncclSystemError   ? "unhandled system error"
         : r == ncclRemoteError ? "remote process exited or there was a network error"
                                : "";
}
ncclResult_t init_all(ncclComm_t* comms, int n, const int*) {
  if (fake.init_all != ncclSuccess) {
    comms[0] = handle_of(0);  // a half-made handle NCCL may have freed
    return fake.init_all;
  }
  for (int r = 0; r < n; ++r) comms[r] = handle_of(r);
  return ncclSuccess;
}
ncclResult_t init_rank(ncclComm_t* comm, int, ncclUniqueId, int rank, gpuvet_ncclConfig_v21400*) {
  ++fake.init_rank;
  *comm = handle_of(rank);
  return ncclInProgress;
}
ncclResult_t unique_id(ncclUniqueId*) { return ncclSuccess; }
ncclResult_t async_error(ncclComm_t c, ncclResult_t* out) {
  auto it = fake.async.find(rank_of(c));
  *out = it == fake.async.end() ? ncclSuccess : it->second;
  return ncclSuccess;
}
// The calls that only count: finalize, destroy, group start and end.
template <int Fake::*Count, class... Args>
ncclResult_t counted(Args...) {
  ++(fake.*Count);
  return ncclSuccess;
}
ncclResult_t abort_comm(ncclComm_t c) {
  fake.aborted.push_back(rank_of(c));
  return ncclSuccess;
}

// NCCL < 2.14 (no ncclCommInitRankConfig): init is ncclCommInitAll, close has no finalize.
NcclLib blocking_lib() {
  NcclLib lib;
  lib.get_error_string = error_string;
  lib.comm_init_all = init_all;
  lib.comm_get_async_error = async_error;
  lib.comm_destroy = counted<&Fake::destroy, ncclComm_t>;
  lib.comm_abort = abort_comm;
  lib.group_start = counted<&Fake::group_start>;
  lib.group_end = counted<&Fake::group_end>;
  return lib;
}

NcclLib nonblocking_lib() {
  NcclLib lib = blocking_lib();
  lib.get_unique_id = unique_id;
  lib.comm_init_rank_config = init_rank;
  lib.comm_finalize = counted<&Fake::finalize, ncclComm_t>;
  return lib;
}

class NcclComms : public ::testing::Test {
 protected:
  void SetUp() override { fake = Fake(); }
};

TEST_F(NcclComms, BlockingInitAndCloseDestroyEveryCommunicator) {
  const NcclLib lib = blocking_lib();
  Communicators comms(lib, {4, 5, 6}, milliseconds(1000));
  ASSERT_TRUE(comms.init().ok());
  EXPECT_FALSE(comms.nonblocking());
  ASSERT_EQ(comms.handles().size(), 3u);
  for (ncclComm_t h : comms.handles()) EXPECT_NE(h, nullptr);
  EXPECT_TRUE(comms.close().ok());
  EXPECT_EQ(fake.destroy, 3);
  EXPECT_EQ(fake.finalize, 0);
  for (ncclComm_t h : comms.handles()) EXPECT_EQ(h, nullptr);
  EXPECT_TRUE(fake.aborted.empty());  // closed: nothing left for the destructor
}

TEST_F(NcclComms, AFailedBlockingInitDropsItsHandles) {
  fake.init_all = ncclSystemError;
  const NcclLib lib = blocking_lib();
  {
    Communicators comms(lib, {0, 1}, milliseconds(1000));
    const GpuStatus s = comms.init();
    ASSERT_TRUE(s.is_error());
    EXPECT_EQ(comms.describe(s, "communicator init"),
              "communicator init: ncclCommInitAll: ncclSystemError: unhandled system error");
    for (ncclComm_t h : comms.handles()) EXPECT_EQ(h, nullptr);
  }
  EXPECT_TRUE(fake.aborted.empty());  // not trusted, so not aborted either
}

TEST_F(NcclComms, AStalledRankIsNamedWithItsGpuAndTheOthersListed) {
  const NcclLib lib = blocking_lib();
  Communicators comms(lib, {7, 8, 9}, milliseconds(50));
  ASSERT_TRUE(comms.init().ok());
  fake.async = {{1, ncclInProgress}, {2, ncclInProgress}};
  const auto t0 = std::chrono::steady_clock::now();
  const GpuStatus s = comms.wait({}, t0 + milliseconds(50));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_TRUE(s.is_timeout());
  EXPECT_EQ(s.ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(comms.describe(s, "all_reduce of 64 MiB"),
            "timeout after 0.05 s: rank 1 (GPU 8) did not finish all_reduce of 64 MiB; also "
            "pending: rank 2 (GPU 9)");
}

TEST_F(NcclComms, AnAsyncErrorIsPinnedOnItsRank) {
  const NcclLib lib = blocking_lib();
  Communicators comms(lib, {0, 3}, milliseconds(1000));
  ASSERT_TRUE(comms.init().ok());
  fake.async = {{1, ncclRemoteError}};
  const GpuStatus s = comms.wait({}, std::chrono::steady_clock::now() + milliseconds(1000));
  ASSERT_TRUE(s.is_error());
  EXPECT_EQ(s.ranks, std::vector<int>{1});
  EXPECT_EQ(comms.describe(s, "all_gather of 1 MiB (warm-up)"),
            "all_gather of 1 MiB (warm-up): rank 1 (GPU 3): ncclRemoteError: remote process "
            "exited or there was a network error");
}

TEST_F(NcclComms, AbortReachesEveryCommunicatorOnce) {
  const NcclLib lib = blocking_lib();
  {
    Communicators comms(lib, {0, 1, 2}, milliseconds(1000));
    ASSERT_TRUE(comms.init().ok());
    comms.abort();
    EXPECT_EQ(fake.aborted, (std::vector<int>{0, 1, 2}));
    for (ncclComm_t h : comms.handles()) EXPECT_EQ(h, nullptr);
    // Aborted communicators are skipped by later waits.
    fake.async = {{0, ncclInProgress}};
    EXPECT_TRUE(comms.wait({}, std::chrono::steady_clock::now()).ok());
  }
  EXPECT_EQ(fake.aborted.size(), 3u);  // the destructor found nothing left to abort
}

TEST_F(NcclComms, TheDestructorAbortsWhatIsOpen) {
  const NcclLib lib = blocking_lib();
  {
    Communicators comms(lib, {0, 1}, milliseconds(1000));
    ASSERT_TRUE(comms.init().ok());
  }
  EXPECT_EQ(fake.aborted, (std::vector<int>{0, 1}));
}

TEST_F(NcclComms, NonblockingInitPairsTheGroupEvenWhenARankFails) {
  // No GPU has ordinal 1000: cudaSetDevice fails for rank 0 with or without a GPU here.
  const NcclLib lib = nonblocking_lib();
  Communicators comms(lib, {1000}, milliseconds(1000));
  const GpuStatus s = comms.init();
  EXPECT_TRUE(comms.nonblocking());
  ASSERT_TRUE(s.is_error());
  EXPECT_EQ(s.ranks, std::vector<int>{0});
  EXPECT_EQ(comms.describe(s, "communicator init")
                .rfind("communicator init: rank 0 (GPU 1000): cudaSetDevice: cudaError", 0),
            0u)
      << comms.describe(s, "communicator init");
  EXPECT_EQ(fake.group_start, 1);
  EXPECT_EQ(fake.group_end, 1);
  EXPECT_EQ(fake.init_rank, 0);
}

TEST(RankFailureText, WordsEveryKind) {
  const std::vector<int> devices{2, 3};
  const milliseconds timeout(20000);
  EXPECT_EQ(rank_failure_text(GpuStatus{}, devices, timeout, "x"), "");
  EXPECT_EQ(rank_failure_text(GpuStatus::timeout({0}), devices, timeout, "communicator init"),
            "timeout after 20 s: rank 0 (GPU 2) did not finish communicator init");
  EXPECT_EQ(rank_failure_text(GpuStatus::error("ncclGetUniqueId: ncclSystemError"), devices,
                              timeout, "communicator init"),
            "communicator init: ncclGetUniqueId: ncclSystemError");
  EXPECT_EQ(rank_failure_text(at_rank(1, GpuStatus::error("cudaStreamQuery: e")), devices, timeout,
                              "all_reduce of 8 B (check)"),
            "all_reduce of 8 B (check): rank 1 (GPU 3): cudaStreamQuery: e");
}

TEST(DrainStreams, NothingToDrainLeaksNothing) {
  EXPECT_TRUE(drain_streams({0, 1}, {{}, {nullptr, nullptr}}, milliseconds(10)).empty());
  EXPECT_TRUE(wait_streams({0, 1}, {nullptr, nullptr}, std::chrono::steady_clock::now()).ok());
}

}  // namespace
}  // namespace gpuvet::gpu
