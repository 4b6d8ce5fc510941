#include "tests/integration/security/attack_util.h"

#include <fstream>
#include <sstream>

#include "codec/json.h"
#include "testing/test_util.h"

namespace drover::integration {

void ExpectServing(AgentProcess& agent) {
  auto r = agent.http().Do("GET", "/v1/agent/health", {}, std::chrono::seconds(5));
  EXPECT_TRUE(r.ok()) << "the agent stopped serving: " << r.status();
}

std::unique_ptr<cli::HttpClient> NewClientFor(const AgentProcess& agent) {
  return cli::NewHttpClient(*cli::ParseAddress("http://" + agent.address()));
}

long RssMb(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6)) / 1024;
  }
  return -1;
}

long CpuTicks(int pid) {
  const std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos)
    return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  long ticks = 0;
  // Fields 14 (utime) and 15 (stime); field 3 is the first after ')'.
  for (int i = 3; i <= 15 && (rest >> field); ++i) {
    if (i >= 14)
      ticks += std::stol(field);
  }
  return ticks;
}

namespace {
std::string With(const std::string& body, bool task, const std::string& field,
                 const nlohmann::json& value) {
  auto j = codec::ParseJson(body);
  EXPECT_TRUE(j.ok());
  nlohmann::json& group = (*j)["Job"]["TaskGroups"][0];
  (task ? group["Tasks"][0] : group)[field] = value;
  return codec::Dump(*j);
}
}  // namespace

std::string WithTaskField(const std::string& body, const std::string& field,
                          const nlohmann::json& value) {
  return With(body, true, field, value);
}

std::string WithGroupField(const std::string& body, const std::string& field,
                           const nlohmann::json& value) {
  return With(body, false, field, value);
}

}  // namespace drover::integration
