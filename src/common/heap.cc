#include "common/heap.h"

#include <malloc.h>

#include <cstddef>

// jemalloc's control interface; null unless jemalloc is linked in.
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen)
    __attribute__((weak));

namespace drover::common {
namespace {

// MALLCTL_ARENAS_ALL in jemalloc's header: "arena.<i>.purge" with it purges them all.
constexpr char kPurgeAllArenas[] = "arena.4096.purge";

bool Jemalloc() {
  return mallctl != nullptr;
}

}  // namespace

const char* HeapAllocator() {
  return Jemalloc() ? "jemalloc" : "glibc";
}

uint64_t HeapBytesInUse() {
  if (Jemalloc()) {
    // The statistics are a snapshot taken at the last "epoch" write.
    uint64_t epoch = 1;
    size_t len = sizeof(epoch);
    (void)mallctl("epoch", &epoch, &len, &epoch, len);
    size_t allocated = 0;
    len = sizeof(allocated);
    return mallctl("stats.allocated", &allocated, &len, nullptr, 0) == 0 ? allocated : 0;
  }
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

void ReleaseFreeHeap() {
  if (Jemalloc()) {
    (void)mallctl(kPurgeAllArenas, nullptr, nullptr, nullptr, 0);
    return;
  }
  (void)malloc_trim(0);
}

}  // namespace drover::common
