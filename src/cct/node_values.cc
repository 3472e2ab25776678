#include "cct/node_values.h"

namespace cct {

std::vector<double> NodeValues::Derive(MetricId metric, bool inclusive) {
  const MetricRegistry& reg = tree_.metrics();
  const Formula* formula = reg.formula(metric);
  const std::vector<MetricId>& ops = reg.operand_ids(metric);
  std::vector<const std::vector<double>*> operand_values;
  for (MetricId op : ops) operand_values.push_back(inclusive ? &Inclusive(op) : &Exclusive(op));
  std::vector<double> out(tree_.size());
  for (NodeId n = 0; n < tree_.size(); ++n) {
    bool any = false;
    for (const auto* v : operand_values) any |= ((*v)[n] != 0);
    // A node none of whose operands has a value has no derived value either
    // (0 rather than NaN keeps sums and sorting simple; reports print 0 as
    // blank for derived metrics).
    out[n] = any ? formula->Eval([&](size_t i) { return (*operand_values[i])[n]; }) : 0.0;
  }
  return out;
}

// Slots are filled by index after computing: computing one metric may fill
// others (a derived metric's operands), so no reference into the cache is
// held across that work.
const std::vector<double>& NodeValues::Exclusive(MetricId metric) {
  if (exclusive_ref_.size() < tree_.metrics().size()) {
    exclusive_.resize(tree_.metrics().size());
    exclusive_ref_.resize(tree_.metrics().size(), nullptr);
  }
  if (exclusive_ref_[metric]) return *exclusive_ref_[metric];
  std::vector<double> out;
  if (tree_.metrics().Get(metric).kind == MetricKind::kDerived) {
    out = Derive(metric, false);
  } else {
    const std::vector<double>* dense = tree_.column(metric).dense_values();
    if (dense && dense->size() == tree_.size()) {
      exclusive_ref_[metric] = dense;
      return *dense;
    }
    out.assign(tree_.size(), 0.0);
    tree_.column(metric).ForEach([&](NodeId n, double v) {
      if (n < out.size()) out[n] += v;
    });
  }
  exclusive_[metric] = std::make_unique<std::vector<double>>(std::move(out));
  exclusive_ref_[metric] = exclusive_[metric].get();
  return *exclusive_ref_[metric];
}

void NodeValues::SetInclusive(MetricId metric, std::vector<double> values) {
  if (inclusive_.size() < tree_.metrics().size()) inclusive_.resize(tree_.metrics().size());
  inclusive_[metric] = std::make_unique<std::vector<double>>(std::move(values));
}

const std::vector<double>& NodeValues::Inclusive(MetricId metric) {
  if (inclusive_.size() < tree_.metrics().size()) inclusive_.resize(tree_.metrics().size());
  if (inclusive_[metric]) return *inclusive_[metric];
  std::vector<double> out;
  if (tree_.metrics().Get(metric).kind == MetricKind::kDerived) {
    out = Derive(metric, true);
  } else if (tree_.metrics().Get(metric).kind == MetricKind::kSummary) {
    out.assign(tree_.size(), 0.0);
    tree_.inclusive_column(metric).ForEach([&](NodeId n, double v) {
      if (n < out.size()) out[n] = v;
    });
  } else {
    out = Exclusive(metric);
    for (NodeId n = static_cast<NodeId>(tree_.size()) - 1; n > 0; --n) out[tree_.parent(n)] += out[n];
  }
  inclusive_[metric] = std::make_unique<std::vector<double>>(std::move(out));
  return *inclusive_[metric];
}

}  // namespace cct
