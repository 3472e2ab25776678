// cct-import: turns profiles written by other tools into runs.
#include <time.h>

#include <boost/program_options.hpp>
#include <iostream>
#include <map>

#include "cctdb_config.h"
#if CCTDB_HAVE_CUPTI
#include "collector/gpu/gpu_raw_dump.h"
#endif
#include "query/exchange.h"
#include "query/format.h"
#include "store/database.h"
#include "store/fault_guard.h"
#include "store/selector.h"
#include "tools/cli.h"

namespace po = boost::program_options;

namespace {
constexpr const char* kTool = "cct-import";
constexpr const char* kUsage = R"(usage: cct-import [-d DB] --from FORMAT FILE [OPTIONS]

Formats:
  folded    "frame;frame;frame value" lines (FlameGraph stackcollapse, inferno);
            each value is the exclusive value of its stack
  hatchet   Hatchet JSON: the literal format or GraphFrame.to_json's graph+dataframe
  hpctoolkit  an HPCToolkit database directory (experiment.xml + *.metric-db); one
            run, ranks and threads as thread nodes, HPCToolkit's metric names
  ncu-csv   Nsight Compute `ncu --csv --page raw` output: attaches the kernels'
            metrics to the kernel nodes of an existing run (--run RUN)
  cupti-raw a raw GPU dump (`cct-record --gpu-raw DIR`, one file per process):
            replays it into the run the collector stored (its metadata, tree
            and GPU metrics); a dump cut short by a crash is replayed up to
            its last whole record, with a warning

Options)";

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// --from cupti-raw: replays the dump and stores the result as a new run.
int ImportCuptiRaw(const po::variables_map& vm, const std::string& file,
                   const std::map<std::string, std::string>& tags) {
  for (const char* o : {"metric", "unit", "skip-bad-lines", "run"})
    if (vm.count(o)) cli::Fail(kTool, std::string("--") + o + " does not apply to --from cupti-raw");
#if CCTDB_HAVE_CUPTI
  auto replay = collector::ReplayRawDump(file);
  if (!replay.ok()) cli::Fail(kTool, replay.status());
  const auto json = nlohmann::json::parse(replay->meta_json, nullptr, /*allow_exceptions=*/false);
  auto parsed = store::RunMeta::FromJson(json);
  if (!parsed.ok()) cli::Fail(kTool, file + ": the dump's run metadata: " + parsed.status().message());
  store::RunMeta meta = std::move(*parsed);
  meta.id = 0;
  meta.parent_run = 0;  // a run id of the recording's database, not this one's
  meta.source = "cupti-raw-replay";
  if (vm.count("name")) {
    meta.name = vm["name"].as<std::string>();
  } else if (meta.name.empty()) {
    meta.name = std::string(query::BaseName(file));
  }
  for (const auto& [k, v] : tags) meta.tags[k] = v;
  // A snapshot is taken while the run records; the imported run is over.
  if (meta.state == store::RunState::kRecording)
    meta.state = replay->truncated ? store::RunState::kCrashed : store::RunState::kComplete;

  const std::string db_path = store::DefaultDatabasePath(vm.count("db") ? vm["db"].as<std::string>() : "");
  store::FaultGuard guard(kTool, db_path);
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  if (!db.ok()) cli::Fail(kTool, db.status());
  cct::Status s = (*db)->CreateRun(meta, &replay->tree,
                                   replay->iterations.iterations.empty() ? nullptr : &replay->iterations);
  if (!s.ok()) cli::Fail(kTool, s);
  if (replay->recorded_cupti_api != 0 && replay->recorded_cupti_api != replay->decoder_cupti_api)
    std::cerr << kTool << ": warning: " << file << " was recorded with CUPTI API version " << replay->recorded_cupti_api
              << "; this cct-import decodes the records of version " << replay->decoder_cupti_api
              << " (records whose layout changed show in gpu_raw_unparsed_bytes and gpu_skipped_records)\n";
  if (replay->truncated)
    std::cerr << kTool << ": warning: " << file
              << " ends inside a record (the recording process stopped while writing it); replayed the records "
                 "before it\n";
  std::cout << "imported " << file << " as run " << meta.id << " '" << meta.name << "' into " << db_path << ": "
            << replay->tree.size() << " nodes, " << replay->records << " records in " << replay->batches
            << " batches\n";
  return 0;
#else
  (void)file;
  (void)tags;
  cli::Fail(kTool, "--from cupti-raw: this cct-import was built without CUPTI (no CUDA toolkit with CUPTI was found "
                   "at build time); rebuild with one to replay raw GPU dumps");
#endif
}

// --from ncu-csv: reads the run's tree, attaches the metrics and writes the
// tree back as the run's new version (one write transaction).
int AttachNcu(const po::variables_map& vm, const std::string& file) {
  if (!vm.count("run")) cli::Fail(kTool, "--from ncu-csv needs --run RUN (the run whose kernels ncu profiled)");
  for (const char* o : {"name", "tag", "unit", "skip-bad-lines"})
    if (vm.count(o)) cli::Fail(kTool, std::string("--") + o + " does not apply to --from ncu-csv");
  const std::string db_path = store::DefaultDatabasePath(vm.count("db") ? vm["db"].as<std::string>() : "");
  store::FaultGuard guard(kTool, db_path);
  auto sel = store::ParseSelector(vm["run"].as<std::string>(), db_path);
  if (!sel.ok()) cli::Fail(kTool, sel.status());
  if (sel->is_group() || sel->iteration) cli::Fail(kTool, "--run must name one run, not a group or an iteration");
  auto db = store::Database::Open(sel->db_path, store::Database::Mode::kWrite);
  if (!db.ok()) cli::Fail(kTool, db.status());
  auto runs = store::SelectRuns(**db, *sel);
  if (!runs.ok()) cli::Fail(kTool, runs.status());
  store::RunMeta meta = runs->back();
  if (store::EffectiveState(meta) == store::RunState::kRecording)
    cli::Fail(kTool, "run " + std::to_string(meta.id) + " is still recording; attach ncu metrics when it is complete");
  auto tree = (*db)->ReadTree(meta.id);
  if (!tree.ok()) cli::Fail(kTool, tree.status());
  query::NcuAttachOptions options;
  if (vm.count("metric")) options.metric_regex = vm["metric"].as<std::string>();
  auto attached = query::AttachNcuMetrics(file, *tree, options);
  if (!attached.ok()) cli::Fail(kTool, attached.status());
  nlohmann::json record = {{"file", file},
                           {"launches", attached->launches},
                           {"matched", attached->matched},
                           {"kernel_nodes", attached->kernel_nodes},
                           {"unmatched", attached->unmatched},
                           {"metrics", attached->metrics.size()}};
  meta.extra["ncu"] = record;
  meta.diagnostics["ncu_unmatched_launches"] = static_cast<int64_t>(attached->launches - attached->matched);
  // The new tree has the same nodes, so the run's iterations (whose node ids
  // refer to them) are written back with it rather than dropped.
  auto iterations = (*db)->ReadIterations(meta.id);
  if (!iterations.ok()) cli::Fail(kTool, iterations.status().WithContext("keeping run " + std::to_string(meta.id) + "'s iterations"));
  cct::Status s = (*db)->UpdateRun(meta, &*tree, *iterations ? &**iterations : nullptr);
  if (!s.ok()) cli::Fail(kTool, s);
  std::cout << "attached " << attached->metrics.size() << " ncu metrics from " << file << " to run " << meta.id
            << (meta.name.empty() ? "" : " '" + meta.name + "'") << ": " << attached->matched << " of "
            << attached->launches << " launches matched " << attached->kernel_nodes << " kernel node(s)\n";
  if (!attached->unmatched.empty()) {
    std::cout << "unmatched kernels (" << attached->unmatched.size() << "):\n";
    for (const std::string& k : attached->unmatched) std::cout << "  " << k << '\n';
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  cli::TuneAllocator(argc, argv);
  po::options_description visible(kUsage);
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("db,d", po::value<std::string>(), "database file (default: $CCT_DB, else ./cct.db)")
      ("from", po::value<std::string>(), "input format: folded, hatchet, hpctoolkit, ncu-csv or cupti-raw")
      ("run", po::value<std::string>(), "ncu-csv: the run whose kernel nodes get the metrics (a RUN selector)")
      ("name", po::value<std::string>(), "run name (default: the file's name; cupti-raw: the recorded run's name, "
                                         "else the file's)")
      ("tag", po::value<std::vector<std::string>>(), "KEY=VALUE tag (repeatable)")
      ("metric", po::value<std::string>(), "folded: the metric the numbers measure (default samples); "
                                           "hatchet, hpctoolkit: the metric --unit applies to; "
                                           "ncu-csv: a regex of the ncu metrics to attach")
      ("unit", po::value<std::string>(), "ns|us|ms|s|bytes|count|percent|1 (times are stored in ns)")
      ("skip-bad-lines", "import what is well-formed and report how much was skipped");
  po::options_description hidden;
  hidden.add_options()("file", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("file", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    cli::Fail(kTool, std::string(e.what()) + " (see cct-import --help)");
  }
  if (vm.count("help")) {
    std::cout << visible << '\n';
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "cct-import " << CCTDB_VERSION << '\n';
    return 0;
  }
  if (!vm.count("from")) cli::Fail(kTool, "--from FORMAT is required (folded, hatchet, hpctoolkit, ncu-csv or cupti-raw)");
  const std::vector<std::string> files =
      vm.count("file") ? vm["file"].as<std::vector<std::string>>() : std::vector<std::string>();
  if (files.size() != 1) cli::Fail(kTool, "expected one input FILE (see cct-import --help)");
  const std::string& file = files[0];
  const std::string from = vm["from"].as<std::string>();

  query::ImportOptions io;
  if (vm.count("metric")) io.metric = vm["metric"].as<std::string>();
  if (vm.count("unit")) io.unit = vm["unit"].as<std::string>();
  io.skip_bad_lines = vm.count("skip-bad-lines") > 0;
  auto tags = cli::ParseTags(vm.count("tag") ? vm["tag"].as<std::vector<std::string>>() : std::vector<std::string>());
  if (!tags.ok()) cli::Fail(kTool, tags.status());

  if (from == "ncu-csv") return AttachNcu(vm, file);
  if (from == "cupti-raw") return ImportCuptiRaw(vm, file, *tags);
  if (vm.count("run")) cli::Fail(kTool, "--run applies to --from ncu-csv only");

  cct::Result<query::ImportResult> imported = cct::InvalidArgument("");
  if (from == "folded") imported = query::ImportFolded(file, io);
  else if (from == "hatchet") imported = query::ImportHatchet(file, io);
  else if (from == "hpctoolkit") imported = query::ImportHpctoolkit(file, io);
  else cli::Fail(kTool, "unknown format '" + from + "' (expected folded, hatchet, hpctoolkit, ncu-csv or cupti-raw)");
  if (!imported.ok()) cli::Fail(kTool, imported.status());

  store::RunMeta meta;
  std::string base = file;
  while (base.size() > 1 && base.back() == '/') base.pop_back();  // a database directory given as DIR/
  meta.name = vm.count("name") ? vm["name"].as<std::string>() : std::string(query::BaseName(base));
  meta.source = "import:" + from;
  meta.state = store::RunState::kComplete;
  meta.start_time_ns = NowNs();
  meta.command = {file};
  meta.tags = *tags;
  meta.host = store::HostName();
  meta.collector_version = CCTDB_VERSION;
  if (imported->skipped > 0) meta.diagnostics["import_skipped_records"] = static_cast<int64_t>(imported->skipped);

  const std::string db_path = store::DefaultDatabasePath(vm.count("db") ? vm["db"].as<std::string>() : "");
  store::FaultGuard guard(kTool, db_path);
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  if (!db.ok()) cli::Fail(kTool, db.status());
  cct::Status s = (*db)->CreateRun(meta, &imported->tree);
  if (!s.ok()) cli::Fail(kTool, s);

  if (imported->skipped > 0)
    std::cerr << kTool << ": skipped " << imported->skipped << " malformed record(s); first: " << imported->first_skip
              << '\n';
  std::cout << "imported " << file << " as run " << meta.id << " '" << meta.name << "' into " << db_path << ": "
            << imported->tree.size() << " nodes, " << imported->records << " records\n";
  return 0;
}
