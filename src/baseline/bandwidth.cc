// src/baseline/bandwidth.cc — the bandwidth values a baseline's floors compare, from
// measurements (gpuvet bench's or imported nvbandwidth / nccl-tests outputs).
#include <algorithm>
#include <initializer_list>
#include <map>
#include <string_view>
#include <utility>

#include "gpuvet/baseline.h"

namespace gpuvet {

namespace {

bool is_test(const Measurement& m, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (m.test == n) return true;
  return false;
}

}  // namespace

std::vector<BandwidthValue> bandwidth_values(const std::vector<Measurement>& measurements) {
  std::vector<BandwidthValue> out;
  std::map<std::pair<int, int>, double> peer;  // slower direction per pair
  std::map<std::pair<int, int>, std::size_t> peer_at;
  for (const auto& m : measurements) {
    if (m.wrong_data) continue;  // a figure beside wrong data is no bandwidth to keep
    if (is_test(m, {"host_to_device_ce", "host_to_device_memcpy_ce"}) && m.dst_gpu &&
        m.bandwidth_gbps) {
      out.push_back({"h2d", gpu_label(*m.dst_gpu), std::nullopt, *m.bandwidth_gbps});
    } else if (is_test(m, {"device_to_host_ce", "device_to_host_memcpy_ce"}) && m.src_gpu &&
               m.bandwidth_gbps) {
      out.push_back({"d2h", gpu_label(*m.src_gpu), std::nullopt, *m.bandwidth_gbps});
    } else if (is_test(m, {"device_to_device_read_ce", "device_to_device_memcpy_read_ce"}) &&
               m.src_gpu && m.dst_gpu && *m.src_gpu != *m.dst_gpu && m.bandwidth_gbps &&
               !(m.note && *m.note == "via host")) {
      const std::pair<int, int> k{std::min(*m.src_gpu, *m.dst_gpu),
                                  std::max(*m.src_gpu, *m.dst_gpu)};
      auto [it, fresh] = peer.emplace(k, *m.bandwidth_gbps);
      if (!fresh) it->second = std::min(it->second, *m.bandwidth_gbps);
    } else if (m.test.rfind("all_reduce", 0) == 0 && m.busbw_gbps) {
      out.push_back({"allreduce_busbw", "node", m.size_bytes, *m.busbw_gbps});
    }
  }
  for (const auto& [k, v] : peer) out.push_back({"peer", pair_label(k.first, k.second), {}, v});
  return out;
}

}  // namespace gpuvet
