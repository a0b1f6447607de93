// The MPI transport: collie on MPI_COMM_WORLD, for jobs started by mpirun or srun.
#pragma once

#include <memory>
#include <string>

#include "backends/transport.h"

namespace collie::detail {

// Initialises MPI (once per process) and checks that MPI_COMM_WORLD agrees with
// the launch environment (RuntimeError otherwise). Reads COLLIE_MPI_REDUCTION.
std::unique_ptr<Transport> make_mpi_transport(const LaunchEnv& env);

// "Open MPI v4.1.4" for `collie info`, without initialising MPI.
std::string mpi_library_version();

}  // namespace collie::detail
