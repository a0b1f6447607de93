// Wrappers that turn MPI return codes and MPI's int-sized counts into collie errors.
//
// Every communicator collie creates has MPI_ERRORS_RETURN, so a failing MPI call
// returns a code instead of aborting the job; check() turns that code into a
// CommError whose message names the operation, the MPI call and MPI's own text.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

namespace collie::detail {

// MPI's text for an error code, e.g. "MPI_ERR_TRUNCATE: message truncated".
std::string mpi_error_string(int code);

// Throws CommError("<what>: <call> failed: <MPI text>") unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char* call, const std::string& what);

// MPI counts and displacements are ints: ValueError naming `what` when n does not fit.
int mpi_count(size_t n, const std::string& what);

}  // namespace collie::detail
