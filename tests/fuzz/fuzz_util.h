// Shared helpers of the libFuzzer targets (tests/fuzz/README.md).
//
// Properties are checked with FUZZ_CHECK, which aborts (libFuzzer saves the
// input as a crash) with the failed condition: a target that only survives
// its input proves little, one that checks what the parser promises for
// every accepted input proves more.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "cct/tree.h"
#include "store/tree_codec.h"

#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

namespace fuzz {

inline std::string_view Bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A directory of this process's own in /dev/shm (tmpfs: importers that only
// take a path read the fuzzer's bytes from memory), removed at exit.
inline const std::string& ScratchDir() {
  // Never destroyed: the exit handler below needs it after static destructors.
  static const std::string* dir = [] {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    auto* d = new std::string(std::string(base) + "/cct-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(ScratchDir(), ec);
    });
    return d;
  }();
  return *dir;
}

// Writes `bytes` to ScratchDir()/name and returns the path.
inline std::string WriteScratch(const std::string& name, std::string_view bytes) {
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) std::abort();  // the scratch file system is full: not the parser's fault
  return path;
}

// Splits `bytes` at every occurrence of `sep` (files of a multi-file input).
inline std::vector<std::string_view> Split(std::string_view bytes, std::string_view sep) {
  std::vector<std::string_view> parts;
  for (size_t pos = 0;;) {
    const size_t at = bytes.find(sep, pos);
    if (at == std::string_view::npos) {
      parts.push_back(bytes.substr(pos));
      return parts;
    }
    parts.push_back(bytes.substr(pos, at - pos));
    pos = at + sep.size();
  }
}

inline std::string Concat(const std::vector<store::Section>& sections) {
  std::string out;
  for (const store::Section& s : sections) out += store::FrameSection(s);
  return out;
}

// What the store promises for every tree an importer or decoder produces:
// it encodes, the framed sections unframe, the decoded tree has the same
// nodes and frames, and encoding is canonical (decode then encode gives the
// same bytes).
inline void CheckStoreRoundTrip(const cct::Tree& tree) {
  const std::vector<store::Section> sections = store::EncodeTree(tree);
  std::vector<store::Section> unframed;
  for (const store::Section& s : sections) {
    auto u = store::UnframeSection(store::FrameSection(s));
    FUZZ_CHECK(u.ok());
    FUZZ_CHECK(u->kind == s.kind && u->arg == s.arg && u->payload == s.payload);
    unframed.push_back(std::move(*u));
  }
  auto back = store::DecodeTree(unframed);
  if (!back.ok()) std::fprintf(stderr, "DecodeTree: %s\n", back.status().message().c_str());
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->size() == tree.size());
  FUZZ_CHECK(back->metrics().size() == tree.metrics().size());
  FUZZ_CHECK(Concat(store::EncodeTree(*back)) == Concat(sections));
}

}  // namespace fuzz
