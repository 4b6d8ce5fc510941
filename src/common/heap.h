// The process heap as the allocator in use sees it: glibc's malloc, or jemalloc where
// the binary links it (the `drover` binary does: src/cmd/drover/CMakeLists.txt). Which
// one serves malloc is found at run time (jemalloc's mallctl is a weak reference), so
// the libraries and their tests work with either. Any other (a sanitizer's runtime, a
// preloaded allocator) is "other": nothing is measured or released.
#pragma once

#include <cstdint>

namespace drover::common {

// "jemalloc", "glibc" or "other".
const char* HeapAllocator();
// Bytes the program has allocated and not freed (0 for "other").
uint64_t HeapBytesInUse();
// Hands the free pages the allocator holds back to the kernel: glibc's malloc_trim, or
// jemalloc's purge of every arena. Blocking; may take milliseconds on a large heap.
void ReleaseFreeHeap();

}  // namespace drover::common
