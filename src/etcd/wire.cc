#include "etcd/wire.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::etcd::wire {

namespace {

using Json = codec::Json;

std::string B64(const std::string& s) {
  return absl::Base64Escape(s);
}

const char* TargetName(Compare::Target t) {
  switch (t) {
    case Compare::Target::kVersion:
      return "VERSION";
    case Compare::Target::kCreateRevision:
      return "CREATE";
    case Compare::Target::kModRevision:
      return "MOD";
    case Compare::Target::kValue:
      return "VALUE";
    case Compare::Target::kLease:
      return "LEASE";
  }
  return "MOD";
}

const char* ResultName(Compare::Result r) {
  switch (r) {
    case Compare::Result::kEqual:
      return "EQUAL";
    case Compare::Result::kGreater:
      return "GREATER";
    case Compare::Result::kLess:
      return "LESS";
    case Compare::Result::kNotEqual:
      return "NOT_EQUAL";
  }
  return "EQUAL";
}

Json RangeJson(const std::string& key, const std::string& range_end) {
  Json j = {{"key", B64(key)}};
  if (!range_end.empty())
    j["range_end"] = B64(range_end);
  return j;
}

Json OpJson(const Op& op) {
  switch (op.kind) {
    case Op::Kind::kPut: {
      Json put = {{"key", B64(op.key)}, {"value", B64(op.value)}};
      if (op.lease != 0)
        put["lease"] = std::to_string(op.lease);
      return {{"request_put", put}};
    }
    case Op::Kind::kDelete:
      return {{"request_delete_range", RangeJson(op.key, op.range_end)}};
    case Op::Kind::kRange:
      return {{"request_range", RangeJson(op.key, op.range_end)}};
  }
  return Json::object();
}

// An int64 field: a string in the gateway's JSON (a number is taken too); 0 when absent.
absl::StatusOr<int64_t> Int(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return 0;
  if (it->is_number_integer())
    return it->get<int64_t>();
  int64_t v = 0;
  if (it->is_string() && absl::SimpleAtoi(it->get<std::string>(), &v))
    return v;
  return absl::InvalidArgumentError(std::string("etcd answer: ") + key + " is not an integer");
}

absl::StatusOr<std::string> Bytes(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return std::string();
  std::string out;
  if (!it->is_string() || !absl::Base64Unescape(it->get<std::string>(), &out))
    return absl::InvalidArgumentError(std::string("etcd answer: ") + key + " is not base64");
  return out;
}

bool Bool(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

absl::StatusOr<Json> Parse(std::string_view body) {
  absl::StatusOr<Json> j = codec::ParseJson(body);
  if (!j.ok() || !j->is_object())
    return absl::InvalidArgumentError("etcd answer is not a JSON object");
  return j;
}

absl::StatusOr<int64_t> HeaderRevision(const Json& j) {
  auto h = j.find("header");
  if (h == j.end() || !h->is_object())
    return absl::InvalidArgumentError("etcd answer without a header");
  return Int(*h, "revision");
}

absl::StatusOr<KeyValue> DecodeKv(const Json& j) {
  if (!j.is_object())
    return absl::InvalidArgumentError("etcd answer: a key-value is not an object");
  KeyValue kv;
  auto key = Bytes(j, "key");
  auto value = Bytes(j, "value");
  auto create = Int(j, "create_revision");
  auto mod = Int(j, "mod_revision");
  auto version = Int(j, "version");
  auto lease = Int(j, "lease");
  for (const absl::Status& s : {key.status(), value.status(), create.status(), mod.status(),
                                version.status(), lease.status()}) {
    if (!s.ok())
      return s;
  }
  return KeyValue{*std::move(key), *std::move(value), *create, *mod, *version, *lease};
}

absl::StatusOr<RangeResponse> DecodeRangeJson(const Json& j) {
  RangeResponse out;
  if (auto h = j.find("header"); h != j.end() && h->is_object()) {
    auto rev = Int(*h, "revision");
    if (!rev.ok())
      return rev.status();
    out.revision = *rev;
  }
  if (auto kvs = j.find("kvs"); kvs != j.end() && kvs->is_array()) {
    for (const Json& item : *kvs) {
      auto kv = DecodeKv(item);
      if (!kv.ok())
        return kv.status();
      out.kvs.push_back(*std::move(kv));
    }
  }
  out.more = Bool(j, "more");
  auto count = Int(j, "count");
  if (!count.ok())
    return count.status();
  out.count = *count;
  return out;
}

}  // namespace

std::string EncodeRange(const RangeRequest& r) {
  Json j = RangeJson(r.key, r.range_end);
  if (r.revision != 0)
    j["revision"] = std::to_string(r.revision);
  if (r.limit != 0)
    j["limit"] = std::to_string(r.limit);
  if (r.count_only)
    j["count_only"] = true;
  return codec::Dump(j);
}

std::string EncodePut(const std::string& key, const std::string& value, int64_t lease) {
  Json j = {{"key", B64(key)}, {"value", B64(value)}};
  if (lease != 0)
    j["lease"] = std::to_string(lease);
  return codec::Dump(j);
}

std::string EncodeDelete(const std::string& key, const std::string& range_end) {
  return codec::Dump(RangeJson(key, range_end));
}

std::string EncodeTxn(const std::vector<Compare>& compare, const std::vector<Op>& success,
                      const std::vector<Op>& failure) {
  Json cmp = Json::array();
  for (const Compare& c : compare) {
    Json j = {
        {"key", B64(c.key)}, {"target", TargetName(c.target)}, {"result", ResultName(c.result)}};
    switch (c.target) {
      case Compare::Target::kVersion:
        j["version"] = std::to_string(c.number);
        break;
      case Compare::Target::kCreateRevision:
        j["create_revision"] = std::to_string(c.number);
        break;
      case Compare::Target::kModRevision:
        j["mod_revision"] = std::to_string(c.number);
        break;
      case Compare::Target::kValue:
        j["value"] = B64(c.value);
        break;
      case Compare::Target::kLease:
        j["lease"] = std::to_string(c.number);
        break;
    }
    cmp.push_back(std::move(j));
  }
  Json ok = Json::array();
  for (const Op& op : success)
    ok.push_back(OpJson(op));
  Json fail = Json::array();
  for (const Op& op : failure)
    fail.push_back(OpJson(op));
  return codec::Dump(Json{{"compare", cmp}, {"success", ok}, {"failure", fail}});
}

std::string EncodeCompaction(int64_t revision) {
  return codec::Dump(Json{{"revision", std::to_string(revision)}, {"physical", true}});
}

std::string EncodeLeaseGrant(int64_t ttl_seconds) {
  return codec::Dump(Json{{"TTL", std::to_string(ttl_seconds)}});
}

std::string EncodeLeaseId(int64_t id) {
  return codec::Dump(Json{{"ID", std::to_string(id)}});
}

std::string EncodeWatchCreate(const std::string& key, const std::string& range_end,
                              int64_t start_revision) {
  Json create = RangeJson(key, range_end);
  if (start_revision != 0)
    create["start_revision"] = std::to_string(start_revision);
  create["progress_notify"] = true;
  return codec::Dump(Json{{"create_request", create}});
}

absl::StatusOr<RangeResponse> DecodeRange(std::string_view body) {
  auto j = Parse(body);
  if (!j.ok())
    return j.status();
  return DecodeRangeJson(*j);
}

absl::StatusOr<int64_t> DecodeRevision(std::string_view body) {
  auto j = Parse(body);
  if (!j.ok())
    return j.status();
  return HeaderRevision(*j);
}

absl::StatusOr<int64_t> DecodeDeleted(std::string_view body) {
  auto j = Parse(body);
  if (!j.ok())
    return j.status();
  return Int(*j, "deleted");
}

absl::StatusOr<TxnResponse> DecodeTxn(std::string_view body) {
  auto j = Parse(body);
  if (!j.ok())
    return j.status();
  TxnResponse out;
  auto rev = HeaderRevision(*j);
  if (!rev.ok())
    return rev.status();
  out.revision = *rev;
  out.succeeded = Bool(*j, "succeeded");
  if (auto responses = j->find("responses"); responses != j->end() && responses->is_array()) {
    for (const Json& r : *responses) {
      auto range = r.find("response_range");
      if (!r.is_object() || range == r.end())
        continue;
      auto decoded = DecodeRangeJson(*range);
      if (!decoded.ok())
        return decoded.status();
      out.ranges.push_back(*std::move(decoded));
    }
  }
  return out;
}

absl::StatusOr<Lease> DecodeLeaseGrant(std::string_view body) {
  auto j = Parse(body);
  if (!j.ok())
    return j.status();
  if (auto e = j->find("error"); e != j->end() && e->is_string() && !e->get<std::string>().empty())
    return absl::UnavailableError("etcd: " + e->get<std::string>());
  auto id = Int(*j, "ID");
  auto ttl = Int(*j, "TTL");
  if (!id.ok())
    return id.status();
  if (!ttl.ok())
    return ttl.status();
  if (*id == 0)
    return absl::InvalidArgumentError("etcd answer: a lease without an ID");
  return Lease{*id, *ttl};
}

absl::StatusOr<int64_t> DecodeKeepAlive(std::string_view body) {
  // A stream of one message: {"result": {...}}, with whatever follows it ignored.
  const size_t end = body.find('\n');
  auto j = Parse(body.substr(0, end));
  if (!j.ok())
    return j.status();
  if (j->contains("error"))
    return DecodeError(200, body.substr(0, end));
  auto result = j->find("result");
  if (result == j->end() || !result->is_object())
    return absl::InvalidArgumentError("etcd answer: keepalive without a result");
  auto ttl = Int(*result, "TTL");
  if (!ttl.ok())
    return ttl.status();
  if (*ttl <= 0)
    return absl::NotFoundError("etcd: the lease has expired");
  return *ttl;
}

absl::StatusOr<WatchMessage> DecodeWatchMessage(std::string_view text) {
  auto j = Parse(text);
  if (!j.ok())
    return j.status();
  if (j->contains("error"))
    return DecodeError(200, text);
  auto result = j->find("result");
  if (result == j->end() || !result->is_object())
    return absl::InvalidArgumentError("etcd watch message without a result");
  WatchMessage out;
  out.created = Bool(*result, "created");
  auto compact = Int(*result, "compact_revision");
  if (!compact.ok())
    return compact.status();
  if (Bool(*result, "canceled")) {
    if (*compact > 0)
      return absl::OutOfRangeError("etcd: watch start compacted; compact revision " +
                                   std::to_string(*compact));
    std::string reason;
    if (auto r = result->find("cancel_reason"); r != result->end() && r->is_string())
      reason = r->get<std::string>();
    return absl::CancelledError("etcd cancelled the watch: " + reason);
  }
  auto rev = HeaderRevision(*result);
  if (!rev.ok())
    return rev.status();
  out.response.revision = *rev;
  if (auto events = result->find("events"); events != result->end() && events->is_array()) {
    for (const Json& e : *events) {
      if (!e.is_object())
        return absl::InvalidArgumentError("etcd watch event is not an object");
      WatchEvent ev;
      if (auto t = e.find("type");
          t != e.end() && t->is_string() && t->get<std::string>() == "DELETE")
        ev.type = WatchEvent::Type::kDelete;
      if (auto kv = e.find("kv"); kv != e.end()) {
        auto decoded = DecodeKv(*kv);
        if (!decoded.ok())
          return decoded.status();
        ev.kv = *std::move(decoded);
      }
      out.response.events.push_back(std::move(ev));
    }
  }
  return out;
}

absl::Status DecodeError(int http_status, std::string_view body) {
  absl::StatusOr<Json> j = codec::ParseJson(body);
  if (j.ok() && j->is_object()) {
    const Json* e = &*j;
    if (auto inner = j->find("error"); inner != j->end() && inner->is_object())
      e = &*inner;
    // Unary answers say "code"; errors inside a stream (watch, keepalive) "grpc_code".
    auto code = e->find("code");
    if (code == e->end())
      code = e->find("grpc_code");
    auto message = e->find("message");
    if (code != e->end() && code->is_number_integer() && message != e->end() &&
        message->is_string()) {
      const int c = code->get<int>();
      const auto status_code =
          c > 0 && c <= 16 ? static_cast<absl::StatusCode>(c) : absl::StatusCode::kUnknown;
      return absl::Status(status_code, "etcd: " + message->get<std::string>());
    }
  }
  constexpr size_t kMaxShown = 512;
  return absl::UnknownError("etcd answered " + std::to_string(http_status) + ": " +
                            std::string(body.substr(0, kMaxShown)));
}

}  // namespace drover::etcd::wire
