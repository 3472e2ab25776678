// Transport: how the processes of one cct-aggregate reduce their partials.
//
// A process is a rank of `size()`; rank 0 writes the result. The one
// process of a plain run is LocalTransport. With MPI (meson found it),
// MakeMpiTransport (mpi_transport.cc, the only file that includes mpi.h)
// runs over MPI_COMM_WORLD: cct-aggregate under mpirun is one rank per
// process; outside a launcher (none of its variables set) it is one
// LocalTransport, without MPI_Init. No networking of our own. Not thread-safe: one thread talks through it.
#pragma once

#include <memory>
#include <string>

#include "cct/status.h"

namespace aggregate {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Blocking point-to-point messages of any length.
  virtual cct::Status Send(int to, const std::string& bytes) = 0;
  virtual cct::Result<std::string> Recv(int from) = 0;
  // Every rank learns whether all succeeded (a rank that failed must not
  // leave the others waiting for its partial).
  virtual bool AllOk(bool ok) = 0;
  // "MPI (Open MPI ...)" or "threads only".
  virtual std::string Describe() const = 0;
};

class LocalTransport : public Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  cct::Status Send(int, const std::string&) override;
  cct::Result<std::string> Recv(int) override;
  bool AllOk(bool ok) override { return ok; }
  std::string Describe() const override { return "one process"; }
};

// Whether this build has the MPI transport.
bool HaveMpi();
// MPI_Init (once per process) and the transport over MPI_COMM_WORLD when a
// launcher started the process; else, or when built without MPI, the
// LocalTransport. MPI_Finalize runs when the returned transport is
// destroyed.
std::unique_ptr<Transport> MakeTransport(int* argc, char*** argv);

}  // namespace aggregate
