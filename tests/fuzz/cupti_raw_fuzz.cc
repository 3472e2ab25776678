// Fuzz target: the raw GPU dump reader (collector/gpu/gpu_raw_dump.h, what
// `cct-import --from cupti-raw` replays) on arbitrary bytes: the framing
// (RawDumpReader: header, CRCs, torn tails) and every record's payload
// parser; where the toolkit has CUPTI, also the whole replay
// (ReplayRawDump: CUPTI's activity records decoded and attributed), whose
// tree must round-trip through the store.
// The records are CRC-checked, so the fuzzer gets past the framing only
// through the seeds; payloads are also fed to the parsers directly (the
// input's first byte picks the record type) to reach them without a CRC.
#include "cctdb_config.h"
#include "collector/gpu/gpu_raw_dump.h"
#include "store/iteration_codec.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void ParsePayload(uint8_t type, std::string_view payload, uint32_t version, collector::RawNameTable& names) {
  switch (static_cast<collector::RawRecordType>(type)) {
    case collector::RawRecordType::kHeader: {
      auto h = collector::ParseRawHeader(payload);
      if (h.ok()) FUZZ_CHECK(h->meta_json.data() >= payload.data() &&
                             h->meta_json.data() + h->meta_json.size() <= payload.data() + payload.size());
      break;
    }
    case collector::RawRecordType::kCorrelations: {
      std::vector<collector::RawCorrelation> c;
      (void)collector::ParseRawCorrelations(payload, version, &c);
      break;
    }
    case collector::RawRecordType::kBatch: {
      collector::RawBatch b;
      const size_t before = names.size();
      if (collector::ParseRawBatch(payload, names, &b).ok()) {
        FUZZ_CHECK(names.size() >= before);
        for (uint32_t id : b.kernel_names) FUZZ_CHECK(id <= names.size());
      }
      break;
    }
    case collector::RawRecordType::kPcSamples: {
      std::vector<collector::GpuPcSample> s;
      (void)collector::ParseRawPcSamples(payload, &s);
      break;
    }
    case collector::RawRecordType::kSnapshot: {
      collector::RawSnapshot snap;
      if (!collector::ParseRawSnapshot(payload, &snap).ok()) break;
      auto tree = store::DecodeTree(snap.sections);
      if (!tree.ok()) break;
      fuzz::CheckStoreRoundTrip(*tree);
      for (const store::Section& s : snap.sections)
        if (s.kind == store::SectionKind::kIterations)
          (void)store::DecodeIterations(s.payload, tree->size(), tree->metrics());
      break;
    }
    default: break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = fuzz::Bytes(data, size);
  collector::RawNameTable names;
  if (size > 0) {
    ParsePayload(data[0] % 6, bytes.substr(1), collector::kRawDumpFormat, names);
    names.clear();
  }
  const std::string path = fuzz::WriteScratch("in.cctraw", bytes);
  auto reader = collector::RawDumpReader::Open(path);
  if (!reader.ok()) {
    FUZZ_CHECK(!reader.status().message().empty());
    return 0;
  }
  collector::RawRecord rec;
  uint64_t last = 0;
  for (int i = 0; i < 100000; ++i) {
    auto more = (*reader)->Next(&rec);
    if (!more.ok() || !*more) break;
    FUZZ_CHECK(rec.offset >= last && rec.offset < size);  // records move forward through the file
    last = rec.offset + 1;
    ParsePayload(rec.type, rec.payload, (*reader)->format_version(), names);
  }
#if CCTDB_HAVE_CUPTI
  auto replay = collector::ReplayRawDump(path);
  if (replay.ok()) fuzz::CheckStoreRoundTrip(replay->tree);
#endif
  return 0;
}
