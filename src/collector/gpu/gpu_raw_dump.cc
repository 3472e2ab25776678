// Raw GPU dumps: the writer (one framed record per write(2)), the framing
// reader and the payload codecs. The layout is in docs/format.md ("Raw GPU
// dumps"); everything is written byte by byte, little-endian, never as a
// memcpy of a struct. No CUPTI here: the buffer bytes are opaque.
#include "collector/gpu/gpu_raw_dump.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <optional>

#include "store/iteration_codec.h"
#include "store/tree_codec.h"

namespace collector {
namespace {

using store::ByteReader;
using store::ByteWriter;
using store::Crc32;

std::string RecordHeader(uint8_t type, std::string_view payload) {
  ByteWriter h;
  h.Reserve(kRawRecordHeaderSize);
  h.U8(type);
  h.U8(0);
  h.U8(0);
  h.U8(0);
  h.U32(static_cast<uint32_t>(payload.size()));
  h.U32(Crc32(payload));
  h.U32(Crc32(h.bytes()));
  return h.Take();
}

// A record header's fields, once its own checksum and reserved bytes are
// found right; nullopt otherwise.
struct HeaderFields {
  uint8_t type = 0;
  uint32_t length = 0, payload_crc = 0;
};
std::optional<HeaderFields> ReadRecordHeader(const char* h) {
  ByteReader r(std::string_view(h, kRawRecordHeaderSize));
  HeaderFields f;
  uint8_t reserved[3] = {};
  uint32_t header_crc = 0;
  if (!r.U8(f.type) || !r.U8(reserved[0]) || !r.U8(reserved[1]) || !r.U8(reserved[2]) || !r.U32(f.length) ||
      !r.U32(f.payload_crc) || !r.U32(header_crc))
    return std::nullopt;
  if (reserved[0] || reserved[1] || reserved[2] || Crc32(std::string_view(h, 12)) != header_crc) return std::nullopt;
  return f;
}

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

std::string ErrnoText(int e) { return std::strerror(e); }

}  // namespace

// ------------------------------------------------------------ activities

void AppendRawActivity(ByteWriter& out, const GpuActivity& a, uint32_t name_id) {
  out.U8(static_cast<uint8_t>(a.kind));
  out.U8(static_cast<uint8_t>(a.copy));
  out.U8(static_cast<uint8_t>(a.memory_kind));
  out.U8(static_cast<uint8_t>(a.memory_op));
  out.U8(static_cast<uint8_t>(a.sync));
  out.U8(a.external_kind);
  out.U16(a.registers_per_thread);
  for (uint32_t v : {a.correlation_id, a.device_id, a.peer_device_id, a.stream_id, a.graph_id, name_id}) out.U32(v);
  for (uint64_t v : {a.graph_node_id, a.start_ns, a.end_ns, a.bytes, a.external_id}) out.U64(v);
  for (uint32_t v : {a.grid_x, a.grid_y, a.grid_z, a.block_x, a.block_y, a.block_z, a.static_shared_bytes,
                     a.dynamic_shared_bytes, a.local_bytes_per_thread, a.shared_config_bytes})
    out.U32(v);
  const GpuDeviceLimits& d = a.device;
  for (uint32_t v : {d.cc_major, d.cc_minor, d.sm_count, d.max_warps_per_sm, d.max_blocks_per_sm, d.regs_per_sm,
                     d.smem_per_sm, d.smem_per_block, d.max_threads_per_block})
    out.U32(v);
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
  // The rest in AppendRawActivity's order; kRawActivitySize bytes are there.
  ByteReader r(std::string_view(in + 6, kRawActivitySize - 6));
  GpuDeviceLimits& d = a->device;
  uint32_t* u32[] = {&a->correlation_id, &a->device_id, &a->peer_device_id, &a->stream_id, &a->graph_id, name_id};
  uint64_t* u64[] = {&a->graph_node_id, &a->start_ns, &a->end_ns, &a->bytes, &a->external_id};
  uint32_t* tail[] = {&a->grid_x,  &a->grid_y,    &a->grid_z,        &a->block_x,
                      &a->block_y, &a->block_z,   &a->static_shared_bytes, &a->dynamic_shared_bytes,
                      &a->local_bytes_per_thread, &a->shared_config_bytes,   &d.cc_major,
                      &d.cc_minor, &d.sm_count,   &d.max_warps_per_sm, &d.max_blocks_per_sm,
                      &d.regs_per_sm, &d.smem_per_sm, &d.smem_per_block, &d.max_threads_per_block};
  bool ok = r.U16(a->registers_per_thread);
  for (uint32_t* v : u32) ok = ok && r.U32(*v);
  for (uint64_t* v : u64) ok = ok && r.U64(*v);
  for (uint32_t* v : tail) ok = ok && r.U32(*v);
  return ok;
}

// ------------------------------------------------------------ writer

cct::Result<std::unique_ptr<RawDumpWriter>> RawDumpWriter::Create(const std::string& path, uint32_t pid,
                                                                  const std::string& meta_json) {
  try {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);  // a profile's contents: private like the database
    if (fd < 0) return cct::IoError("cannot create raw GPU dump " + path + ": " + ErrnoText(errno));
    std::unique_ptr<RawDumpWriter> w(new RawDumpWriter());
    w->fd_ = fd;
    ByteWriter payload;
    payload.Bytes(kRawDumpMagic);
    payload.U32(kRawDumpFormat);
    payload.U32(pid);
    payload.String(meta_json);
    std::lock_guard<std::mutex> lock(w->mu_);
    w->Write(static_cast<uint8_t>(RawRecordType::kHeader), payload.bytes());
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
    ByteWriter payload;
    payload.Reserve(4 + records.size() * 13);
    payload.U32(static_cast<uint32_t>(records.size()));
    for (const RawCorrelation& c : records) {
      payload.U32(c.correlation_id);
      payload.U32(c.handle);
      payload.U8(c.kind);
      payload.U32(c.iteration);
    }
    Write(static_cast<uint8_t>(RawRecordType::kCorrelations), payload.bytes());
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
    ByteWriter payload;
    payload.Reserve(32 + raw_bytes + kernels.size() * 4 + api_count * kRawActivitySize);
    payload.U64(dropped);
    payload.U32(static_cast<uint32_t>(fresh.size()));
    for (std::string_view n : fresh) payload.String(n);
    payload.U32(static_cast<uint32_t>(kernels.size()));
    for (uint32_t id : kernels) payload.U32(id);
    payload.U64(raw_bytes);
    if (raw_bytes > 0) payload.Bytes(std::string_view(reinterpret_cast<const char*>(raw), raw_bytes));
    payload.U32(static_cast<uint32_t>(api_count));
    payload.U32(static_cast<uint32_t>(kRawActivitySize));
    for (const GpuActivity& a : delivered)
      if (a.kind == GpuActivityKind::kMemoryApi) AppendRawActivity(payload, a, 0);
    Write(static_cast<uint8_t>(RawRecordType::kBatch), payload.bytes());
  } catch (...) {
    OutOfMemory();
  }
}

void RawDumpWriter::PcSamples(std::span<const GpuPcSample> samples) {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.ok() || broken_ || samples.empty()) return;
    ByteWriter payload;
    payload.U32(static_cast<uint32_t>(samples.size()));
    for (const GpuPcSample& s : samples) {
      payload.U32(s.correlation_id);
      payload.U32(s.device_id);
      payload.U64(s.cubin_crc);
      payload.U64(s.pc_offset);
      payload.U32(s.line);
      payload.U64(s.samples);
      for (uint64_t v : s.stall) payload.U64(v);
      payload.String(s.function_name);
      payload.String(s.file);
    }
    Write(static_cast<uint8_t>(RawRecordType::kPcSamples), payload.bytes());
  } catch (...) {
    OutOfMemory();
  }
}

void RawDumpWriter::Snapshot(const cct::Tree& tree, const std::string& meta_json,
                             std::span<const RawSiteNode> sites, const store::RunIterations* iterations) {
  try {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!status_.ok() || broken_) return;
    }
    // Encoding a large tree takes a while: outside the lock.
    std::vector<cct::NodeId> stored;
    std::vector<store::Section> sections = store::EncodeTree(tree, &stored);
    if (iterations && !iterations->iterations.empty()) {
      auto section = store::EncodeIterations(*iterations, tree, stored);
      if (!section.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        Fail(section.status());
        return;
      }
      sections.push_back(std::move(*section));
    }
    ByteWriter payload;
    payload.U32(static_cast<uint32_t>(sections.size()));
    for (const store::Section& s : sections) {
      const std::string framed = store::FrameSection(s);
      payload.U64(framed.size());
      payload.Bytes(framed);
    }
    payload.String(meta_json);
    payload.U32(static_cast<uint32_t>(sites.size()));
    for (const RawSiteNode& s : sites) {
      payload.U32(s.handle);
      payload.U32(s.node < stored.size() ? stored[s.node] : cct::kNoNode);
    }
    std::lock_guard<std::mutex> lock(mu_);
    Write(static_cast<uint8_t>(RawRecordType::kSnapshot), payload.bytes());
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
  // Every byte is read, in order (checksums, then the records): mapping the
  // pages in one call beats faulting them in as the checksum first touches
  // them (171 MiB just written: 131 ms of faults + checksum, 33 ms populated,
  // on the 2-core VM).
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
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
  const std::optional<HeaderFields> first = ReadRecordHeader(d);
  if (!first) return cct::Corrupt(path + ": damaged raw GPU dump (header record)");
  const uint32_t length = first->length;
  if (length > r->size_ - kRawRecordHeaderSize)
    return cct::Corrupt(path + ": raw GPU dump ends inside its header record");
  const std::string_view payload(d + kRawRecordHeaderSize, length);
  if (Crc32(payload) != first->payload_crc)
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
  const std::optional<HeaderFields> header = ReadRecordHeader(h);
  if (!header) {
    if (AllZero(h, left)) {  // the zero-filled tail of an unfinished append
      truncated_ = true;
      pos_ = size_;
      return false;
    }
    return cct::Corrupt(path_ + ": damaged raw GPU dump (record header at offset " + std::to_string(pos_) + ")");
  }
  const uint32_t length = header->length;
  if (length > left - kRawRecordHeaderSize) {
    truncated_ = true;
    pos_ = size_;
    return false;
  }
  const std::string_view payload(h + kRawRecordHeaderSize, length);
  if (Crc32(payload) != header->payload_crc)
    return cct::Corrupt(path_ + ": damaged raw GPU dump (checksum mismatch in the record at offset " +
                        std::to_string(pos_) + ")");
  out->type = header->type;
  out->offset = pos_;
  out->payload = payload;
  pos_ += kRawRecordHeaderSize + length;
  return true;
}

// ------------------------------------------------------------ payloads

cct::Result<RawHeader> ParseRawHeader(std::string_view payload) {
  ByteReader c(payload);
  std::string_view magic;
  RawHeader h;
  if (!c.View(magic, kRawDumpMagic.size()) || magic != kRawDumpMagic)
    return cct::Corrupt("not a cctdb raw GPU dump (no magic)");
  if (!c.U32(h.format_version)) return cct::Corrupt("raw GPU dump header record too short");
  if (h.format_version < 1 || h.format_version > kRawDumpFormat)
    return cct::Corrupt("raw GPU dump format " + std::to_string(h.format_version) + "; this cctdb reads formats 1 to " +
                        std::to_string(kRawDumpFormat));
  if (!c.U32(h.pid) || !c.String(h.meta_json)) return cct::Corrupt("raw GPU dump header record too short");
  return h;
}

cct::Status ParseRawCorrelations(std::string_view payload, uint32_t format_version, std::vector<RawCorrelation>* out) {
  ByteReader c(payload);
  uint32_t n = 0;
  const bool with_iteration = format_version >= 2;
  if (!c.Count(n, with_iteration ? 13 : 9)) return cct::Corrupt("bad correlations record");
  out->reserve(out->size() + n);
  for (uint32_t i = 0; i < n; ++i) {
    RawCorrelation r;
    if (!c.U32(r.correlation_id) || !c.U32(r.handle) || !c.U8(r.kind) || (with_iteration && !c.U32(r.iteration)))
      return cct::Corrupt("bad correlations record");
    if (r.kind > static_cast<uint8_t>(cct::GpuOpKind::kSync)) return cct::Corrupt("bad operation kind in a correlations record");
    out->push_back(r);
  }
  return cct::Status::Ok();
}

cct::Status ParseRawBatch(std::string_view payload, RawNameTable& names, RawBatch* out) {
  const cct::Status bad = cct::Corrupt("bad batch record");
  ByteReader c(payload);
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
  if (!c.U64(raw_bytes) || !c.View(out->raw, raw_bytes)) return bad;
  if (!c.U32(api) || !c.U32(entry) || entry < kRawActivitySize || (api > 0 && api > c.remaining() / entry)) return bad;
  out->api.resize(api);
  for (GpuActivity& a : out->api) {
    uint32_t name_id = 0;
    std::string_view bytes;
    if (!c.View(bytes, entry)) return bad;
    if (!ReadRawActivity(bytes.data(), &a, &name_id)) return cct::Corrupt("bad activity in a batch record");
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
  ByteReader c(payload);
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
  ByteReader c(payload);
  *out = RawSnapshot{};
  uint32_t n = 0;
  if (!c.Count(n, 8)) return bad;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t length = 0;
    std::string_view framed;
    if (!c.U64(length) || !c.View(framed, length)) return bad;
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
