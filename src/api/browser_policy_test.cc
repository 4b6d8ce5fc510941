#include "api/browser_policy.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace drover::api {
namespace {

Request Make(std::string method, std::map<std::string, std::string> headers) {
  Request r;
  r.method = std::move(method);
  r.path = "/v1/jobs";
  r.headers = std::move(headers);
  return r;
}

// Defect 7 of the security review: a web page could POST a job with Content-Type
// text/plain and run a raw_exec task as root on a developer's machine.
TEST(BrowserPolicyTest, CrossSiteWritesAreRefused) {
  const BrowserPolicy none;
  // A form or fetch() from another site.
  absl::Status s = CheckBrowserRequest(Make("POST", {{"host", "127.0.0.1:4646"},
                                                     {"origin", "https://evil.example"},
                                                     {"content-type", "text/plain"}}),
                                       none);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  // The same page through DNS rebinding: same origin, but a Host that is not ours.
  s = CheckBrowserRequest(Make("POST", {{"host", "evil.example:4646"},
                                        {"origin", "http://evil.example:4646"},
                                        {"content-type", "application/json"}}),
                          none);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  // Rebinding reads of logs send no Origin, but browsers mark them with Sec-Fetch-*.
  s = CheckBrowserRequest(
      Make("GET", {{"host", "evil.example:4646"}, {"sec-fetch-site", "same-origin"}}), none);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  // An old browser with no Origin: the content type gives it away.
  for (const char* type : {"text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                           "multipart/form-data; b=x"}) {
    s = CheckBrowserRequest(Make("PUT", {{"host", "127.0.0.1:4646"}, {"content-type", type}}),
                            none);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << type << ": " << s;
  }
  EXPECT_TRUE(absl::IsPermissionDenied(
      CheckBrowserRequest(Make("POST", {{"host", "127.0.0.1:4646"}, {"origin", "null"}}), none)));
}

// On loopback every Host is checked: a rebinding page's same-origin GET to plain http
// carries neither Origin nor Sec-Fetch-* (browsers send those only to trustworthy
// origins).
TEST(BrowserPolicyTest, OnLoopbackEveryRequestNamesTheAgent) {
  const BrowserPolicy loopback{.check_every_host = true};
  EXPECT_TRUE(absl::IsPermissionDenied(
      CheckBrowserRequest(Make("GET", {{"host", "rebind.evil:4646"}}), loopback)));
  EXPECT_TRUE(CheckBrowserRequest(Make("GET", {{"host", "127.0.0.1:4646"}}), loopback).ok());
  EXPECT_TRUE(CheckBrowserRequest(Make("GET", {{"host", "localhost:4646"}}), loopback).ok());
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof name - 1), 0);
  EXPECT_TRUE(
      CheckBrowserRequest(Make("GET", {{"host", std::string(name) + ":4646"}}), loopback).ok());
  EXPECT_TRUE(absl::IsPermissionDenied(CheckBrowserRequest(Make("GET", {}), loopback)));
}

TEST(BrowserPolicyTest, ToolsAndTheAgentsOwnOriginPass) {
  const BrowserPolicy none;
  // The CLI and curl with JSON; Nomad's Go API client, which sends no Content-Type.
  EXPECT_TRUE(
      CheckBrowserRequest(
          Make("PUT", {{"host", "127.0.0.1:4646"}, {"content-type", "application/json"}}), none)
          .ok());
  EXPECT_TRUE(CheckBrowserRequest(Make("PUT", {{"host", "nomad.internal:4646"}}), none).ok());
  // A form type with a token header cannot come from a page without a preflight.
  EXPECT_TRUE(CheckBrowserRequest(Make("POST", {{"host", "127.0.0.1:4646"},
                                                {"content-type", "text/plain"},
                                                {"x-nomad-token", "t"}}),
                                  none)
                  .ok());
  // Reads from tools, whatever the Host.
  EXPECT_TRUE(CheckBrowserRequest(Make("GET", {{"host", "nomad.internal:4646"}}), none).ok());
  // A browser on the agent's own address.
  EXPECT_TRUE(CheckBrowserRequest(Make("POST", {{"host", "127.0.0.1:4646"},
                                                {"origin", "http://127.0.0.1:4646"},
                                                {"content-type", "application/json"}}),
                                  none)
                  .ok());
  EXPECT_TRUE(CheckBrowserRequest(Make("GET", {{"host", "[::1]:4646"},
                                               {"origin", "http://[::1]:4646"},
                                               {"sec-fetch-site", "same-origin"}}),
                                  none)
                  .ok());
  EXPECT_TRUE(CheckBrowserRequest(
                  Make("GET", {{"host", "localhost:4646"}, {"sec-fetch-site", "none"}}), none)
                  .ok());
}

TEST(BrowserPolicyTest, ConfiguredOriginsAndHostsAreAllowedAndGetCors) {
  const BrowserPolicy policy{.allowed_origins = {"https://ui.example.com/"},
                             .allowed_hosts = {"nomad.internal"}};
  Request r = Make("PUT", {{"host", "nomad.internal:4646"},
                           {"origin", "https://UI.example.com"},
                           {"content-type", "application/json"}});
  EXPECT_TRUE(CheckBrowserRequest(r, policy).ok());
  auto cors = CorsHeaders(r, policy);
  EXPECT_EQ(cors["Access-Control-Allow-Origin"], "https://UI.example.com");
  EXPECT_FALSE(IsPreflight(r));
  Request pre = Make("OPTIONS", {{"host", "nomad.internal:4646"},
                                 {"origin", "https://ui.example.com"},
                                 {"access-control-request-method", "PUT"}});
  EXPECT_TRUE(IsPreflight(pre));
  EXPECT_TRUE(CheckBrowserRequest(pre, policy).ok());
  EXPECT_EQ(CorsHeaders(pre, policy)["Access-Control-Allow-Headers"],
            "Content-Type, X-Nomad-Token");
  // Not for anyone else.
  EXPECT_TRUE(CorsHeaders(Make("GET", {{"origin", "https://other.example"}}), policy).empty());
  EXPECT_TRUE(absl::IsPermissionDenied(CheckBrowserRequest(
      Make("GET", {{"host", "nomad.internal:4646"}, {"origin", "https://other.example"}}),
      policy)));
}

}  // namespace
}  // namespace drover::api
