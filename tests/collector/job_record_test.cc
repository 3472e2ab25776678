// cct-record under a (fake) parallel launcher: each "rank" is a separate
// cct-record process given the variables Slurm's srun or Open MPI's mpirun
// would set, all recording into one database or one directory. No real MPI
// (the 4-rank Open MPI test is with cct-aggregate's).
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "store/database.h"
#include "store/run_meta.h"
#include "tests/test_util.h"

namespace {

using testutil::Run;
using testutil::TempDir;
using testutil::Tool;

// Every launcher variable run_info.h reads, empty (read as unset): the
// test's own environment (a CI job under Slurm) must not leak in.
std::map<std::string, std::string> JobCleanEnv() {
  std::map<std::string, std::string> env;
  for (const char* n : {"PMIX_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PALS_RANKID",
                        "FLUX_TASK_RANK", "SLURM_PROCID", "RANK", "SLURM_JOB_ID", "SLURM_STEP_ID", "FLUX_JOB_ID",
                        "PALS_APID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "MPIRUN_ID", "PBS_JOBID",
                        "LSB_JOBID", "SLURMD_NODENAME", "SLURM_NODEID", "PALS_NODEID", "CCT_RECORD_FAKE_FSTYPE"})
    env[n] = "";
  return env;
}

std::map<std::string, std::string> JobSlurmEnv(int rank, int size) {
  auto env = JobCleanEnv();
  env["SLURM_JOB_ID"] = "4242";
  env["SLURM_STEP_ID"] = "0";
  env["SLURM_PROCID"] = std::to_string(rank);
  env["SLURM_NTASKS"] = std::to_string(size);
  env["SLURM_LOCALID"] = std::to_string(rank);
  env["SLURM_NODEID"] = "0";
  env["SLURMD_NODENAME"] = "fakenode";
  return env;
}

// What Open MPI 4's mpirun sets for a rank (with its PMIx).
std::map<std::string, std::string> JobOmpiEnv(int rank, int size) {
  auto env = JobCleanEnv();
  env["OMPI_COMM_WORLD_RANK"] = env["PMIX_RANK"] = std::to_string(rank);
  env["OMPI_COMM_WORLD_SIZE"] = std::to_string(size);
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = std::to_string(rank);
  env["OMPI_MCA_ess_base_jobid"] = "3735617537";
  env["PMIX_NAMESPACE"] = "prterun-fake-4321@1";
  return env;
}

std::vector<std::string> JobRecord(const std::string& out, int rank) {
  // cct-test-variant: scaled_work takes 200 ms with "slow" (rank 1), else
  // 100 ms; steady_work 100 ms everywhere.
  std::vector<std::string> argv{Tool("cct-record"), "-o", out, "--", testutil::BuildDir() + "/tests/collector/cct-test-variant"};
  if (rank == 1) argv.push_back("slow");
  return argv;
}

std::vector<store::RunMeta> JobRuns(const std::string& db) {
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto runs = (*d)->ListRuns();
  REQUIRE(runs.ok());
  return *runs;
}

// The first node named `name` in a tree report's JSON.
const nlohmann::json* JobFindNode(const nlohmann::json& node, const std::string& name) {
  if (node.is_object() && node.value("name", "") == name) return &node;
  const nlohmann::json* children = nullptr;
  if (node.is_object() && node.contains("children")) children = &node["children"];
  else if (node.is_array()) children = &node;
  else if (node.is_object() && node.contains("tree")) return JobFindNode(node["tree"], name);
  if (!children) return nullptr;
  for (const nlohmann::json& c : *children)
    if (const nlohmann::json* f = JobFindNode(c, name)) return f;
  return nullptr;
}

// Checks a 3-rank job recorded into `db` under `key`: names, selectors, the
// aggregate across ranks.
void JobCheckDatabase(const std::string& db, const std::string& key, const std::string& node_name) {
  const auto runs = JobRuns(db);
  REQUIRE(runs.size() == 3);
  std::set<std::string> names;
  for (const store::RunMeta& r : runs) {
    REQUIRE(r.launcher.has_value());
    CHECK(r.launcher->JobKey() == key);
    CHECK(r.launcher->size == 3);
    CHECK(r.launcher->node_name == node_name);
    CHECK(r.name == "cct-test-variant.r" + std::to_string(r.launcher->rank));
    names.insert(r.name);
  }
  CHECK(names == std::set<std::string>{"cct-test-variant.r0", "cct-test-variant.r1", "cct-test-variant.r2"});

  int rc = 0;
  std::string err;
  const std::string text = testutil::Query(db, {"runs", "--width", "0"}, &rc, &err);
  CHECK(rc == 0);
  CHECK(text.find("job " + key + ", rank 1 of 3") != std::string::npos);
  const auto listed = nlohmann::json::parse(testutil::Query(db, {"runs", "--format", "json"}, &rc));
  REQUIRE(listed.is_array());
  for (const auto& r : listed) CHECK(r["launcher"].value("job", "") == key);

  // job:ID is the three ranks in rank order; /r=N one of them; latest-job the same job.
  for (const std::string& sel : std::vector<std::string>{"job:" + key, "latest-job"}) {
    const auto rows = testutil::ReadCsvRows(testutil::Query(db, {"runs", sel, "--format", "csv"}, &rc, &err));
    INFO(sel << ": " << err);
    REQUIRE(rows.size() == 3);
    for (size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].at("rank") == std::to_string(i));
  }
  const std::string shown = testutil::Query(db, {"show", "job:" + key + "/r=2", "--width", "0"}, &rc, &err);
  INFO(err);
  CHECK(rc == 0);
  CHECK(shown.find("cct-test-variant.r2") != std::string::npos);
  CHECK(shown.find("rank 2 of 3") != std::string::npos);
  CHECK(shown.find("job:" + key) != std::string::npos);

  // Across the ranks: scaled_work took 100, 200 and 100 ms, so its max is
  // rank 1's and max/mean is 200/133.3 = 1.5; steady_work is even (1.0).
  const std::string tree =
      testutil::Query(db, {"tree", "job:" + key, "-m", "cputime@max", "-m", "cputime@imbalance", "--format", "json"}, &rc, &err);
  INFO(err);
  REQUIRE(rc == 0);
  const nlohmann::json j = nlohmann::json::parse(tree);
  const nlohmann::json* scaled = JobFindNode(j, "scaled_work");
  const nlohmann::json* steady = JobFindNode(j, "steady_work");
  REQUIRE(scaled != nullptr);
  REQUIRE(steady != nullptr);
  const auto& inc = (*scaled)["inclusive"];
  CHECK(inc.value("cputime@imbalance", 0.0) == doctest::Approx(1.5).epsilon(0.12));
  CHECK(inc.value("cputime@imbalance_at", "") == "rank 1");
  CHECK(inc.value("cputime@max", 0.0) == doctest::Approx(0.2).epsilon(0.15));
  CHECK((*steady)["inclusive"].value("cputime@imbalance", 0.0) == doctest::Approx(1.0).epsilon(0.12));
  // stats compares the ranks as a group.
  testutil::Query(db, {"stats", "job:" + key}, &rc, &err);
  CHECK(rc == 0);
}

}  // namespace

TEST_CASE("cct-record in a fake Slurm job: ranks named .rN, job:ID, job:ID/r=N, latest-job, aggregates across ranks") {
  TempDir dir;
  const std::string db = dir / "job.db";
  for (int rank = 0; rank < 3; ++rank) {
    auto r = Run(JobRecord(db, rank), JobSlurmEnv(rank, 3));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("network file system") == std::string::npos);
  }
  JobCheckDatabase(db, "4242.0", "fakenode");
}

TEST_CASE("cct-record in a fake Open MPI job: the same identities from mpirun's variables") {
  TempDir dir;
  const std::string db = dir / "ompi.db";
  for (int rank = 0; rank < 3; ++rank) {
    auto r = Run(JobRecord(db, rank), JobOmpiEnv(rank, 3));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  JobCheckDatabase(db, "prterun-fake-4321@1", store::HostName());
}

TEST_CASE("cct-record -o DIR/: one database per node locally; per-rank files and a notice on a network file system") {
  TempDir dir;
  const std::string host = store::HostName();
  // Local: the ranks of a node share DIR/HOST.db.
  const std::string local = dir / "local/";
  for (int rank = 0; rank < 2; ++rank) {
    auto r = Run(JobRecord(local, rank), JobSlurmEnv(rank, 2));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  CHECK(JobRuns(dir / ("local/" + host + ".db")).size() == 2);

  // "NFS" (the statfs seam's test hook): each rank its own file, no lock
  // file, no spool left beside it; rank 0 alone says so, in one line.
  const std::string shared = dir / "shared/";
  for (int rank = 0; rank < 2; ++rank) {
    auto env = JobSlurmEnv(rank, 2);
    env["CCT_RECORD_FAKE_FSTYPE"] = "0x6969";
    auto r = Run(JobRecord(shared, rank), env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string file = dir / ("shared/" + host + ".r" + std::to_string(rank) + ".db");
    // Before this test reads it (a reader makes the lock file).
    CHECK_FALSE(std::filesystem::exists(file + "-lock"));
    CHECK_FALSE(std::filesystem::exists(file + ".spool"));
    const auto runs = JobRuns(file);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].launcher->rank == rank);
    size_t notes = 0;
    for (size_t at = r.err.find("network file system (NFS)"); at != std::string::npos;
         at = r.err.find("network file system (NFS)", at + 1))
      ++notes;
    CHECK(notes == (rank == 0 ? 1u : 0u));
    if (rank == 0) CHECK(r.err.find("cct-merge OUT.db " + dir / ("shared/" + host + ".r*.db")) != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(dir / ("shared/" + host + ".db")));

  // One process, no job, "Lustre": its own file, without the lock file, and the notice.
  auto env = JobCleanEnv();
  env["CCT_RECORD_FAKE_FSTYPE"] = "0x0BD00BD0";
  auto r = Run(JobRecord(dir / "one.db", 0), env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("network file system (Lustre)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "one.db-lock"));
  CHECK(JobRuns(dir / "one.db").size() == 1);
  // A malformed hook value: cct-record's own error, nothing run.
  env["CCT_RECORD_FAKE_FSTYPE"] = "lustre";
  r = Run(JobRecord(dir / "two.db", 0), env);
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("CCT_RECORD_FAKE_FSTYPE") != std::string::npos);
}

TEST_CASE("cct-query: bad job selectors get one line and exit 2") {
  TempDir dir;
  const std::string db = dir / "j.db";
  auto r = Run(JobRecord(db, 0), JobSlurmEnv(0, 1));
  REQUIRE(r.exit_code == 0);
  for (const std::string& sel : std::vector<std::string>{"job:", "job:x/r=abc", "job:" + std::string(100 * 1024, '7'), "job:4242/r=9",
                                "job:nosuchjob"}) {
    int rc = 0;
    std::string err;
    testutil::Query(db, {"tree", sel}, &rc, &err);
    INFO(sel.substr(0, 30) << ": " << err.substr(0, 300));
    CHECK(rc == 2);
    CHECK(testutil::LineCount(err) == 1);
    CHECK(err.size() < 1000);
  }
}
