#include "backends/mpi/mpi_call.h"

#include <climits>

#include "collie/errors.h"

namespace collie::detail {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(len));
}

void check_mpi(int rc, const char* call, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  throw CommError(what + ": " + call + " failed: " + mpi_error_string(rc));
}

int mpi_count(size_t n, const std::string& what) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw ValueError(what + ": " + std::to_string(n) +
                     " elements exceed MPI's limit of 2147483647 per call (the mpi backend does "
                     "not split larger transfers; use the shm backend or smaller tensors)");
  }
  return static_cast<int>(n);
}

}  // namespace collie::detail
