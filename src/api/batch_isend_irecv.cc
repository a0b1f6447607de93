// batch_isend_irecv (collie/comm.h).
//
// Consecutive ops that name the same group form a *run*, and a run of several
// transfers is one call at the group's choke point: one sequence number, one
// flight-recorder entry and one Work whose parts the backend completes one by
// one (Work::expect_parts). A batch usually names one group, and every call
// through the choke point costs a Work, a recorder entry and a lock: an eight-op
// batch of 8 B messages between 2 ranks executed 15,798 instructions with a call
// per op, 12,616 as one call. A run of one op is started as isend/irecv start
// theirs, so it is recorded as that op; a transfer of a longer run names the
// batch and itself in its errors (OpInfo::describe_transfer).
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "api/p2p_start.h"
#include "api/placeholder.h"
#include "core/inline_or_heap.h"
#include "core/shape_check.h"

namespace collie {

using detail::Backend;
using detail::Group;
using detail::InlineOrHeap;
using detail::OpInfo;
using detail::OpKind;

namespace {

// One op, as checked and prepared before anything starts.
struct Part {
  int peer = -1;                     // group rank
  std::optional<Tensor> contiguous;  // an isend of a non-contiguous tensor: its copy
};

// Consecutive ops on one group.
struct Run {
  // The first run's group is lookup_for_op's (this thread's cache holds it);
  // later runs' are held here, looked up without replacing the cache.
  Group* group = nullptr;
  std::shared_ptr<Group> held;
  size_t begin = 0, end = 0;  // ops [begin, end)
  WorkPtr work;
};

// A batch is usually a few ops: up to this many, its parts and runs live in the
// Batch and it allocates only its results. Only the ops in use are constructed
// (constructing and destroying all eight cost an exchange of two 8 B messages 180
// of its 4,300 instructions).
constexpr size_t kInlineOps = 8;

class Batch {
 public:
  explicit Batch(std::span<const P2POp> ops) : ops_(ops), parts_(ops.size()), runs_(ops.size()) {}

  // Looks up every op's group and peer, and checks the shapes receives are
  // given, so that a bad op in the middle fails the batch before anything
  // started (earlier receives would wait for messages that never come).
  void prepare() {
    for (size_t i = 0; i < ops_.size(); ++i) {
      const P2POp& op = ops_[i];
      if (i == 0 || !(op.group == ops_[i - 1].group.view())) {
        Run& added = runs_[nruns_++];
        added = Run{nullptr, nullptr, i, i, nullptr};
        if (nruns_ == 1) {
          added.group = detail::lookup_for_op(op.group, "batch_isend_irecv");
        } else {
          added.held = detail::lookup_shared_for_op(op.group, "batch_isend_irecv");
          added.group = added.held.get();
        }
      }
      Run& run = runs_[nruns_ - 1];
      run.end = i + 1;
      parts_[i].peer = detail::peer_rank(*run.group, op.peer, "batch_isend_irecv",
                                         op.kind == P2POp::Kind::ISEND ? "dst" : "src");
      if (op.kind == P2POp::Kind::ISEND) {
        if (!op.tensor.is_contiguous()) parts_[i].contiguous = op.tensor.contiguous();
      } else if (op.by_shape) {
        detail::check_shape(op.recv_shape);
      }
    }
  }

  // Starts every run before waiting for any: that is what makes any order of
  // sends and receives safe. Then waits for them in order until one fails: its
  // error is raised at once, and the transfers still going on carry on in the
  // background, keeping their tensors alive (a rank whose peer died hears of it
  // when that is detected, not after its exchanges with every live peer are done).
  std::vector<Tensor> run() {
    std::exception_ptr error;
    size_t started = 0;
    for (; started < nruns_; ++started) {
      try {
        start(runs_[started]);
      } catch (...) {
        error = std::current_exception();
        break;
      }
    }
    if (!error) {
      try {
        make_results_before(ops_.size());  // the placeholders of the last sends
      } catch (...) {
        error = std::current_exception();
      }
    }
    for (size_t r = 0; r < started; ++r) {
      Run& run = runs_[r];
      if (error) {
        keep_alive(run, *run.work);
        continue;
      }
      try {
        run.work->wait();
      } catch (...) {
        error = std::current_exception();
        keep_alive(run, *run.work);  // its other transfers may still be going on
      }
    }
    if (error) std::rethrow_exception(error);
    return std::move(results_);
  }

 private:
  std::span<const P2POp> ops_;
  InlineOrHeap<Part, kInlineOps> parts_;
  InlineOrHeap<Run, kInlineOps> runs_;
  size_t nruns_ = 0;
  std::vector<Tensor> results_;  // of ops [0, results_.size()) (make_results_before)

  // The results of the ops before `end` not made yet: an isend's placeholder, a
  // receive's output. A receive's is made just before it starts, not with the
  // batch's checks: in a batch that sends before it receives, as exchanges
  // usually do, the sends are in their peers' rings without waiting for these
  // allocations, which take place while the messages travel instead (2 ranks,
  // send_recv of 8 B, timestamps in the last rank to start: its checks before
  // the send 50 -> 20 ns; that rank's send is what its peer waits for; its
  // slowest rank's median from the last start over twelve alternating
  // launches 0.59 -> 0.58 us, within the machine's noise).
  void make_results_before(size_t end) {
    if (results_.capacity() == 0) results_.reserve(ops_.size());
    for (size_t i = results_.size(); i < end; ++i) {
      const P2POp& op = ops_[i];
      if (op.kind == P2POp::Kind::ISEND) {
        results_.push_back(detail::scalar_placeholder());
      } else if (!op.by_shape && op.tensor.dtype() == op.recv_dtype) {
        // Shares the template's layout: no lookup of its shape (~70 instructions).
        results_.push_back(Tensor::uninitialized_like(op.tensor));
      } else {
        results_.push_back(Tensor::uninitialized(op.receive_shape(), op.recv_dtype));
      }
    }
  }

  // What an isend sends: its tensor, or the contiguous copy of it.
  const Tensor& send_data(size_t i) const {
    return parts_[i].contiguous ? *parts_[i].contiguous : ops_[i].tensor;
  }

  void start(Run& run) {
    if (run.end - run.begin == 1) return start_one(run);
    OpInfo info;
    info.kind = OpKind::BatchP2P;
    info.count = run.end - run.begin;
    info.blocking = true;
    run.work = run.group->submit_parts(std::move(info), static_cast<uint32_t>(run.end - run.begin),
                                       [&](Backend& b, const WorkPtr& w) { launch(b, w, run); });
  }

  // Hands a run's transfers to the backend, all with the run's Work.
  void launch(Backend& b, const WorkPtr& w, const Run& run) {
    for (size_t i = run.begin; i < run.end; ++i) {
      try {
        start_part(b, w, i);
      } catch (...) {
        // The transfers started so far go on with this Work: it keeps their
        // tensors. The others never start: fail their parts, so the Work ends.
        keep_alive_parts(*w, run.begin, i);
        const std::exception_ptr error = std::current_exception();
        for (size_t j = i; j < run.end; ++j) w->fail(error);
        throw;
      }
    }
  }

  void start_one(Run& run) {
    const size_t i = run.begin;
    const P2POp& op = ops_[i];
    if (op.kind == P2POp::Kind::IRECV) make_results_before(i + 1);
    run.work = op.kind == P2POp::Kind::ISEND
                   ? detail::start_send(*run.group, send_data(i), parts_[i].peer, op.tag, true)
                   : detail::start_recv_into(*run.group, results_[i], parts_[i].peer, op.tag, true);
  }

  void start_part(Backend& b, const WorkPtr& w, size_t i) {
    const P2POp& op = ops_[i];
    if (op.kind == P2POp::Kind::ISEND) {
      const Tensor& in = send_data(i);
      b.send(w, in.data_ptr(), static_cast<size_t>(in.numel()), in.dtype(), parts_[i].peer, op.tag);
    } else {
      make_results_before(i + 1);
      Tensor& out = results_[i];
      b.recv(w, out.data_ptr(), static_cast<size_t>(out.numel()), out.dtype(), parts_[i].peer,
             op.tag);
    }
  }

  void keep_alive(const Run& run, Work& work) { keep_alive_parts(work, run.begin, run.end); }

  void keep_alive_parts(Work& work, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      work.keep_alive(ops_[i].tensor);
      if (i < results_.size()) work.keep_alive(results_[i]);  // a receive's, once started
      if (parts_[i].contiguous) work.keep_alive(*parts_[i].contiguous);
    }
  }
};

}  // namespace

std::vector<Tensor> batch_isend_irecv(const std::vector<P2POp>& p2p_op_list) {
  return batch_isend_irecv(std::span<const P2POp>(p2p_op_list));
}

std::vector<Tensor> batch_isend_irecv(std::initializer_list<P2POp> p2p_op_list) {
  return batch_isend_irecv(std::span<const P2POp>(p2p_op_list.begin(), p2p_op_list.size()));
}

std::vector<Tensor> batch_isend_irecv(std::span<const P2POp> p2p_op_list) {
  if (p2p_op_list.empty())
    throw TypeError("For batch_isend_irecv, p2p_op_list can not be empty list.");
  Batch batch(p2p_op_list);
  batch.prepare();
  return batch.run();
}

}  // namespace collie
