// cct-query: reports and exports from a cctdb database.
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "cctdb_config.h"
#include "query/exchange.h"
#include "query/flame.h"
#include "query/progress.h"
#include "query/reports.h"
#include "store/fault_guard.h"
#include "store/selector.h"
#include "tools/cli.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kTool = "cct-query";

constexpr const char* kUsage = R"(usage: cct-query [-d DB] COMMAND [ARGS] [OPTIONS]

Commands:
  runs [SELECTOR]          list the runs in the database
  show RUN                 a run's metadata, diagnostics and metric totals
  metrics RUN              the metrics a run has
  tree RUN                 the calling-context tree, top-down
  top RUN                  a flat profile by function, kernel, nvtx, line or module
  callers RUN REGEX        bottom-up: who reaches the frames matching REGEX
  iterations RUN           the run's iterations (--iteration): start, duration, metric
  export RUN --to FORMAT   json, folded, hatchet, hatchet-json, pprof or csv, to stdout or -o FILE
  flame RUN -o FILE.svg    an interactive flame graph (SVG)
  kernels RUN|SELECTOR     GPU kernels: time, launches, Nsight Compute metrics, bottleneck;
                           for a group, kernel popularity across its runs
  table SELECTOR --by tag:KEY   per group of runs: mean ± CI (Student t) and n, for papers

RUN selects a run: an id, latest, latest~N, a run name, tag:KEY=VALUE (a group:
reports show the mean per run), PATH:RUN for another database; RUN@iter=K (one
iteration, from 1), RUN@iter=K..J (their sum), RUN@iter=median (by -m).

Options)";

// Which options each command accepts (besides -d, --format, --ascii, --width).
const std::map<std::string, std::set<std::string>> kCommandOptions = {
    {"runs", {}},
    {"show", {"merge-threads"}},
    {"metrics", {"merge-threads"}},
    {"tree", {"metric", "depth", "min", "focus", "lines", "merge-threads"}},
    {"top", {"metric", "n", "by", "inclusive", "exclusive", "merge-threads"}},
    {"callers", {"metric", "depth", "min", "merge-threads", "lines"}},
    {"export", {"metric", "to", "output", "merge-threads"}},
    {"flame", {"metric", "output", "merge-threads", "lines", "title", "min-width", "image-width"}},
    {"kernels", {"metric", "n"}},
    {"iterations", {"metric"}},
    {"table", {"metric", "by", "nodes", "confidence"}},
};
const std::set<std::string> kCommonOptions = {"db", "format", "ascii", "width", "args", "command"};

// Writes through `write` to -o FILE (via FILE.tmp, renamed when complete, so
// a failed export leaves no half file) or to stdout.
cct::Status WriteOutput(const po::variables_map& vm, const std::function<cct::Status(std::ostream&)>& write) {
  if (!vm.count("output")) return write(std::cout);
  const std::string out_path = vm["output"].as<std::string>();
  const std::string tmp = out_path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return cct::IoError("cannot write " + out_path);
  cct::Status status = write(out);
  out.close();
  if (status.ok() && (!out || std::rename(tmp.c_str(), out_path.c_str()) != 0))
    status = cct::IoError("cannot write " + out_path);
  if (!status.ok()) std::remove(tmp.c_str());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  cli::TuneAllocator(argc, argv);
  std::ios::sync_with_stdio(false);
  po::options_description visible(kUsage);
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("db,d", po::value<std::string>(), "database file (default: $CCT_DB, else ./cct.db)")
      ("metric,m", po::value<std::vector<std::string>>(), "metric to report (repeatable; default: the run's first)")
      ("depth", po::value<int>(), "tree/callers: show N levels")
      ("min", po::value<double>(), "hide nodes below PCT percent of the total")
      ("focus", po::value<std::string>(), "tree: subtrees rooted at frames matching REGEX")
      ("n,n", po::value<size_t>(), "top: show N rows (default 20; 0 for all)")
      ("by", po::value<std::string>(), "top: function|kernel|nvtx|line|module (default function); "
                                       "table: tag:KEY, the tag whose values make the groups")
      ("nodes", po::value<std::string>(), "table: values of the frames matching REGEX instead of run totals")
      ("confidence", po::value<double>(), "table: confidence level of the intervals (default 0.95)")
      ("title", po::value<std::string>(), "flame: the graph's title")
      ("min-width", po::value<double>(), "flame: hide frames narrower than PX pixels (default 0.1)")
      ("image-width", po::value<size_t>(), "flame: image width in pixels (default 1200)")
      ("inclusive", "top: order by inclusive value (default)")
      ("exclusive", "top: order by exclusive value")
      ("lines", "keep source-line nodes (folded into their functions otherwise)")
      ("merge-threads", "merge the threads' subtrees into one")
      ("to", po::value<std::string>(), "export: json|folded|hatchet|hatchet-json|pprof|csv")
      ("output,o", po::value<std::string>(), "export, flame: write to FILE instead of stdout")
      ("format", po::value<std::string>(), "text|json|csv (default text); table also markdown|latex")
      ("ascii", "draw trees and units with ASCII only")
      ("width", po::value<size_t>(), "fit text to N columns (default: the terminal's, else 80; 0: no limit)");
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>())("args", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("command", 1).add("args", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    cli::Fail(kTool, std::string(e.what()) + " (see cct-query --help)");
  }
  if (vm.count("help")) {
    std::cout << visible << '\n';
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "cct-query " << CCTDB_VERSION << '\n';
    return 0;
  }
  if (!vm.count("command")) cli::Fail(kTool, "no command given (see cct-query --help)");
  const std::string command = vm["command"].as<std::string>();
  const auto allowed = kCommandOptions.find(command);
  if (allowed == kCommandOptions.end()) cli::Fail(kTool, "unknown command '" + command + "' (see cct-query --help)");
  for (const auto& [name, value] : vm) {
    if (value.defaulted() || kCommonOptions.count(name) || allowed->second.count(name)) continue;
    cli::Fail(kTool, "option --" + name + " does not apply to '" + command + "'");
  }
  const std::vector<std::string> args =
      vm.count("args") ? vm["args"].as<std::vector<std::string>>() : std::vector<std::string>();
  auto want_args = [&](size_t n, const char* what) {
    if (args.size() != n) cli::Fail(kTool, command + " expects " + what + " (see cct-query --help)");
  };

  query::ReportOptions opt;
  if (vm.count("metric")) opt.metrics = vm["metric"].as<std::vector<std::string>>();
  if (vm.count("depth")) {
    opt.depth = vm["depth"].as<int>();
    if (opt.depth < 0) cli::Fail(kTool, "--depth must be 0 or more");
  }
  if (vm.count("min")) {
    opt.min_pct = vm["min"].as<double>();
    if (!(opt.min_pct >= 0 && opt.min_pct <= 100)) cli::Fail(kTool, "--min must be a percentage from 0 to 100");
  }
  if (vm.count("focus")) opt.focus = vm["focus"].as<std::string>();
  if (vm.count("n")) opt.limit = vm["n"].as<size_t>();
  if (vm.count("inclusive") && vm.count("exclusive")) cli::Fail(kTool, "--inclusive and --exclusive exclude each other");
  opt.sort_exclusive = vm.count("exclusive") > 0;
  if (vm.count("by") && command != "table") {
    auto by = query::ParseGroupBy(vm["by"].as<std::string>());
    if (!by.ok()) cli::Fail(kTool, by.status());
    opt.by = *by;
  }
  if (vm.count("format") && command != "table") {
    auto f = query::ParseOutputFormat(vm["format"].as<std::string>());
    if (!f.ok()) cli::Fail(kTool, f.status());
    opt.format = *f;
  }
  opt.ascii = vm.count("ascii") > 0;
  if (vm.count("width")) opt.width = vm["width"].as<size_t>();
  else if (const size_t tw = cli::TerminalWidth(); tw > 0) opt.width = tw;

  const std::string db_path = store::DefaultDatabasePath(vm.count("db") ? vm["db"].as<std::string>() : "");
  store::FaultGuard guard(kTool, db_path);

  query::LoadOptions load;
  // Exports and run summaries see all the data; reports fold source lines
  // into functions unless asked (--lines, top --by line).
  load.keep_lines = vm.count("lines") > 0 || command == "export" || command == "show" || command == "metrics" ||
                    (command == "top" && opt.by == query::GroupBy::kLine);
  load.merge_threads = vm.count("merge-threads") > 0;
  if (!opt.metrics.empty()) load.median_metric = opt.metrics.front();  // @iter=median

  cct::Status status;
  if (command == "runs") {
    if (args.size() > 1) cli::Fail(kTool, "runs takes at most one selector");
    std::vector<store::RunMeta> runs;
    std::string path = db_path;
    if (args.empty()) {
      auto db = store::Database::Open(db_path, store::Database::Mode::kRead);
      if (!db.ok()) cli::Fail(kTool, db.status());
      auto listed = (*db)->ListRuns();
      if (!listed.ok()) cli::Fail(kTool, listed.status());
      runs = std::move(listed).value();
    } else {
      auto sel = store::ParseSelector(args[0], db_path);
      if (!sel.ok()) cli::Fail(kTool, sel.status());
      path = sel->db_path;
      auto db = store::Database::Open(path, store::Database::Mode::kRead);
      if (!db.ok()) cli::Fail(kTool, db.status());
      auto selected = store::SelectRuns(**db, *sel);
      if (!selected.ok()) cli::Fail(kTool, selected.status());
      runs = std::move(selected).value();
    }
    status = query::WriteRunsReport(runs, path, opt, std::cout);
  } else if (command == "iterations") {
    want_args(1, "one RUN");
    status = query::WriteIterationsReport(args[0], db_path, opt, std::cout);
  } else if (command == "kernels") {
    want_args(1, "one RUN or SELECTOR");
    status = query::WriteKernelsReport(args[0], db_path, opt, std::cout);
  } else if (command == "table") {
    want_args(1, "one SELECTOR (the runs to tabulate)");
    query::TableOptions to;
    if (!vm.count("by")) cli::Fail(kTool, "table needs --by tag:KEY (the tag whose values make the groups)");
    to.by = vm["by"].as<std::string>();
    to.metrics = opt.metrics;
    if (vm.count("nodes")) to.nodes = vm["nodes"].as<std::string>();
    if (vm.count("confidence")) to.confidence = vm["confidence"].as<double>();
    if (vm.count("format")) {
      auto f = query::ParseTableFormat(vm["format"].as<std::string>());
      if (!f.ok()) cli::Fail(kTool, f.status());
      to.format = *f;
    }
    to.ascii = opt.ascii;
    status = query::WriteTableReport(args[0], db_path, to, std::cout);
  } else {
    if (command == "callers") want_args(2, "RUN and REGEX");
    else want_args(1, "one RUN");
    auto profile = query::LoadProfile(args[0], db_path, load);
    if (!profile.ok()) cli::Fail(kTool, profile.status());
    if (command == "show") status = query::WriteShowReport(*profile, opt, std::cout);
    else if (command == "metrics") status = query::WriteMetricsReport(*profile, opt, std::cout);
    else if (command == "tree") status = query::WriteTreeReport(*profile, opt, std::cout);
    else if (command == "top") status = query::WriteTopReport(*profile, opt, std::cout);
    else if (command == "callers") status = query::WriteCallersReport(*profile, args[1], opt, std::cout);
    else if (command == "export") {
      if (!vm.count("to")) cli::Fail(kTool, "export needs --to json|folded|hatchet|hatchet-json|pprof|csv");
      if (vm.count("format")) cli::Fail(kTool, "export takes --to, not --format");
      auto fmt = query::ParseExportFormat(vm["to"].as<std::string>());
      if (!fmt.ok()) cli::Fail(kTool, fmt.status());
      query::ExportOptions eo;
      eo.metrics = opt.metrics;
      query::Progress progress = query::Progress::ForStderr("exporting " + vm["to"].as<std::string>());
      eo.progress = &progress;
      status = WriteOutput(vm, [&](std::ostream& out) { return query::WriteExport(*profile, *fmt, eo, out); });
    } else if (command == "flame") {
      query::FlameOptions fo;
      if (opt.metrics.size() > 1) {
        fo.metric = opt.metrics.front();
        fo.details.assign(opt.metrics.begin() + 1, opt.metrics.end());
      } else if (!opt.metrics.empty()) {
        fo.metric = opt.metrics.front();
      }
      if (vm.count("title")) fo.title = vm["title"].as<std::string>();
      if (vm.count("min-width")) {
        fo.min_width_px = vm["min-width"].as<double>();
        if (!(fo.min_width_px >= 0)) cli::Fail(kTool, "--min-width must be 0 or more pixels");
      }
      if (vm.count("image-width")) fo.width = vm["image-width"].as<size_t>();
      fo.subtitle = profile->label;
      query::Progress progress = query::Progress::ForStderr("drawing flame graph");
      fo.progress = &progress;
      status = WriteOutput(vm, [&](std::ostream& out) {
        cct::Status s = query::WriteFlameGraph(profile->tree, fo, out);
        progress.Finish();
        return s;
      });
    }
  }
  if (!status.ok()) cli::Fail(kTool, status);
  std::cout.flush();
  if (!std::cout) cli::Fail(kTool, "cannot write the output");
  return 0;
}
