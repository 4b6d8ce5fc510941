#include <gtest/gtest.h>

#include "common/status_macros.h"

namespace drover::common {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) {
    return absl::InvalidArgumentError("odd");
  }
  return x / 2;
}

absl::Status Chain(int x, int* out) {
  DROVER_ASSIGN_OR_RETURN(int h, Half(x));
  DROVER_RETURN_IF_ERROR(h > 100 ? absl::OutOfRangeError("big") : absl::OkStatus());
  *out = h;
  return absl::OkStatus();
}

TEST(StatusMacrosTest, PropagateErrorsAndValues) {
  int out = 0;
  EXPECT_TRUE(Chain(4, &out).ok());
  EXPECT_EQ(out, 2);
  EXPECT_TRUE(absl::IsInvalidArgument(Chain(3, &out)));
  EXPECT_TRUE(absl::IsOutOfRange(Chain(400, &out)));
}

TEST(AnnotateTest, PrefixesContextAndKeepsCode) {
  absl::Status s = Annotate(absl::NotFoundError("no such file"), "failed to start task 'web'");
  EXPECT_TRUE(absl::IsNotFound(s));
  EXPECT_EQ(s.message(), "failed to start task 'web': no such file");
  EXPECT_TRUE(Annotate(absl::OkStatus(), "x").ok());
}

TEST(AnnotateTest, KeepsPayloads) {
  absl::Status in = absl::UnavailableError("busy");
  in.SetPayload("drover.dev/test", absl::Cord("yes"));
  absl::Status out = Annotate(in, "context");
  ASSERT_TRUE(out.GetPayload("drover.dev/test").has_value());
  EXPECT_EQ(std::string(*out.GetPayload("drover.dev/test")), "yes");
}

}  // namespace
}  // namespace drover::common
