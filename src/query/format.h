// Moved to output/format.h. This forwarding header stays only until
// tools/cct_record.cc (being changed on another branch) includes the new
// path; nothing else may include it.
#pragma once

#include "output/format.h"

// cct_record.cc calls query::FormatValue; this goes away when its include
// changes to output/format.h (and its call to output::FormatValue).
namespace query {
using output::FormatValue;
}  // namespace query
