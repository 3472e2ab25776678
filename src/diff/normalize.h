// Name normalization: what a frame's name contributes to its identity when
// trees from different builds are aligned.
//
// Always applied (so equal code aligns across builds and processes):
//   - addresses and offsets are never part of identity: "libfoo.so.1+0x1234"
//     and "[libfoo.so+0x99]" become "libfoo.so", "foo+0x1a" becomes "foo", a
//     bare "0x7f12ab34" becomes "<address>";
//   - the anonymous namespace has one spelling: "{anonymous}", "_GLOBAL__N_1",
//     "`anonymous namespace'" become "(anonymous namespace)";
//   - lambda and unnamed-type numbering is dropped: "{lambda(int)#3}" becomes
//     "{lambda(int)#}", clang's "$_7" becomes "$_", "'lambda2'" "'lambda'".
// With `kernels` (--normalize kernels), function and kernel names shrink to
// their qualified name: return type, template arguments, parameter list,
// qualifiers, clone suffixes (".constprop.0", ".isra.0", ".cold", ".part.1",
// "[clone .isra.0]") and lambda signatures go, so
// "void gemm<float, 128>(float*)" becomes "gemm" and
// "ns::Foo<int>::run(int) const" becomes "ns::Foo::run".
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace diff {

struct NormalizeOptions {
  bool kernels = false;  // --normalize kernels
};

// The normalized name of a function, kernel or loop frame.
std::string NormalizeName(std::string_view name, const NormalizeOptions& options);

// The always-applied part alone (addresses, anonymous namespaces, numbering).
std::string NormalizeAddressesAndNumbering(std::string_view name);

// The `kernels` part alone: "void gemm<float, 128>(float*)" -> "gemm".
std::string QualifiedBaseName(std::string_view name);

}  // namespace diff
