// Precompiled header of the test binary: the heavy headers nearly every test
// file includes (doctest, nlohmann/json, <regex>, the containers), parsed
// once instead of once per file — the test files are most of the build's
// compile time, and CI has two cores. Only headers whose meaning no test
// file changes with a macro; tests/main.cc (which defines doctest's
// implementation macro) is built without it.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
