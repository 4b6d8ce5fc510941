// A started server with a fake clock and one pool thread, for tests of its calls.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "server/server.h"
#include "server/test_fixtures.h"
#include "testing/test_util.h"

namespace drover::server::test {

class ServerFixture : public ::testing::Test {
 protected:
  explicit ServerFixture(ServerConfig config = ServerConfig{})
      : server_(io_.get_executor(), pool_, clock_, std::move(config)) {
    server_.Start();
  }
  ~ServerFixture() override {
    server_.Stop();
    io_.restart();
    io_.poll();
    pool_.join();
  }
  // Whether the evaluation left "pending" in time.
  bool EvalDone(const std::string& id) {
    return testing::RunUntil(io_, [&] {
      auto e = server_.state().GetEval(id);
      return e && e->status != "pending";
    });
  }

  common::FakeClock clock_;  // outlives io_ (its timers)
  asio::io_context io_;
  asio::thread_pool pool_{1};
  Server server_;
};

}  // namespace drover::server::test
