#include "output/write_file.h"

#include <cstdio>
#include <fstream>

namespace output {

cct::Status WriteFileAtomically(const std::string& path, const std::function<cct::Status(std::ostream&)>& write) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return cct::IoError("cannot write " + path);
  cct::Status status = write(out);
  out.close();
  if (status.ok() && (!out || std::rename(tmp.c_str(), path.c_str()) != 0))
    status = cct::IoError("cannot write " + path);
  if (!status.ok()) std::remove(tmp.c_str());
  return status;
}

}  // namespace output
