// Fuzz target: store::DecodeRunFile (store/run_file.h) on arbitrary bytes.
// Anything it accepts must also be storable: its tree decodes (checked
// inside) and its metadata serializes.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <nlohmann/json.hpp>

#include "store/run_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto run = store::DecodeRunFile(std::string_view(reinterpret_cast<const char*>(data), size));
  if (run.ok()) (void)run->meta.ToJson().dump();
  return 0;
}
