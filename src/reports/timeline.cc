// `cct-query timeline RUN`: the run's trace as time buckets, per thread the
// item (function, NVTX range or node) most of the bucket's samples were in,
// per GPU stream the kernel or operation busy longest in it, so phases and
// stalls show at a glance. Reads the database; pure otherwise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "cct/pattern.h"
#include "output/format.h"
#include "output/json_writer.h"
#include "query/time_window.h"
#include "reports/registry.h"
#include "store/selector.h"

namespace reports {

namespace {

// kOwn: the node's own name (a stream's kernels and operations).
enum class TimelineBy { kFunction, kRange, kNode, kOwn };

// Buckets beyond this make a report nobody reads and a table nobody can hold.
constexpr int64_t kMaxTimelineBuckets = 100000;

// One cell: the hottest item of a track in a bucket. An empty item: idle.
struct TimelineCell {
  std::string item;
  uint64_t count = 0;  // samples (threads) or operations (streams) of the item
  double share = 0;    // of the bucket's samples (threads) or of its time (streams)
};

struct TimelineTrack {
  std::string name;
  std::vector<TimelineCell> cells;  // per bucket
};

// A nice bucket length near `ns`: 1, 2 or 5 times a power of ten, from 1 µs.
int64_t NiceBucket(int64_t ns) {
  int64_t step = 1000;
  for (;;) {
    for (int64_t m : {1, 2, 5})
      if (step * m >= ns) return step * m;
    step *= 10;
  }
}

// What a sample on `node` counts for. By function (range): every function
// or kernel (NVTX range) on its path, each once, with its depth — a bucket's
// hottest is then the one on most samples' stacks, the deepest of those
// (a phase's function rather than the libc or vDSO leaf it keeps calling,
// and the common caller where two phases share a bucket). By node, and for
// a stream's operations: the node alone. Keys are interned names.
class ItemNamer {
 public:
  struct Held {
    int64_t key;
    int depth;
  };
  ItemNamer(const cct::Tree& tree, TimelineBy by)
      : tree_(tree), by_(by), held_(tree.size()), depth_(tree.size(), 0), done_(tree.size(), 0) {}

  // Never empty.
  const std::vector<Held>& Items(cct::NodeId node) {
    if (node >= held_.size()) {
      single_ = {{Intern("<unknown node>"), 0}};
      return single_;
    }
    if (by_ == TimelineBy::kNode || by_ == TimelineBy::kOwn) {
      // One item per node (Fill is not used in these modes).
      if (!done_[node]) {
        held_[node] = {{Intern(by_ == TimelineBy::kOwn ? std::string(tree_.name(node)) : PathName(node)), 0}};
        done_[node] = 1;
      }
      return held_[node];
    }
    if (!done_[node]) Fill(node);
    if (!held_[node].empty()) return held_[node];
    // Outside every function (a partial call path, the thread) or range.
    single_ = {{Intern(by_ == TimelineBy::kRange ? "(no range)" : std::string(tree_.name(node))), 0}};
    return single_;
  }
  const std::string& name(int64_t key) const { return names_[static_cast<size_t>(key)]; }

 private:
  bool Counts(cct::NodeId n) const {
    const cct::FrameKind k = tree_.kind(n);
    if (by_ == TimelineBy::kRange) return k == cct::FrameKind::kNvtx;
    return k == cct::FrameKind::kFunction || k == cct::FrameKind::kKernel;
  }
  // The functions (ranges) on the paths of `node` and its unfilled
  // ancestors, top-down (no recursion: paths can be thousands deep).
  void Fill(cct::NodeId node) {
    std::vector<cct::NodeId> chain;
    for (cct::NodeId n = node; !done_[n]; n = tree_.parent(n)) {
      chain.push_back(n);
      if (n == cct::kRootNode) break;
    }
    for (size_t i = chain.size(); i-- > 0;) {
      const cct::NodeId n = chain[i];
      done_[n] = 1;
      std::vector<Held>& h = held_[n];
      if (n == cct::kRootNode) continue;
      depth_[n] = depth_[tree_.parent(n)] + 1;
      if (tree_.kind(n) == cct::FrameKind::kThread) continue;
      h = held_[tree_.parent(n)];
      if (!Counts(n)) continue;
      const int64_t key = Intern(std::string(tree_.name(n)));
      const int depth = depth_[n];
      bool seen = false;  // recursion: once per sample, at its deepest
      for (Held& x : h)
        if (x.key == key) {
          x.depth = depth;
          seen = true;
        }
      if (!seen) h.push_back({key, depth});
    }
  }
  std::string PathName(cct::NodeId node) const {
    std::string path;
    for (cct::NodeId n = node; n != cct::kRootNode && tree_.kind(n) != cct::FrameKind::kThread; n = tree_.parent(n))
      path = std::string(tree_.name(n)) + (path.empty() ? "" : " > " + path);
    return path.empty() ? std::string(tree_.name(node)) : path;
  }
  int64_t Intern(const std::string& s) {
    auto [it, added] = index_.emplace(s, static_cast<int64_t>(names_.size()));
    if (added) names_.push_back(s);
    return it->second;
  }

  const cct::Tree& tree_;
  TimelineBy by_;
  std::vector<std::vector<Held>> held_;
  std::vector<int> depth_;  // in the tree, of filled nodes
  std::vector<char> done_;
  std::vector<Held> single_;  // Items' answer when it is one item
  std::unordered_map<std::string, int64_t> index_;
  std::vector<std::string> names_;
};

// A bucket's tally of one item: samples (or busy ns) and summed depth.
struct TimelineTally {
  int64_t value = 0;
  int64_t depth_sum = 0;
  uint64_t ops = 0;
};

// The hottest of a bucket's tallies: the largest value, then the deepest on
// average, then the name first in byte order.
int64_t Hottest(const std::map<int64_t, TimelineTally>& tally, const ItemNamer& namer) {
  int64_t best = -1;
  const TimelineTally* b = nullptr;
  for (const auto& [key, t] : tally) {
    bool better = b == nullptr || t.value > b->value;
    if (!better && t.value == b->value) {
      // depth_sum / value compared without division (values equal).
      if (t.depth_sum != b->depth_sum) better = t.depth_sum > b->depth_sum;
      else better = namer.name(key) < namer.name(best);
    }
    if (better) {
      best = key;
      b = &t;
    }
  }
  return best;
}

// Seconds with as many decimals as the bucket length needs (ms, µs or ns).
std::string TimeText(int64_t ns, int64_t step) {
  const int decimals = step % 1000000 == 0 ? 3 : step % 1000 == 0 ? 6 : 9;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*fs", decimals, static_cast<double>(ns) / 1e9);
  return buf;
}

std::string ShareText(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%3.0f%%", share * 100);
  return buf;
}

}  // namespace

cct::Status TimelineCommand(const ReportRequest& request, std::ostream& out) {
  // --by means other things here than top's groupings: parsed below.
  ReportRequest common = request;
  common.by.reset();
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(common));
  TimelineBy by = TimelineBy::kFunction;
  if (request.by) {
    if (*request.by == "range" || *request.by == "nvtx") by = TimelineBy::kRange;
    else if (*request.by == "node") by = TimelineBy::kNode;
    else if (*request.by != "function")
      return cct::InvalidArgument("timeline --by takes function, range or node, not '" + *request.by + "'");
  }
  std::optional<cct::Pattern> thread_filter;
  if (request.thread) {
    CCT_ASSIGN_OR_RETURN(thread_filter, cct::Pattern::Compile(*request.thread, "--thread pattern"));
  }
  std::optional<int64_t> from_rel, to_rel, bucket;
  auto duration = [](const std::string& option, const std::string& text) -> cct::Result<int64_t> {
    std::optional<int64_t> ns = store::ParseDuration(text);
    if (!ns) return cct::InvalidArgument("bad " + option + " '" + text + "' (seconds from the trace's start: 2.0, 2.0s, 1500ms, 250us)");
    return *ns;
  };
  if (request.from) {
    CCT_ASSIGN_OR_RETURN(from_rel, duration("--from", *request.from));
  }
  if (request.until) {
    CCT_ASSIGN_OR_RETURN(to_rel, duration("--to", *request.until));
  }
  if (request.bucket_ms) {
    const double ms = *request.bucket_ms;
    if (!(ms >= 0.001 && ms <= 1e9)) return cct::InvalidArgument("--bucket takes milliseconds from 0.001");
    bucket = static_cast<int64_t>(std::llround(ms * 1e6));
  }
  if (from_rel && to_rel && *to_rel <= *from_rel) return cct::InvalidArgument("--to must be after --from");

  const std::string& selector = request.args.at(0);
  CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(selector, request.db_path));
  if (sel.iteration || sel.window)
    return cct::InvalidArgument("timeline shows the whole trace; drop the @ from '" + selector + "' and use --from/--to");
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(sel.db_path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(std::vector<store::RunMeta> runs, store::SelectRuns(*db, sel));
  if (sel.is_group() || runs.size() != 1)
    return cct::InvalidArgument("'" + selector + "' names " + std::to_string(runs.size()) +
                                " runs; timeline shows one run's trace");
  const store::RunMeta& run = runs.front();
  CCT_ASSIGN_OR_RETURN(cct::Tree tree, db->ReadTree(run.id));
  CCT_ASSIGN_OR_RETURN(std::optional<store::RunTrace> trace, db->ReadTrace(run.id));
  if (!trace) return cct::InvalidArgument("run " + std::to_string(run.id) + " has no trace (record with cct-record --trace)");
  for (const store::TraceSamples& s : trace->samples)
    if (s.node.size() != s.time_ns.size()) return cct::Corrupt("run " + std::to_string(run.id) + ": damaged trace");

  const store::TraceSpan span = SpanOf(*trace);
  const int64_t base = span.empty() ? 0 : span.first_ns;
  const int64_t from = base + from_rel.value_or(0);
  const int64_t to = to_rel ? base + *to_rel : (span.empty() ? base : span.last_ns + 1);
  const int64_t length = std::max<int64_t>(to - from, 0);
  const int64_t step = bucket ? *bucket : NiceBucket(std::max<int64_t>(length / 40, 1));
  const int64_t n_buckets = length == 0 ? 0 : (length + step - 1) / step;
  if (n_buckets > kMaxTimelineBuckets)
    return cct::InvalidArgument("--bucket " + output::NumberText(static_cast<double>(step) / 1e6) + " ms makes " +
                                std::to_string(n_buckets) + " buckets (at most " + std::to_string(kMaxTimelineBuckets) +
                                "); choose a larger one");
  const size_t nb = static_cast<size_t>(n_buckets);

  ItemNamer namer(tree, by);
  std::vector<TimelineTrack> tracks;
  for (const store::TraceSamples& s : trace->samples) {
    TimelineTrack track;
    track.name = s.thread < tree.size() ? std::string(tree.name(s.thread)) : "thread " + std::to_string(s.thread);
    if (thread_filter && !thread_filter->Search(track.name)) continue;
    track.cells.resize(nb);
    // Samples are in time order: one bucket's tally at a time.
    auto first = std::lower_bound(s.time_ns.begin(), s.time_ns.end(), from);
    size_t i = static_cast<size_t>(first - s.time_ns.begin());
    std::map<int64_t, TimelineTally> tally;
    while (i < s.time_ns.size() && s.time_ns[i] < to) {
      const size_t b = static_cast<size_t>((s.time_ns[i] - from) / step);
      const int64_t bucket_end = from + static_cast<int64_t>(b + 1) * step;
      tally.clear();
      uint64_t total = 0;
      for (; i < s.time_ns.size() && s.time_ns[i] < std::min(bucket_end, to); ++i) {
        for (const ItemNamer::Held& h : namer.Items(s.node[i])) {
          TimelineTally& t = tally[h.key];
          t.value += 1;
          t.depth_sum += h.depth;
        }
        ++total;
      }
      const int64_t best = Hottest(tally, namer);
      const uint64_t n = static_cast<uint64_t>(tally[best].value);
      track.cells[b] = {namer.name(best), n, static_cast<double>(n) / static_cast<double>(total)};
    }
    tracks.push_back(std::move(track));
  }
  // GPU streams: per bucket, each item's busy time clipped to the bucket.
  ItemNamer op_namer(tree, TimelineBy::kOwn);
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const store::TraceGpuActivity*>> streams;
  for (const store::TraceGpuActivity& g : trace->gpu) streams[{g.device, g.stream}].push_back(&g);
  for (const auto& [id, acts] : streams) {
    TimelineTrack track;
    track.name = "gpu " + std::to_string(id.first) + " stream " + std::to_string(id.second);
    if (thread_filter && !thread_filter->Search(track.name)) continue;
    track.cells.resize(nb);
    std::vector<std::map<int64_t, TimelineTally>> busy(nb);  // per bucket: key -> busy ns, operations
    for (const store::TraceGpuActivity* g : acts) {
      const int64_t a = std::max(g->start_ns, from), e = std::min(std::max(g->end_ns, g->start_ns), to);
      if (a >= to || (e <= a && !(g->start_ns >= from && g->start_ns < to))) continue;
      const int64_t key = op_namer.Items(g->node).front().key;
      for (size_t b = static_cast<size_t>((a - from) / step); b < nb; ++b) {
        const int64_t b0 = from + static_cast<int64_t>(b) * step, b1 = b0 + step;
        if (b0 >= std::max(e, a + 1)) break;
        TimelineTally& slot = busy[b][key];
        slot.value += std::max<int64_t>(0, std::min(e, b1) - std::max(a, b0));
        slot.ops += 1;
      }
    }
    for (size_t b = 0; b < nb; ++b) {
      if (busy[b].empty()) continue;
      const int64_t best = Hottest(busy[b], op_namer);
      const int64_t b0 = from + static_cast<int64_t>(b) * step, b1 = std::min(b0 + step, to);
      track.cells[b] = {op_namer.name(best), busy[b][best].ops,
                        static_cast<double>(busy[b][best].value) / static_cast<double>(std::max<int64_t>(b1 - b0, 1))};
    }
    tracks.push_back(std::move(track));
  }
  if (thread_filter && tracks.empty())
    return cct::NotFound("no thread or stream of run " + std::to_string(run.id) + " matches --thread '" +
                         *request.thread + "'");

  const char* by_name = by == TimelineBy::kFunction ? "function" : by == TimelineBy::kRange ? "range" : "node";
  auto bucket_start = [&](size_t b) { return from - base + static_cast<int64_t>(b) * step; };
  switch (opt.format) {
    case OutputFormat::kText: {
      out << query::RunLabel(run) << ": timeline " << TimeText(from - base, step) << ".." << TimeText(to - base, step) << ", "
          << output::FormatValue(static_cast<double>(step), cct::Unit::kNanoseconds, opt.ascii) << " buckets, hottest "
          << by_name << " by samples (streams: by busy time); blank: idle\n";
      if (tracks.empty() || nb == 0) {
        out << "(the trace holds no samples or GPU activity)\n";
        break;
      }
      const size_t start_w = std::max<size_t>(8, TimeText(to - base, step).size() + 2);
      // Each track gets an equal share of the width, no more than it needs.
      const size_t avail = opt.width == 0 ? SIZE_MAX : (opt.width > start_w ? opt.width - start_w : 0);
      std::vector<size_t> widths;
      for (const TimelineTrack& t : tracks) {
        size_t need = output::DisplayWidth(t.name);
        for (const TimelineCell& c : t.cells)
          if (!c.item.empty()) need = std::max(need, output::DisplayWidth(c.item) + 5);
        const size_t share = avail == SIZE_MAX ? need : avail / tracks.size();
        widths.push_back(std::max<size_t>(std::min(need, share > 2 ? share - 2 : 0), 10));
      }
      std::string line = output::PadRight("start", start_w);
      for (size_t k = 0; k < tracks.size(); ++k)
        line += output::PadRight(output::ElideMiddle(tracks[k].name, widths[k], opt.ascii), widths[k] + 2);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << '\n';
      for (size_t b = 0; b < nb; ++b) {
        line = output::PadRight(TimeText(bucket_start(b), step), start_w);
        for (size_t k = 0; k < tracks.size(); ++k) {
          const TimelineCell& c = tracks[k].cells[b];
          std::string cell;
          if (!c.item.empty()) cell = output::ElideMiddle(c.item, widths[k] - 5, opt.ascii) + " " + ShareText(c.share);
          line += output::PadRight(cell, widths[k] + 2);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
      }
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject();
      w.FieldInt("run", run.id).Field("label", query::RunLabel(run)).Field("by", by_name);
      w.FieldInt("trace_start_time_ns", base);
      w.Field("from_s", static_cast<double>(from - base) / 1e9).Field("to_s", static_cast<double>(to - base) / 1e9);
      w.Field("bucket_s", static_cast<double>(step) / 1e9);
      w.Key("tracks").BeginArray();
      for (const TimelineTrack& t : tracks) w.String(t.name);
      w.EndArray();
      w.Key("rows").BeginArray();
      for (size_t b = 0; b < nb; ++b)
        for (const TimelineTrack& t : tracks) {
          const TimelineCell& c = t.cells[b];
          w.BeginObject().Field("bucket_start_s", static_cast<double>(bucket_start(b)) / 1e9).Field("track", t.name);
          c.item.empty() ? w.Key("item").Null() : w.Field("item", c.item);
          w.FieldInt("samples", static_cast<long long>(c.count)).Field("share", c.share);
          w.EndObject();
        }
      w.EndArray();
      w.EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "bucket_start_s,track,item,samples,share\n";
      for (size_t b = 0; b < nb; ++b)
        for (const TimelineTrack& t : tracks) {
          const TimelineCell& c = t.cells[b];
          out << output::NumberText(static_cast<double>(bucket_start(b)) / 1e9) << ',' << output::CsvField(t.name)
              << ',' << output::CsvField(c.item) << ',' << c.count << ',' << output::NumberText(c.share) << '\n';
        }
      break;
    }
  }
  return cct::Status::Ok();
}

}  // namespace reports
