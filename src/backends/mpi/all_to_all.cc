// all_to_all on the mpi backend (make_all_to_all in operations.h).
//
// Like shm, the ranks first share every rank's send and receive counts (one
// MPI_Iallgather of a row of 2N + 1 words a rank), so each knows the whole
// matrix: a mismatch (i sends j fewer or more elements than j expects) fails on
// every rank alike, before any data moves, and the group stays usable. MPI
// itself would truncate or misplace data instead.
//
// Then the data moves in one nonblocking call. MPI_Ialltoallv reads one send
// buffer, which an input given piece by piece (AllToAllInput: the list form on
// tensors made one by one) is not: such a rank asks, in its row's last word, for
// MPI_Ialltoallw, whose displacements are in bytes and whose datatypes are per
// peer, so that each piece is sent from where it lies (Placer). A collective
// must be the same call on every rank, so when any rank asks every rank makes
// that call, a packed input's pieces placed the same way. Until the forty-
// seventh session the pieces were copied together into the task's scratch
// first (a new scratch of the input's size a call); 2 ranks, Open MPI 4.1.4
// (vader), float32 inputs made one by one, medians after a barrier, best of
// three rounds, two alternating runs: 1 MiB 111-128 -> 59-61 us, 4 MiB 615-625
// -> 113-120 us, 32 MiB 107-111 -> 1.8-1.9 ms, all_to_all_single's time at each
// (up to 32 KiB even: 13-23 us either way).
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/mpi/mpi_call.h"
#include "backends/mpi/operations.h"
#include "collie/errors.h"

namespace collie::detail {
namespace {

// One rank's side of the call, kept for the phases (which run on the progress
// thread after make_all_to_all returned; its count spans are gone by then).
struct Side {
  size_t n = 0;
  size_t esize = 0;
  MPI_Datatype raw = MPI_DATATYPE_NULL;
  std::vector<size_t> send, recv;     // elements for / from each group rank
  std::vector<const uint8_t*> piece;  // where the piece for each group rank lies
  bool packed = true;                 // piece[j] follow each other from piece[0]
  const uint8_t* first = nullptr;     // the packed input (packed only)
  uint8_t* out = nullptr;
};

// How MPI_Ialltoallw finds one piece: `count` elements of `type` at `displ`
// bytes from its buffer argument.
struct Placed {
  int count = 0;
  int displ = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

// Places pieces for one MPI_Ialltoallw. A piece within an int's reach of its
// buffer argument (MPI's displacements are ints) is raw elements at a byte
// displacement, which Open MPI moves as fast as MPI_Ialltoallv's data (2
// ranks, 32 MiB: 1.7 ms either way). One farther away, before or after it, is
// one element of a datatype made for it whose own displacement (an MPI_Aint)
// reaches it: slower (a first version placed every piece so: 32 MiB, 2.5 ms),
// and rare for large pieces, which lie near each other. The
// datatypes are freed once the call is posted (or failed to be): MPI lets a
// datatype be freed while a call that uses it is in flight, and Open MPI holds
// a reference of its own until the call completes.
class Placer {
 public:
  Placer(MPI_Datatype raw, const std::string& what) : raw_(raw), what_(what) {}
  Placer(const Placer&) = delete;
  Placer& operator=(const Placer&) = delete;
  ~Placer() {
    // Copies: MPI_Type_free resets the handle it is given, and the arrays passed
    // to MPI_Ialltoallw must stay as they were until it completes.
    for (MPI_Datatype t : made_) MPI_Type_free(&t);
  }

  Placed place(size_t count, ptrdiff_t displ) {
    if (count == 0) return {0, 0, raw_};
    const int n = mpi_count(count, what_);
    if (displ >= 0 && displ <= INT_MAX) return {n, static_cast<int>(displ), raw_};
    Placed p{1, 0, MPI_DATATYPE_NULL};
    const auto at = static_cast<MPI_Aint>(displ);
    check_mpi(MPI_Type_create_hindexed(1, &n, &at, raw_, &p.type), "MPI_Type_create_hindexed",
              what_);
    made_.push_back(p.type);
    check_mpi(MPI_Type_commit(&p.type), "MPI_Type_commit", what_);
    return p;
  }

 private:
  MPI_Datatype raw_;
  const std::string& what_;
  std::vector<MPI_Datatype> made_;
};

// How far `at` lies after `base` (negative: before it), where the two may lie in
// different allocations (which pointer subtraction does not allow).
ptrdiff_t bytes_after(const uint8_t* base, const uint8_t* at) {
  return static_cast<ptrdiff_t>(reinterpret_cast<uintptr_t>(at) -
                                reinterpret_cast<uintptr_t>(base));
}

// The send buffer argument for pieces that lie apart: the lowest piece at most
// half an int's reach below the largest, so that pieces up to half a reach
// either side of the largest are raw elements (Placer).
const uint8_t* send_base(const Side& s) {
  size_t largest = s.n;
  for (size_t j = 0; j < s.n; ++j) {
    if (s.send[j] != 0 && (largest == s.n || s.send[j] > s.send[largest])) largest = j;
  }
  if (largest == s.n) return s.piece[0];  // nothing to send
  const auto anchor = reinterpret_cast<uintptr_t>(s.piece[largest]);
  uintptr_t base = anchor;
  for (size_t j = 0; j < s.n; ++j) {
    const auto at = reinterpret_cast<uintptr_t>(s.piece[j]);
    if (s.send[j] != 0 && at < base && anchor - at <= INT_MAX / 2) base = at;
  }
  return reinterpret_cast<const uint8_t*>(base);
}

// MPI_Ialltoallw on every piece where it lies, into `out` at its displacements.
void post_in_place(Task& task, const Side& s, MPI_Comm comm) {
  const std::string what = task.describe();
  std::vector<int>& scounts = task.ints(s.n);
  std::vector<int>& sdispls = task.ints(s.n);
  std::vector<int>& rcounts = task.ints(s.n);
  std::vector<int>& rdispls = task.ints(s.n);
  auto* types = reinterpret_cast<MPI_Datatype*>(task.scratch(2 * s.n * sizeof(MPI_Datatype)));
  MPI_Datatype* stypes = types;
  MPI_Datatype* rtypes = types + s.n;
  const uint8_t* send = s.packed ? s.first : send_base(s);
  // A rank that receives nothing still names a buffer of its own: Open MPI's
  // nonblocking collectives before 4.1.3 took a send and a receive buffer that
  // are both MPI_BOTTOM (null) for MPI_IN_PLACE (open-mpi/ompi#9650).
  uint8_t* recv = s.out;
  if (recv == nullptr) recv = task.scratch(1);
  if (send == nullptr) send = task.scratch(1);
  Placer placer(s.raw, what);
  size_t received = 0;
  for (size_t j = 0; j < s.n; ++j) {
    const Placed sp = placer.place(s.send[j], s.send[j] == 0 ? 0 : bytes_after(send, s.piece[j]));
    const Placed rp = placer.place(s.recv[j], static_cast<ptrdiff_t>(received * s.esize));
    scounts[j] = sp.count;
    sdispls[j] = sp.displ;
    stypes[j] = sp.type;
    rcounts[j] = rp.count;
    rdispls[j] = rp.displ;
    rtypes[j] = rp.type;
    received += s.recv[j];
  }
  check_mpi(MPI_Ialltoallw(send, scounts.data(), sdispls.data(), stypes, recv, rcounts.data(),
                           rdispls.data(), rtypes, comm, task.post()),
            "MPI_Ialltoallw", what);
}

// MPI_Ialltoallv from the packed input.
void post_packed(Task& task, const Side& s, MPI_Comm comm) {
  const std::string what = task.describe();
  std::vector<int>& sc = task.ints(s.n);
  std::vector<int>& sd = task.ints(s.n);
  std::vector<int>& rc = task.ints(s.n);
  std::vector<int>& rd = task.ints(s.n);
  size_t soff = 0, roff = 0;
  for (size_t j = 0; j < s.n; ++j) {
    sc[j] = mpi_count(s.send[j], what);
    sd[j] = mpi_count(soff, what);
    rc[j] = mpi_count(s.recv[j], what);
    rd[j] = mpi_count(roff, what);
    soff += s.send[j];
    roff += s.recv[j];
  }
  check_mpi(MPI_Ialltoallv(s.first, sc.data(), sd.data(), s.raw, s.out, rc.data(), rd.data(), s.raw,
                           comm, task.post()),
            "MPI_Ialltoallv", what);
}

}  // namespace

std::unique_ptr<Task> make_all_to_all(const MpiGroup& g, const WorkPtr& w,
                                      const AllToAllInput& input, CountSpan send_counts, void* out,
                                      CountSpan recv_counts, DType dtype) {
  auto t = std::make_unique<Task>(w);
  const std::string what = w->info().describe();
  auto side = std::make_shared<Side>();
  Side& s = *side;
  s.n = static_cast<size_t>(g.size());
  s.esize = element_size(dtype);
  s.raw = raw_type(dtype);
  s.send.assign(send_counts.begin(), send_counts.end());
  s.recv.assign(recv_counts.begin(), recv_counts.end());
  s.packed = input.is_packed();
  s.first = static_cast<const uint8_t*>(input.packed);
  s.out = static_cast<uint8_t*>(out);
  s.piece.resize(s.n);
  // Counts and displacements must fit MPI's ints whichever call moves the data:
  // checked here, so that the caller gets the ValueError before anything starts.
  size_t soff = 0, roff = 0;
  for (size_t j = 0; j < s.n; ++j) {
    s.piece[j] = static_cast<const uint8_t*>(input.piece(j, soff * s.esize));
    mpi_count(s.send[j], what);
    mpi_count(soff, what);
    mpi_count(s.recv[j], what);
    mpi_count(roff, what);
    soff += s.send[j];
    roff += s.recv[j];
  }

  // Row i of the table: [what i sends to 0..n-1, what i expects from 0..n-1,
  // whether i asks for its pieces to be sent where they lie].
  const size_t row = 2 * s.n + 1;
  auto* mine = reinterpret_cast<uint64_t*>(t->scratch(row * sizeof(uint64_t)));
  auto* table = reinterpret_cast<uint64_t*>(t->scratch(s.n * row * sizeof(uint64_t)));
  for (size_t j = 0; j < s.n; ++j) {
    mine[j] = s.send[j];
    mine[s.n + j] = s.recv[j];
  }
  mine[2 * s.n] = s.packed ? 0 : 1;
  MPI_Comm comm = g.comm;
  const std::vector<int> world = g.world_ranks;
  t->then([=](Task& task) {
    check_mpi(MPI_Iallgather(mine, static_cast<int>(row), MPI_UINT64_T, table,
                             static_cast<int>(row), MPI_UINT64_T, comm, task.post()),
              "MPI_Iallgather", task.describe());
  });
  t->then([=](Task& task) {
    const size_t n = side->n;
    std::string mismatches;
    bool in_place = false;
    for (size_t i = 0; i < n; ++i) {
      in_place |= table[i * row + 2 * n] != 0;
      for (size_t j = 0; j < n; ++j) {
        uint64_t sent = table[i * row + j], expected = table[j * row + n + i];
        if (sent != expected && mismatches.size() < 400) {
          mismatches += " rank " + std::to_string(world[i]) + " sends " + std::to_string(sent) +
                        " elements to rank " + std::to_string(world[j]) + ", which expects " +
                        std::to_string(expected) + ";";
        }
      }
    }
    if (!mismatches.empty()) {
      task.keeps_group_usable = true;  // every rank stops here, before any data moved
      throw CommError(task.describe() + ": send and receive sizes disagree:" + mismatches);
    }
    if (in_place) {
      post_in_place(task, *side, comm);
    } else {
      post_packed(task, *side, comm);
    }
  });
  return t;
}

}  // namespace collie::detail
