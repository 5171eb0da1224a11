// import/bench_outputs.h — importers for the outputs of GPU benchmarks people already run:
// nccl-tests *_perf, NVIDIA nvbandwidth, and the CUDA samples bandwidthTest,
// p2pBandwidthLatencyTest and simpleP2P.
//
// Each turns the figures its tool printed into Facts::measurements (one Measurement per table
// row or matrix cell; GB/s are 1e9 bytes/s as the tools print them) and, where the tool lists
// them, the GPUs it ran on (index, name, bus id) and the P2P access it found (Facts::pairs).
// nccl-tests output often carries NCCL_DEBUG lines: those become Facts::nccl_events too.
// A benchmark that failed is data: a Measurement with no figure and the failure in its note.
//
// Hand-written scanners over string_view, no regular expressions; linear in the input; safe on
// garbage, truncated, binary or huge input. Stateless free functions, thread-safe.
#pragma once

#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// "nccl-tests": the "#  size count type redop root time algbw busbw #wrong …" table (also the
// older one without root, srun-labelled "0: " lines, a header that lost its '#').
// test = the *_perf binary named in the text, else guessed from the columns (documented in
// the .cc); note = "out-of-place" / "in-place"; a #wrong count above 0 sets wrong_data
// ("#wrong N"; "N/A" is not checked); the "# Avg bus bandwidth" line becomes a Measurement
// with only busbw_gbps and note "avg bus bandwidth".
int sniff_nccl_tests(std::string_view text);
Status import_nccl_tests(std::string_view text, Facts& out);

// "nvbandwidth": "Running <testcase>." then a "memcpy CE CPU(row) -> GPU(column) bandwidth
// (GB/s)" matrix; one Measurement per cell (N/A cells and a GPU's copy to itself skipped),
// src/dst from the matrix orientation (-> row to column, <- column to row); the "SUM" line as a
// Measurement with note "sum". Latency matrices ("(ns)") fill latency_us. Bidirectional
// ("<->") cells are one direction (note "bidirectional"), except the "Total" matrix of the
// v0.8 device-to-device tests, the sum of both directions (note "bidirectional total"). A
// testcase whose data check failed ("Invalid value when checking the pattern at …",
// "Current offset : N", then an ASSERT) is a Measurement with no figure and wrong_data.
int sniff_nvbandwidth(std::string_view text);
Status import_nvbandwidth(std::string_view text, Facts& out);

// "bandwidthTest": quick/range tables ("Host to Device Bandwidth, 1 Device(s)" /
// "Transfer Size (Bytes) Bandwidth(GB/s)") and shmoo CSV lines ("bandwidthTest-H2D-Pinned,
// Bandwidth = 12.4 GB/s, …, Size = 1000 bytes"). test = "host_to_device_pinned", ….
int sniff_bandwidth_test(std::string_view text);
Status import_bandwidth_test(std::string_view text, Facts& out);

// "p2pBandwidthLatencyTest": the bandwidth and latency matrices (test = "unidirectional p2p
// disabled", "bidirectional p2p enabled", "latency p2p enabled gpu", …) and the
// "Device=0 CANNOT Access Peer Device=1" lines (GpuPair p2p_read kNotSupported, or kOk).
int sniff_p2p_bandwidth_latency_test(std::string_view text);
Status import_p2p_bandwidth_latency_test(std::string_view text, Facts& out);

// "simpleP2P": "Peer access from … (GPU0) -> … (GPU1) : Yes|No" and the
// "cudaMemcpyPeer / cudaMemcpy between GPU0 and GPU1: 236.01GB/s" figure.
int sniff_simple_p2p(std::string_view text);
Status import_simple_p2p(std::string_view text, Facts& out);

}  // namespace gpuvet::import
