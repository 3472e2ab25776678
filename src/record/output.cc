// See output.h.
#include "record/output.h"

#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cct/flat_index.h"
#include "cct/text.h"

namespace record {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// "0x6969" or "26985".
std::optional<uint64_t> ParseFsType(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The type /proc/self/mounts gives the mount point holding `dir` (the
// longest mount point that is a prefix of its real path); "" unknown.
std::string MountType(const std::string& dir) {
  std::error_code ec;
  const std::string real = std::filesystem::weakly_canonical(dir, ec).string();
  if (ec) return "";
  std::ifstream in("/proc/self/mounts");
  std::string line, best_type;
  size_t best = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string device, point, type;
    if (!(fields >> device >> point >> type)) continue;
    const bool inside = point == "/" || real == point || real.rfind(point + "/", 0) == 0;
    if (inside && point.size() >= best) {
      best = point.size();
      best_type = type;
    }
  }
  return best_type;
}

}  // namespace

std::string_view NetworkFsName(uint64_t f_type) {
  switch (f_type) {
    case 0x6969: return "NFS";
    case 0x0BD00BD0: return "Lustre";
    case 0x47504653: return "GPFS";
    case 0x19830326: return "BeeGFS";
    case 0xFF534D42: return "CIFS";
    case 0xFE534D42: return "SMB2";
    case 0x517B: return "SMB";
    case 0x00C36400: return "CephFS";
    case 0x5346414F: return "AFS";
    case 0x01021997: return "9P";
    case 0x20030528: return "OrangeFS";
    default: return "";
  }
}

std::string_view NetworkFuseName(std::string_view mount_type) {
  static constexpr std::string_view kNetwork[] = {"sshfs", "s3fs",   "gcsfuse", "rclone", "glusterfs", "ceph-fuse",
                                                  "juicefs", "beegfs", "davfs",  "goofys"};
  if (mount_type.substr(0, 5) != "fuse.") return "";
  const std::string_view sub = mount_type.substr(5);
  for (std::string_view n : kNetwork)
    if (sub == n) return n;
  return "";
}

cct::Result<std::string> NetworkFsOf(const std::string& dir, const std::function<const char*(const char*)>& env) {
  uint64_t type = 0;
  if (const char* fake = env(kFakeFsTypeVariable); fake && *fake) {
    const std::optional<uint64_t> t = ParseFsType(fake);
    if (!t) return cct::InvalidArgument(std::string(kFakeFsTypeVariable) + " must be a file system type number such as 0x6969, not '" +
                                        cct::CutToBytes(fake, 64) + "'");
    type = *t;
  } else {
    struct statfs st {};
    if (::statfs(dir.c_str(), &st) != 0)
      return cct::IoError("cannot examine the file system of " + dir + ": " + std::strerror(errno));
    type = static_cast<uint64_t>(st.f_type);
  }
  if (type == kFuseSuperMagic) return std::string(NetworkFuseName(MountType(dir)));
  return std::string(NetworkFsName(type));
}

std::string RankFileName(const std::string& db_path, std::string_view rank) {
  const std::string suffix = ".r" + std::string(rank);
  if (db_path.ends_with(".db") && db_path.size() > 3 && db_path[db_path.size() - 4] != '/')
    return db_path.substr(0, db_path.size() - 3) + suffix + ".db";
  return db_path + suffix;
}

std::string LocalSpoolRoot(const std::string& db_path) {
  const char* tmp = getenv("TMPDIR");
  const std::string base = tmp && *tmp == '/' ? tmp : "/tmp";
  // A short stable name per database file: its path's hash.
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(cct::HashBytes(db_path)));
  std::string name = db_path.substr(db_path.rfind('/') + 1);
  if (name.size() > 64) name = name.substr(0, 64);
  return base + "/cctdb-spool-" + std::to_string(getuid()) + "/" + name + "-" + hex;
}

cct::Result<OutputPlan> PlanOutput(const std::string& output, const std::optional<store::LauncherRank>& launcher,
                                   const std::string& host,
                                   const std::function<cct::Result<std::string>(const std::string&)>& network_fs_of) {
  OutputPlan plan;
  const bool to_directory = output.ends_with("/") || IsDirectory(output);
  std::string dir;
  if (to_directory) {
    dir = output;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !IsDirectory(dir)) return cct::IoError("cannot make the directory " + dir + " for -o " + output +
                                                     (ec ? ": " + ec.message() : std::string()));
    const std::string node = host.empty() ? "host" : host;
    plan.db_path = (dir == "/" ? "" : dir) + "/" + node + ".db";
  } else {
    plan.db_path = output;
    dir = DirectoryOf(output);
  }
  CCT_ASSIGN_OR_RETURN(plan.network_fs, network_fs_of(dir));
  if (plan.network_fs.empty()) return plan;
  plan.alone = true;
  const std::string where = dir + " is on a network file system (" + plan.network_fs + "), where LMDB's locks do not work: ";
  if (launcher && launcher->rank >= 0) {
    const std::string shared = plan.db_path;
    plan.db_path = RankFileName(shared, std::to_string(launcher->rank));
    plan.notice = where + "rank " + std::to_string(launcher->rank) + " writes its own file " + plan.db_path +
                  " (merge the ranks' files with: cct-merge OUT.db " + RankFileName(shared, "*") + ")";
  } else {
    plan.notice = where + "writing " + plan.db_path +
                  " without them; record into it from one process at a time, or to node-local storage and cct-merge";
  }
  // Per file: a rank's GatherAbandoned must not take another rank's runs.
  plan.spool_root = LocalSpoolRoot(plan.db_path);
  return plan;
}

}  // namespace record
