#include "store/database.h"

#include "store/fault_guard.h"
#include "store/iteration_codec.h"
#include "store/run_file.h"
#include "store/trace_codec.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

namespace store {

using cct::Corrupt;
using cct::ErrorCode;
using cct::Result;
using cct::Status;

namespace {

std::string U32BE(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
  return s;
}
uint32_t ReadU32BE(std::string_view s) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}
std::string U16BE(uint16_t v) {
  return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)};
}

// blobs key: run id (u32 BE) . section kind (u8) . arg (u16 BE) . chunk (u32 BE)
constexpr size_t kBlobKeySize = 11;
std::string BlobKey(RunId run, SectionKind kind, uint16_t arg, uint32_t chunk) {
  std::string k = U32BE(run);
  k.push_back(static_cast<char>(kind));
  k += U16BE(arg);
  k += U32BE(chunk);
  return k;
}

std::string LeU32(uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

// The meta table's index from a run file's key to its run id: a run is
// stored once however many recorders gather its file at the same time
// (format.md, "run_key:KEY").
std::string RunKeyIndex(const std::string& key) { return "run_key:" + key; }
// In `meta` once the index holds every stored run's key: set when a file
// is created, and by the first writer that opens a file without it, which
// indexes the runs stored before the index existed (format.md).
constexpr std::string_view kRunKeyIndexComplete = "run_key_index";

uint32_t ReadLeU32(std::string_view v) {
  uint32_t id = 0;
  if (v.size() == 4) std::memcpy(&id, v.data(), 4);
  return id;
}

Status ParseRun(std::string_view value, RunMeta& out) {
  nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt("a run record is not valid JSON");
  CCT_ASSIGN_OR_RETURN(out, RunMeta::FromJson(j));
  return Status::Ok();
}

}  // namespace

std::string DefaultDatabasePath(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (const char* env = std::getenv("CCT_DB"); env != nullptr && *env != '\0') return env;
  return "cct.db";
}

Result<std::unique_ptr<Database>> Database::Open(const std::string& path, Mode mode, unsigned file_mode) {
  const OpenDeadline deadline;
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbEnv> env,
                       LmdbEnv::Open(path,
                                     mode == Mode::kWrite        ? LmdbEnv::Mode::kReadWrite
                                     : mode == Mode::kWriteAlone ? LmdbEnv::Mode::kReadWriteAlone
                                                                 : LmdbEnv::Mode::kReadOnly,
                                     file_mode));
  std::unique_ptr<Database> db(new Database(std::move(env)));
  CCT_RETURN_IF_ERROR(db->Init(mode));
  return db;
}

Status Database::Init(Mode mode) {
  const std::string& p = env_->path();
  const bool write = mode != Mode::kRead;
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(write));
  CCT_ASSIGN_OR_RETURN(std::optional<Dbi> meta, txn->OpenDb("meta", false));
  if (!meta) {
    CCT_ASSIGN_OR_RETURN(bool empty, txn->MainDbEmpty());
    if (!empty) return Corrupt(p + " is an LMDB database of another program, not a cctdb database");
    if (!write) return Corrupt(p + " is an empty LMDB environment, not a cctdb database");
    CCT_ASSIGN_OR_RETURN(meta, txn->OpenDb("meta", true));
    CCT_RETURN_IF_ERROR(txn->Put(*meta, "magic", kMagic));
    CCT_RETURN_IF_ERROR(txn->Put(*meta, "format_version", LeU32(kFormatVersion)));
    CCT_RETURN_IF_ERROR(txn->Put(*meta, "next_run_id", LeU32(1)));
  } else {
    CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> magic, txn->Get(*meta, "magic"));
    if (!magic || *magic != kMagic) return Corrupt(p + " is not a cctdb database (bad magic)");
    CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> version, txn->Get(*meta, "format_version"));
    if (!version || version->size() != 4) return Corrupt(p + " is damaged: its format version is unreadable");
    uint32_t v = 0;
    std::memcpy(&v, version->data(), 4);
    if (v > kFormatVersion)
      return Status(ErrorCode::kVersion, p + " was written by a newer cctdb (format version " + std::to_string(v) +
                                             "; this build reads up to " + std::to_string(kFormatVersion) + ")");
    if (v == 0) return Corrupt(p + " is damaged: format version 0");
    // Every version 1 record is a valid version 2 record (root_run absent:
    // the parent_run chain leads to the root). A writer stamps the file 2,
    // since it may now add runs whose children a version 1 reader would
    // take for the newest invocation.
    if (write && v < kFormatVersion) CCT_RETURN_IF_ERROR(txn->Put(*meta, "format_version", LeU32(kFormatVersion)));
  }
  meta_ = *meta;
  CCT_ASSIGN_OR_RETURN(std::optional<Dbi> runs, txn->OpenDb("runs", write));
  CCT_ASSIGN_OR_RETURN(std::optional<Dbi> blobs, txn->OpenDb("blobs", write));
  if (!runs || !blobs) return Corrupt(p + " is damaged: a table is missing");
  runs_ = *runs;
  blobs_ = *blobs;
  if (write) {
    CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> complete, txn->Get(meta_, kRunKeyIndexComplete));
    if (!complete) CCT_RETURN_IF_ERROR(CompleteRunKeyIndex(*txn));
  }
  return txn->Commit();
}

// Once per file: runs stored before the index (or by a writer that stamped
// an older file) get their entries, so FindRunKeys need never read every
// record. An unreadable record is skipped: `cct-query check` reports it.
Status Database::CompleteRunKeyIndex(LmdbTxn& txn) {
  std::vector<std::pair<std::string, RunId>> keys;
  CCT_RETURN_IF_ERROR(txn.ForEach(runs_, "", [&](std::string_view, std::string_view value) {
    RunMeta m;
    if (ParseRun(value, m).ok())
      if (std::string key = RunKeyOf(m); !key.empty()) keys.emplace_back(std::move(key), m.id);
    return true;
  }));
  for (const auto& [key, id] : keys) {
    CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> known, txn.Get(meta_, RunKeyIndex(key)));
    if (!known) CCT_RETURN_IF_ERROR(txn.Put(meta_, RunKeyIndex(key), LeU32(id)));
  }
  return txn.Put(meta_, kRunKeyIndexComplete, LeU32(1));
}

Result<std::map<std::string, RunId>> Database::FindRunKeys(const std::vector<std::string>& keys) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  std::map<std::string, RunId> out;
  for (const std::string& key : keys) {
    if (key.empty() || out.count(key)) continue;
    CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> known, txn->Get(meta_, RunKeyIndex(key)));
    const uint32_t id = known ? ReadLeU32(*known) : 0;
    if (id == 0) continue;
    // An entry whose run is gone (deleted before DeleteRun removed
    // entries) does not count.
    CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> record, txn->Get(runs_, U32BE(id)));
    if (record) out.emplace(key, id);
  }
  return out;
}

Result<std::vector<RunMeta>> Database::ListRuns(RunId from, RunId to) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  std::vector<RunMeta> out;
  Status parse;
  CCT_RETURN_IF_ERROR(txn->ForEach(runs_, from > 1 ? U32BE(from) : "", [&](std::string_view key, std::string_view value) {
    if (to != 0 && key.size() == 4 && ReadU32BE(key) >= to) return false;
    RunMeta m;
    parse = ParseRun(value, m);
    if (!parse.ok()) return false;
    out.push_back(std::move(m));
    return true;
  }));
  CCT_RETURN_IF_ERROR(parse.WithContext(path()));
  return out;
}

Result<RunMeta> Database::GetRun(RunId id) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> value, txn->Get(runs_, U32BE(id)));
  if (!value) return cct::NotFound("no run " + std::to_string(id) + " in " + path());
  RunMeta m;
  CCT_RETURN_IF_ERROR(ParseRun(*value, m).WithContext(path()));
  return m;
}

Result<RunId> Database::NextRunId() {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  return ReadRunCounter(*txn);
}

Result<RunId> Database::ReadRunCounter(LmdbTxn& txn) {
  CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> next, txn.Get(meta_, "next_run_id"));
  if (!next || next->size() != 4) return Corrupt(path() + " is damaged: the run counter is unreadable");
  uint32_t id = 0;
  std::memcpy(&id, next->data(), 4);
  return RunId{id};
}

Status Database::PutSections(LmdbTxn& txn, RunId id, const std::vector<Section>& sections) {
  for (const Section& s : sections) {
    const std::string stored = FrameSection(s);
    uint32_t chunk = 0;
    for (size_t off = 0; off < stored.size() || chunk == 0; off += kChunkBytes, ++chunk) {
      const std::string_view piece = std::string_view(stored).substr(off, kChunkBytes);
      CCT_RETURN_IF_ERROR(txn.Put(blobs_, BlobKey(id, s.kind, s.arg, chunk), piece));
    }
  }
  return Status::Ok();
}

// Both write through PutRuns: one place stores run records and sections.
Status Database::CreateRun(RunMeta& meta, const cct::Tree* tree, const RunIterations* iterations,
                           const RunTrace* trace) {
  std::vector<RunFile> runs(1);
  runs[0].meta = meta;
  runs[0].meta.id = 0;  // always a new run, whatever id the caller's copy had
  CCT_ASSIGN_OR_RETURN(runs[0].sections, EncodeRun(runs[0].meta, tree, iterations, trace));
  CCT_RETURN_IF_ERROR(PutRuns(runs));
  meta = std::move(runs[0].meta);
  return Status::Ok();
}

Status Database::UpdateRun(const RunMeta& meta, const cct::Tree* tree, const RunIterations* iterations,
                           const RunTrace* trace) {
  if (meta.id == 0) return cct::NotFound("no run 0 in " + path());  // PutRuns would create one
  std::vector<RunFile> runs(1);
  runs[0].meta = meta;
  CCT_ASSIGN_OR_RETURN(runs[0].sections, EncodeRun(runs[0].meta, tree, iterations, trace));
  return PutRuns(runs);
}

Status Database::PutRuns(std::vector<RunFile>& runs, const std::function<void(RunFile&)>& link) {
  if (runs.empty()) return Status::Ok();
  // The body may run again (the map grows and the transaction is retried):
  // it assigns new ids afresh each time.
  std::vector<bool> create(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) create[i] = runs[i].meta.id == 0;
  return WithWriteTxn(*env_, [&](LmdbTxn& txn) -> Status {
    CCT_ASSIGN_OR_RETURN(uint32_t next_id, ReadRunCounter(txn));
    const uint32_t first_id = next_id;
    for (size_t i = 0; i < runs.size(); ++i) {
      RunFile& run = runs[i];
      bool fresh = create[i];
      if (fresh && !run.key.empty()) {
        // Another recorder may have stored this run file since our caller
        // looked: inside the write transaction, its key says so.
        CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> known, txn.Get(meta_, RunKeyIndex(run.key)));
        const uint32_t id = known ? ReadLeU32(*known) : 0;
        if (id != 0) {
          // An entry whose run is gone (deleted by a writer before the
          // index) does not count.
          CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> record, txn.Get(runs_, U32BE(id)));
          if (record) {
            run.meta.id = id;
            fresh = false;
          }
        }
      }
      if (!run.key.empty()) run.meta.extra["run_key"] = run.key;
      if (fresh) run.meta.id = next_id++;
      if (link) link(run);
      if (!fresh) {
        CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> existing, txn.Get(runs_, U32BE(run.meta.id)));
        if (!existing) return cct::NotFound("no run " + std::to_string(run.meta.id) + " in " + path());
        if (!run.sections.empty()) {
          for (SectionKind k : {SectionKind::kStrings, SectionKind::kFrames, SectionKind::kNodes, SectionKind::kMetrics,
                                SectionKind::kValues, SectionKind::kIterations, SectionKind::kTrace,
                                SectionKind::kInclusiveValues}) {
            std::string prefix = U32BE(run.meta.id);
            prefix.push_back(static_cast<char>(k));
            CCT_RETURN_IF_ERROR(txn.DeletePrefix(blobs_, prefix));
          }
        }
      }
      CutToLimits(run.meta);
      CCT_RETURN_IF_ERROR(txn.Put(runs_, U32BE(run.meta.id),
                                  run.meta.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
      CCT_RETURN_IF_ERROR(PutSections(txn, run.meta.id, run.sections));
      if (!run.key.empty()) {
        CCT_RETURN_IF_ERROR(txn.Put(meta_, RunKeyIndex(run.key), LeU32(run.meta.id)));
      } else if (const std::string key = RunKeyOf(run.meta); !key.empty()) {
        // A record that names its run file's key without being gathered
        // from it (a caller's copy): the index must still find a run with it.
        CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> known, txn.Get(meta_, RunKeyIndex(key)));
        if (!known) CCT_RETURN_IF_ERROR(txn.Put(meta_, RunKeyIndex(key), LeU32(run.meta.id)));
      }
    }
    if (next_id != first_id) CCT_RETURN_IF_ERROR(txn.Put(meta_, "next_run_id", LeU32(next_id)));
    return Status::Ok();
  });
}

Status Database::DeleteRun(RunId id) {
  return WithWriteTxn(*env_, [&](LmdbTxn& txn) -> Status {
    CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> record, txn.Get(runs_, U32BE(id)));
    if (record) {
      RunMeta meta;
      if (ParseRun(*record, meta).ok()) {
        // Only its own entry: one left by another run with the key stays.
        if (const std::string key = RunKeyOf(meta); !key.empty()) {
          CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> known, txn.Get(meta_, RunKeyIndex(key)));
          if (known && ReadLeU32(*known) == id) CCT_RETURN_IF_ERROR(txn.Delete(meta_, RunKeyIndex(key)));
        }
      }
    }
    CCT_RETURN_IF_ERROR(txn.Delete(runs_, U32BE(id)));
    return txn.DeletePrefix(blobs_, U32BE(id));
  });
}

Status Database::WriteSection(RunId id, const Section& section) {
  return WithWriteTxn(*env_, [&](LmdbTxn& txn) -> Status {
    std::string prefix = U32BE(id);
    prefix.push_back(static_cast<char>(section.kind));
    prefix += U16BE(section.arg);
    CCT_RETURN_IF_ERROR(txn.DeletePrefix(blobs_, prefix));
    return PutSections(txn, id, {section});
  });
}

// Collects the run's chunks (keys sort by kind, arg, chunk) as views of each
// section's payload in the memory map: the decoder copies every byte once,
// straight into the tree's arrays.
Result<std::vector<SectionPieces>> Database::GetTreePieces(LmdbTxn& txn, RunId id) {
  const std::string prefix = U32BE(id);
  std::vector<SectionPieces> out;
  std::vector<uint64_t> have;     // payload bytes collected per section
  std::vector<uint32_t> crcs;
  std::vector<uint64_t> lengths;  // payload bytes each header announces
  uint32_t expect_chunk = 0;
  size_t skip = 0;  // header bytes still to skip in the current section
  Status bad;
  auto damaged = [&](const std::string& why) {
    bad = Corrupt(path() + " is damaged: run " + std::to_string(id) + ": " + why);
    return false;
  };
  CCT_RETURN_IF_ERROR(txn.ForEach(blobs_, prefix, [&](std::string_view key, std::string_view value) {
    if (key.substr(0, 4) != prefix) return false;
    if (key.size() != kBlobKeySize) return damaged("malformed blob key");
    const auto kind = static_cast<SectionKind>(key[4]);
    // Not the tree's: iterations, the trace, and kinds of later formats
    // (which this reader cannot decode and must not fail on).
    if ((static_cast<uint8_t>(kind) < static_cast<uint8_t>(SectionKind::kStrings) ||
         static_cast<uint8_t>(kind) > static_cast<uint8_t>(SectionKind::kValues)) &&
        kind != SectionKind::kInclusiveValues)
      return true;
    const uint16_t arg = static_cast<uint16_t>((static_cast<unsigned char>(key[5]) << 8) |
                                               static_cast<unsigned char>(key[6]));
    const uint32_t chunk = ReadU32BE(key.substr(7));
    if (chunk == 0) {
      if (!out.empty() && have.back() != lengths.back()) return damaged("a section is missing chunks");
      auto h = ParseSectionHeader(value);
      if (!h.ok()) return damaged(h.status().message());
      if (h->kind != kind || h->arg != arg) return damaged("section stored under the wrong key");
      if (h->length > (uint64_t{1} << 40)) return damaged("section length is implausible");
      out.push_back(SectionPieces{kind, arg, {}});
      have.push_back(0);
      crcs.push_back(h->crc);
      lengths.push_back(h->length);
      expect_chunk = 0;
      skip = kSectionHeaderSize;
    } else if (out.empty() || out.back().kind != kind || out.back().arg != arg || chunk != expect_chunk) {
      return damaged("a section is missing chunks");
    }
    ++expect_chunk;
    const std::string_view data = value.substr(std::min(skip, value.size()));
    skip -= std::min(skip, value.size());
    if (have.back() + data.size() > lengths.back()) return damaged("a section is longer than its header says");
    if (!data.empty()) out.back().pieces.push_back(data);
    have.back() += data.size();
    return true;
  }));
  CCT_RETURN_IF_ERROR(bad);
  for (size_t i = 0; i < out.size(); ++i) {
    if (have[i] != lengths[i])
      return Corrupt(path() + " is damaged: run " + std::to_string(id) + ": a section is missing chunks");
    uint32_t crc = 0;  // zlib's CRC-32 continues from one piece to the next
    for (std::string_view piece : out[i].pieces)
      crc = Crc32Extend(crc, piece);
    if (crc != crcs[i])
      return Corrupt(path() + " is damaged: run " + std::to_string(id) + ": section checksum mismatch");
  }
  return out;
}

Result<cct::Tree> Database::ReadTree(RunId id, RunMeta* record) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> meta, txn->Get(runs_, U32BE(id)));
  if (!meta) return cct::NotFound("no run " + std::to_string(id) + " in " + path());
  if (record) {
    if (Status st = ParseRun(*meta, *record); !st.ok())
      return Corrupt(path() + " is damaged: run " + std::to_string(id) + ": " + st.message());
  }
  CCT_ASSIGN_OR_RETURN(std::vector<SectionPieces> sections, GetTreePieces(*txn, id));
  if (sections.empty()) return cct::NotFound("run " + std::to_string(id) + " has no profile data yet");
  auto tree = DecodeTree(sections);  // from the map: before the transaction ends
  txn->Abort();
  if (!tree.ok())
    return Corrupt(path() + " is damaged: run " + std::to_string(id) + ": " + tree.status().message());
  return tree;
}

Result<std::optional<Section>> Database::GetSection(LmdbTxn& txn, RunId id, SectionKind kind, uint16_t arg) {
  auto damaged = [&](const std::string& why) {
    return Corrupt(path() + " is damaged: run " + std::to_string(id) + ": " + why);
  };
  CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> first, txn.Get(blobs_, BlobKey(id, kind, arg, 0)));
  if (!first) return std::optional<Section>();
  auto h = ParseSectionHeader(*first);
  if (!h.ok()) return damaged(h.status().message());
  if (h->kind != kind || h->arg != arg) return damaged("section stored under the wrong key");
  if (h->length > (uint64_t{1} << 40)) return damaged("section length is implausible");
  Section s{kind, arg, {}};
  s.payload.reserve(h->length);
  s.payload.append(first->substr(std::min(first->size(), kSectionHeaderSize)));
  for (uint32_t chunk = 1; s.payload.size() < h->length; ++chunk) {
    CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> v, txn.Get(blobs_, BlobKey(id, kind, arg, chunk)));
    if (!v) return damaged("a section is missing chunks");
    if (s.payload.size() + v->size() > h->length) return damaged("a section is longer than its header says");
    s.payload.append(*v);
  }
  if (s.payload.size() != h->length) return damaged("a section is longer than its header says");
  if (Status v = VerifySection(s, h->crc); !v.ok()) return damaged(v.message());
  return std::optional<Section>(std::move(s));
}

Result<std::optional<Section>> Database::ReadSection(RunId id, SectionKind kind, uint16_t arg) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  return GetSection(*txn, id, kind, arg);
}

Result<std::optional<RunIterations>> Database::ReadIterations(RunId id) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> meta, txn->Get(runs_, U32BE(id)));
  if (!meta) return cct::NotFound("no run " + std::to_string(id) + " in " + path());
  CCT_ASSIGN_OR_RETURN(std::optional<Section> its, GetSection(*txn, id, SectionKind::kIterations, 0));
  if (!its) return std::optional<RunIterations>();
  auto damaged = [&](const std::string& why) {
    return Corrupt(path() + " is damaged: run " + std::to_string(id) + ": " + why);
  };
  CCT_ASSIGN_OR_RETURN(uint32_t node_count, StoredNodeCount(*txn, id, "iterations"));
  CCT_ASSIGN_OR_RETURN(std::optional<Section> metrics, GetSection(*txn, id, SectionKind::kMetrics, 0));
  if (!metrics) return damaged("iterations are stored without a tree");
  cct::MetricRegistry registry;
  if (Status st = DecodeMetricTable(metrics->payload, registry); !st.ok()) return damaged(st.message());
  txn->Abort();
  auto decoded = DecodeIterations(its->payload, node_count, registry);
  if (!decoded.ok()) return damaged(decoded.status().message());
  return std::optional<RunIterations>(std::move(decoded).value());
}

Result<uint32_t> Database::StoredNodeCount(LmdbTxn& txn, RunId id, const char* what) {
  auto damaged = [&](const std::string& why) {
    return Corrupt(path() + " is damaged: run " + std::to_string(id) + ": " + why);
  };
  CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> nodes, txn.Get(blobs_, BlobKey(id, SectionKind::kNodes, 0, 0)));
  if (!nodes) return damaged(std::string(what) + " are stored without a tree");
  if (nodes->size() < kSectionHeaderSize + 4) return damaged("node table is truncated");
  uint32_t node_count = 0;
  std::memcpy(&node_count, nodes->data() + kSectionHeaderSize, 4);
  return node_count;
}

Result<std::optional<RunTrace>> Database::ReadTrace(RunId id) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  CCT_ASSIGN_OR_RETURN(std::optional<std::string_view> meta, txn->Get(runs_, U32BE(id)));
  if (!meta) return cct::NotFound("no run " + std::to_string(id) + " in " + path());
  CCT_ASSIGN_OR_RETURN(std::optional<Section> trace, GetSection(*txn, id, SectionKind::kTrace, 0));
  if (!trace) return std::optional<RunTrace>();
  CCT_ASSIGN_OR_RETURN(uint32_t node_count, StoredNodeCount(*txn, id, "traces"));
  txn->Abort();
  auto decoded = DecodeTrace(trace->payload, node_count);
  if (!decoded.ok())
    return Corrupt(path() + " is damaged: run " + std::to_string(id) + ": " + decoded.status().message());
  return std::optional<RunTrace>(std::move(decoded).value());
}

Result<std::vector<std::pair<SectionKind, uint64_t>>> Database::SectionSizes(RunId id) {
  CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env_->Begin(false));
  std::map<uint8_t, uint64_t> sizes;
  const std::string prefix = U32BE(id);
  CCT_RETURN_IF_ERROR(txn->ForEach(blobs_, prefix, [&](std::string_view key, std::string_view value) {
    if (key.substr(0, 4) != prefix || key.size() != kBlobKeySize) return false;
    sizes[static_cast<uint8_t>(key[4])] += value.size();
    return true;
  }));
  std::vector<std::pair<SectionKind, uint64_t>> out;
  for (auto [k, v] : sizes) out.emplace_back(static_cast<SectionKind>(k), v);
  return out;
}

}  // namespace store
