#include "store/run_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "store/iteration_codec.h"
#include "store/lmdb_env.h"  // kDatabaseFileMode
#include "store/trace_codec.h"

namespace store {

using cct::Corrupt;
using cct::Result;
using cct::Status;

namespace {

// The run record (metadata and keys) travels as one more section, so the
// whole file is checked the same way.
constexpr auto kRecordSection = static_cast<SectionKind>(7);
static_assert(static_cast<uint8_t>(kRecordSection) + 1 == static_cast<uint8_t>(SectionKind::kTrace));
// More sections than any run has (five tree kinds, one values section per
// metric, iterations, trace): a guard against absurd counts, not a format limit.
constexpr uint32_t kMaxSections = 1u << 16;

Status ErrnoError(const std::string& what) { return cct::IoError(what + ": " + std::strerror(errno)); }

}  // namespace

Result<std::vector<Section>> EncodeRun(RunMeta& meta, const cct::Tree* tree, const RunIterations* iterations,
                                       const RunTrace* trace) {
  std::vector<Section> sections;
  if (iterations && !tree)
    return cct::InvalidArgument("cannot store iterations without the run's tree (their node ids refer to it)");
  if (trace && !tree) return cct::InvalidArgument("cannot store a trace without the run's tree (its node ids refer to it)");
  if (!tree) return sections;
  std::vector<cct::NodeId> stored_ids;
  sections = EncodeTree(*tree, iterations || trace ? &stored_ids : nullptr);
  meta.node_count = tree->size();
  if (iterations) {
    auto its = EncodeIterations(*iterations, *tree, stored_ids);
    if (!its.ok()) return its.status().WithContext("cannot store iterations");
    sections.push_back(std::move(its).value());
    if (meta.iteration_regex.empty()) meta.iteration_regex = iterations->range;
  }
  if (trace) {
    auto encoded = EncodeTrace(*trace, *tree, stored_ids);
    if (!encoded.ok()) return encoded.status().WithContext("cannot store the trace");
    sections.push_back(std::move(encoded).value());
  }
  return sections;
}

std::string EncodeRunFile(const RunFile& run) {
  nlohmann::json record = {{"meta", run.meta.ToJson()},
                           {"key", run.key},
                           {"parent_key", run.parent_key},
                           {"root_key", run.root_key}};
  // Version 1 unless the file holds a trace: readers from before traces
  // refuse section kind 8, and would call the file damaged; with version 2
  // they say it is newer than they read.
  const bool traced = std::any_of(run.sections.begin(), run.sections.end(),
                                  [](const Section& s) { return s.kind == SectionKind::kTrace; });
  ByteWriter w;
  w.Bytes(kRunFileMagic);
  w.U8(0);
  w.U32(traced ? kRunFileVersion : 1);
  w.U32(static_cast<uint32_t>(run.sections.size() + 1));
  w.Bytes(FrameSection(
      {kRecordSection, 0, record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)}));
  for (const Section& s : run.sections) w.Bytes(FrameSection(s));
  return w.Take();
}

Result<RunFile> DecodeRunFile(std::string_view bytes) {
  ByteReader r(bytes);
  std::string_view magic;
  uint8_t nul = 1;
  uint32_t version = 0, count = 0;
  if (!r.View(magic, kRunFileMagic.size()) || magic != kRunFileMagic || !r.U8(nul) || nul != 0)
    return Corrupt("not a cctdb run file (bad magic)");
  if (!r.U32(version) || !r.U32(count)) return Corrupt("run file header is truncated");
  if (version == 0 || version > kRunFileVersion)
    return cct::Status(cct::ErrorCode::kVersion, "run file version " + std::to_string(version) +
                                                     " (this build reads up to " + std::to_string(kRunFileVersion) + ")");
  if (count == 0 || count > kMaxSections) return Corrupt("run file has an implausible section count");
  RunFile out;
  bool have_record = false;
  const uint8_t last_kind = static_cast<uint8_t>(version >= 2 ? SectionKind::kTrace : kRecordSection);
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view rest;
    const size_t left = r.remaining();
    if (!r.View(rest, left)) return Corrupt("run file is truncated");
    CCT_ASSIGN_OR_RETURN(SectionHeader h, ParseSectionHeader(rest));
    if (h.length > rest.size() - std::min(rest.size(), kSectionHeaderSize))
      return Corrupt("run file is truncated (section " + std::to_string(i) + ")");
    const size_t size = kSectionHeaderSize + static_cast<size_t>(h.length);
    CCT_ASSIGN_OR_RETURN(Section s, UnframeSection(rest.substr(0, size)));
    // The header's reserved bytes are zero and only a values section has an
    // argument (its metric): the CRC covers the payload, this the rest.
    if (FrameSection({s.kind, s.arg, {}}).substr(0, kSectionHeaderSize - 12) != rest.substr(0, kSectionHeaderSize - 12) ||
        (s.arg != 0 && s.kind != SectionKind::kValues) || static_cast<uint8_t>(s.kind) < 1 ||
        static_cast<uint8_t>(s.kind) > last_kind)
      return Corrupt("run file section " + std::to_string(i) + " has a damaged header");
    r = ByteReader(rest.substr(size));
    if (s.kind == kRecordSection) {
      if (have_record) return Corrupt("run file has two run records");
      have_record = true;
      nlohmann::json j = nlohmann::json::parse(s.payload, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object() || !j.contains("meta")) return Corrupt("run file's run record is not valid JSON");
      CCT_ASSIGN_OR_RETURN(out.meta, RunMeta::FromJson(j["meta"]));
      for (auto [field, name] : {std::pair{&out.key, "key"}, {&out.parent_key, "parent_key"}, {&out.root_key, "root_key"}}) {
        auto it = j.find(name);
        if (it == j.end() || !it->is_string()) return Corrupt(std::string("run file's run record has no ") + name);
        *field = it->get<std::string>();
      }
    } else {
      out.sections.push_back(std::move(s));
    }
  }
  if (r.remaining() != 0) return Corrupt("run file has bytes after its last section");
  if (!have_record) return Corrupt("run file has no run record");
  if (out.key.empty()) return Corrupt("run file's run has no key");
  out.meta.id = 0;
  // The tree, iterations and trace must decode, so that what the database
  // takes in is readable.
  if (!out.sections.empty()) {
    auto tree = DecodeTree(out.sections);
    if (!tree.ok()) return tree.status();
    bool traced = false;
    for (const Section& s : out.sections) {
      if (s.kind == SectionKind::kIterations) {
        auto its = DecodeIterations(s.payload, tree->size(), tree->metrics());
        if (!its.ok()) return its.status();
      } else if (s.kind == SectionKind::kTrace) {
        if (traced) return Corrupt("run file has two traces");
        traced = true;
        auto trace = DecodeTrace(s.payload, tree->size());
        if (!trace.ok()) return trace.status();
      }
    }
  }
  return out;
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes, const std::string& tmp) {
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, kDatabaseFileMode);
  if (fd < 0) return ErrnoError("cannot write " + tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status st = ErrnoError("cannot write " + tmp);
      close(fd);
      unlink(tmp.c_str());
      return st;
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) {
    Status st = ErrnoError("cannot write " + tmp);
    unlink(tmp.c_str());
    return st;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    Status st = ErrnoError("cannot rename " + tmp + " to " + path);
    unlink(tmp.c_str());
    return st;
  }
  return Status::Ok();
}

Status WriteRunFile(const std::string& path, const RunFile& run) { return WriteRunFile(path, EncodeRunFile(run)); }

Status WriteRunFile(const std::string& path, std::string_view encoded) {
  return WriteFileAtomically(path, encoded, path + ".tmp");
}

std::string InboxFrameHeader(uint64_t payload_size) {
  ByteWriter w;
  w.Bytes(kInboxMagic);
  w.U64(payload_size);
  return w.Take();
}

Result<uint64_t> ParseInboxFrameHeader(std::string_view header) {
  ByteReader r(header);
  std::string_view magic;
  uint64_t size = 0;
  if (!r.View(magic, kInboxMagic.size()) || magic != kInboxMagic || !r.U64(size))
    return Corrupt("not a cctdb inbox message (bad header)");
  if (size > kInboxMaxPayload) return Corrupt("inbox message announces " + std::to_string(size) + " bytes");
  return size;
}

InboxFrames SplitInboxFrames(std::string_view bytes) {
  InboxFrames out;
  while (!bytes.empty()) {
    if (bytes.size() < kInboxHeaderSize) {
      out.torn = true;
      break;
    }
    auto size = ParseInboxFrameHeader(bytes.substr(0, kInboxHeaderSize));
    if (!size.ok()) {
      out.damaged = true;
      break;
    }
    if (bytes.size() - kInboxHeaderSize < *size) {
      out.torn = true;
      break;
    }
    out.payloads.push_back(bytes.substr(kInboxHeaderSize, static_cast<size_t>(*size)));
    bytes.remove_prefix(kInboxHeaderSize + static_cast<size_t>(*size));
  }
  return out;
}

Result<std::string> ReadWholeFile(const std::string& path, size_t limit) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot read " + path);
  std::string bytes;
  struct stat st {};
  // Files under /proc say 0: start small and grow.
  size_t chunk = fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : 4096;
  size_t have = 0;
  while (have < limit) {
    const size_t want = std::min(chunk, limit - have);
    bytes.resize(have + want);
    const ssize_t n = read(fd, bytes.data() + have, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = ErrnoError("cannot read " + path);
      close(fd);
      return s;
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
    if (chunk < (size_t{1} << 20)) chunk *= 2;
  }
  close(fd);
  bytes.resize(have);
  return bytes;
}

Result<RunFile> ReadRunFile(const std::string& path) {
  auto bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  auto run = DecodeRunFile(*bytes);
  if (!run.ok()) return run.status().WithContext(path);
  return run;
}

}  // namespace store
