// rules/catalog_table.h — the findings catalog and the symptom patterns: data, append-only.
//
// Ids never change; docs/findings.md is generated from these tables (`gpuvet findings
// --markdown`). Meaning and decision follow the seed article's tasks and patterns, in our
// words. The tables are constexpr so that every id a rule names is checked when gpuvet is
// compiled: a FindingId can only be made from a string that is a row's id, and the symptom
// rules are checked by static_assert. Immutable data: safe from any thread.
#pragma once

#include <iterator>
#include <string_view>

#include "gpuvet/diagnose.h"

namespace gpuvet::rules {

namespace catalog_detail {
using enum Severity;
using enum TriageStep;
using B = Bottleneck;
using A = Action;

inline constexpr CatalogEntry kCatalog[] = {
    {"gpu-missing", "Fewer GPUs than expected, or the driver sees none", "inventory", kCritical,
     kConfirm, B::kHardware,
     "fewer GPUs than --expect-gpus (or the baseline), or NVML/the driver fails to answer",
     "A missing GPU makes everything else noise: the job runs on fewer devices than planned or "
     "not at all. Causes are power, seating, BIOS settings or the driver.",
     "Stop and fix hardware, firmware or driver (reseat, check power cables, BIOS PCIe settings, "
     "driver load errors in the kernel log) before looking at software scaling.",
     "task 1", kByDiagnoseOnly, A::kDrain},
    {"pcie-link-degraded", "PCIe link narrower or slower than the device supports", "pcie",
     kWarning, kTopology, B::kHardware,
     "link width below the maximum, or generation below the maximum while the GPU is busy (idle "
     "GPUs downshift the generation on purpose)",
     "The GPU negotiated fewer lanes or a lower generation than it supports: host↔device "
     "bandwidth is cut (x8 is half of x16) and peer traffic over PCIe suffers too.",
     "Reseat the GPU, check the slot wiring and risers, the BIOS lane/bifurcation settings, and "
     "whether another device took lanes. Re-measure host↔device bandwidth afterwards.",
     "task 2", kByDiagnoseOnly, A::kReseatOrRma},
    {"pcie-replay-errors", "PCIe replays on the GPU link", "pcie", kWarning, kTopology,
     B::kHardware,
     "PCIe replay counter at or above pcie_replay_warn_count (warning); a few since driver load "
     "are info; replays on every GPU at once are one node-level finding",
     "Packets on the link had to be resent: a marginal link (riser, cable, slot, signal "
     "integrity). It costs bandwidth now and often precedes a GPU falling off the bus.",
     "Watch whether the counter rises under load; reseat or swap the riser/cable, check the slot, "
     "and plan maintenance if it keeps climbing.",
     "task 2, story 3", kByDiagnoseOnly, A::kReseatOrRma},
    {"gpu-pair-crosses-numa", "GPU pair connected through the CPU interconnect (SYS)", "topology",
     kInfo, kTopology, B::kComms,
     "two GPUs whose path is SYS: traffic between them crosses the socket interconnect (or, "
     "when both report one NUMA node, passes between PCIe root complexes inside the CPU)",
     "The two GPUs' PCIe trees meet only inside the CPU: usually on different sockets, so every "
     "gradient exchange crosses the socket interconnect; when both GPUs report the same NUMA "
     "node, at least through different root complexes (host bridges). Tightly synchronised "
     "jobs scale worse than on a pair behind one switch or host bridge.",
     "Keep communicating ranks on GPUs of the same socket where possible, give independent jobs "
     "to GPUs on different sockets, or use a server with a better GPU interconnect.",
     "task 3", kByDiagnoseOnly, A::kNone},
    {"p2p-unavailable", "Peer-to-peer access not available between GPUs", "topology", kWarning,
     kTopology, B::kComms,
     "P2P read/write status between a pair is not OK (NS, CNS, TNS, DR, U), nvbandwidth waives "
     "its peer tests, or NCCL fails to map a peer's memory (CUDA IPC / peer access refused); GNS "
     "(a model without P2P), CNS across sockets (SYS) and GeForce pairs off NVLink (no PCIe "
     "P2P in NVIDIA's driver) are info",
     "Without P2P, GPU↔GPU traffic bounces through host memory: more latency, less bandwidth, "
     "and more CPU memory traffic for every collective.",
     "Check the IOMMU and ACS settings, the virtualisation mode, the BIOS toggles and the "
     "driver/kernel combination; confirm with a peer bandwidth test.",
     "task 4", kByDiagnoseOnly, A::kFixConfig},
    {"nvlink-down", "NVLink down, missing or disabled", "nvlink", kWarning, kTopology, B::kComms,
     "NVLink expected (model, pairs, baseline) but links are down, fewer than expected, or "
     "disabled in the driver; bridged PCIe cards (H100 PCIe/NVL: 12 of 18 links, RTX A6000 or "
     "3090: 4) count against their bridges, and an unbridged card beside bridged ones is info",
     "GPUs that should talk over NVLink fall back to PCIe (or to the host), an order of "
     "magnitude slower for collectives.",
     "Check nvidia-smi nvlink -s, the fabric manager on NVSwitch systems, the driver parameter "
     "NvLinkDisable, and the bridges/baseboard; re-run the peer bandwidth test.",
     "task 4", kByDiagnoseOnly, A::kReseatOrRma},
    {"thermal-throttle", "GPU slowed down by temperature", "thermal", kWarning, kSystem,
     B::kThermal,
     "HW/SW thermal slowdown active or accumulated, or the temperature at its slowdown margin",
     "A hot GPU lowers its clocks. In a synchronised job the slowest GPU sets the pace of all of "
     "them, so one hot card slows the whole step.",
     "Improve airflow and fan curves, check for a blocked or failed fan, spread hot cards apart, "
     "or lower the power limit carefully.",
     "task 5", kByScale, A::kReseatOrRma},
    {"power-throttle", "GPU held back by its power limit", "power", kWarning, kSystem, B::kThermal,
     "hardware power brake/slowdown, a limit enforced below the requested one (an outside cap: "
     "BMC/IPMI, datacenter policy) busy or idle, a limit below the default of unknown origin, or "
     "a busy GPU capping at a limit whose default is unknown (warning); capping at the rated "
     "default under load, or at a lower limit an administrator set (requested = enforced < "
     "default), is info; the same fault on every GPU is one node-level finding",
     "Power holds the GPU's clocks back: its own limit under heavy load (it trades clock speed "
     "for watts), a limit lowered by an operator or enforced from outside (BMC, power policy), "
     "or a power-brake signal from the board, PSU or BMC, which slows even an idle GPU. The "
     "same brake or cap on every GPU at once comes from the node's power delivery, not a GPU.",
     "Check the enforced limit against the requested and the default one, the PSUs, the BMC's "
     "power capping and event log and the power brake signal; standardise power caps across "
     "nodes so one node is not the slow one.",
     "task 5", kByScale, A::kFixConfig},
    {"clocks-below-target", "Busy GPU running well below its maximum clock", "clocks", kWarning,
     kSystem, B::kThermal,
     "a busy GPU whose SM clock is well below its maximum with no benign reason (idle is benign)",
     "The GPU is working but not at full speed; in multi-GPU work it drags the others to its "
     "pace.",
     "Read the clock-event reasons (thermal, power, applications clocks, sync boost), fix the "
     "cause, and compare clocks across the GPUs of the node.",
     "task 5", kByDiagnoseOnly, A::kFixConfig},
    {"ecc-errors", "GPU memory errors (ECC, retired or remapped rows)", "memory-errors", kWarning,
     kSystem, B::kHardware,
     "correctable (warning) or uncorrectable (critical) ECC counts, a remapping failure or a "
     "pending retirement",
     "The GPU's memory reports errors. Correctable ones may not crash you today but correlate "
     "with marginal hardware; uncorrectable ones kill jobs and need attention.",
     "If counts rise, plan maintenance and keep the GPU away from latency-sensitive or long "
     "training jobs; pending remaps need a GPU reset; uncorrectable errors or a failed remap "
     "mean RMA.",
     "task 6", kByDiagnoseOnly, A::kWatch},
    {"xid-error", "NVIDIA driver Xid event in the kernel log", "driver", kWarning, kSystem,
     B::kHardware,
     "an NVRM Xid in the kernel log; severity by code and by how recent it is; one code on every "
     "GPU within a minute is one node-level finding",
     "The driver recorded a GPU fault. Some codes point at the hardware or its link (79: fallen "
     "off the bus, 48/94/95: memory), others usually at the application (13, 31, 43).",
     "Match the code with the table: hardware codes mean stop chasing performance and stabilise "
     "the node (reseat, cables, PSU, firmware, RMA); application codes mean look at the job that "
     "ran at that time.",
     "task 7", kByDiagnoseOnly, A::kWatch},
    {"cpu-saturated", "CPU cores pegged", "host-cpu", kWarning, kClassify, B::kCpu,
     "some cores near 100 % (data loaders, launch threads)",
     "Some CPUs are exhausted (data-loader workers or framework threads). GPU starvation often "
     "starts here: the GPUs wait for input or kernel launches.",
     "Make the loaders cheaper, use pinned memory wisely, adjust the worker count, and pin each "
     "process to the NUMA node of its GPU.",
     "task 8", kByDiagnoseOnly, A::kFixApplication},
    {"io-bound", "Storage is the limiter (iowait, I/O pressure, disk busy)", "host-io", kWarning,
     kClassify, B::kIo,
     "high iowait, tasks stalled on I/O a large share of the time (PSI), or a disk near 100 % "
     "utilisation",
     "Tasks wait on storage and the storage is saturated: more GPUs only make the queue deeper.",
     "Move the dataset to local storage, prefetch, shard and cache, or increase storage "
     "bandwidth before adding GPUs; stagger checkpoints.",
     "task 9", kByDiagnoseOnly, A::kFixApplication},
    {"network-saturated", "Network interface near its line rate", "network", kWarning, kClassify,
     B::kIo, "a NIC near its line rate",
     "A NIC running near its line rate is a hard ceiling when the dataset or the checkpoints "
     "are remote.",
     "Cache locally, compress and shard better, or upgrade the network/storage path before "
     "expecting multi-GPU gains.",
     "task 10", kByDiagnoseOnly, A::kFixApplication},
    {"gpu-shared-by-processes", "Several processes on one GPU while another is idle", "mapping",
     kWarning, kClassify, B::kMapping,
     "two or more compute processes on one GPU while another GPU is idle",
     "The job uses one GPU twice and leaves another unused: CUDA_VISIBLE_DEVICES, the launcher "
     "or the scheduler assignment is wrong.",
     "Fix the launch command, the environment or the scheduler assignment so each rank selects "
     "its own device. Do not touch NCCL before the second GPU is really used.",
     "task 11, symptom 2", kByDiagnoseOnly, A::kFixApplication},
    {"nccl-degraded-path", "NCCL sees a narrowed link or falls back to a slower transport", "nccl",
     kWarning, kTopology, B::kComms,
     "NCCL reports a narrowed link (e.g. x8) or falls back from P2P/NVLink to SHM, host or "
     "sockets",
     "NCCL's own topology detection shows the plumbing is degraded: collectives will run on the "
     "slower path whatever the tuning.",
     "Fix the PCIe/P2P problem first, then re-run the scaling test; no bucket size compensates "
     "for missing lanes.",
     "task 12", kByDiagnoseOnly, A::kFixConfig},
    {"memory-imbalance", "One GPU near full memory while a peer is nearly empty", "mapping",
     kWarning, kClassify, B::kMapping,
     "one GPU near full memory while a peer is nearly empty (info on nodes of more than 2 GPUs "
     "without NCCL evidence of one job)",
     "The load is not spread: wrong device placement, an unsharded model, or a rank mismatch "
     "puts everything on one GPU, which heads for OOM while the other idles.",
     "Fix the device assignment, check that each rank uses its intended GPU, and consider "
     "sharding if model capacity is the goal.",
     "task 13", kByDiagnoseOnly, A::kFixApplication},
    {"numa-misbinding", "GPU process bound to the wrong NUMA node", "mapping", kWarning, kTopology,
     B::kMapping, "a GPU process bound to CPUs or memory of another NUMA node than its GPU",
     "The process feeding a GPU runs or allocates on the other socket: every host↔device copy "
     "and every input batch pays remote memory access.",
     "Pin each rank to the CPUs and memory of its GPU's NUMA node (numactl --cpunodebind/"
     "--membind, or the launcher's binding options).",
     "task 14", kByDiagnoseOnly, A::kFixApplication},
    {"h2d-bandwidth-low", "Measured host↔device bandwidth well under the link's", "measurement",
     kWarning, kTopology, B::kComms,
     "measured host↔device bandwidth well under what the link generation and width allow",
     "Copies between host and GPU are slower than the PCIe link should carry: a degraded link, "
     "a remote NUMA node, pageable memory or a shared switch/root port.",
     "Check the link width/generation and the NUMA placement of the test, then re-measure with "
     "pinned memory on the GPU's node.",
     "measurement", kByBench, A::kReseatOrRma},
    {"p2p-bandwidth-low", "Measured GPU↔GPU bandwidth well under the path's", "measurement",
     kWarning, kTopology, B::kComms,
     "measured GPU↔GPU bandwidth well under the path's expectation (e.g. routed via host)",
     "Peer copies run slower than the path between the GPUs should allow: P2P is off, routed "
     "through the host, or the link is degraded.",
     "Check P2P status, ACS/IOMMU, NVLink state and the PCIe links of both GPUs; compare with a "
     "healthy node of the same model.",
     "measurement", kByBench, A::kFixConfig},
    {"scaling-inefficient", "Adding GPUs does not add throughput", "scaling", kWarning, kConfirm,
     B::kComms,
     "N-GPU throughput / (N × 1-GPU throughput) under the threshold, with the bottleneck class",
     "The step on N GPUs is not N times faster: synchronisation (all-reduce), waiting at "
     "barriers or a shared resource eats the gain. Utilisation counts time spent blocked in "
     "communication as busy.",
     "Prove where the time goes (compute vs communication share), validate P2P/NVLink/topology, "
     "then raise the per-GPU batch (or accumulate gradients), tune buckets and overlap "
     "communication with compute.",
     "symptom 1", kByScale, A::kFixApplication},
    {"tail-latency-amplified", "Multi-GPU tail latency much worse than one GPU", "scaling",
     kWarning, kConfirm, B::kComms, "multi-GPU p99 (or p99/p50) much worse than single-GPU",
     "Cross-GPU communication sits on the critical path of every request; queueing, thermal "
     "drift and OS scheduling turn into tail latency. Throughput may improve while p99 gets "
     "worse.",
     "Keep latency-sensitive endpoints on one GPU per request path; reserve multi-GPU for batch "
     "and offline work, or redesign aggregation and request routing.",
     "symptom 6, story 2", kByScale, A::kFixApplication},
    {"clocks-degrade-over-time", "Clocks or throughput fall over minutes of load", "thermal",
     kWarning, kSystem, B::kThermal,
     "over a GPU's busy samples cut into windows (medians), k = max(2, windows / 4) consecutive "
     "windows after the best one have an SM clock clock_drift_fraction (10 %) or more under it, "
     "or (scale --duration) the node's own throughput does; info when sw_power_cap alone is "
     "active before and after (the power limit at work)",
     "The node is fast at first and then heats up or hits a power limit; the step time drifts "
     "and multi-GPU jobs go at the pace of the slowest GPU.",
     "Watch time per step and clocks together; improve airflow, standardise power caps and "
     "BIOS/fan settings; check again after ten minutes of load.",
     "symptom 3", kByScale | kByWatch, A::kFixConfig},
    {"heterogeneous-gpus", "GPUs in the box differ", "inventory", kWarning, kTopology, B::kHardware,
     "GPUs in one box differ (model, VBIOS, power limit, ECC mode, maximum clocks)",
     "Synchronised work runs at the pace of the slowest GPU; mismatched firmware or power caps "
     "also explain why identical-looking servers perform differently.",
     "Standardise firmware, power limits and ECC mode across the node (and the fleet); keep "
     "different models out of the same synchronised job.",
     "symptom 7", kByDiagnoseOnly, A::kFixConfig},
    {"gpu-unresponsive", "GPU does not answer (timed out, lost, fell off the bus)", "inventory",
     kCritical, kConfirm, B::kHardware,
     "a GPU probe timed out, the GPU is lost, or it fell off the bus (a kernel-log line older "
     "than xid_window_h or from an earlier boot is info: history)",
     "This is not a tuning problem but stability: power, PCIe integrity, overheating or failing "
     "hardware. The other GPUs are still reported.",
     "Stop chasing performance. Stabilise the node: reseat, swap cables, check PSU headroom, "
     "update firmware, and consider an RMA; drain the node meanwhile.",
     "task 7", kByDiagnoseOnly, A::kDrain},
    {"utilization-misleading", "High utilisation but the GPU does little", "utilization", kWarning,
     kConfirm, B::kComms,
     "utilisation high while power, clocks or SM activity show the GPU does little",
     "\"Utilisation\" only says a kernel was running; a GPU spinning in a collective or waiting "
     "at a barrier reports 100 % while drawing little power.",
     "Measure time per step or tokens per second, not utilisation; look for the rank or the "
     "collective everyone waits on.",
     "symptom 1", kByDiagnoseOnly, A::kFixApplication},
    {"fabric-degraded", "NVSwitch/NVLink fabric not healthy", "nvlink", kWarning, kTopology,
     B::kComms,
     "fabric manager state not completed, fabric registration failed, or NVLink bandwidth well "
     "under its expectation",
     "On NVSwitch systems the GPUs cannot use the fabric until the fabric manager has "
     "registered them; a partial fabric means slow or failing peer traffic.",
     "Check the nvidia-fabricmanager service and its log, the NVSwitch health, and that the "
     "driver and fabric manager versions match.",
     "task 4", kByDiagnoseOnly, A::kFixConfig},
    {"acs-blocks-p2p", "PCIe ACS or the IOMMU forces peer traffic through the root complex", "pcie",
     kWarning, kTopology, B::kComms,
     "ACS redirect enabled on bridges between GPUs, or an active IOMMU translating peer traffic",
     "Access Control Services (or the IOMMU) redirect peer requests up to the root complex: P2P "
     "is slow or refused, typically after a BIOS or board change.",
     "Disable ACS redirect on the GPU switches for bare-metal training (BIOS, or setpci at "
     "boot), or use iommu=pt; re-check P2P with a bandwidth test.",
     "task 4, story 3", kByDiagnoseOnly, A::kFixConfig},
    // ---- added by gpuvet beyond the minimum catalog
    {"gpu-idle-while-peer-busy", "One GPU busy while another sits idle", "mapping", kWarning,
     kClassify, B::kMapping,
     "a busy GPU next to an idle GPU that runs no process (warning on a 2-GPU box or when NCCL "
     "shows one job; info on bigger, possibly shared nodes)",
     "Only some GPUs work: a rank crashed or never started, or CUDA_VISIBLE_DEVICES/the "
     "launcher gave every rank the same device.",
     "Validate the rank → device mapping (nvidia-smi pmon), enforce it in the launcher, and make "
     "the job fail fast when a rank exits.",
     "symptom 2", kByDiagnoseOnly, A::kFixApplication},
    {"nccl-error", "NCCL timeout or error", "nccl", kCritical, kConfirm, B::kComms,
     "NCCL logs a timeout, an error or an abort (wrong results are data-corruption)",
     "A rank raised an exception or OOM and left, and the others wait in the collective until "
     "the watchdog fires; network jitter or P2P failures can contribute.",
     "Enable robust error handling and timeouts, make all ranks abort together, collect per-rank "
     "logs, and simplify the topology while debugging.",
     "symptom 4", kByDiagnoseOnly, A::kFixApplication},
    {"memory-near-full", "Every GPU's memory is nearly full", "memory", kInfo, kClassify,
     B::kMemory, "two or more GPUs, all with memory nearly full",
     "Data parallelism does not pool memory: every GPU holds the whole model. Adding a GPU does "
     "not make a bigger model fit (unless the framework preallocates on purpose, like an "
     "inference server).",
     "If the job OOMs: shard the model (tensor/pipeline/expert parallel), checkpoint "
     "activations, quantise, or use one bigger GPU.",
     "symptom 5", kByDiagnoseOnly, A::kNone},
    {"tune-framework", "Plumbing is sound: tune the framework", "framework", kInfo, kFramework,
     B::kNone,
     "scaling is inefficient because of communication and no topology or hardware finding "
     "is open",
     "With the physical plumbing validated, the remaining cost is how the job communicates.",
     "Raise the per-GPU batch or accumulate gradients, fuse small tensors and tune DDP bucket "
     "sizes, overlap communication with compute, use mixed precision; only then NCCL settings.",
     "triage step 5", kByScale, A::kFixApplication},
    {"driver-slow", "The driver takes seconds to answer", "driver", kWarning, kConfirm,
     B::kHardware, "an NVML call (init or per-GPU query) slower than the threshold",
     "NVML answers slowly when the driver is struggling: persistence mode off on a cold GPU, a "
     "GPU that is hanging, or a firmware (GSP) problem. Monitoring and job start-up stall too.",
     "Enable the persistence daemon, look for Xid events and GPU resets in the kernel log, and "
     "compare with a healthy node.",
     "task 1", kByDiagnoseOnly, A::kFixConfig},
    {"baseline-deviation", "The node differs from its server model's baseline", "baseline",
     kCritical, kTopology, B::kHardware,
     "gpuvet gate: a value the baseline pins (GPU count or model, a pair's path or P2P status, "
     "PCIe max generation or width, current width, NUMA node, NVLinks up, fabric, ECC mode: "
     "critical; driver, VBIOS, power limit, bus id: warning) differs on this node",
     "This node is not what every healthy node of its model is. A replaced board, a moved card, "
     "a link that trained narrow or a firmware change alters the paths jobs take, even when each "
     "value looks plausible alone (story 3: P2P silently lost on a board revision).",
     "Quarantine (drain) the node, compare it with a passing node of the model (gpuvet facts on "
     "both), fix or replace the part, and gate it again before it returns. If the baseline is "
     "wrong for a new, accepted revision, capture a new baseline for that revision.",
     "story 3", kByDiagnoseOnly, A::kDrain},
    {"baseline-bandwidth-below-floor", "Measured bandwidth below the baseline's floor", "baseline",
     kCritical, kClassify, B::kHardware,
     "gpuvet gate --profile full: a host↔device, peer or all-reduce bandwidth measured under the "
     "baseline's [[floor]] for that subject",
     "The link carries less than healthy nodes of this model do, though the fingerprint may "
     "match: a degraded riser, a clock or power cap, ACS or IOMMU settings, a noisy neighbour.",
     "Re-run the bench on the idle node to rule out a transient; if it stays low, drain the node "
     "and look at the diagnose findings for the link (PCIe, P2P, ACS, clocks).",
     "story 3, measurement", kByDiagnoseOnly, A::kDrain},
    {"baseline-value-unknown", "A value the baseline pins could not be read on this node",
     "baseline", kWarning, kConfirm, B::kUnknown,
     "gpuvet gate: the node reports no value (null) for something the baseline checks, or a "
     "floor was not measured",
     "The gate cannot tell whether the node conforms: the verdict is unknown, not pass. The "
     "driver or a probe failed, or the input (a capture) lacks that output.",
     "Look at the notes for why the value is missing (a hung NVML call, a missing file in the "
     "bundle), fix that, and gate again; do not return the node to service on an unknown "
     "verdict.",
     "story 3", kByDiagnoseOnly, A::kDrain},
    {"pcie-aer-errors", "PCIe AER errors on a GPU's link or the node's PCIe", "pcie", kWarning,
     kTopology, B::kHardware,
     "the kernel log reports PCIe AER errors on a GPU or a port above it: uncorrectable fatal "
     "(critical; warning on a device known to be off every GPU's path), uncorrectable non-fatal "
     "(warning), corrected at or above "
     "pcie_aer_corrected_warn_count (warning; fewer, or on another device: info); or lspci shows "
     "AER status bits set and not masked on a GPU or a bridge above it (UnsupReq and "
     "AdvNonFatalErr alone, common on healthy ports, are ignored)",
     "The PCIe link of the GPU, or a port or switch on its path, reports transmission errors. "
     "Corrected ones are resent at a bandwidth cost and often come before worse; uncorrectable "
     "ones lose data and can reset the link or make the GPU fall off the bus.",
     "Reseat the GPU and its riser or cables, check the slot, the switch and the BIOS PCIe "
     "settings (forced speed, ASPM) and firmware; watch whether the count rises under load. A "
     "fatal error means drain the node until the link is fixed.",
     "task 2", kByDiagnoseOnly, A::kReseatOrRma},
    {"iommu-fault", "The IOMMU blocked a device's DMA", "pcie", kWarning, kTopology, B::kComms,
     "the kernel log has IOMMU faults (Intel DMAR \"Request device\", AMD-Vi IO_PAGE_FAULT) on a "
     "GPU's bus id or from the nvidia driver (warning); on another or an unnamed device (info)",
     "The IOMMU refused a memory access of the device because the address is not mapped for it. "
     "With GPUs this is usually peer-to-peer or GPUDirect RDMA traffic under a translating IOMMU "
     "(not iommu=pt): the transfer fails or hangs. Without P2P, a driver or DMA bug.",
     "Use iommu=pt (or turn the IOMMU off) on bare-metal training nodes, disable ACS redirect on "
     "the GPU switches, and re-run the peer bandwidth test; if faults come without P2P, update "
     "the driver and look at the job that ran at that time.",
     "task 4", kByDiagnoseOnly, A::kFixConfig},
    {"data-corruption", "A benchmark moved wrong data", "data-integrity", kCritical, kConfirm,
     B::kHardware,
     "a copy or collective whose data check failed: nccl-tests #wrong of 1 or more, nvbandwidth's "
     "pattern check (\"Invalid value when checking the pattern\"), a gpuvet bench copy or "
     "collective with wrong data, a gpuvet scale GEMM whose sampled outputs miss the fp32 "
     "reference or a scale collective whose elements miss the exact sum",
     "What arrived is not what was sent: a GPU, its memory, a link (PCIe, NVLink, NVSwitch) or "
     "the driver path corrupts bytes. Jobs on this node can compute with wrong gradients or "
     "write bad checkpoints without any error; how fast the link is no longer matters, and the "
     "test's bandwidth figures are not judged.",
     "Drain the node. Re-run the check to see whether it repeats and on which GPU or pair; look "
     "for Xid and ECC errors on those GPUs, reseat or swap the GPU, riser or NVLink bridge, and "
     "RMA what keeps failing. No tuning or benchmarking until the check passes.",
     "measurement", kByBench | kByScale, A::kDrain},
    {"dcgm-diag-failed", "NVIDIA's DCGM diagnostic failed a test", "dcgm", kCritical, kConfirm,
     B::kHardware,
     "a `dcgmi diag` test reported Fail (critical; a Deployment check of the software setup "
     "such as Environment Variables, Persistence Mode or Graphics Processes: warning) or Warn "
     "(warning), on the GPUs it names",
     "NVIDIA's own validation suite ran the test and it did not pass: on a Hardware, "
     "Integration or Stress test (GPU Memory, PCIe, Targeted Stress/Power, Memtest, Pulse Test) "
     "the GPU, its memory, its link or its power delivery failed under a controlled load; a "
     "Deployment failure means the software setup keeps CUDA jobs from running as intended. "
     "DCGM's message says which and why (a CUDA initialisation error on every GPU is usually "
     "the setup, e.g. fabric manager not running, not the GPUs).",
     "Read DCGM's message for the GPU named. For hardware tests, drain the node, re-run the "
     "same level on that GPU (`dcgmi diag -r 3 -i N`), then reseat or RMA what fails again; "
     "for deployment checks, fix the setting it names and re-run.",
     "task 1", kByDiagnoseOnly, A::kDrain},
    {"dcgm-health-incident", "NVIDIA's DCGM health watch reports an incident", "dcgm", kWarning,
     kSystem, B::kHardware,
     "`dcgmi health -c` lists a Warning (warning) or Failure (critical) for a subsystem with no "
     "closer gpuvet finding (SM, InfoROM, driver, NVLink errors, NvSwitch, CPU, ConnectX); PCIe "
     "replay, ECC, thermal and power incidents fire pcie-replay-errors, ecc-errors, "
     "thermal-throttle and power-throttle instead",
     "DCGM's background health watches saw a subsystem leave its healthy range since they were "
     "enabled: the message names the counter or event (NVLink CRC errors, InfoROM corrupt, "
     "driver errors, an NvSwitch fatal error).",
     "Follow DCGM's message for the GPU or switch named; a Failure means drain the node and run "
     "`dcgmi diag -r 3` on it; a Warning means watch whether it repeats after `dcgmi health -c` "
     "is checked again.",
     "task 7", kByDiagnoseOnly, A::kWatch},
    {"gpu-lags-peers", "One busy GPU runs slower than its busy peers", "thermal", kWarning, kSystem,
     B::kThermal,
     "a busy GPU's SM clock (as a share of its maximum when known) has a median under "
     "gpu_lags_peers_fraction (0.9) of the median of the other busy GPUs of the same model, over "
     "a time series or, without one, in a single reading",
     "In synchronised training every step waits for the slowest rank: one GPU that is hotter, "
     "power-capped or slowed by its board makes all the others idle at each all-reduce, so the "
     "node runs at that GPU's pace while its utilisation looks as high as theirs.",
     "Look at that GPU's clock-event reasons, temperature and power beside its peers' (gpuvet "
     "watch): a thermal reason is airflow, a fan or a blocked slot; a power reason its power limit "
     "or the PSU/BMC; hw_slowdown the board. Fix it or take it out of the job's GPU list.",
     "story 2", kByScale | kByWatch, A::kFixConfig},
    {"thermal-margin-shrinking", "The thermal margin shrinks under load, towards slowdown",
     "thermal", kWarning, kSystem, B::kThermal,
     "over a time series under load, a GPU's T.Limit margin (or its distance to the slowdown "
     "temperature) falls by 8 °C or more from the first window to the last, is still falling "
     "(2 °C or more over the second half: a warm-up that settled is not) and ends within "
     "thermal_margin_c + 10 °C of the slowdown point",
     "The GPU keeps heating under steady load: it has not reached equilibrium, and when the margin "
     "reaches zero its clocks drop; a multi-GPU job then goes at the pace of that GPU.",
     "Check airflow and fan curves for this slot, the inlet temperature and what runs beside it; "
     "watch it for longer (gpuvet watch --duration 1200) to see where it settles.",
     "symptom 3", kByScale | kByWatch, A::kWatch},
    {"throttle-appears-over-time", "A clock limit appears only after minutes of load", "thermal",
     kWarning, kSystem, B::kThermal,
     "over a time series under load (at least a minute), a clock-event reason absent from the "
     "first window is active in at least half of the last quarter's busy samples; info for "
     "sw_power_cap (the power limit reached as the chip warms), warning for thermal and hardware "
     "slowdowns",
     "A one-off reading at the start of a job looks healthy; the limit comes with heat: a thermal "
     "slowdown as the GPU warms, a hardware slowdown or power brake from the board or PSU once "
     "the whole node draws full power.",
     "Read the reason: thermal → airflow and fans; hw_slowdown/power brake → PSU, power cables "
     "and the BMC's event log; sw_power_cap alone is the limit doing its job. Measure the step "
     "time after ten minutes, not in the first minute.",
     "symptom 3", kByScale | kByWatch, A::kFixConfig},
    {"errors-during-watch", "Error counters rose while the GPUs were watched", "health", kWarning,
     kSystem, B::kHardware,
     "between a GPU's first and last sample: uncorrected ECC errors or an NVLink lost "
     "(critical); PCIe replays at or above pcie_replay_warn_count (warning); fewer replays or "
     "corrected ECC errors (info)",
     "The counters moved under your eyes, so the fault is live, not history: an uncorrected ECC "
     "error kills the job that touched the memory, a lost NVLink reroutes or fails peer traffic, "
     "and a replay storm means a marginal PCIe link retransmitting.",
     "Uncorrected ECC or an NVLink lost: drain the node and follow the Xid and remapping "
     "findings; replays: reseat the GPU or riser and compare with its slot neighbours.",
     "task 7", kByWatch, A::kReseatOrRma},
    {"launch-job-failed", "A job of a per-GPU launch failed first", "launch", kCritical, kConfirm,
     B::kUnknown,
     "gpuvet launch: the first job that exited non-zero, was killed by a signal or could not "
     "start (the others were stopped unless --keep-going)",
     "One of the independent per-GPU jobs ended in error. Its exit code is gpuvet's; the others "
     "were stopped at once rather than left running (or waiting on a collective) until a "
     "timeout. The first failure is the cause; later ones are usually its consequence.",
     "Read the job's log tail in the evidence (and its whole log under --log-dir); an exit by "
     "SIGKILL or code 137 with no message is often the kernel's OOM killer (dmesg); an Xid at "
     "that time points at the GPU (gpuvet diagnose).",
     "symptom 4", kByDiagnoseOnly, A::kFixApplication},
    {"launch-gpu-mismatch", "A job runs on another GPU than it was given", "launch", kWarning,
     kTopology, B::kMapping,
     "gpuvet launch: NVML lists a process of a job on a GPU other than the one in its "
     "CUDA_VISIBLE_DEVICES",
     "The job's code or a library picks its device itself (cuda:0 after resetting "
     "CUDA_VISIBLE_DEVICES, a hard-coded index, a framework reading LOCAL_RANK): two jobs then "
     "share a GPU while another idles, and its CPU binding is for the wrong node.",
     "Let the job use the device it is given (device 0 under CUDA_VISIBLE_DEVICES=<UUID>); do "
     "not override CUDA_VISIBLE_DEVICES inside it; run with --strict to stop at the first "
     "mismatch.",
     "task 11, symptom 2", kByDiagnoseOnly, A::kFixApplication},
    {"launch-binding-mismatch", "A job is not bound to its GPU's NUMA node as intended", "launch",
     kWarning, kTopology, B::kCpu,
     "gpuvet launch: a job's CPU or memory binding could not be applied, or /proc shows another "
     "one than intended (Cpus_allowed_list, the memory policy in numa_maps), or its GPU's node "
     "is unknown; with --in-task, CPUs or a memory policy the scheduler gave a task that are "
     "off its GPU's node",
     "The job's threads or memory may sit on the far socket: host↔device copies and data "
     "loading cross the CPU interconnect, the classic cause of one job running slower than its "
     "twin on the other GPU.",
     "Look at the evidence: a cpuset (container, Slurm step) that excludes the node's CPUs or "
     "memory needs widening; a GPU without NUMA node needs the BIOS/ACPI tables (SRAT) fixed "
     "or the sysfs numa_node read; under srun, bind the tasks (--cpu-bind, --mem-bind=local) "
     "or let `launch --in-task --bind` do it; run with --strict to refuse to start unbound.",
     "task 3, task 14", kByDiagnoseOnly, A::kFixConfig},
    {"launch-processes-left-behind", "A job left processes running after it ended", "launch",
     kWarning, kFramework, B::kMapping,
     "gpuvet launch: processes of a job (data-loader workers, a re-parented child) still "
     "alive after its main process ended; gpuvet killed them",
     "Orphaned workers keep GPU memory and CPU after the job that made them is gone: the "
     "next job on that GPU runs out of memory or slows down, and nobody owns them any more.",
     "Make the job wait for its workers (join data-loader workers, close pools) and exit "
     "cleanly; under a scheduler, use cgroup-based process tracking.",
     "task 13", kByDiagnoseOnly, A::kFixApplication},
    {"launch-job-not-on-gpu", "NVML never showed a job on any GPU", "launch", kInfo, kConfirm,
     B::kUnknown,
     "gpuvet launch: within --check-timeout (or its lifetime) NVML listed no process of the "
     "job on any GPU",
     "The job did not create a CUDA context while it was watched: it was still loading, it ran "
     "on the CPU only, or gpuvet cannot map NVML's PIDs (it runs in another PID namespace).",
     "If the job should use its GPU, check that it sees one (CUDA_VISIBLE_DEVICES, the "
     "container's device list) and that its framework is built with CUDA.",
     "task 11", kByDiagnoseOnly, A::kNone},
    {"collective-hang-culprit", "A distributed job hangs: these ranks did not arrive",
     "collectives", kCritical, kConfirm, B::kNone,
     "per process group, from the ranks' PyTorch logs, flight-recorder dumps or NCCL RAS: a "
     "rank whose last enqueued collective is below the one its peers wait in (did not arrive), "
     "one that entered it and never completed while its peers did (stuck inside), a few ranks "
     "one collective ahead of all others (ran ahead), a rank whose watchdog froze, a rank that "
     "NCCL RAS lists as missing or dead, or the ranks that left no state while every other rank "
     "waits inside the same collective",
     "A collective completes only when every rank of its group has entered it; the ranks named "
     "here are the ones the others wait for. The others' timeouts are the symptom, not the "
     "cause: what stopped the named rank is in its own log (an exception, out of memory, a CUDA "
     "error), on its GPU (an Xid), or in the job's code path (a rank that ran ahead).",
     "Look at the named rank first: the end of its own log, the kernel log of its node at that "
     "time (Xid), then `gpuvet gate --profile full` on its node. An Xid or a lost GPU: drain the "
     "node. An error in its log: fix it, and make a failing rank abort the whole job. A rank "
     "that ran ahead: find the branch that issues that collective on some ranks only.",
     "symptom 4", kByDiagnoseOnly, A::kDrain},
    {"collective-hang-frozen-process", "A distributed job hangs with its processes frozen",
     "collectives", kCritical, kConfirm, B::kNone,
     "every rank's last enqueued collective is -1 when the watchdog fires, or the processes' "
     "watchdog itself stopped (heartbeat monitor, \"watchdog got stuck\")",
     "No rank was waiting in a collective: the processes stopped before reaching one, or hold a "
     "lock the watchdog needs. This is not a network or NCCL problem: a filesystem stall, a data "
     "loader, a deadlock on the GIL or a CUDA call that never returns.",
     "Take stack dumps of the live processes (py-spy dump --pid, gdb), look at I/O pressure on "
     "the nodes (PSI, the shared filesystem) and at what the code does before its first "
     "collective; do not tune NCCL for this.",
     "symptom 4", kByDiagnoseOnly, A::kFixApplication},
    {"collective-hang-transport", "A distributed job hangs on its first collective", "collectives",
     kCritical, kConfirm, B::kComms,
     "every rank enqueued a collective and no rank ever completed one (last completed -1 "
     "everywhere): the first collective never finished",
     "The ranks all arrived, so the code is not at fault: the data never moved. Peer access "
     "between the GPUs (P2P through PCIe switches with ACS, an IOMMU not in passthrough), the "
     "network between nodes (a wrong interface, a firewall, RDMA not usable) or a fabric manager "
     "that is not running — often while nvidia-smi topo -p2p still says OK.",
     "Run `gpuvet diagnose` on each node (P2P, ACS and IOMMU checks) and `gpuvet bench` for the "
     "P2P truth table; try the job with NCCL_P2P_DISABLE=1 (one node) or NCCL_IB_DISABLE=1 / "
     "NCCL_SOCKET_IFNAME (several) to find the transport that fails, then fix that path.",
     "symptom 4", kByDiagnoseOnly, A::kFixConfig},
    {"collective-hang", "A distributed job hangs and no single rank stands out", "collectives",
     kCritical, kConfirm, B::kNone,
     "a watchdog timeout (or NCCL RAS errors) where every rank whose state is known sits inside "
     "the same collective and none completed it, with no rank missing and no Xid on their GPUs; "
     "warning: NCCL RAS reports different collective counts in one query (outlier ranks named)",
     "Every rank is inside the collective and none finished it: the data stopped moving after "
     "the job had worked, which points at the network or NVLink fabric, or at a GPU that hung "
     "without an error in these inputs. One NCCL RAS query with different counts can also be a "
     "collective still in flight.",
     "Gather what is missing: every rank's log, the flight-recorder dumps "
     "(TORCH_NCCL_DUMP_ON_TIMEOUT=1), `ncclras` twice a few seconds apart while the job hangs, "
     "and the kernel log of every node; check the fabric (nvidia-smi nvlink -s, the NICs' error "
     "counters) and run `gpuvet culprit` again on all of it.",
     "symptom 4", kByDiagnoseOnly, A::kWatch},
    {"job-breakdown", "Where the job's step time goes", "job", kInfo, kConfirm, B::kNone,
     "a PyTorch profiler trace, NCCL Inspector output or a step-time log of the job was given",
     "The job's own measure: steps, time per step (p50, p95, p99) and, from a trace, each step "
     "split into compute, exposed communication, copies and idle, with the causes of idle. This "
     "is the article's first rule (measure what counts), on the user's real job rather than a "
     "synthetic load.",
     "Read the largest share first: idle (the GPU waits on the host), exposed communication "
     "(the GPUs wait on each other), or compute (the GPU itself). The other job findings say "
     "which one is out of line.",
     "task 1, measurement", kByDiagnoseOnly, A::kNone},
    {"job-input-starved", "The GPU waits for input", "job", kWarning, kClassify, B::kIo,
     "the GPU has nothing queued while the host is in the data loader for at least "
     "job_input_idle_fraction of the step (median over steps)",
     "Each step starts by waiting for the next batch: data loading and preprocessing on the host "
     "are slower than the GPU. More GPUs make it worse, since each one waits the same.",
     "Raise the DataLoader's num_workers, use pin_memory and prefetch_factor, move decoding and "
     "augmentation off the critical path (or to the GPU), cache or shard the dataset on local "
     "storage; check cpu-saturated and io-bound findings on the node.",
     "task 8, symptom 1", kByDiagnoseOnly, A::kFixApplication},
    {"job-launch-bound", "Kernels are too small: the host's launches set the pace", "job",
     kWarning, kClassify, B::kCpu,
     "idle gaps between kernels no longer than a launch (50 µs), or during which the host was "
     "launching the next kernel, add up to at least job_launch_idle_fraction of the step "
     "(median over steps)",
     "The GPU finishes each kernel before the host has launched the next: many short kernels, "
     "each paying the launch latency. The GPU is idle in small slices that utilisation hides.",
     "Capture the step as a CUDA graph (torch.cuda.graphs, torch.compile mode=\"reduce-overhead\"), "
     "fuse small operations (torch.compile), raise the batch size per GPU.",
     "task 8, symptom 1", kByDiagnoseOnly, A::kFixApplication},
    {"job-host-sync", "The host waits for the GPU inside the step", "job", kWarning, kClassify,
     B::kCpu,
     "after host synchronisations (stream or device sync, a blocking copy, `.item()`) the GPU "
     "stays idle for at least job_sync_idle_fraction of the step (median over steps)",
     "The step drains the GPU's queue to read a value back (a loss printed, a metric, a Python "
     "branch on a tensor), then the GPU waits while the host refills it. Pageable copies are "
     "synchronous too.",
     "Read values back every N steps, keep metrics on the GPU, copy with non_blocking=True from "
     "pinned memory, and remove torch.cuda.synchronize() from the loop.",
     "task 8", kByDiagnoseOnly, A::kFixApplication},
    {"job-comm-exposed", "Communication is not hidden behind compute", "job", kWarning,
     kClassify, B::kComms,
     "a communication kernel runs with no compute kernel beside it for at least "
     "job_comm_exposed_fraction of the step (median over steps)",
     "The GPUs wait on each other: gradients are exchanged after the compute instead of during "
     "it. Many small collectives are latency-bound; a slow link or a straggler makes it worse.",
     "Overlap communication with compute (DDP bucket_cap_mb, FSDP prefetch, gradient "
     "accumulation), use fewer, larger collectives, and check the links (gpuvet bench, topology "
     "findings) and the straggler finding.",
     "task 4, symptom 1", kByDiagnoseOnly, A::kFixApplication},
    {"job-straggler-rank", "One rank makes the others wait", "job", kWarning, kClassify,
     B::kCompute,
     "across ranks, one rank spends the least time in collectives in most common steps while the "
     "others wait for it at least job_straggler_cost_fraction of the step (median over steps)",
     "A collective finishes only when its last rank arrives: the rank that arrives last waits "
     "least, and every other rank waits for it. Its own work before the collective is longer: a "
     "slower GPU (clocks, power, thermal), more data, a busier host or a worse link.",
     "Look at that rank's GPU and host first (the findings cited with it: clocks, thermal, PCIe "
     "link, CPU), then its data (shard sizes) and its place in the topology.",
     "task 7, symptom 2", kByDiagnoseOnly, A::kFixApplication},
    {"job-step-time-drift", "Steps get slower over the run", "job", kWarning, kSystem,
     B::kThermal,
     "the median step of the last quarter of the steps is at least job_step_drift_fraction "
     "slower than that of the first quarter (8 steps or more)",
     "The same work takes longer as the run goes on: throttling (thermal, power), a growing "
     "input queue, memory fragmentation or a neighbour's load.",
     "Run `gpuvet watch` beside the job to see clocks and temperatures over time, and compare "
     "the step times with them.",
     "symptom 3", kByDiagnoseOnly, A::kWatch},
    {"gpu-waits-on-host-thread", "A GPU process is held up by one of its threads", "host-cpu",
     kWarning, kClassify, B::kCpu,
     "live: a process on a GPU running under busy_util_pct has a thread at or above "
     "cpu_pegged_pct of one CPU over the sample window",
     "The GPU waits for the host: one thread of the process (a data-loader worker, the Python "
     "thread launching kernels) is CPU-bound, so the GPU gets work no faster than that thread "
     "can produce it.",
     "Look at what the thread is (py-spy dump --pid), add data-loader workers, move "
     "preprocessing off the main thread, and give the process more cores of its GPU's NUMA node.",
     "task 8, symptom 1", kByDiagnoseOnly, A::kFixApplication},
};

inline constexpr SymptomPattern kSymptoms[] = {
    {"util-high-wallclock-worse", "GPU utilisation is high but wall-clock is worse",
     "Synchronisation overhead (all-reduce) dominates; utilisation includes time blocked in "
     "communication or waiting at barriers.",
     "Increase the per-GPU batch (or accumulate gradients), tune bucket sizes, overlap "
     "communication and compute, and validate P2P/NVLink/topology.",
     "symptom 1"},
    {"one-busy-one-idle", "One GPU is busy, the other is mostly idle",
     "Wrong device assignment (CUDA_VISIBLE_DEVICES, launcher, scheduler) or a failed rank "
     "leaving a process alone.",
     "Validate the mapping with nvidia-smi pmon; enforce rank → device mapping; fail fast when a "
     "rank exits.",
     "symptom 2"},
    {"degrades-over-time", "Scaling is decent at first, then degrades over time",
     "Thermal throttling or power-limit behaviour; sometimes memory fragmentation and the "
     "allocator.",
     "Watch step time and clocks; improve airflow; standardise power caps and BIOS/fan settings.",
     "symptom 3"},
    {"hangs-nccl-timeout", "Training hangs or NCCL times out",
     "One rank hit an exception or OOM and exited; the others wait in collectives forever. "
     "Network jitter or P2P failures sometimes contribute.",
     "Robust error handling and timeouts; make all ranks abort together; per-rank logs; "
     "simplify the topology.",
     "symptom 4"},
    {"oom-despite-more-gpus", "You added a GPU to fit a bigger model, and it still OOMs",
     "Data parallelism does not pool VRAM; the whole model must still fit on each GPU.",
     "Shard the model (tensor/pipeline/expert parallel), checkpoint activations, quantise, or "
     "buy one bigger GPU.",
     "symptom 5"},
    {"throughput-up-p99-worse", "Inference throughput improves but p95/p99 latency gets worse",
     "Cross-GPU communication on the critical path; aggregation and queueing amplify jitter; "
     "synchronisation points create tails.",
     "Keep latency-sensitive endpoints on one GPU; reserve multi-GPU for batch/offline; or "
     "redesign aggregation and routing.",
     "symptom 6"},
    {"servers-differ", "Same model, same code, different performance across servers",
     "PCIe topology differences, BIOS defaults, lane negotiation (x8 vs x16), or P2P disabled "
     "on some nodes.",
     "Establish a baseline and enforce topology checks in provisioning; quarantine "
     "non-conforming nodes; standardise firmware.",
     "symptom 7"},
    {"io-slows-during-training", "Filesystem and network slow down when training runs",
     "Data-loader fan-out and checkpoint bursts; metadata pressure from small files; contention "
     "on shared storage.",
     "Shard and cache datasets; fewer small files; stagger checkpoints; limit workers; move "
     "heavy I/O off shared paths.",
     "symptom 8"},
};

}  // namespace catalog_detail

using catalog_detail::kCatalog;
using catalog_detail::kSymptoms;

consteval bool in_catalog(std::string_view id) {
  for (const auto& e : kCatalog)
    if (id == e.id) return true;
  return false;
}

// Not constexpr, on purpose: reached only for an id that is not in kCatalog, it stops the
// compilation with this name in the message.
void finding_id_is_not_in_the_catalog();

// A finding id as rules write it: `e.add("nccl-error", …)`. Made only at compile time, from
// a catalog id; a typo fails the build instead of becoming "(uncatalogued id)" at run time.
class FindingId {
 public:
  consteval FindingId(const char* id) : id_(id) {  // NOLINT: implicit from a literal by design
    if (!in_catalog(id_)) finding_id_is_not_in_the_catalog();
  }
  constexpr std::string_view str() const { return id_; }
  constexpr operator std::string_view() const { return id_; }  // NOLINT

 private:
  std::string_view id_;
};

// Which findings make a symptom pattern (at warning or worse; at info for info-only ids).
struct SymptomRule {
  const char* symptom;
  const char* any_of[5];  // finding ids; unused slots null (GCC 12 cannot value-initialise
                          // string_views in a constexpr table)
};

inline constexpr SymptomRule kSymptomRules[] = {
    {"util-high-wallclock-worse",
     {"scaling-inefficient", "utilization-misleading", "job-comm-exposed", "job-launch-bound",
      "gpu-waits-on-host-thread"}},
    {"one-busy-one-idle",
     {"gpu-idle-while-peer-busy", "gpu-shared-by-processes", "memory-imbalance",
      "job-straggler-rank"}},
    {"degrades-over-time",
     {"clocks-degrade-over-time", "thermal-throttle", "power-throttle", "job-step-time-drift"}},
    {"hangs-nccl-timeout",
     {"nccl-error", "collective-hang-culprit", "collective-hang-frozen-process",
      "collective-hang-transport", "collective-hang"}},
    {"oom-despite-more-gpus", {"memory-near-full"}},
    {"throughput-up-p99-worse", {"tail-latency-amplified"}},
    {"servers-differ",
     {"pcie-link-degraded", "p2p-unavailable", "acs-blocks-p2p", "heterogeneous-gpus",
      "nvlink-down"}},
    {"io-slows-during-training", {"io-bound", "network-saturated"}},
};

consteval bool symptom_rules_name_known_ids() {
  for (const auto& r : kSymptomRules) {
    bool known_symptom = false;
    for (const auto& s : kSymptoms)
      known_symptom = known_symptom || std::string_view(r.symptom) == s.id;
    if (!known_symptom) return false;
    for (const char* id : r.any_of)
      if (id && !in_catalog(id)) return false;
  }
  return std::size(kSymptomRules) == std::size(kSymptoms);
}
static_assert(symptom_rules_name_known_ids(),
              "every symptom rule names a symptom pattern and catalogued finding ids");

}  // namespace gpuvet::rules
