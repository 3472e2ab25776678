// cct-query: reports and exports from a cctdb database.
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <set>

#include "exporters/registry.h"
#include "output/progress.h"
#include "output/write_file.h"
#include "query/path_query.h"
#include "reports/registry.h"
#include "store/fault_guard.h"
#include "store/selector.h"
#include "tools/cli.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kTool = "cct-query";

// The usage text: the commands come from the report and exporter registries.
std::string Usage() {
  std::string usage = "usage: cct-query [-d DB] COMMAND [ARGS] [OPTIONS]\n\nCommands:\n";
  auto line = [&](const std::string& head, std::string_view description) {
    usage += "  " + head + std::string(head.size() < 23 ? 23 - head.size() : 1, ' ') + "  ";
    // Long descriptions wrap after "; ", aligned under the first line.
    const size_t semi = description.find("; ");
    if (semi == std::string_view::npos || head.size() + description.size() < 74) {
      usage += std::string(description) + "\n";
      return;
    }
    usage += std::string(description.substr(0, semi + 1)) + "\n" + std::string(27, ' ') +
             std::string(description.substr(semi + 2)) + "\n";
  };
  for (const reports::ReportInfo& r : reports::Reports()) {
    line(std::string(r.name) + " " + std::string(r.usage), r.description);
    // export (the exporters' command) is listed where the help always had it.
    if (r.name == "iterations")
      line("export RUN --to FORMAT",
           exporters::ExporterNames(", ", " or ") + ", to stdout or -o FILE; " +
               exporters::SeveralRunsExporterNames() + " take several RUNs");
  }
  usage += R"(
RUN selects a run: an id, latest, latest~N, a run name (latest and a name mean
the process cct-record started, not its children), RUN/all (every process of
that recording: reports show their total), tag:KEY=VALUE (a group: reports
show the mean per run), job:ID (the ranks of a parallel job, a group;
job:ID/r=N one rank, job:ID/all every process of every rank, latest-job the
newest job), PATH:RUN for another database; RUN@iter=K (one
iteration, from 1), RUN@iter=K..J (their sum), RUN@iter=median (by -m);
RUN@t=A..B a time window of the trace (--trace; seconds from its start, or
ms/us/ns; A.. and ..B open), RUN@range=NAME#K the K-th instance of NVTX
range NAME.

Options)";
  return usage;
}

// `export` is the exporters' command; the others are reports.
const std::set<std::string> kExportOptions = {"metric", "to",    "output",       "merge-threads",
                                              "per-thread", "lines", "unit-comment", "per-run"};
const std::set<std::string> kCommonOptions = {"db", "format", "color", "ascii", "width", "args", "command"};

// Runs `write` on -o FILE (whole or not at all) or on stdout.
cct::Status WriteOutput(const po::variables_map& vm, const std::function<cct::Status(std::ostream&)>& write) {
  if (!vm.count("output")) return write(std::cout);
  return output::WriteFileAtomically(vm["output"].as<std::string>(), write);
}

// export RUN [RUN...] --to FORMAT: the profiles through the exporter's
// registry entry; several runs (or --per-run) for the table formats only.
cct::Status Export(const po::variables_map& vm, const reports::ReportRequest& request) {
  if (request.args.empty()) cli::Fail(kTool, "export expects a RUN (see cct-query --help)");
  if (request.format) {
    auto f = reports::ParseOutputFormat(*request.format);  // a bad --format is reported as such, as for reports
    if (!f.ok()) return f.status();
  }
  if (!vm.count("to")) cli::Fail(kTool, "export needs --to " + exporters::ExporterNames("|", "|"));
  if (request.format) cli::Fail(kTool, "export takes --to, not --format");
  const std::string to = vm["to"].as<std::string>();
  CCT_ASSIGN_OR_RETURN(const exporters::ExporterInfo* exporter, exporters::FindExporter(to));
  exporters::ExportOptions eo;
  eo.metrics = request.options.metrics;
  eo.per_thread = vm.count("per-thread") > 0;
  eo.lines = request.lines;
  eo.unit_comment = vm.count("unit-comment") > 0;
  const bool per_run = vm.count("per-run") > 0;
  if (eo.per_thread && exporter->name != "hatchet-json")
    cli::Fail(kTool, "--per-thread applies to --to hatchet-json only");
  if ((eo.lines || eo.unit_comment) && exporter->name != "folded")
    cli::Fail(kTool, std::string(eo.lines ? "--lines" : "--unit-comment") +
                         " applies to --to folded only (the other formats always keep source lines)");
  if ((per_run || request.args.size() > 1) && !exporter->write_runs)  // the error naming the formats that can
    return exporters::WriteExport(std::vector<exporters::TableRun>(), *exporter, eo, std::cout);
  output::Progress progress = output::Progress::ForStderr("exporting " + to);
  eo.progress = &progress;
  if (!exporter->write_runs) {
    CCT_ASSIGN_OR_RETURN(query::Profile profile, reports::LoadRequestProfile(request, /*keep_lines=*/true));
    return WriteOutput(vm, [&](std::ostream& out) { return exporters::WriteExport(profile, *exporter, eo, out); });
  }
  // The table formats: each RUN's profile (with --per-run each run of a
  // group or invocation), all loaded before anything is written.
  std::vector<query::Profile> profiles;
  for (size_t i = 0; i < request.args.size(); ++i) {
    CCT_ASSIGN_OR_RETURN(query::Profile p, reports::LoadRequestProfile(request, /*keep_lines=*/true, i, per_run));
    profiles.push_back(std::move(p));
  }
  std::vector<exporters::TableRun> runs;
  for (const query::Profile& p : profiles) {
    std::vector<exporters::TableRun> more = exporters::TableRuns(p, per_run);
    runs.insert(runs.end(), more.begin(), more.end());
  }
  return WriteOutput(vm, [&](std::ostream& out) { return exporters::WriteExport(runs, *exporter, eo, out); });
}

// A path query that does not parse: its error line, then the query with a
// caret under the position, before any database is opened.
void CheckQuery(const std::string& text) {
  size_t pos = 0;
  auto parsed = query::PathQuery::Parse(text, &pos);
  if (parsed.ok()) return;
  std::cerr << kTool << ": " << parsed.status().message() << '\n' << query::CaretLines(text, pos);
  std::exit(cli::kExitError);
}

// The options. Derive's operations take values, may repeat and apply in
// command-line order; `derive` also gives --merge-threads the statistic it
// takes there (for the other commands it is a switch), so a derive command
// line is parsed a second time with these.
void AddVisibleOptions(po::options_description& visible, bool derive) {
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("db,d", po::value<std::string>(), "database file (default: $CCT_DB, else ./cct.db)")
      ("metric,m", po::value<std::vector<std::string>>(), "metric to report (repeatable; default: the run's first); "
                                                             "tree, top: METRIC@sum|mean|min|max|imbalance across "
                                                             "ranks or threads")
      ("depth", po::value<int>(), "tree/callers/stats: show N levels")
      ("min", po::value<double>(), "hide nodes below PCT percent of the total")
      ("focus", po::value<std::string>(), "tree, stats: subtrees rooted at frames matching REGEX")
      ("query", po::value<std::vector<std::string>>(), "tree, top: only the call paths matching QUERY "
                                                       "(docs/query.md); derive: keep only the nodes on them")
      ("n,n", po::value<size_t>(), "top, stats --by: show N rows (default 20; 0 for all)")
      ("by", po::value<std::string>(), "top, stats: function|kernel|nvtx|line|module (default function); "
                                       "table: tag:KEY, the tag whose values make the groups; timeline: "
                                       "function|range|node")
      ("nodes", po::value<std::string>(), "table: values of the frames matching REGEX instead of run totals")
      ("confidence", po::value<double>(), "table: confidence level of the intervals (default 0.95)")
      ("baseline", po::value<std::string>(), "table: add a speedup column per metric, the mean of group VALUE "
                                             "over each group's")
      ("title", po::value<std::string>(), "flame: the graph's title")
      ("min-width", po::value<double>(), "flame: hide frames narrower than PX pixels (default 0.1)")
      ("image-width", po::value<size_t>(), "flame: image width in pixels without a script (default 1200; a "
                                           "browser uses the window's)")
      ("orientation", po::value<std::string>(), "flame: auto|flame|icicle (default auto: an icicle, root on top, "
                                                "when more than 50 levels are drawn)")
      ("percentiles", po::value<std::string>(), "stats: the percentiles to show, P,P,... (default 10,25,75,90)")
      ("thread", po::value<std::string>(), "timeline: only the threads and streams matching REGEX")
      ("range", po::value<std::string>(), "iterations: the instances of NVTX range NAME in the trace (--trace)")
      ("from", po::value<std::string>(), "timeline: start at S seconds from the trace's start (or Nms, Nus)")
      ("bucket", po::value<double>(), "timeline: bucket length in ms (default: about 1/40 of the time shown)")
      ("inclusive", "top: order by inclusive value (default)")
      ("exclusive", "top: order by exclusive value; stats: exclusive values")
      ("lines", "keep source-line nodes (folded into their functions otherwise; export: folded only, the other "
                "formats always keep them)");
  if (derive) {
    visible.add_options()("merge-threads", po::value<std::vector<std::string>>(), "");
  } else {
    visible.add_options()("merge-threads", "merge the threads' subtrees into one; derive: sum|mean|min|max of "
                                           "the threads' values");
  }
  visible.add_options()
      ("to", po::value<std::string>(), ("export: " + exporters::ExporterNames("|", "|") +
                                         "; timeline: end at S seconds from the trace's start").c_str())
      ("per-thread", "export --to hatchet-json: a row per node and rank/thread (index levels) instead of the "
                     "threads' sum")
      ("per-run", "export --to csv|json-rows: a group's or invocation's runs each with their rows (a run column) "
                  "instead of their mean or total")
      ("unit-comment", "export --to folded: a first line '# metric=NAME unit=UNIT'")
      ("output,o", po::value<std::string>(), "export, flame: write to FILE instead of stdout")
      ("format", po::value<std::string>(), "text|json|csv (default text); table also markdown|latex")
      ("drop", po::value<std::vector<std::string>>(), "derive: fold away the nodes where QUERY's paths end")
      ("keep-min", po::value<std::vector<std::string>>(), "derive: keep the nodes of at least PCT % of -m's total")
      ("normalize", po::value<std::vector<std::string>>(), "derive: divide by per-iteration|per-thread|total|"
                                                           "NUMBER")
      ("name", po::value<std::string>(), "derive: the new run's name (required)")
      ("tag", po::value<std::vector<std::string>>(), "derive: KEY=VALUE tag of the new run (repeatable)")
      ("replace", "derive: replace the derived run of that name");
  cli::AddTerminalOptions(visible, /*text=*/true);
}

// Derive's operations, the options that apply in the order given.
const std::set<std::string> kDeriveOperations = {"drop", "query", "keep-min", "merge-threads", "normalize"};

}  // namespace

int main(int argc, char** argv) {
  cli::TuneAllocator(argc, argv);
  cli::ExitOnOutOfMemory(kTool);
  std::ios::sync_with_stdio(false);
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>())("args", po::value<std::vector<std::string>>());
  po::positional_options_description pos;
  pos.add("command", 1).add("args", -1);

  std::unique_ptr<po::options_description> visible;
  po::variables_map vm;
  std::vector<std::pair<std::string, std::string>> operations;
  auto parse = [&](bool derive) {
    visible = std::make_unique<po::options_description>(Usage());
    AddVisibleOptions(*visible, derive);
    po::options_description all;
    all.add(*visible).add(hidden);
    vm.clear();
    try {
      const po::parsed_options parsed = po::command_line_parser(argc, argv).options(all).positional(pos).run();
      po::store(parsed, vm);
      po::notify(vm);
      for (const po::option& o : parsed.options)
        if (kDeriveOperations.count(o.string_key))
          for (const std::string& v : o.value) operations.emplace_back(o.string_key, v);
    } catch (const po::error& e) {
      cli::Fail(kTool, std::string(e.what()) + " (see cct-query --help)");
    }
  };
  parse(false);
  if (vm.count("command") && vm["command"].as<std::string>() == "derive" && !vm.count("help")) {
    operations.clear();
    parse(true);
  }
  // A missing value takes the next option as its value (boost's way): say so.
  for (const auto& op : operations)
    if (op.second.rfind("--", 0) == 0)
      cli::Fail(kTool, "--" + op.first + " needs a value, not the option " + op.second + " (see cct-query --help)");
  if (vm.count("help")) {
    std::cout << *visible << '\n';
    return 0;
  }
  if (vm.count("version")) {
    cli::PrintVersion(kTool);
    return 0;
  }
  if (!vm.count("command")) cli::Fail(kTool, "no command given (see cct-query --help)");
  const std::string command = vm["command"].as<std::string>();
  const reports::ReportInfo* report = nullptr;
  if (command != "export") {
    auto found = reports::FindReport(command);
    if (!found.ok()) cli::Fail(kTool, found.status());
    report = *found;
  }
  for (const auto& [name, value] : vm) {
    if (value.defaulted() || kCommonOptions.count(name)) continue;
    if (report ? std::count(report->options.begin(), report->options.end(), name) > 0 : kExportOptions.count(name) > 0)
      continue;
    cli::Fail(kTool, "option --" + name + " does not apply to '" + command + "'");
  }

  reports::ReportRequest request;
  if (vm.count("args")) request.args = vm["args"].as<std::vector<std::string>>();
  reports::ReportOptions& opt = request.options;
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
  if (vm.count("query") && !(report && report->writes_database)) {
    // Repeatable for derive (its operations apply in order); one elsewhere.
    const auto& queries = vm["query"].as<std::vector<std::string>>();
    if (queries.size() > 1) cli::Fail(kTool, "--query is given once to '" + command + "' (see cct-query --help)");
    opt.query = queries.front();
  }
  if (vm.count("n")) opt.limit = vm["n"].as<size_t>();
  if (vm.count("inclusive") && vm.count("exclusive")) cli::Fail(kTool, "--inclusive and --exclusive exclude each other");
  opt.sort_exclusive = vm.count("exclusive") > 0;
  const cli::TerminalOptions terminal = cli::ReadTerminalOptions(kTool, vm);
  opt.ascii = terminal.ascii;
  opt.width = terminal.width;
  if (vm.count("by")) request.by = vm["by"].as<std::string>();
  if (vm.count("format")) request.format = vm["format"].as<std::string>();
  if (vm.count("nodes")) request.nodes = vm["nodes"].as<std::string>();
  if (vm.count("confidence")) request.confidence = vm["confidence"].as<double>();
  if (vm.count("baseline")) request.baseline = vm["baseline"].as<std::string>();
  if (vm.count("title")) request.title = vm["title"].as<std::string>();
  if (vm.count("min-width")) request.min_width = vm["min-width"].as<double>();
  if (vm.count("image-width")) request.image_width = vm["image-width"].as<size_t>();
  if (vm.count("orientation")) request.orientation = vm["orientation"].as<std::string>();
  if (vm.count("percentiles")) request.percentiles = vm["percentiles"].as<std::string>();
  if (vm.count("range")) opt.iteration_range = vm["range"].as<std::string>();
  if (vm.count("thread")) request.thread = vm["thread"].as<std::string>();
  if (vm.count("from")) request.from = vm["from"].as<std::string>();
  if (vm.count("to") && report) request.until = vm["to"].as<std::string>();
  if (vm.count("bucket")) request.bucket_ms = vm["bucket"].as<double>();
  request.lines = vm.count("lines") > 0;
  if (report && report->writes_database) {
    request.operations = std::move(operations);
    if (vm.count("name")) request.name = vm["name"].as<std::string>();
    auto tags = cli::ParseTags(vm.count("tag") ? vm["tag"].as<std::vector<std::string>>() : std::vector<std::string>());
    if (!tags.ok()) cli::Fail(kTool, tags.status());
    request.tags = std::move(*tags);
    request.replace = vm.count("replace") > 0;
  } else {
    request.merge_threads = vm.count("merge-threads") > 0;
  }

  request.db_path = store::DefaultDatabasePath(vm.count("db") ? vm["db"].as<std::string>() : "");
  store::FaultGuard guard(kTool, request.db_path);

  cct::Status status;
  if (!report) {
    status = Export(vm, request);
  } else {
    if (request.args.size() < report->min_args || request.args.size() > report->max_args)
      cli::Fail(kTool, std::string(report->args_error));
    if (!opt.query.empty()) CheckQuery(opt.query);
    if (command == "match") CheckQuery(request.args.at(1));
    status = report->writes_output ? WriteOutput(vm, [&](std::ostream& out) { return report->run(request, out); })
                                   : report->run(request, std::cout);
  }
  if (!status.ok()) {
    std::cout.flush();
    cli::Fail(kTool, status, status.code() == cct::ErrorCode::kFindings ? cli::kExitFindings : cli::kExitError);
  }
  std::cout.flush();
  if (!std::cout) cli::Fail(kTool, "cannot write the output");
  return 0;
}
