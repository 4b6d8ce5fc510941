// Decoding of plugin answers without a process: the forms each field may take and the
// JSON paths named when one is wrong.
#include "devices/external/protocol_json.h"

#include <string>

#include "absl/strings/str_cat.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::devices::external {
namespace {

using ::testing::HasSubstr;

JsonPtr Parse(std::string_view text) {
  auto json = ParseJson(text);
  EXPECT_TRUE(json.ok()) << json.status();
  return json.ok() ? std::move(*json) : nullptr;
}

absl::StatusOr<model::Attribute> Attr(std::string_view text) {
  return DecodeAttribute(*Parse(text), "a");
}

absl::StatusOr<model::StatValue> Stat(std::string_view text) {
  return DecodeStatValue(*Parse(text), "s");
}

// The error message of decoding `text` as a fingerprint result.
std::string FingerprintError(std::string_view text) {
  auto result = DecodeFingerprintResult(*Parse(text));
  EXPECT_FALSE(result.ok());
  return std::string(result.status().message());
}

TEST(ProtocolJsonTest, EncodesRequests) {
  EXPECT_EQ(EncodeRequest(4, "stats"), R"({"id":4,"method":"stats","params":{}})");
  EXPECT_EQ(EncodeReserveRequest(5, {"a", "b"}),
            R"({"id":5,"method":"reserve","params":{"ids":["a","b"]}})");
  auto configure = EncodeConfigureRequest(1, R"({"x": [1, "y"]})");
  ASSERT_TRUE(configure.ok());
  EXPECT_EQ(
      *configure,
      R"({"id":1,"method":"configure","params":{"config":{"x":[1,"y"]},"protocol_version":1}})");
  EXPECT_EQ(EncodeConfigureRequest(1, "7").status().message(),
            "config: expected an object, got number");
  EXPECT_EQ(EncodeConfigureRequest(1, "{").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ProtocolJsonTest, ParsesResponseEnvelopes) {
  auto ok = ParseResponse(R"({"id": 3, "result": {"a": 1}})");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->id, 3);
  EXPECT_FALSE(ok->error.has_value());
  ASSERT_NE(ok->result, nullptr);

  auto err = ParseResponse(R"({"id": 4, "error": "no such device", "code": "NOT_FOUND"})");
  ASSERT_TRUE(err.ok()) << err.status();
  ASSERT_TRUE(err->error.has_value());
  EXPECT_EQ(*err->error, absl::NotFoundError("no such device"));
  EXPECT_EQ(err->result, nullptr);

  auto odd_code = ParseResponse(R"({"id": 4, "error": "x", "code": "WHATEVER"})");
  ASSERT_TRUE(odd_code.ok());
  EXPECT_EQ(odd_code->error->code(), absl::StatusCode::kUnknown);

  // A null result is still a result (a method may have nothing to say).
  EXPECT_TRUE(ParseResponse(R"({"id": 1, "result": null})").ok());

  EXPECT_THAT(ParseResponse("{oops").status().message(), HasSubstr("parse error"));
  EXPECT_EQ(ParseResponse("[1]").status().message(), "response: expected an object, got array");
  EXPECT_EQ(ParseResponse(R"({"result": {}})").status().message(), "id: missing");
  EXPECT_EQ(ParseResponse(R"({"id": "1", "result": {}})").status().message(),
            "id: expected an integer, got string");
  EXPECT_THAT(ParseResponse(R"({"id": 1})").status().message(), HasSubstr("exactly one"));
  EXPECT_THAT(ParseResponse(R"({"id": 1, "result": 1, "error": "x"})").status().message(),
              HasSubstr("exactly one"));
  EXPECT_EQ(ParseResponse(R"({"id": 1, "error": 5})").status().message(),
            "error: expected a string, got number");
}

TEST(ProtocolJsonTest, AttributesTakeEveryDocumentedForm) {
  EXPECT_EQ(*Attr(R"("16 GiB")"), model::Attribute::Int(16, "GiB"));
  EXPECT_EQ(*Attr(R"("1.5 GHz")"), model::Attribute::Float(1.5, "GHz"));
  EXPECT_EQ(*Attr(R"("Tesla T4")"), model::Attribute::String("Tesla T4"));
  EXPECT_EQ(*Attr(R"("true")"), model::Attribute::Bool(true));
  EXPECT_EQ(*Attr("2560"), model::Attribute::Int(2560));
  EXPECT_EQ(*Attr("-3"), model::Attribute::Int(-3));
  EXPECT_EQ(*Attr("2.5"), model::Attribute::Float(2.5));
  EXPECT_EQ(*Attr("false"), model::Attribute::Bool(false));
  EXPECT_EQ(*Attr(R"({"value": 16, "unit": "GiB"})"), model::Attribute::Int(16, "GiB"));
  EXPECT_EQ(*Attr(R"({"value": 0.5, "unit": "W"})"), model::Attribute::Float(0.5, "W"));
  EXPECT_EQ(*Attr(R"({"value": 7})"), model::Attribute::Int(7));
  // The explicit form keeps strings verbatim.
  EXPECT_EQ(*Attr(R"({"value": "16 GiB"})"), model::Attribute::String("16 GiB"));
  EXPECT_EQ(*Attr(R"({"value": true})"), model::Attribute::Bool(true));

  EXPECT_EQ(Attr("[1]").status().message(),
            R"(a: expected a string, number, bool or {"value", "unit"} object, got array)");
  EXPECT_EQ(Attr("null").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Attr(R"({"unit": "GiB"})").status().message(), "a.value: missing");
  EXPECT_EQ(Attr(R"({"value": 1, "unit": "parsecs"})").status().message(),
            "a.unit: unknown unit 'parsecs'");
  EXPECT_EQ(Attr(R"({"value": "x", "unit": "GiB"})").status().message(),
            "a.unit: a unit needs a numeric value");
  EXPECT_EQ(Attr(R"({"value": 1, "unit": 5})").status().message(),
            "a.unit: expected a string, got number");
  EXPECT_EQ(Attr("18446744073709551615").status().message(), "a: integer out of range");
}

TEST(ProtocolJsonTest, StatValuesBecomeIntOrFloatFractions) {
  auto ints = Stat(R"({"value": 3, "denominator": 4, "unit": "GiB", "desc": "used"})");
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ(ints->int_numerator, 3);
  EXPECT_EQ(ints->int_denominator, 4);
  EXPECT_FALSE(ints->float_numerator.has_value());
  EXPECT_EQ(ints->unit, "GiB");
  EXPECT_EQ(ints->desc, "used");

  // One non-integer makes both parts floats.
  auto mixed = Stat(R"({"value": 3, "denominator": 4.5})");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->float_numerator, 3.0);
  EXPECT_EQ(mixed->float_denominator, 4.5);
  EXPECT_FALSE(mixed->int_numerator.has_value());

  auto single = Stat(R"({"value": 7})");
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->int_numerator, 7);
  EXPECT_FALSE(single->int_denominator.has_value());

  EXPECT_EQ(Stat(R"({"value": "idle"})")->string_val, "idle");
  EXPECT_EQ(Stat(R"({"value": false})")->bool_val, false);

  EXPECT_EQ(Stat("5").status().message(), "s: expected an object, got number");
  EXPECT_EQ(Stat(R"({"unit": "W"})").status().message(), "s.value: missing");
  EXPECT_EQ(Stat(R"({"value": "x", "denominator": 2})").status().message(),
            "s.denominator: only numbers have a denominator");
  EXPECT_EQ(Stat(R"({"value": 1, "denominator": "2"})").status().message(),
            "s.denominator: expected a number, got string");
  EXPECT_EQ(Stat(R"({"value": [1]})").status().message(),
            "s.value: expected a number, string or bool, got array");
}

TEST(ProtocolJsonTest, FingerprintNamesThePathOfWhatIsWrong) {
  EXPECT_EQ(FingerprintError("{}"), "devices: missing");
  EXPECT_EQ(FingerprintError(R"({"devices": {}})"), "devices: expected an array, got object");
  EXPECT_EQ(FingerprintError(R"({"devices": [{"type": "t", "name": "n", "instances": []}]})"),
            "devices[0].vendor: missing");
  EXPECT_EQ(FingerprintError(
                R"({"devices": [{"vendor": "", "type": "t", "name": "n", "instances": []}]})"),
            "devices[0].vendor: must not be empty");
  EXPECT_EQ(FingerprintError(R"({"devices": [{"vendor": "v", "type": 1, "name": "n"}]})"),
            "devices[0].type: expected a string, got number");
  EXPECT_EQ(FingerprintError(R"({"devices": [{"vendor": "v", "type": "t", "name": "n"}]})"),
            "devices[0].instances: missing");
  EXPECT_EQ(FingerprintError(R"({"devices": [{"vendor": "v", "type": "t", "name": "n",
                                "instances": [{"id": "a"}]}]})"),
            "devices[0].instances[0].healthy: missing");
  EXPECT_EQ(FingerprintError(R"({"devices": [{"vendor": "v", "type": "t", "name": "n",
                                "instances": [{"id": "a", "healthy": "yes"}]}]})"),
            "devices[0].instances[0].healthy: expected a bool, got string");
  EXPECT_EQ(FingerprintError(R"({"devices": [
                {"vendor": "v", "type": "t", "name": "n", "instances": [{"id": "a", "healthy": true}]},
                {"vendor": "v", "type": "t", "name": "m", "instances": [{"id": "a", "healthy": true}]}]})"),
            "devices[1].instances[0].id: duplicate instance id 'a'");
  EXPECT_EQ(
      FingerprintError(R"({"devices": [{"vendor": "v", "type": "t", "name": "n",
                                "attributes": {"memory": [16]}, "instances": []}]})"),
      R"(devices[0].attributes["memory"]: expected a string, number, bool or {"value", "unit"} object, got array)");
}

TEST(ProtocolJsonTest, FingerprintTreatsNullOptionalMembersAsAbsent) {
  auto devices = DecodeFingerprintResult(*Parse(R"({"devices": [{"vendor": "v", "type": "t",
      "name": "n", "attributes": null, "extra": 1, "instances": [{"id": "a", "healthy": true,
      "health_description": null, "pci_bus_id": null}]}]})"));
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_TRUE(devices->at(0).attributes.empty());
  EXPECT_FALSE(devices->at(0).instances.at(0).locality.has_value());
}

TEST(ProtocolJsonTest, ReserveDefaultsAndChecks) {
  auto empty = DecodeReserveResult(*Parse("{}"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, ContainerReservation{});

  auto res = DecodeReserveResult(*Parse(R"({"devices": [{"task_path": "/dev/x",
      "host_path": "/dev/y"}], "mounts": [{"task_path": "/a", "host_path": "/b"}]})"));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->devices.at(0).permissions, "rwm");
  EXPECT_FALSE(res->mounts.at(0).read_only);

  EXPECT_EQ(DecodeReserveResult(*Parse(R"({"envs": {"A": 1}})")).status().message(),
            R"(envs["A"]: expected a string, got number)");
  EXPECT_EQ(DecodeReserveResult(*Parse(R"({"mounts": [{"task_path": "/a"}]})")).status().message(),
            "mounts[0].host_path: missing");
  EXPECT_EQ(DecodeReserveResult(*Parse(R"({"devices": [{"task_path": "/a", "host_path": "/b",
                "permissions": "rx"}]})"))
                .status()
                .message(),
            "devices[0].permissions: 'rx' is not made of r, w and m");
}

TEST(ProtocolJsonTest, StatsStampsMissingTimestampsAndChecksNesting) {
  auto stats = DecodeStatsResult(*Parse(R"({"groups": [{"vendor": "v", "type": "t", "name": "n",
      "instances": {"a": {"summary": {"value": 1}}, "b": {"summary": {"value": 1},
      "timestamp": 42}}}]})"),
                                 1234);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->at(0).instance_stats.at("a").timestamp, 1234);
  EXPECT_EQ(stats->at(0).instance_stats.at("b").timestamp, 42);

  auto error = [](std::string_view text) {
    return std::string(DecodeStatsResult(*Parse(text), 1).status().message());
  };
  EXPECT_EQ(error("{}"), "groups: missing");
  EXPECT_EQ(error(R"({"groups": [{"vendor": "v", "type": "t", "name": "n", "instances": []}]})"),
            "groups[0].instances: expected an object, got array");
  EXPECT_EQ(error(R"({"groups": [{"vendor": "v", "type": "t", "name": "n",
                "instances": {"a": {}}}]})"),
            R"(groups[0].instances["a"].summary: missing)");
  EXPECT_EQ(error(R"({"groups": [{"vendor": "v", "type": "t", "name": "n",
                "instances": {"a": {"summary": {"value": 1}, "timestamp": -5}}}]})"),
            R"(groups[0].instances["a"].timestamp: expected positive integer Unix nanoseconds)");
  EXPECT_EQ(
      error(R"({"groups": [{"vendor": "v", "type": "t", "name": "n",
                "instances": {"a": {"summary": {"value": 1},
                "stats": {"nested": {"x": {"attributes": {"y": {"value": []}}}}}}}}]})"),
      R"(groups[0].instances["a"].stats.nested["x"].attributes["y"].value: expected a number, string or bool, got array)");

  std::string deep = R"({"groups": [{"vendor": "v", "type": "t", "name": "n", "instances":
      {"a": {"summary": {"value": 1}, "stats": )";
  for (int i = 0; i < 25; ++i)
    deep += R"({"nested": {"x": )";
  deep += "{}";
  for (int i = 0; i < 25; ++i)
    deep += "}}";
  deep += "}}}]}";
  EXPECT_THAT(error(deep), HasSubstr("nested deeper than 24 levels"));
}

std::string Nested(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(ProtocolJsonTest, DeepNestingIsRefusedBeforeParsing) {
  EXPECT_TRUE(ParseJson(Nested(64)).ok());
  EXPECT_EQ(ParseJson(Nested(65)).status(), absl::InvalidArgumentError("nesting deeper than 64"));
  std::string objects;
  for (int i = 0; i < 65; ++i)
    objects += R"({"a": )";
  objects += "1" + std::string(65, '}');
  EXPECT_EQ(ParseJson(objects).status().message(), "nesting deeper than 64");

  // The response object is a level itself.
  EXPECT_TRUE(ParseResponse(R"({"id": 1, "result": )" + Nested(63) + "}").ok());
  // Far too deep to copy or dump recursively, far below the line limit.
  auto deep = ParseResponse(R"({"id": 1, "result": )" + Nested(1'000'000) + "}");
  EXPECT_EQ(deep.status(), absl::InvalidArgumentError("nesting deeper than 64"));

  // Brackets in strings do not count, also after escaped quotes and backslashes.
  auto in_string =
      ParseResponse(R"({"id": 1, "result": ["\"", ")" + std::string(100, '[') + R"(\\"]})");
  ASSERT_TRUE(in_string.ok()) << in_string.status();
  EXPECT_EQ(ParseResponse(R"({"id": 1, "result": ["\\", )" + Nested(70) + "]}").status().message(),
            "nesting deeper than 64");
}

// A fingerprint result of `groups` groups of `per_group` instances each.
std::string Fingerprint(int groups, int per_group) {
  std::string out = R"({"devices": [)";
  for (int g = 0; g < groups; ++g) {
    out += absl::StrCat(g == 0 ? "" : ",", R"({"vendor": "v", "type": "t", "name": "n)", g,
                        R"(", "instances": [)");
    for (int i = 0; i < per_group; ++i)
      out += absl::StrCat(i == 0 ? "" : ",", R"({"id": "d)", g, "-", i, R"(", "healthy": true})");
    out += "]}";
  }
  return out + "]}";
}

// A stats result of `groups` groups of `per_group` samples each.
std::string Stats(int groups, int per_group) {
  std::string out = R"({"groups": [)";
  for (int g = 0; g < groups; ++g) {
    out += absl::StrCat(g == 0 ? "" : ",", R"({"vendor": "v", "type": "t", "name": "n)", g,
                        R"(", "instances": {)");
    for (int i = 0; i < per_group; ++i)
      out += absl::StrCat(i == 0 ? "" : ",", R"("d)", g, "-", i, R"(": {"summary": {"value": 1}})");
    out += "}}";
  }
  return out + "]}";
}

TEST(ProtocolJsonTest, FingerprintAndStatsHaveSizeLimits) {
  EXPECT_TRUE(DecodeFingerprintResult(*Parse(Fingerprint(1024, 0))).ok());
  EXPECT_EQ(FingerprintError(Fingerprint(1025, 0)),
            "devices: 1025 groups, more than the limit of 1024");
  EXPECT_TRUE(DecodeFingerprintResult(*Parse(Fingerprint(2, 2048))).ok());
  EXPECT_EQ(FingerprintError(Fingerprint(2, 2049)),
            "devices[1].instances: more than the limit of 4096 instances in all groups");

  EXPECT_TRUE(DecodeStatsResult(*Parse(Stats(1024, 0)), 1).ok());
  EXPECT_EQ(DecodeStatsResult(*Parse(Stats(1025, 0)), 1).status().message(),
            "groups: 1025 groups, more than the limit of 1024");
  EXPECT_TRUE(DecodeStatsResult(*Parse(Stats(2, 2048)), 1).ok());
  EXPECT_EQ(DecodeStatsResult(*Parse(Stats(2, 2049)), 1).status().message(),
            "groups[1].instances: more than the limit of 4096 instances in all groups");
}

TEST(ProtocolJsonTest, ConfigureResultChecksTheProtocolVersion) {
  EXPECT_TRUE(DecodeConfigureResult(*Parse("{}")).ok());
  EXPECT_TRUE(DecodeConfigureResult(*Parse(R"({"protocol_version": 1})")).ok());
  EXPECT_EQ(DecodeConfigureResult(*Parse(R"({"protocol_version": 2})")).message(),
            "protocol_version: unsupported version 2 (this agent speaks 1)");
  // Not echoed whole: an array or object is named by its type, a long string is cut.
  EXPECT_EQ(DecodeConfigureResult(*Parse(R"({"protocol_version": [[1]]})")).message(),
            "protocol_version: unsupported version array (this agent speaks 1)");
  EXPECT_EQ(
      DecodeConfigureResult(*Parse(R"({"protocol_version": ")" + std::string(100, 'v') + R"("})"))
          .message(),
      absl::StrCat("protocol_version: unsupported version \"", std::string(39, 'v'),
                   "... (this agent speaks 1)"));
  EXPECT_EQ(DecodeConfigureResult(*Parse("[]")).message(), "result: expected an object, got array");
}

}  // namespace
}  // namespace drover::devices::external
