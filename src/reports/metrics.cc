// `cct-query metrics RUN`: the metrics a run has.
#include "output/format.h"
#include "reports/reports.h"

namespace reports {

using cct::Status;
using output::CsvField;
using output::ExportValue;
using output::FormatValue;
using output::NumberText;

Status WriteMetricsReport(query::Profile& profile, const ReportOptions& opt, std::ostream& out) {
  cct::NodeValues values(profile.tree);
  const cct::MetricRegistry& reg = profile.tree.metrics();
  switch (opt.format) {
    case OutputFormat::kText: {
      out << profile.label << ": " << reg.size() << " metrics\n";
      output::TextTable t({{"metric", 0, true}, {"unit", 0, true}, {"kind", 1, true}, {"total"}}, "description");
      for (cct::MetricId m = 0; m < reg.size(); ++m) {
        const cct::MetricDesc& d = reg.Get(m);
        const double total = values.Total(m);
        std::string desc = d.description;
        if (d.kind == cct::MetricKind::kDerived) desc += desc.empty() ? "= " + d.formula : " (= " + d.formula + ")";
        t.AddRow({d.name, std::string(cct::UnitName(d.unit)), std::string(cct::MetricKindName(d.kind)),
                  d.kind == cct::MetricKind::kDerived && total == 0 ? "-" : FormatValue(total, d.unit, opt.ascii)},
                 "", desc);
      }
      t.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginArray();
      for (cct::MetricId m = 0; m < reg.size(); ++m) {
        const cct::MetricDesc& d = reg.Get(m);
        w.BeginObject().Field("name", d.name).Field("unit", cct::UnitName(d.unit));
        w.Field("kind", cct::MetricKindName(d.kind));
        w.Field("description", d.description);
        if (!d.formula.empty()) w.Field("formula", d.formula);
        w.Field("total", ExportValue(values.Total(m), d.unit));
        w.EndObject();
      }
      w.EndArray();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "name,unit,kind,total,description,formula\n";
      for (cct::MetricId m = 0; m < reg.size(); ++m) {
        const cct::MetricDesc& d = reg.Get(m);
        out << CsvField(d.name) << ',' << cct::UnitName(d.unit) << ','
            << cct::MetricKindName(d.kind) << ','
            << NumberText(ExportValue(values.Total(m), d.unit)) << ',' << CsvField(d.description) << ','
            << CsvField(d.formula) << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

}  // namespace reports
