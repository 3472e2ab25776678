// Helpers every importer shares: reading the input, resolving --unit, and
// storing an imported tree as a new run.
#include "importers/importer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cct/metric.h"
#include "cct/text.h"
#include "cct/tree_ops.h"
#include "cctdb_config.h"
#include "store/database.h"
#include "store/fault_guard.h"

namespace importers {

using cct::Result;
using cct::Status;

namespace {

std::string Mib(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

Status PieceChecker::Feed(const char* data, size_t len) {
  if (limit_.max_bytes == 0 || len == 0) {
    offset_ += len;
    return Status::Ok();
  }
  const size_t max = limit_.max_bytes;
  if (limit_.kind == PieceKind::kJsonTokens) {
    // Byte by byte: strings (with their escapes) and the runs of number
    // and literal characters between structure and white space.
    for (size_t i = 0; i < len; ++i, ++offset_) {
      const char c = data[i];
      if (c == '\n') ++lines_;
      bool closes = false;  // this byte is a string's closing quote: still part of it
      if (in_string_) {
        if (escaped_) escaped_ = false;
        else if (c == '\\') escaped_ = true;
        else if (c == '"') in_string_ = false, closes = true;
      } else if (c == '"') {
        in_string_ = in_piece_ = true;
        piece_start_ = offset_;
        piece_line_ = lines_;
      } else if (c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':' || c == ' ' || c == '\n' ||
                 c == '\t' || c == '\r') {
        in_piece_ = false;
      } else if (!in_piece_) {
        in_piece_ = true;
        piece_start_ = offset_;
        piece_line_ = lines_;
      }
      if (in_piece_ && offset_ + 1 - piece_start_ > max)
        return cct::BadInput(path_ + ": a JSON " + (in_string_ || closes ? "string" : "number or literal") +
                             " at line " + std::to_string(piece_line_) + " is longer than " + Mib(max) +
                             " (the limit for one value)");
      if (closes) in_piece_ = false;
    }
    return Status::Ok();
  }
  // Lines and markup: each piece that ends in this chunk, then the one
  // still open at its end.
  const bool xml = limit_.kind == PieceKind::kXmlMarkup;
  auto too_long = [&] {
    if (xml)
      return cct::BadInput(path_ + ": a tag or text at line " + std::to_string(piece_line_) + " is longer than " +
                           Mib(max) + " (the limit for one piece of markup)");
    return cct::BadInput(path_ + ": line " + std::to_string(piece_line_) + " is longer than " + Mib(max) +
                         " (the limit for one line)");
  };
  const char* p = data;
  const char* const end = data + len;
  while (p < end) {
    const char* d;
    if (xml) {
      d = std::find_if(p, end, [](char c) { return c == '<' || c == '>'; });
      lines_ += static_cast<uint64_t>(std::count(p, d, '\n'));
    } else {
      d = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      if (!d) d = end;
    }
    if (d == end) break;
    const uint64_t at = offset_ + static_cast<uint64_t>(d - data);
    if (at - piece_start_ > max) return too_long();
    if (!xml) ++lines_;
    piece_start_ = at + 1;
    piece_line_ = lines_;
    p = d + 1;
  }
  offset_ += len;
  if (offset_ - piece_start_ > max) return too_long();
  return Status::Ok();
}

Result<int> OpenInputFile(const std::string& path) {
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
  return fd;
}

Result<std::string> ReadFile(const std::string& path, std::optional<PieceLimit> limit) {
  CCT_ASSIGN_OR_RETURN(const int fd, OpenInputFile(path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) st.st_size = 0;
  std::string data;
  // The announced size up front, but only up to a piece's limit when there
  // is one: the file may be one endless piece.
  const size_t announced = static_cast<size_t>(st.st_size);
  data.reserve(limit ? std::min(announced, limit->max_bytes) : announced);
  PieceChecker checker(path, limit.value_or(PieceLimit{}));
  // Files that grow or report no size (pipes, /proc) are read to the end.
  std::string buf(size_t{1} << 20, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (Status fed = checker.Feed(buf.data(), static_cast<size_t>(n)); !fed.ok()) {
      ::close(fd);
      return fed;
    }
    data.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

InputFileBuf::InputFileBuf(int fd, std::string path, uint64_t size, std::optional<PieceLimit> limit)
    : fd_(fd),
      path_(std::move(path)),
      size_(size),
      progress_(output::Progress::ForStderr("importing " + path_)),
      buf_(size_t{1} << 20) {
  if (limit) checker_.emplace(path_, *limit);
  progress_.SetTotal(size_);
}

InputFileBuf::~InputFileBuf() {
  progress_.Finish();
  ::close(fd_);
}

Result<std::unique_ptr<InputFileBuf>> InputFileBuf::Open(const std::string& path, std::optional<PieceLimit> limit) {
  CCT_ASSIGN_OR_RETURN(const int fd, OpenInputFile(path));
  struct stat st {};
  const uint64_t size = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  return std::unique_ptr<InputFileBuf>(new InputFileBuf(fd, path, size, limit));
}

bool InputFileBuf::Fill() {
  if (!status_.ok()) return false;
  ssize_t n;
  do n = ::read(fd_, buf_.data(), buf_.size());
  while (n < 0 && errno == EINTR);
  if (n < 0) status_ = cct::IoError(path_ + ": " + std::strerror(errno));
  if (n <= 0) return false;
  if (checker_) status_ = checker_->Feed(buf_.data(), static_cast<size_t>(n));
  if (!status_.ok()) return false;
  done_ += static_cast<uint64_t>(n);
  // One chunk is a megabyte: tick on each, the bar moves smoothly.
  progress_.Update(done_);
  progress_.Tick();
  setg(buf_.data(), buf_.data(), buf_.data() + n);
  return true;
}

InputFileBuf::int_type InputFileBuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (!Fill()) return traits_type::eof();
  return traits_type::to_int_type(*gptr());
}

Result<std::string_view> InputFileBuf::Next() {
  if (gptr() < egptr()) {  // what underflow() read but nobody took
    std::string_view rest(gptr(), static_cast<size_t>(egptr() - gptr()));
    setg(eback(), egptr(), egptr());
    return rest;
  }
  if (!Fill()) {
    if (!status_.ok()) return status_;
    return std::string_view();
  }
  std::string_view chunk(gptr(), static_cast<size_t>(egptr() - gptr()));
  setg(eback(), egptr(), egptr());
  return chunk;
}

Status LineSplitter::Feed(std::string_view chunk) {
  CCT_RETURN_IF_ERROR(checker_.Feed(chunk.data(), chunk.size()));
  while (!chunk.empty()) {
    const size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      carry_.append(chunk);
      break;
    }
    if (carry_.empty()) {
      CCT_RETURN_IF_ERROR(line_(chunk.substr(0, nl)));
    } else {
      carry_.append(chunk.substr(0, nl));
      CCT_RETURN_IF_ERROR(line_(carry_));
      carry_.clear();
    }
    chunk.remove_prefix(nl + 1);
  }
  return Status::Ok();
}

Status LineSplitter::End() {
  if (carry_.empty()) return Status::Ok();
  Status s = line_(carry_);
  carry_.clear();
  return s;
}

Status LineSplitter::FeedAll(InputFileBuf& file) {
  for (;;) {
    CCT_ASSIGN_OR_RETURN(const std::string_view chunk, file.Next());
    if (chunk.empty()) break;
    CCT_RETURN_IF_ERROR(Feed(chunk));
  }
  return End();
}

Status JsonSyntaxError(const std::string& path, size_t byte, const std::string& what) {
  std::string_view why = what;
  if (const size_t c = why.find("syntax error"); c != std::string_view::npos) why = why.substr(c);
  // nlohmann quotes what it last read: a whole overlong token, at worst.
  return cct::BadInput(path + ": not valid JSON at byte " + std::to_string(byte) + " (" + cct::ElideMiddle(why, 200, true) + ")");
}

Result<cct::MetricId> RegisterImportedMetric(cct::Tree& tree, const std::string& name, cct::Unit unit,
                                             const std::string& description) {
  cct::MetricDesc desc;
  const cct::MetricDesc* known = cct::FindStandardMetric(name);
  if (known && known->kind == cct::MetricKind::kAdditive) desc = *known;
  desc.name = name;
  desc.unit = unit;
  desc.kind = cct::MetricKind::kAdditive;
  desc.formula.clear();
  if (desc.description.empty()) desc.description = description;
  return tree.metrics().Register(desc);
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
  meta.tags = imported.tags;
  for (const auto& [k, v] : request.tags) meta.tags[k] = v;
  if (!imported.user.empty()) meta.user = imported.user;
  if (imported.start_time_ns != 0) meta.start_time_ns = imported.start_time_ns;
  if (!imported.globals.empty()) {
    nlohmann::json& g = meta.extra["import_globals"];
    for (const auto& [k, v] : imported.globals) g[k] = v;
  }
  meta.host = store::HostName();
  meta.collector_version = CCTDB_VERSION;
  if (imported.skipped > 0) meta.diagnostics["import_skipped_records"] = static_cast<int64_t>(imported.skipped);

  store::FaultGuard guard(request.tool, request.db_path);
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(request.db_path, store::Database::Mode::kWrite, request.db_mode));
  CCT_RETURN_IF_ERROR(db->CreateRun(meta, &imported.tree));

  ImportReport report;
  report.notes = std::move(imported.notes);
  if (imported.skipped > 0)
    report.notes.push_back("skipped " + std::to_string(imported.skipped) + " malformed record(s); first: " +
                           imported.first_skip);
  report.summary = "imported " + request.file + " as run " + std::to_string(meta.id) + " '" + meta.name + "' into " +
                   request.db_path + ": " + std::to_string(imported.tree.size()) + " nodes, " +
                   std::to_string(imported.records) + " records\n";
  return report;
}

}  // namespace importers
