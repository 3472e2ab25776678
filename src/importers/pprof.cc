// pprof profiles (profile.proto, gzipped or not) from any producer: Go's
// runtime/pprof and `go tool pprof -proto`, gperftools' pprof, cct-query's
// own pprof export, ...
//
// Mapping onto the calling-context tree:
// - each sample type becomes an additive metric: "cpu"/"cputime" in a time
//   unit is cputime, "wall" realtime, "samples" samples, other names stay;
//   units through ResolveImportUnit (nanoseconds..seconds stored as ns,
//   bytes, count);
// - a location's lines (innermost first) become function frames, the
//   outermost a plain function, the ones inlined into it kFrameInlined
//   children, as cct-record's symbolizer builds them; each function keeps
//   its name, filename and start line, and its location's mapping file as
//   module;
// - the leaf location's line number becomes a source-line node under its
//   innermost function (cct-record keeps the leaf's line only, so callers'
//   call-site lines are not kept);
// - a "thread", "thread_name", "thread_id", "tid" or "goroutine" label puts
//   the sample under a thread node; functions named "[thread] X",
//   "[nvtx] X", "[gpu-op] X", "[kernel] X" (how cct-query's export keeps
//   non-function frames visible) become frames of that kind again.
//
// The file is gunzipped as libprotobuf parses it, chunk by chunk; the parsed
// message is held whole (the string table and the locations a sample names
// may come after it), so its size is bounded (kMaxPprofBytes): decompression
// stops at the limit. Malformed input
// (no protobuf, ids or string indices that do not exist) is kBadInput naming
// the file and what is wrong; --skip-bad-lines skips bad samples only.
#include <zlib.h>

#include <google/protobuf/io/zero_copy_stream.h>

#include <cmath>
#include <functional>
#include <unordered_map>

#include "cct/metric.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "profile.pb.h"

namespace importers {

using cct::FrameId;
using cct::FrameKind;
using cct::NodeId;
using cct::Result;
using cct::Status;

namespace {

namespace ppb = perftools::profiles;

// The bytes of a profile as libprotobuf parses them: read chunk by chunk
// from `next` (the file, or bytes in memory) and gunzipped on the fly when
// they start with gzip's magic (members one after another, as gzip allows),
// so neither the compressed nor the decompressed file is ever held whole.
// More than `limit` bytes (decompressed) ends the stream with an error, as
// does a damaged or cut-short gzip stream: protobuf then sees the end of its
// input, and status() says why.
class PprofInputStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  using NextChunk = std::function<Result<std::string_view>()>;
  PprofInputStream(std::string where, NextChunk next, size_t limit)
      : where_(std::move(where)), next_(std::move(next)), limit_(limit) {}
  ~PprofInputStream() override {
    if (gzip_) inflateEnd(&zs_);
  }

  bool Next(const void** data, int* size) override {
    if (backed_up_ > 0) {
      *data = last_.data() + last_.size() - backed_up_;
      *size = static_cast<int>(backed_up_);
      backed_up_ = 0;
      return true;
    }
    std::string_view got;
    if (!status_.ok() || !Produce(got) || got.empty()) return false;
    count_ += got.size();
    if (count_ > limit_) {
      status_ = cct::BadInput(where_ + ": " + (gzip_ ? "decompresses to" : "holds") + " more than " +
                              std::to_string(limit_ >> 20) + " MiB, the most a pprof profile may hold here");
      return false;
    }
    last_ = got;
    *data = got.data();
    *size = static_cast<int>(got.size());
    return true;
  }
  void BackUp(int count) override { backed_up_ = static_cast<size_t>(count); }
  bool Skip(int count) override {
    const void* data;
    int size;
    while (count > 0 && Next(&data, &size)) {
      if (size > count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return count == 0;
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(count_ - backed_up_); }

  const Status& status() const { return status_; }
  bool gzipped() const { return gzip_; }

 private:
  // The next piece of the profile's bytes into `out` (empty at the end).
  bool Produce(std::string_view& out) {
    if (!started_) {
      started_ = true;
      if (!Refill()) return false;
      gzip_ = in_.size() >= 2 && static_cast<uint8_t>(in_[0]) == 0x1f && static_cast<uint8_t>(in_[1]) == 0x8b;
      if (gzip_ && inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) {
        gzip_ = false;
        status_ = Status(cct::ErrorCode::kInternal, "zlib: inflateInit2 failed");
        return false;
      }
    }
    if (!gzip_) {
      if (in_.empty() && !Refill()) return false;
      out = in_;
      in_ = {};
      return true;
    }
    out_buf_.resize(size_t{256} << 10);
    zs_.next_out = reinterpret_cast<Bytef*>(out_buf_.data());
    zs_.avail_out = static_cast<uInt>(out_buf_.size());
    while (zs_.avail_out == out_buf_.size()) {  // until something came out
      if (in_.empty()) {
        if (!Refill()) return false;
        if (in_.empty()) {  // the end of the file
          if (!member_done_)
            status_ = cct::BadInput(where_ + ": the gzip stream is cut short (after " + std::to_string(count_) +
                                    " decompressed bytes)");
          out = {};
          return status_.ok();
        }
      }
      if (member_done_) {  // another gzip member follows
        inflateReset(&zs_);
        member_done_ = false;
      }
      zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in_.data()));
      zs_.avail_in = static_cast<uInt>(in_.size());
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      consumed_ += in_.size() - zs_.avail_in;
      in_ = in_.substr(in_.size() - zs_.avail_in);
      if (rc == Z_STREAM_END) member_done_ = true;
      else if (rc != Z_OK && !(rc == Z_BUF_ERROR && in_.empty())) {  // no progress with input left: never loop
        status_ = cct::BadInput(where_ + ": not a valid gzip stream at compressed byte " + std::to_string(consumed_) +
                                " (" + (zs_.msg ? zs_.msg : "zlib error") + ")");
        return false;
      }
    }
    out = std::string_view(out_buf_.data(), out_buf_.size() - zs_.avail_out);
    return true;
  }
  bool Refill() {
    Result<std::string_view> chunk = next_();
    if (!chunk.ok()) {
      status_ = chunk.status();
      return false;
    }
    in_ = *chunk;
    return true;
  }

  std::string where_;
  NextChunk next_;
  size_t limit_;
  Status status_ = Status::Ok();
  bool started_ = false, gzip_ = false, member_done_ = false;
  z_stream zs_{};
  std::string_view in_;  // compressed (or raw) bytes not yet used
  uint64_t consumed_ = 0;  // compressed bytes used
  std::string out_buf_;
  std::string_view last_;  // what Next() returned last, for BackUp()
  size_t count_ = 0, backed_up_ = 0;
};

// A pprof unit as ResolveImportUnit's --unit value; nullopt: count.
std::optional<std::string> PprofImportUnit(std::string_view unit) {
  if (unit == "nanoseconds" || unit == "nanosecond" || unit == "ns") return "ns";
  if (unit == "microseconds" || unit == "microsecond" || unit == "us") return "us";
  if (unit == "milliseconds" || unit == "millisecond" || unit == "ms") return "ms";
  if (unit == "seconds" || unit == "second" || unit == "s") return "s";
  if (unit == "bytes" || unit == "byte" || unit == "B") return "bytes";
  if (unit == "percent") return "percent";
  if (unit == "units") return "1";  // cct-query's export of a dimensionless metric
  return std::nullopt;               // count, objects, samples, "": a number of things
}

// The metric a sample type becomes: pprof's usual names for CPU and wall
// time and sample counts are cctdb's catalog names.
std::string PprofMetricName(std::string_view type, const std::optional<std::string>& unit) {
  const bool time = unit && (*unit == "ns" || *unit == "us" || *unit == "ms" || *unit == "s");
  if (time && (type == "cpu" || type == "cputime" || type == "cpu-time")) return "cputime";
  if (time && (type == "wall" || type == "realtime" || type == "wall-time")) return "realtime";
  if (!time && (type == "samples" || type == "sample")) return "samples";
  return std::string(type);
}

std::string PprofAddressName(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Builds the tree from a parsed profile. Tables are checked as they are
// indexed; samples as they are added.
class PprofReader {
 public:
  PprofReader(const std::string& where, const ppb::Profile& p, const ImportOptions& options, ImportResult& result)
      : where_(where), p_(p), options_(options), result_(result), tree_(result.tree) {}

  Status Read() {
    if (p_.string_table_size() == 0) return Bad("the string table is empty (a profile.proto starts it with \"\")");
    if (!p_.string_table(0).empty()) return Bad("string_table[0] is not \"\"");
    if (p_.sample_type_size() == 0) return Bad("no sample types (not a pprof profile?)");
    CCT_RETURN_IF_ERROR(Metrics());
    CCT_RETURN_IF_ERROR(Index());
    for (int i = 0; i < p_.sample_size(); ++i) {
      const Status s = Sample(i);
      if (s.ok()) {
        ++result_.records;
        continue;
      }
      if (!options_.skip_bad_lines) return s;
      if (result_.skipped++ == 0) result_.first_skip = s.message();
    }
    return Status::Ok();
  }

 private:
  Status Bad(const std::string& why) const { return cct::BadInput(where_ + ": " + why); }

  Status Str(int64_t index, const char* what, std::string_view& out) const {
    if (index < 0 || index >= p_.string_table_size())
      return Bad(std::string(what) + " is string " + std::to_string(index) + ", outside the string table (" +
                 std::to_string(p_.string_table_size()) + " strings)");
    out = p_.string_table(static_cast<int>(index));
    return Status::Ok();
  }

  Status Metrics() {
    for (int i = 0; i < p_.sample_type_size(); ++i) {
      std::string_view type, unit;
      const std::string what = "sample_type " + std::to_string(i);
      CCT_RETURN_IF_ERROR(Str(p_.sample_type(i).type(), (what + "'s type").c_str(), type));
      CCT_RETURN_IF_ERROR(Str(p_.sample_type(i).unit(), (what + "'s unit").c_str(), unit));
      if (type.empty()) return Bad(what + " has no name");
      const std::optional<std::string> u = PprofImportUnit(unit);
      std::string name = PprofMetricName(type, u);
      cct::Unit stored;
      double scale = 1;
      if (!ResolveImportUnit(name, u, stored, scale).ok()) {
        // A catalog name in another unit ("samples" in nanoseconds): kept
        // under the producer's name and unit instead.
        name = "pprof:" + std::string(type);
        CCT_RETURN_IF_ERROR(ResolveImportUnit(name, u, stored, scale));
      }
      if (tree_.metrics().Find(name) != cct::kNoMetric)
        return Bad(what + ": " + std::string(type) + " is metric " + name + ", which an earlier sample type is");
      auto id = RegisterImportedMetric(
          tree_, name, stored, "imported from pprof sample type " + std::string(type) + " (" + std::string(unit) + ")");
      if (!id.ok()) return Bad(what + ": " + id.status().message());
      metrics_.push_back(*id);
      scales_.push_back(scale);
    }
    return Status::Ok();
  }

  Status Index() {
    for (int i = 0; i < p_.mapping_size(); ++i) {
      const ppb::Mapping& m = p_.mapping(i);
      std::string_view file;
      CCT_RETURN_IF_ERROR(Str(m.filename(), ("mapping " + std::to_string(m.id()) + "'s filename").c_str(), file));
      if (m.id() == 0) return Bad("mapping " + std::to_string(i) + " has id 0");
      if (!mappings_.emplace(m.id(), file).second) return Bad("mapping id " + std::to_string(m.id()) + " appears twice");
    }
    for (int i = 0; i < p_.function_size(); ++i) {
      const ppb::Function& f = p_.function(i);
      const std::string what = "function " + std::to_string(f.id());
      Fn fn;
      std::string_view system;
      CCT_RETURN_IF_ERROR(Str(f.name(), (what + "'s name").c_str(), fn.name));
      CCT_RETURN_IF_ERROR(Str(f.system_name(), (what + "'s system name").c_str(), system));
      CCT_RETURN_IF_ERROR(Str(f.filename(), (what + "'s filename").c_str(), fn.file));
      if (fn.name.empty()) fn.name = system;
      fn.start_line = f.start_line() > 0 && f.start_line() <= UINT32_MAX ? static_cast<uint32_t>(f.start_line()) : 0;
      if (f.id() == 0) return Bad("function " + std::to_string(i) + " has id 0");
      if (!functions_.emplace(f.id(), fn).second) return Bad(what + " appears twice");
    }
    for (int i = 0; i < p_.location_size(); ++i) {
      const ppb::Location& l = p_.location(i);
      const std::string what = "location " + std::to_string(l.id());
      if (l.id() == 0) return Bad("location " + std::to_string(i) + " has id 0");
      if (l.mapping_id() != 0 && !mappings_.count(l.mapping_id()))
        return Bad(what + ": mapping id " + std::to_string(l.mapping_id()) + " does not exist");
      for (const ppb::Line& line : l.line())
        if (!functions_.count(line.function_id()))
          return Bad(what + ": function id " + std::to_string(line.function_id()) + " does not exist");
      if (!locations_.emplace(l.id(), i).second) return Bad(what + " appears twice");
    }
    location_frames_.resize(static_cast<size_t>(p_.location_size()));
    return Status::Ok();
  }

  struct Fn {
    std::string_view name, file;
    uint32_t start_line = 0;
  };
  struct LocFrames {
    bool built = false;
    std::vector<FrameId> frames;    // outermost first
    FrameId line = cct::FlatIndex::kNone;  // the innermost line's source-line frame, if it has a line
  };

  // A location's frames, built once.
  const LocFrames& Frames(int index) {
    LocFrames& lf = location_frames_[static_cast<size_t>(index)];
    if (lf.built) return lf;
    lf.built = true;
    const ppb::Location& l = p_.location(index);
    std::string_view module;
    if (l.mapping_id() != 0) module = mappings_.at(l.mapping_id());
    if (l.line_size() == 0) {
      // Not symbolized: the address is all there is.
      lf.frames.push_back(tree_.InternFrame(FrameKind::kFunction, PprofAddressName(l.address()), module));
      return lf;
    }
    for (int k = l.line_size() - 1; k >= 0; --k) {
      const Fn& fn = functions_.at(l.line(k).function_id());
      FrameKind kind = FrameKind::kFunction;
      std::string_view name = fn.name;
      if (name == cct::kPartialCallPathName) {
        kind = FrameKind::kUnknown;
      } else if (name.size() > 3 && name.front() == '[') {
        // "[nvtx] step": a frame cct-query's export wrote for a non-function node.
        const size_t close = name.find("] ");
        if (close != std::string_view::npos) {
          const std::optional<FrameKind> k = cct::ParseFrameKind(name.substr(1, close - 1));
          if (k && *k != FrameKind::kFunction && *k != FrameKind::kRoot && *k != FrameKind::kLine) {
            kind = *k;
            name = name.substr(close + 2);
          }
        }
      }
      // Code has a module; code and loops have a file and line; threads,
      // NVTX ranges and GPU placeholders have neither.
      const bool code = kind == FrameKind::kFunction || kind == FrameKind::kKernel;
      const bool located = code || kind == FrameKind::kLoop;
      const uint8_t flags = kind == FrameKind::kFunction && k != l.line_size() - 1 ? cct::kFrameInlined : 0;
      lf.frames.push_back(tree_.InternFrame(kind, name, code ? module : std::string_view{},
                                            located ? fn.file : std::string_view{},
                                            located ? fn.start_line : 0, flags));
    }
    const ppb::Line& inner = l.line(0);
    const FrameKind inner_kind = tree_.frames().kind(lf.frames.back());
    if (inner.line() > 0 && inner.line() <= UINT32_MAX && inner_kind == FrameKind::kFunction) {
      const Fn& fn = functions_.at(inner.function_id());
      const uint32_t line = static_cast<uint32_t>(inner.line());
      lf.line = tree_.InternFrame(FrameKind::kLine, cct::LineName(fn.file, line), module, fn.file, line);
    }
    return lf;
  }

  // The thread a sample's labels name, "" when none does.
  Status ThreadOf(const ppb::Sample& s, const std::string& what, std::string& out) const {
    int best = 99;
    for (const ppb::Label& label : s.label()) {
      std::string_view key, str;
      CCT_RETURN_IF_ERROR(Str(label.key(), (what + ": a label's key").c_str(), key));
      CCT_RETURN_IF_ERROR(Str(label.str(), (what + ": label " + std::string(key) + "'s value").c_str(), str));
      int rank;
      std::string prefix;
      if (key == "thread" || key == "thread_name" || key == "threadname") rank = 0;
      else if (key == "thread_id" || key == "tid" || key == "thread id") rank = 1, prefix = "thread ";
      else if (key == "goroutine") rank = 2, prefix = "goroutine ";
      else continue;
      if (rank >= best) continue;
      if (!str.empty()) out = rank == 0 ? std::string(str) : prefix + std::string(str);
      else out = (rank == 0 ? "thread " : prefix) + std::to_string(label.num());
      best = rank;
    }
    return Status::Ok();
  }

  Status Sample(int i) {
    const ppb::Sample& s = p_.sample(i);
    const std::string what = "sample " + std::to_string(i);
    if (s.value_size() != static_cast<int>(metrics_.size()))
      return Bad(what + " has " + std::to_string(s.value_size()) + " values for " + std::to_string(metrics_.size()) +
                 " sample types");
    stack_.clear();
    for (int k = s.location_id_size() - 1; k >= 0; --k) {
      auto it = locations_.find(s.location_id(k));
      if (it == locations_.end())
        return Bad(what + ": location id " + std::to_string(s.location_id(k)) + " does not exist");
      stack_.push_back(it->second);
    }
    NodeId node = cct::kRootNode;
    const bool thread_frame =
        !stack_.empty() && tree_.frames().kind(Frames(stack_.front()).frames.front()) == FrameKind::kThread;
    if (!thread_frame) {
      std::string thread;
      CCT_RETURN_IF_ERROR(ThreadOf(s, what, thread));
      if (!thread.empty()) node = tree_.InternChild(node, tree_.InternFrame(FrameKind::kThread, thread));
    }
    for (size_t k = 0; k < stack_.size(); ++k) {
      const LocFrames& lf = Frames(stack_[k]);
      for (FrameId f : lf.frames) node = tree_.InternChild(node, f);
      if (k + 1 == stack_.size() && lf.line != cct::FlatIndex::kNone) node = tree_.InternChild(node, lf.line);
    }
    for (size_t m = 0; m < metrics_.size(); ++m) {
      const int64_t v = s.value(static_cast<int>(m));
      if (v != 0) tree_.AddValue(node, metrics_[m], static_cast<double>(v) * scales_[m]);
    }
    return Status::Ok();
  }

  const std::string& where_;
  const ppb::Profile& p_;
  const ImportOptions& options_;
  ImportResult& result_;
  cct::Tree& tree_;
  std::vector<cct::MetricId> metrics_;
  std::vector<double> scales_;
  std::unordered_map<uint64_t, std::string_view> mappings_;
  std::unordered_map<uint64_t, Fn> functions_;
  std::unordered_map<uint64_t, int> locations_;  // id -> index in p_.location
  std::vector<LocFrames> location_frames_;
  std::vector<int> stack_;  // location indexes, outermost first
};

}  // namespace

namespace {

Result<ImportResult> ImportPprofStream(PprofInputStream& in, const std::string& where, const ImportOptions& options) {
  ppb::Profile profile;
  const bool parsed = profile.ParseFromZeroCopyStream(&in);
  CCT_RETURN_IF_ERROR(in.status());  // the gzip stream or the limit ended the input
  if (!parsed)
    return cct::BadInput(where + ": not a pprof profile (profile.proto does not parse from its " +
                         std::to_string(in.ByteCount()) + (in.gzipped() ? " decompressed" : "") + " bytes)");
  ImportResult result;
  PprofReader reader(where, profile, options, result);
  CCT_RETURN_IF_ERROR(reader.Read());
  return result;
}

}  // namespace

Result<ImportResult> ImportPprofBytes(std::string_view bytes, const std::string& where, const ImportOptions& options,
                                      size_t max_bytes) {
  // Handed out in pieces, as a file is, so the stream's chunk joins are tested too.
  std::string_view rest = bytes;
  PprofInputStream in(where, [&rest]() -> Result<std::string_view> {
    const std::string_view piece = rest.substr(0, size_t{64} << 10);
    rest.remove_prefix(piece.size());
    return piece;
  }, max_bytes);
  return ImportPprofStream(in, where, options);
}

Result<ImportResult> ImportPprof(const std::string& path, const ImportOptions& options) {
  CCT_ASSIGN_OR_RETURN(auto file, InputFileBuf::Open(path));
  PprofInputStream in(path, [&file]() { return file->Next(); }, kMaxPprofBytes);
  return ImportPprofStream(in, path, options);
}

Result<ImportReport> ImportPprofRun(const ImportRequest& request) {
  CCT_RETURN_IF_ERROR(RejectOptions(request, {"metric", "unit"}, "pprof"));
  return ImportNewRun(request, "pprof", &ImportPprof);
}

}  // namespace importers
