// How a commit becomes etcd transactions: in order, each within etcd's rules.
#include "etcd/state_backend.h"

#include <gtest/gtest.h>

namespace drover::etcd {
namespace {

using Kind = state::KvOp::Kind;

state::KvOp Put(std::string key, std::string value) {
  return {.kind = Kind::kPut, .key = std::move(key), .value = std::move(value)};
}
state::KvOp DeletePrefix(std::string prefix) {
  return {.kind = Kind::kDeletePrefix, .key = std::move(prefix)};
}
// "key=value" (or "-prefix" for a deleted prefix) per operation, per transaction.
std::vector<std::vector<std::string>> Shape(const std::vector<std::vector<state::KvOp>>& chunks) {
  std::vector<std::vector<std::string>> out;
  for (const auto& chunk : chunks) {
    out.emplace_back();
    for (const state::KvOp& op : chunk)
      out.back().push_back(op.kind == Kind::kDeletePrefix ? "-" + op.key : op.key + "=" + op.value);
  }
  return out;
}

TEST(StateBackendChunksTest, KeepOrderAndMergeOnlyWithinATransaction) {
  using V = std::vector<std::vector<std::string>>;
  // The last write of a key wins, in the first one's place; the order is kept.
  EXPECT_EQ(
      Shape(StateBackend::Chunks({Put("c", "1"), Put("a", "1"), Put("c", "2")}, 128, 1 << 20)),
      (V{{"c=2", "a=1"}}));
  // A deleted prefix drops the writes under it; a write under it starts the next one.
  EXPECT_EQ(
      Shape(StateBackend::Chunks(
          {Put("x/1", "1"), Put("y", "1"), DeletePrefix("x/"), Put("x/2", "2")}, 128, 1 << 20)),
      (V{{"y=1", "-x/"}, {"x/2=2"}}));
  // Full transactions end; a key written in two of them is written in both.
  EXPECT_EQ(Shape(StateBackend::Chunks({Put("a", "1"), Put("b", "1"), Put("c", "1"), Put("a", "2")},
                                       2, 1 << 20)),
            (V{{"a=1", "b=1"}, {"c=1", "a=2"}}));
  EXPECT_EQ(Shape(StateBackend::Chunks({Put("a", "xxxx"), Put("b", "yyyy")}, 128, 6)),
            (V{{"a=xxxx"}, {"b=yyyy"}}));
  EXPECT_TRUE(StateBackend::Chunks({}, 128, 1 << 20).empty());
}

}  // namespace
}  // namespace drover::etcd
