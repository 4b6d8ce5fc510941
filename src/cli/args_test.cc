#include "cli/args.h"

#include <string>
#include <vector>

#include "cli/prefix_match.h"
#include "cli/url.h"
#include <gtest/gtest.h>

namespace drover::cli {
namespace {

using Args = std::vector<std::string>;

TEST(NormalizeArgsTest, SingleDashLongFlagsGetTwoDashes) {
  EXPECT_EQ(NormalizeArgs({"drover", "agent", "-dev", "-http-port=0", "-bind", "0.0.0.0"}),
            (Args{"drover", "agent", "--dev", "--http-port=0", "--bind", "0.0.0.0"}));
  EXPECT_EQ(NormalizeArgs({"drover", "job", "run", "-detach", "-address=http://x:1", "a.json"}),
            (Args{"drover", "job", "run", "--detach", "--address=http://x:1", "a.json"}));
}

TEST(NormalizeArgsTest, LeavesOtherTokensAlone) {
  EXPECT_EQ(NormalizeArgs({"-prog", "--verbose", "-h", "-", "-1", "-.5", "x"}),
            (Args{"-prog", "--verbose", "-h", "-", "-1", "-.5", "x"}));
}

TEST(NormalizeArgsTest, StopsAtDoubleDash) {
  EXPECT_EQ(NormalizeArgs({"drover", "-detach", "--", "-weird-file"}),
            (Args{"drover", "--detach", "--", "-weird-file"}));
}

TEST(AddressTest, ParsesHttpAddresses) {
  absl::StatusOr<Address> a = ParseAddress("http://127.0.0.1:4646");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 4646);
  EXPECT_EQ(a->ToString(), "http://127.0.0.1:4646");

  a = ParseAddress("http://localhost");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->port, 80);

  a = ParseAddress("example.com:9999/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "example.com");
  EXPECT_EQ(a->port, 9999);

  a = ParseAddress("HTTP://[::1]:4646");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->HostPort(), "[::1]:4646");
}

TEST(AddressTest, RejectsWhatItCannotServe) {
  EXPECT_EQ(ParseAddress("https://127.0.0.1:4646").status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(ParseAddress("unix:///tmp/sock").status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(ParseAddress("ftp://x:1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAddress("http://x:0").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAddress("http://x:99999").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAddress("http://x:12ab").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAddress("http://:4646").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAddress("http://x:1/v1").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AddressTest, FlagBeatsNomadAddrBeatsDefault) {
  EXPECT_EQ(ChooseAddress("http://flag:1", "http://env:2"), "http://flag:1");
  EXPECT_EQ(ChooseAddress("", "http://env:2"), "http://env:2");
  EXPECT_EQ(ChooseAddress("", ""), kDefaultAddress);
  EXPECT_EQ(ChooseAddress("", nullptr), "http://127.0.0.1:4646");
}

TEST(UrlTest, Escaping) {
  EXPECT_EQ(PathEscape("my job/v1"), "my%20job%2Fv1");
  EXPECT_EQ(PathEscape("batch-1.x_y~"), "batch-1.x_y~");
  EXPECT_EQ(QueryEscape("a b&c=d/"), "a+b%26c%3Dd%2F");
}

TEST(PrefixMatchTest, UniquePrefix) {
  PrefixMatch m = ResolvePrefix("ab", {"abc", "xyz"});
  EXPECT_EQ(m.kind, PrefixMatch::Kind::kUnique);
  EXPECT_EQ(m.indexes, (std::vector<size_t>{0}));
}

TEST(PrefixMatchTest, ExactMatchWinsOverLongerIds) {
  PrefixMatch m = ResolvePrefix("web", {"web-canary", "web", "webapp"});
  EXPECT_EQ(m.kind, PrefixMatch::Kind::kUnique);
  EXPECT_EQ(m.indexes, (std::vector<size_t>{1}));
}

TEST(PrefixMatchTest, AmbiguousListsEveryMatch) {
  PrefixMatch m = ResolvePrefix("web", {"web-canary", "db", "webapp"});
  EXPECT_EQ(m.kind, PrefixMatch::Kind::kAmbiguous);
  EXPECT_EQ(m.indexes, (std::vector<size_t>{0, 2}));
}

TEST(PrefixMatchTest, NoneWhenNothingStartsWithPrefix) {
  EXPECT_EQ(ResolvePrefix("zz", {"abc", "xyz"}).kind, PrefixMatch::Kind::kNone);
  EXPECT_EQ(ResolvePrefix("zz", {}).kind, PrefixMatch::Kind::kNone);
}

}  // namespace
}  // namespace drover::cli
