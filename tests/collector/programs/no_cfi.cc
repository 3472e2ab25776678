// Spends ~0.4 s of CPU in a function that has no unwind information
// (hand-written assembly without CFI, as JIT and some hand-tuned code are):
// the collector's own walker cannot step out of it, so its samples make the
// collector load libunwind.
//   no_cfi
#include "burn.h"

volatile double burn_sink;

asm(R"(
  .text
  .globl nocfi_spin
  .type nocfi_spin, @function
nocfi_spin:
  push %rbp
  mov %rsp, %rbp
1:
  dec %rdi
  jnz 1b
  pop %rbp
  ret
  .size nocfi_spin, .-nocfi_spin
)");
extern "C" void nocfi_spin(long iterations);

int main() {
  const long long end = ThreadCpuNs() + 400000000LL;
  while (ThreadCpuNs() < end) nocfi_spin(1000000);
  return 0;
}
