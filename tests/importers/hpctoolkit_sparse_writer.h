// A writer of HPCToolkit sparse databases (meta.db, profile.db, cct.db,
// format version 4.0) laid out from HPCToolkit's published FORMATS.md, for
// tests and fuzz seeds: HPCToolkit does not run here, so these are fixtures
// written to the published format, not files written by hpcprof.
//
// The caller chooses the tree and each profile's measured ("point") values;
// the writer derives what hpcprof would store besides: the execution scope
// (inclusive: a context's own value plus its descendants'), the summary
// profile (sums over the profiles) and cct.db (the same values by context).
// The "function" scope's values are written deliberately wrong (ten times the
// point value) so that a reader which took them would show it.
//
// Header-only, no state: safe anywhere.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hpcsparse_fixture {

struct Function {
  std::string name, module, file;  // empty: absent (0 pointer)
  uint32_t line = 0;
  uint64_t offset = 0;
};

struct Context {
  uint32_t id = 0;
  uint32_t parent = 0;         // the parent's id; 0: this is an entry point
  uint16_t entry_kind = 1;     // entry points: 0 unknown, 1 main thread, 2 application thread
  uint8_t relation = 0;        // 0 lexical, 1 call, 2 inlined call
  uint8_t lexical = 0;         // 0 function, 1 loop, 2 line, 3 instruction
  int function = -1;           // index into Database::functions
  std::string file;            // with line: hasSrcLoc
  uint32_t line = 0;
  std::string module;          // with offset: hasPoint
  uint64_t offset = 0;
  // hpcprof leaves the instructions where samples landed out of meta.db but
  // keeps their values in profile.db: a leaf with `listed` false is too.
  bool listed = true;
};

// A metric and which propagation scopes it has. Ids: point 3m, function
// 3m+1, execution 3m+2; the summary's sum statistic 1000+m.
struct Metric {
  std::string name;
  bool point = true, function = true, execution = true;
};

struct Profile {
  std::vector<std::pair<std::string, uint32_t>> ids;   // identifier kind name ("RANK") -> logical id
  std::map<uint32_t, std::map<size_t, double>> point;  // context id -> metric index -> measured value
};

struct Database {
  std::vector<std::string> kinds{"SUMMARY", "NODE", "RANK", "THREAD", "GPUDEVICE", "GPUCONTEXT", "GPUSTREAM", "CORE"};
  std::vector<Function> functions;
  std::vector<Context> contexts;  // parents before children
  std::vector<Metric> metrics;
  std::vector<Profile> profiles;  // without the summary, which the writer adds first
};

// Little-endian bytes at fixed offsets, grown as written.
class Bytes {
 public:
  std::string data;
  template <typename T>
  void Put(uint64_t at, T v) {
    if (data.size() < at + sizeof(T)) data.resize(at + sizeof(T));
    std::memcpy(&data[at], &v, sizeof(T));
  }
  void Put8(uint64_t at, uint8_t v) { Put(at, v); }
  void Put16(uint64_t at, uint16_t v) { Put(at, v); }
  void Put32(uint64_t at, uint32_t v) { Put(at, v); }
  void Put64(uint64_t at, uint64_t v) { Put(at, v); }
  void PutF64(uint64_t at, double v) { Put(at, v); }
  uint64_t End() const { return data.size(); }
  uint64_t Align(uint64_t a = 8) {
    data.resize((data.size() + a - 1) / a * a);
    return data.size();
  }
  uint64_t Str(const std::string& s) {  // appends "s\0", returns where
    const uint64_t at = data.size();
    data += s;
    data += '\0';
    return at;
  }
  void Header(const char format[4], size_t sections) {
    data.assign("HPCTOOLKIT");
    data.append(format, 4);
    data += '\x04';  // major 4
    data += '\x00';  // minor 0
    data.resize(16 + 16 * sections);
  }
  void Section(int i, uint64_t at, uint64_t end) {
    Put64(16 + 16 * i, end - at);
    Put64(16 + 16 * i + 8, at);
  }
};

// Execution-scope values of one profile: each context's point value plus
// its descendants'.
inline std::map<uint32_t, std::map<size_t, double>> Inclusive(const Database& db, const Profile& p) {
  std::map<uint32_t, std::map<size_t, double>> inc;
  std::map<uint32_t, uint32_t> parent;
  for (const Context& c : db.contexts) parent[c.id] = c.parent;
  for (const auto& [ctx, vals] : p.point)
    for (const auto& [m, v] : vals)
      for (uint32_t c = ctx; c != 0; c = parent[c]) inc[c][m] += v;
  return inc;
}

// Per profile (summary first): context id -> metric id -> value, as hpcprof
// stores them; context 0 is the global context (totals).
inline std::vector<std::map<uint32_t, std::map<uint16_t, double>>> ProfileValues(const Database& db) {
  std::vector<std::map<uint32_t, std::map<uint16_t, double>>> out(1);
  for (const Profile& p : db.profiles) {
    std::map<uint32_t, std::map<uint16_t, double>> vals;
    const auto inc = Inclusive(db, p);
    for (const auto& [ctx, ms] : p.point)
      for (const auto& [m, v] : ms) {
        if (db.metrics[m].point) vals[ctx][static_cast<uint16_t>(3 * m)] += v;
        if (db.metrics[m].function) vals[ctx][static_cast<uint16_t>(3 * m + 1)] += 10 * v;
      }
    for (const auto& [ctx, ms] : inc)
      for (const auto& [m, v] : ms)
        if (db.metrics[m].execution) vals[ctx][static_cast<uint16_t>(3 * m + 2)] = v;
    // The global context: every root's execution value, summed (also given
    // as "point" here: a reader must not take the global context as a node).
    for (const Context& c : db.contexts)
      if (c.parent == 0 && inc.count(c.id))
        for (const auto& [m, v] : inc.at(c.id)) {
          if (db.metrics[m].execution) vals[0][static_cast<uint16_t>(3 * m + 2)] += v;
          if (db.metrics[m].point) vals[0][static_cast<uint16_t>(3 * m)] += v;
        }
    for (const auto& [ctx, ms] : inc)
      for (const auto& [m, v] : ms) out[0][ctx][static_cast<uint16_t>(1000 + m)] += v;
    for (const auto& [ctx, ms] : vals)
      for (const auto& [id, v] : ms)
        if (ctx == 0 && id % 3 == 2 && id < 1000) out[0][0][static_cast<uint16_t>(1000 + id / 3)] += v;
    out.push_back(std::move(vals));
  }
  return out;
}

inline std::string MetaDb(const Database& db) {
  Bytes b;
  b.Header("meta", 8);
  // Common string table: module, file and function names, entry names.
  const uint64_t strings = b.Align();
  std::map<std::string, uint64_t> str;
  auto intern = [&](const std::string& s) {
    if (!str.count(s)) str[s] = b.Str(s);
  };
  for (const Function& f : db.functions) {
    if (!f.name.empty()) intern(f.name);
    if (!f.module.empty()) intern(f.module);
    if (!f.file.empty()) intern(f.file);
  }
  for (const Context& c : db.contexts) {
    if (!c.file.empty()) intern(c.file);
    if (!c.module.empty()) intern(c.module);
  }
  for (const char* e : {"unknown entry", "main thread", "application thread"}) intern(e);
  b.Section(4, strings, b.End());
  // Load modules and source files: one entry per distinct path.
  std::map<std::string, uint64_t> module_at, file_at;
  auto table = [&](int section, const std::vector<std::string>& paths, std::map<std::string, uint64_t>& at) {
    const uint64_t s = b.Align();
    b.Put64(s, s + 16);
    b.Put32(s + 8, static_cast<uint32_t>(paths.size()));
    b.Put16(s + 12, 16);
    for (size_t i = 0; i < paths.size(); ++i) {
      const uint64_t e = s + 16 + 16 * i;
      b.Put32(e, 0);
      b.Put64(e + 8, str.at(paths[i]));
      at[paths[i]] = e;
    }
    b.Section(section, s, s + 16 + 16 * paths.size());
  };
  std::vector<std::string> modules, files;
  auto add = [](std::vector<std::string>& v, const std::string& s) {
    if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  for (const Function& f : db.functions) add(modules, f.module), add(files, f.file);
  for (const Context& c : db.contexts) add(modules, c.module), add(files, c.file);
  table(5, modules, module_at);
  table(6, files, file_at);
  // Functions.
  const uint64_t fs = b.Align();
  b.Put64(fs, fs + 16);
  b.Put32(fs + 8, static_cast<uint32_t>(db.functions.size()));
  b.Put16(fs + 12, 40);
  for (size_t i = 0; i < db.functions.size(); ++i) {
    const Function& f = db.functions[i];
    const uint64_t e = fs + 16 + 40 * i;
    b.Put64(e, f.name.empty() ? 0 : str.at(f.name));
    b.Put64(e + 8, f.module.empty() ? 0 : module_at.at(f.module));
    b.Put64(e + 16, f.offset);
    b.Put64(e + 24, f.file.empty() ? 0 : file_at.at(f.file));
    b.Put32(e + 32, f.line);
    b.Put32(e + 36, 0);
  }
  b.Section(7, fs, fs + 16 + 40 * db.functions.size());
  // General properties: title and description, inside the section.
  const uint64_t gp = b.Align();
  b.Put64(gp + 8, 0);
  b.Put64(gp, b.Str("fixture"));
  b.Put64(gp + 8, b.Str("A test fixture written to HPCToolkit's published format"));
  b.Section(0, gp, b.End());
  // Identifier names.
  const uint64_t in = b.Align();
  b.Put64(in, in + 16);
  b.Put8(in + 8, static_cast<uint8_t>(db.kinds.size()));
  b.Put64(in + 16 + 8 * (db.kinds.size() - 1), 0);
  for (size_t k = 0; k < db.kinds.size(); ++k) b.Put64(in + 16 + 8 * k, b.Str(db.kinds[k]));
  b.Section(1, in, b.End());
  // Metrics: three scopes, each metric's instances and its sum summary.
  const uint64_t ms = b.Align();
  const uint64_t scopes = ms + 32, mds = scopes + 3 * 16;
  const size_t n = db.metrics.size();
  const uint64_t insts = mds + 32 * n, sums = insts + 3 * 16 * n;
  b.Put64(ms, mds);
  b.Put32(ms + 8, static_cast<uint32_t>(n));
  b.Put8(ms + 12, 32);
  b.Put8(ms + 13, 16);
  b.Put8(ms + 14, 24);
  b.Put64(ms + 16, scopes);
  b.Put16(ms + 24, 3);
  b.Put8(ms + 26, 16);
  b.Put64(sums + 24 * n, 0);
  const char* scope_names[3] = {"point", "function", "execution"};
  const uint8_t scope_types[3] = {1, 3, 2};
  for (int s = 0; s < 3; ++s) {
    b.Put64(scopes + 16 * s, b.Str(scope_names[s]));
    b.Put8(scopes + 16 * s + 8, scope_types[s]);
    b.Put8(scopes + 16 * s + 9, 0);
  }
  const uint64_t formula = b.Str("$$");
  for (size_t m = 0; m < n; ++m) {
    const Metric& mt = db.metrics[m];
    const uint64_t md = mds + 32 * m;
    b.Put64(md, b.Str(mt.name));
    b.Put64(md + 8, insts + 48 * m);
    b.Put64(md + 16, sums + 24 * m);
    uint16_t k = 0;
    const bool has[3] = {mt.point, mt.function, mt.execution};
    for (int s = 0; s < 3; ++s) {
      if (!has[s]) continue;
      b.Put64(insts + 48 * m + 16 * k, scopes + 16 * s);
      b.Put16(insts + 48 * m + 16 * k + 8, static_cast<uint16_t>(3 * m + s));
      ++k;
    }
    b.Put16(md + 24, k);
    b.Put16(md + 26, 1);
    b.Put64(sums + 24 * m, scopes + 16 * 2);
    b.Put64(sums + 24 * m + 8, formula);
    b.Put8(sums + 24 * m + 16, 0);
    b.Put16(sums + 24 * m + 18, static_cast<uint16_t>(1000 + m));
  }
  b.Section(2, ms, b.End());
  // Context tree: entry points, then each context's children in one array.
  const uint64_t ct = b.Align();
  std::vector<const Context*> entries;
  std::map<uint32_t, std::vector<const Context*>> kids;
  for (const Context& c : db.contexts)
    if (c.listed) (c.parent == 0 ? entries : kids[c.parent]).push_back(&c);
  auto flex_words = [](const Context& c) {
    return (c.function >= 0 ? 1 : 0) + (c.file.empty() ? 0 : 2) + (c.module.empty() ? 0 : 2);
  };
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> arrays;  // parent id -> (at, size)
  uint64_t at = ct + 16 + 32 * entries.size();
  for (const Context& c : db.contexts) {
    if (!kids.count(c.id)) continue;
    uint64_t sz = 0;
    for (const Context* k : kids[c.id]) sz += 32 + 8 * flex_words(*k);
    arrays[c.id] = {at, sz};
    at += sz;
  }
  b.Put64(ct, ct + 16);
  b.Put16(ct + 8, static_cast<uint16_t>(entries.size()));
  b.Put8(ct + 10, 32);
  auto put_children = [&](uint64_t e, uint32_t id) {
    const auto it = arrays.find(id);
    b.Put64(e, it == arrays.end() ? 0 : it->second.second);
    b.Put64(e + 8, it == arrays.end() ? 0 : it->second.first);
  };
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint64_t e = ct + 16 + 32 * i;
    put_children(e, entries[i]->id);
    b.Put32(e + 16, entries[i]->id);
    b.Put16(e + 20, entries[i]->entry_kind);
    static const char* pretty[3] = {"unknown entry", "main thread", "application thread"};
    b.Put64(e + 24, str.at(pretty[entries[i]->entry_kind % 3]));
  }
  for (const auto& [parent, list] : kids) {
    uint64_t e = arrays.at(parent).first;
    for (const Context* c : list) {
      put_children(e, c->id);
      b.Put32(e + 16, c->id);
      b.Put8(e + 20, static_cast<uint8_t>((c->function >= 0 ? 1 : 0) | (c->file.empty() ? 0 : 2) |
                                          (c->module.empty() ? 0 : 4)));
      b.Put8(e + 21, c->relation);
      b.Put8(e + 22, c->lexical);
      b.Put8(e + 23, static_cast<uint8_t>(flex_words(*c)));
      b.Put16(e + 24, c->relation != 0 ? 1 : 0);
      b.Put16(e + 26, 0), b.Put32(e + 28, 0);
      uint64_t w = e + 32;
      if (c->function >= 0) b.Put64(w, fs + 16 + 40 * static_cast<uint64_t>(c->function)), w += 8;
      if (!c->file.empty()) {
        b.Put64(w, file_at.at(c->file));
        b.Put64(w + 8, 0);
        b.Put32(w + 8, c->line);
        w += 16;
      }
      if (!c->module.empty()) b.Put64(w, module_at.at(c->module)), b.Put64(w + 8, c->offset), w += 16;
      e = w;
    }
  }
  b.Section(3, ct, at);
  b.Align();
  b.data += "_meta.db";
  return b.data;
}

inline std::string ProfileDb(const Database& db) {
  const auto values = ProfileValues(db);
  std::map<std::string, uint8_t> kind;
  for (size_t k = 0; k < db.kinds.size(); ++k) kind[db.kinds[k]] = static_cast<uint8_t>(k);
  Bytes b;
  b.Header("prof", 2);
  const size_t n = values.size();
  const uint64_t pi = b.Align();
  b.Put64(pi, pi + 16);
  b.Put32(pi + 8, static_cast<uint32_t>(n));
  b.Put8(pi + 12, 48);
  b.Put64(pi + 16 + 48 * n - 8, 0);
  b.Section(0, pi, pi + 16 + 48 * n);
  // Identifier tuples.
  const uint64_t it = b.Align();
  for (size_t p = 1; p < n; ++p) {
    const Profile& pr = db.profiles[p - 1];
    const uint64_t t = b.Align();
    b.Put16(t, static_cast<uint16_t>(pr.ids.size()));
    b.Put16(t + 2, 0), b.Put32(t + 4, 0);
    for (size_t k = 0; k < pr.ids.size(); ++k) {
      const uint64_t id = t + 8 + 16 * k;
      b.Put8(id, kind.at(pr.ids[k].first));
      b.Put8(id + 1, 0);
      b.Put16(id + 2, 0);
      b.Put32(id + 4, pr.ids[k].second);
      b.Put64(id + 8, pr.ids[k].second);
    }
    b.Put64(pi + 16 + 48 * p + 32, t);
  }
  b.Section(1, it, b.End());
  // Each profile's sparse value block.
  for (size_t p = 0; p < n; ++p) {
    const uint64_t pv = b.Align();
    uint64_t count = 0;
    for (const auto& [ctx, ms] : values[p])
      for (const auto& [id, v] : ms) {
        b.Put16(pv + 10 * count, id);
        b.PutF64(pv + 10 * count + 2, v);
        ++count;
      }
    const uint64_t px = b.Align(4);
    uint64_t start = 0, k = 0;
    for (const auto& [ctx, ms] : values[p]) {
      b.Put32(px + 12 * k, ctx);
      b.Put64(px + 12 * k + 4, start);
      start += ms.size();
      ++k;
    }
    const uint64_t e = pi + 16 + 48 * p;
    b.Put64(e, count);
    b.Put64(e + 8, pv);
    b.Put32(e + 16, static_cast<uint32_t>(values[p].size()));
    b.Put32(e + 20, 0);
    b.Put64(e + 24, px);
    if (p == 0) b.Put64(e + 32, 0);
    b.Put32(e + 40, p == 0 ? 1 : 0);
    b.Put32(e + 44, 0);
  }
  b.Align();
  b.data += "_prof.db";
  return b.data;
}

inline std::string CctDb(const Database& db) {
  const auto values = ProfileValues(db);
  // context id -> metric id -> profile index -> value (no summary profile).
  std::map<uint32_t, std::map<uint16_t, std::map<uint32_t, double>>> by_ctx;
  uint32_t max_ctx = 0;
  for (const Context& c : db.contexts) max_ctx = std::max(max_ctx, c.id);
  for (size_t p = 1; p < values.size(); ++p)
    for (const auto& [ctx, ms] : values[p])
      for (const auto& [id, v] : ms) by_ctx[ctx][id][static_cast<uint32_t>(p)] = v;
  Bytes b;
  b.Header("ctxt", 1);
  const uint64_t ci = b.Align();
  const uint64_t n = uint64_t{max_ctx} + 1;
  b.Put64(ci, ci + 16);
  b.Put32(ci + 8, static_cast<uint32_t>(n));
  b.Put8(ci + 12, 32);
  b.Put64(ci + 16 + 32 * n - 8, 0);
  b.Section(0, ci, ci + 16 + 32 * n);
  for (uint64_t c = 0; c < n; ++c) {
    const uint64_t pv = b.Align(4);
    uint64_t count = 0;
    const auto found = by_ctx.find(static_cast<uint32_t>(c));
    if (found != by_ctx.end())
      for (const auto& [id, ps] : found->second)
        for (const auto& [p, v] : ps) {
          b.Put32(pv + 12 * count, p);
          b.PutF64(pv + 12 * count + 4, v);
          ++count;
        }
    const uint64_t px = b.Align(2);
    uint64_t start = 0, k = 0;
    if (found != by_ctx.end())
      for (const auto& [id, ps] : found->second) {
        b.Put16(px + 10 * k, id);
        b.Put64(px + 10 * k + 2, start);
        start += ps.size();
        ++k;
      }
    const uint64_t e = ci + 16 + 32 * c;
    b.Put64(e, count);
    b.Put64(e + 8, pv);
    b.Put16(e + 16, static_cast<uint16_t>(k));
    b.Put64(e + 24, px);
  }
  b.Align();
  b.data += "__ctx.db";
  return b.data;
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Writes meta.db, profile.db and cct.db into `dir` (which exists).
inline void WriteDatabase(const std::string& dir, const Database& db) {
  WriteFile(dir + "/meta.db", MetaDb(db));
  WriteFile(dir + "/profile.db", ProfileDb(db));
  WriteFile(dir + "/cct.db", CctDb(db));
}

// A small database for fuzz seeds: main with a line, a loop and an inlined
// call; two threads; one metric with point and execution scopes, one with
// execution only.
inline Database SeedDatabase() {
  Database db;
  db.functions = {{"main", "/bin/a", "a.c", 1, 0x10}, {"f", "/bin/a", "a.c", 9, 0x40}};
  db.contexts.resize(6);
  db.contexts[0].id = 1;  // main thread entry
  db.contexts[1].id = 2, db.contexts[1].parent = 1, db.contexts[1].relation = 1, db.contexts[1].function = 0;
  db.contexts[2].id = 3, db.contexts[2].parent = 2, db.contexts[2].lexical = 1, db.contexts[2].file = "a.c",
  db.contexts[2].line = 3;
  db.contexts[3].id = 4, db.contexts[3].parent = 3, db.contexts[3].lexical = 2, db.contexts[3].file = "a.c",
  db.contexts[3].line = 4;
  db.contexts[4].id = 5, db.contexts[4].parent = 4, db.contexts[4].relation = 2, db.contexts[4].function = 1;
  db.contexts[5].id = 6, db.contexts[5].parent = 5, db.contexts[5].lexical = 3, db.contexts[5].module = "/bin/a",
  db.contexts[5].offset = 0x48;
  db.metrics = {{"time", true, false, true}, {"count", false, false, true}};
  db.profiles.resize(2);
  db.profiles[0].ids = {{"RANK", 0}, {"THREAD", 0}};
  db.profiles[1].ids = {{"RANK", 0}, {"THREAD", 1}};
  db.profiles[0].point = {{4, {{0, 1.5}, {1, 2}}}, {6, {{0, 2.5}}}};
  db.profiles[1].point = {{2, {{0, 3}}}, {6, {{1, 7}}}};
  return db;
}

// The fuzz target's input: meta.db's size (u32, little-endian), meta.db,
// then profile.db.
inline std::string FuzzInput(const std::string& meta, const std::string& profile) {
  std::string out(4, '\0');
  const uint32_t n = static_cast<uint32_t>(meta.size());
  std::memcpy(out.data(), &n, 4);
  return out + meta + profile;
}

}  // namespace hpcsparse_fixture
