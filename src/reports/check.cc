// `cct-query check [DB]`: every run read back whole (store::CheckDatabase)
// and the damaged ones named. Exit 1 (kFindings) when any is damaged.
#include <ostream>

#include "output/format.h"
#include "output/json_writer.h"
#include "reports/registry.h"
#include "store/check.h"

namespace reports {

cct::Status CheckCommand(const ReportRequest& request, std::ostream& out) {
  const std::string path = request.args.empty() ? request.db_path : request.args[0];
  OutputFormat format = OutputFormat::kText;
  if (request.format) {
    CCT_ASSIGN_OR_RETURN(format, ParseOutputFormat(*request.format));
    if (format != OutputFormat::kText && format != OutputFormat::kJson)
      return cct::InvalidArgument("check writes text or json, not '" + *request.format + "'");
  }
  CCT_ASSIGN_OR_RETURN(const store::DatabaseCheck check, store::CheckDatabase(path));
  const size_t damaged = check.damaged();
  const bool ascii = request.options.ascii;
  // Names come from the file being checked: one line each, bounded.
  auto name = [&](const store::RunCheck& r) {
    return r.name.empty() ? std::string() : " '" + output::ElideMiddle(r.name, 60, ascii) + "'";
  };
  if (format == OutputFormat::kJson) {
    output::JsonWriter w(out);
    w.BeginObject().Field("path", check.path).FieldInt("runs", static_cast<long long>(check.runs.size()));
    w.FieldInt("intact", static_cast<long long>(check.runs.size() - damaged));
    w.Key("listing_problem");
    if (check.listing_problem.empty())
      w.Null();
    else
      w.String(check.listing_problem);
    w.Key("damaged").BeginArray();
    for (const store::RunCheck& r : check.runs) {
      if (r.problem.empty()) continue;
      w.BeginObject().FieldInt("id", r.id).Field("name", r.name).Field("problem", r.problem).EndObject();
    }
    w.EndArray().EndObject();
    out << '\n';
  } else {
    out << check.path << ": " << check.runs.size() << (check.runs.size() == 1 ? " run, " : " runs, ")
        << check.runs.size() - damaged << " intact, " << damaged << " damaged\n";
    if (!check.listing_problem.empty())
      out << "the run table is damaged (" << check.listing_problem
          << "); the runs were found by trying every run id\n";
    for (const store::RunCheck& r : check.runs)
      if (!r.problem.empty()) out << "damaged: run " << r.id << name(r) << ": " << r.problem << '\n';
  }
  if (damaged == 0 && check.listing_problem.empty()) return cct::Status::Ok();
  return cct::Status(cct::ErrorCode::kFindings,
                     damaged ? std::to_string(damaged) + " of " + std::to_string(check.runs.size()) +
                                   " runs are damaged"
                             : "the run table is damaged; every run could still be read");
}

}  // namespace reports
