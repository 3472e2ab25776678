// --to perfetto: a run's trace (`cct-record --trace`, store/trace.h) as a
// Perfetto protobuf trace (a Trace message: TracePackets, each as field 1),
// the format ui.perfetto.dev and trace_processor read natively. Chosen over
// the Chrome JSON format because its sampled call stacks (PerfSample with
// interned frames and callstacks) drive Perfetto's flame graph, and because it
// is compact enough for 10^7 events.
//
// Layout (docs/cli.md "cct-query export" has the user's view):
//   - one process track (pid: the run's pid, else its id), named by the run;
//   - a thread track per sampled or ranged thread; its NVTX ranges as nested
//     slices, its samples as PerfSamples whose callstack is the sample node's
//     path from the thread node down (the thread is the outermost frame);
//   - a track per GPU (device, stream) with its activities as slices (the
//     kernel's name, else the op: "copyin", "memset", ...) with arguments
//     "bytes" and "launch path" (the CPU path above the <gpu ...> node);
//   - a counter track per device, "GPU D bytes in flight": the bytes of the
//     copies whose interval [start, end) holds the time.
// Ranges that do not nest in the ranges open around them (NVTX start/end
// ranges may overlap) go to child tracks ("NAME (overlapping 1)", ...), so
// every slice keeps its exact times (up to 15 such tracks: AssignLanes).
//
// Packets are written as they are built (no message holds the whole trace).
// Each slice or counter track is its own packet sequence whose timestamps
// never decrease, so a reader's sort keeps an end before a begin at the same
// time; the samples and every descriptor share sequence 1, which owns the
// interned frames. Pure function of its inputs; thread-compatible.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "exporters/exporter.h"
#include "perfetto_trace.pb.h"
#include "query/time_window.h"
#include "store/database.h"
#include "store/trace.h"

namespace exporters {

using cct::NodeId;
using cct::Status;
namespace pp = perfetto::protos;

namespace {

constexpr uint32_t kSamplesSequence = 1;
constexpr uint64_t kProcessUuid = 1;
constexpr uint64_t kMappingIid = 1;

// Writes TracePackets as the fields of a Trace message, one at a time.
class PerfettoPacketWriter {
 public:
  explicit PerfettoPacketWriter(std::ostream& out) : stream_(&out), coded_(&stream_) {}
  void Write(const pp::TracePacket& packet) {
    coded_.WriteTag(kPacketTag);
    coded_.WriteVarint32(static_cast<uint32_t>(packet.ByteSizeLong()));
    packet.SerializeWithCachedSizes(&coded_);
  }
  // A packet already encoded (the samples' fast path).
  void WriteRaw(const uint8_t* bytes, size_t n) { coded_.WriteRaw(bytes, static_cast<int>(n)); }
  bool ok() { return !coded_.HadError(); }

 private:
  static constexpr uint32_t kPacketTag = (1 << 3) | 2;  // Trace.packet, length-delimited
  google::protobuf::io::OstreamOutputStream stream_;
  google::protobuf::io::CodedOutputStream coded_;
};

// Appends `v` as a protobuf varint at `p`; returns the end.
uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// "copyin" for "<gpu copyin>": the op's name without the placeholder's brackets.
std::string GpuOpName(cct::GpuOpKind kind) {
  std::string_view p = cct::GpuOpPlaceholder(kind);
  if (p.size() > 6 && p.substr(0, 5) == "<gpu " && p.back() == '>') p = p.substr(5, p.size() - 6);
  return std::string(p);
}

bool IsCopy(cct::GpuOpKind k) {
  return k == cct::GpuOpKind::kCopyIn || k == cct::GpuOpKind::kCopyOut || k == cct::GpuOpKind::kCopy;
}

// One slice to place on a track: its times and what to write for it.
struct PerfettoSlice {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  size_t index = 0;  // into the caller's events
};

// Lanes for slices in start order: each slice goes to the first lane where
// it nests in (or follows) the slices still open there. Lane 0 is the track
// itself; a well-nested track has only that one. A lane is opened only when
// every other one holds a slice open across the new one's start, so lanes
// are bounded by the most slices open at once; past kMaxPerfettoLanes (a
// pathological trace) a slice goes to the last lane, its end cut to the end
// of the slice it then nests in, so that the cost stays linear.
constexpr uint32_t kMaxPerfettoLanes = 16;
std::vector<uint32_t> AssignLanes(std::vector<PerfettoSlice>& slices) {
  std::vector<uint32_t> lane(slices.size());
  std::vector<std::vector<int64_t>> open;  // per lane: the ends of the open slices, innermost last
  for (size_t i = 0; i < slices.size(); ++i) {
    PerfettoSlice& s = slices[i];
    uint32_t l = 0;
    for (;; ++l) {
      if (l == open.size()) open.emplace_back();
      std::vector<int64_t>& ends = open[l];
      while (!ends.empty() && ends.back() <= s.start_ns) ends.pop_back();
      if (ends.empty() || s.end_ns <= ends.back()) break;
      if (l + 1 == kMaxPerfettoLanes) {
        s.end_ns = ends.back();
        break;
      }
    }
    open[l].push_back(s.end_ns);
    lane[i] = l;
  }
  return lane;
}

class PerfettoTraceWriter {
 public:
  PerfettoTraceWriter(const cct::Tree& tree, const store::RunTrace& trace, const store::RunMeta& run,
                      std::ostream& out)
      : tree_(tree), trace_(trace), run_(run), out_(out) {
    const store::TraceSpan span = store::SpanOf(trace);
    first_ns_ = span.empty() ? 0 : span.first_ns;
    last_ns_ = span.empty() ? 0 : span.last_ns;
    pid_ = run.pid > 0 && run.pid < (int64_t{1} << 30) ? static_cast<int32_t>(run.pid)
                                                        : static_cast<int32_t>(run.id % (1u << 30)) + 1;
  }

  Status Write() {
    WriteProcess();
    WriteThreads();
    WriteRanges();
    WriteGpu();
    WriteSamples();
    if (!out_.ok()) return cct::IoError("cannot write the Perfetto trace");
    return Status::Ok();
  }

 private:
  // The first packet of a sequence clears its (empty) incremental state.
  pp::TracePacket& Packet(uint32_t sequence, int64_t timestamp) {
    packet_.Clear();
    packet_.set_trusted_packet_sequence_id(sequence);
    packet_.set_timestamp(static_cast<uint64_t>(std::max<int64_t>(timestamp, 0)));
    if (sequence >= started_.size()) started_.resize(sequence + 1, false);
    if (!started_[sequence]) {
      packet_.set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      started_[sequence] = true;
    } else if (sequence == kSamplesSequence) {
      packet_.set_sequence_flags(pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    }
    return packet_;
  }

  void WriteProcess() {
    pp::TrackDescriptor* d = Packet(kSamplesSequence, first_ns_).mutable_track_descriptor();
    d->set_uuid(kProcessUuid);
    d->mutable_process()->set_pid(pid_);
    d->mutable_process()->set_process_name(run_.name.empty() ? "run " + std::to_string(run_.id) : run_.name);
    out_.Write(packet_);
  }

  // A track per thread that has samples or ranges, in thread node order.
  void WriteThreads() {
    std::vector<NodeId> threads;
    for (const store::TraceSamples& s : trace_.samples) threads.push_back(s.thread);
    for (const store::TraceRange& r : trace_.ranges) threads.push_back(r.thread);
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    for (NodeId t : threads) {
      const int32_t tid = pid_ + 1 + static_cast<int32_t>(thread_tid_.size());
      const uint64_t uuid = NextUuid();
      thread_tid_[t] = tid;
      thread_uuid_[t] = uuid;
      pp::TrackDescriptor* d = Packet(kSamplesSequence, first_ns_).mutable_track_descriptor();
      d->set_uuid(uuid);
      d->mutable_thread()->set_pid(pid_);
      d->mutable_thread()->set_tid(tid);
      d->mutable_thread()->set_thread_name(std::string(tree_.name(t)));
      out_.Write(packet_);
    }
  }

  uint64_t NextUuid() { return ++last_uuid_; }

  // A child track of `parent` (a lane, a stream, a counter), with its own
  // sequence; returns its uuid.
  uint64_t WriteChildTrack(uint64_t parent, const std::string& name, bool counter = false) {
    const uint64_t uuid = NextUuid();
    pp::TrackDescriptor* d = Packet(kSamplesSequence, first_ns_).mutable_track_descriptor();
    d->set_uuid(uuid);
    d->set_parent_uuid(parent);
    d->set_name(name);
    if (counter) d->mutable_counter()->set_unit(pp::CounterDescriptor::UNIT_SIZE_BYTES);
    out_.Write(packet_);
    return uuid;
  }

  // Slices on `track` (lanes as AssignLanes gives them: lane 0 on the track,
  // others on child tracks named `name (overlapping L)`), each lane a
  // sequence of begins and ends in time order. `fill` names the slice at
  // begin and adds its arguments.
  template <typename Fill>
  void WriteSlices(uint64_t track, const std::string& name, std::vector<PerfettoSlice>& slices, Fill fill) {
    const std::vector<uint32_t> lane = AssignLanes(slices);
    std::vector<std::vector<size_t>> by_lane;  // slice indices, in start order
    for (size_t i = 0; i < slices.size(); ++i) {
      if (lane[i] >= by_lane.size()) by_lane.resize(lane[i] + 1);
      by_lane[lane[i]].push_back(i);
    }
    std::vector<int64_t> ends;  // the open slices' ends, innermost last
    for (uint32_t l = 0; l < by_lane.size(); ++l) {
      const uint64_t uuid = l == 0 ? track : WriteChildTrack(track, name + " (overlapping " + std::to_string(l) + ")");
      const uint32_t sequence = NextSequence();
      auto end_until = [&](int64_t t) {
        while (!ends.empty() && ends.back() <= t) {
          pp::TrackEvent* e = Packet(sequence, ends.back()).mutable_track_event();
          e->set_type(pp::TrackEvent::TYPE_SLICE_END);
          e->set_track_uuid(uuid);
          out_.Write(packet_);
          ends.pop_back();
        }
      };
      for (size_t i : by_lane[l]) {
        end_until(slices[i].start_ns);
        pp::TrackEvent* e = Packet(sequence, slices[i].start_ns).mutable_track_event();
        e->set_type(pp::TrackEvent::TYPE_SLICE_BEGIN);
        e->set_track_uuid(uuid);
        fill(slices[i].index, *e);
        out_.Write(packet_);
        ends.push_back(slices[i].end_ns);
      }
      end_until(std::numeric_limits<int64_t>::max());
    }
  }

  uint32_t NextSequence() { return ++last_sequence_; }

  // Each thread's NVTX ranges (open ones end where the trace ends).
  void WriteRanges() {
    std::map<NodeId, std::vector<PerfettoSlice>> by_thread;
    for (size_t i = 0; i < trace_.ranges.size(); ++i) {
      const store::TraceRange& r = trace_.ranges[i];
      by_thread[r.thread].push_back({r.start_ns, r.open() ? std::max(r.start_ns, last_ns_) : r.end_ns, i});
    }
    for (auto& [thread, slices] : by_thread) {
      WriteSlices(thread_uuid_.at(thread), std::string(tree_.name(thread)), slices,
                  [this](size_t i, pp::TrackEvent& e) { e.set_name(std::string(tree_.name(trace_.ranges[i].node))); });
    }
  }

  // "main > solve > step": the CPU path that launched a GPU activity, the
  // nodes above its <gpu ...> placeholder below the thread, outermost first
  // ("" when the launch is unknown). Memoized per node.
  const std::string& LaunchPath(NodeId node) {
    auto it = launch_path_.find(node);
    if (it != launch_path_.end()) return it->second;
    NodeId n = node;
    while (n != cct::kRootNode && tree_.kind(n) != cct::FrameKind::kGpuOp) n = tree_.parent(n);
    std::vector<NodeId> path;
    if (n != cct::kRootNode)
      for (NodeId k = tree_.parent(n); k != cct::kRootNode && tree_.kind(k) != cct::FrameKind::kThread;
           k = tree_.parent(k))
        path.push_back(k);
    std::string s;
    for (size_t i = path.size(); i-- > 0;) {
      if (!s.empty()) s += " > ";
      s += tree_.name(path[i]);
    }
    return launch_path_.emplace(node, std::move(s)).first->second;
  }

  // Per (device, stream) a track of slices; per device a counter of the
  // bytes of copies in flight.
  void WriteGpu() {
    std::map<std::pair<uint32_t, uint32_t>, std::vector<PerfettoSlice>> by_stream;
    std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> copies;  // device: (time, +-bytes)
    for (size_t i = 0; i < trace_.gpu.size(); ++i) {
      const store::TraceGpuActivity& g = trace_.gpu[i];
      by_stream[{g.device, g.stream}].push_back({g.start_ns, g.end_ns, i});
      if (IsCopy(g.kind) && g.bytes > 0 && g.end_ns > g.start_ns) {
        std::vector<std::pair<int64_t, int64_t>>& c = copies[g.device];
        c.emplace_back(g.start_ns, static_cast<int64_t>(g.bytes));
        c.emplace_back(g.end_ns, -static_cast<int64_t>(g.bytes));
      }
    }
    for (auto& [key, slices] : by_stream) {
      const std::string name = "GPU " + std::to_string(key.first) + " stream " + std::to_string(key.second);
      const uint64_t track = WriteChildTrack(kProcessUuid, name);
      WriteSlices(track, name, slices, [this](size_t i, pp::TrackEvent& e) {
        const store::TraceGpuActivity& g = trace_.gpu[i];
        const bool named = g.node < tree_.size() && tree_.kind(g.node) == cct::FrameKind::kKernel;
        e.set_name(named ? std::string(tree_.name(g.node)) : GpuOpName(g.kind));
        if (g.bytes > 0) {
          pp::DebugAnnotation* a = e.add_debug_annotations();
          a->set_name("bytes");
          a->set_uint_value(g.bytes);
        }
        if (g.node < tree_.size()) {
          const std::string& path = LaunchPath(g.node);
          if (!path.empty()) {
            pp::DebugAnnotation* a = e.add_debug_annotations();
            a->set_name("launch path");
            a->set_string_value(path);
          }
        }
      });
    }
    for (auto& [device, changes] : copies) {
      const uint64_t track = WriteChildTrack(kProcessUuid, "GPU " + std::to_string(device) + " bytes in flight",
                                             /*counter=*/true);
      const uint32_t sequence = NextSequence();
      std::sort(changes.begin(), changes.end());
      int64_t value = 0;
      for (size_t i = 0; i < changes.size();) {
        const int64_t t = changes[i].first;
        for (; i < changes.size() && changes[i].first == t; ++i) value += changes[i].second;
        pp::TrackEvent* e = Packet(sequence, t).mutable_track_event();
        e->set_type(pp::TrackEvent::TYPE_COUNTER);
        e->set_track_uuid(track);
        e->set_counter_value(value);
        out_.Write(packet_);
      }
    }
  }

  // The frame's text: its name, with " (file:line)" where the tree has a
  // location that the name does not already show (line nodes are "file:line").
  std::string FrameText(NodeId n) const {
    const cct::Frame f = tree_.frame(n);
    std::string s(tree_.str(f.name));
    if (f.file && f.kind != cct::FrameKind::kLine) {
      s += " (";
      s += tree_.str(f.file);
      if (f.line) s += ":" + std::to_string(f.line);
      s += ")";
    }
    return s;
  }

  // The callstack iid of `node` (from the thread down), adding what the
  // reader has not seen yet to `interned`.
  uint64_t Callstack(NodeId node, pp::InternedData& interned) {
    if (callstack_iid_[node]) return callstack_iid_[node];
    if (!mapping_written_) {
      pp::InternedString* p = interned.add_mapping_paths();
      p->set_iid(1);
      p->set_str("cctdb");
      pp::Mapping* m = interned.add_mappings();
      m->set_iid(kMappingIid);
      m->add_path_string_ids(1);
      mapping_written_ = true;
    }
    path_.clear();
    for (NodeId k = node;; k = tree_.parent(k)) {
      path_.push_back(k);
      if (k == cct::kRootNode || tree_.kind(k) == cct::FrameKind::kThread) break;
    }
    pp::Callstack* c = interned.add_callstacks();
    const uint64_t iid = ++last_callstack_;
    c->set_iid(iid);
    for (size_t i = path_.size(); i-- > 0;) {
      const NodeId k = path_[i];
      auto [it, added] = frame_iid_.emplace(tree_.frame_id(k), frame_iid_.size() + 1);
      if (added) {
        pp::InternedString* name = interned.add_function_names();
        name->set_iid(it->second);
        name->set_str(FrameText(k));
        pp::Frame* f = interned.add_frames();
        f->set_iid(it->second);
        f->set_function_name_id(it->second);
        f->set_mapping_id(kMappingIid);
        f->set_rel_pc(it->second);  // distinct per frame, so that readers never merge two
      }
      c->add_frame_ids(it->second);
    }
    callstack_iid_[node] = iid;
    return iid;
  }

  // Samples whose callstack the reader knows are encoded by hand: nine in
  // ten events are samples, and building each as a message cost ~10x more
  // (docs/performance.md, "Perfetto export"). The bytes are those
  // TracePacket{timestamp, trusted_packet_sequence_id, sequence_flags,
  // perf_sample{pid, tid, callstack_iid}} serializes to, field by field in
  // number order; the tests parse them with the generated classes.
  void WriteSamples() {
    callstack_iid_.assign(tree_.size(), 0);
    for (const store::TraceSamples& s : trace_.samples) {
      const uint32_t tid = static_cast<uint32_t>(thread_tid_.at(s.thread));
      uint8_t sample_fields[32];  // PerfSample's pid and tid, the same for the thread
      uint8_t* f = sample_fields;
      *f++ = (2 << 3);  // pid, varint
      f = PutVarint(f, static_cast<uint32_t>(pid_));
      *f++ = (3 << 3);  // tid, varint
      f = PutVarint(f, tid);
      const size_t fixed = static_cast<size_t>(f - sample_fields);
      for (size_t i = 0; i < s.time_ns.size(); ++i) {
        const NodeId n = s.node[i] < tree_.size() ? s.node[i] : s.thread;
        if (!callstack_iid_[n]) {  // first use: intern it, through the message
          pp::TracePacket& p = Packet(kSamplesSequence, s.time_ns[i]);
          pp::PerfSample* sample = p.mutable_perf_sample();
          sample->set_pid(static_cast<uint32_t>(pid_));
          sample->set_tid(tid);
          sample->set_callstack_iid(Callstack(n, *p.mutable_interned_data()));
          out_.Write(p);
          continue;
        }
        uint8_t sample[48];
        std::memcpy(sample, sample_fields, fixed);
        uint8_t* q = sample + fixed;
        *q++ = (4 << 3);  // callstack_iid, varint
        q = PutVarint(q, callstack_iid_[n]);
        const size_t sample_size = static_cast<size_t>(q - sample);
        uint8_t packet[96];
        uint8_t* w = packet + 6;  // room for the Trace.packet tag and length, filled in below
        uint8_t* const body = w;
        *w++ = (8 << 3);  // timestamp, varint
        w = PutVarint(w, static_cast<uint64_t>(std::max<int64_t>(s.time_ns[i], 0)));
        *w++ = (10 << 3);  // trusted_packet_sequence_id, varint
        w = PutVarint(w, kSamplesSequence);
        *w++ = (13 << 3);  // sequence_flags, varint
        *w++ = pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE;
        w = PutVarint(w, (66 << 3) | 2);  // perf_sample, length-delimited
        w = PutVarint(w, sample_size);
        std::memcpy(w, sample, sample_size);
        w += sample_size;
        // The packet's length is under 128: one byte, after the tag.
        const size_t body_size = static_cast<size_t>(w - body);
        uint8_t* const start = body - 2;
        start[0] = (1 << 3) | 2;  // Trace.packet, length-delimited
        start[1] = static_cast<uint8_t>(body_size);
        out_.WriteRaw(start, static_cast<size_t>(w - start));
      }
    }
  }

  const cct::Tree& tree_;
  const store::RunTrace& trace_;
  const store::RunMeta& run_;
  PerfettoPacketWriter out_;
  pp::TracePacket packet_;  // reused: one packet's buffers for the whole trace
  std::vector<bool> started_;
  int64_t first_ns_ = 0, last_ns_ = 0;
  int32_t pid_ = 1;
  uint64_t last_uuid_ = kProcessUuid;
  uint32_t last_sequence_ = kSamplesSequence;
  std::map<NodeId, int32_t> thread_tid_;
  std::map<NodeId, uint64_t> thread_uuid_;
  std::unordered_map<NodeId, std::string> launch_path_;
  std::vector<uint64_t> callstack_iid_;  // per node; 0: not interned yet
  std::unordered_map<cct::FrameId, uint64_t> frame_iid_;
  std::vector<NodeId> path_;
  uint64_t last_callstack_ = 0;
  bool mapping_written_ = false;
};

}  // namespace

Status WritePerfetto(const cct::Tree& tree, const store::RunTrace& trace, const store::RunMeta& run,
                     std::ostream& out) {
  for (const store::TraceSamples& s : trace.samples)
    if (s.thread >= tree.size()) return cct::Corrupt("the trace names a thread node the run's tree does not have");
  for (const store::TraceRange& r : trace.ranges)
    if (r.thread >= tree.size() || r.node >= tree.size())
      return cct::Corrupt("the trace names a range node the run's tree does not have");
  return PerfettoTraceWriter(tree, trace, run, out).Write();
}

Status ExportPerfetto(const query::Profile& profile, const ExportOptions&, std::ostream& out) {
  if (profile.runs.size() != 1 || profile.selector.is_group() || profile.selector.is_invocation() ||
      profile.selector.iteration)
    return cct::InvalidArgument("--to perfetto exports one run's trace, not " + profile.label);
  const store::RunMeta& run = profile.runs.front();
  // The trace's node ids are those of the stored tree: read it as stored
  // (the profile's may have its threads merged).
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(profile.db_path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(std::optional<store::RunTrace> trace, db->ReadTrace(run.id));
  if (!trace)
    return cct::InvalidArgument(query::RunLabel(run) + " has no trace (record with cct-record --trace)");
  CCT_ASSIGN_OR_RETURN(cct::Tree tree, db->ReadTree(run.id));
  if (profile.selector.window) {
    // RUN@t=A..B or @range=NAME#K: the events of that window only.
    CCT_ASSIGN_OR_RETURN(const query::TimeWindow window, query::ResolveWindow(tree, *trace, *profile.selector.window));
    return WritePerfetto(tree, query::TraceInWindow(*trace, window), run, out);
  }
  return WritePerfetto(tree, *trace, run, out);
}

}  // namespace exporters
