// Moved to output/format.h. This forwarding header stays only until
// tools/cct_record.cc (being changed on another branch) includes the new
// path; nothing else may include it.
#pragma once

#include "output/format.h"
