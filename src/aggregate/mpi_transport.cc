// The MPI transport: the only file that includes mpi.h (built when meson
// finds MPI). Messages go as a length then chunks of at most 1 GiB (MPI
// counts are int).
// Only the C API: Open MPI's deprecated C++ bindings warn under -Wextra.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "aggregate/transport.h"

namespace aggregate {

namespace {

constexpr int kTagLength = 1, kTagChunk = 2;
constexpr uint64_t kChunk = uint64_t{1} << 30;

class MpiTransport : public Transport {
 public:
  MpiTransport() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  cct::Status Send(int to, const std::string& bytes) override {
    uint64_t n = bytes.size();
    if (MPI_Send(&n, 1, MPI_UINT64_T, to, kTagLength, MPI_COMM_WORLD) != MPI_SUCCESS) return Failed("send", to);
    for (uint64_t off = 0; off < n; off += kChunk) {
      const int len = static_cast<int>(std::min(kChunk, n - off));
      if (MPI_Send(bytes.data() + off, len, MPI_BYTE, to, kTagChunk, MPI_COMM_WORLD) != MPI_SUCCESS)
        return Failed("send", to);
    }
    return cct::Status::Ok();
  }

  cct::Result<std::string> Recv(int from) override {
    uint64_t n = 0;
    if (MPI_Recv(&n, 1, MPI_UINT64_T, from, kTagLength, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return Failed("receive", from);
    std::string bytes(n, '\0');
    for (uint64_t off = 0; off < n; off += kChunk) {
      const int len = static_cast<int>(std::min(kChunk, n - off));
      if (MPI_Recv(bytes.data() + off, len, MPI_BYTE, from, kTagChunk, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
          MPI_SUCCESS)
        return Failed("receive", from);
    }
    return bytes;
  }

  bool AllOk(bool ok) override {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all == 1;
  }

  std::string Describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<size_t>(std::max(len, 0)));
    const size_t cut = v.find_first_of(",\n");
    return "MPI, " + std::to_string(size_) + " rank" + (size_ == 1 ? "" : "s") + " (" +
           (cut == std::string::npos ? v : v.substr(0, cut)) + ")";
  }

 private:
  static cct::Status Failed(const char* what, int peer) {
    return cct::Status(cct::ErrorCode::kInternal, std::string("MPI ") + what + " with rank " + std::to_string(peer) +
                                                     " failed");
  }
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool HaveMpi() { return true; }

std::unique_ptr<Transport> MakeTransport(int* argc, char*** argv) {
  // Started by a launcher (Open MPI, MPICH/Hydra, PMIx, MVAPICH)? Otherwise
  // one rank without MPI_Init: a singleton start would spawn Open MPI's
  // daemon for nothing.
  bool launched = false;
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"})
    launched |= std::getenv(v) != nullptr;
  if (!launched) return std::make_unique<LocalTransport>();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(argc, argv);
  return std::make_unique<MpiTransport>();
}

}  // namespace aggregate
