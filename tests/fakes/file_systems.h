// tests/fakes/file_systems.h — in-memory and fault-injecting FileSystem and Clock
// fakes shared by the probe tests. Not thread-safe (tests use them from one thread).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuvet/env.h"

namespace gpuvet::testing {

// A fixture tree under tests/fixtures/, laid out like /.
inline std::string sysroot(const char* name) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/" + name;
}

// {first, first+1, …, last}
inline std::vector<int> iota_vec(int first, int last) {
  std::vector<int> v;
  for (int i = first; i <= last; ++i) v.push_back(i);
  return v;
}

// Wraps a FileSystem and answers "permission denied" for the given paths and
// everything under them.
class DenyingFileSystem final : public FileSystem {
 public:
  enum Scope { kSubtree, kExactPath };
  DenyingFileSystem(const FileSystem& inner, std::vector<std::string> denied,
                    Scope scope = kSubtree)
      : inner_(inner), denied_(std::move(denied)), scope_(scope) {}
  Result<std::string> read_file(const std::string& path, std::size_t max_bytes) const override {
    if (denied(path)) return Status::permission_denied(path + ": Permission denied");
    return inner_.read_file(path, max_bytes);
  }
  Result<std::vector<std::string>> list_dir(const std::string& path) const override {
    if (denied(path)) return Status::permission_denied(path + ": Permission denied");
    return inner_.list_dir(path);
  }
  Result<std::string> real_path(const std::string& path) const override {
    if (denied(path)) return Status::permission_denied(path + ": Permission denied");
    return inner_.real_path(path);
  }
  bool exists(const std::string& path) const override { return inner_.exists(path); }

 private:
  bool denied(const std::string& path) const {
    for (const auto& d : denied_) {
      if (path == d || (scope_ == kSubtree && path.rfind(d + "/", 0) == 0)) return true;
    }
    return false;
  }
  const FileSystem& inner_;
  std::vector<std::string> denied_;
  Scope scope_;
};

// A file tree in memory: path → content; directories are implied by the paths.
class MemoryFileSystem final : public FileSystem {
 public:
  explicit MemoryFileSystem(std::map<std::string, std::string> files) : files_(std::move(files)) {}
  Result<std::string> read_file(const std::string& path, std::size_t max_bytes) const override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::not_found(path + ": No such file or directory");
    return it->second.substr(0, max_bytes);
  }
  Result<std::vector<std::string>> list_dir(const std::string& path) const override {
    std::set<std::string> names;
    const std::string prefix = path + "/";
    for (const auto& [p, content] : files_) {
      if (p.rfind(prefix, 0) != 0) continue;
      names.insert(p.substr(prefix.size(), p.find('/', prefix.size()) - prefix.size()));
    }
    if (names.empty()) return Status::not_found(path + ": No such file or directory");
    return std::vector<std::string>(names.begin(), names.end());
  }
  Result<std::string> real_path(const std::string& path) const override {
    if (!exists(path)) return Status::not_found(path + ": No such file or directory");
    return path;
  }
  bool exists(const std::string& path) const override {
    if (files_.count(path)) return true;
    auto it = files_.lower_bound(path + "/");
    return it != files_.end() && it->first.rfind(path + "/", 0) == 0;
  }

 private:
  std::map<std::string, std::string> files_;
};

// Serves successive contents for chosen files (one per read, the last one
// repeating); everything else comes from the wrapped tree.
class SequencedFileSystem final : public FileSystem {
 public:
  SequencedFileSystem(const FileSystem& inner,
                      std::map<std::string, std::vector<std::string>> sequences)
      : inner_(inner), sequences_(std::move(sequences)) {}
  Result<std::string> read_file(const std::string& path, std::size_t max_bytes) const override {
    auto it = sequences_.find(path);
    if (it == sequences_.end()) return inner_.read_file(path, max_bytes);
    std::size_t& n = reads_[path];
    const auto& seq = it->second;
    return seq[std::min(n++, seq.size() - 1)];
  }
  Result<std::vector<std::string>> list_dir(const std::string& path) const override {
    return inner_.list_dir(path);
  }
  Result<std::string> real_path(const std::string& path) const override {
    return inner_.real_path(path);
  }
  bool exists(const std::string& path) const override { return inner_.exists(path); }

 private:
  const FileSystem& inner_;
  std::map<std::string, std::vector<std::string>> sequences_;
  mutable std::map<std::string, std::size_t> reads_;
};

class EmptyFileSystem final : public FileSystem {
 public:
  Result<std::string> read_file(const std::string& p, std::size_t) const override {
    return Status::not_found(p);
  }
  Result<std::vector<std::string>> list_dir(const std::string& p) const override {
    return Status::not_found(p);
  }
  Result<std::string> real_path(const std::string& p) const override {
    return Status::not_found(p);
  }
  bool exists(const std::string&) const override { return false; }
};

class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override { return now_; }
  std::int64_t unix_now() const override { return 1764669600; }
  void sleep_for(std::chrono::milliseconds d) const override {
    now_ += d;
    slept_ += d;
  }
  std::chrono::milliseconds slept() const { return slept_; }

 private:
  mutable std::chrono::steady_clock::time_point now_{};
  mutable std::chrono::milliseconds slept_{0};
};

}  // namespace gpuvet::testing
