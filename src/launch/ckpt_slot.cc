// launch/ckpt_slot.cc — `gpuvet ckpt-slot`: at most K checkpoint writers at once, through K
// lock files. flock() locks belong to the open file, so the kernel drops a slot when its
// holder dies, however it dies: no stale slot to clean up after a killed job.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "gpuvet/launch.h"
#include "hw/facts_query.h"

extern char** environ;

namespace gpuvet {

Result<int> run_in_ckpt_slot(const CkptSlotOptions& o,
                             const std::function<void(const std::string&)>& progress) {
  namespace fs = std::filesystem;
  if (o.slots < 1 || o.slots > 4096)
    return Status::invalid_input(
        fmt::format("ckpt-slot: --max must be 1 to 4096 (or GPUVET_CKPT_SLOTS, which gpuvet launch "
                    "--ckpt-slots sets), got {}",
                    o.slots));
  if (o.dir.empty())
    return Status::invalid_input(
        "ckpt-slot: no slot directory (--dir, or GPUVET_CKPT_DIR, which gpuvet launch "
        "--ckpt-slots sets)");
  if (o.command.empty()) return Status::invalid_input("ckpt-slot: no command after '--'");
  if (!(o.timeout_s >= 0)) return Status::invalid_input("ckpt-slot: --timeout must be ≥ 0");
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec)
    return Status::invalid_input(fmt::format("ckpt-slot: cannot make {}: {}", o.dir, ec.message()));

  std::vector<int> fds;
  for (int k = 0; k < o.slots; ++k) {
    const std::string path = (fs::path(o.dir) / fmt::format("slot{}.lock", k)).string();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
      for (int f : fds) ::close(f);
      return Status::invalid_input(
          fmt::format("ckpt-slot: cannot open {}: {}", path, std::strerror(errno)));
    }
    fds.push_back(fd);
  }
  // Try every slot, from a random one so waiters do not all queue on slot 0; back off.
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937 rng(static_cast<unsigned>(::getpid()));
  int held = -1;
  bool said = false;
  for (int round = 0; held < 0; ++round) {
    const int first = static_cast<int>(rng() % static_cast<unsigned>(o.slots));
    for (int i = 0; i < o.slots && held < 0; ++i) {
      const int k = (first + i) % o.slots;
      if (::flock(fds[k], LOCK_EX | LOCK_NB) == 0) held = k;
    }
    if (held >= 0) break;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.timeout_s > 0 && waited >= o.timeout_s) {
      for (int f : fds) ::close(f);
      return Status::timeout(fmt::format("ckpt-slot: all {} slot(s) in {} still busy after {} s",
                                         o.slots, o.dir, hw::format_number(waited, 1)));
    }
    if (!said && progress) {
      progress(fmt::format("ckpt-slot: all {} slot(s) busy, waiting", o.slots));
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50 + 25 * round, 500)));
  }
  for (int k = 0; k < o.slots; ++k)
    if (k != held) ::close(fds[k]);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (progress)
    progress(fmt::format("ckpt-slot: slot {} of {} after {} s", held, o.slots,
                         hw::format_number(waited, 2)));

  // Run the command with the slot held; its exit is ours. The lock fd is close-on-exec: the
  // command cannot keep the slot after we are gone.
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) env_storage.emplace_back(*e);
  env_storage.push_back(fmt::format("GPUVET_CKPT_SLOT={}", held));
  std::vector<char*> envp, argv;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    fmt::print(stderr, "gpuvet ckpt-slot: {}: {}\n", o.command.front(), std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
  }
  if (pid < 0) {
    ::close(fds[held]);
    return Status::unavailable(fmt::format("ckpt-slot: fork: {}", std::strerror(errno)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(fds[held]);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace gpuvet
