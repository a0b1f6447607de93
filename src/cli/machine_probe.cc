#include "cli/machine_probe.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <vector>

#include "cli/cpu_binding.h"

namespace collie::cli {

double memcpy_gbps() {
  const size_t bytes = 64u << 20;
  std::vector<char> a(bytes, 1), b(bytes, 0);
  std::vector<double> t;
  for (int i = 0; i < 7; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    a[static_cast<size_t>(i)] =
        b[bytes - 1 - static_cast<size_t>(i)];  // keep the copies observable
  }
  std::sort(t.begin(), t.end());
  return static_cast<double>(bytes) / t[t.size() / 2] / 1e9;
}

namespace {

constexpr size_t kHandoffBytes = 256u << 10;
constexpr long kTurns = 1000;
constexpr int kRounds = 3;

// Shared between the two processes: each side's progress count and each side's
// buffer.
struct Handoff {
  struct alignas(64) Counter {
    std::atomic<long> value{0};
  };
  Counter done[2];
  alignas(64) char buffer[2][kHandoffBytes];
};

// Plays side `side` (0 or 1) of `kRounds` x `kTurns` turns. In every turn both
// sides write their own buffer, then each copies the other's out: both
// directions at once, as in a collective step. False if the other side stopped
// answering for a second.
bool play(Handoff& h, int side, std::vector<double>* seconds) {
  std::vector<char> mine(kHandoffBytes, static_cast<char>(side + 1)), out(kHandoffBytes);
  std::atomic<long>& my_count = h.done[side].value;
  const std::atomic<long>& their_count = h.done[1 - side].value;
  const auto patience = std::chrono::seconds(1);
  auto await = [&](long count) {
    const auto since = std::chrono::steady_clock::now();
    for (unsigned spins = 0; their_count.load(std::memory_order_acquire) < count; ++spins) {
      if (spins % 1024 == 1023) {
        if (std::chrono::steady_clock::now() - since > patience) return false;
        sched_yield();  // one CPU per side is the intent, but never starve the other
      }
    }
    return true;
  };
  long count = 0;
  for (int round = 0; round < kRounds; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long k = 0; k < kTurns; ++k) {
      std::memcpy(h.buffer[side], mine.data(), kHandoffBytes);
      my_count.store(++count, std::memory_order_release);
      if (!await(count)) return false;
      std::memcpy(out.data(), h.buffer[1 - side], kHandoffBytes);
      my_count.store(++count, std::memory_order_release);
      if (!await(count)) return false;
    }
    if (seconds != nullptr) {
      seconds->push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  return true;
}

}  // namespace

double handoff_gbps(const std::vector<int>& cpus) {
  if (cpus.size() < 2) return 0;
  void* mem =
      mmap(nullptr, sizeof(Handoff), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 0;
  auto* h = new (mem) Handoff;
  const cpu_set_t before = [] {
    cpu_set_t s;
    CPU_ZERO(&s);
    sched_getaffinity(0, sizeof s, &s);
    return s;
  }();
  const pid_t child = fork();
  if (child < 0) {
    munmap(mem, sizeof(Handoff));
    return 0;
  }
  if (child == 0) {
    bind_to_cpu(cpus[1]);
    _exit(play(*h, 1, nullptr) ? 0 : 1);
  }
  bind_to_cpu(cpus[0]);
  std::vector<double> seconds;
  const bool ok = play(*h, 0, &seconds);
  sched_setaffinity(0, sizeof before, &before);
  if (!ok) kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  munmap(mem, sizeof(Handoff));
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || seconds.empty()) return 0;
  std::sort(seconds.begin(), seconds.end());
  return static_cast<double>(kTurns) * kHandoffBytes / seconds[seconds.size() / 2] / 1e9;
}

std::string cpu_model_name(std::string_view cpuinfo) {
  size_t at = 0;
  while (at < cpuinfo.size()) {
    size_t end = cpuinfo.find('\n', at);
    if (end == std::string_view::npos) end = cpuinfo.size();
    std::string_view line = cpuinfo.substr(at, end - at);
    at = end + 1;
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
    return std::string(value);
  }
  return "";
}

namespace {

std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

}  // namespace

std::string cpu_summary() {
  std::ifstream f("/proc/cpuinfo");
  std::stringstream text;
  text << f.rdbuf();
  std::string summary = cpu_model_name(text.str());
  // sysfs numbers the caches per CPU: index2 is L2 and index3 L3 on x86 and most
  // others; the level file says which, so nothing is assumed.
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    const std::string level = read_first_line((dir + "/level").c_str());
    if (level != "2" && level != "3") continue;
    const std::string size = read_first_line((dir + "/size").c_str());
    if (size.empty()) continue;
    summary += (summary.empty() ? "" : ", ") + std::string("L") + level + " " + size;
  }
  return summary.empty() ? "unknown CPU" : summary;
}

std::string selected_mode(std::string_view sysfs_text) {
  const size_t open = sysfs_text.find('[');
  if (open == std::string_view::npos) return "";
  const size_t close = sysfs_text.find(']', open);
  if (close == std::string_view::npos) return "";
  return std::string(sysfs_text.substr(open + 1, close - open - 1));
}

std::string huge_page_mode() {
  const std::string mode =
      selected_mode(read_first_line("/sys/kernel/mm/transparent_hugepage/enabled"));
  return mode.empty() ? "unknown" : mode;
}

}  // namespace collie::cli
