#include "aggregate/reduce.h"

#include <algorithm>

#include "cct/tree_ops.h"
#include "store/tree_codec.h"

namespace aggregate {

using cct::MetricId;
using cct::NodeId;
using cct::Status;

namespace {

constexpr std::string_view kPartialMagic = "cctdb-partial-1";

bool IsAdditive(const cct::Tree& t, MetricId m) { return t.metrics().Get(m).kind == cct::MetricKind::kAdditive; }

// Unit u's value x at node i; `first` when it is the partial's first unit.
inline void AddValue(NodeStats& s, size_t i, double x, uint32_t u, bool first) {
  if (first) {
    s.sum[i] = s.min[i] = s.max[i] = x;
    s.argmax[i] = u;
    return;
  }
  s.sum[i] += x;
  s.min[i] = std::min(s.min[i], x);
  if (x > s.max[i]) {
    s.max[i] = x;
    s.argmax[i] = u;
  }
}

// The nonzero values of `v` as a column (a sparse one: ids ascend).
cct::SparseColumn ColumnOf(const std::vector<double>& v) {
  std::vector<NodeId> nodes;
  std::vector<double> values;
  for (NodeId n = 0; n < v.size(); ++n)
    if (v[n] != 0) {
      nodes.push_back(n);
      values.push_back(v[n]);
    }
  return cct::SparseColumn::FromSparse(std::move(nodes), std::move(values));
}

cct::Status CorruptPartial(const std::string& why) {
  return cct::Status(cct::ErrorCode::kCorrupt, "a partial aggregate received from another rank is damaged: " + why);
}

}  // namespace

std::vector<std::string> SummaryMetricNames(const std::string& metric) {
  return {metric + "@mean", metric + "@min", metric + "@max", metric + "@imbalance", metric + "@argmax"};
}

void Partial::Grow() {
  const size_t n = merged_.size();
  const size_t metrics = merged_.metrics().size();
  exc_.resize(metrics);
  inc_.resize(metrics);
  for (MetricId m = 0; m < metrics; ++m) {
    if (!IsAdditive(merged_, m)) continue;
    for (NodeStats* s : {&exc_[m], &inc_[m]}) {
      // Nodes and metrics new to this partial: every unit so far lacked
      // them, so each held 0 there, the first of them the max.
      s->sum.resize(n, 0.0);
      s->min.resize(n, 0.0);
      s->max.resize(n, 0.0);
      s->argmax.resize(n, static_cast<uint32_t>(first_unit_));
    }
  }
}

cct::Result<std::vector<NodeId>> Partial::MergeNodes(const cct::Tree& src, std::vector<MetricId>& metric_map) {
  const cct::MetricRegistry& reg = src.metrics();
  metric_map.assign(reg.size(), cct::kNoMetric);
  for (int pass = 0; pass < 2; ++pass) {  // additive first: derived formulas read them
    for (MetricId m = 0; m < reg.size(); ++m) {
      const cct::MetricDesc& d = reg.Get(m);
      if (d.kind == cct::MetricKind::kSummary)
        return cct::InvalidArgument("metric '" + d.name +
                                    "' is a summary statistic: an aggregate run cannot be aggregated again");
      if ((d.kind == cct::MetricKind::kAdditive) != (pass == 0)) continue;
      CCT_ASSIGN_OR_RETURN(metric_map[m], merged_.metrics().Register(d));
    }
  }
  if (frame_index_.empty())
    for (cct::FrameId f = 0; f < merged_.frames().size(); ++f) frame_index_.emplace(cct::FrameIdentity(merged_, f), f);
  std::vector<cct::FrameId> frame_map(src.frames().size());
  for (cct::FrameId f = 0; f < src.frames().size(); ++f) {
    std::string key = cct::FrameIdentity(src, f);
    auto it = frame_index_.find(key);
    if (it != frame_index_.end()) {
      frame_map[f] = it->second;
      continue;
    }
    const cct::Frame sf = src.frames().Get(f);
    const cct::FrameId df = merged_.InternFrame(sf.kind, src.str(sf.name), src.str(sf.module), src.str(sf.file),
                                                sf.line, sf.flags);
    frame_index_.emplace(std::move(key), df);
    frame_map[f] = df;
  }
  std::vector<NodeId> nodes(src.size(), cct::kRootNode);
  for (NodeId n = 1; n < src.size(); ++n) nodes[n] = merged_.InternChild(nodes[src.parent(n)], frame_map[src.frame_id(n)]);
  Grow();
  return nodes;
}

Status Partial::AddUnit(const cct::Tree& tree) {
  std::vector<MetricId> metric_map;
  CCT_ASSIGN_OR_RETURN(const std::vector<NodeId> nodes, MergeNodes(tree, metric_map));
  const size_t n = merged_.size();
  const uint32_t u = static_cast<uint32_t>(first_unit_ + units_);
  const bool first = units_ == 0;
  std::vector<MetricId> unit_metric(merged_.metrics().size(), cct::kNoMetric);  // merged -> tree
  for (MetricId m = 0; m < metric_map.size(); ++m)
    if (metric_map[m] != cct::kNoMetric && IsAdditive(tree, m)) unit_metric[metric_map[m]] = m;
  std::vector<double> exc, inc;
  for (MetricId mm = 0; mm < merged_.metrics().size(); ++mm) {
    if (!IsAdditive(merged_, mm)) continue;
    // The unit's exclusive values on merged nodes (several of its nodes may
    // map to one: frames path identity does not tell apart), then inclusive.
    exc.assign(n, 0.0);
    if (unit_metric[mm] != cct::kNoMetric)
      tree.column(unit_metric[mm]).ForEach([&](NodeId k, double v) {
        if (k < nodes.size()) exc[nodes[k]] += v;
      });
    for (NodeId i = 0; i < n; ++i)
      if (exc[i] != 0) merged_.AddValue(i, mm, exc[i]);
    inc = exc;
    for (NodeId i = static_cast<NodeId>(n) - 1; i > 0; --i) inc[merged_.parent(i)] += inc[i];
    for (NodeId i = 0; i < n; ++i) {
      AddValue(exc_[mm], i, exc[i], u, first);
      AddValue(inc_[mm], i, inc[i], u, first);
    }
  }
  ++units_;
  return Status::Ok();
}

Status Partial::Combine(const Partial& next) {
  if (next.units_ == 0) return Status::Ok();
  if (next.first_unit_ != first_unit_ + units_)
    return cct::Status(cct::ErrorCode::kInternal, "partial aggregates combined out of unit order");
  if (units_ == 0) {
    *this = next;
    return Status::Ok();
  }
  std::vector<MetricId> metric_map;
  CCT_ASSIGN_OR_RETURN(const std::vector<NodeId> nodes, MergeNodes(next.merged_, metric_map));
  const size_t n = merged_.size();
  // Merged trees hold each path once, so the map is one to one.
  std::vector<NodeId> from_next(n, cct::kNoNode);
  for (NodeId k = 0; k < nodes.size(); ++k) {
    if (from_next[nodes[k]] != cct::kNoNode)
      return cct::Status(cct::ErrorCode::kInternal, "two nodes of a partial aggregate share a path");
    from_next[nodes[k]] = k;
  }
  const uint32_t next_first = static_cast<uint32_t>(next.first_unit_);
  for (MetricId m = 0; m < metric_map.size(); ++m) {
    if (metric_map[m] == cct::kNoMetric || !IsAdditive(next.merged_, m)) continue;
    next.merged_.column(m).ForEach([&](NodeId k, double v) { merged_.AddValue(nodes[k], metric_map[m], v); });
  }
  for (MetricId mm = 0; mm < merged_.metrics().size(); ++mm) {
    if (!IsAdditive(merged_, mm)) continue;
    const MetricId nm = next.merged_.metrics().Find(merged_.metrics().Get(mm).name);
    const bool has = nm != cct::kNoMetric && IsAdditive(next.merged_, nm);
    for (int which = 0; which < 2; ++which) {
      NodeStats& a = which == 0 ? exc_[mm] : inc_[mm];
      const NodeStats* b = has ? (which == 0 ? &next.exc_[nm] : &next.inc_[nm]) : nullptr;
      for (NodeId i = 0; i < n; ++i) {
        const NodeId k = from_next[i];
        double bsum = 0, bmin = 0, bmax = 0;
        uint32_t barg = next_first;  // a node `next` lacks: 0 in each of its units
        if (b != nullptr && k != cct::kNoNode) {
          bsum = b->sum[k], bmin = b->min[k], bmax = b->max[k], barg = b->argmax[k];
        }
        a.sum[i] += bsum;
        a.min[i] = std::min(a.min[i], bmin);
        if (bmax > a.max[i]) {  // ties: the earlier unit, this partial's
          a.max[i] = bmax;
          a.argmax[i] = barg;
        }
      }
    }
  }
  units_ += next.units_;
  return Status::Ok();
}

std::string Partial::Serialize() const {
  std::vector<NodeId> stored;
  const std::vector<store::Section> sections = store::EncodeTree(merged_, &stored);
  store::ByteWriter w;
  w.String(kPartialMagic);
  w.U64(first_unit_);
  w.U64(units_);
  w.U32(static_cast<uint32_t>(sections.size()));
  for (const store::Section& s : sections) w.String(store::FrameSection(s));
  // Statistics in the stored (preorder) node order the sections use.
  const size_t n = merged_.size();
  std::vector<double> d(n);
  std::vector<uint32_t> a(n);
  w.U32(static_cast<uint32_t>(merged_.metrics().size()));
  for (MetricId m = 0; m < merged_.metrics().size(); ++m) {
    const bool additive = IsAdditive(merged_, m);
    w.U8(additive ? 1 : 0);
    if (!additive) continue;
    for (const NodeStats* s : {&exc_[m], &inc_[m]}) {
      for (const std::vector<double>* v : {&s->sum, &s->min, &s->max}) {
        for (NodeId i = 0; i < n; ++i) d[stored[i]] = (*v)[i];
        w.Array(d);
      }
      for (NodeId i = 0; i < n; ++i) a[stored[i]] = s->argmax[i];
      w.Array(a);
    }
  }
  return w.Take();
}

cct::Result<Partial> Partial::Deserialize(std::string_view bytes) {
  store::ByteReader r(bytes);
  std::string_view magic;
  uint64_t first = 0, units = 0;
  uint32_t count = 0;
  if (!r.String(magic) || magic != kPartialMagic) return CorruptPartial("not a partial aggregate");
  if (!r.U64(first) || !r.U64(units) || !r.Count(count, 4)) return CorruptPartial("truncated header");
  std::vector<store::Section> sections;
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view framed;
    if (!r.String(framed)) return CorruptPartial("truncated section");
    auto s = store::UnframeSection(framed);
    if (!s.ok()) return CorruptPartial(s.status().message());
    sections.push_back(std::move(*s));
  }
  auto tree = store::DecodeTree(sections);
  if (!tree.ok()) return CorruptPartial(tree.status().message());
  Partial p(first);
  p.units_ = units;
  p.merged_ = std::move(*tree);
  const size_t n = p.merged_.size();
  uint32_t metrics = 0;
  if (!r.U32(metrics) || metrics != p.merged_.metrics().size()) return CorruptPartial("metric count");
  p.exc_.resize(metrics);
  p.inc_.resize(metrics);
  for (MetricId m = 0; m < metrics; ++m) {
    uint8_t additive = 0;
    if (!r.U8(additive) || (additive != 0) != IsAdditive(p.merged_, m)) return CorruptPartial("metric kinds");
    if (!additive) continue;
    for (NodeStats* s : {&p.exc_[m], &p.inc_[m]}) {
      if (!r.Array(s->sum, n) || !r.Array(s->min, n) || !r.Array(s->max, n) || !r.Array(s->argmax, n))
        return CorruptPartial("truncated statistics");
    }
  }
  if (r.remaining() != 0) return CorruptPartial("trailing bytes");
  return p;
}

cct::Result<cct::Tree> Partial::Finish() const {
  cct::Tree t = merged_;
  const size_t n = merged_.size();
  const double units = static_cast<double>(units_);
  const MetricId additive_count = static_cast<MetricId>(merged_.metrics().size());
  for (MetricId m = 0; m < additive_count; ++m) {
    if (!IsAdditive(merged_, m)) continue;
    const cct::MetricDesc base = merged_.metrics().Get(m);
    const std::vector<std::string> names = SummaryMetricNames(base.name);
    const char* what[] = {"mean", "minimum", "maximum", "imbalance (max/mean)", "unit holding the maximum"};
    for (size_t k = 0; k < names.size(); ++k) {
      cct::MetricDesc d;
      d.name = names[k];
      d.kind = cct::MetricKind::kSummary;
      d.unit = k < 3 ? base.unit : cct::Unit::kNone;
      d.description = std::string(what[k]) + " of " + base.name + " across " + std::to_string(units_) + " units";
      CCT_ASSIGN_OR_RETURN(const MetricId id, t.metrics().Register(d));
      std::vector<double> ev(n), iv(n);
      for (int which = 0; which < 2; ++which) {
        const NodeStats& s = which == 0 ? exc_[m] : inc_[m];
        std::vector<double>& out = which == 0 ? ev : iv;
        for (NodeId i = 0; i < n; ++i) {
          const double mean = units > 0 ? s.sum[i] / units : 0.0;
          switch (k) {
            case 0: out[i] = mean; break;
            case 1: out[i] = s.min[i]; break;
            case 2: out[i] = s.max[i]; break;
            case 3: out[i] = mean != 0 ? s.max[i] / mean : 0.0; break;  // none stored: NaN when read
            default: out[i] = s.argmax[i]; break;
          }
        }
      }
      t.SetColumn(id, ColumnOf(ev));
      t.SetInclusiveColumn(id, ColumnOf(iv));
    }
  }
  return t;
}

}  // namespace aggregate
