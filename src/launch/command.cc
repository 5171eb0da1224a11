// launch/command.cc — what both launch modes share (launch/command.h).
#include "launch/command.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/util.h"

extern char** environ;

namespace gpuvet {

namespace fs = std::filesystem;

// The executable execve will run: argv[0] as a path, else searched on PATH like execvp.
Result<std::string> resolve_launch_command(const std::string& name) {
  auto usable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return Status::invalid_input("launch: the command is empty");
  if (name.find('/') != std::string::npos) {
    if (usable(name)) return name;
    return Status::invalid_input(
        fmt::format("launch: '{}' is not an executable file: nothing started", name));
  }
  const char* path = std::getenv("PATH");
  for (auto dir : split(path ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    fs::path p = fs::path(dir.empty() ? "." : std::string(dir)) / name;
    if (usable(p)) return p.string();
  }
  return Status::invalid_input(
      fmt::format("launch: command '{}' not found on PATH: nothing started", name));
}

std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : overrides) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<int> open_fds() {
  std::vector<int> fds;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/self/fd", ec))
    if (auto fd = parse_int(e.path().filename().string()); fd && *fd >= 0 && *fd < (1 << 20))
      fds.push_back(static_cast<int>(*fd));
  std::sort(fds.begin(), fds.end());
  // The iterator's own descriptor was listed too: keep only what is still open.
  std::erase_if(fds, [](int fd) { return ::fcntl(fd, F_GETFD) < 0; });
  return fds;
}

NodeMask NodeMask::of(const std::vector<int>& nodes) {
  NodeMask m;
  for (int n : nodes)
    if (n >= 0 && static_cast<unsigned long>(n) < kMaxNodes)
      m.bits[n / kBitsPerWord] |= 1UL << (n % kBitsPerWord);
  return m;
}

std::vector<int> NodeMask::nodes() const {
  std::vector<int> out;
  for (unsigned long n = 0; n < kMaxNodes; ++n)
    if (bits[n / kBitsPerWord] & (1UL << (n % kBitsPerWord))) out.push_back(static_cast<int>(n));
  return out;
}

std::string read_mem_policy_of_this_process() {
  int mode = 0;
  NodeMask mask;
  if (::syscall(SYS_get_mempolicy, &mode, mask.bits, NodeMask::kMaxNodes, nullptr, 0UL) != 0)
    return "";
  const int base = mode & 0x1fff;  // MPOL_F_STATIC_NODES and the like are bits 13-15
  const std::vector<int> nodes = mask.nodes();
  auto with_nodes = [&](const char* name) {
    return nodes.empty() ? std::string(name) : fmt::format("{}:{}", name, format_cpu_list(nodes));
  };
  switch (base) {
    case kMpolDefault:
      return "default";
    case kMpolPreferred:
      return nodes.empty() ? "local" : with_nodes("prefer");
    case kMpolBind:
      return with_nodes("bind");
    case kMpolInterleave:
      return with_nodes("interleave");
    case kMpolLocal:
      return "local";
    case kMpolPreferredMany:
      return with_nodes("prefer_many");
    case kMpolWeightedInterleave:
      return with_nodes("weighted_interleave");
  }
  return fmt::format("mode{}", base);
}

std::vector<int> intersect_sorted(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace gpuvet
