// import/nccl_messages.cc — the WARN forms of NCCL (2.4 to 2.29) that are not failures.
// Read off NCCL's source (`git grep 'WARN("' src` at each release tag); see the header.
#include "import/nccl_messages.h"

#include <array>

#include "core/text_scan.h"

namespace gpuvet::import {
namespace {

using C = NcclWarnClass;

constexpr std::array kExceptions = {
    // A slower path, chosen because the faster one did not come up.
    NcclWarnForm{"Cannot initialize CollNet, using point-to-point network instead", C::kDegradation,
                 "init.cc, 2.7+"},
    NcclWarnForm{"disabling CollNet", C::kDegradation, "init.cc, 2.8-2.12"},
    NcclWarnForm{"CollNet is not supported or fails to initialize", C::kDegradation,
                 "enqueue.cc, 2.9-2.18"},
    NcclWarnForm{"Disabling other rings", C::kDegradation, "graph/rings.cc, 2.4-2.6"},
    NcclWarnForm{"Got non-fatal async event", C::kDegradation,
                 "transport/net_ib.cc, 2.19+ (IB port state changes: port error, LID change)"},
    NcclWarnForm{"Got async event", C::kDegradation, "transport/net_ib.cc, 2.4-2.18"},
    NcclWarnForm{"TOPO/NET : Only matched", C::kDegradation, "graph/topo.cc, 2.23+"},
    NcclWarnForm{"Failed to open libibverbs.so", C::kDegradation,
                 "misc/ibvwrap.cc, 2.4-2.10 (no InfiniBand: sockets are used)"},
    // Settings clamped or ignored, details NCCL works around.
    NcclWarnForm{"setting it to", C::kBenign, "init.cc (channel counts)"},
    NcclWarnForm{"setting NCCL_NSOCKS_PERTHREAD to", C::kBenign, "transport/net_socket.cc"},
    NcclWarnForm{"is greater than the maximum allowed, setting to", C::kBenign,
                 "transport/net_socket.cc"},
    NcclWarnForm{"limiting to", C::kBenign, "init.cc (channel counts)"},
    NcclWarnForm{"limiting it to", C::kBenign, "init.cc (NCCL_MIN_NRINGS)"},
    NcclWarnForm{"Limiting value to", C::kBenign, "init.cc (NCCL_CGA_CLUSTER_SIZE)"},
    NcclWarnForm{"is being ignored", C::kBenign, "init.cc (NCCL_WORK_FIFO_DEPTH/BYTES)"},
    NcclWarnForm{"ignoring NCCL_MIN_NRINGS", C::kBenign, "init.cc, 2.4-2.6"},
    NcclWarnForm{"defaulting to", C::kBenign, "net.cc (NCCL_NET_MERGE_POLICY)"},
    NcclWarnForm{"Ignoring SHM locality", C::kBenign, "transport/shm.cc"},
    NcclWarnForm{"are set in CTAPolicy", C::kBenign, "init.cc 2.27+"},
    NcclWarnForm{"Could not find real path of", C::kBenign,
                 "graph/xml.cc, misc/utils.cc (a NIC or GPU path not in sysfs: a VM)"},
    NcclWarnForm{"Skipping nvlink detection", C::kBenign, "graph/topo.cc, 2.5-2.11"},
    NcclWarnForm{"No NVML, trying to use CUDA instead", C::kBenign, "graph/topo.cc, 2.4"},
    NcclWarnForm{"GDR Flush only supported on x86_64", C::kBenign, "transport/net_ib.cc"},
    NcclWarnForm{"MNNVL is not supported on this system", C::kBenign, "mnnvl.cc, 2.19-2.20"},
    NcclWarnForm{"Max rings reached", C::kBenign, "graph/rings.cc, 2.4"},
    NcclWarnForm{"plugin has incompatible version", C::kBenign, "plugin loading (not used)"},
    NcclWarnForm{"remote FLID configured as zero", C::kBenign, "transport/net_ib.cc"},
    NcclWarnForm{"GID table changed", C::kBenign, "transport/net_ib.cc"},
    NcclWarnForm{"is not a PCI device", C::kBenign, "graph/xml.cc (Azure vmbus NICs)"},
};

}  // namespace

NcclWarnClass classify_nccl_warn(std::string_view message) {
  for (const auto& form : kExceptions)
    if (text_scan::contains(message, form.words)) return form.cls;
  return NcclWarnClass::kError;
}

std::span<const NcclWarnForm> nccl_warn_exceptions() { return kExceptions; }

std::string_view nccl_warn_class_name(NcclWarnClass c) {
  switch (c) {
    case NcclWarnClass::kError:
      return "error";
    case NcclWarnClass::kDegradation:
      return "degradation";
    case NcclWarnClass::kBenign:
      return "benign";
  }
  return "error";
}

}  // namespace gpuvet::import
