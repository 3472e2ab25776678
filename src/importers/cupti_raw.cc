// --from cupti-raw: a raw GPU dump (`cct-record --gpu-raw DIR`, one file per
// process) replayed by the collector's CUPTI decoder into the run the
// collector stored (its metadata, tree and GPU metrics). Built only where
// the toolkit has CUPTI (the decoder reads CUPTI's record structs); the
// registry says so elsewhere.
#include <nlohmann/json.hpp>

#include "cct/tree_ops.h"
#include "collector/gpu/gpu_raw_dump.h"
#include "importers/importer.h"
#include "store/database.h"
#include "store/fault_guard.h"

namespace importers {

cct::Result<ImportReport> ImportCuptiRawRun(const ImportRequest& request) {
  CCT_RETURN_IF_ERROR(RejectOptions(request, {"metric", "unit", "skip-bad-lines", "run"}, "cupti-raw"));
  const std::string& file = request.file;
  CCT_ASSIGN_OR_RETURN(collector::RawReplay replay, collector::ReplayRawDump(file));
  const auto json = nlohmann::json::parse(replay.meta_json, nullptr, /*allow_exceptions=*/false);
  auto parsed = store::RunMeta::FromJson(json);
  if (!parsed.ok()) return cct::InvalidArgument(file + ": the dump's run metadata: " + parsed.status().message());
  store::RunMeta meta = std::move(*parsed);
  meta.id = 0;
  meta.parent_run = 0;  // a run id of the recording's database, not this one's
  meta.source = "cupti-raw-replay";
  if (request.name) {
    meta.name = *request.name;
  } else if (meta.name.empty()) {
    meta.name = std::string(cct::BaseName(file));
  }
  for (const auto& [k, v] : request.tags) meta.tags[k] = v;
  // A snapshot is taken while the run records; the imported run is over.
  if (meta.state == store::RunState::kRecording)
    meta.state = replay.truncated ? store::RunState::kCrashed : store::RunState::kComplete;

  store::FaultGuard guard(request.tool, request.db_path);
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(request.db_path, store::Database::Mode::kWrite, request.db_mode));
  CCT_RETURN_IF_ERROR(
      db->CreateRun(meta, &replay.tree, replay.iterations.iterations.empty() ? nullptr : &replay.iterations));
  ImportReport report;
  if (replay.recorded_cupti_api != 0 && replay.recorded_cupti_api != replay.decoder_cupti_api)
    report.notes.push_back("warning: " + file + " was recorded with CUPTI API version " +
                           std::to_string(replay.recorded_cupti_api) + "; this cct-import decodes the records of version " +
                           std::to_string(replay.decoder_cupti_api) +
                           " (records whose layout changed show in gpu_raw_unparsed_bytes and gpu_skipped_records)");
  if (replay.truncated)
    report.notes.push_back("warning: " + file +
                           " ends inside a record (the recording process stopped while writing it); replayed the "
                           "records before it");
  report.summary = "imported " + file + " as run " + std::to_string(meta.id) + " '" + meta.name + "' into " +
                   request.db_path + ": " + std::to_string(replay.tree.size()) + " nodes, " +
                   std::to_string(replay.records) + " records in " + std::to_string(replay.batches) + " batches\n";
  return report;
}

}  // namespace importers
