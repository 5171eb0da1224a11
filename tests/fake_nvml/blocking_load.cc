// A shared library whose constructor blocks, as a driver library does when its
// initialisation waits on a wedged device or its file sits on a hung mount.
// dlopen() does not return until the constructor does: gpuvet must give up on
// the load at its init deadline. GPUVET_TEST_BLOCKING_LOAD_S sets how long the
// constructor sleeps (default 600 s). It exports nvmlInit_v2 only, so a load
// that does finish is "not NVML".
#include <unistd.h>

#include <cstdlib>

namespace {

__attribute__((constructor)) void block_in_constructor() {
  unsigned seconds = 600;
  if (const char* s = std::getenv("GPUVET_TEST_BLOCKING_LOAD_S"); s && *s)
    seconds = static_cast<unsigned>(std::strtoul(s, nullptr, 10));
  // sleep() may return early on a signal: sleep the rest.
  while (seconds > 0) seconds = ::sleep(seconds);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int nvmlInit_v2() { return 0; }
