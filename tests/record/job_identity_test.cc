// Rank and job identity of parallel launches (collector/core/run_info.h),
// their stored form (store/run_meta.h), the job selectors (store/selector.h)
// and where cct-record puts a job's databases (record/output.h), without
// running a launcher: environments and file system types are given.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "collector/core/run_info.h"
#include "record/output.h"
#include "store/database.h"
#include "store/selector.h"
#include "tests/test_util.h"

namespace {

// An environment lookup over a map, as LauncherRankFrom takes it.
struct JobEnv {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* n) const {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

std::optional<store::LauncherRank> JobRankOf(const std::map<std::string, std::string>& vars) {
  return collector::LauncherRankFrom(JobEnv{vars}, "thishost");
}

}  // namespace

TEST_CASE("job identity: Slurm gives rank, size, local rank, job, step and node") {
  auto r = JobRankOf({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}, {"SLURM_JOB_ID", "4242"},
                      {"SLURM_STEP_ID", "3"}, {"SLURM_NODEID", "2"}, {"SLURMD_NODENAME", "node017"}});
  REQUIRE(r.has_value());
  CHECK(r->rank == 5);
  CHECK(r->size == 8);
  CHECK(r->local_rank == 1);
  CHECK(r->source == "SLURM_PROCID");
  CHECK(r->job_id == "4242");
  CHECK(r->step == "3");
  CHECK(r->job_source == "SLURM_JOB_ID");
  CHECK(r->JobKey() == "4242.3");
  CHECK(r->node_name == "node017");
  CHECK(r->node_index == 2);
  // A batch script's own step is not a number: no step, the key is the job.
  r = JobRankOf({{"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "4242"}, {"SLURM_STEP_ID", "batch"}});
  REQUIRE(r.has_value());
  CHECK(r->step.empty());
  CHECK(r->JobKey() == "4242");
  CHECK(r->node_name == "thishost");  // the host name by default
  CHECK(r->node_index == -1);
}

TEST_CASE("job identity: Open MPI's rank wins over Slurm's task id; the Slurm job stays the job") {
  // mpirun inside an allocation: Slurm's PROCID is the daemon's node, not the rank.
  auto r = JobRankOf({{"OMPI_COMM_WORLD_RANK", "6"}, {"OMPI_COMM_WORLD_SIZE", "16"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}, {"OMPI_MCA_ess_base_jobid", "3735617537"},
                      {"SLURM_PROCID", "1"}, {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "0"}});
  REQUIRE(r.has_value());
  CHECK(r->rank == 6);
  CHECK(r->source == "OMPI_COMM_WORLD_RANK");
  CHECK(r->size == 16);
  CHECK(r->local_rank == 2);
  CHECK(r->JobKey() == "77.0");
  // Without Slurm: PMIx's namespace before Open MPI's numeric job id.
  r = JobRankOf({{"PMIX_RANK", "3"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                 {"OMPI_COMM_WORLD_NODE_RANK", "3"}, {"PMIX_NAMESPACE", "prterun-host-1234@1"},
                 {"OMPI_MCA_ess_base_jobid", "99"}});
  REQUIRE(r.has_value());
  CHECK(r->source == "PMIX_RANK");
  CHECK(r->size == 4);
  CHECK(r->local_rank == 3);
  CHECK(r->job_id == "prterun-host-1234@1");
  CHECK(r->job_source == "PMIX_NAMESPACE");
  r = JobRankOf({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_MCA_ess_base_jobid", "99"}});
  REQUIRE(r.has_value());
  CHECK(r->job_id == "99");
}

TEST_CASE("job identity: Cray PALS, Flux, MVAPICH, PBS and LSF; Hydra falls back on cct-record's launch id") {
  auto r = JobRankOf({{"PALS_RANKID", "9"}, {"PALS_LOCAL_RANKID", "1"}, {"PMI_SIZE", "32"}, {"PALS_NODEID", "4"},
                      {"PALS_APID", "6c2f1f4e-apid"}});
  REQUIRE(r.has_value());
  CHECK(r->source == "PALS_RANKID");
  CHECK(r->rank == 9);
  CHECK(r->size == 32);
  CHECK(r->local_rank == 1);
  CHECK(r->node_index == 4);
  CHECK(r->job_id == "6c2f1f4e-apid");
  r = JobRankOf({{"FLUX_TASK_RANK", "2"}, {"FLUX_JOB_SIZE", "4"}, {"FLUX_JOB_ID", "f2Vx8"}});
  REQUIRE(r.has_value());
  CHECK(r->job_id == "f2Vx8");
  CHECK(r->job_source == "FLUX_JOB_ID");
  r = JobRankOf({{"MV2_COMM_WORLD_RANK", "0"}, {"MPIRUN_ID", "555"}, {"PBS_JOBID", "12.pbs"}});
  REQUIRE(r.has_value());
  CHECK(r->job_id == "555");  // the launch, not the batch job holding several
  r = JobRankOf({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"PBS_JOBID", "12.pbs"}});
  REQUIRE(r.has_value());
  CHECK(r->job_id == "12.pbs");
  r = JobRankOf({{"PMI_RANK", "1"}, {"LSB_JOBID", "31"}});
  REQUIRE(r.has_value());
  CHECK(r->job_id == "31");
  // MPICH Hydra names no job: cct-record's fallback, when it set one.
  r = JobRankOf({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}});
  REQUIRE(r.has_value());
  CHECK(r->job_id.empty());
  CHECK(r->local_rank == 1);
  r = JobRankOf({{"PMI_RANK", "1"}, {collector::kLaunchVariable, "launch-h-10-20"}});
  REQUIRE(r.has_value());
  CHECK(r->job_id == "launch-h-10-20");
  CHECK(r->job_source == collector::kLaunchJobSource);
  // A job id without a rank is no launch of ours.
  CHECK_FALSE(JobRankOf({{"SLURM_JOB_ID", "4242"}}).has_value());
}

TEST_CASE("job identity: the launcher process is the nearest process manager above, else the parent") {
  using collector::ProcessAncestor;
  const std::vector<ProcessAncestor> hydra = {{300, 7, "bash"}, {200, 5, "hydra_pmi_proxy"}, {100, 3, "mpiexec"}};
  CHECK(collector::LaunchProcessId("n1", hydra) == "launch-n1-200-5");
  const std::vector<ProcessAncestor> direct = {{300, 7, "myshell"}, {1, 1, "init"}};
  CHECK(collector::LaunchProcessId("n1", direct) == "launch-n1-300-7");
  CHECK(collector::LaunchProcessId("n1", {}).empty());
  // This process's own ancestors: the first is its parent.
  const auto mine = collector::ProcessAncestors();
  REQUIRE_FALSE(mine.empty());
  CHECK(mine.front().pid == getppid());
}

TEST_CASE("job identity: run names end in .rRANK") {
  store::LauncherRank l;
  l.rank = 3;
  CHECK(collector::RunName("", {"/usr/bin/app", "x"}, l) == "app.r3");
  CHECK(collector::RunName("solver", {"/usr/bin/app"}, l) == "solver.r3");
  CHECK(collector::RunName("", {"/usr/bin/app"}) == "app");
  CHECK(collector::RunName("", {"/usr/bin/app"}, std::nullopt) == "app");
}

TEST_CASE("job identity: run records keep the job fields; older records without them still read") {
  store::RunMeta m;
  m.name = "app.r2";
  m.state = store::RunState::kComplete;
  store::LauncherRank l;
  l.rank = 2;
  l.size = 4;
  l.local_rank = 0;
  l.source = "SLURM_PROCID";
  l.job_id = "4242";
  l.step = "1";
  l.job_source = "SLURM_JOB_ID";
  l.node_name = "node3";
  l.node_index = 1;
  m.launcher = l;
  auto back = store::RunMeta::FromJson(m.ToJson());
  REQUIRE(back.ok());
  REQUIRE(back->launcher.has_value());
  CHECK(*back->launcher == l);
  // A record of format 2 before jobs: the launcher has the rank only.
  const nlohmann::json old = {{"id", 1}, {"name", "x"}, {"state", "complete"},
                              {"launcher", {{"rank", 1}, {"size", 2}, {"source", "PMI_RANK"}}}};
  auto o = store::RunMeta::FromJson(old);
  REQUIRE(o.ok());
  REQUIRE(o->launcher.has_value());
  CHECK(o->launcher->rank == 1);
  CHECK(o->launcher->job_id.empty());
  CHECK(o->launcher->JobKey().empty());
  CHECK(o->launcher->node_index == -1);
  // A hostile job id is cut to the limit when stored.
  m.launcher->job_id = std::string(100000, 'j');
  CHECK(store::CutToLimits(m) >= 1);
  CHECK(m.launcher->job_id.size() <= store::kMaxJobIdBytes);
}

TEST_CASE("job selectors: parsing, and one clear error for bad ones") {
  auto s = store::ParseSelector("job:4242", "x.db");
  REQUIRE(s.ok());
  CHECK(s->is_job());
  CHECK(s->is_group());
  CHECK(s->job == "4242");
  CHECK_FALSE(s->rank.has_value());
  s = store::ParseSelector("job:4242.0/r=3", "x.db");
  REQUIRE(s.ok());
  CHECK(s->job == "4242.0");
  REQUIRE(s->rank.has_value());
  CHECK(*s->rank == 3);
  CHECK_FALSE(s->is_group());  // one rank: one run
  s = store::ParseSelector("job:4242/all", "x.db");
  REQUIRE(s.ok());
  CHECK(s->is_invocation());
  CHECK_FALSE(s->is_group());
  s = store::ParseSelector("latest-job", "x.db");
  REQUIRE(s.ok());
  CHECK(s->is_job());
  CHECK(s->job.empty());
  s = store::ParseSelector("latest-job/r=0", "x.db");
  REQUIRE(s.ok());
  CHECK(*s->rank == 0);
  s = store::ParseSelector("other.db:job:7/r=1", "x.db");
  REQUIRE(s.ok());
  CHECK(s->db_path == "other.db");
  CHECK(s->job == "7");
  // A file named "job" in the working directory does not make job:ID a path.
  testutil::TempDir dir;
  s = store::ParseSelector("job:7", dir / "job");
  REQUIRE(s.ok());
  CHECK(s->is_job());

  for (const std::string& bad : std::vector<std::string>{"job:", "job:/r=1", "job:x/r=abc", "job:x/r=-1", "latest-job/r=", "latest-job/zz",
                                "job:" + std::string(100 * 1024, '9')}) {
    auto b = store::ParseSelector(bad, "x.db");
    INFO(bad.substr(0, 40));
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().code() == cct::ErrorCode::kInvalidArgument);
    CHECK(b.status().message().find('\n') == std::string::npos);
    CHECK(b.status().message().size() < 600);
  }
}

namespace {

// A stored run of rank `rank` of job `job` (step `step`), the root of its
// own invocation unless `parent` names one.
store::RunId JobStoreRun(store::Database& db, const std::string& job, const std::string& step, int64_t rank,
                         store::RunId parent = 0) {
  store::RunMeta m;
  m.name = "app.r" + std::to_string(rank);
  m.state = store::RunState::kComplete;
  m.parent_run = parent;
  m.root_run = parent;
  store::LauncherRank l;
  l.rank = rank;
  l.size = 3;
  l.job_id = job;
  l.step = step;
  m.launcher = l;
  cct::Tree t;
  REQUIRE(db.CreateRun(m, &t).ok());
  return m.id;
}

std::vector<store::RunId> JobSelectIds(store::Database& db, const std::string& text) {
  auto sel = store::ParseSelector(text, db.path());
  REQUIRE(sel.ok());
  auto runs = store::SelectRuns(db, *sel);
  std::vector<store::RunId> ids;
  if (!runs.ok()) return ids;
  for (const store::RunMeta& r : *runs) ids.push_back(r.id);
  return ids;
}

}  // namespace

TEST_CASE("job selectors: a job's ranks, one rank, every process, the newest job and step") {
  testutil::TempDir dir;
  auto opened = store::Database::Open(dir / "jobs.db", store::Database::Mode::kWrite);
  REQUIRE(opened.ok());
  store::Database& db = **opened;
  // Job 10 step 0: ranks recorded out of order (2, 0, 1); rank 1 has a helper process.
  const store::RunId r2 = JobStoreRun(db, "10", "0", 2);
  const store::RunId r0 = JobStoreRun(db, "10", "0", 0);
  const store::RunId r1 = JobStoreRun(db, "10", "0", 1);
  const store::RunId helper = JobStoreRun(db, "10", "0", 1, r1);
  // A plain run between, then job 10's step 1 with two ranks, then job 20.
  {
    store::RunMeta plain;
    plain.name = "plain";
    plain.state = store::RunState::kComplete;
    REQUIRE(db.CreateRun(plain).ok());
  }
  const store::RunId s1r0 = JobStoreRun(db, "10", "1", 0);
  const store::RunId s1r1 = JobStoreRun(db, "10", "1", 1);
  const store::RunId j20 = JobStoreRun(db, "20", "", 0);

  // The step named: its ranks in rank order, one root run each.
  CHECK(JobSelectIds(db, "job:10.0") == std::vector<store::RunId>{r0, r1, r2});
  // The job without a step: its newest step.
  CHECK(JobSelectIds(db, "job:10") == std::vector<store::RunId>{s1r0, s1r1});
  CHECK(JobSelectIds(db, "job:10.0/r=2") == std::vector<store::RunId>{r2});
  CHECK(JobSelectIds(db, "job:10.0/r=1/all") == std::vector<store::RunId>{r1, helper});
  CHECK(JobSelectIds(db, "job:10.0/all") == std::vector<store::RunId>{r2, r0, r1, helper});
  CHECK(JobSelectIds(db, "latest-job") == std::vector<store::RunId>{j20});
  CHECK(JobSelectIds(db, "job:20") == std::vector<store::RunId>{j20});

  // What is not there: one line naming what is.
  auto sel = store::ParseSelector("job:10.0/r=7", db.path());
  REQUIRE(sel.ok());
  auto none = store::SelectRuns(db, *sel);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == cct::ErrorCode::kNotFound);
  CHECK(none.status().message().find("its ranks: 0, 1, 2") != std::string::npos);
  sel = store::ParseSelector("job:99", db.path());
  REQUIRE(sel.ok());
  none = store::SelectRuns(db, *sel);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("10.0 (3 ranks), 10.1 (2 ranks), 20 (1 rank)") != std::string::npos);
}

TEST_CASE("job selectors: latest-job in a database without jobs says so") {
  testutil::TempDir dir;
  auto opened = store::Database::Open(dir / "plain.db", store::Database::Mode::kWrite);
  REQUIRE(opened.ok());
  store::RunMeta plain;
  plain.name = "plain";
  plain.state = store::RunState::kComplete;
  REQUIRE((*opened)->CreateRun(plain).ok());
  auto sel = store::ParseSelector("latest-job", (*opened)->path());
  REQUIRE(sel.ok());
  auto none = store::SelectRuns(**opened, *sel);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("no runs of a parallel job") != std::string::npos);
}

TEST_CASE("job output: statfs types of network file systems, and FUSE subtypes") {
  // f_type values from the kernel's magic.h and the file systems' sources.
  const std::map<uint64_t, std::string> network = {
      {0x6969, "NFS"},      {0x0BD00BD0, "Lustre"}, {0x47504653, "GPFS"}, {0x19830326, "BeeGFS"},
      {0xFF534D42, "CIFS"}, {0xFE534D42, "SMB2"},   {0x517B, "SMB"},      {0x00C36400, "CephFS"},
      {0x5346414F, "AFS"},  {0x01021997, "9P"},     {0x20030528, "OrangeFS"}};
  for (const auto& [type, name] : network) CHECK(record::NetworkFsName(type) == name);
  // Local ones: ext4, xfs, btrfs, tmpfs, overlayfs, and FUSE itself (decided by its subtype).
  for (const uint64_t local : std::vector<uint64_t>{0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0x794C7630,
                                                   record::kFuseSuperMagic})
    CHECK(record::NetworkFsName(local).empty());
  CHECK(record::NetworkFuseName("fuse.sshfs") == "sshfs");
  CHECK(record::NetworkFuseName("fuse.gcsfuse") == "gcsfuse");
  CHECK(record::NetworkFuseName("fuse.squashfuse").empty());
  CHECK(record::NetworkFuseName("fuse").empty());
  CHECK(record::NetworkFuseName("sshfs").empty());

  // The test hook replaces the type; a malformed one is an error, not "local".
  testutil::TempDir dir;
  auto fs = record::NetworkFsOf(dir.path(), JobEnv{{{record::kFakeFsTypeVariable, "0x0BD00BD0"}}});
  REQUIRE(fs.ok());
  CHECK(*fs == "Lustre");
  fs = record::NetworkFsOf(dir.path(), JobEnv{{{record::kFakeFsTypeVariable, "26985"}}});  // 0x6969
  REQUIRE(fs.ok());
  CHECK(*fs == "NFS");
  CHECK_FALSE(record::NetworkFsOf(dir.path(), JobEnv{{{record::kFakeFsTypeVariable, "nfs"}}}).ok());
  CHECK_FALSE(record::NetworkFsOf(dir / "missing/x", JobEnv{}).ok());
}

TEST_CASE("job output: -o DIR/ is one database per node; a network file system gives each rank its own file") {
  testutil::TempDir dir;
  auto local = [](const std::string&) -> cct::Result<std::string> { return std::string(); };
  auto nfs = [](const std::string&) -> cct::Result<std::string> { return std::string("NFS"); };
  store::LauncherRank rank3;
  rank3.rank = 3;

  // DIR/ is made; ranks on one node share HOST.db there.
  auto p = record::PlanOutput(dir / "out/", rank3, "node7", local);
  REQUIRE(p.ok());
  CHECK(p->db_path == dir / "out/node7.db");
  CHECK(std::filesystem::is_directory(dir / "out"));
  CHECK_FALSE(p->alone);
  CHECK(p->notice.empty());
  CHECK(p->spool_root.empty());
  // An existing directory without the slash: the same.
  p = record::PlanOutput(dir / "out", std::nullopt, "node7", local);
  REQUIRE(p.ok());
  CHECK(p->db_path == dir / "out/node7.db");
  // A file on a local file system: as given.
  p = record::PlanOutput(dir / "x.db", rank3, "node7", local);
  REQUIRE(p.ok());
  CHECK(p->db_path == dir / "x.db");

  // On NFS: per-rank files without LMDB's lock file, the spool on local storage, a notice.
  p = record::PlanOutput(dir / "out/", rank3, "node7", nfs);
  REQUIRE(p.ok());
  CHECK(p->db_path == dir / "out/node7.r3.db");
  CHECK(p->alone);
  CHECK(p->network_fs == "NFS");
  CHECK(p->notice.find("NFS") != std::string::npos);
  CHECK(p->notice.find("cct-merge OUT.db " + (dir / "out/node7.r*.db")) != std::string::npos);
  CHECK(p->spool_root.rfind("/", 0) == 0);
  CHECK(p->spool_root.find(dir.path()) == std::string::npos);  // not beside the database
  // Each rank's file its own spool: gathering abandoned runs must not cross files.
  const std::string rank3_spool = p->spool_root;
  store::LauncherRank rank4;
  rank4.rank = 4;
  auto p4 = record::PlanOutput(dir / "out/", rank4, "node7", nfs);
  REQUIRE(p4.ok());
  CHECK(p4->spool_root != rank3_spool);
  p = record::PlanOutput(dir / "x.db", rank3, "node7", nfs);
  REQUIRE(p.ok());
  CHECK(p->db_path == dir / "x.r3.db");
  // One process without a job: its file, without the lock file, with a notice.
  p = record::PlanOutput(dir / "x.db", std::nullopt, "node7", nfs);
  REQUIRE(p.ok());
  CHECK(p->db_path == dir / "x.db");
  CHECK(p->alone);
  CHECK_FALSE(p->notice.empty());

  CHECK(record::RankFileName("/a/b.db", "12") == "/a/b.r12.db");
  CHECK(record::RankFileName("/a/profile", "0") == "/a/profile.r0");
  CHECK(record::RankFileName("/a/.db", "0") == "/a/.db.r0");
  // The same database gets the same local spool (abandoned spools are found again).
  CHECK(record::LocalSpoolRoot("/n/x.db") == record::LocalSpoolRoot("/n/x.db"));
  CHECK(record::LocalSpoolRoot("/n/x.db") != record::LocalSpoolRoot("/m/x.db"));
}
