// cct-merge: copies the runs of several databases into one (aggregate/merge.h).
#include <boost/program_options.hpp>
#include <iostream>

#include "aggregate/merge.h"
#include "tools/cli.h"

namespace po = boost::program_options;

namespace {
constexpr const char* kTool = "cct-merge";
}  // namespace

int main(int argc, char** argv) {
  cli::TuneAllocator(argc, argv);
  cli::ExitOnOutOfMemory(kTool);
  po::options_description visible(
      "usage: cct-merge OUT.db IN.db... [--dry-run]\n\n"
      "Copies every run of the IN databases into OUT (created if absent), with its metadata,\n"
      "tree, iterations and trace; ids are renumbered and parent/root links follow. A run\n"
      "OUT already holds (same run key, or same content) is stored once.\n\nOptions");
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("dry-run,n", "list what would be merged; write nothing");
  cli::AddTerminalOptions(visible, /*text=*/false);
  const po::variables_map vm = cli::ParseCommandLine(kTool, argc, argv, visible, "file");
  cli::ReadTerminalOptions(kTool, vm);
  const std::vector<std::string> files =
      vm.count("file") ? vm["file"].as<std::vector<std::string>>() : std::vector<std::string>();
  if (files.size() < 2) cli::Fail(kTool, "expected OUT.db and at least one IN.db (see cct-merge --help)");
  aggregate::MergeRequest request;
  request.out_db = files[0];
  request.inputs.assign(files.begin() + 1, files.end());
  request.dry_run = vm.count("dry-run") > 0;
  std::vector<aggregate::MergeInputReport> done;
  auto reports = aggregate::MergeDatabases(request, &done);
  // What was merged before a failing input stays merged: say so first.
  std::cout << aggregate::DescribeMerge(request, reports.ok() ? *reports : done) << std::flush;
  if (!reports.ok()) cli::Fail(kTool, reports.status());
  return 0;
}
