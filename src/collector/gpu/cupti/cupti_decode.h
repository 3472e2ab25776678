// Decoding CUPTI activity records into GpuActivity (src/collector/gpu/gpu_activity.h).
//
// Pure code: reads record bytes, calls no CUPTI function, needs no GPU, so
// tests build records from CUPTI's own structs. Two entry points:
//
// - ActivityDecoder::Decode(record): one record, however it was found. The
//   adapter (cupti_adapter.cc) iterates the buffers CUPTI completes with
//   cuptiActivityGetNextRecord — CUPTI knows the size of every record it
//   wrote, including record versions newer than these headers — and hands
//   each record here. Fields are read through the structs of the headers
//   this is compiled with (CUDA 13: CUpti_ActivityKernel10, Memcpy6,
//   MemcpyPtoP4, Memset4, Memory4, Synchronization2, ExternalCorrelation,
//   Device5); CUPTI only ever appends fields to a record kind, so a newer
//   record reads correctly through an older struct.
// - ActivityDecoder::DecodeBuffer(bytes): walks a buffer laid out as CUPTI
//   lays it out (records back to back, each the size of its kind's struct,
//   8-byte aligned) by the struct sizes of these headers (RecordSize). For
//   tests, benchmarks and tools; a kind whose size it does not know ends the
//   walk, and the rest of the buffer is counted in unparsed_bytes.
//
// Record kinds decoded: CONCURRENT_KERNEL and KERNEL, MEMCPY, MEMCPY2
// (peer to peer), MEMSET, MEMORY2, SYNCHRONIZATION, EXTERNAL_CORRELATION and
// DEVICE. Any other kind is counted in `skipped` and produces nothing.
//
// Kernel names are demangled once per distinct name and interned in the
// decoder: GpuActivity::kernel_name views the decoder's table, so the
// decoder must outlive the activities it produced (the adapter's lives as
// long as the process). Not thread-safe: one decoder per thread, or a lock.
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collector/gpu/gpu_activity.h"

namespace collector::cupti {

// Names as CUPTI hands them over (mangled, one shared string per kernel or
// function), demangled once and interned: id 0 is the empty name; views
// and c_str() of a name stay valid as long as the table (deques never move
// their strings). Used by the activity decoder, the PC-sample decoder and
// the adapter's launch callbacks. Not thread-safe.
class DemangledNames {
 public:
  DemangledNames();
  uint32_t Intern(const char* mangled);  // 0 for null or ""
  const std::string& Name(uint32_t id) const { return names_[id]; }        // demangled
  const std::string& Mangled(uint32_t id) const { return mangled_[id]; }  // as given
  size_t size() const { return names_.size() - 1; }

 private:
  std::deque<std::string> names_, mangled_;                    // by id
  std::unordered_map<std::string_view, uint32_t> by_mangled_;  // views into mangled_
  std::unordered_map<const char*, uint32_t> by_pointer_;
  const char* last_pointer_ = nullptr;
  uint32_t last_id_ = 0;
};

struct DecodeStats {
  uint64_t records = 0;         // records looked at
  uint64_t decoded = 0;         // records that became a GpuActivity
  uint64_t skipped = 0;         // records of kinds not decoded (or invalid ones)
  uint64_t unparsed_bytes = 0;  // DecodeBuffer: bytes after a record of unknown size
};

// The size of a record of `kind` in the CUPTI headers this is compiled
// with; 0 for kinds without a known struct.
size_t RecordSize(CUpti_ActivityKind kind);
// The kind of the record at `record`; CUPTI_ACTIVITY_KIND_INVALID (size 0)
// for a value outside the enum, as a damaged dump holds: loading such bytes
// as the enum would be undefined behaviour.
inline CUpti_ActivityKind RecordKindAt(const uint8_t* record) {
  static_assert(sizeof(CUpti_ActivityKind) == sizeof(uint32_t));
  uint32_t raw;
  std::memcpy(&raw, record + offsetof(CUpti_Activity, kind), sizeof raw);
  return raw < CUPTI_ACTIVITY_KIND_COUNT ? static_cast<CUpti_ActivityKind>(raw) : CUPTI_ACTIVITY_KIND_INVALID;
}

// Walks a buffer laid out as CUPTI lays it out (records back to back, each
// its kind's struct size rounded up to 8 bytes), calling fn(offset, kind)
// for every whole record. The walk ends at the buffer's end, at a truncated
// record, or at a kind of unknown size (`unknown_kind`); `end` is where.
struct RecordWalk {
  size_t end = 0;
  bool unknown_kind = false;
};
template <class Fn>
RecordWalk WalkRecords(const uint8_t* buffer, size_t bytes, Fn&& fn) {
  RecordWalk w;
  while (w.end + sizeof(CUpti_Activity) <= bytes) {
    const CUpti_ActivityKind kind = RecordKindAt(buffer + w.end);
    const size_t size = RecordSize(kind);
    if (size == 0) {
      w.unknown_kind = true;
      break;
    }
    if (w.end + size > bytes) break;
    fn(w.end, kind);
    w.end += (size + 7) & ~size_t{7};
  }
  return w;
}

// The adapter finds records with CUPTI's iterator, which knows the size of
// every record its libcupti wrote; a raw dump's replay walks the bytes with
// this build's sizes (WalkRecords). The two differ when the libcupti at run
// time is not the one of these headers (a record kind grew, or shrank).
// `offsets` are where the iterator found the records, in order.
//
// Whether the records lie where WalkRecords finds them and fill the buffer.
bool MatchesBuildLayout(const uint8_t* buffer, size_t valid_bytes, const std::vector<size_t>& offsets);
// Lays the records out again with this build's sizes — each record's first
// RecordSize(kind) bytes (zero-filled where CUPTI's record is shorter; the
// decoder reads no further), 8-byte aligned, back to back — so WalkRecords
// finds exactly them. Records of kinds without a known size are left out
// (the decoder skips them anyway). Returns the bytes written into `out`.
size_t RepackRecords(const uint8_t* buffer, size_t valid_bytes, const std::vector<size_t>& offsets,
                     std::vector<uint64_t>& out);

class ActivityDecoder {
 public:
  ActivityDecoder();
  ActivityDecoder(const ActivityDecoder&) = delete;
  ActivityDecoder& operator=(const ActivityDecoder&) = delete;

  // Appends the GpuActivity for one record to `out` (nothing for kinds that
  // are not decoded). The record must be complete for its kind's struct.
  void Decode(const CUpti_Activity* record, std::vector<GpuActivity>& out);
  // Decodes every record of a buffer of `valid_bytes` bytes (see above).
  void DecodeBuffer(const uint8_t* buffer, size_t valid_bytes, std::vector<GpuActivity>& out);

  const DecodeStats& stats() const { return stats_; }
  // The interned kernel names (demangled); id 0 is the empty name.
  std::string_view KernelName(uint32_t id) const { return names_.Name(id); }
  size_t kernel_name_count() const { return names_.size(); }

 private:
  void DecodeKernel(const CUpti_ActivityKernel10& r, GpuActivity& a);

  DecodeStats stats_;
  DemangledNames names_;
};

}  // namespace collector::cupti
