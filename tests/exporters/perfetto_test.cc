// cct-query export --to perfetto (exporters/perfetto.cc): a synthetic trace
// with known tracks, nested and overlapping ranges, samples, GPU activities
// on two devices and three streams, written and read back through the
// generated classes of src/proto/perfetto_trace.proto, checked against values
// worked out from the trace's construction; the errors for runs without a
// trace; and one recording of cct-test-trace-phases whose NVTX slices must
// match the program's own PHASE lines.
//
// Perfetto's trace_processor is not installable here (no Debian package, no
// pip or npm release reachable), so the checks are structural: the file
// parses as a Trace, every packet names a sequence, each sequence starts by
// clearing its incremental state, every track event names a described track,
// every interned id a reader needs was interned before on its sequence, and
// slice begins and ends pair up per track in time order.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cct/tree.h"
#include "exporters/exporter.h"
#include "perfetto_trace.pb.h"
#include "store/database.h"
#include "tests/test_util.h"

namespace {

namespace pp = perfetto::protos;
using cct::FrameKind;
using cct::NodeId;

constexpr int64_t kPfEpoch = 1'700'000'000'000'000'000;
constexpr int64_t kPfMs = 1'000'000;

struct PfTrack {
  std::string name, thread_name, process_name;
  int32_t pid = 0, tid = 0;
  uint64_t parent = 0;
  bool counter = false;
};

struct PfSlice {
  std::string name;
  int64_t start = 0, end = -1;
  size_t depth = 0;
  std::map<std::string, std::string> args;
};

struct PfSample {
  int64_t ts = 0;
  std::vector<std::string> frames;  // outermost first
};

// What a reader sees in the file, decoded with the rules of Perfetto's trace
// format; `errors` lists what breaks them.
struct PfDecoded {
  std::map<uint64_t, PfTrack> tracks;
  std::map<uint64_t, std::vector<PfSlice>> slices;                        // by track, in begin order
  std::map<uint64_t, std::vector<std::pair<int64_t, int64_t>>> counters;  // by track
  std::map<uint32_t, std::vector<PfSample>> samples;                      // by tid
  std::vector<std::string> errors;
  size_t packets = 0;

  // The track described as thread `name`, or as the child track `name`.
  uint64_t Track(const std::string& name) const {
    for (const auto& [uuid, t] : tracks)
      if (t.thread_name == name || t.name == name) return uuid;
    return 0;
  }
};

PfDecoded PfDecode(const std::string& bytes) {
  PfDecoded d;
  pp::Trace trace;
  if (!trace.ParseFromString(bytes)) {
    d.errors.push_back("not a Trace message");
    return d;
  }
  d.packets = static_cast<size_t>(trace.packet_size());
  struct Interned {
    std::map<uint64_t, std::string> names;
    std::map<uint64_t, uint64_t> frame_name;
    std::set<uint64_t> mappings;
    std::map<uint64_t, std::vector<uint64_t>> callstacks;
  };
  std::map<uint32_t, Interned> seqs;
  std::set<uint32_t> started;
  std::map<uint64_t, std::vector<size_t>> open;  // per track: open slices
  std::map<uint64_t, int64_t> last_ts;           // per track: the last event's time
  for (const pp::TracePacket& p : trace.packet()) {
    if (!p.has_trusted_packet_sequence_id()) d.errors.push_back("a packet without a sequence");
    const uint32_t seq = p.trusted_packet_sequence_id();
    if (!started.count(seq)) {
      if (!(p.sequence_flags() & pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED))
        d.errors.push_back("sequence " + std::to_string(seq) + " does not start by clearing its state");
      started.insert(seq);
    }
    Interned& in = seqs[seq];
    if (p.has_interned_data()) {
      const pp::InternedData& id = p.interned_data();
      for (const auto& m : id.mappings()) in.mappings.insert(m.iid());
      for (const auto& s : id.function_names()) in.names[s.iid()] = s.str();
      for (const auto& f : id.frames()) {
        if (!in.mappings.count(f.mapping_id())) d.errors.push_back("a frame names an unknown mapping");
        if (!in.names.count(f.function_name_id())) d.errors.push_back("a frame names an unknown function name");
        in.frame_name[f.iid()] = f.function_name_id();
      }
      for (const auto& c : id.callstacks())
        in.callstacks[c.iid()] = std::vector<uint64_t>(c.frame_ids().begin(), c.frame_ids().end());
    }
    if (p.has_track_descriptor()) {
      const pp::TrackDescriptor& t = p.track_descriptor();
      PfTrack& k = d.tracks[t.uuid()];
      k.name = t.name();
      k.parent = t.parent_uuid();
      k.counter = t.has_counter();
      if (t.has_process()) k.pid = t.process().pid(), k.process_name = t.process().process_name();
      if (t.has_thread()) k.pid = t.thread().pid(), k.tid = t.thread().tid(), k.thread_name = t.thread().thread_name();
      if (k.parent && !d.tracks.count(k.parent)) d.errors.push_back("a track's parent is not described before it");
    }
    if (p.has_track_event()) {
      const pp::TrackEvent& e = p.track_event();
      const uint64_t uuid = e.track_uuid();
      const int64_t ts = static_cast<int64_t>(p.timestamp());
      if (!d.tracks.count(uuid)) d.errors.push_back("an event on an undescribed track");
      if (last_ts.count(uuid) && ts < last_ts[uuid]) d.errors.push_back("a track's events go back in time");
      last_ts[uuid] = ts;
      std::vector<PfSlice>& slices = d.slices[uuid];
      std::vector<size_t>& stack = open[uuid];
      if (e.type() == pp::TrackEvent::TYPE_SLICE_BEGIN) {
        PfSlice s;
        s.name = e.name();
        s.start = ts;
        s.depth = stack.size();
        for (const pp::DebugAnnotation& a : e.debug_annotations())
          s.args[a.name()] = a.has_string_value() ? a.string_value() : std::to_string(a.uint_value());
        stack.push_back(slices.size());
        slices.push_back(s);
      } else if (e.type() == pp::TrackEvent::TYPE_SLICE_END) {
        if (stack.empty()) {
          d.errors.push_back("a slice end without a begin");
          continue;
        }
        slices[stack.back()].end = ts;
        stack.pop_back();
      } else if (e.type() == pp::TrackEvent::TYPE_COUNTER) {
        if (!d.tracks[uuid].counter) d.errors.push_back("a counter value on a slice track");
        d.counters[uuid].emplace_back(ts, e.counter_value());
      }
    }
    if (p.has_perf_sample()) {
      PfSample s;
      s.ts = static_cast<int64_t>(p.timestamp());
      auto c = in.callstacks.find(p.perf_sample().callstack_iid());
      if (c == in.callstacks.end()) {
        d.errors.push_back("a sample names an unknown callstack");
        continue;
      }
      for (uint64_t f : c->second) {
        auto fr = in.frame_name.find(f);
        if (fr == in.frame_name.end()) {
          d.errors.push_back("a callstack names an unknown frame");
          continue;
        }
        s.frames.push_back(in.names[fr->second]);
      }
      d.samples[p.perf_sample().tid()].push_back(s);
    }
  }
  for (const auto& [uuid, stack] : open)
    if (!stack.empty()) d.errors.push_back("a slice never ends");
  return d;
}

// The synthetic run: two threads, a call path with a source line, NVTX
// ranges (nested, adjacent, overlapping, one still open), GPU activities.
struct PfFixture {
  cct::Tree tree;
  store::RunTrace trace;
  store::RunMeta meta;
};

PfFixture MakePfFixture() {
  PfFixture f;
  cct::Tree& t = f.tree;
  t.metrics().RegisterStandard("cputime").value();
  auto child = [&t](NodeId parent, FrameKind kind, const std::string& name, const std::string& file = {},
                    uint32_t line = 0) { return t.InternChild(parent, t.InternFrame(kind, name, {}, file, line)); };
  const NodeId main_thread = child(cct::kRootNode, FrameKind::kThread, "main thread");
  const NodeId worker = child(cct::kRootNode, FrameKind::kThread, "worker");
  const NodeId main_fn = child(main_thread, FrameKind::kFunction, "main", "main.cc", 10);
  const NodeId solve = child(main_fn, FrameKind::kFunction, "solve", "solve.cc", 5);
  const NodeId line = child(solve, FrameKind::kLine, "solve.cc:42", "solve.cc", 42);
  const NodeId work = child(worker, FrameKind::kFunction, "work");
  const NodeId outer = child(main_thread, FrameKind::kNvtx, "outer");
  const NodeId inner = child(outer, FrameKind::kNvtx, "inner");
  const NodeId overlap = child(outer, FrameKind::kNvtx, "overlap");
  const NodeId w_outer = child(worker, FrameKind::kNvtx, "outer");
  const NodeId w_open = child(w_outer, FrameKind::kNvtx, "open");
  const NodeId kernel_ph = child(solve, FrameKind::kGpuOp, std::string(cct::GpuOpPlaceholder(cct::GpuOpKind::kKernel)));
  const NodeId kernel = child(kernel_ph, FrameKind::kKernel, "scale_kernel");
  const NodeId copyin = child(main_fn, FrameKind::kGpuOp, std::string(cct::GpuOpPlaceholder(cct::GpuOpKind::kCopyIn)));
  const NodeId memset = child(main_fn, FrameKind::kGpuOp, std::string(cct::GpuOpPlaceholder(cct::GpuOpKind::kMemset)));
  const NodeId copyout = child(main_fn, FrameKind::kGpuOp, std::string(cct::GpuOpPlaceholder(cct::GpuOpKind::kCopyOut)));
  for (NodeId n : {line, main_fn, work}) t.AddValue(n, 0, 1);

  store::RunTrace& tr = f.trace;
  const int64_t e = kPfEpoch;
  tr.samples.push_back({main_thread, {e + 1 * kPfMs, e + 2 * kPfMs, e + 3 * kPfMs, e + 4 * kPfMs},
                        {line, main_fn, line, main_thread}});
  tr.samples.push_back({worker, {e + 1 * kPfMs, e + 6 * kPfMs, e + 7 * kPfMs}, {work, work, work}});
  // main: outer [10, 50] holds inner [20, 30] and inner [30, 40] (adjacent);
  // overlap [45, 60] starts in outer and ends after it. worker: outer
  // [5, 15], open from 70 (still open: it ends where the trace ends).
  tr.ranges = {{worker, w_outer, e + 5 * kPfMs, e + 15 * kPfMs},
               {main_thread, outer, e + 10 * kPfMs, e + 50 * kPfMs},
               {main_thread, inner, e + 20 * kPfMs, e + 30 * kPfMs},
               {main_thread, inner, e + 30 * kPfMs, e + 40 * kPfMs},
               {main_thread, overlap, e + 45 * kPfMs, e + 60 * kPfMs},
               {worker, w_open, e + 70 * kPfMs, store::kTraceOpenEnd}};
  using K = cct::GpuOpKind;
  tr.gpu = {{0, 7, K::kKernel, e + 100 * kPfMs, e + 110 * kPfMs, 0, kernel},
            {0, 8, K::kCopyIn, e + 100 * kPfMs, e + 130 * kPfMs, 1000, copyin},
            {0, 9, K::kCopyIn, e + 105 * kPfMs, e + 115 * kPfMs, 500, copyin},
            {0, 7, K::kKernel, e + 110 * kPfMs, e + 120 * kPfMs, 0, kernel},
            {0, 8, K::kMemset, e + 140 * kPfMs, e + 141 * kPfMs, 64, memset},
            {1, 0, K::kCopyOut, e + 200 * kPfMs, e + 210 * kPfMs, 4096, copyout}};
  f.meta.id = 3;
  f.meta.pid = 4242;
  f.meta.name = "phases";
  f.meta.source = "cct-record";
  f.meta.state = store::RunState::kComplete;
  return f;
}

std::string PfExport(const PfFixture& f) {
  std::ostringstream out;
  REQUIRE(exporters::WritePerfetto(f.tree, f.trace, f.meta, out).ok());
  return out.str();
}

std::vector<std::string> PfNames(const std::vector<PfSlice>& slices) {
  std::vector<std::string> names;
  for (const PfSlice& s : slices) names.push_back(s.name);
  return names;
}

}  // namespace

TEST_CASE("perfetto export: tracks, nested slices, samples and their stacks, GPU streams, bytes in flight") {
  const PfFixture f = MakePfFixture();
  const PfDecoded d = PfDecode(PfExport(f));
  for (const std::string& e : d.errors) FAIL_CHECK(e);
  const int64_t e = kPfEpoch;

  // One process, named by the run; its threads.
  uint64_t process = 0;
  for (const auto& track : d.tracks)
    if (!track.second.process_name.empty()) process = track.first;
  REQUIRE(process != 0);
  CHECK(d.tracks.at(process).process_name == "phases");
  CHECK(d.tracks.at(process).pid == 4242);
  const uint64_t main_track = d.Track("main thread"), worker_track = d.Track("worker");
  REQUIRE(main_track != 0);
  REQUIRE(worker_track != 0);
  const PfTrack& mt = d.tracks.at(main_track);
  const PfTrack& wt = d.tracks.at(worker_track);
  CHECK(mt.pid == 4242);
  CHECK(wt.pid == 4242);
  CHECK(mt.tid != wt.tid);

  // main's ranges: outer with two inner at depth 1, the adjacent pair apart;
  // overlap on its own child track with its exact times.
  const std::vector<PfSlice>& ms = d.slices.at(main_track);
  REQUIRE(ms.size() == 3);
  CHECK(PfNames(ms) == std::vector<std::string>{"outer", "inner", "inner"});
  CHECK(ms[0].start == e + 10 * kPfMs);
  CHECK(ms[0].end == e + 50 * kPfMs);
  CHECK(ms[0].depth == 0);
  CHECK(ms[1].start == e + 20 * kPfMs);
  CHECK(ms[1].end == e + 30 * kPfMs);
  CHECK(ms[1].depth == 1);
  CHECK(ms[2].start == e + 30 * kPfMs);
  CHECK(ms[2].end == e + 40 * kPfMs);
  CHECK(ms[2].depth == 1);
  const uint64_t lane = d.Track("main thread (overlapping 1)");
  REQUIRE(lane != 0);
  CHECK(d.tracks.at(lane).parent == main_track);
  REQUIRE(d.slices.at(lane).size() == 1);
  CHECK(d.slices.at(lane)[0].name == "overlap");
  CHECK(d.slices.at(lane)[0].start == e + 45 * kPfMs);
  CHECK(d.slices.at(lane)[0].end == e + 60 * kPfMs);
  // worker: outer, then the open range, ending at the trace's last event
  // (the copy-out's end, 210 ms).
  const std::vector<PfSlice>& ws = d.slices.at(worker_track);
  REQUIRE(ws.size() == 2);
  CHECK(PfNames(ws) == std::vector<std::string>{"outer", "open"});
  CHECK(ws[1].depth == 0);
  CHECK(ws[1].start == e + 70 * kPfMs);
  CHECK(ws[1].end == e + 210 * kPfMs);

  // Samples: per thread their count, times and stacks from the thread down,
  // functions with file:line, line nodes as they are named.
  REQUIRE(d.samples.count(static_cast<uint32_t>(mt.tid)));
  REQUIRE(d.samples.count(static_cast<uint32_t>(wt.tid)));
  const std::vector<PfSample>& m = d.samples.at(static_cast<uint32_t>(mt.tid));
  REQUIRE(m.size() == 4);
  const std::vector<std::string> to_line{"main thread", "main (main.cc:10)", "solve (solve.cc:5)", "solve.cc:42"};
  CHECK(m[0].frames == to_line);
  CHECK(m[1].frames == std::vector<std::string>{"main thread", "main (main.cc:10)"});
  CHECK(m[2].frames == to_line);
  CHECK(m[3].frames == std::vector<std::string>{"main thread"});
  for (size_t i = 0; i < m.size(); ++i) CHECK(m[i].ts == e + static_cast<int64_t>(i + 1) * kPfMs);
  const std::vector<PfSample>& w = d.samples.at(static_cast<uint32_t>(wt.tid));
  REQUIRE(w.size() == 3);
  for (const PfSample& s : w) CHECK(s.frames == std::vector<std::string>{"worker", "work"});

  // GPU: a track per (device, stream) under the process.
  const uint64_t s7 = d.Track("GPU 0 stream 7"), s8 = d.Track("GPU 0 stream 8"), s9 = d.Track("GPU 0 stream 9"),
                 s10 = d.Track("GPU 1 stream 0");
  for (uint64_t s : {s7, s8, s9, s10}) {
    REQUIRE(s != 0);
    CHECK(d.tracks.at(s).parent == process);
  }
  const std::vector<PfSlice>& k = d.slices.at(s7);
  REQUIRE(k.size() == 2);
  CHECK(PfNames(k) == std::vector<std::string>{"scale_kernel", "scale_kernel"});
  CHECK(k[0].start == e + 100 * kPfMs);
  CHECK(k[0].end == e + 110 * kPfMs);
  CHECK(k[1].depth == 0);
  CHECK(k[1].start == e + 110 * kPfMs);
  CHECK(k[0].args.count("bytes") == 0);
  CHECK(k[0].args.at("launch path") == "main > solve");
  const std::vector<PfSlice>& c = d.slices.at(s8);
  REQUIRE(c.size() == 2);
  CHECK(PfNames(c) == std::vector<std::string>{"copyin", "memset"});
  CHECK(c[0].args.at("bytes") == "1000");
  CHECK(c[0].args.at("launch path") == "main");
  CHECK(c[1].args.at("bytes") == "64");
  CHECK(c[1].start == e + 140 * kPfMs);
  CHECK(c[1].end == e + 141 * kPfMs);
  REQUIRE(d.slices.at(s9).size() == 1);
  CHECK(d.slices.at(s9)[0].args.at("bytes") == "500");
  REQUIRE(d.slices.at(s10).size() == 1);
  CHECK(d.slices.at(s10)[0].name == "copyout");

  // Bytes in flight: copies only (not the memset), per device, changing
  // where a copy starts or ends.
  const uint64_t f0 = d.Track("GPU 0 bytes in flight"), f1 = d.Track("GPU 1 bytes in flight");
  REQUIRE(f0 != 0);
  REQUIRE(f1 != 0);
  CHECK(d.tracks.at(f0).counter);
  using Points = std::vector<std::pair<int64_t, int64_t>>;
  CHECK(d.counters.at(f0) == Points{{e + 100 * kPfMs, 1000}, {e + 105 * kPfMs, 1500}, {e + 115 * kPfMs, 1000},
                                    {e + 130 * kPfMs, 0}});
  CHECK(d.counters.at(f1) == Points{{e + 200 * kPfMs, 4096}, {e + 210 * kPfMs, 0}});
}

TEST_CASE("perfetto export: ranges open all at once go to at most 15 overlap tracks, the rest cut to nest") {
  // 20 ranges on one thread, range i over [i, 100 + i] ms: none nests in an
  // earlier one, so ranges 0..15 take the thread's track and 15 overlap
  // tracks; 16..19 go to the last one, their ends cut to range 15's (115 ms).
  PfFixture f = MakePfFixture();
  const NodeId thread = f.trace.samples[0].thread;
  const NodeId range = f.trace.ranges[1].node;
  f.trace.ranges.clear();
  f.trace.gpu.clear();
  for (int64_t i = 0; i < 20; ++i)
    f.trace.ranges.push_back({thread, range, kPfEpoch + i * kPfMs, kPfEpoch + (100 + i) * kPfMs});
  const PfDecoded d = PfDecode(PfExport(f));
  for (const std::string& e : d.errors) FAIL_CHECK(e);
  size_t slices = 0, lanes = 0;
  for (const auto& track : d.tracks) {
    if (track.second.name.find("(overlapping ") != std::string::npos) ++lanes;
    if (d.slices.count(track.first)) slices += d.slices.at(track.first).size();
  }
  CHECK(lanes == 15);
  CHECK(slices == 20);
  const std::vector<PfSlice>& last = d.slices.at(d.Track("main thread (overlapping 15)"));
  REQUIRE(last.size() == 5);
  CHECK(last[0].start == kPfEpoch + 15 * kPfMs);
  CHECK(last[0].end == kPfEpoch + 115 * kPfMs);
  for (size_t i = 1; i < last.size(); ++i) {
    CHECK(last[i].start == kPfEpoch + static_cast<int64_t>(15 + i) * kPfMs);
    CHECK(last[i].end == kPfEpoch + 115 * kPfMs);
  }
}

TEST_CASE("perfetto export through cct-query: a stored trace; runs without one are refused") {
  testutil::TempDir dir;
  const std::string db = dir / "p.db";
  PfFixture f = MakePfFixture();
  {
    auto d = store::Database::Open(db, store::Database::Mode::kWrite);
    REQUIRE(d.ok());
    REQUIRE((*d)->CreateRun(f.meta, &f.tree, nullptr, &f.trace).ok());
    store::RunMeta plain = f.meta;
    plain.name = "untraced";
    REQUIRE((*d)->CreateRun(plain, &f.tree).ok());
  }
  int rc = -1;
  std::string err;
  testutil::Query(db, {"export", "phases", "--to", "perfetto", "-o", dir / "t.perfetto-trace"}, &rc, &err);
  INFO(err);
  REQUIRE(rc == 0);
  const PfDecoded d = PfDecode(testutil::ReadFileOrDie(dir / "t.perfetto-trace"));
  for (const std::string& e : d.errors) FAIL_CHECK(e);
  // The store renumbers the tree; the export follows: the same slices and
  // stacks by name.
  const uint64_t main_track = d.Track("main thread");
  REQUIRE(main_track != 0);
  CHECK(PfNames(d.slices.at(main_track)) == std::vector<std::string>{"outer", "inner", "inner"});
  CHECK(d.samples.at(static_cast<uint32_t>(d.tracks.at(main_track).tid)).at(0).frames ==
        std::vector<std::string>{"main thread", "main (main.cc:10)", "solve (solve.cc:5)", "solve.cc:42"});
  CHECK(d.slices.at(d.Track("GPU 0 stream 7")).at(0).args.at("launch path") == "main > solve");

  // A window exports its events only: the trace starts at the first sample
  // (1 ms), so t=0.001..0.035 is [2 ms, 36 ms): main's samples at 2, 3, 4,
  // the worker's at 6 and 7; the ranges overlapping it, cut at 36 ms; no
  // GPU work (from 100 ms).
  testutil::Query(db, {"export", "phases@t=0.001..0.035", "--to", "perfetto", "-o", dir / "w.perfetto-trace"}, &rc,
                  &err);
  INFO(err);
  REQUIRE(rc == 0);
  const PfDecoded w = PfDecode(testutil::ReadFileOrDie(dir / "w.perfetto-trace"));
  for (const std::string& e : w.errors) FAIL_CHECK(e);
  const uint64_t w_main = w.Track("main thread");
  REQUIRE(w_main != 0);
  CHECK(w.samples.at(static_cast<uint32_t>(w.tracks.at(w_main).tid)).size() == 3);
  CHECK(PfNames(w.slices.at(w_main)) == std::vector<std::string>{"outer", "inner", "inner"});
  CHECK(w.slices.at(w_main).at(0).start == kPfEpoch + 10 * kPfMs);
  CHECK(w.slices.at(w_main).at(0).end == kPfEpoch + 36 * kPfMs);  // outer [10, 50], cut
  CHECK(w.slices.at(w_main).at(2).end == kPfEpoch + 36 * kPfMs);  // inner [30, 40], cut
  CHECK(w.samples.at(static_cast<uint32_t>(w.tracks.at(w.Track("worker")).tid)).size() == 2);
  CHECK(w.Track("GPU 0 stream 7") == 0);

  testutil::Query(db, {"export", "untraced", "--to", "perfetto"}, &rc, &err);
  CHECK(rc == 2);
  CHECK(err.find("'untraced' has no trace (record with cct-record --trace)") != std::string::npos);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  testutil::Query(db, {"export", "tag:none=x", "--to", "perfetto"}, &rc, &err);
  CHECK(rc == 2);
}

TEST_CASE("perfetto export of a recording: the NVTX slices at the program's phases, every sample") {
  const std::string prog = testutil::BuildDir() + "/tests/collector/cct-test-trace-phases";
  if (!std::filesystem::exists(prog)) {
    MESSAGE("SKIPPED: no NVTX3 headers, no trace-phases program");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "r.db";
  auto r = testutil::Run({testutil::Tool("cct-record"), "-o", db, "--trace", "--", prog});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  int rc = -1;
  std::string err;
  testutil::Query(db, {"export", "latest", "--to", "perfetto", "-o", dir / "r.perfetto-trace"}, &rc, &err);
  INFO(err);
  REQUIRE(rc == 0);
  const PfDecoded d = PfDecode(testutil::ReadFileOrDie(dir / "r.perfetto-trace"));
  for (const std::string& e : d.errors) FAIL_CHECK(e);

  // The phases as the program printed them ("PHASE thread name start end").
  struct Phase {
    std::string thread, name;
    int64_t start = 0, end = 0;
  };
  std::vector<Phase> phases;
  std::istringstream in(r.out);
  std::string tag;
  Phase p;
  while (in >> tag)
    if (tag == "PHASE" && in >> p.thread >> p.name >> p.start >> p.end) phases.push_back(p);
  REQUIRE(phases.size() == 5);
  size_t slices = 0;
  for (const auto& [uuid, s] : d.slices)
    if (d.tracks.at(uuid).tid) slices += s.size();
  CHECK(slices == 5);
  for (const Phase& ph : phases) {
    const uint64_t track = d.Track(ph.thread == "main" ? "main thread" : ph.thread);
    REQUIRE(track != 0);
    size_t matched = 0;
    for (const PfSlice& s : d.slices.at(track))
      // Within 10 ms: the thread may be preempted between the program's
      // clock reading and the collector's, on a loaded machine.
      matched += s.name == ph.name && std::llabs(s.start - ph.start) <= 10 * kPfMs && std::llabs(s.end - ph.end) <= 10 * kPfMs;
    CHECK_MESSAGE(matched == 1, ph.thread << " " << ph.name);
  }
  // Every sample of the trace, on its thread's track.
  auto s = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(s.ok());
  const auto runs = (*s)->ListRuns();
  REQUIRE(runs.ok());
  const auto tree = (*s)->ReadTree(runs->back().id);
  const auto trace = (*s)->ReadTrace(runs->back().id);
  REQUIRE(tree.ok());
  REQUIRE(trace.ok());
  REQUIRE(trace->has_value());
  REQUIRE((**trace).samples.size() == 2);
  for (const store::TraceSamples& ts : (**trace).samples) {
    const uint64_t track = d.Track(std::string(tree->name(ts.thread)));
    REQUIRE(track != 0);
    CHECK(d.samples.at(static_cast<uint32_t>(d.tracks.at(track).tid)).size() == ts.time_ns.size());
  }
}

TEST_CASE("perfetto export of a fake-GPU recording: stream tracks with every kernel, copy and memset, bytes in flight") {
  const std::string app = testutil::BuildDir() + "/tests/collector/cct-test-gpu-fake-app";
  const std::string adapter = testutil::BuildDir() + "/tests/collector/libcct-test-fakegpu.so";
  if (!std::filesystem::exists(app) || !std::filesystem::exists(adapter)) {
    MESSAGE("SKIPPED: no CUPTI headers or NVTX3, no fake-GPU program");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "g.db";
  auto r = testutil::Run({testutil::Tool("cct-record"), "-o", db, "--trace", "--", app},
                         {{"CCT_GPU_ADAPTER", adapter}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  int rc = -1;
  std::string err;
  testutil::Query(db, {"export", "latest", "--to", "perfetto", "-o", dir / "g.perfetto-trace"}, &rc, &err);
  INFO(err);
  REQUIRE(rc == 0);
  const PfDecoded d = PfDecode(testutil::ReadFileOrDie(dir / "g.perfetto-trace"));
  for (const std::string& e : d.errors) FAIL_CHECK(e);

  // gpu_fake_app.cc's construction (tests/collector/gpu_record_test.cc
  // checks the trace against it): 20 scale_kernel and 7 add_kernel launches
  // in compute(), kernel_a and kernel_b in a graph, one more scale_kernel in
  // sampled(); a 3 MiB + 4 KiB copy in, a 1 MiB copy out, a 64 KiB memset,
  // an allocation and a synchronization.
  std::map<std::string, int> count;
  std::map<std::string, std::string> bytes;
  for (const auto& track : d.slices) {
    if (d.tracks.at(track.first).name.rfind("GPU ", 0) != 0) continue;
    for (const PfSlice& s : track.second) {
      ++count[s.name];
      if (s.args.count("bytes")) bytes[s.name] = s.args.at("bytes");
    }
  }
  CHECK(count["scale_kernel(float*, int, float)"] == 21);
  CHECK(count["add_kernel(float const*, float const*, float*, int)"] == 7);
  CHECK(count["kernel_a()"] == 1);
  CHECK(count["kernel_b()"] == 1);
  CHECK(count.size() == 9);  // those four kernels and the five other ops, nothing else
  CHECK(count["copyin"] == 1);
  CHECK(count["copyout"] == 1);
  CHECK(count["memset"] == 1);
  CHECK(count["alloc"] == 1);
  CHECK(count["sync"] == 1);
  CHECK(bytes["copyin"] == std::to_string((uint64_t{3} << 20) + 4096));
  CHECK(bytes["copyout"] == std::to_string(uint64_t{1} << 20));
  CHECK(bytes["memset"] == "65536");

  // Per (device, stream), the trace's own activities; bytes in flight per
  // device recomputed by brute force at every copy's start and end.
  auto s = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(s.ok());
  const auto runs = (*s)->ListRuns();
  REQUIRE(runs.ok());
  const auto trace = (*s)->ReadTrace(runs->back().id);
  REQUIRE(trace.ok());
  REQUIRE(trace->has_value());
  std::map<std::string, size_t> per_stream;
  std::map<uint32_t, std::vector<const store::TraceGpuActivity*>> copies;
  for (const store::TraceGpuActivity& a : (**trace).gpu) {
    ++per_stream["GPU " + std::to_string(a.device) + " stream " + std::to_string(a.stream)];
    if (a.kind == cct::GpuOpKind::kCopyIn || a.kind == cct::GpuOpKind::kCopyOut || a.kind == cct::GpuOpKind::kCopy)
      copies[a.device].push_back(&a);
  }
  for (const auto& st : per_stream) {
    const uint64_t track = d.Track(st.first);
    REQUIRE_MESSAGE(track != 0, st.first);
    CHECK(d.slices.at(track).size() == st.second);
  }
  for (const auto& dev : copies) {
    const uint64_t track = d.Track("GPU " + std::to_string(dev.first) + " bytes in flight");
    REQUIRE(track != 0);
    std::set<int64_t> times;
    for (const store::TraceGpuActivity* a : dev.second) times.insert(a->start_ns), times.insert(a->end_ns);
    std::vector<std::pair<int64_t, int64_t>> expected;
    for (int64_t t : times) {
      int64_t sum = 0;
      for (const store::TraceGpuActivity* a : dev.second)
        if (a->start_ns <= t && t < a->end_ns) sum += static_cast<int64_t>(a->bytes);
      expected.emplace_back(t, sum);
    }
    CHECK(d.counters.at(track) == expected);
  }
}

// A real GPU's trace, replayed: tests/data/gpu_trace/ holds what
// tests/gpu/check_trace.py recorded on an NVIDIA H200 (trace_gpu.cu under
// cct-record --trace) and what the program printed about itself: its own
// CLOCK_REALTIME readings around each piece of GPU work, taken before the
// launch and after waiting for the GPU. The expected values come from that
// line and the program's construction, not from cctdb.
TEST_CASE("perfetto export of a real H200 trace (tests/data/gpu_trace): kernels and ranges where the program saw them") {
  const std::string dir = testutil::SourceDir() + "/tests/data/gpu_trace";
  if (!std::filesystem::exists(dir + "/trace_gpu.db")) {
    MESSAGE("SKIPPED: no tests/data/gpu_trace fixture");
    return;
  }
  const nlohmann::json fixture = nlohmann::json::parse(testutil::ReadFileOrDie(dir + "/trace_gpu.program.json"));
  const nlohmann::json& prog = fixture.at("program");
  const nlohmann::json& phases = prog.at("phases");
  REQUIRE(phases.size() == 5);
  testutil::TempDir tmp;
  const std::string db = tmp / "trace_gpu.db";
  std::filesystem::copy_file(dir + "/trace_gpu.db", db);  // read-only use, but LMDB wants its lock file

  // The stored trace: six spin_kernel launches (a warm-up, then one per
  // phase) and one 64 MiB copy; each phase's kernel inside the program's
  // interval (100 µs of slack: the CUPTI clock's offset, measured once)
  // and as long as the program made it spin (2% + 20 µs).
  auto s = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(s.ok());
  const auto runs = (*s)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  const auto tree = (*s)->ReadTree(runs->front().id);
  REQUIRE(tree.ok());
  const auto trace = (*s)->ReadTrace(runs->front().id);
  REQUIRE(trace.ok());
  REQUIRE(trace->has_value());
  std::vector<const store::TraceGpuActivity*> kernels, copies;
  for (const store::TraceGpuActivity& a : (**trace).gpu) {
    if (a.kind == cct::GpuOpKind::kKernel && tree->name(a.node).find("spin_kernel") != std::string_view::npos)
      kernels.push_back(&a);
    if (a.kind == cct::GpuOpKind::kCopyIn) copies.push_back(&a);
  }
  REQUIRE(kernels.size() == 6);
  constexpr int64_t kSlack = 100000;
  for (size_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    const nlohmann::json& p = phases[k];
    const int64_t start = p.at("start"), end = p.at("end"), spin = p.at("spin_ns");
    const store::TraceGpuActivity& a = *kernels[k + 1];
    CHECK(a.start_ns >= start - kSlack);
    CHECK(a.end_ns <= end + kSlack);
    CHECK(std::llabs(a.end_ns - a.start_ns - spin) <= spin / 50 + 20000);
  }
  REQUIRE(copies.size() == 1);
  CHECK(copies[0]->bytes == prog.at("copy").at("bytes").get<uint64_t>());
  CHECK(copies[0]->start_ns >= prog.at("copy").at("start").get<int64_t>() - kSlack);
  CHECK(copies[0]->end_ns <= prog.at("copy").at("end").get<int64_t>() + kSlack);
  // The main thread's NVTX "phase" ranges hold the program's intervals:
  // pushed before its first reading, popped after its second (20 µs of
  // slack for moving monotonic times to the epoch).
  std::vector<const store::TraceRange*> ranges;
  for (const store::TraceRange& r : (**trace).ranges)
    if (tree->name(r.node) == "phase") ranges.push_back(&r);
  REQUIRE(ranges.size() == 5);
  for (size_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    CHECK(ranges[k]->start_ns <= phases[k].at("start").get<int64_t>() + 20000);
    CHECK(ranges[k]->start_ns >= phases[k].at("start").get<int64_t>() - 1000000);
    CHECK(ranges[k]->end_ns >= phases[k].at("end").get<int64_t>() - 20000);
  }

  // cct-query: the range's instances, and a window per instance holding
  // that phase's one launch and its whole kernel time.
  int rc = -1;
  std::string err;
  const nlohmann::json it = nlohmann::json::parse(
      testutil::Query(db, {"iterations", "traced", "--range", "phase", "--format", "json"}, &rc, &err));
  INFO(err);
  REQUIRE(rc == 0);
  REQUIRE(it.at("iterations").size() == 5);
  for (size_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    CHECK(it["iterations"][k].at("start_time_ns").get<int64_t>() == ranges[k]->start_ns);
    const std::string window = "traced@range=phase#" + std::to_string(k + 1);
    const std::string top = testutil::Query(
        db, {"top", window, "--by", "kernel", "-m", "gker", "-m", "gker:count", "--format", "json"}, &rc, &err);
    REQUIRE(rc == 0);
    const nlohmann::json rows = nlohmann::json::parse(top).at("rows");
    double gker = 0, count = 0;
    for (const nlohmann::json& row : rows) {
      gker += row.at("exclusive").value("gker", 0.0);
      count += row.at("exclusive").value("gker:count", 0.0);
    }
    const double spin = phases[k].at("spin_ns").get<double>() / 1e9;
    CHECK(count == 1);
    CHECK(std::abs(gker - spin) <= spin / 50 + 20e-6);
  }

  // The Perfetto file: the GPU stream track's slices are the trace's, the
  // copy's bytes in flight peak at 64 MiB, and the "phase" slices sit on
  // the main thread's track.
  testutil::Query(db, {"export", "traced", "--to", "perfetto", "-o", tmp / "t.perfetto-trace"}, &rc, &err);
  REQUIRE(rc == 0);
  const PfDecoded d = PfDecode(testutil::ReadFileOrDie(tmp / "t.perfetto-trace"));
  for (const std::string& e : d.errors) FAIL_CHECK(e);
  size_t spin_slices = 0, gpu_slices = 0;
  for (const auto& track : d.slices) {
    if (d.tracks.at(track.first).name.rfind("GPU ", 0) != 0) continue;
    for (const PfSlice& sl : track.second) {
      ++gpu_slices;
      if (sl.name.find("spin_kernel") != std::string::npos) ++spin_slices;
    }
  }
  CHECK(spin_slices == 6);
  CHECK(gpu_slices == (**trace).gpu.size());
  const uint64_t in_flight = d.Track("GPU 0 bytes in flight");
  REQUIRE(in_flight != 0);
  int64_t peak = 0;
  for (const auto& [ts, v] : d.counters.at(in_flight)) peak = std::max(peak, v);
  CHECK(peak == prog.at("copy").at("bytes").get<int64_t>());
  const uint64_t main_track = d.Track("main thread");
  REQUIRE(main_track != 0);
  size_t phase_slices = 0;
  for (const PfSlice& sl : d.slices.at(main_track)) phase_slices += sl.name == "phase";
  CHECK(phase_slices == 5);
}
