// Small trees the fuzz targets and their seed generator (make_seeds.cc)
// share: the fixed tree the iterations target decodes against, and the
// tree path_query_fuzz matches queries against.
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

// 14 nodes under the root: two threads; functions with modules, files and
// lines, recursion, NVTX ranges, GPU placeholders and kernels, a partial
// call path; "cputime" (ns) and "gker" additive, "per_launch" derived.
inline cct::Tree PathQueryTree() {
  using cct::FrameKind;
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const cct::MetricId gker = *t.metrics().RegisterStandard("gker");
  (void)t.metrics().Register({"per_launch", cct::Unit::kNone, cct::MetricKind::kDerived, "", "gker / cputime"});
  auto add = [&](cct::NodeId parent, FrameKind kind, const char* name, const char* module = "", uint32_t line = 0) {
    return t.InternChild(parent, t.InternFrame(kind, name, module, line ? "src/app.cc" : "", line));
  };
  const cct::NodeId th = add(cct::kRootNode, FrameKind::kThread, "main thread");
  const cct::NodeId main = add(th, FrameKind::kFunction, "main", "app", 10);
  const cct::NodeId mpi = add(main, FrameKind::kFunction, "MPI_Send", "libmpi.so");
  const cct::NodeId ibv = add(mpi, FrameKind::kFunction, "ibv_post_send", "libibverbs.so");
  const cct::NodeId rec = add(main, FrameKind::kFunction, "rec", "app", 20);
  const cct::NodeId rec2 = add(rec, FrameKind::kFunction, "rec", "app", 20);
  const cct::NodeId fwd = add(main, FrameKind::kNvtx, "forward");
  const cct::NodeId gpu = add(fwd, FrameKind::kGpuOp, "<gpu kernel>");
  const cct::NodeId k = add(gpu, FrameKind::kKernel, "gemm");
  const cct::NodeId line = add(rec2, FrameKind::kLine, "app.cc:21", "", 21);
  const cct::NodeId th2 = add(cct::kRootNode, FrameKind::kThread, "worker");
  const cct::NodeId part = add(th2, FrameKind::kUnknown, "<partial call path>");
  const cct::NodeId loop = add(th2, FrameKind::kLoop, "loop at app.cc:30", "app", 30);
  for (cct::NodeId n : {main, mpi, ibv, rec, rec2, line, part, loop}) t.AddValue(n, cpu, 1e6 * (n + 1));
  t.AddValue(k, gker, 5e5);
  return t;
}

}  // namespace fuzz
