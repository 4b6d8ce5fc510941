// PUT /v1/search and /v1/search/fuzzy against a real agent: prefixes per context with
// Nomad's truncation at 20, fuzzy matches on job, group, task, node and allocation
// names, and Nomad's refusals.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

using namespace std::chrono_literals;  // NOLINT

codec::Json Search(AgentProcess& agent, const std::string& path, const codec::Json& body) {
  auto r = agent.http().Do("PUT", path, codec::Dump(body));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? codec::ParseJson(r->body).value() : codec::Json();
}

TEST_F(AgentTest, SearchByPrefixAndFuzzy) {
  for (int i = 0; i < 22; ++i) {
    const std::string id = "batch-" + std::to_string(100 + i);
    ASSERT_TRUE(agent_.http().Do("PUT", "/v1/jobs", RawExecJob(id, "batch", "true")).ok());
  }
  ASSERT_TRUE(agent_.http().Do("PUT", "/v1/jobs", RawExecJob("web-cache", "batch", "true")).ok());
  codec::Json alloc = WaitAlloc("web-cache", "complete");

  // Prefix: 20 of the 22 jobs, truncated; one context, or all of them.
  codec::Json found = Search(agent_, "/v1/search", {{"Prefix", "batch-1"}, {"Context", "jobs"}});
  ASSERT_EQ(found["Matches"]["jobs"].size(), 20u) << found.dump();
  EXPECT_EQ(found["Matches"]["jobs"][0], "batch-100");
  EXPECT_EQ(found["Truncations"]["jobs"], true);
  const std::string alloc_id = alloc["ID"];
  found = Search(agent_, "/v1/search", {{"Prefix", alloc_id.substr(0, 7)}, {"Context", "all"}});
  EXPECT_EQ(found["Matches"]["allocs"], codec::Json::array({alloc_id})) << found.dump();
  EXPECT_EQ(found["Truncations"]["allocs"], false);
  for (const char* context : {"allocs", "deployment", "evals", "jobs", "namespaces", "nodes"})
    EXPECT_TRUE(found["Matches"].contains(context)) << context;
  found = Search(agent_, "/v1/search", {{"Prefix", "def"}, {"Context", "namespaces"}});
  EXPECT_EQ(found["Matches"]["namespaces"], codec::Json::array({"default"}));

  // Fuzzy: names containing the text, case-insensitive, with their scope.
  found = Search(agent_, "/v1/search/fuzzy", {{"Text", "CACH"}});
  ASSERT_EQ(found["Matches"]["jobs"].size(), 1u) << found.dump();
  EXPECT_EQ(found["Matches"]["jobs"][0]["ID"], "web-cache");
  EXPECT_EQ(found["Matches"]["jobs"][0]["Scope"], codec::Json::array({"default"}));
  ASSERT_EQ(found["Matches"]["allocs"].size(), 1u) << found.dump();
  EXPECT_EQ(found["Matches"]["allocs"][0]["ID"], "web-cache.g[0]");
  EXPECT_EQ(found["Matches"]["allocs"][0]["Scope"], codec::Json::array({"default", alloc_id}));
  found = Search(agent_, "/v1/search/fuzzy", {{"Text", "itest"}, {"Context", "nodes"}});
  ASSERT_EQ(found["Matches"]["nodes"].size(), 1u) << found.dump();

  // Nomad's refusals: an unknown context, a text too short.
  auto bad = agent_.http().Do("PUT", "/v1/search", R"({"Prefix": "x", "Context": "bogus"})");
  EXPECT_NE(bad.status().message().find(
                "500 (context must be one of [allocs deployment evals jobs namespaces nodes] or "
                "'all' for all contexts; got \"bogus\")"),
            std::string::npos)
      << bad.status();
  bad = agent_.http().Do("PUT", "/v1/search/fuzzy", R"({"Text": "t"})");
  EXPECT_NE(bad.status().message().find("fuzzy search query must be at least 2 characters, got 1"),
            std::string::npos)
      << bad.status();
  bad = agent_.http().Do("PUT", "/v1/search", R"({"Prefix": 5})");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace drover::integration
