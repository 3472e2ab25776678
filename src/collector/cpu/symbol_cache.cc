#include "collector/cpu/symbol_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "collector/core/run_info.h"
#include "store/run_file.h"

namespace collector {
namespace {

// Header: magic (16) | version u32 | count u32 | names size u64 | build id
// size u32 | build id bytes, zero-padded to a multiple of 8. Then `count`
// entries, then the names (each NUL-terminated; the blob ends with a NUL).
constexpr size_t kEntrySize = 32;  // start u64 | size u64 | max_end u64 | last_label u32 | name u32
constexpr uint32_t kNone = UINT32_MAX;
constexpr size_t kMaxBuildId = 64;

size_t Pad8(size_t n) { return (n + 7) & ~size_t{7}; }

template <class T>
T Load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void Store(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

std::string DefaultSymbolCacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/cctdb/symbols";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/cctdb/symbols";
  return "";
}

std::string SymbolCachePath(const std::string& dir, const std::string& build_id) {
  return dir + "/" + BuildIdHex(build_id) + ".sym";
}

std::string EncodeSymbolCache(const std::string& build_id, const SymbolIndex& index,
                              std::string (*name_of)(const char* raw)) {
  std::string names;
  std::string entries;
  entries.reserve(index.size() * kEntrySize);
  for (size_t i = 0; i < index.size(); ++i) {
    const SymbolIndex::Entry& e = index.entry(i);
    const size_t label = index.last_label(i);
    Store<uint64_t>(entries, e.start);
    Store<uint64_t>(entries, e.size);
    Store<uint64_t>(entries, index.max_end(i));
    Store<uint32_t>(entries, label == SIZE_MAX ? kNone : static_cast<uint32_t>(label));
    Store<uint32_t>(entries, static_cast<uint32_t>(names.size()));
    names += name_of(e.name);
    names.push_back('\0');
  }
  if (names.empty()) names.push_back('\0');
  std::string out(kSymbolCacheMagic);
  out.push_back('\0');
  Store<uint32_t>(out, kSymbolCacheVersion);
  Store<uint32_t>(out, static_cast<uint32_t>(index.size()));
  Store<uint64_t>(out, names.size());
  Store<uint32_t>(out, static_cast<uint32_t>(build_id.size()));
  out += build_id;
  out.resize(Pad8(out.size()), '\0');
  out += entries;
  out += names;
  return out;
}

cct::Result<std::unique_ptr<SymbolCacheFile>> SymbolCacheFile::FromBytes(std::string_view bytes,
                                                                         const std::string& build_id) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  constexpr size_t kFixed = 16 + 4 + 4 + 8 + 4;
  if (bytes.size() < kFixed || bytes.substr(0, kSymbolCacheMagic.size()) != kSymbolCacheMagic || p[15] != 0)
    return cct::Corrupt("not a cctdb symbol cache file");
  if (Load<uint32_t>(p + 16) != kSymbolCacheVersion) return cct::Corrupt("symbol cache file of another version");
  const uint32_t count = Load<uint32_t>(p + 20);
  const uint64_t names_size = Load<uint64_t>(p + 24);
  const uint32_t id_size = Load<uint32_t>(p + 32);
  if (id_size > kMaxBuildId || kFixed + id_size > bytes.size()) return cct::Corrupt("symbol cache file header is damaged");
  if (bytes.substr(kFixed, id_size) != build_id) return cct::Corrupt("symbol cache file is for another build id");
  const size_t head = Pad8(kFixed + id_size);
  // Sizes in 64 bits: count * 32 cannot overflow, names_size is checked
  // against what is left.
  const uint64_t entries_bytes = uint64_t{count} * kEntrySize;
  if (head > bytes.size() || entries_bytes > bytes.size() - head || names_size == 0 ||
      names_size != bytes.size() - head - entries_bytes)
    return cct::Corrupt("symbol cache file is truncated or has trailing bytes");
  const char* names = bytes.data() + head + entries_bytes;
  if (names[names_size - 1] != '\0') return cct::Corrupt("symbol cache file's names are not terminated");
  std::unique_ptr<SymbolCacheFile> f(new SymbolCacheFile);
  f->entries_ = p + head;
  f->count_ = count;
  f->names_ = names;
  f->names_size_ = static_cast<size_t>(names_size);
  return f;
}

cct::Result<std::unique_ptr<SymbolCacheFile>> SymbolCacheFile::Open(const std::string& path,
                                                                    const std::string& build_id) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return cct::NotFound("no symbol cache file " + path);
    return cct::IoError("cannot read " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return cct::Corrupt(path + " is empty");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  // Mapped, not read: a lookup touches a few pages of a table that can be
  // megabytes (cc1's: 2.5 MB), and the kernel maps file pages around each
  // fault in batches. (A libdw session that reads /proc/self/maps takes a
  // mapping only for a module of its own inode: a table is not one.)
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return cct::IoError("cannot map " + path + ": " + std::strerror(errno));
  auto f = FromBytes(std::string_view(static_cast<const char*>(map), size), build_id);
  if (!f.ok()) {
    munmap(map, size);
    return f.status().WithContext(path);
  }
  (*f)->map_ = map;
  (*f)->map_size_ = size;
  return f;
}

SymbolCacheFile::~SymbolCacheFile() {
  if (map_) munmap(map_, map_size_);
}

uintptr_t SymbolCacheFile::start(size_t i) const { return Load<uint64_t>(entries_ + i * kEntrySize); }
uint64_t SymbolCacheFile::size(size_t i) const { return Load<uint64_t>(entries_ + i * kEntrySize + 8); }
uintptr_t SymbolCacheFile::max_end(size_t i) const { return Load<uint64_t>(entries_ + i * kEntrySize + 16); }
size_t SymbolCacheFile::last_label(size_t i) const {
  const uint32_t v = Load<uint32_t>(entries_ + i * kEntrySize + 24);
  return v == kNone ? SIZE_MAX : v;
}

std::string_view SymbolCacheFile::Find(uintptr_t address, uintptr_t* start) const {
  const size_t i = SymbolIndex::FindIn(*this, count_, address);
  if (i == SIZE_MAX) return {};
  if (start) *start = this->start(i);
  const uint32_t off = Load<uint32_t>(entries_ + i * kEntrySize + 28);
  if (off >= names_size_) return {};
  return std::string_view(names_ + off);  // the blob ends with a NUL
}

cct::Status WriteSymbolCache(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::create_directories(path.substr(0, path.rfind('/')), ec);
  // Unique per writer: processes of one build may write the same file at once.
  return store::WriteFileAtomically(path, bytes, path + "." + std::to_string(getpid()) + ".tmp");
}

}  // namespace collector
