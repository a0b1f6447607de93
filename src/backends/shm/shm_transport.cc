#include "backends/shm/shm_transport.h"

#include <algorithm>

#include "backends/shm/arena.h"
#include "backends/shm/cma.h"
#include "backends/shm/engine.h"
#include "backends/shm/shm_backend.h"
#include "collie/errors.h"

namespace collie::detail {
namespace {

constexpr size_t kDefaultSlotBytes = 1 << 20;
constexpr size_t kDefaultRingBytes = 1 << 20;

size_t slot_bytes_from_env(int world_size) {
  size_t bytes = env_bytes("COLLIE_SHM_SLOT_BYTES", kDefaultSlotBytes) / 64 * 64;
  // A slot holds one 64-byte piece per rank and the all_to_all count exchange.
  size_t minimum = std::max<size_t>(4096, static_cast<size_t>(world_size) * 16 * 8);
  if (bytes < minimum) {
    throw ValueError("COLLIE_SHM_SLOT_BYTES must be at least " + std::to_string(minimum) + " for " +
                     std::to_string(world_size) + " ranks");
  }
  return bytes;
}

size_t ring_bytes_from_env() {
  size_t bytes = env_bytes("COLLIE_P2P_RING_BYTES", kDefaultRingBytes) / 64 * 64;
  if (bytes < 4096) throw ValueError("COLLIE_P2P_RING_BYTES must be at least 4096");
  return bytes;
}

class ShmTransport final : public Transport {
 public:
  ShmTransport(const LaunchEnv& env, size_t slot_bytes, size_t ring_bytes)
      : env_(env),
        slot_bytes_(slot_bytes),
        ring_bytes_(ring_bytes),
        check_every_call_(debug_detail()) {}

  std::string name() const override { return "shm"; }

  std::unique_ptr<Backend> create_world(double timeout_seconds) override {
    std::vector<int> ranks(static_cast<size_t>(env_.world_size));
    for (int i = 0; i < env_.world_size; ++i) ranks[static_cast<size_t>(i)] = i;
    ShmGroupConfig cfg =
        config("world", ranks, env_.rank, make_group_id("__world__", ranks, 0), timeout_seconds);
    cfg.ring_bytes = ring_bytes_;
    cfg.with_rings = true;
    auto world = std::make_shared<ShmGroup>(cfg);
    engine_ = std::make_shared<ShmEngine>(world);
    SharedArena::instance().configure(env_.job_id, env_.rank);
    return std::make_unique<ShmBackend>(engine_, world);
  }

  std::unique_ptr<Backend> create_group(const GroupSpec& spec) override {
    // Sub-groups have no rings: point-to-point always travels over the world's.
    auto group = std::make_shared<ShmGroup>(
        config(spec.name, spec.world_ranks, spec.my_group_rank,
               make_group_id(spec.name, spec.world_ranks, spec.incarnation), spec.timeout_seconds));
    return std::make_unique<ShmBackend>(engine_, group);
  }

  void shutdown() override {
    if (engine_) engine_->shutdown();
    engine_.reset();
    // Every operation has finished, so no peer still needs to map our chunks.
    SharedArena::instance().shutdown();
  }

 private:
  ShmGroupConfig config(const std::string& name, const std::vector<int>& ranks, int me, uint64_t id,
                        double timeout) const {
    ShmGroupConfig cfg;
    cfg.job_id = env_.job_id;
    cfg.name = name;
    cfg.group_id = id;
    cfg.world_ranks = ranks;
    cfg.my_group_rank = me;
    cfg.slot_bytes = slot_bytes_;
    cfg.timeout_seconds = timeout;
    cfg.check_every_call = check_every_call_;
    cfg.oversubscribed = more_ranks_than_cpus(env_.world_size);  // shm: every rank is here
    cfg.collective_cma = !cfg.oversubscribed || cma_forced_by_env();
    return cfg;
  }

  LaunchEnv env_;
  size_t slot_bytes_;
  size_t ring_bytes_;
  bool check_every_call_;  // COLLIE_DEBUG=detail
  std::shared_ptr<ShmEngine> engine_;
};

}  // namespace

std::unique_ptr<Transport> make_shm_transport(const LaunchEnv& env) {
  return std::make_unique<ShmTransport>(env, slot_bytes_from_env(env.world_size),
                                        ring_bytes_from_env());
}

}  // namespace collie::detail
