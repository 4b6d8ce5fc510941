// libFuzzer target for the HTTP layer: any input is the bytes of a request as a client
// sends them. They go through what the agent runs on a request: the HTTP parser with the
// server's header and body limits, request decoding (percent-decoding, query, headers),
// the browser checks, the router with the namespace check, and into the decoders the
// handlers use: JSON with its depth and size limits, jobs with their limits,
// canonicalization and validation (the register path), blocking-query parameters, and
// fs paths, offsets and limits against a real allocation directory. A crash, leak,
// undefined behaviour or hang is a finding. `make test` runs it briefly, `make fuzz`
// longer (scripts/fuzz.sh).
#include <sys/stat.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "api/browser_policy.h"
#include "api/request_decode.h"
#include "api/router.h"
#include "client/allocdir/fs_view.h"
#include "codec/canonicalize.h"
#include "codec/json.h"
#include "codec/unsupported_fields.h"
#include "codec/validate.h"
#include "common/beneath.h"
#include "common/go_duration.h"

namespace {

namespace http = boost::beast::http;
using drover::api::Request;
using drover::api::Response;

Response Status(const absl::Status& s) {
  return s.ok() ? Response{} : Response::Error(400, std::string(s.message()));
}

// The register path (job_endpoints.cc DecodeRegister) short of the server.
absl::Status DecodeJob(const std::string& body) {
  auto parsed = drover::codec::ParseJson(body);
  if (!parsed.ok())
    return parsed.status();
  if (!parsed->is_object() || !parsed->contains("Job"))
    return absl::InvalidArgumentError("Job must be specified");
  if (absl::Status s = drover::codec::CheckSupportedJobFields((*parsed)["Job"]); !s.ok())
    return s;
  auto job = drover::codec::JobFromJson((*parsed)["Job"]);
  if (!job.ok())
    return job.status();
  drover::codec::CanonicalizeJob(*job);
  (void)drover::codec::Dump(drover::codec::ToJson(*job));
  return drover::codec::ValidateJob(*job);
}

absl::Status BlockingParams(const Request& req) {
  if (auto it = req.query.find("index"); it != req.query.end()) {
    uint64_t index = 0;
    std::from_chars(it->second.data(), it->second.data() + it->second.size(), index);
  }
  if (auto it = req.query.find("wait"); it != req.query.end())
    return drover::common::ParseGoDuration(it->second).status();
  return absl::OkStatus();
}

int64_t IntQuery(const Request& req, const std::string& key) {
  auto it = req.query.find(key);
  int64_t v = 0;
  if (it != req.query.end())
    std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

// An allocation directory with a file, a directory, a symlink out and a FIFO; removed
// when the fuzzer exits.
struct FixtureDir {
  FixtureDir() : root(mkdtemp(tmpl)), dir(root, "a1") {
    (void)dir.Build();
    auto td = dir.BuildTaskDir("t");
    if (td.ok()) {
      std::ofstream(td->local / "f") << "content";
      std::filesystem::create_symlink("/etc", td->local / "out");
      mkfifo((td->local / "fifo").c_str(), 0600);
    }
  }
  ~FixtureDir() { (void)drover::common::RemoveTree(root); }
  char tmpl[32] = "/tmp/drover-http-fuzz-XXXXXX";
  std::string root;
  drover::allocdir::AllocDir dir;
};

const drover::allocdir::AllocDir& Fixture() {
  static FixtureDir fixture;
  return fixture.dir;
}

drover::api::Router& Routes() {
  static drover::api::Router* router = [] {
    auto* r = new drover::api::Router();
    r->AddCheck([](const Request& req) -> std::optional<Response> {
      auto it = req.query.find("namespace");
      if (it != req.query.end() && !it->second.empty() && it->second != "*" &&
          !drover::codec::ValidNamespaceName(it->second)) {
        return Response::Error(400, "invalid namespace");
      }
      return std::nullopt;
    });
    for (const char* path : {"/v1/jobs", "/v1/job/:id", "/v1/validate/job"}) {
      r->Add({"PUT", "POST"}, path, [](Request& req) -> drover::asio::awaitable<Response> {
        co_return Status(DecodeJob(req.body));
      });
    }
    for (const char* path : {"/v1/jobs", "/v1/job/:id", "/v1/job/:id/allocations"}) {
      r->Add({"GET"}, path, [](Request& req) -> drover::asio::awaitable<Response> {
        co_return Status(BlockingParams(req));
      });
    }
    r->Add({"GET"}, "/v1/client/fs/:op/:alloc",
           [](Request& req) -> drover::asio::awaitable<Response> {
             const std::string path = req.Query("path");
             const std::string& op = req.Param("op");
             if (op == "ls")
               co_return Status(drover::allocdir::ListDir(Fixture(), path).status());
             if (op == "stat")
               co_return Status(drover::allocdir::StatPath(Fixture(), path).status());
             co_return Status(drover::allocdir::ReadFileAt(Fixture(), path, IntQuery(req, "offset"),
                                                           IntQuery(req, "limit"))
                                  .status());
           });
    return r;
  }();
  return *router;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(64 << 10);
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_done())
    return 0;
  auto& msg = parser.get();
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& field : msg)
    headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  Request req = drover::api::DecodeRequest(
      std::string(msg.method_string()), std::string(msg.target()), headers, std::move(msg.body()));
  const drover::api::BrowserPolicy policy{.allowed_origins = {"https://ui.example.com"},
                                          .allowed_hosts = {"nomad.internal"}};
  if (!drover::api::CheckBrowserRequest(req, policy).ok())
    return 0;
  (void)drover::api::CorsHeaders(req, policy);
  drover::asio::io_context io;
  drover::asio::co_spawn(
      io, [&]() -> drover::asio::awaitable<void> { (void)co_await Routes().Dispatch(req); },
      drover::asio::detached);
  io.run();
  return 0;
}
