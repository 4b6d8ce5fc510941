#include "api/query.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace drover::api {
namespace {

using namespace std::chrono_literals;  // NOLINT

const common::Duration kMaxJittered = common::Duration(5min) + common::Duration(5min) / 16;

TEST(QueryTest, ParsesBlockingParameters) {
  Request req;
  req.query = {{"index", "42"}, {"wait", "300000ms"}};
  auto p = ParseBlocking(req);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->index, 42u);
  EXPECT_GE(p->wait, 5min);
  EXPECT_LE(p->wait, kMaxJittered);
  req.query = {{"index", "abc"}};
  EXPECT_EQ(ParseBlocking(req).status().message(), "Invalid index");
  req.query = {{"wait", "forever"}};
  EXPECT_EQ(ParseBlocking(req).status().message(), "Invalid wait time");
  req.query = {{"wait", "1h"}};
  EXPECT_LE(ParseBlocking(req)->wait, kMaxJittered);
}

TEST(QueryTest, BoolsAndNamespaces) {
  Request req;
  req.query = {{"purge", "true"}, {"a", "False"}, {"b", ""}, {"c", "1"}};
  EXPECT_TRUE(QueryBool(req, "purge", false));
  EXPECT_FALSE(QueryBool(req, "a", true));
  EXPECT_TRUE(QueryBool(req, "b", false));
  EXPECT_TRUE(QueryBool(req, "c", false));
  EXPECT_FALSE(QueryBool(req, "missing", false));
  EXPECT_EQ(NamespaceOf(req), "default");
  req.query["namespace"] = "prod";
  EXPECT_EQ(NamespaceOf(req), "prod");
}

TEST(QueryTest, ErrorMapping) {
  EXPECT_EQ(ErrorResponse(absl::NotFoundError("job not found")).status, 404);
  EXPECT_EQ(ErrorResponse(absl::InvalidArgumentError("bad")).status, 400);
  EXPECT_EQ(ErrorResponse(absl::InvalidArgumentError("bad"), true).status, 500);
  Response r = ErrorResponse(absl::InternalError("boom"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "boom");
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
}

TEST(QueryTest, JsonResponseSetsNomadHeaders) {
  Request req;
  Response r = JsonResponse(req, codec::Json::array(), 7);
  EXPECT_EQ(r.headers.at("X-Nomad-Index"), "7");
  EXPECT_EQ(r.headers.at("X-Nomad-KnownLeader"), "true");
  EXPECT_EQ(r.headers.at("X-Nomad-LastContact"), "0");
  EXPECT_EQ(r.body, "[]");
}

}  // namespace
}  // namespace drover::api
