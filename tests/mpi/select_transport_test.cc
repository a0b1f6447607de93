// Unit tests of select_transport(): which backend a launch environment gets, why,
// and which combinations are refused up front. They set environment variables the
// way each launcher would, in this one process (no MPI is initialised), and pass in
// whether this build has the mpi backend.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "backends/transport.h"
#include "collie/errors.h"
#include "runtime/env.h"

namespace collie::detail {
namespace {

bool have_mpi() {
  for (const std::string& t : available_transports()) {
    if (t == "mpi") return true;
  }
  return false;
}

// Clears every variable selection or read_launch_env look at, then sets `vars`.
class Env {
 public:
  explicit Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* name : kAll) unsetenv(name);
    for (auto& [k, v] : vars) setenv(k, v, 1);
  }
  ~Env() {
    for (const char* name : kAll) unsetenv(name);
  }

 private:
  static constexpr const char* kAll[] = {"COLLIE_RANK",
                                         "COLLIE_WORLD_SIZE",
                                         "COLLIE_LOCAL_RANK",
                                         "COLLIE_LOCAL_WORLD_SIZE",
                                         "COLLIE_JOB_ID",
                                         "COLLIE_BACKEND",
                                         "RANK",
                                         "WORLD_SIZE",
                                         "LOCAL_RANK",
                                         "LOCAL_WORLD_SIZE",
                                         "OMPI_COMM_WORLD_RANK",
                                         "OMPI_COMM_WORLD_SIZE",
                                         "OMPI_COMM_WORLD_LOCAL_RANK",
                                         "OMPI_COMM_WORLD_LOCAL_SIZE",
                                         "PMIX_RANK",
                                         "PMI_RANK",
                                         "PMI_SIZE",
                                         "MPI_LOCALRANKID",
                                         "MPI_LOCALNRANKS",
                                         "SLURM_PROCID",
                                         "SLURM_NTASKS",
                                         "SLURM_LOCALID",
                                         "SLURM_NTASKS_PER_NODE",
                                         "SLURM_STEP_NUM_NODES",
                                         "SLURM_JOB_ID"};
};

TransportChoice choose(const std::string& requested = "") {
  return select_transport(requested, read_launch_env());
}

// The message of the ValueError that choosing throws ("" if none).
std::string refusal(const std::string& requested = "") {
  try {
    choose(requested);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(SelectTransport, NoLauncherIsShm) {
  Env env({});
  TransportChoice c = choose();
  EXPECT_EQ(c.name, "shm");
  EXPECT_TRUE(has(c.reason, "default")) << c.reason;
}

TEST(SelectTransport, CollieRunIsShm) {
  Env env({{"COLLIE_RANK", "1"}, {"COLLIE_WORLD_SIZE", "4"}});
  EXPECT_EQ(choose().name, "shm");
}

TEST(SelectTransport, MpirunIsMpiWhenBuilt) {
  Env env({{"OMPI_COMM_WORLD_RANK", "1"},
           {"OMPI_COMM_WORLD_SIZE", "4"},
           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
           {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
           {"PMIX_RANK", "1"}});
  TransportChoice c = choose();
  if (have_mpi()) {
    EXPECT_EQ(c.name, "mpi");
    EXPECT_EQ(c.reason, "launched by mpirun (OMPI_COMM_WORLD_SIZE)");
  } else {
    EXPECT_EQ(c.name, "shm");  // one host: shm still works
    EXPECT_TRUE(has(c.reason, "no mpi backend")) << c.reason;
  }
}

TEST(SelectTransport, MpirunAcrossHosts) {
  Env env({{"OMPI_COMM_WORLD_RANK", "3"},
           {"OMPI_COMM_WORLD_SIZE", "4"},
           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  if (have_mpi()) {
    EXPECT_EQ(choose().name, "mpi");
  } else {
    std::string why = refusal();
    EXPECT_TRUE(has(why, "COLLIE_WITH_MPI=ON")) << why;
  }
  // shm asked for explicitly cannot span hosts.
  setenv("COLLIE_BACKEND", "shm", 1);
  std::string why = refusal();
  EXPECT_TRUE(has(why, "COLLIE_BACKEND=shm")) << why;
  EXPECT_TRUE(has(why, "only 2 of the 4 ranks run on this host")) << why;
  why = refusal("shm");
  EXPECT_TRUE(has(why, "requested by init()")) << why;
}

TEST(SelectTransport, MpiNeedsAnMpiLauncher) {
  Env env({{"COLLIE_RANK", "0"}, {"COLLIE_WORLD_SIZE", "4"}, {"COLLIE_BACKEND", "mpi"}});
  std::string why = refusal();
  if (have_mpi()) {
    EXPECT_TRUE(has(why, "mpirun -np 4")) << why;
  } else {
    EXPECT_TRUE(has(why, "not available in this build")) << why;
  }
}

TEST(SelectTransport, MpiForAWorldOfOne) {
  Env env({{"COLLIE_BACKEND", "mpi"}});
  if (!have_mpi()) GTEST_SKIP() << "no mpi backend in this build";
  TransportChoice c = choose();
  EXPECT_EQ(c.name, "mpi");
  EXPECT_EQ(c.reason, "COLLIE_BACKEND=mpi");
}

TEST(SelectTransport, InitArgumentBeatsEnvironment) {
  Env env(
      {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"COLLIE_BACKEND", "mpi"}});
  TransportChoice c = choose("shm");
  EXPECT_EQ(c.name, "shm");
  EXPECT_EQ(c.reason, "requested by init()");
}

TEST(SelectTransport, MindSporeNamesTakeTheDefault) {
  Env env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  TransportChoice c = choose("hccl");
  EXPECT_EQ(c.name, have_mpi() ? "mpi" : "shm");
  EXPECT_TRUE(has(c.reason, "init('hccl')")) << c.reason;
  setenv("COLLIE_BACKEND", "shm", 1);
  EXPECT_EQ(choose("nccl").name, "shm");
}

// `mpirun -np 1 collie run -n 4 prog`: collie run's variables win, as in read_launch_env.
TEST(SelectTransport, CollieRunInsideMpirunIsShm) {
  Env env({{"OMPI_COMM_WORLD_RANK", "0"},
           {"OMPI_COMM_WORLD_SIZE", "1"},
           {"COLLIE_RANK", "2"},
           {"COLLIE_WORLD_SIZE", "4"}});
  EXPECT_EQ(choose().name, "shm");
}

TEST(SelectTransport, SrunWithPmix) {
  Env env({{"SLURM_PROCID", "1"},
           {"SLURM_NTASKS", "8"},
           {"SLURM_STEP_NUM_NODES", "2"},
           {"PMIX_RANK", "1"}});
  if (have_mpi()) {
    TransportChoice c = choose();
    EXPECT_EQ(c.name, "mpi");
    EXPECT_EQ(c.reason, "launched by srun --mpi=pmix (PMIX_RANK)");
  } else {
    EXPECT_TRUE(has(refusal(), "2 nodes")) << refusal();
  }
}

// srun without --mpi sets only SLURM_*: shm on one node, refused across nodes.
TEST(SelectTransport, SrunWithoutMpi) {
  Env env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"SLURM_STEP_NUM_NODES", "1"}});
  EXPECT_EQ(choose().name, "shm");
  setenv("SLURM_STEP_NUM_NODES", "2", 1);
  std::string why = refusal();
  EXPECT_TRUE(has(why, "spans 2 nodes")) << why;
  EXPECT_TRUE(has(why, "no MPI launcher")) << why;
}

TEST(SelectTransport, UnknownName) {
  Env env({{"COLLIE_BACKEND", "carrier_pigeon"}});
  std::string why = refusal();
  EXPECT_TRUE(has(why, "carrier_pigeon")) << why;
  EXPECT_TRUE(has(why, "built with: shm")) << why;
}

TEST(SelectTransport, AutoIsTheDefault) {
  Env env({{"COLLIE_BACKEND", "auto"}});
  EXPECT_EQ(choose().name, "shm");
}

}  // namespace
}  // namespace collie::detail
