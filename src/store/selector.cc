#include "store/selector.h"

#include <sys/stat.h>

#include <charconv>

namespace store {

using cct::InvalidArgument;
using cct::Result;

namespace {

bool ParseU32(std::string_view s, uint32_t& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Result<RunSelector> ParseSelector(std::string_view text, const std::string& default_db) {
  RunSelector sel;
  sel.text = std::string(text);
  sel.db_path = default_db;
  if (text.empty()) return InvalidArgument("empty run selector");

  if (const size_t at = text.rfind("@iter="); at != std::string_view::npos) {
    const std::string_view spec = text.substr(at + 6);
    text = text.substr(0, at);
    IterationSpec it;
    if (spec == "median") {
      it.median = true;
    } else if (const size_t dots = spec.find(".."); dots != std::string_view::npos) {
      if (!ParseU32(spec.substr(0, dots), it.first) || !ParseU32(spec.substr(dots + 2), it.last) || it.first == 0 ||
          it.last < it.first)
        return InvalidArgument("bad iteration range '" + std::string(spec) + "' in '" + sel.text +
                               "' (expected @iter=K, @iter=K..J with 1 <= K <= J, or @iter=median)");
    } else {
      if (!ParseU32(spec, it.first) || it.first == 0)
        return InvalidArgument("bad iteration '" + std::string(spec) + "' in '" + sel.text +
                               "' (iterations are numbered from 1)");
      it.last = it.first;
    }
    sel.iteration = it;
    if (text.empty()) return InvalidArgument("selector '" + sel.text + "' names no run before @iter=");
  }

  if (text.substr(0, 4) != "tag:") {
    if (const size_t colon = text.find(':'); colon != std::string_view::npos && colon > 0) {
      const std::string prefix(text.substr(0, colon));
      if (IsFile(prefix) || EndsWith(prefix, ".db")) {
        sel.db_path = prefix;
        text = text.substr(colon + 1);
        if (text.empty()) return InvalidArgument("selector '" + sel.text + "' names a database but no run");
      }
    }
  }

  if (text.substr(0, 4) == "tag:") {
    const std::string_view kv = text.substr(4);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return InvalidArgument("bad tag selector '" + sel.text + "' (expected tag:KEY=VALUE)");
    sel.kind = RunSelector::Kind::kTag;
    sel.tag_key = std::string(kv.substr(0, eq));
    sel.tag_value = std::string(kv.substr(eq + 1));
  } else if (text == "latest") {
    sel.kind = RunSelector::Kind::kLatest;
  } else if (text.substr(0, 7) == "latest~") {
    sel.kind = RunSelector::Kind::kLatest;
    if (!ParseU32(text.substr(7), sel.back))
      return InvalidArgument("bad selector '" + sel.text + "' (expected latest~N)");
  } else if (uint32_t id = 0; ParseU32(text, id)) {
    sel.kind = RunSelector::Kind::kId;
    sel.id = id;
  } else {
    sel.kind = RunSelector::Kind::kName;
    sel.name = std::string(text);
  }
  return sel;
}

std::string DescribeRuns(const std::vector<RunMeta>& runs, size_t max) {
  if (runs.empty()) return "the database holds no runs";
  std::string out;
  const size_t start = runs.size() > max ? runs.size() - max : 0;
  if (start > 0) out = "... ";
  for (size_t i = start; i < runs.size(); ++i) {
    if (i > start) out += ", ";
    out += std::to_string(runs[i].id);
    if (!runs[i].name.empty()) out += " '" + runs[i].name + "'";
    out += " (" + std::string(RunStateName(EffectiveState(runs[i]))) + ")";
  }
  return out;
}

Result<std::vector<RunMeta>> SelectRuns(Database& db, const RunSelector& sel) {
  CCT_ASSIGN_OR_RETURN(std::vector<RunMeta> runs, db.ListRuns());
  std::vector<RunMeta> out;
  switch (sel.kind) {
    case RunSelector::Kind::kId:
      for (const RunMeta& r : runs)
        if (r.id == sel.id) out.push_back(r);
      break;
    case RunSelector::Kind::kLatest:
      if (sel.back < runs.size()) out.push_back(runs[runs.size() - 1 - sel.back]);
      break;
    case RunSelector::Kind::kName:
      for (auto it = runs.rbegin(); it != runs.rend(); ++it)
        if (it->name == sel.name) {
          out.push_back(*it);
          break;
        }
      break;
    case RunSelector::Kind::kTag:
      for (const RunMeta& r : runs) {
        auto t = r.tags.find(sel.tag_key);
        if (t != r.tags.end() && t->second == sel.tag_value) out.push_back(r);
      }
      break;
  }
  if (out.empty())
    return cct::NotFound("no run matches '" + sel.text + "' in " + db.path() + "; runs: " + DescribeRuns(runs));
  return out;
}

}  // namespace store
