// Name normalization: what may differ between builds and must not split a
// node in two. Expected names are written out by hand from the rules in
// src/diff/normalize.h.
#include <doctest/doctest.h>

#include "diff/normalize.h"

using diff::NormalizeAddressesAndNumbering;
using diff::NormalizeName;
using diff::QualifiedBaseName;

TEST_CASE("diff normalize: absolute addresses and offsets into symbols are not part of a name") {
  // Offsets into a module are places in a file: kept, without directory or
  // version (issue 20: they were merged into one "libfoo.so").
  CHECK(NormalizeAddressesAndNumbering("libfoo.so+0x1234") == "libfoo.so+0x1234");
  CHECK(NormalizeAddressesAndNumbering("/usr/lib/libfoo.so.1.2+0xdeadbeef") == "libfoo.so+0xdeadbeef");
  CHECK(NormalizeAddressesAndNumbering("[libfoo.so.6+0x99]") == "libfoo.so+0x99");
  CHECK(NormalizeAddressesAndNumbering("libfoo.so+0x1234") != NormalizeAddressesAndNumbering("libfoo.so+0x1238"));
  // The collector's name for code no symbol names, in a module whose file
  // name does not look like a library: the frame's module says it is one.
  CHECK(NormalizeAddressesAndNumbering("python3.11+0x25176f", "/usr/bin/python3.11") == "python3.11+0x25176f");
  CHECK(NormalizeAddressesAndNumbering("python3.11+0x2456ee", "/usr/bin/python3.11") == "python3.11+0x2456ee");
  CHECK(NormalizeName("xz+0x36a0", {.kernels = true}, "/usr/bin/xz") == "xz+0x36a0");
  // Without the module it reads as a symbol and an offset into it.
  CHECK(NormalizeAddressesAndNumbering("python3.11+0x25176f") == "python3.11");
  CHECK(NormalizeAddressesAndNumbering("[libc.so.6]") == "libc.so");
  CHECK(NormalizeAddressesAndNumbering("foo+0x1a") == "foo");
  CHECK(NormalizeAddressesAndNumbering("do_syscall_64+0x5c/0x90") == "do_syscall_64");
  CHECK(NormalizeAddressesAndNumbering("0x7f12ab34cd") == "<address>");
  CHECK(NormalizeAddressesAndNumbering("[0x4008e5]") == "<address>");
  CHECK(NormalizeAddressesAndNumbering("./prog(myfunc+0x21) [0x4008e5]") == "myfunc");
  CHECK(NormalizeAddressesAndNumbering("/lib/libm.so.6(+0x1f00) [0x7f00]") == "libm.so+0x1f00");
  // Names that merely contain '+' or hex-looking words stay.
  CHECK(NormalizeAddressesAndNumbering("operator+(int, int)") == "operator+(int, int)");
  CHECK(NormalizeAddressesAndNumbering("add_0xff") == "add_0xff");
  CHECK(NormalizeAddressesAndNumbering("[unknown]") == "[unknown]");
  CHECK(NormalizeAddressesAndNumbering("main") == "main");
}

TEST_CASE("diff normalize: anonymous namespaces and lambda numbering") {
  CHECK(NormalizeAddressesAndNumbering("{anonymous}::helper()") == "(anonymous namespace)::helper()");
  CHECK(NormalizeAddressesAndNumbering("_GLOBAL__N_1::helper()") == "(anonymous namespace)::helper()");
  CHECK(NormalizeAddressesAndNumbering("`anonymous namespace'::helper") == "(anonymous namespace)::helper");
  CHECK(NormalizeAddressesAndNumbering("(anonymous namespace)::helper()") == "(anonymous namespace)::helper()");
  CHECK(NormalizeAddressesAndNumbering("main::{lambda(int)#3}::operator()(int) const") ==
        "main::{lambda(int)#}::operator()(int) const");
  CHECK(NormalizeAddressesAndNumbering("f()::{lambda(std::pair<int, int> (*)(int))#12}::operator()") ==
        "f()::{lambda(std::pair<int, int> (*)(int))#}::operator()");
  CHECK(NormalizeAddressesAndNumbering("g()::{unnamed type#2}::run") == "g()::{unnamed type#}::run");
  CHECK(NormalizeAddressesAndNumbering("main::$_17::operator()() const") == "main::$_::operator()() const");
  CHECK(NormalizeAddressesAndNumbering("auto f()::'lambda2'(int)::operator()") == "auto f()::'lambda'(int)::operator()");
  CHECK(NormalizeAddressesAndNumbering("<lambda_8f3c2a>::operator()") == "<lambda>::operator()");
  CHECK(NormalizeAddressesAndNumbering("app::run::{closure#4}") == "app::run::{closure#}");
}

TEST_CASE("diff normalize: --normalize kernels keeps the qualified name") {
  CHECK(QualifiedBaseName("void gemm<float, 128>(float*)") == "gemm");
  CHECK(QualifiedBaseName("gemm") == "gemm");
  CHECK(QualifiedBaseName("foo.constprop.0") == "foo");
  CHECK(QualifiedBaseName("foo.isra.0") == "foo");
  CHECK(QualifiedBaseName("foo.cold") == "foo");
  CHECK(QualifiedBaseName("foo.part.1") == "foo");
  CHECK(QualifiedBaseName("foo.constprop.0.isra.0") == "foo");
  CHECK(QualifiedBaseName("bar.lto_priv.0") == "bar");
  CHECK(QualifiedBaseName("compute(int) [clone .constprop.0] [clone .isra.0]") == "compute");
  CHECK(QualifiedBaseName("ns::Foo<int>::run(int) const") == "ns::Foo::run");
  CHECK(QualifiedBaseName("std::vector<int, std::allocator<int> >::push_back(int const&)") == "std::vector::push_back");
  CHECK(QualifiedBaseName("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                          "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
                          "at::detail::Array<char*, 1>)") == "at::native::vectorized_elementwise_kernel");
  CHECK(QualifiedBaseName("std::vector<int> const& ns::get<3>(ns::Box&)") == "ns::get");
  CHECK(QualifiedBaseName("main::{lambda(int)#1}::operator()(int) const") == "main::{lambda}::operator()");
  CHECK(QualifiedBaseName("bool ns::operator< <int>(ns::A const&, ns::A const&)") == "ns::operator<");
  CHECK(QualifiedBaseName("std::ostream& operator<<(std::ostream&, ns::A const&)") == "operator<<");
  CHECK(QualifiedBaseName("ns::A::operator()(int)") == "ns::A::operator()");
  CHECK(QualifiedBaseName("ns::A::operator new(unsigned long)") == "ns::A::operator new");
  CHECK(QualifiedBaseName("ns::A::operator bool() const") == "ns::A::operator bool");
  CHECK(QualifiedBaseName("ns::A::operator->() const") == "ns::A::operator->");
  CHECK(QualifiedBaseName("(anonymous namespace)::kern<2>(float*)") == "(anonymous namespace)::kern");
  CHECK(QualifiedBaseName("unsigned long long hash<char>(char const*)") == "hash");
  CHECK(QualifiedBaseName("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4") ==
        "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4");
  CHECK(QualifiedBaseName("[unknown]") == "[unknown]");
  CHECK(QualifiedBaseName("<address>") == "<address>");
  // Both halves together: numbering and addresses first, then the base name.
  diff::NormalizeOptions k;
  k.kernels = true;
  CHECK(NormalizeName("void sgemm<float>(float*) [clone .cold]", k) == "sgemm");
  CHECK(NormalizeName("void sgemm<float>(float*)", diff::NormalizeOptions{}) == "void sgemm<float>(float*)");
  CHECK(NormalizeName("libfoo.so.3+0x10", k) == "libfoo.so+0x10");
}
