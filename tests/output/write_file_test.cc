// Writing a file whole or not at all (cct-query -o, cct-diff --flame).
#include <doctest/doctest.h>

#include <filesystem>

#include "output/write_file.h"
#include "tests/test_util.h"

TEST_CASE("a file is written whole, or not at all") {
  testutil::TempDir dir;
  const std::string path = dir / "out.txt";
  REQUIRE(output::WriteFileAtomically(path, [](std::ostream& out) {
            out << "complete\n";
            return cct::Status::Ok();
          }).ok());
  CHECK(testutil::ReadFileOrDie(path) == "complete\n");
  CHECK(!std::filesystem::exists(path + ".tmp"));

  // A failing writer leaves the previous file and no temporary behind.
  const cct::Status failed = output::WriteFileAtomically(path, [](std::ostream& out) {
    out << "half";
    return cct::InvalidArgument("no such metric");
  });
  CHECK(failed.message() == "no such metric");
  CHECK(testutil::ReadFileOrDie(path) == "complete\n");
  CHECK(!std::filesystem::exists(path + ".tmp"));

  // An unwritable place is kIo naming the file.
  const std::string nowhere = dir / "missing/x.svg";
  const cct::Status io = output::WriteFileAtomically(nowhere, [](std::ostream&) { return cct::Status::Ok(); });
  CHECK(io.code() == cct::ErrorCode::kIo);
  CHECK(io.message() == "cannot write " + nowhere);
}
