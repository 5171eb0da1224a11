#include "bundle/bundle.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/util.h"
#include "gpuvet/report.h"

namespace gpuvet::bundle {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
// Characters that continue a host-name-like word: a match must not be part of a longer one.
bool is_name_char(char c) { return is_alnum(c) || c == '-' || c == '_'; }

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// Length of an 8-4-4-4-12 hex UUID starting at p, or 0.
std::size_t uuid_at(std::string_view s, std::size_t p) {
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

// Where a whole UUID starts at p (not inside a longer hex run): its length, else 0.
std::size_t whole_uuid_at(std::string_view s, std::size_t p) {
  if (p > 0 && is_hex(s[p - 1])) return 0;
  const std::size_t n = uuid_at(s, p);
  if (n == 0 || (p + n < s.size() && is_hex(s[p + n]))) return 0;
  return n;
}

bool plausible_serial(std::string_view v) {
  if (v.size() < 6 || v == "N/A" || v == "[N/A]" || v.find(' ') != std::string_view::npos)
    return false;
  return std::all_of(v.begin(), v.end(), [](char c) { return is_alnum(c) || c == '-'; });
}

bool plausible_hostname(std::string_view v) {
  if (v.size() < 2 || v.size() > 253 || !is_alnum(v.front())) return false;
  if (std::all_of(v.begin(), v.end(), [](char c) { return is_digit(c) || c == '.'; }))
    return false;  // an address or a number, not a name
  return std::all_of(v.begin(), v.end(), [](char c) { return is_name_char(c) || c == '.'; });
}

std::vector<std::string_view> split_fields(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  std::size_t b = 0;
  for (std::size_t i = 0; i <= line.size(); ++i)
    if (i == line.size() || line[i] == sep) {
      out.push_back(trim(line.substr(b, i - b)));
      b = i + 1;
    }
  return out;
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    std::size_t b = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
  return out;
}

bool iso_timestamp(std::string_view w) {
  return w.size() >= 10 && is_digit(w[0]) && is_digit(w[1]) && is_digit(w[2]) && is_digit(w[3]) &&
         w[4] == '-';
}

bool month_name(std::string_view w) { return month_of(w) != 0; }

// The IPv4 address at p ("10.20.30.40", octets without leading zeros, so "96.00.74.00" is a
// version): its length, else 0.
std::size_t ipv4_at(std::string_view s, std::size_t p) {
  if (p > 0 && (is_alnum(s[p - 1]) || s[p - 1] == '.')) return 0;
  std::size_t i = p;
  for (int octet = 0; octet < 4; ++octet) {
    const std::size_t b = i;
    while (i < s.size() && is_digit(s[i]) && i - b < 4) ++i;
    const std::size_t len = i - b;
    if (len == 0 || len > 3 || (len > 1 && s[b] == '0')) return 0;
    if (std::stoi(std::string(s.substr(b, len))) > 255) return 0;
    if (octet < 3) {
      if (i >= s.size() || s[i] != '.') return 0;
      ++i;
    }
  }
  if (i < s.size() && (is_alnum(s[i]) || (s[i] == '.' && i + 1 < s.size() && is_digit(s[i + 1]))))
    return 0;
  return i - p;
}

// The IPv6 address at p ("fe80::e42:a1ff:fe00:1", eight groups or a "::"): its length, else 0.
std::size_t ipv6_at(std::string_view s, std::size_t p) {
  if (p > 0 && (is_alnum(s[p - 1]) || s[p - 1] == ':' || s[p - 1] == '.')) return 0;
  std::size_t i = p;
  int groups = 0, hex_digits = 0;
  bool compressed = false;
  if (s.substr(i, 2) == "::") {
    compressed = true;
    i += 2;
  }
  while (i < s.size()) {
    std::size_t b = i;
    while (i < s.size() && is_hex(s[i])) ++i;
    const std::size_t len = i - b;
    if (len > 4) return 0;
    if (len == 0) break;
    ++groups;
    hex_digits += static_cast<int>(len);
    if (s.substr(i, 2) == "::" && !compressed) {
      compressed = true;
      i += 2;
    } else if (i + 1 < s.size() && s[i] == ':' && is_hex(s[i + 1])) {
      ++i;
    } else {
      break;
    }
  }
  if (i < s.size() && (is_alnum(s[i]) || s[i] == ':' || s[i] == '.')) return 0;
  const bool ok = compressed ? (groups >= 2 && groups <= 7 && hex_digits >= 4) : groups == 8;
  return ok ? i - p : 0;
}

// The MAC (or longer colon-separated hardware) address at p: six or more "xx:" groups.
std::size_t mac_at(std::string_view s, std::size_t p) {
  if (p > 0 && (is_alnum(s[p - 1]) || s[p - 1] == ':')) return 0;
  std::size_t i = p;
  int groups = 0;
  while (i + 1 < s.size() && is_hex(s[i]) && is_hex(s[i + 1])) {
    ++groups;
    i += 2;
    if (i + 2 < s.size() && s[i] == ':' && is_hex(s[i + 1]) && is_hex(s[i + 2]))
      ++i;
    else
      break;
  }
  if (groups < 6) return 0;
  if (i < s.size() && (is_alnum(s[i]) || (s[i] == ':' && i + 1 < s.size() && is_hex(s[i + 1]))))
    return 0;
  return i - p;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

class PosixFileWriter final : public FileWriter {
 public:
  Status write_file(const std::string& path, const std::string& data) const override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return Status::permission_denied(errno_text(errno));
    std::size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        return Status::unavailable(errno_text(err));
      }
      done += static_cast<std::size_t>(n);
    }
    // Delayed allocation (and NFS) report a full disk only here.
    if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
      const int err = errno;
      ::close(fd);
      return Status::unavailable(errno_text(err));
    }
    if (::close(fd) != 0) return Status::unavailable(errno_text(errno));
    return Status::ok();
  }
};

bool is_this_machine(const std::string& root) {
  if (root.empty() || root == "/") return true;
  char buf[PATH_MAX];
  return ::realpath(root.c_str(), buf) != nullptr && std::string_view(buf) == "/";
}

struct Ran {
  CaptureCommand command;
  Result<CommandResult> result = Status::internal("not run");
  bool not_run = false;    // --root: a saved tree, not this machine
  bool from_tree = false;  // read from the saved tree instead of running
  std::string tree_error;  // why the tree did not have it
};

// The mode a plain mkdir(2) with 0777 gives here: 0777 less the umask (read from procfs,
// since umask(2) cannot be read without being set, which would race with other threads).
mode_t directory_mode() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0)
      return 0777 & ~static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
  return 0755;
}

// The bundle's directories: OUTDIR (new, or an empty directory) and a private temporary
// directory beside it that holds the files until all are written. The temporary directory is
// made only when the files are ready, so an interrupted capture leaves nothing behind; what is
// not committed is removed when this goes out of scope.
class Staging {
 public:
  ~Staging() {
    std::error_code ec;
    if (!temp_.empty()) fs::remove_all(temp_, ec);
  }

  // Refuses early what would fail at the end: a non-empty OUTDIR, a parent not writable.
  Status check(const std::string& out_dir) {
    if (out_dir.empty()) return Status::invalid_input("no output directory given");
    fs::path target(out_dir);
    if (!target.has_filename()) target = target.parent_path();
    if (target.empty() || target == target.root_path())
      return Status::invalid_input(out_dir + ": not a directory a bundle can be made in");
    display_ = out_dir;
    target_ = target.string();
    fs::path parent = target.parent_path();
    if (parent.empty()) parent = ".";
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) return Status::permission_denied(parent.string() + ": " + ec.message());
    templ_ = (parent / ("." + target.filename().string() + ".gpuvet-XXXXXX")).string();
    struct stat st {};
    if (::lstat(target_.c_str(), &st) == 0) {
      if (Status s = check_empty_directory(); !s.is_ok()) return s;
    } else if (errno != ENOENT) {
      return Status::permission_denied(out_dir + ": " + errno_text(errno));
    }
    std::string probe = templ_;
    if (::mkdtemp(probe.data()) == nullptr)
      return Status::permission_denied(parent.string() +
                                       ": cannot make a directory there: " + errno_text(errno));
    ::rmdir(probe.c_str());
    return Status::ok();
  }

  // Makes the private directory the files go into.
  Status open() {
    std::string temp = templ_;
    if (::mkdtemp(temp.data()) == nullptr)
      return Status::permission_denied(fs::path(templ_).parent_path().string() +
                                       ": cannot make a temporary directory: " + errno_text(errno));
    temp_ = temp;
    return Status::ok();
  }

  std::string temp_path(const std::string& file) const { return temp_ + "/" + file; }
  std::string shown_path(const std::string& file) const {
    return (fs::path(display_) / file).string();
  }

  // Renames the finished bundle onto OUTDIR. rename(2) replaces an empty directory and fails
  // on a non-empty one, so of two captures into one directory only the first to finish wins.
  Status commit() {
    // mkdtemp made it 0700; the bundle gets the mode of the empty OUTDIR it replaces, or what
    // a plain mkdir would have given.
    struct stat target_st {};
    ::chmod(temp_.c_str(), ::stat(target_.c_str(), &target_st) == 0 ? target_st.st_mode & 07777
                                                                    : directory_mode());
    if (int fd = ::open(temp_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    if (::rename(temp_.c_str(), target_.c_str()) != 0) {
      const int err = errno;
      if (err == ENOTEMPTY || err == EEXIST)
        return Status::invalid_input(display_ +
                                     ": another bundle was written there while this capture ran "
                                     "(a bundle needs a new or empty directory); nothing written");
      return Status::permission_denied(display_ +
                                       ": cannot move the bundle into place: " + errno_text(err));
    }
    temp_.clear();
    return Status::ok();
  }

  Status check_empty_directory() const {
    std::error_code ec;
    if (!fs::is_directory(target_, ec))
      return Status::invalid_input(display_ + ": exists and is not a directory");
    if (!fs::is_empty(target_, ec) || ec)
      return Status::invalid_input(display_ +
                                   ": not empty (a bundle needs a new or empty directory)");
    return Status::ok();
  }

 private:
  std::string display_, target_, templ_, temp_;
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
      // PSI, each line prefixed with its file so the resource is known offline.
      {"pressure.txt",
       {"grep", "-H", ".", "/proc/pressure/cpu", "/proc/pressure/io", "/proc/pressure/memory"}},
      {"nvidia-driver-params.txt",
       {"cat", "/proc/driver/nvidia/params"},
       "/proc/driver/nvidia/params"},
      {"nvidia-driver-version.txt",
       {"cat", "/proc/driver/nvidia/version"},
       "/proc/driver/nvidia/version"},
  };
}

std::unique_ptr<FileWriter> make_posix_file_writer() { return std::make_unique<PosixFileWriter>(); }

void Redactor::add_serial(const std::string& serial) {
  const std::string s(trim(serial));
  if (plausible_serial(s) && std::find(serials_.begin(), serials_.end(), s) == serials_.end())
    serials_.push_back(s);
}

void Redactor::add_hostname(const std::string& hostname) {
  std::string h = to_lower(trim(hostname));
  while (!h.empty() && h.back() == '.') h.pop_back();
  if (!plausible_hostname(h)) return;
  // The short name; every FQDN that starts with it is replaced whole where it is found.
  h = h.substr(0, h.find('.'));
  if (h.size() < 2 || h == "localhost" || !plausible_hostname(h)) return;
  if (std::find(hostnames_.begin(), hostnames_.end(), h) == hostnames_.end())
    hostnames_.push_back(h);
}

void Redactor::add_uuid(const std::string& uuid) {
  std::string u = to_lower(uuid);
  for (const char* prefix : {"mig-", "gpu-"})
    if (u.rfind(prefix, 0) == 0) u = u.substr(4);
  if (uuid_at(u, 0) != 36) return;
  u.erase(std::remove(u.begin(), u.end(), '-'), u.end());
  if (u != std::string(32, '0') && std::find(uuids_.begin(), uuids_.end(), u) == uuids_.end())
    uuids_.push_back(u);
}

void Redactor::learn(std::string_view text) {
  int serial_column = -1;  // of the --query-gpu CSV whose header this text printed
  for (auto line : split_lines(text)) {
    if (starts_with(line, "$ ")) continue;  // the prompt line of a captured command
    if (auto k = line.find("Serial Number"); k != std::string_view::npos) {
      if (auto colon = line.find(':', k); colon != std::string_view::npos)
        add_serial(std::string(trim(line.substr(colon + 1))));
    } else if (auto x = line.find("<serial>"); x != std::string_view::npos) {
      if (auto end = line.find("</serial>", x); end != std::string_view::npos)
        add_serial(std::string(trim(line.substr(x + 8, end - x - 8))));
    }
    if (line.find(',') != std::string_view::npos) {
      const auto fields = split_fields(line, ',');
      const auto header = std::find(fields.begin(), fields.end(), "serial");
      if (header != fields.end()) {
        serial_column = static_cast<int>(header - fields.begin());
      } else if (serial_column >= 0 && static_cast<int>(fields.size()) > serial_column) {
        add_serial(std::string(fields[static_cast<std::size_t>(serial_column)]));
      }
    }
    // sysstat's header: "Linux 6.8.0-45-generic (gpu-node-07.cluster.example.com) 12/03/26 …"
    if (starts_with(line, "Linux ") && !starts_with(line, "Linux version")) {
      auto open = line.find('('), close = line.find(')');
      if (open != std::string_view::npos && close != std::string_view::npos && close > open)
        add_hostname(std::string(line.substr(open + 1, close - open - 1)));
    }
    // Syslog-style kernel lines: "2026-12-03T10:00:00+0000 gpu-node-07 kernel: …" (journalctl
    // short-iso) and "Dec 03 10:00:00 gpu-node-07 kernel: …".
    const auto words = split_words(line.substr(0, 256));
    if (words.size() >= 3 && iso_timestamp(words[0]) && starts_with(words[2], "kernel"))
      add_hostname(std::string(words[1]));
    if (words.size() >= 5 && month_name(words[0]) && starts_with(words[4], "kernel"))
      add_hostname(std::string(words[3]));
    for (std::size_t i = 0; i + 36 <= line.size(); ++i)
      if (std::size_t n = whole_uuid_at(line, i); n > 0) {
        add_uuid(std::string(line.substr(i, n)));
        i += n - 1;
      }
  }
}

std::string Redactor::token_for(const std::string& value, const std::string& kind) {
  const std::string cls = kind.rfind("ip", 0) == 0 ? "ip" : kind;
  ++counts_[cls].replacements;
  auto it = tokens_.find(value);
  if (it != tokens_.end()) return it->second;
  ++counts_[cls].values;
  const int n = ++next_[kind];
  std::string token;
  if (kind == "uuid") {
    // Keep the UUID shape (and its GPU-/MIG- prefix) so every parser still reads it.
    token = fmt::format("00000000-0000-0000-0000-{:012x}", n);
  } else if (kind == "uuid-hex") {
    token = fmt::format("00000000000000000000{:012x}", n);
  } else if (kind == "serial") {
    token = fmt::format("SERIAL{:07d}", n);
  } else if (kind == "hostname") {
    token = fmt::format("host{}", n);
  } else if (kind == "mac") {
    // A locally administered address of the same length.
    const std::size_t groups = (value.size() + 1) / 3;
    std::vector<int> bytes(groups, 0);
    bytes[0] = 0x02;
    bytes[groups - 2] = (n >> 8) & 0xff;
    bytes[groups - 1] = n & 0xff;
    for (std::size_t g = 0; g < groups; ++g)
      token += fmt::format("{}{:02x}", g ? ":" : "", bytes[g]);
  } else if (kind == "ipv4") {
    // The documentation ranges (RFC 5737), so a token never looks like a real site address.
    static constexpr const char* kNets[] = {"192.0.2", "198.51.100", "203.0.113"};
    token = fmt::format("{}.{}", kNets[((n - 1) / 254) % 3], (n - 1) % 254 + 1);
  } else if (kind == "ipv6") {
    token = fmt::format("2001:db8::{:x}", n);
  } else {
    token = fmt::format("user{}", n);
  }
  tokens_.emplace(value, token);
  return token;
}

std::string Redactor::replace_uuids(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (std::size_t n = whole_uuid_at(text, i); n > 0) {
      const std::string original = text.substr(i, n);
      const std::string value = to_lower(original);
      if (value != "00000000-0000-0000-0000-000000000000") {
        // Upper case stays upper case: readers that tell the spellings apart still do.
        std::string token = token_for(value, "uuid");
        if (value != original)
          for (auto& c : token) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        out += token;
        i += n;
        continue;
      }
    }
    out += text[i++];
  }
  // The same UUIDs written without dashes (some logs and sysfs files do).
  for (const auto& u : uuids_) {
    const std::string lower = to_lower(out);
    std::string next;
    std::size_t from = 0;
    for (std::size_t p = lower.find(u); p != std::string::npos; p = lower.find(u, p + 1)) {
      if ((p > 0 && is_hex(lower[p - 1])) || (p + 32 < lower.size() && is_hex(lower[p + 32])))
        continue;
      next += out.substr(from, p - from) + token_for(u, "uuid-hex");
      from = p + 32;
    }
    next += out.substr(from);
    out = std::move(next);
  }
  return out;
}

std::string Redactor::replace_literals(const std::string& text,
                                       const std::vector<std::string>& values,
                                       const std::string& kind) {
  std::vector<std::string> sorted = values;
  std::sort(sorted.begin(), sorted.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string out = text;
  for (const auto& v : sorted) {
    const std::string needle = to_lower(v);
    const std::string lower = to_lower(out);
    std::string next;
    std::size_t from = 0;
    for (std::size_t p = lower.find(needle); p != std::string::npos;
         p = lower.find(needle, p + needle.size())) {
      next += out.substr(from, p - from) + token_for(v, kind);
      from = p + needle.size();
    }
    next += out.substr(from);
    out = std::move(next);
  }
  return out;
}

std::string Redactor::replace_hostname(const std::string& text, const std::string& host) {
  const std::string lower = to_lower(text);
  std::string out;
  std::size_t from = 0;
  for (std::size_t p = lower.find(host); p != std::string::npos; p = lower.find(host, p + 1)) {
    // Whole words only ("vm" must not hit "nvme"), but the whole FQDN it starts.
    if (p < from || (p > 0 && is_name_char(lower[p - 1]))) continue;
    std::size_t e = p + host.size();
    if (e < lower.size() && is_name_char(lower[e])) continue;
    while (e + 1 < lower.size() && lower[e] == '.' && is_alnum(lower[e + 1])) {
      std::size_t f = e + 1;
      while (f < lower.size() && is_name_char(lower[f])) ++f;
      e = f;
    }
    out += text.substr(from, p - from) + token_for(host, "hostname");
    from = e;
  }
  out += text.substr(from);
  return out;
}

namespace {
template <typename At, typename Keep>
std::string replace_shapes(const std::string& text, At at, Keep keep,
                           const std::function<std::string(const std::string&)>& token) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (std::size_t n = at(std::string_view(text), i); n > 0) {
      const std::string value = to_lower(text.substr(i, n));
      if (!keep(value)) {
        out += token(value);
        i += n;
        continue;
      }
      out += text.substr(i, n);
      i += n;
      continue;
    }
    out += text[i++];
  }
  return out;
}
}  // namespace

std::string Redactor::replace_macs(const std::string& text) {
  return replace_shapes(
      text, mac_at,
      [](const std::string& v) {
        return v.find_first_not_of("0:") == std::string::npos ||
               v.find_first_not_of("f:") == std::string::npos;
      },
      [this](const std::string& v) { return token_for(v, "mac"); });
}

std::string Redactor::replace_ipv4(const std::string& text) {
  return replace_shapes(
      text, ipv4_at,
      [](const std::string& v) {
        return v == "0.0.0.0" || starts_with(v, "127.") || starts_with(v, "255.");
      },
      [this](const std::string& v) { return token_for(v, "ipv4"); });
}

std::string Redactor::replace_ipv6(const std::string& text) {
  return replace_shapes(
      text, ipv6_at, [](const std::string&) { return false; },
      [this](const std::string& v) { return token_for(v, "ipv6"); });
}

std::string Redactor::replace_home_users(const std::string& text) {
  static constexpr std::string_view kHome = "/home/";
  std::string out;
  std::size_t from = 0;
  for (std::size_t p = text.find(kHome); p != std::string::npos; p = text.find(kHome, p + 1)) {
    if (p < from) continue;
    const std::size_t u = p + kHome.size();
    std::size_t e = u;
    while (e < text.size() && std::strchr("/ \t\r\n:;,'\"`<>()[]{}=|", text[e]) == nullptr) ++e;
    if (e == u) continue;
    out += text.substr(from, u - from) + token_for(text.substr(u, e - u), "home-path");
    from = e;
  }
  out += text.substr(from);
  return out;
}

std::string Redactor::apply(const std::string& input) {
  learn(input);
  for (const char* c : kRedactedClasses) counts_.try_emplace(c);
  std::string text = replace_uuids(input);
  text = replace_literals(text, serials_, "serial");
  std::vector<std::string> hosts = hostnames_;
  std::sort(hosts.begin(), hosts.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& h : hosts) text = replace_hostname(text, h);
  text = replace_macs(text);
  text = replace_ipv4(text);
  text = replace_ipv6(text);
  return replace_home_users(text);
}

}  // namespace gpuvet::bundle

namespace gpuvet {

using namespace bundle;  // the helpers above

Result<CaptureSummary> capture_bundle(const CaptureOptions& options, const CollectOptions& collect,
                                      const Env& env) {
  return capture_bundle_with(options, collect, env, *make_posix_file_writer());
}

namespace bundle {

Result<CaptureSummary> capture_bundle_with(const CaptureOptions& options,
                                           const CollectOptions& collect, const Env& env,
                                           const FileWriter& writer) {
  Staging staging;
  if (Status st = staging.check(options.out_dir); !st.is_ok()) return st;

  const auto started = std::chrono::steady_clock::now();
  // gpuvet's own facts first: they also tell the redactor which serials and host name to hide.
  Collection facts = collect_facts(collect, env);

  // A saved tree (--root) is another machine: this machine's commands would describe a
  // different node than the facts, so they are not run; what the tree holds is copied.
  const bool live = is_this_machine(collect.root);
  const bool run_commands = live || options.run_commands_with_root;
  const auto commands = capture_commands();
  std::vector<Ran> ran(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) ran[i].command = commands[i];
  if (run_commands) {
    // A few at a time; each is bounded by its own deadline.
    const std::size_t width = static_cast<std::size_t>(std::max(1, options.parallel));
    for (std::size_t start = 0; start < commands.size(); start += width) {
      std::vector<std::future<void>> batch;
      for (std::size_t i = start; i < std::min(commands.size(), start + width); ++i)
        batch.push_back(std::async(std::launch::async, [&, i] {
          ran[i].result = env.runner.run(commands[i].argv, options.command_timeout);
        }));
      for (auto& f : batch) f.get();
    }
  } else {
    for (auto& r : ran) {
      if (r.command.prints_file.empty()) {
        r.not_run = true;
        continue;
      }
      auto content = env.fs.read_file(r.command.prints_file);
      if (content.is_ok()) {
        CommandResult c;
        c.exit_code = 0;
        c.out = std::move(content).value();
        r.result = std::move(c);
        r.from_tree = true;
      } else {
        r.not_run = true;
        r.tree_error = content.status().message();
      }
    }
  }

  // Every output in memory first: the redactor learns from all of them before any is
  // written, so a serial that only one file prints is hidden in every file.
  struct Output {
    std::string file;
    std::string body;
  };
  std::vector<Output> outputs;
  CaptureSummary summary;
  summary.abandoned_probes = facts.abandoned_probes;
  json entries = json::array();
  std::string smi_version;
  const std::string not_run_reason =
      "--root names a saved tree, and this machine's output would describe another node";
  for (const auto& r : ran) {
    json e = {{"file", nullptr}, {"argv", r.command.argv}};
    if (r.not_run) {
      ++summary.not_run;
      e["status"] = r.tree_error.empty() ? "not run (--root)" : "not in the saved tree (--root)";
      e["error"] = r.tree_error.empty() ? "not run: " + not_run_reason : r.tree_error;
      entries.push_back(e);
      continue;
    }
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
    summary.ran += r.from_tree ? 0 : 1;
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
    e["file"] = r.command.file;
    e["status"] = c.timed_out ? "timed out"
                              : (c.exit_code == 0 ? "ok" : "exit " + std::to_string(c.exit_code));
    if (r.from_tree) e["source"] = "saved tree (--root)";
    e["exit_code"] = c.exit_code;
    e["timed_out"] = c.timed_out;
    e["duration_s"] = c.duration_s;
    e["bytes"] = body.size();
    entries.push_back(e);
    outputs.push_back({r.command.file, std::move(body)});
  }
  outputs.push_back({"gpuvet-facts.json", facts_to_json(facts.facts, {"capture", 2}) + "\n"});

  Redactor redactor;
  if (options.redact) {
    for (const auto& g : facts.facts.gpus) {
      if (g.serial) redactor.add_serial(*g.serial);
      if (g.uuid) redactor.add_uuid(*g.uuid);
    }
    if (facts.facts.host.hostname) redactor.add_hostname(*facts.facts.host.hostname);
    char host[256] = {};
    if (live && ::gethostname(host, sizeof host - 1) == 0) redactor.add_hostname(host);
    for (const auto& o : outputs) redactor.learn(o.body);
    for (auto& o : outputs) o.body = redactor.apply(o.body);
  }

  json redacted = json::array();
  json redaction_counts = json::object();
  if (options.redact)
    for (const char* cls : kRedactedClasses) {
      redacted.push_back(cls);
      const auto it = redactor.counts().find(cls);
      const Redactor::Count n = it == redactor.counts().end() ? Redactor::Count{} : it->second;
      redaction_counts[cls] = {{"values", n.values}, {"replacements", n.replacements}};
    }
  json manifest = {
      {"schema", "gpuvet.capture/1"},
      {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}}},
      {"created_utc", utc_now()},
      {"duration_s",
       std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()},
      {"redacted", redacted},
      {"kernel", facts.facts.host.kernel ? json(*facts.facts.host.kernel) : json(nullptr)},
      {"driver_version",
       facts.facts.host.driver_version ? json(*facts.facts.host.driver_version) : json(nullptr)},
      {"nvidia_smi", smi_version.empty() ? json(nullptr) : json(smi_version)},
      {"command_timeout_s", options.command_timeout.count() / 1000.0},
      {"commands_run", run_commands ? std::string("live") : "no: " + not_run_reason},
      {"commands", entries},
      {"gpuvet_facts",
       {{"file", "gpuvet-facts.json"}, {"nvml", nvml_failure_name(facts.nvml_failure)}}},
  };
  if (options.redact) manifest["redaction_counts"] = redaction_counts;
  if (!live) manifest["root"] = collect.root;
  std::string manifest_text = manifest.dump(2) + "\n";
  if (options.redact) manifest_text = redactor.apply(manifest_text);
  outputs.push_back({"manifest.json", std::move(manifest_text)});

  if (Status st = staging.open(); !st.is_ok()) return st;
  for (const auto& o : outputs) {
    if (Status st = writer.write_file(staging.temp_path(o.file), o.body); !st.is_ok())
      return Status::unavailable(staging.shown_path(o.file) + ": write failed: " + st.message() +
                                 " (no bundle was left at " + options.out_dir + ")");
    summary.files.push_back(o.file);
  }
  if (Status st = staging.commit(); !st.is_ok()) return st;
  return summary;
}

}  // namespace bundle
}  // namespace gpuvet
