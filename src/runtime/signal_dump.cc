#include "runtime/signal_dump.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace collie::detail {
namespace {

std::atomic<int> g_write_fd{-1};

void on_sigusr1(int) {
  int fd = g_write_fd.load();
  if (fd >= 0) {
    char b = 'd';
    [[maybe_unused]] ssize_t n = write(fd, &b, 1);
  }
}

}  // namespace

SignalDump::SignalDump(std::function<void()> dump) : dump_(std::move(dump)) {
  struct sigaction old {};
  if (sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  if (pipe2(pipe_, O_CLOEXEC) != 0) return;
  g_write_fd.store(pipe_[1]);
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  installed_ = true;
  thread_ = std::thread([this] {
    char b;
    while (read(pipe_[0], &b, 1) == 1 && b == 'd') dump_();
  });
}

SignalDump::~SignalDump() {
  if (!installed_) return;
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  g_write_fd.store(-1);
  char q = 'q';
  [[maybe_unused]] ssize_t n = write(pipe_[1], &q, 1);
  thread_.join();
  close(pipe_[0]);
  close(pipe_[1]);
}

}  // namespace collie::detail
