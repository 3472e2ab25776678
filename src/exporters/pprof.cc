// pprof export: a gzipped profile.proto that `go tool pprof` and other pprof
// readers open.
//
// Mapping of a calling-context tree onto pprof's model:
// - one sample type per exported additive metric (pprof values are int64:
//   times in nanoseconds, sizes in bytes, counts; other numbers rounded);
// - one sample per node with an exclusive value, its stack the node's path,
//   leaf first;
// - a location is a frame together with the inlined frames (kFrameInlined)
//   directly below it: their functions become the lines of one location,
//   innermost first, as pprof describes inlining; a source-line node (kLine)
//   sets the line number of its function's entry instead of adding a frame;
// - frames that are not CPU functions become functions with a readable prefix
//   ("[thread] main", "[nvtx] step", "[gpu-op] <gpu kernel>", "[kernel] sgemm")
//   so they stay visible in pprof's views; a sample also carries its thread
//   as a "thread" label (pprof -tagfocus, -tags);
// - functions keep their file and start line; a location's line is the
//   source line where a source-line node gives one, else 0 (unknown: a
//   frame's own line is its declaration, not where it was when sampled);
// - one mapping per module, the run's executable first (pprof names the
//   profile after mapping 0: "File:" in -top, the web UI's title), with its
//   build id where the run recorded one. The tree keeps no addresses, so
//   memory ranges are synthesized (mapping k covers [k<<40, (k+1)<<40)) and
//   locations have address 0; every mapping is marked as already
//   symbolized (has_functions), so pprof does not look for the binaries.
//   Frames without a module (threads, NVTX ranges, imported stacks) share
//   one mapping with no file name.
//
// Streaming: samples are written while the tree is walked; the function,
// location and string tables (one entry per distinct frame, not per node)
// follow at the end. Protocol buffers allow a message's fields in any order,
// and repeated fields may be split; every pprof reader accepts this.
//
// libprotobuf (Debian's) provides the message classes and the gzip stream,
// so the wire encoding and compression are not hand-written here.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "profile.pb.h"
#include "exporters/exporter.h"
#include "output/format.h"
#include "output/progress.h"

namespace exporters {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;
using cct::Status;
using google::protobuf::internal::WireFormatLite;

namespace {

namespace pb = perftools::profiles;

std::string_view PprofUnit(cct::Unit u) {
  switch (u) {
    case cct::Unit::kNanoseconds: return "nanoseconds";
    case cct::Unit::kBytes: return "bytes";
    case cct::Unit::kCount: return "count";
    case cct::Unit::kPercent: return "percent";
    case cct::Unit::kNone: return "units";
  }
  return "units";
}

class StringIndex {
 public:
  StringIndex() { Get(""); }
  int64_t Get(std::string_view s) {
    auto it = ids_.find(std::string(s));
    if (it != ids_.end()) return it->second;
    const int64_t id = static_cast<int64_t>(order_.size());
    order_.emplace_back(s);
    ids_.emplace(order_.back(), id);
    return id;
  }
  const std::vector<std::string>& strings() const { return order_; }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> order_;
};

// The pprof function name of a frame: CPU functions (and failed unwinds)
// keep their names, other kinds get "[kind] ".
std::string PprofName(const cct::Tree& tree, const cct::Frame& f) {
  const std::string_view name = tree.str(f.name);
  switch (f.kind) {
    case FrameKind::kFunction:
    case FrameKind::kUnknown: return std::string(name);
    default: return "[" + std::string(cct::FrameKindName(f.kind)) + "] " + std::string(name);
  }
}

// The file pprof names the profile after: the run's executable, else the
// first module a function frame names, else the run's name.
std::string PprofMainBinary(const query::Profile& profile) {
  if (profile.runs.size() == 1 && !profile.runs.front().executable.empty()) return profile.runs.front().executable;
  const cct::Tree& tree = profile.tree;
  for (cct::FrameId f = 0; f < tree.frames().size(); ++f) {
    const cct::Frame fr = tree.frames().Get(f);
    if (fr.kind == FrameKind::kFunction && fr.module != 0 && !tree.str(fr.module).empty())
      return std::string(tree.str(fr.module));
  }
  if (!profile.runs.empty() && !profile.runs.front().name.empty()) return profile.runs.front().name;
  return "cctdb";
}

// Build ids the runs recorded, by module path.
std::unordered_map<std::string, std::string> PprofBuildIds(const query::Profile& profile) {
  std::unordered_map<std::string, std::string> ids;
  for (const store::RunMeta& run : profile.runs) {
    if (!run.executable.empty() && !run.executable_build_id.empty())
      ids.emplace(run.executable, run.executable_build_id);
    for (const store::ModuleInfo& m : run.modules)
      if (!m.build_id.empty()) ids.emplace(m.path, m.build_id);
  }
  return ids;
}

// The sampling period in nanoseconds when every run sampled at one known
// rate (cct-record's freq_hz), else 0.
int64_t PprofPeriodNs(const query::Profile& profile) {
  double hz = 0;
  for (const store::RunMeta& run : profile.runs) {
    const nlohmann::json& s = *run.sampling;
    auto it = s.find("freq_hz");
    if (it == s.end() || !it->is_number() || it->get<double>() <= 0) return 0;
    if (hz != 0 && hz != it->get<double>()) return 0;
    hz = it->get<double>();
  }
  return hz > 0 ? std::llround(1e9 / hz) : 0;
}

// Writes fields of the top-level Profile message one at a time.
class ProfileWriter {
 public:
  explicit ProfileWriter(google::protobuf::io::CodedOutputStream& out) : out_(out) {}
  void Message(int field, const google::protobuf::MessageLite& m) {
    buf_.clear();
    m.SerializeToString(&buf_);
    out_.WriteTag(WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    out_.WriteVarint32(static_cast<uint32_t>(buf_.size()));
    out_.WriteRaw(buf_.data(), static_cast<int>(buf_.size()));
  }
  void String(int field, std::string_view s) {
    out_.WriteTag(WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    out_.WriteVarint32(static_cast<uint32_t>(s.size()));
    out_.WriteRaw(s.data(), static_cast<int>(s.size()));
  }
  void Int(int field, int64_t v) {
    if (v == 0) return;  // proto3 default
    out_.WriteTag(WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_VARINT));
    out_.WriteVarint64(static_cast<uint64_t>(v));
  }

 private:
  google::protobuf::io::CodedOutputStream& out_;
  std::string buf_;
};

}  // namespace

Status WritePprof(const query::Profile& profile, const std::vector<std::string>& names, std::ostream& out,
                  output::Progress* progress) {
  const cct::Tree& tree = profile.tree;
  std::vector<MetricId> ids;
  if (names.empty()) {
    for (MetricId m = 0; m < tree.metrics().size(); ++m)
      if (tree.metrics().Get(m).kind == cct::MetricKind::kAdditive) ids.push_back(m);
    if (ids.empty()) return cct::NotFound("the run has no additive metrics to export");
  } else {
    CCT_ASSIGN_OR_RETURN(ids, query::ResolveMetrics(tree, names));
    for (MetricId m : ids)
      if (tree.metrics().Get(m).kind != cct::MetricKind::kAdditive)
        return cct::InvalidArgument("pprof samples carry additive metrics; '" + tree.metrics().Get(m).name +
                                    "' is " + std::string(cct::MetricKindName(tree.metrics().Get(m).kind)));
  }
  if (progress) progress->SetTotal(tree.size());

  StringIndex strings;
  std::vector<std::pair<int64_t, int64_t>> sample_types;
  for (MetricId m : ids) {
    const cct::MetricDesc& d = tree.metrics().Get(m);
    sample_types.emplace_back(strings.Get(d.name), strings.Get(PprofUnit(d.unit)));
  }
  std::vector<const cct::SparseColumn*> columns;
  for (MetricId m : ids) columns.push_back(&tree.column(m));
  std::vector<std::vector<double>> exclusive;  // dense per metric: one pass reads them per node
  {
    cct::NodeValues values(tree);
    for (MetricId m : ids) exclusive.push_back(values.Exclusive(m));
  }

  // Functions: one per distinct (name, file, start line).
  std::vector<pb::Function> functions;
  std::vector<bool> function_has_file;  // by function id - 1
  std::unordered_map<std::string, uint64_t> function_ids;
  std::vector<uint64_t> frame_function(tree.frames().size(), 0);
  auto function_of = [&](cct::FrameId fid) -> uint64_t {
    if (frame_function[fid] != 0) return frame_function[fid];
    const cct::Frame f = tree.frames().Get(fid);
    std::string name = f.kind == FrameKind::kLine
                           ? cct::LineName(tree.str(f.file), f.line)
                           : PprofName(tree, f);
    const bool has_line = f.kind != FrameKind::kLine && f.kind != FrameKind::kThread && f.kind != FrameKind::kNvtx;
    std::string key = name;
    key.push_back('\0');
    key.append(tree.str(f.file));
    key.push_back('\0');
    key.append(std::to_string(has_line ? f.line : 0));
    auto [it, inserted] = function_ids.emplace(key, functions.size() + 1);
    if (inserted) {
      pb::Function fn;
      fn.set_id(it->second);
      fn.set_name(strings.Get(name));
      // No system name: pprof then takes `name` as already demangled and
      // shows it as it is, instead of stripping "(...)" and "<...>" from
      // names that look like C++ (which also empties "<gpu kernel>").
      fn.set_filename(strings.Get(tree.str(f.file)));
      fn.set_start_line(has_line ? f.line : 0);
      functions.push_back(std::move(fn));
      function_has_file.push_back(f.file != 0 && !tree.str(f.file).empty());
    }
    return frame_function[fid] = it->second;
  };

  // Mappings: the main binary first (id 1), then modules as frames name
  // them; frames without a module in one mapping without a file.
  struct MappingInfo {
    std::string path;
    bool has_filenames = false, has_lines = false, has_inline = false;
  };
  std::vector<MappingInfo> mappings;
  std::unordered_map<std::string, uint64_t> mapping_ids;
  auto mapping_of = [&](std::string_view path) -> uint64_t {
    auto [it, inserted] = mapping_ids.emplace(std::string(path), mappings.size() + 1);
    if (inserted) mappings.push_back(MappingInfo{std::string(path)});
    return it->second;
  };
  mapping_of(PprofMainBinary(profile));

  // Per node: its own line entry, the node its location continues from
  // (inlining), the node whose location comes next on the stack, and the
  // node's location id.
  const size_t n = tree.size();
  std::vector<uint64_t> entry_fn(n, 0);
  std::vector<int64_t> entry_line(n, 0);
  std::vector<NodeId> chain_prev(n, cct::kNoNode), outer(n, cct::kRootNode);
  std::vector<uint32_t> location(n, 0);
  std::vector<uint64_t> node_mapping(n, 0);
  // The thread node each node is under (a thread frame right below the
  // root), for the samples' "thread" label.
  std::vector<NodeId> thread_of(n, cct::kNoNode);
  const int64_t thread_key = strings.Get("thread");
  std::vector<pb::Location> locations;
  std::unordered_map<std::string, uint32_t> location_ids;
  std::string key;

  auto inlinable_parent = [&](NodeId p) {
    if (p == cct::kRootNode) return false;
    const FrameKind k = tree.kind(p);
    return k == FrameKind::kFunction || k == FrameKind::kKernel || k == FrameKind::kUnknown;
  };

  google::protobuf::io::OstreamOutputStream raw(&out);
  google::protobuf::io::GzipOutputStream::Options gz_options;
  gz_options.format = google::protobuf::io::GzipOutputStream::GZIP;
  google::protobuf::io::GzipOutputStream gz(&raw, gz_options);
  {
    google::protobuf::io::CodedOutputStream coded(&gz);
    ProfileWriter w(coded);
    for (const auto& [type, unit] : sample_types) {
      pb::ValueType vt;
      vt.set_type(type);
      vt.set_unit(unit);
      w.Message(1, vt);
    }

    pb::Sample sample;
    {
      // Values on the root itself (an imported sample without a stack): a
      // sample without locations, as pprof writes those.
      bool any = false;
      for (const auto& e : exclusive) any |= std::llround(e[cct::kRootNode]) != 0;
      if (any) {
        for (const auto& e : exclusive) sample.add_value(std::llround(e[cct::kRootNode]));
        w.Message(2, sample);
      }
    }
    for (NodeId node = 1; node < n; ++node) {
      const cct::Frame f = tree.frame(node);
      const NodeId parent = tree.parent(node);
      thread_of[node] = f.kind == FrameKind::kThread && parent == cct::kRootNode ? node : thread_of[parent];
      if (f.kind == FrameKind::kLine && inlinable_parent(parent)) {
        // A source line refines its function's entry.
        entry_fn[node] = entry_fn[parent];
        entry_line[node] = f.line;
        chain_prev[node] = chain_prev[parent];
        outer[node] = outer[parent];
        node_mapping[node] = node_mapping[parent];
      } else {
        entry_fn[node] = function_of(tree.frame_id(node));
        // A function frame's line is where it is declared (the Function's
        // start line), not a line it executed.
        entry_line[node] = f.kind == FrameKind::kLine ? f.line : 0;
        const bool inlined =
            (f.flags & cct::kFrameInlined) != 0 && f.kind == FrameKind::kFunction && inlinable_parent(parent);
        if (inlined) {
          chain_prev[node] = parent;
          outer[node] = outer[parent];
        } else {
          outer[node] = parent;
        }
        const bool has_module = f.kind == FrameKind::kFunction || f.kind == FrameKind::kKernel;
        node_mapping[node] = inlined ? node_mapping[parent]
                                     : mapping_of(has_module ? tree.str(f.module) : std::string_view{});
      }
      // The location: this node's entry, then the chain it was inlined into.
      key.clear();
      const uint64_t mapping = node_mapping[node];
      key.append(reinterpret_cast<const char*>(&mapping), sizeof mapping);
      for (NodeId c = node; c != cct::kNoNode; c = chain_prev[c]) {
        const uint64_t fn = entry_fn[c];
        const int64_t line = entry_line[c];
        key.append(reinterpret_cast<const char*>(&fn), sizeof fn);
        key.append(reinterpret_cast<const char*>(&line), sizeof line);
      }
      auto [it, inserted] = location_ids.emplace(key, static_cast<uint32_t>(locations.size() + 1));
      if (inserted) {
        pb::Location loc;
        loc.set_id(it->second);
        loc.set_mapping_id(mapping);
        MappingInfo& mi = mappings[mapping - 1];
        for (size_t off = sizeof mapping; off < key.size(); off += 16) {
          uint64_t fn;
          int64_t line;
          std::memcpy(&fn, key.data() + off, 8);
          std::memcpy(&line, key.data() + off + 8, 8);
          pb::Line* l = loc.add_line();
          l->set_function_id(fn);
          l->set_line(line);
          mi.has_lines |= line != 0;
          mi.has_filenames |= function_has_file[fn - 1];
        }
        mi.has_inline |= loc.line_size() > 1;
        locations.push_back(std::move(loc));
      }
      location[node] = it->second;

      bool any = false;
      for (const auto& e : exclusive) any |= std::llround(e[node]) != 0;
      if (any) {
        sample.Clear();
        for (NodeId c = node; c != cct::kRootNode; c = outer[c]) sample.add_location_id(location[c]);
        for (const auto& e : exclusive) sample.add_value(std::llround(e[node]));
        if (thread_of[node] != cct::kNoNode) {
          pb::Label* label = sample.add_label();
          label->set_key(thread_key);
          label->set_str(strings.Get(tree.name(thread_of[node])));
        }
        w.Message(2, sample);
      }
      if (progress) progress->Update(node);
    }
    const std::unordered_map<std::string, std::string> build_ids = PprofBuildIds(profile);
    for (size_t i = 0; i < mappings.size(); ++i) {
      const MappingInfo& mi = mappings[i];
      pb::Mapping m;
      m.set_id(i + 1);
      m.set_memory_start(uint64_t{i + 1} << 40);
      m.set_memory_limit(uint64_t{i + 2} << 40);
      m.set_filename(strings.Get(mi.path));
      if (auto b = build_ids.find(mi.path); b != build_ids.end()) m.set_build_id(strings.Get(b->second));
      m.set_has_functions(true);
      m.set_has_filenames(mi.has_filenames);
      m.set_has_line_numbers(mi.has_lines);
      m.set_has_inline_frames(mi.has_inline);
      w.Message(3, m);
    }
    for (const pb::Location& loc : locations) w.Message(4, loc);
    for (const pb::Function& fn : functions) w.Message(5, fn);
    // Strings used by the scalar fields below must be interned before the
    // table is written.
    const int64_t comment = strings.Get(profile.label.empty() ? "cctdb profile" : profile.label);
    for (const std::string& s : strings.strings()) w.String(6, s);
    if (profile.runs.size() == 1) {
      w.Int(9, profile.runs.front().start_time_ns);
      w.Int(10, profile.runs.front().duration_ns);
    }
    // The sample type pprof shows first ("Type: cputime" in -top, the web
    // UI's title): cputime where it is exported, else the first time, else
    // the first metric. The period: one sampling interval of it where the
    // runs sampled at one known rate and it is a time, else 1 (of its unit).
    size_t shown = 0;
    for (size_t i = ids.size(); i-- > 0;)
      if (tree.metrics().Get(ids[i]).unit == cct::Unit::kNanoseconds) shown = i;
    for (size_t i = 0; i < ids.size(); ++i)
      if (tree.metrics().Get(ids[i]).name == "cputime") shown = i;
    pb::ValueType period;
    period.set_type(sample_types[shown].first);
    period.set_unit(sample_types[shown].second);
    w.Message(11, period);
    const int64_t period_ns = PprofPeriodNs(profile);
    w.Int(12, period_ns > 0 && tree.metrics().Get(ids[shown]).unit == cct::Unit::kNanoseconds ? period_ns : 1);
    w.Int(13, comment);
    w.Int(14, sample_types[shown].first);
    if (coded.HadError()) return cct::IoError("cannot write the pprof profile");
  }
  if (!gz.Close()) return cct::IoError("cannot write the pprof profile (compression failed)");
  if (progress) progress->Update(n);
  return Status::Ok();
}

Status ExportPprof(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  return WritePprof(profile, options.metrics, out, options.progress);
}

}  // namespace exporters
