// Fuzz target: importers::ImportNsys (Nsight Systems SQLite exports).
//
// SQLite itself is fuzzed by its authors; what is ours is what the importer
// makes of the rows. So the input is rows: the first byte picks which of
// the export's tables exist (a bit each), then each 9-byte record is one
// row — a table byte and four 2-byte values — inserted into a database with
// the documented tables and columns (tests/data/nsys/basic.sql's names, no
// constraints, so any value goes in). Values are drawn from the ranges that
// meet each other (string ids, correlation ids, thread ids, times), with
// NULLs and negatives. An input starting with 0xff is instead written as the
// file itself (damaged databases).
//
// Properties: an accepted file gives a tree the store round-trips, counts
// every kernel, copy and sample row once (SQL counts over the file), and
// --skip-bad-lines accepts it with the same tree and nothing skipped; a
// rejected file is one line, and --skip-bad-lines accepts whatever the
// strict import rejected for a row's content.
#include <string>

#include "cct/node_values.h"
#include "importers/importer.h"
#include "importers/sqlite_db.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

struct FuzzTable {
  const char* name;
  const char* columns[4];  // the columns the four values go to
};

// Each table with the four columns a record fills; the others the importer
// reads are in the CREATE statements and stay NULL unless listed.
const FuzzTable kTables[] = {
    {"StringIds", {"id", "value", nullptr, nullptr}},
    {"ThreadNames", {"nameId", "globalTid", nullptr, nullptr}},
    {"NVTX_EVENTS", {"start", "\"end\"", "eventType", "textId"}},
    {"NVTX_EVENTS", {"start", "\"end\"", "text", "domainId"}},
    {"CUPTI_ACTIVITY_KIND_RUNTIME", {"start", "correlationId", "nameId", "callchainId"}},
    {"CUDA_CALLCHAINS", {"id", "symbol", "module", "stackDepth"}},
    {"CUPTI_ACTIVITY_KIND_KERNEL", {"start", "\"end\"", "correlationId", "demangledName"}},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", {"start", "\"end\"", "correlationId", "bytes"}},
    {"CUPTI_ACTIVITY_KIND_MEMSET", {"start", "\"end\"", "correlationId", "bytes"}},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", {"start", "\"end\"", "correlationId", "syncType"}},
    {"COMPOSITE_EVENTS", {"id", "start", "globalTid", nullptr}},
    {"SAMPLING_CALLCHAINS", {"id", "symbol", "module", "stackDepth"}},
};

const char* const kSchema[] = {
    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value)",
    "CREATE TABLE ThreadNames (nameId, priority, globalTid)",
    "CREATE TABLE NVTX_EVENTS (start, \"end\", eventType, text, globalTid DEFAULT 1677721700, textId, domainId)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, \"end\", globalTid DEFAULT 1677721700, correlationId, nameId, "
    "callchainId)",
    "CREATE TABLE CUDA_CALLCHAINS (id, symbol, module, stackDepth)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, \"end\", correlationId, globalPid DEFAULT 1677721600, "
    "demangledName, shortName DEFAULT 1, gridX DEFAULT 2, gridY, gridZ, blockX DEFAULT 64, blockY, blockZ, "
    "registersPerThread DEFAULT 32, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start, \"end\", correlationId, globalPid DEFAULT 1677721600, bytes, "
    "copyKind DEFAULT 1)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start, \"end\", correlationId, globalPid DEFAULT 1677721600, bytes)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, \"end\", correlationId, globalPid DEFAULT 1677721600, "
    "syncType)",
    "CREATE TABLE COMPOSITE_EVENTS (id INTEGER PRIMARY KEY, start, globalTid)",
    "CREATE TABLE SAMPLING_CALLCHAINS (id, symbol, module, stackDepth)",
};

// A value from two bytes: the low two bits of the first pick the range.
std::string FuzzValue(uint8_t a, uint8_t b) {
  switch (a & 3) {
    case 0: return std::to_string(b % 16);                                   // ids, depths, event types' neighbours
    case 1: return std::to_string(1677721700 + b % 3);                       // thread ids of pid 100
    case 2: return std::to_string(int64_t{b} * 100 + (a >> 2));             // times
    default: return (a >> 2) % 4 == 0 ? "NULL" : (a >> 2) % 4 == 1 ? "'s" + std::to_string(b % 4) + "'"
                                          : (a >> 2) % 4 == 2 ? std::to_string(b % 2 ? 59 : 34)  // NVTX types
                                                              : "-" + std::to_string(b);
  }
}

double FuzzCount(const std::string& path, const char* sql) {
  auto db = importers::SqliteDb::OpenReadOnly(path);
  FUZZ_CHECK(db.ok());
  auto q = (*db)->Prepare(sql);
  if (!q.ok()) return -1;  // the table is not there
  auto row = q->Step();
  FUZZ_CHECK(row.ok() && *row);
  return q->Real(0);
}

double FuzzTotal(const cct::Tree& t, const char* metric) {
  const cct::MetricId m = t.metrics().Find(metric);
  if (m == cct::kNoMetric) return 0;
  cct::NodeValues v(t);
  return v.Total(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path = fuzz::ScratchDir() + "/in.sqlite";
  if (data[0] == 0xff) {
    fuzz::WriteScratch("in.sqlite", fuzz::Bytes(data + 1, size - 1));
  } else {
    std::string sql;
    const size_t tables = sizeof(kSchema) / sizeof(kSchema[0]);
    for (size_t i = 0; i < tables; ++i)  // bit i of the mask drops table i; StringIds (0) always stays
      if (i == 0 || i >= 8 || !(data[0] >> i & 1)) sql += std::string(kSchema[i]) + ";\n";
    for (size_t at = 1; at + 9 <= size; at += 9) {
      const FuzzTable& t = kTables[data[at] % (sizeof(kTables) / sizeof(kTables[0]))];
      std::string cols, vals;
      for (int c = 0; c < 4 && t.columns[c]; ++c) {
        cols += std::string(c ? ", " : "") + t.columns[c];
        vals += std::string(c ? ", " : "") + FuzzValue(data[at + 1 + 2 * c], data[at + 2 + 2 * c]);
      }
      // OR IGNORE: a row whose table the mask dropped, or a duplicate id.
      sql += "INSERT OR IGNORE INTO " + std::string(t.name) + " (" + cols + ") VALUES (" + vals + ");\n";
    }
    if (!importers::SqliteDb::CreateFromScript(path, sql).ok()) return 0;  // a dropped table's insert
  }
  importers::ImportOptions strict;
  auto r = importers::ImportNsys(path, strict);
  importers::ImportOptions lenient;
  lenient.skip_bad_lines = true;
  auto l = importers::ImportNsys(path, lenient);
  if (r.ok()) {
    fuzz::CheckStoreRoundTrip(r->tree);
    FUZZ_CHECK(r->skipped == 0);
    FUZZ_CHECK(l.ok() && l->skipped == 0 && l->tree.size() == r->tree.size() && l->records == r->records);
    if (data[0] != 0xff) {
      // Every row counted once, wherever it was placed.
      const double kernels = FuzzCount(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
      if (kernels >= 0) FUZZ_CHECK(FuzzTotal(r->tree, "gker:count") == kernels);
      const double copies = FuzzCount(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY");
      if (copies >= 0) FUZZ_CHECK(FuzzTotal(r->tree, "gxcopy:count") == copies);
      const double samples = FuzzCount(path, "SELECT COUNT(*) FROM COMPOSITE_EVENTS");
      if (samples >= 0) FUZZ_CHECK(FuzzTotal(r->tree, "samples") == samples);
    }
  } else {
    FUZZ_CHECK(!r.status().message().empty());
    FUZZ_CHECK(r.status().message().find('\n') == std::string::npos);
    // A row's content (a bad span, a dangling string) is what
    // --skip-bad-lines skips; the file's structure is not (nor is a damaged
    // file, whose SQLite message may say anything).
    const std::string& m = r.status().message();
    if (data[0] != 0xff && m.find(" row ") != std::string::npos && m.find(": SQLite: ") == std::string::npos)
      FUZZ_CHECK(l.ok() && l->skipped > 0);
  }
  if (l.ok()) fuzz::CheckStoreRoundTrip(l->tree);
  return 0;
}
