#include "rpc/protocol.h"

#include <gtest/gtest.h>

namespace drover::rpc {
namespace {

TEST(ProtocolTest, ANodeTravelsWithItsSecret) {
  model::Node n;
  n.id = "node-1";
  n.secret_id = "s3cr3t";
  n.datacenter = "dc2";
  n.http_addr = "10.0.0.5:4646";
  auto back = DecodeNode(EncodeNode(n));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->id, "node-1");
  EXPECT_EQ(back->secret_id, "s3cr3t");
  EXPECT_EQ(back->datacenter, "dc2");
  EXPECT_EQ(back->http_addr, "10.0.0.5:4646");
}

TEST(ProtocolTest, TtlRoundTripsAndMustBePositive) {
  auto ttl = DecodeTtl(EncodeTtl(std::chrono::milliseconds(12'345)));
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(*ttl, std::chrono::milliseconds(12'345));
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeTtl(R"({"HeartbeatTTL": 0})").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeTtl(R"({"HeartbeatTTL": "1s"})").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeTtl("[]").status()));
}

TEST(ProtocolTest, AllocationsRoundTrip) {
  model::Allocation a;
  a.id = "a1";
  a.node_id = "node-1";
  a.job_id = "web";
  a.desired_status = "run";
  a.modify_index = 7;
  auto back = DecodeAllocations(EncodeAllocations(9, {&a}));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->index, 9u);
  ASSERT_EQ(back->allocs.size(), 1u);
  EXPECT_EQ(back->allocs[0].id, "a1");
  EXPECT_EQ(back->allocs[0].job_id, "web");
  EXPECT_EQ(back->allocs[0].modify_index, 7u);
}

TEST(ProtocolTest, UpdatesRoundTripAndNeedAnId) {
  model::AllocClientUpdate u;
  u.id = "a1";
  u.node_id = "node-1";
  u.client_status = "running";
  u.task_states["t"].state = "running";
  auto back = DecodeUpdates(EncodeUpdates({u}));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].client_status, "running");
  EXPECT_EQ((*back)[0].task_states.at("t").state, "running");
  auto no_id = DecodeUpdates(R"({"Updates": [{"ClientStatus": "running"}]})");
  EXPECT_TRUE(absl::IsInvalidArgument(no_id.status()));
  EXPECT_NE(no_id.status().message().find("updates[0]"), std::string::npos);
}

TEST(ProtocolTest, NodeEventsRoundTripAndAreBounded) {
  model::NodeEvent e{.message = "Driver exec is unhealthy",
                     .subsystem = "Driver",
                     .details = {{"driver", "exec"}},
                     .timestamp = common::FromUnixNanos(1'700'000'000'000'000'000)};
  auto back = DecodeNodeEvents(EncodeNodeEvents({e}));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0], e);
  std::string many = R"({"Events": [)";
  for (size_t i = 0; i <= model::kMaxNodeEventsPerCall; ++i)
    many += std::string(i == 0 ? "" : ",") + R"({"Message": "m", "Subsystem": "s"})";
  many += "]}";
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeNodeEvents(many).status()));
  auto bad_time = DecodeNodeEvents(R"({"Events": [{"Message": "m", "Timestamp": 5}]})");
  EXPECT_TRUE(absl::IsInvalidArgument(bad_time.status()));
  EXPECT_NE(bad_time.status().message().find("events[0]"), std::string::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeNodeEvents(R"({"Events": {}})").status()));
}

TEST(ProtocolTest, PreviousAllocInfoRoundTripsAndIsChecked) {
  model::PrevAllocInfo info{.alloc_id = "a1",
                            .done = true,
                            .client_status = "complete",
                            .node_id = "n1",
                            .node_status = "ready",
                            .node_http_addr = "127.0.0.1:1234",
                            .migrate_token = "t",
                            .index = 42};
  auto back = DecodePrevAllocInfo(EncodePrevAllocInfo(info));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, info);
  EXPECT_FALSE(DecodePrevAllocInfo(R"({"AllocID": 3})").ok());
  EXPECT_FALSE(DecodePrevAllocInfo("[]").ok());
  std::string no_index = EncodePrevAllocInfo(info);
  no_index.replace(no_index.find("\"Index\""), 7, "\"Other\"");
  EXPECT_EQ(DecodePrevAllocInfo(no_index).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ProtocolTest, MalformedBodiesAreInvalidArguments) {
  for (std::string_view body : {"", "{", "null", R"({"Updates": {}})", R"({"Updates": [1]})"})
    EXPECT_TRUE(absl::IsInvalidArgument(DecodeUpdates(body).status())) << body;
  for (std::string_view body : {R"({"Index": -1, "Allocations": []})", R"({"Index": 1})",
                                R"({"Index": 1, "Allocations": [{"ID": 5}]})"})
    EXPECT_TRUE(absl::IsInvalidArgument(DecodeAllocations(body).status())) << body;
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeNode(R"({"ID": ["x"]})").status()));
}

TEST(ProtocolTest, ErrorsKeepTheirCodeAcrossTheWire) {
  for (const absl::Status& s :
       {absl::InvalidArgumentError("x"), absl::PermissionDeniedError("x"), absl::NotFoundError("x"),
        absl::UnauthenticatedError("x"), absl::UnavailableError("x"),
        absl::FailedPreconditionError("x"), absl::InternalError("x")}) {
    const absl::Status back = StatusFromHttp(HttpStatusFor(s), std::string(s.message()));
    EXPECT_EQ(back.code(), s.code()) << s;
    EXPECT_EQ(back.message(), "x");
  }
  EXPECT_EQ(StatusFromHttp(502, "").message(), "HTTP status 502");
  EXPECT_EQ(StatusFromHttp(500, std::string(5000, 'e')).message().size(), 1024u);
}

}  // namespace
}  // namespace drover::rpc
