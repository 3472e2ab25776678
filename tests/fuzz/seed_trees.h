// Small trees the fuzz targets and their seed generator (make_seeds.cc)
// share: the fixed tree the iterations target decodes against, and a tree
// with every frame kind and metric kind for the other seeds.
#pragma once

#include "cct/tree.h"

namespace fuzz {

// 8 nodes: root, a thread, six functions; metrics "samples" and "bytes"
// (additive) and "rate" = samples / bytes (derived).
inline cct::Tree IterationTree() {
  cct::Tree t;
  const cct::MetricId samples = *t.metrics().Register({"samples", cct::Unit::kCount, cct::MetricKind::kAdditive, "", ""});
  const cct::MetricId bytes = *t.metrics().Register({"bytes", cct::Unit::kBytes, cct::MetricKind::kAdditive, "", ""});
  (void)t.metrics().Register({"rate", cct::Unit::kNone, cct::MetricKind::kDerived, "", "samples / bytes"});
  const cct::NodeId thread = t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kThread, "main thread"));
  cct::NodeId n = thread;
  for (const char* f : {"main", "run", "step", "kernel", "leaf", "memcpy"}) {
    n = t.InternChild(n, t.InternFrame(cct::FrameKind::kFunction, f));
    t.AddValue(n, samples, 3);
    t.AddValue(n, bytes, 4096);
  }
  return t;
}

}  // namespace fuzz
