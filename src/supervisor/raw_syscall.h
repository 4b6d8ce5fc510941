// System calls made directly, without libc's wrappers: they return -errno on failure
// and never write `errno`. A child cloned with CLONE_VM runs on its parent's memory,
// thread-local storage included, so it must not write the parent's errno (nor call
// anything that allocates or takes a lock). Internal to the supervisor library.
#pragma once

#include <sys/syscall.h>

namespace drover::supervisor::raw {

#if defined(__x86_64__)
inline constexpr bool kAvailable = true;

inline long Call(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
inline constexpr bool kAvailable = true;

inline long Call(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  register long x8 asm("x8") = n;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  register long x4 asm("x4") = e;
  register long x5 asm("x5") = f;
  asm volatile("svc 0"
               : "+r"(x0)
               : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
               : "memory", "cc");
  return x0;
}
#else
// Elsewhere children are forked (their own copy of errno), through libc's syscall().
inline constexpr bool kAvailable = false;

long Call(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0);
#endif

}  // namespace drover::supervisor::raw
