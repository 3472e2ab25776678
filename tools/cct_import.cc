// cct-import: turns profiles written by other tools into runs.
#include <boost/program_options.hpp>
#include <iostream>
#include <utility>
#include <vector>

#include "aggregate/merge.h"
#include "importers/registry.h"
#include "store/database.h"
#include "tools/cli.h"

namespace po = boost::program_options;

namespace {
constexpr const char* kTool = "cct-import";

// `--from cctdb`: other cctdb databases, merged as cct-merge merges them (an
// importer's flow makes one run from one file; this copies every run of
// each file, with its links, iterations and trace).
constexpr const char* kCctdbFormat = "cctdb";
constexpr const char* kCctdbHelp =
    "cctdb databases (one or more FILE.db): every run with its metadata,\n"
    "tree, iterations and trace, as `cct-merge DB FILE.db...` copies them";

// The usage text: the formats come from the importers' registry, then cctdb.
std::string Usage() {
  std::vector<std::pair<std::string, std::string>> formats;
  for (const importers::ImporterInfo& i : importers::Importers()) formats.emplace_back(i.name, i.help);
  formats.emplace_back(kCctdbFormat, kCctdbHelp);
  std::string usage = "usage: cct-import [-d DB] --from FORMAT FILE [OPTIONS]\n\nFormats:\n";
  for (auto& [name, help] : formats) {
    // Continuation lines are indented like the first line's text.
    for (size_t nl = help.find('\n'); nl != std::string::npos; nl = help.find('\n', nl + 1))
      help.insert(nl + 1, 12, ' ');
    usage += "  " + name + (name.size() < 10 ? std::string(10 - name.size(), ' ') : std::string(2, ' ')) + help + "\n";
  }
  usage += "\nOptions";
  return usage;
}
}  // namespace

int main(int argc, char** argv) {
  cli::TuneAllocator(argc, argv);
  cli::ExitOnOutOfMemory(kTool);
  po::options_description visible(Usage());
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("db,d", po::value<std::string>(), "database file (default: $CCT_DB, else ./cct.db)")
      ("from", po::value<std::string>(),
       ("input format: " + importers::ImporterNames() + "; " + kCctdbFormat + " merges databases").c_str())
      ("run", po::value<std::string>(), "ncu-csv: the run whose kernel nodes get the metrics (a RUN selector)")
      ("name", po::value<std::string>(), "run name (default: the file's name; cupti-raw: the recorded run's name, "
                                         "else the file's)")
      ("tag", po::value<std::vector<std::string>>(), "KEY=VALUE tag (repeatable)")
      ("db-mode", po::value<std::string>(), "permissions of a database this creates, in octal (default 600: "
                                            "profiles hold command lines, paths and host names)")
      ("metric", po::value<std::string>(), "folded: the metric the numbers measure (default samples); "
                                           "hatchet, hpctoolkit: the metric --unit applies to; "
                                           "ncu-csv: a regex of the ncu metrics to attach")
      ("unit", po::value<std::string>(), "ns|us|ms|s|bytes|count|percent|1 (times are stored in ns)")
      ("skip-bad-lines", "import what is well-formed and report how much was skipped");
  cli::AddTerminalOptions(visible, /*text=*/false);
  const po::variables_map vm = cli::ParseCommandLine(kTool, argc, argv, visible, "file");
  cli::ReadTerminalOptions(kTool, vm);  // nothing it prints is coloured; a bad --color is still an error
  if (!vm.count("from"))
    cli::Fail(kTool, "--from FORMAT is required (" + importers::ImporterNames() + "; " + kCctdbFormat + ")");
  const std::vector<std::string> files =
      vm.count("file") ? vm["file"].as<std::vector<std::string>>() : std::vector<std::string>();
  const std::string db_path = store::DefaultDatabasePath(vm.count("db") ? vm["db"].as<std::string>() : "");
  if (vm["from"].as<std::string>() == kCctdbFormat) {
    // The runs keep their own names, tags and metrics: options that would
    // change them are refused rather than ignored.
    for (const char* o : {"name", "tag", "metric", "unit", "skip-bad-lines", "run", "db-mode"})
      if (vm.count(o)) cli::Fail(kTool, std::string("--") + o + " does not apply to --from cctdb (runs are copied as they are)");
    if (files.empty()) cli::Fail(kTool, "expected at least one input FILE.db (see cct-import --help)");
    aggregate::MergeRequest merge;
    merge.out_db = db_path;
    merge.inputs = files;
    std::vector<aggregate::MergeInputReport> done;
    auto reports = aggregate::MergeDatabases(merge, &done);
    std::cout << aggregate::DescribeMerge(merge, reports.ok() ? *reports : done) << std::flush;
    if (!reports.ok()) cli::Fail(kTool, reports.status());
    return 0;
  }
  if (files.size() != 1) cli::Fail(kTool, "expected one input FILE (see cct-import --help)");

  importers::ImportRequest request;
  request.tool = kTool;
  request.file = files[0];
  for (const char* o : {"name", "tag", "metric", "unit", "skip-bad-lines", "run"})
    if (vm.count(o)) request.given.insert(o);
  if (vm.count("metric")) request.options.metric = vm["metric"].as<std::string>();
  if (vm.count("unit")) request.options.unit = vm["unit"].as<std::string>();
  request.options.skip_bad_lines = vm.count("skip-bad-lines") > 0;
  if (vm.count("name")) request.name = vm["name"].as<std::string>();
  if (vm.count("run")) request.run = vm["run"].as<std::string>();
  auto tags = cli::ParseTags(vm.count("tag") ? vm["tag"].as<std::vector<std::string>>() : std::vector<std::string>());
  if (!tags.ok()) cli::Fail(kTool, tags.status());
  request.tags = std::move(*tags);
  request.db_path = db_path;
  if (vm.count("db-mode")) {
    auto mode = cli::ParseFileMode(vm["db-mode"].as<std::string>());
    if (!mode.ok()) cli::Fail(kTool, mode.status());
    request.db_mode = *mode;
  }

  auto importer = importers::FindImporter(vm["from"].as<std::string>());
  if (!importer.ok()) cli::Fail(kTool, importer.status());
  auto report = (*importer)->flow(request);
  if (!report.ok()) cli::Fail(kTool, report.status());
  for (const std::string& note : report->notes) std::cerr << kTool << ": " << note << '\n';
  std::cout << report->summary;
  return 0;
}
