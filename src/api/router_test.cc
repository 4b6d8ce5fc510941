#include "api/router.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::api {
namespace {

Response Dispatch(asio::io_context& io, const Router& router, Request req) {
  std::optional<Response> out;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { out = co_await router.Dispatch(req); }, asio::detached);
  EXPECT_TRUE(testing::RunUntil(io, [&] { return out.has_value(); }));
  return *out;
}

TEST(RouterTest, MatchesSegmentsCapturesParamsAndChecksMethods) {
  asio::io_context io;
  Router router;
  router.Add({"GET"}, "/v1/job/:id", [](Request& req) -> asio::awaitable<Response> {
    Response r;
    r.body = "job " + req.Param("id");
    co_return r;
  });
  router.Add({"GET"}, "/v1/job/:id/allocations", [](Request& req) -> asio::awaitable<Response> {
    Response r;
    r.body = "allocs " + req.Param("id");
    co_return r;
  });
  EXPECT_EQ(Dispatch(io, router, {.method = "GET", .path = "/v1/job/web"}).body, "job web");
  EXPECT_EQ(Dispatch(io, router, {.method = "GET", .path = "/v1/job/web/allocations"}).body,
            "allocs web");
  Response wrong = Dispatch(io, router, {.method = "PATCH", .path = "/v1/job/web"});
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.body, "Invalid method");
  EXPECT_EQ(Dispatch(io, router, {.method = "GET", .path = "/v1/nope"}).status, 404);
}

}  // namespace
}  // namespace drover::api
