// probe/watchdog.h — run a probe on its own thread and stop waiting at a deadline.
//
// An NVML call on a GPU that fell off the bus can block for minutes, and a
// thread blocked inside a driver cannot be cancelled. So each probe runs on a
// detached thread that writes into a shared Slot; the caller waits until the
// deadline and then takes whatever was published so far. A probe that missed
// its deadline is "abandoned": its thread may still be running, so the Slot,
// and anything the thread captured, are shared_ptr-owned and outlive the wait.
// Slot is thread-safe; T must be copyable.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace gpuvet::probe {

template <typename T>
class Slot {
 public:
  // Called by the probe thread: makes the progress so far visible to the waiter.
  void publish(const T& value) {
    std::lock_guard lock(mu_);
    value_ = value;
  }
  // The call the probe is inside of, for "… did not return" messages. Must be a string literal.
  void entering(const char* call) { current_.store(call, std::memory_order_relaxed); }
  const char* current_call() const { return current_.load(std::memory_order_relaxed); }

  void finish(const T& value) {
    {
      std::lock_guard lock(mu_);
      value_ = value;
      done_ = true;
    }
    cv_.notify_all();
  }
  // Waits until finished or the deadline; returns {finished, latest value}.
  std::pair<bool, T> wait_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [&] { return done_; });
    return {done_, value_};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  T value_{};
  std::atomic<const char*> current_{nullptr};
};

// Starts fn(slot) on a detached thread. fn must finish by calling slot.finish().
template <typename T>
std::shared_ptr<Slot<T>> start_probe(std::function<void(Slot<T>&)> fn) {
  auto slot = std::make_shared<Slot<T>>();
  std::thread([slot, fn = std::move(fn)] { fn(*slot); }).detach();
  return slot;
}

}  // namespace gpuvet::probe
