// Fuzz target: run selectors (store/selector.h), as typed on every command
// line, parsed and then resolved against a small database of five runs
// (two with tags, a forked child, two ranks of a job). What parses is consistent with its kind
// (a time window, @t= or @range=, is well-formed and excludes @iter=),
// and what resolves is a set of distinct runs, oldest first, that match it.
#include <set>

#include "store/database.h"
#include "store/selector.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

store::Database& Db() {
  static std::unique_ptr<store::Database> db = [] {
    const std::string path = fuzz::ScratchDir() + "/selector.db";
    auto d = store::Database::Open(path, store::Database::Mode::kWrite);
    if (!d.ok()) std::abort();
    for (int i = 0; i < 3; ++i) {
      store::RunMeta meta;
      meta.name = i == 2 ? "child" : "base";
      meta.state = store::RunState::kComplete;
      meta.source = "fuzz";
      meta.start_time_ns = 1000 + i;
      if (i < 2) meta.tags["commit"] = i == 0 ? "abc" : "def";
      if (i == 2) meta.parent_run = meta.root_run = 2;
      if (!(*d)->CreateRun(meta).ok()) std::abort();
    }
    // Job 4242 step 0: ranks 1 and 0, recorded in that order.
    for (int rank : {1, 0}) {
      store::RunMeta meta;
      meta.name = "app.r" + std::to_string(rank);
      meta.state = store::RunState::kComplete;
      meta.launcher = store::LauncherRank{};
      meta.launcher->rank = rank;
      meta.launcher->job_id = "4242";
      meta.launcher->step = "0";
      if (!(*d)->CreateRun(meta).ok()) std::abort();
    }
    return std::move(*d);
  }();
  return *db;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::Bytes(data, size);
  store::Database& db = Db();
  auto sel = store::ParseSelector(text, db.path());
  if (!sel.ok()) {
    FUZZ_CHECK(!sel.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(sel->text == text);
  switch (sel->kind) {
    case store::RunSelector::Kind::kName: FUZZ_CHECK(!sel->name.empty()); break;
    case store::RunSelector::Kind::kTag: FUZZ_CHECK(!sel->tag_key.empty() && !sel->all_processes); break;
    default: break;
  }
  if (sel->iteration && !sel->iteration->median)
    FUZZ_CHECK(sel->iteration->first >= 1 && sel->iteration->first <= sel->iteration->last);
  if (sel->window) {
    const store::TimeWindowSpec& w = *sel->window;
    FUZZ_CHECK(!sel->iteration);
    if (w.is_range()) {
      FUZZ_CHECK(w.instance >= 1 && !w.from_ns && !w.to_ns);
    } else {
      FUZZ_CHECK(!w.from_ns || *w.from_ns >= 0);
      FUZZ_CHECK(!w.to_ns || *w.to_ns >= 0);
      FUZZ_CHECK(!(w.from_ns && w.to_ns) || *w.from_ns <= *w.to_ns);
    }
  }
  if (sel->db_path != db.path()) return 0;  // PATH:SEL names another database
  auto runs = store::SelectRuns(db, *sel);
  if (!runs.ok()) return 0;
  FUZZ_CHECK(!runs->empty());
  // A job's ranks come in rank order (each rank once); everything else oldest first.
  if (sel->is_job() && !sel->all_processes)
    for (size_t i = 1; i < runs->size(); ++i) FUZZ_CHECK((*runs)[i - 1].launcher->rank < (*runs)[i].launcher->rank);
  else
    for (size_t i = 1; i < runs->size(); ++i) FUZZ_CHECK((*runs)[i - 1].id < (*runs)[i].id);
  if (sel->is_job())
    for (const store::RunMeta& r : *runs) FUZZ_CHECK(r.launcher && (!sel->rank || r.launcher->rank == *sel->rank));
  if (sel->kind == store::RunSelector::Kind::kId && !sel->all_processes)
    FUZZ_CHECK(runs->size() == 1 && runs->front().id == sel->id);
  if (sel->kind == store::RunSelector::Kind::kTag)
    for (const store::RunMeta& r : *runs) {
      auto t = r.tags.find(sel->tag_key);
      FUZZ_CHECK(t != r.tags.end() && t->second == sel->tag_value);
    }
  return 0;
}
