// The transport of a build without MPI: one process.
#include "aggregate/transport.h"

namespace aggregate {

cct::Status LocalTransport::Send(int, const std::string&) {
  return cct::Status(cct::ErrorCode::kInternal, "a one-process aggregation has no other rank to send to");
}

cct::Result<std::string> LocalTransport::Recv(int) {
  return cct::Status(cct::ErrorCode::kInternal, "a one-process aggregation has no other rank to receive from");
}

#ifndef CCT_HAVE_MPI
bool HaveMpi() { return false; }
std::unique_ptr<Transport> MakeTransport(int*, char***) { return std::make_unique<LocalTransport>(); }
#endif

}  // namespace aggregate
