// cct-diff: compares two runs, two iterations or two groups of runs, and
// gates CI on regressions (exit 1 with --fail-on-regression).
#include <boost/program_options.hpp>
#include <iostream>

#include "diff/diff.h"
#include "diff/inputs.h"
#include "reports/diff_report.h"
#include "store/database.h"
#include "store/fault_guard.h"
#include "tools/cli.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kTool = "cct-diff";

constexpr const char* kUsage = R"(usage: cct-diff [-d DB] BASE CANDIDATE [OPTIONS]

Compares the candidate with the base node by node, by calling context, and
reports what got slower or faster: totals first, then the largest regressions
and improvements, then subtrees that appear or disappear.

BASE and CANDIDATE select runs: an id, latest, latest~N, a run name,
RUN/all (every process of a recording, totalled), RUN@iter=K (one
iteration), RUN@iter=median, RUN@iter=K..J (iterations as a group),
tag:KEY=VALUE (a group of runs: means, standard deviations, 95%
intervals and a Mann-Whitney U test per node), PATH:SELECTOR for another
database.

A node regresses when its inclusive change exceeds --threshold AND --min-abs
AND, for groups of 3+ runs a side, its p-value is below --alpha. Counted and
listed are the causes: nodes whose own change, without their regressed
children's, passes the same tests; callers that only inherit one are shown
as context.

Exit status: 0 no regression (or no --fail-on-regression), 1 a regression
with --fail-on-regression, 2 bad usage or input.

Options)";

}  // namespace

int main(int argc, char** argv) {
  cli::TuneAllocator(argc, argv);
  cli::ExitOnOutOfMemory(kTool);
  std::ios::sync_with_stdio(false);
  po::options_description visible(kUsage);
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("db,d", po::value<std::string>(), "database file (default: $CCT_DB, else ./cct.db)")
      ("metric,m", po::value<std::vector<std::string>>(), "metric to compare (repeatable; default: the first both have)")
      ("threshold", po::value<std::string>(), "relative change that counts, PCT (default 5)")
      ("min-abs", po::value<std::string>(), "absolute change that counts: PCT% of the base total (default 1%), "
                                            "or a value: seconds for times (10ms, 2us), bytes (4KiB), else plain")
      ("alpha", po::value<double>(), "significance level for groups (default 0.01)")
      ("normalize", po::value<std::string>(), "kernels: strip template arguments, parameters and clone suffixes "
                                              "from function and kernel names before aligning")
      ("fold-recursion", "collapse direct recursion before aligning")
      ("normalize-total", "compare shares of each run's total instead of absolute values")
      ("merge-threads", "merge the threads' subtrees into one before aligning")
      ("fail-on-regression", "exit 1 when a regression is found")
      ("n,n", po::value<size_t>(), "rows per list (default 10; 0 for all)")
      ("max-lines", po::value<size_t>(), "markdown: lines before the collapsed details, where further rows go "
                                         "(default 40; 0 for no limit)")
      ("tree", "print the differential tree instead of the summary")
      ("flame", po::value<std::string>(), "also write a differential flame graph (SVG) of the first additive "
                                          "metric to FILE")
      ("orientation", po::value<std::string>(), "flame: auto|flame|icicle (default auto: an icicle, root on top, "
                                                "when more than 50 levels are drawn)")
      ("depth", po::value<int>(), "tree: show N levels")
      ("min", po::value<double>(), "tree: hide nodes below PCT percent of the base total on both sides")
      ("format", po::value<std::string>(), "text|json|markdown|csv (default text)");
  cli::AddTerminalOptions(visible, /*text=*/true);
  po::options_description hidden;
  hidden.add_options()("args", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("args", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    cli::Fail(kTool, std::string(e.what()) + " (see cct-diff --help)");
  }
  if (vm.count("help")) {
    std::cout << visible << '\n';
    return cli::kExitOk;
  }
  if (vm.count("version")) {
    cli::PrintVersion(kTool);
    return cli::kExitOk;
  }
  const std::vector<std::string> args =
      vm.count("args") ? vm["args"].as<std::vector<std::string>>() : std::vector<std::string>();
  if (args.size() != 2) cli::Fail(kTool, "expected BASE and CANDIDATE (see cct-diff --help)");

  diff::DiffOptions opt;
  if (vm.count("metric")) opt.metrics = vm["metric"].as<std::vector<std::string>>();
  if (vm.count("threshold")) {
    auto t = diff::ParsePercent(vm["threshold"].as<std::string>());
    if (!t.ok() || *t < 0) cli::Fail(kTool, "--threshold must be a percentage, 0 or more (e.g. 5 or 5%)");
    opt.threshold = *t;
  }
  if (vm.count("min-abs")) {
    auto m = diff::ParseMinAbs(vm["min-abs"].as<std::string>());
    if (!m.ok()) cli::Fail(kTool, "--min-abs must be PCT% of the base total or a value such as 0.01, 10ms, 4KiB");
    opt.min_abs = *m;
  }
  if (vm.count("alpha")) {
    opt.alpha = vm["alpha"].as<double>();
    if (!(opt.alpha > 0 && opt.alpha < 1)) cli::Fail(kTool, "--alpha must be between 0 and 1");
  }
  if (vm.count("normalize")) {
    const std::string mode = vm["normalize"].as<std::string>();
    if (mode != "kernels") cli::Fail(kTool, "unknown --normalize '" + mode + "' (expected kernels)");
    opt.align.normalize.kernels = true;
  }
  opt.align.fold_recursion = vm.count("fold-recursion") > 0;
  opt.normalize_total = vm.count("normalize-total") > 0;

  reports::DiffReportOptions ro;
  if (vm.count("format")) {
    auto f = reports::ParseDiffFormat(vm["format"].as<std::string>());
    if (!f.ok()) cli::Fail(kTool, f.status());
    ro.format = *f;
  }
  if (vm.count("n")) ro.limit = vm["n"].as<size_t>();
  if (vm.count("max-lines")) ro.max_lines = vm["max-lines"].as<size_t>();
  ro.tree = vm.count("tree") > 0;
  if ((vm.count("depth") || vm.count("min")) && !ro.tree) cli::Fail(kTool, "--depth and --min apply to --tree");
  if (vm.count("depth")) {
    ro.depth = vm["depth"].as<int>();
    if (ro.depth < 0) cli::Fail(kTool, "--depth must be 0 or more");
  }
  if (vm.count("min")) {
    ro.min_pct = vm["min"].as<double>();
    if (!(ro.min_pct >= 0 && ro.min_pct <= 100)) cli::Fail(kTool, "--min must be a percentage from 0 to 100");
  }
  const cli::TerminalOptions terminal = cli::ReadTerminalOptions(kTool, vm);
  ro.color = ro.format == reports::DiffFormat::kText && terminal.color;
  ro.ascii = terminal.ascii;
  ro.width = terminal.width;
  reports::FlameOptions flame;
  if (vm.count("orientation")) {
    if (!vm.count("flame")) cli::Fail(kTool, "--orientation applies to --flame");
    auto o = reports::ParseFlameOrientation(vm["orientation"].as<std::string>());
    if (!o.ok()) cli::Fail(kTool, o.status());
    flame.orientation = *o;
  }

  const std::string db_path = store::DefaultDatabasePath(vm.count("db") ? vm["db"].as<std::string>() : "");
  store::FaultGuard guard(kTool, db_path);

  query::LoadOptions load;
  load.merge_threads = vm.count("merge-threads") > 0;
  // @iter=median picks the median iteration by the metric being compared.
  if (!opt.metrics.empty()) load.median_metric = opt.metrics.front();
  load.metrics = opt.metrics;
  const diff::TreeLoader loader = reports::ProfileTreeLoader(load);
  auto base = diff::LoadSide(args[0], db_path, loader);
  if (!base.ok()) cli::Fail(kTool, base.status());
  auto cand = diff::LoadSide(args[1], db_path, loader);
  if (!cand.ok()) cli::Fail(kTool, cand.status());

  auto result = diff::Compare(*base, *cand, opt);
  if (!result.ok()) cli::Fail(kTool, result.status());
  if (vm.count("flame")) {
    const cct::Status s = reports::WriteDiffFlame(*result, *base, *cand, flame, vm["flame"].as<std::string>());
    if (!s.ok()) cli::Fail(kTool, s);
  }
  reports::WriteDiffReport(*result, *base, *cand, ro, std::cout);
  std::cout.flush();
  if (!std::cout) cli::Fail(kTool, "cannot write the output");
  const bool fail = vm.count("fail-on-regression") && result->regressions() > 0;
  return fail ? cli::kExitFindings : cli::kExitOk;
}
