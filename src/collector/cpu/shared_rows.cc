// The shared CFI row table: made by cct-record, mapped by each recorded
// process (shared_rows.h).
#include "collector/cpu/shared_rows.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

std::string SharedRowsCachePath(const std::string& dir) {
  return dir + "/cfi-rows.v" + std::to_string(kSharedRowsVersion);
}

namespace {

// The entry count of the table in regular file `fd`, from its header and
// size.
cct::Result<size_t> EntriesOf(int fd, const std::string& what) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Errno("cannot read " + what);
  if (!S_ISREG(st.st_mode)) return cct::Corrupt(what + " is not a shared row table");
  char header[kSharedRowsHeader];
  const ssize_t n = pread(fd, header, sizeof header, 0);
  auto entries = DecodeSharedRowsHeader({header, n > 0 ? static_cast<size_t>(n) : 0}, static_cast<uint64_t>(st.st_size));
  if (!entries.ok()) return cct::Corrupt(what + " " + entries.status().message());
  return entries;
}

// Copies `bytes` bytes from `in` at `from` to `out` at its file position,
// in the kernel (sendfile): no buffer of ours to fault in.
cct::Status Copy(int out, int in, off_t from, size_t bytes, const std::string& what) {
  while (bytes > 0) {
    const ssize_t n = sendfile(out, in, &from, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 ? cct::Corrupt(what + " was cut short") : Errno("cannot copy " + what);
    bytes -= static_cast<size_t>(n);
  }
  return cct::Status::Ok();
}

}  // namespace

cct::Status LoadSharedRows(int fd, const std::string& path) {
  CCT_ASSIGN_OR_RETURN(const size_t entries, EntriesOf(fd, "the shared row table"));
  // Not blocking on whatever the path names (a FIFO).
  const int in = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (in < 0) return errno == ENOENT ? cct::NotFound("no saved rows at " + path) : Errno("cannot open " + path);
  cct::Result<size_t> saved = EntriesOf(in, path);
  cct::Status st = saved.ok() ? cct::Status::Ok() : saved.status();
  if (st.ok() && *saved != entries) st = cct::Corrupt(path + " holds a table of another size");
  if (st.ok() && lseek(fd, static_cast<off_t>(kSharedRowsHeader), SEEK_SET) < 0) st = Errno("cannot fill the shared row table");
  if (st.ok()) st = Copy(fd, in, static_cast<off_t>(kSharedRowsHeader), SharedRowsBytes(entries) - kSharedRowsHeader, path);
  close(in);
  return st;
}

cct::Status SaveSharedRows(int fd, const std::string& path) {
  CCT_ASSIGN_OR_RETURN(const size_t entries, EntriesOf(fd, "the shared row table"));
  const size_t size = SharedRowsBytes(entries);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Written in place, not aside and renamed: ext4 writes a file renamed
  // over another out at once (auto_da_alloc), 3 ms of every recording on
  // the CI VM. A reader or a second writer meanwhile sees some entries of
  // each table, and each entry's tag tells a torn one.
  const int out = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
  if (out < 0) return Errno("cannot write " + path);
  struct stat st {};
  cct::Status why = cct::Status::Ok();
  if (fstat(out, &st) != 0 || !S_ISREG(st.st_mode)) why = cct::IoError(path + " is not a regular file");
  else if (static_cast<uint64_t>(st.st_size) != size && ftruncate(out, static_cast<off_t>(size)) != 0)
    why = Errno("cannot write " + path);
  else why = Copy(out, fd, 0, size, "the shared row table");
  close(out);
  return why;
}

cct::Status AttachSharedRows(const std::string& path) {
  // Not blocking, not a controlling terminal: whatever the path names, the
  // program's start must not wait on it or change its session.
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Errno("cannot open the shared row table " + path);
  cct::Result<size_t> entries = EntriesOf(fd, path);
  const int seals = fcntl(fd, F_GET_SEALS);
  if (entries.ok() && (seals < 0 || (static_cast<unsigned>(seals) & F_SEAL_SHRINK) == 0))
    // A file that can shrink could take pages from under the handler.
    entries = cct::Corrupt(path + " is not sealed against shrinking");
  if (!entries.ok()) {
    close(fd);
    return entries.status();
  }
  void* map = mmap(nullptr, SharedRowsBytes(*entries), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return Errno("cannot map the shared row table " + path);
  UseSharedRows(reinterpret_cast<uint64_t*>(static_cast<unsigned char*>(map) + kSharedRowsHeader), *entries);
  return cct::Status::Ok();
}

}  // namespace collector
