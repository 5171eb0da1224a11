#include "bundle/bundle.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>

#include "core/util.h"
#include "gpuvet/report.h"

namespace gpuvet::bundle {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

// Length of an 8-4-4-4-12 hex UUID starting at p, or 0.
std::size_t uuid_at(const std::string& s, std::size_t p) {
  static constexpr int kGroups[] = {8, 4, 4, 4, 12};
  std::size_t i = p;
  for (int g = 0; g < 5; ++g) {
    for (int k = 0; k < kGroups[g]; ++k, ++i)
      if (i >= s.size() || !is_hex(s[i])) return 0;
    if (g < 4) {
      if (i >= s.size() || s[i] != '-') return 0;
      ++i;
    }
  }
  return i - p;
}

// Values after "Serial Number : " (nvidia-smi -q) and inside <serial> (-q -x).
void find_serials(const std::string& text, std::vector<std::string>& out) {
  for (auto line : split_lines(text)) {
    std::string_view value;
    if (auto k = line.find("Serial Number"); k != std::string_view::npos) {
      auto colon = line.find(':', k);
      if (colon != std::string_view::npos) value = trim(line.substr(colon + 1));
    } else if (auto x = line.find("<serial>"); x != std::string_view::npos) {
      auto end = line.find("</serial>", x);
      if (end != std::string_view::npos) value = trim(line.substr(x + 8, end - x - 8));
    }
    if (value.size() >= 6 && value != "N/A" && value.find(' ') == std::string_view::npos)
      out.emplace_back(value);
  }
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Status write_file(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::permission_denied(path.string() + ": cannot write");
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) return Status::unavailable(path.string() + ": write failed");
  return Status::ok();
}

struct Ran {
  CaptureCommand command;
  Result<CommandResult> result = Status::internal("not run");
};

}  // namespace

std::vector<CaptureCommand> capture_commands() {
  const std::string query =
      "--query-gpu=index,pci.bus_id,name,uuid,serial,vbios_version,pcie.link.gen.current,pcie.link."
      "gen.max,"
      "pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,clocks.mem,clocks.max."
      "mem,"
      "temperature.gpu,power.draw,power.limit,power.default_limit,ecc.mode.current,"
      "ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,memory.total,"
      "memory.used,"
      "utilization.gpu,clocks_throttle_reasons.active";
  return {
      {"nvidia-smi-L.txt", {"nvidia-smi", "-L"}},
      {"nvidia-smi-q.txt", {"nvidia-smi", "-q"}},
      {"nvidia-smi-q.xml", {"nvidia-smi", "-q", "-x"}},
      {"nvidia-smi-topo-m.txt", {"nvidia-smi", "topo", "-m"}},
      {"nvidia-smi-topo-p2p-r.txt", {"nvidia-smi", "topo", "-p2p", "r"}},
      {"nvidia-smi-topo-p2p-w.txt", {"nvidia-smi", "topo", "-p2p", "w"}},
      {"nvidia-smi-topo-p2p-n.txt", {"nvidia-smi", "topo", "-p2p", "n"}},
      {"nvidia-smi-topo-p2p-a.txt", {"nvidia-smi", "topo", "-p2p", "a"}},
      {"nvidia-smi-nvlink-s.txt", {"nvidia-smi", "nvlink", "-s"}},
      {"nvidia-smi-query-gpu.csv", {"nvidia-smi", query, "--format=csv"}},
      {"nvidia-smi-pmon.txt", {"nvidia-smi", "pmon", "-c", "1"}},
      {"nvidia-smi-dmon.txt", {"nvidia-smi", "dmon", "-c", "1"}},
      {"dmesg.txt", {"dmesg"}},
      {"journalctl-k.txt", {"journalctl", "-k", "-b", "--no-pager", "-o", "short-iso"}},
      {"numactl-H.txt", {"numactl", "-H"}},
      {"numactl-show.txt", {"numactl", "--show"}},
      {"lscpu.txt", {"lscpu"}},
      {"mpstat.txt", {"mpstat", "-P", "ALL", "1", "1"}},
      {"iostat.txt", {"iostat", "-xz", "1", "2"}},
      {"sar-net-dev.txt", {"sar", "-n", "DEV", "1", "1"}},
      {"nvidia-driver-params.txt", {"cat", "/proc/driver/nvidia/params"}},
      {"nvidia-driver-version.txt", {"cat", "/proc/driver/nvidia/version"}},
  };
}

void Redactor::add_serial(const std::string& serial) {
  if (serial.size() >= 6) serials_.push_back(serial);
}
void Redactor::add_hostname(const std::string& hostname) {
  if (hostname.size() >= 2) hostnames_.push_back(hostname);
}

std::string Redactor::token_for(const std::string& value, const char* kind) {
  auto it = tokens_.find(value);
  if (it != tokens_.end()) return it->second;
  std::string token;
  if (std::string_view(kind) == "uuid") {
    // Keep the UUID shape (and its GPU-/MIG- prefix) so every parser still reads it.
    token = fmt::format("00000000-0000-0000-0000-{:012x}", next_uuid_++);
  } else if (std::string_view(kind) == "serial") {
    token = fmt::format("SERIAL{:07d}", next_serial_++);
  } else {
    token = fmt::format("host{}", next_host_++);
  }
  tokens_.emplace(value, token);
  return token;
}

std::string Redactor::apply(const std::string& input) {
  std::string text = input;
  // 1. UUIDs ("GPU-…", "MIG-…", cluster UUIDs): by shape.
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = (i == 0 || !is_hex(text[i - 1])) ? uuid_at(text, i) : 0;
    if (n > 0 && (i + n == text.size() || !is_hex(text[i + n]))) {
      std::string value = to_lower(text.substr(i, n));
      if (value != "00000000-0000-0000-0000-000000000000") {
        out += token_for(value, "uuid");
        i += n;
        continue;
      }
    }
    out += text[i++];
  }
  text = std::move(out);
  // 2. Serial numbers: known ones and those the outputs print.
  std::vector<std::string> serials = serials_;
  find_serials(text, serials);
  for (const auto& s : serials) {
    const std::string token = token_for(s, "serial");
    for (std::size_t p = text.find(s); p != std::string::npos; p = text.find(s, p + token.size()))
      text.replace(p, s.size(), token);
  }
  // 3. Host names, as whole words only ("vm" must not hit "nvme").
  for (const auto& h : hostnames_) {
    const std::string token = token_for(h, "host");
    for (std::size_t p = text.find(h); p != std::string::npos; p = text.find(h, p + 1)) {
      const bool start_ok = p == 0 || !is_word(text[p - 1]);
      const bool end_ok = p + h.size() >= text.size() || !is_word(text[p + h.size()]) ||
                          (text[p + h.size()] == '.' &&
                           (p + h.size() + 1 >= text.size() || !is_word(text[p + h.size() + 1])));
      if (start_ok && end_ok) {
        text.replace(p, h.size(), token);
        p += token.size() - 1;
      }
    }
  }
  return text;
}

}  // namespace gpuvet::bundle

namespace gpuvet {

using namespace bundle;  // the helpers above

Result<CaptureSummary> capture_bundle(const CaptureOptions& options, const CollectOptions& collect,
                                      const Env& env) {
  std::error_code ec;
  const fs::path dir(options.out_dir);
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return Status::invalid_input(options.out_dir + ": exists and is not a directory");
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    return Status::invalid_input(options.out_dir +
                                 ": not empty (a bundle needs a new or empty directory)");
  fs::create_directories(dir, ec);
  if (ec) return Status::permission_denied(options.out_dir + ": " + ec.message());

  const auto started = std::chrono::steady_clock::now();
  // gpuvet's own facts first: they also tell the redactor which serials and host name to hide.
  Collection facts = collect_facts(collect, env);

  // The commands, a few at a time; each is bounded by its own deadline.
  const auto commands = capture_commands();
  std::vector<Ran> ran(commands.size());
  const std::size_t width = static_cast<std::size_t>(std::max(1, options.parallel));
  for (std::size_t start = 0; start < commands.size(); start += width) {
    std::vector<std::future<void>> batch;
    for (std::size_t i = start; i < std::min(commands.size(), start + width); ++i)
      batch.push_back(std::async(std::launch::async, [&, i] {
        ran[i].command = commands[i];
        ran[i].result = env.runner.run(commands[i].argv, options.command_timeout);
      }));
    for (auto& f : batch) f.get();
  }

  Redactor redactor;
  if (options.redact) {
    for (const auto& g : facts.facts.gpus)
      if (g.serial) redactor.add_serial(*g.serial);
    if (facts.facts.host.hostname) redactor.add_hostname(*facts.facts.host.hostname);
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) redactor.add_hostname(host);
  }
  auto maybe_redact = [&](const std::string& s) { return options.redact ? redactor.apply(s) : s; };

  CaptureSummary summary;
  summary.abandoned_probes = facts.abandoned_probes;
  json entries = json::array();
  std::string smi_version;
  for (const auto& r : ran) {
    json e = {{"file", nullptr}, {"argv", r.command.argv}};
    if (!r.result.is_ok()) {
      const bool missing = r.result.status().code() == StatusCode::kNotFound;
      summary.missing += missing ? 1 : 0;
      summary.failed += missing ? 0 : 1;
      e["status"] = missing ? "not installed" : "failed to start";
      e["error"] = r.result.status().message();
      entries.push_back(e);
      continue;
    }
    const auto& c = r.result.value();
    ++summary.ran;
    if (c.exit_code != 0 || c.timed_out) ++summary.failed;
    // Each file starts with the command as a shell prompt, as a pasted session would:
    // the output alone does not always say what it is (`topo -p2p w` vs `r`).
    std::string prompt = "$";
    for (const auto& a : r.command.argv) prompt += " " + a;
    std::string body = prompt + "\n" + c.out;
    if (!c.err.empty()) body += (body.back() == '\n' ? "" : "\n") + c.err;
    if (r.command.argv[0] == "nvidia-smi" && smi_version.empty() && !c.out.empty())
      for (auto line : split_lines(c.out))
        if (line.find("Driver Version") != std::string_view::npos) {
          smi_version = std::string(trim(line));
          break;
        }
    if (auto st = write_file(dir / r.command.file, maybe_redact(body)); !st.is_ok()) return st;
    summary.files.push_back(r.command.file);
    e["file"] = r.command.file;
    e["status"] = c.timed_out ? "timed out"
                              : (c.exit_code == 0 ? "ok" : "exit " + std::to_string(c.exit_code));
    e["exit_code"] = c.exit_code;
    e["timed_out"] = c.timed_out;
    e["duration_s"] = c.duration_s;
    e["bytes"] = body.size();
    entries.push_back(e);
  }

  if (auto st = write_file(dir / "gpuvet-facts.json",
                           maybe_redact(facts_to_json(facts.facts, {"capture", 2}) + "\n"));
      !st.is_ok())
    return st;
  summary.files.push_back("gpuvet-facts.json");

  json manifest = {
      {"schema", "gpuvet.capture/1"},
      {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}}},
      {"created_utc", utc_now()},
      {"duration_s",
       std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()},
      {"redacted", options.redact},
      {"kernel", facts.facts.host.kernel ? json(*facts.facts.host.kernel) : json(nullptr)},
      {"driver_version",
       facts.facts.host.driver_version ? json(*facts.facts.host.driver_version) : json(nullptr)},
      {"nvidia_smi", smi_version.empty() ? json(nullptr) : json(smi_version)},
      {"command_timeout_s", options.command_timeout.count() / 1000.0},
      {"commands", entries},
      {"gpuvet_facts",
       {{"file", "gpuvet-facts.json"}, {"nvml", nvml_failure_name(facts.nvml_failure)}}},
  };
  if (auto st = write_file(dir / "manifest.json", maybe_redact(manifest.dump(2)) + "\n");
      !st.is_ok())
    return st;
  summary.files.push_back("manifest.json");
  return summary;
}

}  // namespace gpuvet
