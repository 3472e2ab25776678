// Raw GPU dumps: the writer (one framed record per write(2)), the framing
// reader and the payload codecs. The layout is in docs/format.md ("Raw GPU
// dumps"); everything is written byte by byte, little-endian, never as a
// memcpy of a struct. No CUPTI here: the buffer bytes are opaque.
#include "collector/gpu_raw_dump.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <new>

namespace collector {
namespace {

// ------------------------------------------------------------ little-endian bytes

void PutU8(std::string& out, uint8_t v) { out.push_back(static_cast<char>(v)); }
void PutU16(std::string& out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutString(std::string& out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

uint16_t GetU16(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(b[0] | (b[1] << 8));
}
uint32_t GetU32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}
uint64_t GetU64(const char* p) { return uint64_t{GetU32(p)} | (uint64_t{GetU32(p + 4)} << 32); }

// A bounds-checked cursor over a payload.
class Cursor {
 public:
  explicit Cursor(std::string_view in) : in_(in) {}
  bool U8(uint8_t& v) {
    if (remaining() < 1) return false;
    v = static_cast<uint8_t>(in_[pos_++]);
    return true;
  }
  bool U32(uint32_t& v) {
    if (remaining() < 4) return false;
    v = GetU32(in_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t& v) {
    if (remaining() < 8) return false;
    v = GetU64(in_.data() + pos_);
    pos_ += 8;
    return true;
  }
  bool Bytes(uint64_t n, std::string_view& out) {
    if (n > remaining()) return false;
    out = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool String(std::string_view& out) {
    uint32_t n = 0;
    return U32(n) && Bytes(n, out);
  }
  // A count of entries of at least `min_size` bytes each: refuses counts the
  // rest of the payload cannot hold (so no huge allocation on damaged input).
  bool Count(uint32_t& n, size_t min_size) { return U32(n) && n <= remaining() / min_size; }
  size_t remaining() const { return in_.size() - pos_; }
  const char* here() const { return in_.data() + pos_; }
  void Skip(size_t n) { pos_ += n; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

uint32_t Crc(const char* p, size_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  while (n > 0) {  // zlib's length is a uInt
    const uInt chunk = n > (uInt{1} << 30) ? (uInt{1} << 30) : static_cast<uInt>(n);
    c = crc32(c, reinterpret_cast<const Bytef*>(p), chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

std::string RecordHeader(uint8_t type, std::string_view payload) {
  std::string h;
  h.reserve(kRawRecordHeaderSize);
  PutU8(h, type);
  PutU8(h, 0);
  PutU8(h, 0);
  PutU8(h, 0);
  PutU32(h, static_cast<uint32_t>(payload.size()));
  PutU32(h, Crc(payload.data(), payload.size()));
  PutU32(h, Crc(h.data(), 12));
  return h;
}

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

std::string ErrnoText(int e) { return std::strerror(e); }

}  // namespace

// ------------------------------------------------------------ activities

void AppendRawActivity(std::string& out, const GpuActivity& a, uint32_t name_id) {
  PutU8(out, static_cast<uint8_t>(a.kind));
  PutU8(out, static_cast<uint8_t>(a.copy));
  PutU8(out, static_cast<uint8_t>(a.memory_kind));
  PutU8(out, static_cast<uint8_t>(a.memory_op));
  PutU8(out, static_cast<uint8_t>(a.sync));
  PutU8(out, a.external_kind);
  PutU16(out, a.registers_per_thread);
  PutU32(out, a.correlation_id);
  PutU32(out, a.device_id);
  PutU32(out, a.peer_device_id);
  PutU32(out, a.stream_id);
  PutU32(out, a.graph_id);
  PutU32(out, name_id);
  PutU64(out, a.graph_node_id);
  PutU64(out, a.start_ns);
  PutU64(out, a.end_ns);
  PutU64(out, a.bytes);
  PutU64(out, a.external_id);
  for (uint32_t v : {a.grid_x, a.grid_y, a.grid_z, a.block_x, a.block_y, a.block_z, a.static_shared_bytes,
                     a.dynamic_shared_bytes, a.local_bytes_per_thread, a.shared_config_bytes})
    PutU32(out, v);
  const GpuDeviceLimits& d = a.device;
  for (uint32_t v : {d.cc_major, d.cc_minor, d.sm_count, d.max_warps_per_sm, d.max_blocks_per_sm, d.regs_per_sm,
                     d.smem_per_sm, d.smem_per_block, d.max_threads_per_block})
    PutU32(out, v);
}

bool ReadRawActivity(const char* in, GpuActivity* a, uint32_t* name_id) {
  const auto* b = reinterpret_cast<const unsigned char*>(in);
  if (b[0] > static_cast<uint8_t>(GpuActivityKind::kExternalCorrelation) ||
      b[1] > static_cast<uint8_t>(CopyDirection::kP2P) || b[2] > static_cast<uint8_t>(GpuMemoryKind::kManagedStatic) ||
      b[3] > static_cast<uint8_t>(MemoryOp::kFree) || b[4] > static_cast<uint8_t>(SyncKind::kContext))
    return false;
  *a = GpuActivity{};
  a->kind = static_cast<GpuActivityKind>(b[0]);
  a->copy = static_cast<CopyDirection>(b[1]);
  a->memory_kind = static_cast<GpuMemoryKind>(b[2]);
  a->memory_op = static_cast<MemoryOp>(b[3]);
  a->sync = static_cast<SyncKind>(b[4]);
  a->external_kind = b[5];
  a->registers_per_thread = GetU16(in + 6);
  a->correlation_id = GetU32(in + 8);
  a->device_id = GetU32(in + 12);
  a->peer_device_id = GetU32(in + 16);
  a->stream_id = GetU32(in + 20);
  a->graph_id = GetU32(in + 24);
  *name_id = GetU32(in + 28);
  a->graph_node_id = GetU64(in + 32);
  a->start_ns = GetU64(in + 40);
  a->end_ns = GetU64(in + 48);
  a->bytes = GetU64(in + 56);
  a->external_id = GetU64(in + 64);
  uint32_t* launch[] = {&a->grid_x,  &a->grid_y,  &a->grid_z,  &a->block_x,  &a->block_y,
                        &a->block_z, &a->static_shared_bytes, &a->dynamic_shared_bytes,
                        &a->local_bytes_per_thread, &a->shared_config_bytes};
  for (size_t i = 0; i < std::size(launch); ++i) *launch[i] = GetU32(in + 72 + 4 * i);
  GpuDeviceLimits& d = a->device;
  uint32_t* device[] = {&d.cc_major,    &d.cc_minor,    &d.sm_count,       &d.max_warps_per_sm,     &d.max_blocks_per_sm,
                        &d.regs_per_sm, &d.smem_per_sm, &d.smem_per_block, &d.max_threads_per_block};
  for (size_t i = 0; i < std::size(device); ++i) *device[i] = GetU32(in + 112 + 4 * i);
  return true;
}

// ------------------------------------------------------------ writer

cct::Result<std::unique_ptr<RawDumpWriter>> RawDumpWriter::Create(const std::string& path, uint32_t pid,
                                                                  const std::string& meta_json) {
  try {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return cct::IoError("cannot create raw GPU dump " + path + ": " + ErrnoText(errno));
    std::unique_ptr<RawDumpWriter> w(new RawDumpWriter());
    w->fd_ = fd;
    std::string payload;
    payload.append(kRawDumpMagic);
    PutU32(payload, kRawDumpFormat);
    PutU32(payload, pid);
    PutString(payload, meta_json);
    std::lock_guard<std::mutex> lock(w->mu_);
    w->Write(static_cast<uint8_t>(RawRecordType::kHeader), payload);
    if (!w->status_.ok()) return w->status_;
    return w;
  } catch (...) {
    return cct::IoError("cannot create raw GPU dump " + path + ": out of memory");
  }
}

RawDumpWriter::~RawDumpWriter() {
  if (fd_ >= 0) close(fd_);
}

void RawDumpWriter::Fail(const cct::Status& s) {
  if (status_.ok()) status_ = s;
}

void RawDumpWriter::OutOfMemory() noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    broken_ = true;  // before the message, which allocates
    Fail(cct::IoError("raw GPU dump: out of memory"));
  } catch (...) {
  }
}

void RawDumpWriter::Write(uint8_t type, const std::string& payload) {
  if (!status_.ok() || broken_ || fd_ < 0) return;
  if (payload.size() > kRawMaxPayload) {
    Fail(cct::IoError("raw GPU dump: a record of " + std::to_string(payload.size()) + " bytes is too large"));
    return;
  }
  std::string record = RecordHeader(type, payload);
  record.append(payload);
  const char* p = record.data();
  size_t left = record.size();
  while (left > 0) {
    const ssize_t n = write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail(cct::IoError("raw GPU dump: write failed: " + ErrnoText(errno)));
      return;
    }
    if (n == 0) {
      Fail(cct::IoError("raw GPU dump: write wrote nothing"));
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
    bytes_ += static_cast<uint64_t>(n);
  }
}

void RawDumpWriter::Correlations(std::span<const RawCorrelation> records) {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.ok() || broken_ || records.empty()) return;
    std::string payload;
    payload.reserve(4 + records.size() * 9);
    PutU32(payload, static_cast<uint32_t>(records.size()));
    for (const RawCorrelation& c : records) {
      PutU32(payload, c.correlation_id);
      PutU32(payload, c.handle);
      PutU8(payload, c.kind);
    }
    Write(static_cast<uint8_t>(RawRecordType::kCorrelations), payload);
  } catch (...) {
    OutOfMemory();
  }
}

uint32_t RawDumpWriter::NameId(std::string_view name, std::vector<std::string_view>& fresh) {
  if (name.empty()) return 0;
  // Launches repeat a few kernels: the previous name first, without hashing.
  if (last_name_ != nullptr && *last_name_ == name) return last_id_;
  auto it = names_.find(std::string(name));
  if (it == names_.end()) {
    it = names_.emplace(std::string(name), static_cast<uint32_t>(names_.size() + 1)).first;
    fresh.push_back(name);
  }
  last_name_ = &it->first;  // map keys do not move
  last_id_ = it->second;
  return last_id_;
}

void RawDumpWriter::Batch(const uint8_t* raw, size_t raw_bytes, std::span<const GpuActivity> delivered, uint64_t dropped) {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.ok() || broken_) return;
    if (raw == nullptr) raw_bytes = 0;
    std::vector<std::string_view> fresh;
    std::vector<uint32_t> kernels;
    size_t api_count = 0;
    for (const GpuActivity& a : delivered) {
      if (a.kind == GpuActivityKind::kKernel) kernels.push_back(NameId(a.kernel_name, fresh));
      if (a.kind == GpuActivityKind::kMemoryApi) ++api_count;
    }
    std::string payload;
    payload.reserve(32 + raw_bytes + kernels.size() * 4 + api_count * kRawActivitySize);
    PutU64(payload, dropped);
    PutU32(payload, static_cast<uint32_t>(fresh.size()));
    for (std::string_view n : fresh) PutString(payload, n);
    PutU32(payload, static_cast<uint32_t>(kernels.size()));
    for (uint32_t id : kernels) PutU32(payload, id);
    PutU64(payload, raw_bytes);
    if (raw_bytes > 0) payload.append(reinterpret_cast<const char*>(raw), raw_bytes);
    PutU32(payload, static_cast<uint32_t>(api_count));
    PutU32(payload, static_cast<uint32_t>(kRawActivitySize));
    for (const GpuActivity& a : delivered)
      if (a.kind == GpuActivityKind::kMemoryApi) AppendRawActivity(payload, a, 0);
    Write(static_cast<uint8_t>(RawRecordType::kBatch), payload);
  } catch (...) {
    OutOfMemory();
  }
}

void RawDumpWriter::PcSamples(std::span<const GpuPcSample> samples) {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.ok() || broken_ || samples.empty()) return;
    std::string payload;
    PutU32(payload, static_cast<uint32_t>(samples.size()));
    for (const GpuPcSample& s : samples) {
      PutU32(payload, s.correlation_id);
      PutU32(payload, s.device_id);
      PutU64(payload, s.cubin_crc);
      PutU64(payload, s.pc_offset);
      PutU32(payload, s.line);
      PutU64(payload, s.samples);
      for (uint64_t v : s.stall) PutU64(payload, v);
      PutString(payload, s.function_name);
      PutString(payload, s.file);
    }
    Write(static_cast<uint8_t>(RawRecordType::kPcSamples), payload);
  } catch (...) {
    OutOfMemory();
  }
}

void RawDumpWriter::Snapshot(const cct::Tree& tree, const std::string& meta_json,
                             std::span<const RawSiteNode> sites) {
  try {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!status_.ok() || broken_) return;
    }
    // Encoding a large tree takes a while: outside the lock.
    std::vector<cct::NodeId> stored;
    const std::vector<store::Section> sections = store::EncodeTree(tree, &stored);
    std::string payload;
    PutU32(payload, static_cast<uint32_t>(sections.size()));
    for (const store::Section& s : sections) {
      const std::string framed = store::FrameSection(s);
      PutU64(payload, framed.size());
      payload.append(framed);
    }
    PutString(payload, meta_json);
    PutU32(payload, static_cast<uint32_t>(sites.size()));
    for (const RawSiteNode& s : sites) {
      PutU32(payload, s.handle);
      PutU32(payload, s.node < stored.size() ? stored[s.node] : cct::kNoNode);
    }
    std::lock_guard<std::mutex> lock(mu_);
    Write(static_cast<uint8_t>(RawRecordType::kSnapshot), payload);
  } catch (...) {
    OutOfMemory();
  }
}

cct::Status RawDumpWriter::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_ && status_.ok()) return cct::IoError("raw GPU dump: out of memory");
  return status_;
}

uint64_t RawDumpWriter::bytes_written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

// ------------------------------------------------------------ reader

cct::Result<std::unique_ptr<RawDumpReader>> RawDumpReader::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return cct::NotFound(path + ": no such file");
    return cct::IoError("cannot open " + path + ": " + ErrnoText(e));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return cct::IoError("cannot read " + path + ": " + ErrnoText(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return cct::Corrupt(path + ": not a raw GPU dump (not a regular file)");
  }
  if (st.st_size == 0) {
    close(fd);
    return cct::Corrupt(path + ": empty file, not a raw GPU dump");
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  close(fd);
  if (map == MAP_FAILED) return cct::IoError("cannot map " + path + ": " + ErrnoText(map_errno));
  std::unique_ptr<RawDumpReader> r(new (std::nothrow) RawDumpReader());
  if (!r) {
    munmap(map, static_cast<size_t>(st.st_size));
    return cct::IoError("cannot read " + path + ": out of memory");
  }
  r->path_ = path;
  r->data_ = static_cast<const char*>(map);
  r->size_ = static_cast<uint64_t>(st.st_size);

  // The header record: checked before anything else, so a foreign file is
  // named as such rather than as a damaged dump.
  const char* d = r->data_;
  const std::string not_dump = path + ": not a cctdb raw GPU dump";
  if (r->size_ < kRawRecordHeaderSize + kRawDumpMagic.size()) return cct::Corrupt(not_dump + " (too short)");
  if (std::string_view(d + kRawRecordHeaderSize, kRawDumpMagic.size()) != kRawDumpMagic ||
      static_cast<uint8_t>(d[0]) != static_cast<uint8_t>(RawRecordType::kHeader))
    return cct::Corrupt(not_dump + " (no magic)");
  if (Crc(d, 12) != GetU32(d + 12) || !AllZero(d + 1, 3))
    return cct::Corrupt(path + ": damaged raw GPU dump (header record)");
  const uint32_t length = GetU32(d + 4);
  if (length > r->size_ - kRawRecordHeaderSize)
    return cct::Corrupt(path + ": raw GPU dump ends inside its header record");
  const std::string_view payload(d + kRawRecordHeaderSize, length);
  if (Crc(payload.data(), payload.size()) != GetU32(d + 8))
    return cct::Corrupt(path + ": damaged raw GPU dump (header record checksum)");
  auto header = ParseRawHeader(payload);
  if (!header.ok()) return cct::Corrupt(path + ": " + header.status().message());
  r->version_ = header->format_version;
  r->pid_ = header->pid;
  r->meta_ = std::string(header->meta_json);
  r->pos_ = kRawRecordHeaderSize + length;
  return r;
}

RawDumpReader::~RawDumpReader() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
}

cct::Result<bool> RawDumpReader::Next(RawRecord* out) {
  if (pos_ >= size_) return false;
  const uint64_t left = size_ - pos_;
  const char* h = data_ + pos_;
  if (left < kRawRecordHeaderSize) {
    truncated_ = true;
    pos_ = size_;
    return false;
  }
  if (Crc(h, 12) != GetU32(h + 12) || !AllZero(h + 1, 3)) {
    if (AllZero(h, left)) {  // the zero-filled tail of an unfinished append
      truncated_ = true;
      pos_ = size_;
      return false;
    }
    return cct::Corrupt(path_ + ": damaged raw GPU dump (record header at offset " + std::to_string(pos_) + ")");
  }
  const uint32_t length = GetU32(h + 4);
  if (length > left - kRawRecordHeaderSize) {
    truncated_ = true;
    pos_ = size_;
    return false;
  }
  const std::string_view payload(h + kRawRecordHeaderSize, length);
  if (Crc(payload.data(), payload.size()) != GetU32(h + 8))
    return cct::Corrupt(path_ + ": damaged raw GPU dump (checksum mismatch in the record at offset " +
                        std::to_string(pos_) + ")");
  out->type = static_cast<uint8_t>(h[0]);
  out->offset = pos_;
  out->payload = payload;
  pos_ += kRawRecordHeaderSize + length;
  return true;
}

// ------------------------------------------------------------ payloads

cct::Result<RawHeader> ParseRawHeader(std::string_view payload) {
  Cursor c(payload);
  std::string_view magic;
  RawHeader h;
  if (!c.Bytes(kRawDumpMagic.size(), magic) || magic != kRawDumpMagic)
    return cct::Corrupt("not a cctdb raw GPU dump (no magic)");
  if (!c.U32(h.format_version)) return cct::Corrupt("raw GPU dump header record too short");
  if (h.format_version != kRawDumpFormat)
    return cct::Corrupt("raw GPU dump format " + std::to_string(h.format_version) + "; this cctdb reads format " +
                        std::to_string(kRawDumpFormat));
  if (!c.U32(h.pid) || !c.String(h.meta_json)) return cct::Corrupt("raw GPU dump header record too short");
  return h;
}

cct::Status ParseRawCorrelations(std::string_view payload, std::vector<RawCorrelation>* out) {
  Cursor c(payload);
  uint32_t n = 0;
  if (!c.Count(n, 9)) return cct::Corrupt("bad correlations record");
  out->reserve(out->size() + n);
  for (uint32_t i = 0; i < n; ++i) {
    RawCorrelation r;
    if (!c.U32(r.correlation_id) || !c.U32(r.handle) || !c.U8(r.kind)) return cct::Corrupt("bad correlations record");
    if (r.kind > static_cast<uint8_t>(cct::GpuOpKind::kSync)) return cct::Corrupt("bad operation kind in a correlations record");
    out->push_back(r);
  }
  return cct::Status::Ok();
}

cct::Status ParseRawBatch(std::string_view payload, RawNameTable& names, RawBatch* out) {
  const cct::Status bad = cct::Corrupt("bad batch record");
  Cursor c(payload);
  *out = RawBatch{};
  uint32_t defined = 0, kernels = 0, api = 0, entry = 0;
  uint64_t raw_bytes = 0;
  if (!c.U64(out->dropped) || !c.Count(defined, 4)) return bad;
  for (uint32_t i = 0; i < defined; ++i) {
    std::string_view name;
    if (!c.String(name)) return bad;
    names.emplace_back(name);
  }
  if (!c.Count(kernels, 4)) return bad;
  out->kernel_names.resize(kernels);
  for (uint32_t& id : out->kernel_names) {
    if (!c.U32(id)) return bad;
    if (id > names.size()) return cct::Corrupt("batch record names an undefined kernel");
  }
  if (!c.U64(raw_bytes) || !c.Bytes(raw_bytes, out->raw)) return bad;
  if (!c.U32(api) || !c.U32(entry) || entry < kRawActivitySize || (api > 0 && api > c.remaining() / entry)) return bad;
  out->api.resize(api);
  for (GpuActivity& a : out->api) {
    uint32_t name_id = 0;
    if (!ReadRawActivity(c.here(), &a, &name_id)) return cct::Corrupt("bad activity in a batch record");
    c.Skip(entry);
    if (name_id > names.size()) return cct::Corrupt("batch record names an undefined kernel");
    if (name_id != 0) {
      a.kernel_name = names[name_id - 1];
      a.kernel_name_id = kRawNameIdBase + name_id;
    }
  }
  return cct::Status::Ok();
}

cct::Status ParseRawPcSamples(std::string_view payload, std::vector<GpuPcSample>* out) {
  const cct::Status bad = cct::Corrupt("bad PC samples record");
  Cursor c(payload);
  uint32_t n = 0;
  constexpr size_t kMin = 4 + 4 + 8 + 8 + 4 + 8 + 8 * kStallSlots + 4 + 4;
  if (!c.Count(n, kMin)) return bad;
  out->reserve(out->size() + n);
  for (uint32_t i = 0; i < n; ++i) {
    GpuPcSample s;
    if (!c.U32(s.correlation_id) || !c.U32(s.device_id) || !c.U64(s.cubin_crc) || !c.U64(s.pc_offset) ||
        !c.U32(s.line) || !c.U64(s.samples))
      return bad;
    for (uint64_t& v : s.stall)
      if (!c.U64(v)) return bad;
    if (!c.String(s.function_name) || !c.String(s.file)) return bad;
    out->push_back(s);
  }
  return cct::Status::Ok();
}

cct::Status ParseRawSnapshot(std::string_view payload, RawSnapshot* out) {
  const cct::Status bad = cct::Corrupt("bad snapshot record");
  Cursor c(payload);
  *out = RawSnapshot{};
  uint32_t n = 0;
  if (!c.Count(n, 8)) return bad;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t length = 0;
    std::string_view framed;
    if (!c.U64(length) || !c.Bytes(length, framed)) return bad;
    auto section = store::UnframeSection(framed);
    if (!section.ok()) return cct::Corrupt("snapshot record: " + section.status().message());
    out->sections.push_back(std::move(*section));
  }
  uint32_t sites = 0;
  if (!c.String(out->meta_json) || !c.Count(sites, 8)) return bad;
  out->sites.resize(sites);
  for (RawSiteNode& s : out->sites)
    if (!c.U32(s.handle) || !c.U32(s.node)) return bad;
  return cct::Status::Ok();
}

}  // namespace collector
