#include "backends/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "collie/errors.h"

namespace collie::detail {
namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::string& name, int err) {
  throw CommError(what + " of shared memory '" + name + "' failed: " + std::strerror(err));
}

void check_space(const std::string& name, size_t bytes) {
  struct statvfs st;
  if (statvfs("/dev/shm", &st) != 0) return;  // cannot tell: let ftruncate/mmap decide
  unsigned long long free_bytes = static_cast<unsigned long long>(st.f_bavail) * st.f_frsize;
  if (free_bytes < bytes) {
    throw CommError("not enough room in /dev/shm for '" + name + "': need " +
                    std::to_string(bytes) + " bytes, " + std::to_string(free_bytes) +
                    " free. Free space, lower COLLIE_SHM_SLOT_BYTES / COLLIE_P2P_RING_BYTES, "
                    "or in docker raise --shm-size (e.g. --shm-size=1g)");
  }
}

void* map(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw_errno("mmap", name, errno);
  return p;
}

}  // namespace

std::string segment_prefix(const std::string& job_id) {
  return "/collie-" + std::to_string(getuid()) + "-" + job_id + "-";
}

Segment::~Segment() { reset(); }

Segment::Segment(Segment&& other) noexcept { *this = std::move(other); }

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    name_ = std::move(other.name_);
  }
  return *this;
}

void Segment::reset() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

bool Segment::create(const std::string& name, size_t bytes, Segment* out) {
  check_space(name, bytes);
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw_errno("shm_open(create)", name, errno);
  }
  // posix_fallocate reserves the pages now, so a full /dev/shm is an error here and
  // not a SIGBUS later in the middle of a collective.
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    close(fd);
    shm_unlink(name.c_str());
    if (rc == ENOSPC) check_space(name, bytes * 2);  // throws the explanatory message
    throw_errno("allocating " + std::to_string(bytes) + " bytes", name, rc);
  }
  void* p = nullptr;
  try {
    p = map(fd, bytes, name);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  close(fd);
  out->reset();
  out->data_ = p;
  out->size_ = bytes;
  out->name_ = name;
  return true;
}

bool Segment::open(const std::string& name, Segment* out) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw_errno("shm_open", name, errno);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    throw_errno("fstat", name, err);
  }
  if (st.st_size == 0) {  // created but not yet sized by its owner
    close(fd);
    return false;
  }
  void* p = map(fd, static_cast<size_t>(st.st_size), name);
  close(fd);
  out->reset();
  out->data_ = p;
  out->size_ = static_cast<size_t>(st.st_size);
  out->name_ = name;
  return true;
}

void Segment::prefault(size_t offset, size_t bytes) const {
  if (data_ == nullptr || offset >= size_) return;
#ifdef MADV_POPULATE_WRITE
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;  // data_ is page-aligned
  const size_t end = std::min(size_, offset + std::min(bytes, size_ - offset));
  if (madvise(static_cast<uint8_t*>(data_) + begin, end - begin, MADV_POPULATE_WRITE) == 0) return;
#endif
  // Older kernels (EINVAL): a read of each page maps it too. Only a speed-up:
  // nothing depends on it having happened.
  touch(offset, bytes);
}

void Segment::touch(size_t offset, size_t bytes) const {
  if (data_ == nullptr || offset >= size_) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t end = std::min(size_, offset + std::min(bytes, size_ - offset));
  const auto* base = static_cast<const volatile uint8_t*>(data_);
  for (size_t at = offset / page * page; at < end; at += page) (void)base[at];
}

void Segment::unlink(const std::string& name) { shm_unlink(name.c_str()); }

}  // namespace collie::detail
