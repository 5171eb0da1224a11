// gpu/nccl_lib.cc — loading libnccl.so.2 with dlopen into the NcclLib registry (nccl_lib.h).
//
// The library handle: bench's NcclEnv is a plain value and scale keeps only a pointer, so the
// dlopen handle and the resolved symbols live in a process-wide registry keyed by the
// requested name and by the path that was loaded (a caller holding either finds the same
// table). Entries are never dlclose'd: NCCL starts threads and registers exit handlers, so
// unloading it while the process runs is not safe, and dlopen of an already-open library
// only bumps a count.
#include "gpu/nccl_lib.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpuvet::gpu {
namespace {

const char* nccl_result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult(unknown)";
  }
}

// Leaked on purpose (never destroyed, never dlclose'd): see the file comment.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const NcclLib>> libs;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// An ELF shared object starts with \x7fELF; checking first turns "not a library" into a
// clear message instead of whatever dlerror() says.
std::optional<std::string> check_elf(const std::string& path) {
  if (path.find('/') == std::string::npos) return std::nullopt;  // a soname: the loader searches
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return path + ": no such file";
    return path + ": " + std::strerror(err);
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    return path + ": not a regular file";
  }
  std::array<char, 4> magic{};
  const ssize_t n = ::read(fd, magic.data(), magic.size());
  ::close(fd);
  if (n != 4 || std::memcmp(magic.data(),
                            "\x7f"
                            "ELF",
                            4) != 0)
    return path + ": not a shared library (no ELF header)";
  return std::nullopt;
}

struct Loaded {
  std::shared_ptr<const NcclLib> lib;
  std::string error;
};

Loaded load_library(const std::string& requested) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (auto it = reg.libs.find(requested); it != reg.libs.end()) return {it->second, {}};

  if (auto bad = check_elf(requested)) return {nullptr, *bad};
  dlerror();
  void* handle = ::dlopen(requested.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    const std::string msg = err ? err : "unknown dlopen error";
    if (requested.find('/') == std::string::npos &&
        msg.find("cannot open shared object") != std::string::npos)
      return {nullptr,
              requested + " not found (install NCCL, or set --nccl-lib / $GPUVET_NCCL_LIBRARY)"};
    return {nullptr, requested + ": cannot load: " + msg};
  }

  auto lib = std::make_shared<NcclLib>();
  lib->handle = handle;
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) {
    char buf[PATH_MAX];
    lib->path = ::realpath(map->l_name, buf) ? buf : map->l_name;
  } else {
    lib->path = requested;
  }

  std::vector<std::string> missing;
  auto sym = [&](auto& fn, const char* name, bool required) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
    if (!fn && required) missing.emplace_back(name);
  };
  sym(lib->get_version, "ncclGetVersion", true);
  sym(lib->get_error_string, "ncclGetErrorString", true);
  sym(lib->get_last_error, "ncclGetLastError", false);
  sym(lib->get_unique_id, "ncclGetUniqueId", false);
  sym(lib->comm_init_all, "ncclCommInitAll", false);
  sym(lib->comm_init_rank_config, "ncclCommInitRankConfig", false);
  sym(lib->comm_get_async_error, "ncclCommGetAsyncError", true);
  sym(lib->comm_finalize, "ncclCommFinalize", false);
  sym(lib->comm_destroy, "ncclCommDestroy", true);
  sym(lib->comm_abort, "ncclCommAbort", true);
  sym(lib->group_start, "ncclGroupStart", true);
  sym(lib->group_end, "ncclGroupEnd", true);
  sym(lib->all_reduce, "ncclAllReduce", true);
  sym(lib->all_gather, "ncclAllGather", true);
  sym(lib->reduce_scatter, "ncclReduceScatter", true);
  if (!lib->nonblocking() && !lib->comm_init_all) missing.emplace_back("ncclCommInitAll");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    ::dlclose(handle);
    return {nullptr,
            lib->path + ": a shared library, but not a usable NCCL (missing " + list + ")"};
  }

  int code = 0;
  if (ncclResult_t r = lib->get_version(&code); r != ncclSuccess) {
    std::string msg = lib->path + ": ncclGetVersion failed: " + lib->text(r);
    ::dlclose(handle);
    return {nullptr, msg};
  }
  lib->version_code = code;
  const int major = code < 10000 ? code / 1000 : code / 10000;
  if (major != 2) {
    std::string msg = fmt::format("{}: NCCL {} is not supported (gpuvet speaks the NCCL 2.x ABI)",
                                  lib->path, nccl_version_text(code));
    ::dlclose(handle);
    return {nullptr, msg};
  }

  std::shared_ptr<const NcclLib> out = std::move(lib);
  reg.libs[requested] = out;
  reg.libs.emplace(out->path, out);
  return {out, {}};
}

}  // namespace

std::string NcclLib::text(ncclResult_t r, ncclComm_t comm) const {
  std::string s = nccl_result_name(r);
  if (get_error_string)
    if (const char* t = get_error_string(r); t && *t) s += fmt::format(": {}", t);
  if (get_last_error)
    if (const char* t = get_last_error(comm); t && *t) s += fmt::format(" — {}", t);
  return s;
}

std::string nccl_library_name(const std::string& path) {
  if (!path.empty()) return path;
  if (const char* e = std::getenv("GPUVET_NCCL_LIBRARY"); e && *e) return e;
  return "libnccl.so.2";
}

const NcclLib* nccl_library(const std::string& path, std::string* error) {
  try {
    Loaded l = load_library(nccl_library_name(path));
    if (!l.lib && error) *error = l.error;
    // The registry keeps every entry for the life of the process: the raw pointer stays valid.
    return l.lib.get();
  } catch (const std::exception& e) {
    if (error) *error = std::string("loading NCCL: ") + e.what();
  } catch (...) {
    if (error) *error = "loading NCCL: unexpected failure";
  }
  return nullptr;
}

std::string nccl_keep_multicast_off() {
  const char* v = std::getenv("NCCL_NVLS_ENABLE");
  if (!v) {
    ::setenv("NCCL_NVLS_ENABLE", "0", 0);
    return "NCCL_NVLS_ENABLE=0 (set by gpuvet): NVLink SHARP multicast is not used";
  }
  if (std::string_view(v) == "0") return "NCCL_NVLS_ENABLE=0 (from the environment)";
  return fmt::format(
      "NCCL_NVLS_ENABLE={} set in the environment: NCCL may use NVLink SHARP "
      "multicast",
      v);
}

std::string nccl_version_text(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9 on.
  if (code < 10000) return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

}  // namespace gpuvet::gpu
