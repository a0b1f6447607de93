#include "backends/transport.h"

#include <cstdlib>

#include "backends/shm/shm_transport.h"
#include "collie/errors.h"

namespace collie::detail {

std::vector<std::string> available_transports() { return {"shm"}; }

TransportChoice select_transport(const std::string& requested, const LaunchEnv& env) {
  (void)env;
  std::string name = requested;
  std::string reason = "requested by init()";
  if (name.empty()) {
    const char* v = std::getenv("COLLIE_BACKEND");
    if (v != nullptr && *v != '\0') {
      name = v;
      reason = "COLLIE_BACKEND";
    }
  }
  // MindSpore's backend names are accepted and run on the default transport.
  if (name.empty() || name == "hccl" || name == "nccl" || name == "mccl") {
    return {"shm", name.empty() ? "default: all ranks on one machine" : reason + " ('" + name + "' runs on shm)"};
  }
  for (const std::string& t : available_transports()) {
    if (t == name) return {name, reason};
  }
  std::string built;
  for (const std::string& t : available_transports()) built += (built.empty() ? "" : ", ") + t;
  throw ValueError("init: backend '" + name + "' (" + reason + ") is not available in this build of collie (built with: " + built + ")");
}

std::unique_ptr<Transport> make_transport(const TransportChoice& choice, const LaunchEnv& env) {
  if (choice.name == "shm") return make_shm_transport(env);
  throw ValueError("init: no transport named '" + choice.name + "'");
}

}  // namespace collie::detail
