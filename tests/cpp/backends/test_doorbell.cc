// Whom each kind of ring wakes (doorbell.h): a sleeper thread waits on a real
// doorbell and the test rings it only once that thread is asleep in the kernel,
// so "not woken" means the ring passed it by, not that it had not slept yet.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/shm/doorbell.h"
#include "runtime/coarse_clock.h"
#include "runtime/cpu_relax.h"
#include "runtime/membarrier.h"

namespace collie::detail {
namespace {

using namespace std::chrono_literals;

enum class Sleeper { kBusy, kIdle, kParked };

// One thread that sleeps once on `bell` as `kind` (up to 10 s) and records that
// it woke.
class SleepingThread {
 public:
  SleepingThread(Doorbell& bell, Sleeper kind) : bell_(bell) {
    thread_ = std::thread([this, kind] {
      tid_.store(static_cast<pid_t>(syscall(SYS_gettid)));
      const bool idle = kind == Sleeper::kIdle;
      if (kind == Sleeper::kParked) {
        bell_.wait(bell_.prepare_park(), 10'000'000'000);
      } else {
        bell_.wait(bell_.prepare_wait(idle), 10'000'000'000);
      }
      if (kind == Sleeper::kParked) {
        bell_.finish_park();
      } else {
        bell_.finish_wait(idle);
      }
      woke_.store(true);
    });
    wait_until_asleep();
  }
  ~SleepingThread() {
    bell_.wake_all();
    thread_.join();
  }
  // Whether it woke within `within` (it is given that long when it should).
  bool woke(std::chrono::milliseconds within) const {
    const auto end = std::chrono::steady_clock::now() + within;
    while (!woke_.load() && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(1ms);
    return woke_.load();
  }

 private:
  // Until the kernel reports the thread sleeping (state S in /proc), that is, in
  // its futex wait: a ring before that would only make the wait return at once.
  void wait_until_asleep() const {
    while (tid_.load() == 0) std::this_thread::sleep_for(1ms);
    const std::string stat = "/proc/self/task/" + std::to_string(tid_.load()) + "/stat";
    for (int i = 0; i < 10'000; ++i) {
      std::ifstream in(stat);
      std::string line;
      std::getline(in, line);
      const auto close = line.rfind(')');
      if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'S') return;
      std::this_thread::sleep_for(1ms);
    }
    FAIL() << "the sleeper thread never went to sleep";
  }

  Doorbell& bell_;
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> woke_{false};
  std::thread thread_;
};

constexpr auto kPassesBy = 50ms;  // how long a sleeper that must not wake is watched
constexpr auto kWakes = 5000ms;   // how long one that must wake is given

// A `kind` sleeper on `bell` sleeps through a ring of `ignored`, then wakes for
// one of `wakes`.
void expect_ignores_then_wakes(Doorbell& bell, Sleeper kind, Ring ignored, Ring wakes) {
  SleepingThread sleeper(bell, kind);
  bell.ring(ignored);
  EXPECT_FALSE(sleeper.woke(kPassesBy)) << "woken by ring kind " << static_cast<int>(ignored);
  bell.ring(wakes);
  EXPECT_TRUE(sleeper.woke(kWakes)) << "not woken by ring kind " << static_cast<int>(wakes);
}

TEST(Doorbell, AThreadWithWorkInFlightWakesForEveryRing) {
  for (Ring what : {Ring::kStep, Ring::kBytes, Ring::kAwaited, Ring::kNudge}) {
    Doorbell bell;
    SleepingThread busy(bell, Sleeper::kBusy);
    bell.ring(what);
    EXPECT_TRUE(busy.woke(kWakes)) << static_cast<int>(what);
  }
}

TEST(Doorbell, AnIdleProgressThreadSleepsThroughStepRingsAndWakesForBytes) {
  Doorbell bell;
  expect_ignores_then_wakes(bell, Sleeper::kIdle, Ring::kStep, Ring::kBytes);
}

TEST(Doorbell, AParkedThreadSleepsThroughEveryRingWhileACallerDrives) {
  Doorbell bell;
  bell.drivers.store(1);
  bell.async_pending.store(1);
  bell.drivers_left_ns.store(0);  // long ago
  SleepingThread parked(bell, Sleeper::kParked);
  for (Ring what : {Ring::kStep, Ring::kBytes, Ring::kAwaited, Ring::kNudge}) bell.ring(what);
  EXPECT_FALSE(parked.woke(kPassesBy));
  bell.wake_all();  // what the last driver does when it leaves asynchronous work behind
  EXPECT_TRUE(parked.woke(kWakes));
}

TEST(Doorbell, AParkedThreadWithoutAsynchronousWorkIgnoresPlainBytes) {
  Doorbell bell;
  bell.drivers_left_ns.store(0);
  SleepingThread parked(bell, Sleeper::kParked);
  bell.ring(Ring::kStep);
  bell.ring(Ring::kBytes);
  EXPECT_FALSE(parked.woke(kPassesBy));
}

TEST(Doorbell, AParkedThreadWakesForBytesWhileAsynchronousWorkIsPending) {
  Doorbell bell;
  bell.async_pending.store(2);
  expect_ignores_then_wakes(bell, Sleeper::kParked, Ring::kStep, Ring::kBytes);
}

TEST(Doorbell, AWaitingSenderWakesAParkedThreadOnlyOnceItsCallerHasBeenGoneAWhile) {
  {
    Doorbell bell;
    // The last driver has just left (a time that is never "a while ago").
    bell.drivers_left_ns.store(std::numeric_limits<int64_t>::max() / 2);
    // The sender, having waited, rings again (kNudge).
    expect_ignores_then_wakes(bell, Sleeper::kParked, Ring::kAwaited, Ring::kNudge);
  }
  {
    Doorbell bell;
    bell.drivers_left_ns.store(coarse_now_ns() - 10 * kParkedListensAfterNs);
    SleepingThread parked(bell, Sleeper::kParked);
    bell.ring(Ring::kAwaited);
    EXPECT_TRUE(parked.woke(kWakes));
  }
}

// ring_step with and without its barrier: the unfenced ring needs this process
// registered for machine-wide membarriers (true on Linux 4.16 and later, false
// under ThreadSanitizer, which cannot see their ordering) and a doorbell whose
// sleepers issue one; otherwise it is ring(Ring::kStep). Both are checked where
// the kernel allows the first.
std::vector<bool> step_ring_kinds() {
  std::vector<bool> kinds = {false};
  if (membarrier_ready(MembarrierScope::kMachine)) kinds.push_back(true);
  return kinds;
}

TEST(Doorbell, AStepRingWakesAThreadWithWorkInFlightAndPassesAnIdleOneBy) {
  for (bool unfenced : step_ring_kinds()) {
    {
      Doorbell bell;
      if (unfenced) bell.enable_unfenced_step_rings();
      SleepingThread busy(bell, Sleeper::kBusy);
      bell.ring_step(unfenced);
      EXPECT_TRUE(busy.woke(kWakes)) << "unfenced " << unfenced;
    }
    Doorbell bell;
    if (unfenced) bell.enable_unfenced_step_rings();
    SleepingThread idle(bell, Sleeper::kIdle);
    bell.ring_step(unfenced);
    EXPECT_FALSE(idle.woke(kPassesBy)) << "unfenced " << unfenced;
  }
}

// The handshake ring_step relies on, run as a litmus test: in each round a
// publisher stores a step and rings while the doorbell's owner announces
// itself, looks at the step and goes to sleep, the two started together and
// offset by a random few cycles, so that their store-then-load sequences
// overlap (where x86 lets each load miss the other's store). A ring lost that
// way leaves the owner asleep for its whole timeout; none may be. (With the
// owner's membarrier left out, 41 rings of 2,000 were lost on the project's
// VM; with it, none of 20,000.)
TEST(Doorbell, NoStepRingIsLostWhileItsOwnerGoesToSleep) {
  constexpr int kRounds = 20000;
  constexpr int64_t kTimeoutNs = 500'000'000;  // far beyond any wake-up
  for (bool unfenced : step_ring_kinds()) {
    Doorbell bell;
    if (unfenced) bell.enable_unfenced_step_rings();
    std::atomic<int> step{0}, arrived{0};
    // Both threads arrive (2 per round), then start the round together.
    auto start_round = [&arrived](int round, std::minstd_rand& random) {
      arrived.fetch_add(1);
      while (arrived.load() < 2 * round) cpu_relax();
      for (unsigned spin = random() % 64; spin > 0; --spin) cpu_relax();
    };
    std::thread publisher([&] {
      std::minstd_rand random(7);
      for (int i = 1; i <= kRounds; ++i) {
        start_round(i, random);
        step.store(i, std::memory_order_relaxed);
        bell.ring_step(unfenced);
      }
    });
    std::minstd_rand random(11);
    int timed_out = 0;
    for (int i = 1; i <= kRounds; ++i) {
      start_round(i, random);
      while (step.load(std::memory_order_relaxed) < i) {
        const Doorbell::Ticket ticket = bell.prepare_wait();
        if (step.load(std::memory_order_relaxed) < i) {
          const auto start = std::chrono::steady_clock::now();
          bell.wait(ticket, kTimeoutNs);
          timed_out +=
              std::chrono::steady_clock::now() - start >= std::chrono::nanoseconds(kTimeoutNs);
        }
        bell.finish_wait();
      }
    }
    publisher.join();
    EXPECT_EQ(timed_out, 0) << "unfenced " << unfenced;
  }
}

}  // namespace
}  // namespace collie::detail
