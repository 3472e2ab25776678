// Helpers every importer shares: reading the input, resolving --unit, and
// storing an imported tree as a new run.
#include "importers/importer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <cerrno>
#include <cstring>

#include "cct/metric.h"
#include "cct/tree_ops.h"
#include "cctdb_config.h"
#include "store/database.h"
#include "store/fault_guard.h"

namespace importers {

using cct::Result;
using cct::Status;

Result<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return cct::NotFound(path + ": no such file");
    return cct::IoError(path + ": " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return cct::IoError(path + ": not a regular file");
  }
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  // Files that grow or report no size (pipes, /proc) are read to the end.
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

Status ResolveImportUnit(const std::string& metric, const std::optional<std::string>& unit, cct::Unit& out,
                         double& scale) {
  scale = 1;
  const cct::MetricDesc* known = cct::FindStandardMetric(metric);
  if (!unit) {
    out = known ? known->unit : cct::Unit::kCount;
    return Status::Ok();
  }
  const std::string& u = *unit;
  if (u == "ns") out = cct::Unit::kNanoseconds;
  else if (u == "us") { out = cct::Unit::kNanoseconds; scale = 1e3; }
  else if (u == "ms") { out = cct::Unit::kNanoseconds; scale = 1e6; }
  else if (u == "s") { out = cct::Unit::kNanoseconds; scale = 1e9; }
  else if (auto parsed = cct::ParseUnit(u)) out = *parsed;
  else return cct::InvalidArgument("unknown unit '" + u + "' (expected ns, us, ms, s, bytes, count, percent or 1)");
  if (known && known->unit != out)
    return cct::InvalidArgument("metric '" + metric + "' is measured in " + std::string(cct::UnitName(known->unit)) +
                                ", not " + u);
  return Status::Ok();
}

namespace {

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

Status RejectOptions(const ImportRequest& request, const std::vector<std::string>& options, const std::string& format) {
  for (const std::string& o : options)
    if (request.given.count(o)) return cct::InvalidArgument("--" + o + " does not apply to --from " + format);
  return Status::Ok();
}

Result<ImportReport> ImportNewRun(const ImportRequest& request, const std::string& format, ReadImport read) {
  if (request.given.count("run")) return cct::InvalidArgument("--run applies to --from ncu-csv only");
  CCT_ASSIGN_OR_RETURN(ImportResult imported, read(request.file, request.options));

  store::RunMeta meta;
  std::string base = request.file;
  while (base.size() > 1 && base.back() == '/') base.pop_back();  // a database directory given as DIR/
  meta.name = request.name ? *request.name : std::string(cct::BaseName(base));
  meta.source = "import:" + format;
  meta.state = store::RunState::kComplete;
  meta.start_time_ns = NowNs();
  meta.command = {request.file};
  meta.tags = request.tags;
  meta.host = store::HostName();
  meta.collector_version = CCTDB_VERSION;
  if (imported.skipped > 0) meta.diagnostics["import_skipped_records"] = static_cast<int64_t>(imported.skipped);

  store::FaultGuard guard(request.tool, request.db_path);
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(request.db_path, store::Database::Mode::kWrite, request.db_mode));
  CCT_RETURN_IF_ERROR(db->CreateRun(meta, &imported.tree));

  ImportReport report;
  if (imported.skipped > 0)
    report.notes.push_back("skipped " + std::to_string(imported.skipped) + " malformed record(s); first: " +
                           imported.first_skip);
  report.summary = "imported " + request.file + " as run " + std::to_string(meta.id) + " '" + meta.name + "' into " +
                   request.db_path + ": " + std::to_string(imported.tree.size()) + " nodes, " +
                   std::to_string(imported.records) + " records\n";
  return report;
}

}  // namespace importers
