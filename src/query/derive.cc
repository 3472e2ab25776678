#include "query/derive.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "query/profile.h"

namespace query {

using cct::MetricId;
using cct::NodeId;
using cct::Result;
using cct::Status;

namespace {

// A whole-string number: "1", "2.5", "1e3"; nullopt for anything else.
std::optional<double> ParseWholeNumber(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return v;
}

// The shortest text that reads back as `v`.
std::string ShortestNumber(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, ptr) : std::to_string(v);
}

// 'text' for a POSIX shell: a quote inside becomes '\''.
std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

size_t CountSet(const std::vector<char>& mask) {
  size_t n = 0;
  for (size_t i = 1; i < mask.size(); ++i) n += mask[i] != 0;  // the root never folds
  return n;
}

// One additive column replaced by `values` (one per node; zeros not stored).
void SetDenseColumn(cct::Tree& tree, MetricId m, const std::vector<double>& values) {
  std::vector<NodeId> nodes;
  std::vector<double> kept;
  for (NodeId n = 0; n < values.size(); ++n)
    if (values[n] != 0) {
      nodes.push_back(n);
      kept.push_back(values[n]);
    }
  if (nodes.size() * 2 > values.size()) tree.SetColumn(m, cct::SparseColumn::FromDense(values));
  else tree.SetColumn(m, cct::SparseColumn::FromSparse(std::move(nodes), std::move(kept)));
}

// A thread's share of one merged node: (merged node, thread, value).
struct ThreadValue {
  NodeId node;
  uint32_t thread;
  double value;
};

}  // namespace

std::string_view ThreadStatName(ThreadStat stat) {
  switch (stat) {
    case ThreadStat::kSum: return "sum";
    case ThreadStat::kMean: return "mean";
    case ThreadStat::kMin: return "min";
    case ThreadStat::kMax: return "max";
  }
  return "sum";
}

std::string_view NormalizeByName(NormalizeBy by) {
  switch (by) {
    case NormalizeBy::kPerIteration: return "per-iteration";
    case NormalizeBy::kPerThread: return "per-thread";
    case NormalizeBy::kTotal: return "total";
    case NormalizeBy::kNumber: return "number";
  }
  return "number";
}

Result<DeriveOp> ParseDeriveOp(std::string_view option, const std::string& value, const std::string& metric) {
  DeriveOp op;
  op.option = std::string(option);
  op.value = value;
  const std::string flag = "--" + op.option;
  if (option == "drop" || option == "query") {
    op.kind = option == "drop" ? DeriveOpKind::kDrop : DeriveOpKind::kQuery;
    auto parsed = PathQuery::Parse(value);
    if (!parsed.ok()) return cct::InvalidArgument(flag + ": " + parsed.status().message());
    op.query = std::move(*parsed);
  } else if (option == "keep-min") {
    op.kind = DeriveOpKind::kKeepMin;
    const std::optional<double> pct = ParseWholeNumber(value);
    if (!pct || !(*pct >= 0 && *pct <= 100))
      return cct::InvalidArgument(flag + " must be a percentage from 0 to 100, not '" + value + "'");
    op.pct = *pct;
    op.metric = metric;
  } else if (option == "merge-threads") {
    op.kind = DeriveOpKind::kMergeThreads;
    if (value == "sum") op.stat = ThreadStat::kSum;
    else if (value == "mean") op.stat = ThreadStat::kMean;
    else if (value == "min") op.stat = ThreadStat::kMin;
    else if (value == "max") op.stat = ThreadStat::kMax;
    else return cct::InvalidArgument(flag + " takes sum, mean, min or max, not '" + value + "'");
  } else if (option == "normalize") {
    op.kind = DeriveOpKind::kNormalize;
    if (value == "per-iteration") op.by = NormalizeBy::kPerIteration;
    else if (value == "per-thread") op.by = NormalizeBy::kPerThread;
    else if (value == "total") op.by = NormalizeBy::kTotal;
    else {
      const std::optional<double> number = ParseWholeNumber(value);
      if (!number || !std::isfinite(*number) || !(*number > 0))
        return cct::InvalidArgument(flag + " takes per-iteration, per-thread, total or a positive number, not '" +
                                    value + "'");
      op.by = NormalizeBy::kNumber;
      op.number = *number;
    }
  } else {
    return cct::InvalidArgument("'" + op.option + "' is not a derive operation");
  }
  return op;
}

std::vector<char> BelowShare(const cct::Tree& tree, MetricId metric, double pct) {
  cct::NodeValues values(tree);
  const std::vector<double>& inc = values.Inclusive(metric);
  const double threshold = std::fabs(inc[cct::kRootNode]) * pct / 100.0;
  std::vector<char> below(tree.size(), 0);
  for (NodeId n = 1; n < tree.size(); ++n) below[n] = std::fabs(inc[n]) < threshold;
  return below;
}

std::vector<NodeId> ThreadNodes(const cct::Tree& tree) {
  std::vector<NodeId> out;
  std::vector<char> inside(tree.size(), 0);  // in some thread's subtree
  for (NodeId n = 1; n < tree.size(); ++n) {
    if (inside[tree.parent(n)]) {
      inside[n] = 1;
    } else if (tree.kind(n) == cct::FrameKind::kThread) {
      inside[n] = 1;
      out.push_back(n);
    }
  }
  return out;
}

cct::Tree MergeThreads(const cct::Tree& tree, ThreadStat stat) {
  const std::vector<NodeId> threads = ThreadNodes(tree);
  if (threads.empty()) return tree;
  constexpr uint32_t kOutside = UINT32_MAX;
  std::vector<uint32_t> thread_of(tree.size(), kOutside);
  for (size_t i = 0; i < threads.size(); ++i) thread_of[threads[i]] = static_cast<uint32_t>(i);
  std::vector<char> fold(tree.size(), 0);
  for (NodeId n = 1; n < tree.size(); ++n) {
    if (thread_of[n] == kOutside) thread_of[n] = thread_of[tree.parent(n)];
    fold[n] = tree.kind(n) == cct::FrameKind::kThread;
  }
  std::vector<NodeId> merged;
  cct::Tree out = cct::FoldNodes(tree, fold, &merged);
  if (stat == ThreadStat::kSum) return out;  // folding adds up: the sum already

  const double count = static_cast<double>(threads.size());
  const cct::MetricRegistry& reg = tree.metrics();
  std::vector<ThreadValue> shares;
  std::vector<double> values;
  for (MetricId m = 0; m < reg.size(); ++m) {
    if (reg.Get(m).kind != cct::MetricKind::kAdditive) continue;
    values.assign(out.size(), 0.0);
    shares.clear();
    tree.column(m).ForEach([&](NodeId n, double v) {
      if (thread_of[n] == kOutside) values[merged[n]] += v;  // no thread's: kept as it is
      else shares.push_back({merged[n], thread_of[n], v});
    });
    // Per merged node, each thread's value (its nodes there summed: a
    // thread node nested in another folds into the same merged node).
    std::sort(shares.begin(), shares.end(), [](const ThreadValue& a, const ThreadValue& b) {
      return a.node != b.node ? a.node < b.node : a.thread < b.thread;
    });
    for (size_t i = 0; i < shares.size();) {
      const NodeId node = shares[i].node;
      double sum = 0, lo = 0, hi = 0;
      size_t present = 0;
      while (i < shares.size() && shares[i].node == node) {
        const uint32_t thread = shares[i].thread;
        double v = 0;
        for (; i < shares.size() && shares[i].node == node && shares[i].thread == thread; ++i) v += shares[i].value;
        lo = present == 0 ? v : std::min(lo, v);
        hi = present == 0 ? v : std::max(hi, v);
        sum += v;
        ++present;
      }
      if (present < threads.size()) {  // the threads without this node count 0
        lo = std::min(lo, 0.0);
        hi = std::max(hi, 0.0);
      }
      switch (stat) {
        case ThreadStat::kMean: values[node] += sum / count; break;
        case ThreadStat::kMin: values[node] += lo; break;
        case ThreadStat::kMax: values[node] += hi; break;
        case ThreadStat::kSum: values[node] += sum; break;
      }
    }
    SetDenseColumn(out, m, values);
  }
  return out;
}

// One additive metric's stored values, each divided by `divisor`.
static void DivideColumn(cct::Tree& tree, MetricId m, double divisor) {
  std::vector<NodeId> nodes;
  std::vector<double> values;
  tree.column(m).ForEach([&](NodeId n, double v) {
    nodes.push_back(n);
    values.push_back(v / divisor);
  });
  tree.SetColumn(m, cct::SparseColumn::FromSparse(std::move(nodes), std::move(values)));
}

void DivideValues(cct::Tree& tree, double divisor) {
  const cct::MetricRegistry& reg = tree.metrics();
  for (MetricId m = 0; m < reg.size(); ++m)
    if (reg.Get(m).kind == cct::MetricKind::kAdditive) DivideColumn(tree, m, divisor);
}

std::vector<double> DivideByTotals(cct::Tree& tree) {
  const cct::MetricRegistry& reg = tree.metrics();
  std::vector<double> totals(reg.size(), 0.0);
  for (MetricId m = 0; m < reg.size(); ++m) {
    if (reg.Get(m).kind != cct::MetricKind::kAdditive) continue;
    double total = 0;
    tree.column(m).ForEach([&](NodeId, double v) { total += v; });
    totals[m] = total;
    if (total != 0) DivideColumn(tree, m, total);
  }
  // Fractions have no unit. Ids stay: metrics are registered again in id
  // order, which is an order where a formula's operands come first.
  cct::MetricRegistry units;
  for (MetricId m = 0; m < reg.size(); ++m) {
    cct::MetricDesc desc = reg.Get(m);
    desc.unit = cct::Unit::kNone;
    auto id = units.Register(desc);
    (void)id;  // the descriptions were registered once already: same names, same operands
  }
  tree.metrics() = std::move(units);
  return totals;
}

cct::Tree CompactFrames(const cct::Tree& tree) {
  cct::Tree out;
  out.metrics() = tree.metrics();
  constexpr cct::FrameId kUnmapped = UINT32_MAX;
  std::vector<cct::FrameId> frame_map(tree.frames().size(), kUnmapped);
  std::vector<NodeId> parent(tree.size());
  std::vector<cct::FrameId> frame(tree.size());
  parent[0] = cct::kNoNode;
  frame[0] = out.frame_id(cct::kRootNode);
  for (NodeId n = 1; n < tree.size(); ++n) {
    cct::FrameId& f = frame_map[tree.frame_id(n)];
    if (f == kUnmapped) {
      const cct::Frame src = tree.frame(n);
      f = out.InternFrame(src.kind, tree.str(src.name), tree.str(src.module), tree.str(src.file), src.line, src.flags);
    }
    parent[n] = tree.parent(n);
    frame[n] = f;
  }
  // The columns came from a valid tree: same parents, frames now in range.
  Status assigned = out.AssignNodes(std::move(parent), std::move(frame));
  (void)assigned;
  for (MetricId m = 0; m < tree.metrics().size(); ++m) out.SetColumn(m, tree.column(m));
  return out;
}

Result<DeriveResult> ApplyDerive(const cct::Tree& src, const std::vector<DeriveOp>& ops, const DeriveSource& source) {
  // The tree so far: the source until an operation makes a new one.
  const cct::Tree* cur = &src;
  cct::Tree owned;
  auto replace = [&](cct::Tree next) {
    owned = std::move(next);
    cur = &owned;
  };
  auto mutable_tree = [&]() -> cct::Tree& {
    if (cur != &owned) replace(src);
    return owned;
  };
  DeriveResult result;
  for (const DeriveOp& op : ops) {
    nlohmann::json rec = {{"op", op.option}};
    const std::string flag = "--" + op.option;
    switch (op.kind) {
      case DeriveOpKind::kDrop:
      case DeriveOpKind::kQuery: {
        CCT_ASSIGN_OR_RETURN(PathQueryMatch match, MatchPathQuery(*cur, *op.query));
        rec["query"] = op.query->text();
        std::vector<char> fold;
        if (op.kind == DeriveOpKind::kDrop) {
          fold = std::move(match.end);
        } else {
          if (match.ends == 0)
            return cct::InvalidArgument(flag + " " + ShellQuote(op.value) + " matches no call path");
          fold.assign(cur->size(), 0);
          for (NodeId n = 1; n < cur->size(); ++n) fold[n] = !match.on_path[n];
          rec["kept"] = cur->size() - CountSet(fold);
        }
        rec["folded"] = CountSet(fold);
        replace(cct::FoldNodes(*cur, fold));
        break;
      }
      case DeriveOpKind::kKeepMin: {
        const std::vector<std::string> names =
            op.metric.empty() ? std::vector<std::string>{} : std::vector<std::string>{op.metric};
        CCT_ASSIGN_OR_RETURN(std::vector<MetricId> ids, ResolveMetrics(*cur, names));
        const cct::MetricDesc& desc = cur->metrics().Get(ids.front());
        if (desc.kind != cct::MetricKind::kAdditive)
          return cct::InvalidArgument(flag + " needs an additive metric; '" + desc.name +
                                      "' is derived (a formula, with no share of a total)");
        rec["pct"] = op.pct;
        rec["metric"] = desc.name;
        const std::vector<char> fold = BelowShare(*cur, ids.front(), op.pct);
        rec["folded"] = CountSet(fold);
        replace(cct::FoldNodes(*cur, fold));
        break;
      }
      case DeriveOpKind::kMergeThreads:
        rec["stat"] = std::string(ThreadStatName(op.stat));
        rec["threads"] = ThreadNodes(*cur).size();
        replace(MergeThreads(*cur, op.stat));
        break;
      case DeriveOpKind::kNormalize: {
        rec["by"] = std::string(NormalizeByName(op.by));
        double divisor = op.number;
        if (op.by == NormalizeBy::kPerIteration) {
          if (source.iterations == 0)
            return cct::InvalidArgument(flag + " per-iteration: the source has no iterations (record with "
                                        "--iteration REGEX)");
          divisor = static_cast<double>(source.iterations);
        } else if (op.by == NormalizeBy::kPerThread) {
          if (source.threads == 0) return cct::InvalidArgument(flag + " per-thread: the source has no thread nodes");
          divisor = static_cast<double>(source.threads);
        }
        if (op.by == NormalizeBy::kTotal) {
          const std::vector<double> totals = DivideByTotals(mutable_tree());
          nlohmann::json by_metric = nlohmann::json::object();
          for (MetricId m = 0; m < totals.size(); ++m)
            if (cur->metrics().Get(m).kind == cct::MetricKind::kAdditive) by_metric[cur->metrics().Get(m).name] = totals[m];
          rec["totals"] = std::move(by_metric);
        } else {
          rec["divisor"] = divisor;
          DivideValues(mutable_tree(), divisor);
        }
        break;
      }
    }
    result.operations.push_back(std::move(rec));
  }
  result.tree = CompactFrames(*cur);
  return result;
}

std::string DescribeOperation(const nlohmann::json& op) {
  auto str = [&](const char* key) {
    auto it = op.find(key);
    return it != op.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto num = [&](const char* key) {
    auto it = op.find(key);
    return it != op.end() && it->is_number() ? ShortestNumber(it->get<double>()) : std::string("?");
  };
  if (!op.is_object()) return "(not an operation record)";
  const std::string name = str("op");
  if (name == "drop" || name == "query") return "--" + name + " " + ShellQuote(str("query"));
  if (name == "keep-min") return "--keep-min " + num("pct") + " -m " + str("metric");
  if (name == "merge-threads") return "--merge-threads " + str("stat");
  if (name == "normalize") {
    const std::string by = str("by");
    return "--normalize " + (by == "number" ? num("divisor") : by);
  }
  return "--" + name + " (unknown to this version)";
}

std::string DescribeEffect(const nlohmann::json& op) {
  auto count = [&](const char* key) -> std::optional<uint64_t> {
    auto it = op.find(key);
    if (it == op.end() || !it->is_number_unsigned()) return std::nullopt;
    return it->get<uint64_t>();
  };
  auto nodes = [](uint64_t n) { return std::to_string(n) + (n == 1 ? " node" : " nodes"); };
  if (!op.is_object()) return "";
  auto it = op.find("op");
  const std::string name = it != op.end() && it->is_string() ? it->get<std::string>() : std::string();
  if (name == "drop" || name == "keep-min") {
    if (auto f = count("folded")) return nodes(*f) + " folded";
  } else if (name == "query") {
    auto k = count("kept"), f = count("folded");
    if (k && f) return nodes(*k) + " kept, " + std::to_string(*f) + " folded";
  } else if (name == "merge-threads") {
    if (auto t = count("threads")) return std::to_string(*t) + (*t == 1 ? " thread" : " threads");
  } else if (name == "normalize") {
    auto divisor = op.find("divisor");
    if (divisor != op.end() && divisor->is_number()) return "divided by " + ShortestNumber(divisor->get<double>());
    if (op.contains("totals")) return "each metric divided by its total";
  }
  return "";
}

}  // namespace query
