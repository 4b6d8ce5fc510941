#include "common/heap.h"

#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace drover::common {
namespace {

TEST(HeapTest, CountsWhatIsAllocatedAndReleasesWhatIsFree) {
  // Tests link glibc's malloc (the `drover` binary jemalloc: the metrics test checks
  // it); in the sanitizer builds the sanitizer's runtime serves malloc.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  EXPECT_STREQ(HeapAllocator(), "other");
  EXPECT_EQ(HeapBytesInUse(), 0u);
  ReleaseFreeHeap();  // does nothing
  return;
#endif
  EXPECT_STREQ(HeapAllocator(), "glibc");
  const uint64_t before = HeapBytesInUse();
  constexpr size_t kSize = 8 << 20;
  auto block = std::make_unique<char[]>(kSize);
  std::memset(block.get(), 1, kSize);
  EXPECT_GE(HeapBytesInUse(), before + kSize);
  block.reset();
  EXPECT_LT(HeapBytesInUse(), before + kSize);
  ReleaseFreeHeap();  // must not disturb what is still allocated
  std::string kept(1000, 'x');
  ReleaseFreeHeap();
  EXPECT_EQ(kept, std::string(1000, 'x'));
}

}  // namespace
}  // namespace drover::common
