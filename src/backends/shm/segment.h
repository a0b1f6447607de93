// A POSIX shared-memory object mapped into this process.
//
// Segments are created O_CREAT|O_EXCL with mode 0600 (only this user, never an
// existing object) and unlinked by their owner as soon as every peer has mapped
// them, so a crash after start-up leaks nothing. Names are
// "/collie-<uid>-<job id>-<group id>-<rank>"; `collie run` sweeps that job prefix
// after the job as a second line of defence.
#pragma once

#include <cstddef>
#include <string>

namespace collie::detail {

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates and maps a new zero-filled object of `bytes`. Checks /dev/shm has room
  // (CommError naming needed vs free bytes). EEXIST → returns false, maps nothing.
  static bool create(const std::string& name, size_t bytes, Segment* out);
  // Maps an existing object. ENOENT → false (not created yet); other errors throw.
  static bool open(const std::string& name, Segment* out);
  // Removes the name (the memory lives on while mapped). Missing names are ignored.
  static void unlink(const std::string& name);

  // Fills this process's page tables for bytes [offset, offset + bytes) now
  // (madvise MADV_POPULATE_WRITE; on kernels without it, a read of every page).
  // A page of shared memory costs each process that maps it a page fault at its
  // first touch, 2-5 us in a VM: touched by a call that moves a few KiB, that
  // made the first pass through a p2p ring four to six times slower. Never
  // changes the contents; a range past the end is cut to the segment.
  void prefault(size_t offset, size_t bytes) const;
  // Reads one byte of every page of [offset, offset + bytes), after prefault():
  // some VMs charge a process's first access to each page even when its page
  // table entry is already there. On the Firecracker VM of the thirty-third
  // session (AMD Zen 5, kernel 6.18) that first access cost 4.5-7 us a page,
  // with or without MADV_POPULATE_WRITE, for shared and anonymous memory alike
  // (a second access: 6 ns). Paid here, at a group's join, for the pages every
  // call touches, it is not paid by the first calls: the first 1,900 exchanges
  // of 512 B through a fresh 1 MiB ring took 2.5 us each, later ones 0.7.
  // Elsewhere it costs a TLB miss a page. A range past the end is cut to the
  // segment; the contents never change.
  void touch(size_t offset, size_t bytes) const;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  void reset();
};

// "/collie-<uid>-<job>-" : the prefix of every segment of a job.
std::string segment_prefix(const std::string& job_id);

}  // namespace collie::detail
