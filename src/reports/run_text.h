// Internal to src/reports: how the run reports (runs.cc, show.cc) write a
// run's metadata. Pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "store/run_meta.h"

namespace reports {

// "2026-11-24 13:05:01" in local time.
std::string LocalTime(int64_t ns);
// "2026-11-24T12:05:01Z".
std::string IsoUtc(int64_t ns);
// "k=v k=v".
std::string Tags(const std::map<std::string, std::string>& tags);
// "signal N" or "exit N" for a run that ended so, else empty.
std::string Outcome(const store::RunMeta& r);
// "job 1234.0, rank 3 of 4" for a rank of a parallel job ("rank 3 of 4"
// without a job id), "" for other runs.
std::string JobText(const store::RunMeta& r);
// The words joined by spaces, quoted where the shell would need it.
std::string Joined(const std::vector<std::string>& v);

}  // namespace reports
