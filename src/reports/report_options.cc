// Parsing of the report options shared by several cct-query commands.
#include "reports/reports.h"

namespace reports {

cct::Result<OutputFormat> ParseOutputFormat(const std::string& s) {
  if (s == "text") return OutputFormat::kText;
  if (s == "json") return OutputFormat::kJson;
  if (s == "csv") return OutputFormat::kCsv;
  return cct::InvalidArgument("unknown format '" + s + "' (expected text, json or csv)");
}

cct::Result<GroupBy> ParseGroupBy(const std::string& s) {
  if (s == "function") return GroupBy::kFunction;
  if (s == "kernel") return GroupBy::kKernel;
  if (s == "nvtx") return GroupBy::kNvtx;
  if (s == "line") return GroupBy::kLine;
  if (s == "module") return GroupBy::kModule;
  return cct::InvalidArgument("unknown --by '" + s + "' (expected function, kernel, nvtx, line or module)");
}

}  // namespace reports
