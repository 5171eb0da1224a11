// NCCL's WARN messages, each in the wording of the NCCL release that prints it: failures are
// nccl-error evidence, the few notices are not.
#include "import/nccl_messages.h"

#include <gtest/gtest.h>

#include "gpuvet/facts.h"
#include "import/nccl_log.h"

namespace gpuvet::import {
namespace {

struct Line {
  const char* text;  // the whole log line, as NCCL prints it
  NcclWarnClass cls;
};

// Whole lines in the wording of the release named (NCCL's src/, `WARN(` at that tag).
const Line kLines[] = {
    // 2.18 transport/net_ib.cc: a fabric error, the peer's QP went away
    {"node1:4412:4530 [3] transport/net_ib.cc:1294 NCCL WARN NET/IB : Got completion from peer "
     "10.0.0.2<51234> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
     "::ffff:10.0.0.1 remoteGid ::ffff:10.0.0.2",
     NcclWarnClass::kError},
    // 2.21 misc/ibvwrap.cc
    {"node1:4412:4530 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_modify_qp failed with error "
     "No such device",
     NcclWarnClass::kError},
    {"node1:4412:4530 [0] misc/ibvwrap.cc:106 NCCL WARN Call to ibv_create_cq failed",
     NcclWarnClass::kError},
    // 2.7+ include/cudawrap/checks.h
    {"gpu-3:112:112 [1] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'",
     NcclWarnClass::kError},
    {"gpu-3:112:112 [1] init.cc:1322 NCCL WARN Cuda failure 1 'invalid argument'",
     NcclWarnClass::kError},
    // 2.18 transport/nvls.cc
    {"h100:77:77 [0] transport/nvls.cc:155 NCCL WARN Cuda failure 'operation not supported'",
     NcclWarnClass::kError},
    {"h100:77:77 [0] transport/nvls.cc:321 NCCL WARN Failed to bind NVLink SHARP (NVLS) "
     "Multicast memory of size 1073741824 : CUDA error 800 'operation not permitted'.",
     NcclWarnClass::kError},
    // 2.10 include/socket.h / 2.19 misc/socket.cc
    {"n2:9:9 [0] include/socket.h:423 NCCL WARN Net : Connection closed by remote peer "
     "10.1.1.3<41234>",
     NcclWarnClass::kError},
    {"n2:9:9 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
     "n3<33921>",
     NcclWarnClass::kError},
    // 2.19 proxy.cc
    {"n2:9:30 [0] proxy.cc:1496 NCCL WARN [Service thread] Error encountered progressing "
     "operation=Connect, res=3, closing connection",
     NcclWarnClass::kError},
    // 2.4-2.6 graph/paths.cc, a P2P failure
    {"x:1:1 [0] NCCL WARN P2P is disabled between NVLINK connected GPUs 0 and 1. This should "
     "not be the case given their connectivity, and is probably due to a hardware issue.",
     NcclWarnClass::kError},
    // 2.27 init.cc
    {"n:1:1 [0] init.cc:1922 NCCL WARN Mismatched NCCL version detected : rank 0 version 22703 "
     "rank 3 version 22105",
     NcclWarnClass::kError},
    // Slower paths.
    {"n:1:1 [0] init.cc:1180 NCCL WARN Cannot initialize CollNet, using point-to-point network "
     "instead",
     NcclWarnClass::kDegradation},
    {"n:1:1 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got non-fatal async event: "
     "port error(10)",
     NcclWarnClass::kDegradation},
    {"n:1:1 [0] NCCL WARN NET/IB : Got async event : port error", NcclWarnClass::kDegradation},
    {"n:1:1 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
     NcclWarnClass::kDegradation},
    // Notices.
    {"n:1:1 [0] misc/utils.cc:60 NCCL WARN Could not find real path of "
     "/sys/class/net/eth0/device",
     NcclWarnClass::kBenign},
    {"n:1:1 [0] init.cc:300 NCCL WARN NCCL_WORK_FIFO_DEPTH=1000 is being ignored because it is "
     "not a power of 2.",
     NcclWarnClass::kBenign},
    {"n:1:1 [0] transport/net_socket.cc:300 NCCL WARN NET/Socket : the total number of sockets "
     "is greater than the maximum allowed, setting NCCL_NSOCKS_PERTHREAD to 8",
     NcclWarnClass::kBenign},
};

TEST(NcclMessages, EachFormIsClassifiedAsNcclsSourceMeansIt) {
  for (const auto& l : kLines) {
    const std::string_view line = l.text;
    const std::size_t w = line.find("NCCL WARN ");
    ASSERT_NE(w, std::string_view::npos) << line;
    EXPECT_EQ(nccl_warn_class_name(classify_nccl_warn(line.substr(w + 10))),
              nccl_warn_class_name(l.cls))
        << line;
  }
}

TEST(NcclMessages, TheLogImporterTurnsEachClassIntoItsEventKind) {
  for (const auto& l : kLines) {
    Facts f;
    ASSERT_TRUE(import_nccl_log(std::string(l.text) + "\n", f).is_ok()) << l.text;
    ASSERT_FALSE(f.nccl_events.empty()) << l.text;
    const std::string& kind = f.nccl_events.back().kind;
    const bool p2p = kind == "p2p";
    switch (l.cls) {
      case NcclWarnClass::kError:
        EXPECT_TRUE(kind == "error" || p2p) << l.text;
        break;
      case NcclWarnClass::kDegradation:
        EXPECT_EQ(kind, "degraded") << l.text;
        break;
      case NcclWarnClass::kBenign:
        EXPECT_EQ(kind, "warn") << l.text;
        break;
    }
  }
}

TEST(NcclMessages, EveryExceptionHasWordsAndASource) {
  for (const auto& form : nccl_warn_exceptions()) {
    EXPECT_GE(form.words.size(), 8u) << form.words;
    EXPECT_FALSE(form.source.empty()) << form.words;
    EXPECT_NE(form.cls, NcclWarnClass::kError) << form.words;
    EXPECT_EQ(classify_nccl_warn(form.words), form.cls) << form.words;
  }
}

}  // namespace
}  // namespace gpuvet::import
