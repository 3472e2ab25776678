// The shared CFI row table: made by cct-record, mapped by each recorded
// process (shared_rows.h).
#include "collector/cpu/shared_rows.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "collector/cpu/cfi_unwinder.h"
#include "store/tree_codec.h"

namespace collector {
namespace {

constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;


cct::Status Errno(const std::string& what) { return cct::IoError(what + ": " + std::strerror(errno)); }

}  // namespace

std::string EncodeSharedRowsHeader(size_t entries) {
  store::ByteWriter header;
  header.Bytes(kSharedRowsMagic);
  header.U8(0);
  header.U32(kSharedRowsVersion);
  header.U32(static_cast<uint32_t>(entries));
  header.Bytes(std::string(kSharedRowsHeader - header.size(), '\0'));
  return header.bytes();
}

cct::Result<size_t> DecodeSharedRowsHeader(std::string_view bytes, uint64_t file_size) {
  store::ByteReader header(bytes.substr(0, kSharedRowsHeader));
  std::string_view magic;
  uint8_t nul = 1;
  uint32_t version = 0, entry_count = 0;
  if (bytes.size() < kSharedRowsHeader || !header.View(magic, kSharedRowsMagic.size()) || magic != kSharedRowsMagic ||
      !header.U8(nul) || nul != 0 || !header.U32(version) || !header.U32(entry_count))
    return cct::Corrupt("is not a shared row table");
  if (version != kSharedRowsVersion) return cct::Corrupt("is a shared row table of another version");
  const size_t entries = entry_count;
  if (entries == 0 || (entries & (entries - 1)) != 0 || entries > kSharedRowsMaxEntries ||
      file_size != SharedRowsBytes(entries))
    return cct::Corrupt("has a damaged shared row table header");
  return entries;
}

cct::Result<int> CreateSharedRows(size_t entries) {
  if (entries == 0 || (entries & (entries - 1)) != 0 || entries > kSharedRowsMaxEntries)
    return cct::InvalidArgument("a shared row table needs a power-of-two entry count up to " +
                                std::to_string(kSharedRowsMaxEntries));
  const int fd = memfd_create("cctdb-cfi-rows", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Errno("cannot make the shared row table");
  const size_t size = SharedRowsBytes(entries);
  const std::string header = EncodeSharedRowsHeader(entries);
  // Its pages now, not at a first write in some process's sampling handler.
  const int alloc = ftruncate(fd, static_cast<off_t>(size)) != 0 ? errno : posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (alloc != 0 || pwrite(fd, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) ||
      fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
    if (alloc != 0) errno = alloc;
    cct::Status st = Errno("cannot make the shared row table");
    close(fd);
    return st;
  }
  return fd;
}

std::string SharedRowsPath(int fd) {
  return "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd);
}

cct::Status AttachSharedRows(const std::string& path) {
  // Not blocking, not a controlling terminal: whatever the path names, the
  // program's start must not wait on it or change its session.
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Errno("cannot open the shared row table " + path);
  char bytes[kSharedRowsHeader];
  struct stat st {};
  const int seals = fcntl(fd, F_GET_SEALS);
  cct::Result<size_t> entries = cct::Corrupt("is not a shared row table");  // not a plain file
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (seals < 0 || (static_cast<unsigned>(seals) & F_SEAL_SHRINK) == 0) {
      // A file that can shrink could take pages from under the handler.
      entries = cct::Corrupt("is not sealed against shrinking");
    } else {
      const ssize_t n = pread(fd, bytes, sizeof bytes, 0);
      entries = DecodeSharedRowsHeader({bytes, n > 0 ? static_cast<size_t>(n) : 0}, static_cast<uint64_t>(st.st_size));
    }
  }
  if (!entries.ok()) {
    close(fd);
    return cct::Corrupt(path + " " + entries.status().message());
  }
  void* map = mmap(nullptr, SharedRowsBytes(*entries), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return Errno("cannot map the shared row table " + path);
  UseSharedRows(reinterpret_cast<uint64_t*>(static_cast<unsigned char*>(map) + kSharedRowsHeader), *entries);
  return cct::Status::Ok();
}

}  // namespace collector
