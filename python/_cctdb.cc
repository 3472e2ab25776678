// _cctdb: the CPython extension behind `import cctdb` (python/cctdb/). The
// only file that includes pybind11.
//
// A binding, like the tools: it parses arguments and dispatches to the
// libraries, and implements no format of its own. A run's tree comes back
// as numpy columns built here (one array per column, no Python object per
// node but the path strings); every report (runs, top, iterations, match,
// flame, derive) comes back as the text cct-query prints for the same
// request (JSON, SVG), produced by the same registry entry; the diff as
// cct-diff's JSON. The pure-Python package turns these into DataFrames.
//
// Errors: a cct::Status becomes cctdb.Error with the status' one-line
// message; no C++ exception escapes into the interpreter (pybind11 turns the
// ones it throws itself into Python exceptions). A damaged database can
// still make LMDB follow a wild pointer or fail an assertion (abort), where
// the tools' store::FaultGuard ends the process with one line: an
// interpreter must survive, so each library call here runs under a
// recoverable guard (Guarded) that turns SIGSEGV, SIGBUS or SIGABRT on the
// calling thread into the same "is damaged" Error. What the abandoned call
// had allocated (and its LMDB environment) is leaked: a damaged file is
// rare and the process goes on. The GIL is released while
// the libraries read the database and compute; only building the Python
// objects holds it. Every call opens the database itself, so calls are
// independent and safe from several Python threads at once; calls on one
// file take turns (FileMutex says why).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "diff/diff.h"
#include "diff/inputs.h"
#include "exporters/exporter.h"
#include "exporters/registry.h"
#include "output/format.h"
#include "query/profile.h"
#include "reports/diff_report.h"
#include "reports/registry.h"
#include "reports/reports.h"
#include "store/database.h"
#include "store/fault_guard.h"
#include "store/selector.h"

namespace py = pybind11;

namespace {

// ---- the recoverable fault guard

// The guarded call running on this thread, if any: where a fault returns to.
thread_local sigjmp_buf* t_fault_return = nullptr;
struct sigaction g_previous[3];
constexpr int kGuardedSignals[3] = {SIGSEGV, SIGBUS, SIGABRT};

// Async-signal-safe: a jump back into Guarded on the faulting thread, or the
// previous handler's turn (Python's faulthandler, the default action).
void OnGuardedFault(int sig, siginfo_t* info, void* context) {
  if (sigjmp_buf* back = t_fault_return) {
    t_fault_return = nullptr;
    siglongjmp(*back, sig);
  }
  for (int i = 0; i < 3; ++i) {
    if (kGuardedSignals[i] != sig) continue;
    sigaction(sig, &g_previous[i], nullptr);
    const struct sigaction& p = g_previous[i];
    if ((p.sa_flags & SA_SIGINFO) && p.sa_sigaction) {
      p.sa_sigaction(sig, info, context);
    } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN && p.sa_handler) {
      p.sa_handler(sig);
    }
    // SIG_DFL: returning re-executes the fault (or abort raises again) with
    // the previous action in place.
  }
}

void InstallFaultGuard() {
  struct sigaction sa {};
  sa.sa_sigaction = OnGuardedFault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  for (int i = 0; i < 3; ++i) sigaction(kGuardedSignals[i], &sa, &g_previous[i]);
}

// One mutex per database file (by device and inode; by path where it
// cannot be stat()ed), held through each call on it. LMDB must not have one
// file open twice in a process at once: closing either environment drops
// the process's POSIX lock on the lock file, which tells writers in other
// processes that its readers are alive. So calls on one file take turns
// (the GIL stays released: other Python threads, and calls on other files,
// run meanwhile). The mutexes live as long as the process.
std::mutex& FileMutex(const std::string& db) {
  static std::mutex registry_mutex;
  static std::map<std::string, std::unique_ptr<std::mutex>> registry;
  const std::string path = store::DefaultDatabasePath(db);
  struct stat st {};
  const std::string key = ::stat(path.c_str(), &st) == 0
                              ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)
                              : "path:" + path;
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::unique_ptr<std::mutex>& m = registry[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

// Runs f() (the library call, GIL released) with `db`'s file to itself
// (FileMutex); a fault inside it becomes kCorrupt with the store's damage
// message for `db`.
template <class F>
cct::Status Guarded(const std::string& db, F&& f) {
  std::lock_guard<std::mutex> file_lock(FileMutex(db));
  sigjmp_buf back;
  sigjmp_buf* const outer = t_fault_return;
  if (const int sig = sigsetjmp(back, 1); sig != 0) {
    t_fault_return = outer;
    return cct::Corrupt(store::DamageMessage(
        store::DefaultDatabasePath(db), sig == SIGABRT ? "LMDB or a decoder aborted while reading it"
                                                       : "memory fault while reading it"));
  }
  t_fault_return = &back;
  cct::Status status = f();
  t_fault_return = outer;
  return status;
}

// Raised for every failed Status: Python sees cctdb.Error(message).
struct CctError {
  std::string message;
};

[[noreturn]] void Raise(const cct::Status& status) { throw CctError{status.message()}; }

void Check(const cct::Status& status) {
  if (!status.ok()) Raise(status);
}

// Arguments of a report, as cct-query's options name them.
struct ReportArgs {
  std::vector<std::string> metrics;
  std::optional<std::string> by, format, title;
  size_t limit = 20;
  int depth = -1;
  double min_pct = 0;
  std::string query;
  bool lines = false, merge_threads = false, exclusive = false;
  std::vector<std::pair<std::string, std::string>> operations;
  std::optional<std::string> name;
  std::map<std::string, std::string> tags;
  bool replace = false;
  // timeline (--thread, --from, --to, --bucket) and iterations --range
  std::optional<std::string> thread, from, until, range;
  std::optional<double> bucket_ms;
};

// Runs cct-query COMMAND ARGS... through the reports registry; its output.
std::string RunReport(const std::string& command, const std::vector<std::string>& args, const std::string& db,
                      const ReportArgs& a) {
  std::ostringstream out;
  cct::Status status;
  {
    py::gil_scoped_release release;
    status = Guarded(db, [&]() -> cct::Status {
      CCT_ASSIGN_OR_RETURN(const reports::ReportInfo* report, reports::FindReport(command));
      if (args.size() < report->min_args || args.size() > report->max_args)
        return cct::InvalidArgument(std::string(report->args_error));
      reports::ReportRequest r;
      r.args = args;
      r.db_path = store::DefaultDatabasePath(db);
      r.options.metrics = a.metrics;
      r.options.limit = a.limit;
      r.options.depth = a.depth;
      r.options.min_pct = a.min_pct;
      r.options.sort_exclusive = a.exclusive;
      r.options.width = 0;
      if (!report->writes_database) r.options.query = a.query;
      r.by = a.by;
      r.format = a.format;
      r.title = a.title;
      r.lines = a.lines;
      r.merge_threads = a.merge_threads;
      r.operations = a.operations;
      r.name = a.name;
      r.tags = a.tags;
      r.replace = a.replace;
      r.thread = a.thread;
      r.from = a.from;
      r.until = a.until;
      r.bucket_ms = a.bucket_ms;
      if (a.range) r.options.iteration_range = *a.range;
      return report->run(r, out);
    });
  }
  Check(status);
  return std::move(out).str();
}

// Names of one string column as a categorical: per node a code into
// `categories` (the distinct strings used, in first-use order).
struct Categorical {
  std::vector<int32_t> codes;
  std::vector<std::string> categories;
};

// The tree as columns: the rows and their order are those of
// `cct-query export --to csv` (exporters/csv.cc): preorder, children as
// cct::BuildChildren orders them, the root left out; values in export units.
struct TreeColumns {
  std::vector<int64_t> node, parent, depth, line;
  std::vector<int8_t> kind;
  Categorical name, function, module, file;
  std::vector<std::string> path;
  std::vector<char> match;  // with a query: a matching path ends here
  std::vector<std::string> metric_names;
  std::vector<std::vector<double>> inc, exc;
  std::string label;
};

// A row with no enclosing function: string 0, always "" (cct/string_table.h).
constexpr cct::StringId kNoFunction = 0;

void AddCode(Categorical& c, std::vector<int32_t>& index, cct::StringId id, const cct::Tree& tree) {
  if (id >= index.size()) index.resize(id + 1, -1);
  if (index[id] < 0) {
    index[id] = static_cast<int32_t>(c.categories.size());
    c.categories.emplace_back(tree.str(id));
  }
  c.codes.push_back(index[id]);
}

cct::Status BuildColumns(const query::Profile& profile, const std::vector<std::string>& names,
                         const std::string& query_text, bool with_path, TreeColumns& out) {
  const cct::Tree& tree = profile.tree;
  std::vector<cct::MetricId> ids;
  if (names.empty()) {
    for (cct::MetricId m = 0; m < tree.metrics().size(); ++m) ids.push_back(m);
  } else {
    CCT_ASSIGN_OR_RETURN(ids, query::ResolveMetrics(tree, names));
  }
  cct::NodeValues values(tree);
  std::optional<query::PathQueryMatch> match;
  if (!query_text.empty()) {
    CCT_ASSIGN_OR_RETURN(match, reports::MatchReportQuery(tree, values, query_text, /*require_match=*/true));
  }
  // An @iter= profile keeps the run's whole tree, zero where the iteration
  // did not go; reports hide those nodes, and so do we.
  std::vector<char> with_values;
  if (profile.selector.iteration) with_values = cct::NodesWithValues(tree);
  auto shown = [&](cct::NodeId n) {
    if (match && !match->on_path[n]) return false;
    return with_values.empty() || with_values[n];
  };

  const size_t n = tree.size();
  out.node.reserve(n);
  out.parent.reserve(n);
  out.depth.reserve(n);
  out.line.reserve(n);
  out.kind.reserve(n);
  std::vector<int32_t> name_index, function_index, module_index, file_index;
  const cct::Children children = cct::BuildChildren(tree);
  struct Item {
    cct::NodeId node;
    uint32_t depth;
    size_t path_len;
    cct::StringId function;  // the enclosing function's name (kNoFunction: none)
  };
  std::string path;
  std::vector<Item> stack;
  auto push_children = [&](cct::NodeId p, uint32_t depth, size_t len, cct::StringId function) {
    for (const cct::NodeId* c = children.end(p); c != children.begin(p);) {
      --c;
      if (shown(*c)) stack.push_back({*c, depth, len, function});
    }
  };
  push_children(cct::kRootNode, 1, 0, kNoFunction);
  std::vector<cct::NodeId> order;
  order.reserve(n);
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    order.push_back(it.node);
    const cct::Frame f = tree.frame(it.node);
    out.node.push_back(it.node);
    out.parent.push_back(tree.parent(it.node) == cct::kRootNode ? -1 : int64_t{tree.parent(it.node)});
    out.depth.push_back(it.depth);
    out.kind.push_back(static_cast<int8_t>(f.kind));
    out.line.push_back(f.line);
    AddCode(out.name, name_index, f.name, tree);
    // As the CSV export's `function` column (exporters/csv.cc): a
    // function's own name, a source line's enclosing function, else empty.
    const bool is_function = f.kind == cct::FrameKind::kFunction;
    AddCode(out.function, function_index,
            is_function ? f.name : f.kind == cct::FrameKind::kLine ? it.function : kNoFunction, tree);
    AddCode(out.module, module_index, f.module, tree);
    AddCode(out.file, file_index, f.file, tree);
    size_t len = 0;
    if (with_path) {
      path.resize(it.path_len);
      if (!path.empty()) path.push_back(';');
      for (char c : tree.name(it.node)) path.push_back(c == ';' ? ':' : c);
      out.path.push_back(path);
      len = path.size();
    }
    if (match) out.match.push_back(match->end[it.node]);
    push_children(it.node, it.depth + 1, len, is_function ? f.name : it.function);
  }
  for (cct::MetricId id : ids) {
    const cct::MetricDesc& desc = tree.metrics().Get(id);
    out.metric_names.push_back(desc.name);
    const std::vector<double>& inc = values.Inclusive(id);
    const std::vector<double>& exc = values.Exclusive(id);
    // Derived metrics have no value where they are 0 (the CSV's empty cell,
    // JSON's null): NaN here.
    const bool none_when_zero = desc.kind != cct::MetricKind::kAdditive;
    auto column = [&](const std::vector<double>& v) {
      std::vector<double> col(order.size());
      for (size_t i = 0; i < order.size(); ++i) {
        const double x = v[order[i]];
        col[i] = none_when_zero && x == 0 ? std::nan("") : output::ExportValue(x, desc.unit);
      }
      return col;
    };
    out.inc.push_back(column(inc));
    out.exc.push_back(column(exc));
  }
  out.label = profile.label;
  return cct::Status::Ok();
}

template <class T>
py::array_t<T> ToArray(std::vector<T>&& v) {
  // The vector moves into a capsule that owns it: no copy.
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({owned->size()}, {sizeof(T)}, owned->data(), free_when_done);
}

template <class S>
py::list StringList(const std::vector<S>& v) {
  py::list out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    PyObject* s = PyUnicode_DecodeUTF8(v[i].data(), static_cast<Py_ssize_t>(v[i].size()), "replace");
    if (!s) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), s);
  }
  return out;
}

// An object array of str, made without a Python list in between.
py::array ObjectStrings(const std::vector<std::string>& v) {
  py::array out(py::dtype("O"), {v.size()}, {});
  auto** data = static_cast<PyObject**>(out.mutable_data());
  for (size_t i = 0; i < v.size(); ++i) {
    PyObject* s = PyUnicode_DecodeUTF8(v[i].data(), static_cast<Py_ssize_t>(v[i].size()), "replace");
    if (!s) throw py::error_already_set();
    Py_XDECREF(data[i]);
    data[i] = s;
  }
  return out;
}

py::dict TreeColumnsDict(TreeColumns&& c) {
  py::dict d;
  const bool with_path = c.path.size() == c.node.size();
  d["node"] = ToArray(std::move(c.node));
  d["parent"] = ToArray(std::move(c.parent));
  d["depth"] = ToArray(std::move(c.depth));
  d["kind_code"] = ToArray(std::move(c.kind));
  std::vector<std::string_view> kinds;
  for (int k = 0; k < cct::kFrameKindCount; ++k) kinds.push_back(cct::FrameKindName(static_cast<cct::FrameKind>(k)));
  d["kind_names"] = StringList(kinds);
  auto categorical = [&](const char* key, Categorical& cat) {
    d[(std::string(key) + "_code").c_str()] = ToArray(std::move(cat.codes));
    d[(std::string(key) + "_names").c_str()] = StringList(cat.categories);
  };
  categorical("name", c.name);
  categorical("function", c.function);
  categorical("module", c.module);
  categorical("file", c.file);
  d["line"] = ToArray(std::move(c.line));
  if (with_path) d["path"] = ObjectStrings(c.path);
  if (!c.match.empty()) {
    py::array_t<bool> a(static_cast<py::ssize_t>(c.match.size()));
    bool* p = a.mutable_data();
    for (size_t i = 0; i < c.match.size(); ++i) p[i] = c.match[i] != 0;
    d["match"] = a;
  }
  py::list metrics;
  for (size_t i = 0; i < c.metric_names.size(); ++i) {
    metrics.append(py::make_tuple(c.metric_names[i], ToArray(std::move(c.inc[i])), ToArray(std::move(c.exc[i]))));
  }
  d["metrics"] = metrics;
  d["label"] = c.label;
  return d;
}

py::dict Tree(const std::string& selector, const std::string& db, const std::vector<std::string>& metrics,
              bool lines, bool merge_threads, const std::string& query_text, bool with_path) {
  TreeColumns columns;
  cct::Status status;
  {
    py::gil_scoped_release release;
    status = Guarded(db, [&]() -> cct::Status {
      query::LoadOptions load;
      load.keep_lines = lines;
      load.merge_threads = merge_threads;
      load.metrics = metrics;
      if (!metrics.empty()) load.median_metric = metrics.front();
      CCT_ASSIGN_OR_RETURN(query::Profile profile,
                           query::LoadProfile(selector, store::DefaultDatabasePath(db), load));
      // NAME=EXPR definitions resolve to NAME once defined.
      return BuildColumns(profile, metrics, query_text, with_path, columns);
    });
  }
  Check(status);
  return TreeColumnsDict(std::move(columns));
}

// The runs a selector names (ids, oldest first): db.run() checks its
// selector at once, as the tools do before they load anything.
// Opens the database read-only and closes it: cctdb.open's check (missing,
// not a database, damaged where opening reads, a newer format). Reads no
// run record: a long history costs nothing here.
void CheckOpens(const std::string& db) {
  cct::Status status;
  {
    py::gil_scoped_release release;
    status = Guarded(db, [&]() -> cct::Status {
      CCT_ASSIGN_OR_RETURN(auto database,
                           store::Database::Open(store::DefaultDatabasePath(db), store::Database::Mode::kRead));
      (void)database;
      return cct::Status::Ok();
    });
  }
  Check(status);
}

std::vector<uint32_t> SelectRunIds(const std::string& selector, const std::string& db) {
  std::vector<uint32_t> ids;
  cct::Status status;
  {
    py::gil_scoped_release release;
    status = Guarded(db, [&]() -> cct::Status {
      const std::string path = store::DefaultDatabasePath(db);
      CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(selector, path));
      CCT_ASSIGN_OR_RETURN(auto database, store::Database::Open(sel.db_path, store::Database::Mode::kRead));
      CCT_ASSIGN_OR_RETURN(std::vector<store::RunMeta> runs, store::SelectRuns(*database, sel));
      for (const store::RunMeta& r : runs) ids.push_back(r.id);
      return cct::Status::Ok();
    });
  }
  Check(status);
  return ids;
}

// The runs of the database (a selector's, when given), oldest first: each
// one's metadata as the store writes it (RunMeta::ToJson), its effective
// state and its invocation's root run, as one JSON array.
std::string Runs(const std::string& db, const std::string& selector) {
  std::string text;
  cct::Status status;
  {
    py::gil_scoped_release release;
    status = Guarded(db, [&]() -> cct::Status {
      const std::string path = store::DefaultDatabasePath(db);
      std::string db_path = path;
      std::optional<store::RunSelector> sel;
      if (!selector.empty()) {
        CCT_ASSIGN_OR_RETURN(sel, store::ParseSelector(selector, path));
        db_path = sel->db_path;
      }
      CCT_ASSIGN_OR_RETURN(auto database, store::Database::Open(db_path, store::Database::Mode::kRead));
      // A run by id reads its own record (and its root's), as cct-query's
      // selector does; every other listing reads them all once.
      const bool one = sel && sel->kind == store::RunSelector::Kind::kId && !sel->all_processes;
      std::vector<store::RunMeta> all, runs;
      if (!one) {
        CCT_ASSIGN_OR_RETURN(all, database->ListRuns());
      }
      if (sel) {
        CCT_ASSIGN_OR_RETURN(runs, store::SelectRuns(*database, *sel));
      } else {
        runs = all;
      }
      nlohmann::json out = nlohmann::json::array();
      for (const store::RunMeta& r : runs) {
        nlohmann::json j = r.ToJson();
        j["state"] = std::string(store::RunStateName(store::EffectiveState(r)));
        if (one) {
          CCT_ASSIGN_OR_RETURN(store::RunId root, store::InvocationRoot(*database, r));
          j["root_run"] = root;
        } else {
          j["root_run"] = store::InvocationRoot(r, all);
        }
        out.push_back(std::move(j));
      }
      text = out.dump();
      return cct::Status::Ok();
    });
  }
  Check(status);
  return text;
}

// cct-diff BASE CANDIDATE --format json -n LIMIT with these options.
std::string Diff(const std::string& base, const std::string& cand, const std::string& db,
                 const std::vector<std::string>& metrics, const std::optional<std::string>& threshold,
                 const std::optional<std::string>& min_abs, std::optional<double> alpha, bool normalize_kernels,
                 bool fold_recursion, bool normalize_total, bool merge_threads, size_t limit) {
  std::ostringstream out;
  cct::Status status;
  {
    py::gil_scoped_release release;
    status = Guarded(db, [&]() -> cct::Status {
      diff::DiffOptions opt;
      opt.metrics = metrics;
      if (threshold) {
        CCT_ASSIGN_OR_RETURN(opt.threshold, diff::ParsePercent(*threshold));
        if (opt.threshold < 0) return cct::InvalidArgument("threshold must be a percentage, 0 or more");
      }
      if (min_abs) {
        CCT_ASSIGN_OR_RETURN(opt.min_abs, diff::ParseMinAbs(*min_abs));
      }
      if (alpha) {
        if (!(*alpha > 0 && *alpha < 1)) return cct::InvalidArgument("alpha must be between 0 and 1");
        opt.alpha = *alpha;
      }
      opt.align.normalize.kernels = normalize_kernels;
      opt.align.fold_recursion = fold_recursion;
      opt.normalize_total = normalize_total;
      const std::string path = store::DefaultDatabasePath(db);
      query::LoadOptions load;
      load.merge_threads = merge_threads;
      if (!metrics.empty()) load.median_metric = metrics.front();
      load.metrics = metrics;
      const diff::TreeLoader loader = reports::ProfileTreeLoader(load);
      CCT_ASSIGN_OR_RETURN(diff::Side b, diff::LoadSide(base, path, loader));
      CCT_ASSIGN_OR_RETURN(diff::Side c, diff::LoadSide(cand, path, loader));
      CCT_ASSIGN_OR_RETURN(diff::DiffResult result, diff::Compare(b, c, opt));
      reports::DiffReportOptions ro;
      ro.format = reports::DiffFormat::kJson;
      ro.limit = limit;
      reports::WriteDiffReport(result, b, c, ro, out);
      return cct::Status::Ok();
    });
  }
  Check(status);
  return std::move(out).str();
}

// cct-query export SELECTOR --to FORMAT [-m M]...: the exporter's output,
// as bytes for the binary formats (pprof, perfetto), text for the others.
py::object Export(const std::string& selector, const std::string& db, const std::string& to,
                  const std::vector<std::string>& metrics) {
  std::ostringstream out;
  cct::Status status;
  bool binary = false;
  {
    py::gil_scoped_release release;
    status = Guarded(db, [&]() -> cct::Status {
      CCT_ASSIGN_OR_RETURN(const exporters::ExporterInfo* exporter, exporters::FindExporter(to));
      binary = exporter->binary;
      query::LoadOptions load;
      load.metrics = metrics;
      load.keep_lines = true;  // as cct-query export loads it
      CCT_ASSIGN_OR_RETURN(query::Profile profile,
                           query::LoadProfile(selector, store::DefaultDatabasePath(db), load));
      exporters::ExportOptions eo;
      eo.metrics = metrics;
      return exporters::WriteExport(profile, *exporter, eo, out);
    });
  }
  Check(status);
  if (binary) return py::bytes(std::move(out).str());
  return py::str(std::move(out).str());
}

}  // namespace

PYBIND11_MODULE(_cctdb, m) {
  m.doc() = "cctdb's C++ libraries for the cctdb Python package (use `import cctdb`)";
  InstallFaultGuard();
  static py::exception<CctError> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CctError& e) {
      PyErr_SetString(error.ptr(), e.message.c_str());
    }
  });

  m.def("default_db", [](const std::string& db) { return store::DefaultDatabasePath(db); }, py::arg("db") = "");
  m.def("runs", &Runs, py::arg("db"), py::arg("selector") = "");
  m.def("check_opens", &CheckOpens, py::arg("db"));
  m.def("select", &SelectRunIds, py::arg("selector"), py::arg("db"));
  m.def("tree", &Tree, py::arg("selector"), py::arg("db"), py::arg("metrics") = std::vector<std::string>(),
        py::arg("lines") = false, py::arg("merge_threads") = false, py::arg("query") = "", py::arg("path") = true);
  m.def(
      "report",
      [](const std::string& command, const std::vector<std::string>& args, const std::string& db,
         const std::vector<std::string>& metrics, std::optional<std::string> by, std::optional<std::string> format,
         size_t limit, int depth, double min_pct, const std::string& query, bool lines, bool merge_threads,
         bool exclusive, const std::vector<std::pair<std::string, std::string>>& operations,
         std::optional<std::string> name, const std::map<std::string, std::string>& tags, bool replace,
         std::optional<std::string> title, std::optional<std::string> thread, std::optional<std::string> start,
         std::optional<std::string> end, std::optional<double> bucket_ms, std::optional<std::string> range) {
        ReportArgs a;
        a.metrics = metrics;
        a.by = std::move(by);
        a.format = std::move(format);
        a.limit = limit;
        a.depth = depth;
        a.min_pct = min_pct;
        a.query = query;
        a.lines = lines;
        a.merge_threads = merge_threads;
        a.exclusive = exclusive;
        a.operations = operations;
        a.name = std::move(name);
        a.tags = tags;
        a.replace = replace;
        a.title = std::move(title);
        a.thread = std::move(thread);
        a.from = std::move(start);
        a.until = std::move(end);
        a.bucket_ms = bucket_ms;
        a.range = std::move(range);
        return RunReport(command, args, db, a);
      },
      py::arg("command"), py::arg("args"), py::arg("db"), py::arg("metrics") = std::vector<std::string>(),
      py::arg("by") = py::none(), py::arg("format") = py::none(), py::arg("limit") = 20, py::arg("depth") = -1,
      py::arg("min_pct") = 0.0, py::arg("query") = "", py::arg("lines") = false, py::arg("merge_threads") = false,
      py::arg("exclusive") = false,
      py::arg("operations") = std::vector<std::pair<std::string, std::string>>(), py::arg("name") = py::none(),
      py::arg("tags") = std::map<std::string, std::string>(), py::arg("replace") = false,
      py::arg("title") = py::none(), py::arg("thread") = py::none(), py::arg("start") = py::none(),
      py::arg("end") = py::none(), py::arg("bucket_ms") = py::none(), py::arg("range") = py::none());
  m.def("diff", &Diff, py::arg("base"), py::arg("candidate"), py::arg("db"),
        py::arg("metrics") = std::vector<std::string>(), py::arg("threshold") = py::none(),
        py::arg("min_abs") = py::none(), py::arg("alpha") = py::none(), py::arg("normalize_kernels") = false,
        py::arg("fold_recursion") = false, py::arg("normalize_total") = false, py::arg("merge_threads") = false,
        py::arg("limit") = 0);
  m.def("export", &Export, py::arg("selector"), py::arg("db"), py::arg("to"),
        py::arg("metrics") = std::vector<std::string>());
}
