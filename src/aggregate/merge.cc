#include "aggregate/merge.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "store/database.h"
#include "store/run_file.h"

namespace aggregate {

namespace {

std::string CanonicalPathOf(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

// A run as stored: its record and its sections, re-encoded from what the
// store decodes (the stored tree is in preorder already, so its ids, and
// those its iterations and trace name, come back unchanged).
struct StoredRun {
  store::RunMeta meta;
  std::vector<store::Section> sections;
};

cct::Result<StoredRun> ReadStoredRun(store::Database& db, const store::RunMeta& meta) {
  StoredRun r;
  r.meta = meta;
  CCT_ASSIGN_OR_RETURN(const auto sizes, db.SectionSizes(meta.id));
  if (sizes.empty()) return r;  // a run without a tree yet (recording, or crashed before its first checkpoint)
  CCT_ASSIGN_OR_RETURN(const cct::Tree tree, db.ReadTree(meta.id));
  CCT_ASSIGN_OR_RETURN(const std::optional<store::RunIterations> its, db.ReadIterations(meta.id));
  CCT_ASSIGN_OR_RETURN(const std::optional<store::RunTrace> trace, db.ReadTrace(meta.id));
  store::RunMeta copy = meta;
  CCT_ASSIGN_OR_RETURN(r.sections, store::EncodeRun(copy, &tree, its ? &*its : nullptr, trace ? &*trace : nullptr));
  return r;
}

uint64_t Fnv(uint64_t h, std::string_view s) {
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t DigestOf(const StoredRun& r) {
  std::vector<std::string> framed;
  for (const store::Section& s : r.sections) framed.push_back(store::FrameSection(s));
  return RunDigest(r.meta, framed);
}

std::string Ids(const std::vector<std::pair<store::RunId, store::RunId>>& v, bool second) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == 8) return s + ", …";
    s += (i ? ", " : "") + std::to_string(second ? v[i].second : v[i].first);
  }
  return s;
}

}  // namespace

uint64_t RunDigest(const store::RunMeta& meta, const std::vector<std::string>& framed_sections) {
  nlohmann::json j = meta.ToJson();
  for (const char* k : {"id", "parent_run", "root_run"}) j.erase(k);
  uint64_t h = Fnv(14695981039346656037ull, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  for (const std::string& s : framed_sections) h = Fnv(Fnv(h, "\x1f"), s);
  return h;
}

cct::Result<std::vector<MergeInputReport>> MergeDatabases(const MergeRequest& request,
                                                          std::vector<MergeInputReport>* done) {
  if (request.inputs.empty()) return cct::InvalidArgument("no input database to merge");
  const std::string out_canonical = CanonicalPathOf(request.out_db);
  for (const std::string& in : request.inputs) {
    if (CanonicalPathOf(in) == out_canonical)
      return cct::InvalidArgument("input " + in + " is the output database itself");
    if (!std::filesystem::exists(in)) return cct::NotFound("input database " + in + " does not exist");
  }
  std::unique_ptr<store::Database> out;
  if (request.dry_run && !std::filesystem::exists(request.out_db)) {
    // Nothing there yet: every run would be new.
  } else {
    CCT_ASSIGN_OR_RETURN(out, store::Database::Open(request.out_db, request.dry_run ? store::Database::Mode::kRead
                                                                                    : store::Database::Mode::kWrite));
  }
  // What OUT holds: by run key, and by digest for runs without one
  // (computed when first needed).
  std::unordered_map<std::string, store::RunId> out_keys;
  std::optional<std::unordered_map<uint64_t, store::RunId>> out_digests;
  std::vector<store::RunMeta> out_runs;
  if (out) {
    CCT_ASSIGN_OR_RETURN(out_runs, out->ListRuns());
    for (const store::RunMeta& m : out_runs)
      if (std::string key = store::RunKeyOf(m); !key.empty()) out_keys.emplace(std::move(key), m.id);
  }
  std::vector<MergeInputReport> reports;
  for (const std::string& path : request.inputs) {
    MergeInputReport rep;
    rep.path = path;
    auto in = store::Database::Open(path, store::Database::Mode::kRead);
    if (!in.ok()) {
      if (done) *done = reports;
      return in.status();
    }
    auto fail = [&](const cct::Status& s) {
      if (done) *done = reports;
      return s.WithContext(path);
    };
    auto runs = (*in)->ListRuns();
    if (!runs.ok()) return fail(runs.status());
    std::vector<store::RunFile> files;
    std::vector<store::RunId> old_ids;
    std::map<store::RunId, store::RunId> id_map;  // input id -> OUT id
    for (const store::RunMeta& m : *runs) {
      auto stored = ReadStoredRun(**in, m);
      if (!stored.ok()) return fail(stored.status());
      const std::string key = store::RunKeyOf(m);
      store::RunId have = 0;
      if (!key.empty()) {
        auto it = out_keys.find(key);
        if (it != out_keys.end()) have = it->second;
      } else if (out) {
        if (!out_digests) {
          out_digests.emplace();
          for (const store::RunMeta& o : out_runs) {
            if (!store::RunKeyOf(o).empty()) continue;
            auto os = ReadStoredRun(*out, o);
            if (!os.ok()) return fail(os.status().WithContext("reading " + request.out_db));
            out_digests->emplace(DigestOf(*os), o.id);
          }
        }
        auto it = out_digests->find(DigestOf(*stored));
        if (it != out_digests->end()) have = it->second;
      }
      if (have != 0) {
        rep.present.emplace_back(m.id, have);
        id_map[m.id] = have;
        continue;
      }
      store::RunFile f;
      f.meta = std::move(stored->meta);
      f.meta.id = 0;
      f.key = key;
      f.sections = std::move(stored->sections);
      files.push_back(std::move(f));
      old_ids.push_back(m.id);
    }
    if (!request.dry_run && !files.empty()) {
      // Ids are known run by run inside the transaction, parents first (a
      // parent's id is below its children's).
      const cct::Status s = out->PutRuns(files, [&](store::RunFile& f) {
        const size_t i = static_cast<size_t>(&f - files.data());
        id_map[old_ids[i]] = f.meta.id;
        auto remap = [&](store::RunId old) -> store::RunId {
          auto it = id_map.find(old);
          return it == id_map.end() ? 0 : it->second;  // not in the input (deleted there): no link
        };
        if (f.meta.parent_run != 0) f.meta.parent_run = remap(f.meta.parent_run);
        if (f.meta.root_run != 0) f.meta.root_run = remap(f.meta.root_run);
      });
      if (!s.ok()) return fail(s);
    }
    for (size_t i = 0; i < files.size(); ++i) {
      rep.added.emplace_back(old_ids[i], request.dry_run ? 0 : files[i].meta.id);
      if (request.dry_run) continue;
      // What this input added counts for the inputs after it.
      if (!files[i].key.empty()) out_keys[files[i].key] = files[i].meta.id;
      else if (out_digests) out_digests->emplace(DigestOf(StoredRun{files[i].meta, files[i].sections}), files[i].meta.id);
    }
    if (!request.dry_run && !files.empty()) {
      auto now = out->ListRuns();
      if (!now.ok()) return fail(now.status());
      out_runs = std::move(*now);
    }
    reports.push_back(std::move(rep));
  }
  if (done) *done = reports;
  return reports;
}

std::string DescribeMerge(const MergeRequest& request, const std::vector<MergeInputReport>& reports) {
  std::string s;
  for (const MergeInputReport& r : reports) {
    s += r.path + ": ";
    if (request.dry_run) {
      s += std::to_string(r.added.size()) + " run" + (r.added.size() == 1 ? "" : "s") + " would be added" +
           (r.added.empty() ? "" : " (input ids " + Ids(r.added, false) + ")");
    } else if (r.added.empty()) {
      s += "nothing new";
    } else {
      s += std::to_string(r.added.size()) + " run" + (r.added.size() == 1 ? "" : "s") + " added (ids " +
           Ids(r.added, true) + ")";
    }
    s += ", " + std::to_string(r.present.size()) + " already in " + request.out_db;
    if (!r.present.empty()) s += " (ids " + Ids(r.present, true) + ")";
    s += "\n";
  }
  return s;
}

}  // namespace aggregate
