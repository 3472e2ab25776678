// The CFI row table a recording's processes share (collector/cpu/shared_rows.h):
// what cct-record makes, and what a process refuses to map.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "collector/cpu/cfi_unwinder.h"
#include "collector/cpu/shared_rows.h"
#include "tests/test_util.h"

using namespace collector;

namespace {

// A memfd holding `bytes`, sealed with `seals` (0: none).
int MemFile(const std::string& bytes, unsigned seals) {
  const int fd = memfd_create("cctdb-test-rows", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  if (seals) REQUIRE(fcntl(fd, F_ADD_SEALS, seals) == 0);
  return fd;
}

// A table's bytes as CreateSharedRows lays them out, with its fields given.
std::string TableBytes(std::string_view magic, uint32_t version, uint32_t entries, size_t size) {
  std::string b(size, '\0');
  std::memcpy(b.data(), magic.data(), magic.size());
  for (int i = 0; i < 4; ++i) b[16 + i] = static_cast<char>(version >> (8 * i));
  for (int i = 0; i < 4; ++i) b[20 + i] = static_cast<char>(entries >> (8 * i));
  return b;
}

struct Detach {
  ~Detach() { UseSharedRows(nullptr, 0); }
};

}  // namespace

TEST_CASE("shared rows: cct-record's table is sealed, of its size, and maps through /proc/PID/fd") {
  Detach detach;
  auto fd = CreateSharedRows(1024);
  REQUIRE(fd.ok());
  struct stat st {};
  REQUIRE(fstat(*fd, &st) == 0);
  CHECK(static_cast<size_t>(st.st_size) == 64 + 1024 * 32);
  const int seals = fcntl(*fd, F_GET_SEALS);
  CHECK((seals & F_SEAL_SHRINK) != 0);
  CHECK((seals & F_SEAL_GROW) != 0);
  CHECK((seals & F_SEAL_SEAL) != 0);
  CHECK(ftruncate(*fd, 64) != 0);  // no process can take its pages away
  CHECK((fcntl(*fd, F_GETFD) & FD_CLOEXEC) != 0);  // the program never inherits it
  const std::string path = SharedRowsPath(*fd);
  CHECK(path == "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(*fd));
  CHECK(AttachSharedRows(path).ok());
  unsigned char header[16];
  REQUIRE(pread(*fd, header, sizeof header, 0) == 16);
  CHECK(std::memcmp(header, "cctdb-cfi-rows\n", 16) == 0);
  CHECK_FALSE(CreateSharedRows(1000).ok());  // not a power of two
  close(*fd);
}

TEST_CASE("shared rows: anything but such a table is refused, with a reason") {
  Detach detach;
  const size_t size = SharedRowsBytes(64);
  const std::string good = TableBytes(kSharedRowsMagic, kSharedRowsVersion, 64, size);
  struct Case {
    const char* what;
    std::string bytes;
    unsigned seals;
    const char* reason;
  };
  const Case cases[] = {
      {"not sealed against shrinking", good, 0, "sealed"},
      {"sealed against growing only", good, F_SEAL_GROW, "sealed"},
      {"another magic", TableBytes("cctdb-cfi-rowz\n", kSharedRowsVersion, 64, size), F_SEAL_SHRINK, "not a shared row table"},
      {"another version", TableBytes(kSharedRowsMagic, kSharedRowsVersion + 1, 64, size), F_SEAL_SHRINK, "version"},
      {"an entry count that is not a power of two", TableBytes(kSharedRowsMagic, kSharedRowsVersion, 63, size),
       F_SEAL_SHRINK, "damaged"},
      {"a size other than its entries'", TableBytes(kSharedRowsMagic, kSharedRowsVersion, 128, size), F_SEAL_SHRINK,
       "damaged"},
      {"shorter than a header", std::string(10, 'x'), F_SEAL_SHRINK, "not a shared row table"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const int fd = MemFile(c.bytes, c.seals);
    const cct::Status st = AttachSharedRows(SharedRowsPath(fd));
    CHECK_FALSE(st.ok());
    CHECK(st.message().find(c.reason) != std::string::npos);
    close(fd);
  }
  testutil::TempDir dir;
  {
    const std::string plain = dir / "rows";
    FILE* f = fopen(plain.c_str(), "wb");
    REQUIRE(f);
    fwrite(good.data(), 1, good.size(), f);
    fclose(f);
    CHECK(AttachSharedRows(plain).message().find("sealed") != std::string::npos);  // a file anyone may truncate
  }
  CHECK_FALSE(AttachSharedRows(dir / "none").ok());
  CHECK_FALSE(AttachSharedRows(dir.path()).ok());  // a directory
  CHECK_FALSE(AttachSharedRows("/proc/self/fd/999999").ok());
  const std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(AttachSharedRows(fifo).message().find("not a shared row table") != std::string::npos);  // no writer awaited
}

TEST_CASE("shared rows: the header as the layout says, read back with the file's size") {
  CHECK(EncodeSharedRowsHeader(64) == TableBytes(kSharedRowsMagic, kSharedRowsVersion, 64, 64));
  const std::string header = EncodeSharedRowsHeader(1024);
  auto entries = DecodeSharedRowsHeader(header, 64 + 1024 * 32);
  REQUIRE(entries.ok());
  CHECK(*entries == 1024);
  CHECK_FALSE(DecodeSharedRowsHeader(header, 64 + 1024 * 32 - 1).ok());
  CHECK_FALSE(DecodeSharedRowsHeader(header.substr(0, 63), 64 + 1024 * 32).ok());
  const std::string too_many = TableBytes(kSharedRowsMagic, kSharedRowsVersion, 1u << 23, 64);
  CHECK_FALSE(DecodeSharedRowsHeader(too_many, SharedRowsBytes(size_t{1} << 23)).ok());
}

namespace {
std::string TableOf(int fd) {
  struct stat st {};
  REQUIRE(fstat(fd, &st) == 0);
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  REQUIRE(pread(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  return bytes;
}
// A new table's bytes, before any process wrote to it.
std::string NewTable(size_t entries) {
  auto fd = CreateSharedRows(entries);
  REQUIRE(fd.ok());
  const std::string bytes = TableOf(*fd);
  close(*fd);
  return bytes;
}
void WriteFile(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  REQUIRE(f);
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
}
}  // namespace

TEST_CASE("shared rows: a table saved in the cache directory fills the next recording's, or leaves it as it was") {
  testutil::TempDir dir;
  const std::string path = SharedRowsCachePath(dir / "made-on-save");
  auto first = CreateSharedRows(64);
  REQUIRE(first.ok());
  // Entries as processes write them: any words after the header.
  std::string entries(64 * 32, '\0');
  for (size_t i = 0; i < entries.size(); ++i) entries[i] = static_cast<char>(i * 7 + 1);
  REQUIRE(pwrite(*first, entries.data(), entries.size(), 64) == static_cast<ssize_t>(entries.size()));
  REQUIRE(SaveSharedRows(*first, path).ok());
  CHECK(TableOf(*first).size() == std::filesystem::file_size(path));

  auto second = CreateSharedRows(64);
  REQUIRE(second.ok());
  REQUIRE(LoadSharedRows(*second, path).ok());
  CHECK(TableOf(*second) == TableOf(*first));
  CHECK((fcntl(*second, F_GET_SEALS) & F_SEAL_SHRINK) != 0);  // still the sealed table the processes map

  // What is not such a table leaves a new one empty.
  const std::string empty = NewTable(64);
  const std::string other = dir / "other";
  struct Case {
    const char* what;
    std::string bytes;
    const char* reason;
  };
  std::string wrong_magic = TableOf(*first);
  wrong_magic[0] = 'X';
  const Case cases[] = {
      {"a table of another size", NewTable(128), "another size"},
      {"another magic", wrong_magic, "not a shared row table"},
      {"a short file", TableOf(*first).substr(0, 100), "damaged"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    WriteFile(other, c.bytes);
    auto fresh = CreateSharedRows(64);
    REQUIRE(fresh.ok());
    const cct::Status st = LoadSharedRows(*fresh, other);
    CHECK_FALSE(st.ok());
    CHECK(st.message().find(c.reason) != std::string::npos);
    CHECK(TableOf(*fresh) == empty);
    close(*fresh);
  }
  auto fresh = CreateSharedRows(64);
  REQUIRE(fresh.ok());
  CHECK(LoadSharedRows(*fresh, dir / "none").code() == cct::ErrorCode::kNotFound);
  CHECK_FALSE(LoadSharedRows(*fresh, dir.path()).ok());  // a directory
  const std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_FALSE(LoadSharedRows(*fresh, fifo).ok());  // refused, not waited on
  CHECK(TableOf(*fresh) == empty);
  close(*fresh);
  close(*first);
  close(*second);
}
