// The GPU models `gpuvet advise` knows without measuring them, and the all-reduce figures it
// gives a link class. Every number is a data-sheet figure with its page; a figure we could not
// read on NVIDIA's own product page carries verify = true and says so in docs/advise.md.
//
// bf16 figures are dense (NVIDIA's data sheets print "with sparsity" figures twice as large;
// those are halved here, and the GeForce whitepapers' "FP16/BF16 tensor, FP32 accumulate"
// figures are taken as printed). Link figures are per GPU and per direction: NVIDIA prints the
// bidirectional total ("900 GB/s"), halved here.
#include <algorithm>
#include <cctype>
#include <string>

#include "gpuvet/advise.h"

namespace gpuvet {
namespace {

constexpr const char* kH100Page = "https://www.nvidia.com/en-us/data-center/h100/";
constexpr const char* kH200Page = "https://www.nvidia.com/en-us/data-center/h200/";
constexpr const char* kA100Page =
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf";
constexpr const char* kAdaWhitepaper =
    "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf";
constexpr const char* kBlackwellWhitepaper =
    "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/"
    "nvidia-rtx-blackwell-gpu-architecture.pdf";

// PCIe per direction after line encoding, x16: Gen3 8 GT/s × 128/130 × 16 / 8 = 15.75 GB/s,
// doubling per generation (PCI-SIG; the same figures as src/hw/expectations.cc).
constexpr double kGen4 = 31.5;
constexpr double kGen5 = 63.0;

const GpuModelSpec kCatalog[] = {
    {"H100", "NVIDIA H100 SXM5 80GB", "h100", 80, 989, 3350, LinkClass::kNvlink, 450,
     "NVLink 4, 18 links (900 GB/s), through NVSwitch on HGX", true, kH100Page, false},
    {"H100PCIE", "NVIDIA H100 PCIe 80GB", "h100 pcie", 80, 756, 2000, LinkClass::kPcie, kGen5,
     "PCIe Gen5 x16 (an NVLink bridge, 600 GB/s, joins two cards)", true, kH100Page, false},
    {"H100NVL", "NVIDIA H100 NVL 94GB", "h100 nvl", 94, 835, 3900, LinkClass::kNvlink, 300,
     "NVLink bridge between two cards (600 GB/s)", true, kH100Page, false},
    {"H200", "NVIDIA H200 SXM 141GB", "h200", 141, 989, 4800, LinkClass::kNvlink, 450,
     "NVLink 4, 18 links (900 GB/s), through NVSwitch on HGX", true, kH200Page, false},
    {"H200NVL", "NVIDIA H200 NVL 141GB", "h200 nvl", 141, 835, 4800, LinkClass::kNvlink, 450,
     "2- or 4-way NVLink bridge (900 GB/s per GPU)", true, kH200Page, false},
    {"A100", "NVIDIA A100 SXM4 80GB", "a100", 80, 312, 2039, LinkClass::kNvlink, 300,
     "NVLink 3, 12 links (600 GB/s), through NVSwitch on HGX", true, kA100Page, false},
    {"A100PCIE", "NVIDIA A100 PCIe 80GB", "a100 80gb pcie", 80, 312, 1935, LinkClass::kPcie, kGen4,
     "PCIe Gen4 x16 (an NVLink bridge, 600 GB/s, joins two cards)", true, kA100Page, false},
    {"L40S", "NVIDIA L40S 48GB", "l40s", 48, 362, 864, LinkClass::kPcie, kGen4,
     "PCIe Gen4 x16, no NVLink", true, "https://www.nvidia.com/en-us/data-center/l40s/", false},
    {"L4", "NVIDIA L4 24GB", "l4", 24, 121, 300, LinkClass::kPcie, kGen4,
     "PCIe Gen4 x16, no NVLink", true, "https://www.nvidia.com/en-us/data-center/l4/", false},
    {"A10", "NVIDIA A10 24GB", "a10", 24, 125, 600, LinkClass::kPcie, kGen4,
     "PCIe Gen4 x16, no NVLink", true, "https://www.nvidia.com/en-us/data-center/products/a10-gpu/",
     false},
    {"RTX4090", "NVIDIA GeForce RTX 4090 24GB", "rtx 4090", 24, 165.2, 1008, LinkClass::kPcie,
     kGen4, "PCIe Gen4 x16, no NVLink, no P2P (GeForce)", false, kAdaWhitepaper, true},
    {"RTX5090", "NVIDIA GeForce RTX 5090 32GB", "rtx 5090", 32, 209.5, 1792, LinkClass::kPcie,
     kGen5, "PCIe Gen5 x16, no NVLink, no P2P (GeForce)", false, kBlackwellWhitepaper, true},
    {"B200", "NVIDIA B200 180GB (HGX)", "b200", 180, 2250, 8000, LinkClass::kNvlink, 900,
     "NVLink 5 (1.8 TB/s), through NVSwitch on HGX", true,
     "https://www.nvidia.com/en-us/data-center/hgx/", true},
};

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string id_key(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `fragment` occurs in `name` as whole words ("l4" is not in "l40s", "a10" not in "a100").
bool word_match(const std::string& name, const std::string& fragment) {
  for (std::size_t at = name.find(fragment); at != std::string::npos;
       at = name.find(fragment, at + 1)) {
    const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]));
    const std::size_t end = at + fragment.size();
    const bool right = end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]));
    if (left && right) return true;
  }
  return false;
}

}  // namespace

std::span<const GpuModelSpec> gpu_catalog() { return kCatalog; }

const GpuModelSpec* find_gpu_model(std::string_view id_or_name) {
  const std::string key = id_key(id_or_name);
  for (const auto& g : kCatalog)
    if (key == id_key(g.id)) return &g;
  // An NVML name: the longest fragment that matches whole words ("h200 nvl" before "h200").
  const std::string name = lower(id_or_name);
  const GpuModelSpec* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& g : kCatalog) {
    const std::string fragment = g.nvml_match;
    if (fragment.size() > best_len && word_match(name, fragment)) {
      best = &g;
      best_len = fragment.size();
    }
  }
  return best;
}

double pcie_x16_gbps(int gen) {
  switch (gen) {
    case 1:
      return 4.0;  // 2.5 GT/s, 8b/10b
    case 2:
      return 8.0;
    case 3:
      return 15.75;
    case 4:
      return kGen4;
    case 5:
      return kGen5;
    case 6:
      return 121.0;  // 64 GT/s PAM4, FLIT mode (242/256)
    default:
      return 0;
  }
}

}  // namespace gpuvet
