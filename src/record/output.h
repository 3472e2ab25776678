// Where cct-record stores a recording (docs/cli.md "Parallel jobs").
//
// `-o DIR/` (a trailing slash, or an existing directory) means one database
// per node, DIR/HOST.db: the ranks of a job on one node share it, which
// LMDB's locking allows on a local file system. LMDB must not be shared on a
// network file system (its lock file's shared memory and locks do not work
// there, and other clients see the map out of date): on one, each rank writes
// its own file (DIR/HOST.rRANK.db, or X.rRANK.db for -o X.db) opened without
// the lock file, and a single process keeps the file it was given, also
// without the lock file; cct-record prints one notice line saying so and how
// to merge the files. The recording's spool then goes to node-local
// temporary storage: its abandoned-spool check compares process ids on the
// local host, which a spool shared between nodes would get wrong.
//
// The file system test is statfs(2)'s f_type, classified by NetworkFsName
// (a pure function: the seam tests use), with the mount table's fuse
// subtype for FUSE mounts. CCT_RECORD_FAKE_FSTYPE (a test hook, documented
// as such) replaces the f_type. Functions; no state. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "cct/status.h"
#include "store/run_meta.h"

namespace record {

// The environment variable that replaces statfs's f_type in tests ("0x6969").
inline constexpr const char* kFakeFsTypeVariable = "CCT_RECORD_FAKE_FSTYPE";

// The network file system a statfs(2) f_type names: "NFS", "Lustre",
// "GPFS", "BeeGFS", "CIFS", "SMB2", "SMB", "CephFS", "AFS", "9P", "OrangeFS";
// "" for any other (local) type. FUSE (0x65735546) is "" here: see
// NetworkFuseName.
std::string_view NetworkFsName(uint64_t f_type);
inline constexpr uint64_t kFuseSuperMagic = 0x65735546;
// The network file system a FUSE mount's type in the mount table names
// ("fuse.sshfs" → "sshfs"; also s3fs, gcsfuse, rclone, glusterfs,
// ceph-fuse, juicefs, beegfs, davfs, goofys); "" for others.
std::string_view NetworkFuseName(std::string_view mount_type);

// The network file system holding directory `dir` ("" when local): its
// f_type (or CCT_RECORD_FAKE_FSTYPE's, read through `env`), and for FUSE the
// type /proc/self/mounts gives its mount point. An error when `dir` cannot
// be examined or the fake type is not a number.
cct::Result<std::string> NetworkFsOf(const std::string& dir, const std::function<const char*(const char*)>& env);

struct OutputPlan {
  std::string db_path;     // where this cct-record stores its runs
  std::string network_fs;  // "NFS", ...: the database's directory is on one; "" local
  bool alone = false;      // open without LMDB's lock file (store::Database::Mode::kWriteAlone)
  std::string spool_root;  // where the spool goes: "" for beside the database (record/spool.h)
  std::string notice;      // one line for stderr (without "cct-record: "), "" when none
};

// The plan for `output` (an absolute path, as -o or $CCT_DB gave it, or the
// default) for a process with `launcher` (nullopt: not a rank of a job) on
// `host`. `network_fs_of` examines a directory (NetworkFsOf in the tool).
// Makes DIR when `output` ends in '/'. Errors: DIR cannot be made, the file
// system cannot be examined.
cct::Result<OutputPlan> PlanOutput(const std::string& output, const std::optional<store::LauncherRank>& launcher,
                                   const std::string& host,
                                   const std::function<cct::Result<std::string>(const std::string&)>& network_fs_of);

// X.rRANK.db for X.db (X.rRANK when it has no .db ending); RANK "*" gives
// the pattern of every rank's file.
std::string RankFileName(const std::string& db_path, std::string_view rank);

// Node-local spool root for a database on a network file system:
// ${TMPDIR:-/tmp}/cctdb-spool-UID/NAME-HASH, HASH of the database's path, so
// a later recording into the same file on this node finds abandoned spools.
std::string LocalSpoolRoot(const std::string& db_path);

}  // namespace record
