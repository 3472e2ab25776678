// --from caliper: Caliper's JSON outputs, as cali-query writes them.
//
//   json-split (`cali-query -q "... format json-split"`, what Hatchet's
//   CaliperReader reads): {"columns", "column_metadata" ({"is_value"}),
//   "nodes" ({"label", "column", "parent"}), "data" (rows, one value per
//   column; non-value columns hold node indices), and the globals as the
//   other top-level members}.
//   json (`format json`): a list of records {"path": "main/foo", "mpi.rank":
//   0, "sum#time.duration": 1.5, ...}; `format json(object)` wraps them as
//   {"records": [...], "globals": {...}}.
//
// The call path is "source.function#callpath.address" when the file has it
// (sampling), else "path" (annotated regions), as Hatchet chooses. Records
// without a path are dropped, as Hatchet drops them (their count is kept in
// the run's import_globals).
// mpi.rank and the thread id columns become thread nodes ("rank 0 thread
// 1", as the hatchet importer names them). Value columns are additive
// metrics: exclusive time (sum#time.duration, time.duration, ...) becomes
// "time" in ns, inclusive time (inclusive#..., time.inclusive.duration)
// gives exclusive time only where the file has no exclusive column
// (inclusive minus the children's); other sums keep their names.
// Statistics that do not add up (avg#, min#, max#) are not imported.
// Caliper's classic time.duration is in microseconds; a column's stated
// unit ("attribute.unit" in its metadata) or a name ending in ".ns" wins,
// and --unit sets the unit of the --metric column.
//
// Globals (Caliper's cali.* and Adiak's values: user, launchdate, cluster,
// ...) are kept in the run's metadata; Adiak's user and launchdate set the
// run's user and start time, and the globals that are not Caliper's own
// (cali.*, spot.*) and not lists become tags.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "cct/metric.h"
#include "cct/text.h"
#include "importers/importer.h"

namespace importers {

using cct::Result;
using cct::Status;
using nlohmann::json;

namespace {

// A value column and what it becomes.
struct CaliColumn {
  size_t index = 0;        // json-split: the column's position
  std::string key;         // the column's name in the file
  std::string metric;      // ours
  bool inclusive = false;  // an inclusive value (exclusive derived from it)
  double scale = 1;        // to our unit
  cct::Unit unit = cct::Unit::kCount;
  cct::MetricId id = cct::kNoMetric;
};

bool StartsWith(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool EndsWith(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

bool IsRankColumn(const std::string& c) { return c == "mpi.rank" || c == "rank"; }
// Not measurements: the aggregation's record order (Hatchet's "Node order"),
// and record counts' slots.
bool IsOrderColumn(const std::string& c) {
  return c == "Node order" || c.find("aggregate.slot") != std::string::npos;
}
bool IsThreadColumn(const std::string& c) {
  return c == "thread.id" || c == "omp.thread.id" || c == "pthread.id" || c == "cali.thread.id" ||
         c == "omp.thread_num" || c == "thread";
}

// Caliper's time units, by the names its attributes' "unit" metadata uses.
std::optional<double> TimeScale(const std::string& unit) {
  if (unit == "sec" || unit == "s" || unit == "seconds") return 1e9;
  if (unit == "msec" || unit == "ms") return 1e6;
  if (unit == "usec" || unit == "us" || unit == "microseconds") return 1e3;
  if (unit == "nsec" || unit == "ns" || unit == "nanoseconds") return 1;
  return std::nullopt;
}

// What a value column is: nullopt for statistics we do not import.
Result<std::optional<CaliColumn>> ClassifyColumn(const std::string& key, const std::string& stated_unit,
                                                 const ImportOptions& options) {
  std::string base = key;
  bool inclusive = false;
  // Aggregation prefixes: "sum#", "inclusive#", and cross-run "sum#avg#"
  // (Hatchet's "sum#avg#sum#time.duration"), outermost first.
  for (;;) {
    if (StartsWith(base, "sum#")) base = base.substr(4);
    else if (StartsWith(base, "inclusive#")) base = base.substr(10), inclusive = true;
    else if (StartsWith(base, "avg#") || StartsWith(base, "min#") || StartsWith(base, "max#") ||
             StartsWith(base, "variance#") || StartsWith(base, "stddev#"))
      return std::optional<CaliColumn>();  // averages and extremes do not add up
    else break;
  }
  CaliColumn c;
  c.key = key;
  c.inclusive = inclusive;
  // Caliper's time attributes, and the aliases reports give them ("time",
  // "Time (E)", "Time (I)", "time (inc)").
  std::string lower = base;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool time_name = lower == "time.duration" || lower == "time.duration.ns" ||
                         lower == "time.inclusive.duration" || lower == "time.inclusive.duration.ns" ||
                         lower == "time" || lower == "time (e)" || lower == "time (exc)" || lower == "time (i)" ||
                         lower == "time (inc)";
  if (lower.find("inclusive") != std::string::npos || lower == "time (i)" || lower == "time (inc)")
    c.inclusive = true;
  std::optional<std::string> unit = key == options.metric ? options.unit : std::nullopt;
  if (time_name || TimeScale(stated_unit)) {
    // Caliper's own time columns are "time"; another column in a time unit
    // keeps its name.
    c.metric = time_name ? "time" : key;
    if (!time_name) c.inclusive = false;
    c.unit = cct::Unit::kNanoseconds;
    if (unit) {
      cct::Unit u;
      CCT_RETURN_IF_ERROR(ResolveImportUnit("time", unit, u, c.scale));
      if (u != cct::Unit::kNanoseconds) return cct::InvalidArgument("--unit for " + json(key).dump() + " must be a time unit");
    } else if (auto s = TimeScale(stated_unit)) {
      c.scale = *s;
    } else {
      c.scale = EndsWith(base, ".ns") ? 1 : 1e3;  // Caliper's classic time.duration: microseconds
    }
    return std::optional<CaliColumn>(c);
  }
  // Other sums keep their names; an inclusive one is a metric of its own.
  c.metric = key;
  c.inclusive = false;
  CCT_RETURN_IF_ERROR(ResolveImportUnit(c.metric, unit, c.unit, c.scale));
  return std::optional<CaliColumn>(c);
}

// A record as both layouts give it: where, the path (root first), values.
struct CaliRecord {
  std::string location;
  std::vector<double> values;  // per CaliColumn
};

std::string ScalarText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

class CaliperReader {
 public:
  CaliperReader(std::string path, const ImportOptions& options) : path_(std::move(path)), options_(options) {}

  Result<ImportResult> Read() {
    CCT_ASSIGN_OR_RETURN(std::string text, ReadFile(path_, PieceLimit{PieceKind::kJsonTokens, kMaxLineBytes}));
    json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    text.clear();
    text.shrink_to_fit();
    if (doc.is_discarded()) return cct::BadInput(path_ + ": not valid JSON");
    if (doc.is_object() && doc.contains("columns") && doc.contains("data") && doc.contains("nodes")) {
      CCT_RETURN_IF_ERROR(ReadSplit(doc));
    } else if (doc.is_array()) {
      CCT_RETURN_IF_ERROR(ReadRecords(doc));
    } else if (doc.is_object() && doc.contains("records") && doc["records"].is_array()) {
      if (auto g = doc.find("globals"); g != doc.end() && g->is_object())
        for (auto it = g->begin(); it != g->end(); ++it) Global(it.key(), *it);
      CCT_RETURN_IF_ERROR(ReadRecords(doc["records"]));
    } else {
      return cct::BadInput(path_ + ": not Caliper JSON (expected json-split's columns/nodes/data or a list of "
                                   "records)");
    }
    if (result_.records == 0 && result_.skipped == 0) return cct::BadInput(path_ + ": no records");
    if (dropped_ > 0)
      result_.globals["import_records_without_path"] = std::to_string(dropped_);
    return std::move(result_);
  }

 private:
  void Global(const std::string& key, const json& v) {
    const std::string text = ScalarText(v);
    result_.globals[key] = text;
    if (key == "user" && v.is_string()) result_.user = text;
    if (key == "launchdate") {
      // Adiak's launchdate: seconds since the epoch (a number, or its text).
      double s = 0;
      if (v.is_number()) s = v.get<double>();
      else if (v.is_string()) {
        try {
          s = std::stod(text);
        } catch (...) {
          s = 0;
        }
      }
      if (s > 0 && s < 1e11) result_.start_time_ns = static_cast<int64_t>(s * 1e9);
    }
    // Lists (Adiak's libraries, cmdline: "[a,b,...]") stay in the globals
    // only: as tags they would be long and never grouped by.
    const bool list = v.is_array() || v.is_object() || (!text.empty() && text.front() == '[' && text.back() == ']');
    if (!StartsWith(key, "cali.") && !StartsWith(key, "spot.") && !list &&
        (v.is_string() || v.is_number() || v.is_boolean()))
      result_.tags[key] = cct::CutToBytes(text, 256);
  }

  Status RegisterColumns() {
    // Exclusive time wins over inclusive time: inclusive columns then only
    // serve to derive it where no exclusive column exists.
    bool exclusive_time = false;
    for (const CaliColumn& c : columns_)
      if (c.metric == "time" && !c.inclusive) exclusive_time = true;
    std::vector<CaliColumn> kept;
    for (CaliColumn& c : columns_) {
      if (c.metric == "time" && c.inclusive && exclusive_time) continue;
      // Two columns for the same metric (time.duration and
      // sum#time.duration): the first is used.
      bool dup = false;
      for (const CaliColumn& k : kept) dup |= k.metric == c.metric;
      if (dup) continue;
      cct::MetricDesc d;
      d.name = c.metric;
      d.unit = c.unit;
      d.description = "imported from Caliper (" + c.key + ")";
      CCT_ASSIGN_OR_RETURN(c.id, result_.tree.metrics().Register(d));
      kept.push_back(c);
    }
    columns_ = std::move(kept);
    if (columns_.empty()) return cct::BadInput(path_ + ": no value columns to import (sums or times)");
    return Status::Ok();
  }

  cct::NodeId Base(const std::string& location) {
    if (location.empty()) return cct::kRootNode;
    return result_.tree.InternChild(cct::kRootNode, result_.tree.InternFrame(cct::FrameKind::kThread, location));
  }

  // Adds a record's values at `node` (under `base`).
  void AddValues(cct::NodeId node, cct::NodeId base, const std::vector<std::optional<double>>& values) {
    cct::Tree& t = result_.tree;
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (!values[i]) continue;
      const double v = *values[i] * columns_[i].scale;
      t.AddValue(node, columns_[i].id, v);
      if (columns_[i].inclusive && t.parent(node) != base && node != base) t.AddValue(t.parent(node), columns_[i].id, -v);
    }
  }

  Status Bad(const std::string& where, const std::string& why) {
    if (!options_.skip_bad_lines) return cct::BadInput(path_ + ": " + where + ": " + why);
    if (result_.skipped++ == 0) result_.first_skip = where + ": " + why;
    return Status::Ok();
  }

  // --- json-split
  Status ReadSplit(const json& doc) {
    const json& cols = doc["columns"];
    const json& meta = doc.contains("column_metadata") ? doc["column_metadata"] : json::array();
    const json& nodes = doc["nodes"];
    const json& data = doc["data"];
    if (!cols.is_array() || !nodes.is_array() || !data.is_array() || !meta.is_array())
      return cct::BadInput(path_ + ": \"columns\", \"column_metadata\", \"nodes\" and \"data\" must be lists");
    for (auto it = doc.begin(); it != doc.end(); ++it)
      if (it.key() != "data" && it.key() != "columns" && it.key() != "column_metadata" && it.key() != "nodes")
        Global(it.key(), *it);
    std::vector<std::string> names;
    for (size_t i = 0; i < cols.size(); ++i) {
      if (!cols[i].is_string()) return cct::BadInput(path_ + ": columns[" + std::to_string(i) + "] is not a string");
      names.push_back(cols[i].get<std::string>());
    }
    auto find = [&](std::string_view n) -> std::optional<size_t> {
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == n) return i;
      return std::nullopt;
    };
    std::optional<size_t> path_col = find("source.function#callpath.address");
    if (!path_col) path_col = find("path");
    if (!path_col) return cct::BadInput(path_ + ": no \"path\" or \"source.function#callpath.address\" column");
    std::optional<size_t> rank_col, thread_col;
    std::vector<bool> is_value(names.size(), false);
    for (size_t i = 0; i < names.size(); ++i) {
      const json m = i < meta.size() ? meta[i] : json::object();
      is_value[i] = m.is_object() && m.value("is_value", false);
      if (IsRankColumn(names[i])) rank_col = i;
      else if (IsThreadColumn(names[i])) thread_col = i;
      else if (is_value[i] && !IsOrderColumn(names[i])) {
        std::string unit;
        if (m.is_object())
          for (const char* k : {"attribute.unit", "unit"})
            if (auto u = m.find(k); u != m.end() && u->is_string()) unit = u->get<std::string>();
        CCT_ASSIGN_OR_RETURN(std::optional<CaliColumn> c, ClassifyColumn(names[i], unit, options_));
        if (c) {
          c->index = i;
          columns_.push_back(*c);
        }
      }
    }
    CCT_RETURN_IF_ERROR(RegisterColumns());
    // Nodes: labels, parents (checked to come first: Caliper writes them so,
    // and it rules out cycles).
    struct SNode {
      std::string label, column;
      int64_t parent = -1;
    };
    std::vector<SNode> sn(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json& n = nodes[i];
      const std::string where = "nodes[" + std::to_string(i) + "]";
      if (!n.is_object()) return cct::BadInput(path_ + ": " + where + " is not an object");
      if (auto l = n.find("label"); l != n.end()) sn[i].label = ScalarText(*l);
      if (auto c = n.find("column"); c != n.end() && c->is_string()) sn[i].column = c->get<std::string>();
      if (auto p = n.find("parent"); p != n.end() && !p->is_null()) {
        if (!p->is_number_integer() || p->get<int64_t>() < 0 || p->get<int64_t>() >= static_cast<int64_t>(i))
          return cct::BadInput(path_ + ": " + where + ".parent is not the index of an earlier node");
        sn[i].parent = p->get<int64_t>();
      }
    }
    // A rank or thread column holds the value itself (is_value), or the
    // index of the node whose label it is.
    auto label_of = [&](size_t col, const json& v, std::string& out) {
      if (!is_value[col] && v.is_number_integer() && v.get<int64_t>() >= 0 &&
          v.get<int64_t>() < static_cast<int64_t>(sn.size()))
        out = sn[static_cast<size_t>(v.get<int64_t>())].label;
      else out = ScalarText(v);
    };
    // (location, caliper node) -> our node.
    std::map<std::pair<std::string, int64_t>, cct::NodeId> ours;
    const std::string& path_name = names[*path_col];
    for (size_t r = 0; r < data.size(); ++r) {
      const json& row = data[r];
      const std::string where = "data[" + std::to_string(r) + "]";
      if (!row.is_array() || row.size() != names.size()) {
        CCT_RETURN_IF_ERROR(Bad(where, "a row of " + std::to_string(row.is_array() ? row.size() : 0) +
                                           " values for " + std::to_string(names.size()) + " columns"));
        continue;
      }
      const json& pv = row[*path_col];
      if (pv.is_null()) {
        ++dropped_;
        continue;
      }
      if (!pv.is_number_integer() || pv.get<int64_t>() < 0 || pv.get<int64_t>() >= static_cast<int64_t>(sn.size())) {
        CCT_RETURN_IF_ERROR(Bad(where, "the " + path_name + " value is not a node index"));
        continue;
      }
      std::string location, rank, thread;
      if (rank_col && !row[*rank_col].is_null()) label_of(*rank_col, row[*rank_col], rank), location = "rank " + rank;
      if (thread_col && !row[*thread_col].is_null())
        label_of(*thread_col, row[*thread_col], thread), location += (location.empty() ? "" : " ") + ("thread " + thread);
      const cct::NodeId base = Base(location);
      // Walk up the path's own nodes to the first one already made, then
      // down. A parent of another attribute's column is above the path.
      const int64_t leaf = pv.get<int64_t>();
      const std::string& column = sn[static_cast<size_t>(leaf)].column;
      auto in_path = [&](int64_t k) { return k >= 0 && sn[static_cast<size_t>(k)].column == column; };
      std::vector<int64_t> up;
      for (int64_t k = leaf; in_path(k) && !ours.count({location, k}); k = sn[static_cast<size_t>(k)].parent)
        up.push_back(k);
      for (size_t j = up.size(); j-- > 0;) {
        const int64_t k = up[j];
        const int64_t p = sn[static_cast<size_t>(k)].parent;
        const cct::NodeId parent = in_path(p) ? ours.at({location, p}) : base;
        const std::string& label = sn[static_cast<size_t>(k)].label;
        ours[{location, k}] = result_.tree.InternChild(
            parent, result_.tree.InternFrame(cct::FrameKind::kFunction, label.empty() ? "UNKNOWN" : label));
      }
      std::vector<std::optional<double>> values(columns_.size());
      bool bad = false;
      for (size_t i = 0; i < columns_.size(); ++i) {
        const json& v = row[columns_[i].index];
        if (v.is_null()) continue;
        if (!v.is_number()) {
          CCT_RETURN_IF_ERROR(Bad(where, "column " + cct::ElideMiddle(json(columns_[i].key).dump(), 80) + " is not a number"));
          bad = true;
          break;
        }
        values[i] = v.get<double>();
      }
      if (bad) continue;
      AddValues(ours[{location, pv.get<int64_t>()}], base, values);
      ++result_.records;
    }
    return Status::Ok();
  }

  // --- json: records with the path as "a/b/c"
  Status ReadRecords(const json& records) {
    std::string path_key;
    std::vector<std::string> seen_value_keys;
    // Columns: every numeric member of any record but the path, rank and thread.
    for (const json& rec : records) {
      if (!rec.is_object()) continue;
      if (rec.contains("source.function#callpath.address")) path_key = "source.function#callpath.address";
      else if (path_key.empty() && rec.contains("path")) path_key = "path";
      for (auto it = rec.begin(); it != rec.end(); ++it)
        if (it->is_number() && !IsRankColumn(it.key()) && !IsThreadColumn(it.key()) && !IsOrderColumn(it.key()) &&
            std::find(seen_value_keys.begin(), seen_value_keys.end(), it.key()) == seen_value_keys.end())
          seen_value_keys.push_back(it.key());
    }
    if (path_key.empty() && !records.empty())
      return cct::BadInput(path_ + ": no record has a \"path\" or \"source.function#callpath.address\"");
    for (const std::string& k : seen_value_keys) {
      CCT_ASSIGN_OR_RETURN(std::optional<CaliColumn> c, ClassifyColumn(k, "", options_));
      if (c) columns_.push_back(*c);
    }
    CCT_RETURN_IF_ERROR(RegisterColumns());
    for (size_t r = 0; r < records.size(); ++r) {
      const json& rec = records[r];
      const std::string where = "record " + std::to_string(r);
      if (!rec.is_object()) {
        CCT_RETURN_IF_ERROR(Bad(where, "not an object"));
        continue;
      }
      auto pv = rec.find(path_key);
      if (pv == rec.end() || pv->is_null()) {
        ++dropped_;
        continue;
      }
      std::string location;
      for (auto it = rec.begin(); it != rec.end(); ++it) {
        if (IsRankColumn(it.key())) location = "rank " + ScalarText(*it) + (location.empty() ? "" : " " + location);
        else if (IsThreadColumn(it.key())) location += (location.empty() ? "" : " ") + ("thread " + ScalarText(*it));
      }
      const cct::NodeId base = Base(location);
      cct::NodeId node = base;
      const std::string p = ScalarText(*pv);
      for (size_t start = 0; start <= p.size();) {
        size_t slash = p.find('/', start);
        if (slash == std::string::npos) slash = p.size();
        if (slash > start)
          node = result_.tree.InternChild(
              node, result_.tree.InternFrame(cct::FrameKind::kFunction, std::string_view(p).substr(start, slash - start)));
        start = slash + 1;
      }
      if (node == base) {
        CCT_RETURN_IF_ERROR(Bad(where, "an empty " + path_key));
        continue;
      }
      std::vector<std::optional<double>> values(columns_.size());
      for (size_t i = 0; i < columns_.size(); ++i)
        if (auto v = rec.find(columns_[i].key); v != rec.end() && v->is_number()) values[i] = v->get<double>();
      AddValues(node, base, values);
      ++result_.records;
    }
    return Status::Ok();
  }

  std::string path_;
  const ImportOptions& options_;
  ImportResult result_;
  std::vector<CaliColumn> columns_;
  size_t dropped_ = 0;
};

}  // namespace

Result<ImportResult> ImportCaliper(const std::string& path, const ImportOptions& options) {
  // nlohmann's typed accessors throw on unexpected types; the file is what
  // is malformed, so that is bad input, and nothing escapes this module.
  try {
    CaliperReader reader(path, options);
    return reader.Read();
  } catch (const json::exception& e) {
    return cct::BadInput(path + ": unexpected JSON structure (" + cct::ElideMiddle(e.what(), 200, true) + ")");
  }
}

Result<ImportReport> ImportCaliperRun(const ImportRequest& request) {
  return ImportNewRun(request, "caliper", &ImportCaliper);
}

}  // namespace importers
