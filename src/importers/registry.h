// The importers cctdb knows, for every front end to enumerate: cct-import's
// --from values, its --help list and its dispatch come from here, and so can
// a Python package's. Adding a format: a file in src/importers/ with its
// flow (importer.h) and one entry in registry.cc.
//
// The table is immutable static data: safe to read from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "importers/importer.h"

namespace importers {

// What an import produces.
enum class ImportProduces {
  kNewRun,        // a new run in the database
  kAttachToRun,   // metrics attached to an existing run (--run RUN)
};

using ImportFlow = cct::Result<ImportReport> (*)(const ImportRequest& request);

struct ImporterInfo {
  std::string_view name;                     // the --from value
  std::vector<std::string_view> extensions;  // typical input file names' endings ("" for a directory)
  std::string_view description;              // one line
  std::string_view help;                     // cct-import --help: the format's paragraph, without the name
  ImportProduces produces;
  std::vector<std::string_view> options;     // the cct-import options it takes besides -d and the file
  ImportFlow flow;
};

// Every importer, in the order cct-import lists them.
const std::vector<ImporterInfo>& Importers();

// The importer named `name`; kInvalidArgument "unknown format 'NAME'
// (expected ...)" when there is none.
cct::Result<const ImporterInfo*> FindImporter(std::string_view name);

// "folded, hatchet, ... or cupti-raw": the names for messages.
std::string ImporterNames();

}  // namespace importers
