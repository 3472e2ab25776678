// cct-aggregate: the aggregate run of a job or group (aggregate/job.h);
// under mpirun, one rank per process (aggregate/transport.h).
#include <boost/program_options.hpp>
#include <iostream>

#include "aggregate/job.h"
#include "store/database.h"
#include "tools/cli.h"

namespace po = boost::program_options;

namespace {
constexpr const char* kTool = "cct-aggregate";
}  // namespace

int main(int argc, char** argv) {
  // No TuneAllocator: its re-exec would restart an MPI rank under mpirun.
  cli::ExitOnOutOfMemory(kTool);
  po::options_description visible(
      "usage: cct-aggregate [-d DB] RUN... [-o OUT.db] [--name NAME] [--threads N]\n"
      "       mpirun -np K cct-aggregate [-d DB] RUN... [OPTIONS]\n\n"
      "Stores one aggregate run of the selected runs (a job's ranks: job:ID, tag:K=V, IDs,\n"
      "PATH:SEL for runs in other files): their merged tree with, per metric M, M (the sum),\n"
      "M@mean, M@min, M@max and M@imbalance with the rank holding the max.\n\nOptions");
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("db,d", po::value<std::string>(), "database of the runs (default: $CCT_DB, else ./cct.db)")
      ("output,o", po::value<std::string>(), "store the aggregate run in this database (default: -d's)")
      ("name", po::value<std::string>(), "the aggregate run's name (default: \"aggregate of RUN...\")")
      ("tag", po::value<std::vector<std::string>>(), "KEY=VALUE tag on the aggregate run (repeatable)")
      ("threads,j", po::value<unsigned>(), "reading and reducing threads per process (default: the hardware threads)")
      ("dry-run,n", "compute and print the summary; store nothing");
  cli::AddTerminalOptions(visible, /*text=*/false);
  const po::variables_map vm = cli::ParseCommandLine(kTool, argc, argv, visible, "run");
  cli::ReadTerminalOptions(kTool, vm);
  aggregate::AggregateRequest request;
  if (vm.count("run")) request.selectors = vm["run"].as<std::vector<std::string>>();
  if (request.selectors.empty()) cli::Fail(kTool, "expected at least one RUN selector (see cct-aggregate --help)");
  request.default_db = store::DefaultDatabasePath(vm.count("db") ? vm["db"].as<std::string>() : "");
  if (vm.count("output")) request.out_db = vm["output"].as<std::string>();
  if (vm.count("name")) request.name = vm["name"].as<std::string>();
  if (vm.count("threads")) {
    request.threads = vm["threads"].as<unsigned>();
    if (request.threads == 0 || request.threads > 1024) cli::Fail(kTool, "--threads N: N from 1 to 1024");
  }
  auto tags = cli::ParseTags(vm.count("tag") ? vm["tag"].as<std::vector<std::string>>() : std::vector<std::string>());
  if (!tags.ok()) cli::Fail(kTool, tags.status());
  request.tags = std::move(*tags);
  request.dry_run = vm.count("dry-run") > 0;

  std::unique_ptr<aggregate::Transport> transport = aggregate::MakeTransport(&argc, &argv);
  bool own_failure = false;
  auto result = aggregate::AggregateRuns(request, *transport, &own_failure);
  const bool root = transport->rank() == 0;
  if (!result.ok()) {
    // Errors every rank saw alike are said once, by rank 0; a rank whose
    // own share failed says why.
    const cct::Status s = result.status();
    transport.reset();  // MPI_Finalize before exit
    if (root || own_failure) cli::Fail(kTool, s);
    return cli::kExitError;
  }
  if (root) std::cout << result->summary << std::flush;
  transport.reset();
  return 0;
}
