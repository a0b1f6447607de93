#include "backends/shm/doorbell.h"

#include "runtime/futex.h"

namespace collie::detail {

// seq_cst on both sides: either the waker sees the sleeper (and wakes it), or the
// sleeper's later load of `count` sees the waker's increment (and does not sleep).
void Doorbell::ring(bool everyone) {
  count.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) != 0 ||
      (everyone && idle_sleepers.load(std::memory_order_seq_cst) != 0)) {
    futex_wake(&count, 1 << 30);
  }
}

uint32_t Doorbell::prepare_wait(bool idle) {
  (idle ? idle_sleepers : sleepers).fetch_add(1, std::memory_order_seq_cst);
  return count.load(std::memory_order_seq_cst);
}

void Doorbell::wait(uint32_t seen, int64_t timeout_ns) { futex_wait(&count, seen, timeout_ns); }

void Doorbell::finish_wait(bool idle) {
  (idle ? idle_sleepers : sleepers).fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace collie::detail
