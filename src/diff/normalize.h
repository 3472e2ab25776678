// Name normalization: what a frame's name contributes to its identity when
// trees from different builds are aligned.
//
// Always applied (so equal code aligns across builds and processes):
//   - absolute addresses and offsets into symbols are not part of identity:
//     "foo+0x1a" becomes "foo", "do_syscall_64+0x5c/0x90" "do_syscall_64",
//     a bare "0x7f12ab34" (ASLR moves it every run) "<address>";
//   - an offset into a module is: "libfoo.so.1+0x1234" becomes
//     "libfoo.so+0x1234" (no directory, no version), "[libfoo.so+0x99]"
//     "libfoo.so+0x99", and so does "python3.11+0x25176f" when the frame's
//     module is python3.11 (the collector's name for code no symbol names;
//     with FDE grouping one per function). Distinct offsets are distinct
//     code: merging them summed unrelated functions into one node;
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

// The normalized name of a function, kernel or loop frame whose module is
// `module` (a path or file name; "" when the frame has none).
std::string NormalizeName(std::string_view name, const NormalizeOptions& options, std::string_view module = {});

// The always-applied part alone (addresses, anonymous namespaces, numbering).
std::string NormalizeAddressesAndNumbering(std::string_view name, std::string_view module = {});

// The `kernels` part alone: "void gemm<float, 128>(float*)" -> "gemm".
std::string QualifiedBaseName(std::string_view name);

}  // namespace diff
