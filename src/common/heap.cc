#include "common/heap.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>
#include <cstdlib>

// jemalloc's control interface; null unless libjemalloc is loaded.
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen)
    __attribute__((weak));

namespace drover::common {
namespace {

// MALLCTL_ARENAS_ALL in jemalloc's header: "arena.<i>.purge" with it purges them all.
constexpr char kPurgeAllArenas[] = "arena.4096.purge";

enum class Allocator { kGlibc, kJemalloc, kOther };

// The object that defines `fn`, or null.
const void* DefinedIn(const void* fn) {
  Dl_info info{};
  return dladdr(fn, &info) != 0 ? info.dli_fbase : nullptr;
}

// Which allocator serves malloc: loading libjemalloc is not enough (a sanitizer's
// runtime, or a preloaded allocator, may serve malloc instead), so malloc's definition
// must be in the same object as mallctl, or in glibc's, as free's definition is.
Allocator Serving() {
  static const Allocator serving = [] {
    void* (*malloc_fn)(size_t) = &malloc;
    const void* malloc_in = DefinedIn(reinterpret_cast<const void*>(malloc_fn));
    if (mallctl != nullptr && malloc_in != nullptr &&
        malloc_in == DefinedIn(reinterpret_cast<const void*>(&mallctl)))
      return Allocator::kJemalloc;
    struct mallinfo2 (*mallinfo_fn)() = &mallinfo2;
    if (malloc_in != nullptr && malloc_in == DefinedIn(reinterpret_cast<const void*>(mallinfo_fn)))
      return Allocator::kGlibc;
    return Allocator::kOther;
  }();
  return serving;
}

}  // namespace

const char* HeapAllocator() {
  switch (Serving()) {
    case Allocator::kJemalloc:
      return "jemalloc";
    case Allocator::kGlibc:
      return "glibc";
    case Allocator::kOther:
      break;
  }
  return "other";
}

uint64_t HeapBytesInUse() {
  switch (Serving()) {
    case Allocator::kJemalloc: {
      // The statistics are a snapshot taken at the last "epoch" write.
      uint64_t epoch = 1;
      size_t len = sizeof(epoch);
      (void)mallctl("epoch", &epoch, &len, &epoch, len);
      size_t allocated = 0;
      len = sizeof(allocated);
      return mallctl("stats.allocated", &allocated, &len, nullptr, 0) == 0 ? allocated : 0;
    }
    case Allocator::kGlibc: {
      const struct mallinfo2 m = mallinfo2();
      return m.uordblks + m.hblkhd;
    }
    case Allocator::kOther:
      break;
  }
  return 0;
}

void ReleaseFreeHeap() {
  switch (Serving()) {
    case Allocator::kJemalloc:
      (void)mallctl(kPurgeAllArenas, nullptr, nullptr, nullptr, 0);
      return;
    case Allocator::kGlibc:
      (void)malloc_trim(0);
      return;
    case Allocator::kOther:
      return;
  }
}

}  // namespace drover::common
