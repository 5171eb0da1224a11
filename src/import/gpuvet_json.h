// import/gpuvet_json.h — the importer for gpuvet's own JSON report ("gpuvet.report/N", as
// `gpuvet facts --json` and `gpuvet capture` write it; see docs/json-schema.md): reads a saved
// report back into the Facts it was written from, so a bundle taken on one machine can be
// triaged offline on another.
//
// Format "gpuvet-json". Everything report/json.cc writes is read back: host (NUMA nodes with
// their "0-15" CPU lists, pressure, IOMMU, driver params), every GPU sub-object, pairs ("NV18"
// → NVLink with 18 links, "PIX", …; P2P codes "OK", "CNS", "GNS", "TNS", "DR", "NS", "U"), the
// kernel log and Xids, processes, sources with their timings, notes, gpu_facts_unavailable.
// facts_to_json(import(facts_to_json(f))) gives the same text back. The lists filled by
// offline import only are read when present, under these keys:
//   "nic_paths":    [{nic, gpu, path}]                      (path as in pairs: "PIX", "NODE", …)
//   "nccl_events":  [{kind, rank, host, pci_bus_id, detail}]
//   "measurements": [{tool, test, src_gpu, dst_gpu, size_bytes, bandwidth_gbps, busbw_gbps,
//                     latency_us, note}]
//   "imported":     [{path, format, notes: [..]}]
//   "samples":      [{gpu, t_s, sm_mhz, gpu_c, power_w, util_pct, clock_event_mask}]
//                   (at most 1,000,000 read, a note for the rest)
//   "numa_bindings": [{pid, cpus: "0-15", mems: "0", source}]   (null lists: not known)
//   "scale_runs":   [{workload, preset, gpus, throughput, p50_ms, p95_ms, p99_ms, max_ms,
//                     comm_share}]
// and host.uptime_s / host.collected_unix.
// as are gpus[].nvlinks[].speed_gbps and processes[].cpus_allowed_ids / mems_allowed_ids
// (arrays of ints; when absent they are parsed from the cpus_allowed / mems_allowed lists).
//
// Every struct is read field by field as core/facts_fields.h lists it (the writer's list), so
// a field the writer gains is read back with no change here.
//
// Tolerant reader: null is "not known" (std::nullopt); a value of the wrong type leaves that
// field empty and adds a note naming it ("gpus[0].pcie.gen_current: expected a number");
// unknown keys are ignored (reports gain keys over versions); a newer schema
// ("gpuvet.report/2") is read as far as it goes, with a note. Invalid JSON, input nested
// deeper than kMaxGpuvetJsonDepth (checked by a linear pre-scan before the recursive parser
// runs) or a document that is not a gpuvet report is a non-ok Status. No exceptions escape.
// Stateless free functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// Deepest array/object nesting accepted; a real report nests about 5 deep.
inline constexpr int kMaxGpuvetJsonDepth = 64;

// 100 when the text is a JSON object whose "schema" (within its first 4 KB, where gpuvet
// writes it) starts with "gpuvet.report/"; 0 otherwise. Does not parse the document.
int sniff_gpuvet_json(std::string_view text);

// Fills `out` (fresh) from a gpuvet report. Non-ok (kInvalidInput, also in out.notes) when
// the text is not valid JSON (with the byte position of the error), nests too deep, or is not
// a gpuvet report object; type errors inside a valid report are notes, not failures.
Status import_gpuvet_json(std::string_view text, Facts& out);

// The same, from a document already parsed (the fleet's ingest parses each file once): the
// same nesting limit, checks and notes, without serialising it back to text. Its key order is
// the file's (sources[].timings_ms keeps the order it was written in).
Status import_gpuvet_json_document(const nlohmann::ordered_json& doc, Facts& out);

// Where the nesting of a JSON text first exceeds `max_depth`, outside strings; linear, no
// allocation. Every JSON importer checks this before the recursive parser runs.
std::optional<std::size_t> too_deep_at(std::string_view text, int max_depth);

}  // namespace gpuvet::import
