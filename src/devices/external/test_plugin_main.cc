// drover-test-device-plugin: an external device plugin for external_plugin_test, with
// misbehaviour chosen by flags. It answers the protocol of
// docs/device-plugin-protocol.md with two "acme/fpga" instances.
//
//   --log=FILE       append "start <pid>" when started and "<method> <params>" for each
//                    request, so tests can count restarts and see what was sent
//   --fail=MODE      misbehave instead of answering one request (modes below)
//   --fail-method=M  ... the first request for method M (default: any method)
//   --fail-at=N      ... the Nth request of this process (1 is "configure")
//   --fail-runs=K    only in the first K runs, counted by "start" lines in the log
//                    (default 1; 0 = every run)
//   --noisy          write 256 KiB to stderr before every answer
//
// Modes: crash (exit 3), hang (stop reading and answering), hang-group (also start a
// child in its process group that sleeps; its pid goes to FILE.child), malformed
// (a line that is not JSON), wrong-id, long-line (17 MiB without a newline), error
// (an error response, code UNAVAILABLE), invalid (a fingerprint result whose second
// instance has no id), deep (a result nested 100000 levels deep), traced (start a
// child in a process group of its own that ptrace-attaches to the plugin and never
// waits, so the killed plugin cannot be reaped until the child dies; its pid goes to
// FILE.child; log "traced", or "untraceable" when ptrace is refused; then hang like
// hang).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

struct Flags {
  std::string log;
  std::string fail;
  std::string fail_method;
  int fail_at = 0;
  int fail_runs = 1;
  bool noisy = false;
};

int CountStarts(const std::string& log) {
  std::ifstream in(log);
  int starts = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("start ", 0) == 0)
      ++starts;
  }
  return starts;
}

void Append(const std::string& log, const std::string& line) {
  if (log.empty())
    return;
  std::ofstream out(log, std::ios::app);
  out << line << "\n";
}

[[noreturn]] void SleepForever() {
  for (;;)
    pause();
}

json Fingerprint(const json& config) {
  const std::string model = config.value("model", "Arria 10");
  return {{"devices",
           {{{"vendor", "acme"},
             {"type", "fpga"},
             {"name", model},
             {"attributes",
              {{"memory", "16 GiB"},
               {"cores", 2560},
               {"clock", {{"value", 1.5}, {"unit", "GHz"}}},
               {"ecc", true},
               {"family", "arria"}}},
             {"instances",
              {{{"id", "fpga-0"}, {"healthy", true}, {"pci_bus_id", "0000:3b:00.0"}},
               {{"id", "fpga-1"}, {"healthy", false}, {"health_description", "overheated"}}}}}}}};
}

// See --fail=traced.
void BeTraced(const Flags& flags) {
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);  // where Yama allows only descendants
  int ready[2];
  if (pipe(ready) != 0)
    std::exit(4);
  const pid_t plugin = getpid();
  const pid_t child = fork();
  if (child == 0) {
    setpgid(0, 0);  // out of reach of the agent's SIGKILL to the plugin's group
    alarm(60);      // never outlive a failed test by long
    for (int fd = 0; fd <= 2; ++fd)
      close(fd);
    const char attached = ptrace(PTRACE_SEIZE, plugin, nullptr, nullptr) == 0 ? 'y' : 'n';
    std::ofstream(flags.log + ".child") << getpid();
    const ssize_t ignored = write(ready[1], &attached, 1);
    (void)ignored;
    SleepForever();
  }
  char attached = 'n';
  if (child < 0 || read(ready[0], &attached, 1) != 1)
    std::exit(4);
  Append(flags.log, attached == 'y' ? "traced" : "untraceable");
}

// Returns the answer to `request`: a result or an error response.
json Answer(const json& request, const json& config, const std::string& model) {
  const std::string method = request.value("method", "");
  const json& params = request["params"];
  json response = {{"id", request["id"]}};
  if (method == "configure") {
    response["result"] = {{"protocol_version", 1}};
  } else if (method == "fingerprint") {
    response["result"] = Fingerprint(config);
  } else if (method == "reserve") {
    std::string visible;
    json devices = json::array();
    for (const auto& id : params["ids"]) {
      const std::string s = id.get<std::string>();
      if (s != "fpga-0" && s != "fpga-1") {
        return {
            {"id", request["id"]}, {"error", "unknown device '" + s + "'"}, {"code", "NOT_FOUND"}};
      }
      visible += (visible.empty() ? "" : ",") + s;
      const std::string dev = "/dev/fpga" + s.substr(5);
      devices.push_back({{"task_path", dev}, {"host_path", dev}, {"permissions", "rw"}});
    }
    response["result"] = {
        {"envs", {{"FPGA_VISIBLE_DEVICES", visible}}},
        {"mounts",
         {{{"task_path", "/opt/fpga"}, {"host_path", "/usr/share/fpga"}, {"read_only", true}}}},
        {"devices", devices}};
  } else if (method == "stats") {
    response["result"] = {
        {"groups",
         {{{"vendor", "acme"},
           {"type", "fpga"},
           {"name", model},
           {"instances",
            {{"fpga-0",
              {{"summary",
                {{"value", 512}, {"denominator", 1024}, {"unit", "MiB"}, {"desc", "Memory"}}},
               {"stats",
                {{"attributes",
                  {{"temperature", {{"value", 61.5}, {"unit", "C"}}},
                   {"state", {{"value", "busy"}}}}},
                 {"nested", {{"power", {{"attributes", {{"draw", {{"value", 25}}}}}}}}}}},
               {"timestamp", 1700000000000000000}}},
             {"fpga-1", {{"summary", {{"value", 0.25}}}}}}}}}}};
  } else {
    response = {{"id", request["id"]}, {"error", "unknown method '" + method + "'"}};
  }
  return response;
}

// Misbehaves as `mode` for `request` (some modes never return).
void Misbehave(const std::string& mode, const json& request, const Flags& flags) {
  if (mode == "crash")
    std::exit(3);
  if (mode == "hang")
    SleepForever();
  if (mode == "traced") {
    BeTraced(flags);
    SleepForever();
  }
  if (mode == "hang-group") {
    const pid_t child = fork();
    if (child == 0)
      SleepForever();
    std::ofstream(flags.log + ".child") << child;
    SleepForever();
  }
  if (mode == "malformed") {
    std::cout << "{\"id\": " << request["id"] << ", oops" << std::endl;
  } else if (mode == "wrong-id") {
    std::cout << json{{"id", request["id"].get<int64_t>() + 100}, {"result", json::object()}}
              << std::endl;
  } else if (mode == "long-line") {
    std::cout << std::string(17 << 20, 'x') << std::flush;
    SleepForever();
  } else if (mode == "deep") {
    constexpr int kDepth = 100'000;
    std::cout << "{\"id\":" << request["id"] << ",\"result\":" << std::string(kDepth, '[')
              << std::string(kDepth, ']') << "}" << std::endl;
  } else if (mode == "error") {
    std::cout << json{{"id", request["id"]}, {"error", "boom"}, {"code", "UNAVAILABLE"}}
              << std::endl;
  } else if (mode == "invalid") {
    json bad = {{"devices",
                 {{{"vendor", "acme"},
                   {"type", "fpga"},
                   {"name", "x"},
                   {"instances", {{{"id", "a"}, {"healthy", true}}, {{"healthy", true}}}}}}}};
    std::cout << json{{"id", request["id"]}, {"result", bad}} << std::endl;
  } else {
    std::cerr << "unknown --fail mode '" << mode << "'" << std::endl;
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& name) { return arg.substr(name.size()); };
    if (arg.rfind("--log=", 0) == 0)
      flags.log = value("--log=");
    else if (arg.rfind("--fail=", 0) == 0)
      flags.fail = value("--fail=");
    else if (arg.rfind("--fail-method=", 0) == 0)
      flags.fail_method = value("--fail-method=");
    else if (arg.rfind("--fail-at=", 0) == 0)
      flags.fail_at = std::stoi(value("--fail-at="));
    else if (arg.rfind("--fail-runs=", 0) == 0)
      flags.fail_runs = std::stoi(value("--fail-runs="));
    else if (arg == "--noisy")
      flags.noisy = true;
  }
  Append(flags.log, "start " + std::to_string(getpid()));
  const int run = CountStarts(flags.log);
  bool armed = !flags.fail.empty() && (flags.fail_runs == 0 || run <= flags.fail_runs);

  json config = json::object();
  std::string model = "Arria 10";
  int count = 0;
  for (std::string line; std::getline(std::cin, line);) {
    const json request = json::parse(line);
    const std::string method = request.value("method", "");
    Append(flags.log, method + " " + request["params"].dump());
    ++count;
    if (method == "configure") {
      config = request["params"]["config"];
      model = config.value("model", model);
    }
    const bool hit = flags.fail_at > 0 ? count == flags.fail_at
                                       : flags.fail_method.empty() || flags.fail_method == method;
    if (armed && hit) {
      armed = false;
      Misbehave(flags.fail, request, flags);
      continue;
    }
    if (flags.noisy) {
      for (int i = 0; i < 256; ++i)
        std::cerr << std::string(1023, 'n') << '\n';
      std::cerr.flush();
    }
    std::cout << Answer(request, config, model) << std::endl;
  }
  return 0;
}
