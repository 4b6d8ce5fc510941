#include "codec/docker_config.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/go_duration.h"
#include "common/go_strings.h"

namespace drover::codec {

namespace {

using Errors = std::vector<std::string>;
using model::Value;

// Options of Nomad's docker driver that Drover does not carry out yet: refused by name
// rather than ignored.
const std::set<std::string>& NotYet() {
  static const std::set<std::string> options = {"cpu_hard_limit",    "cpu_cfs_period",
                                                "cpuset_cpus",       "devices",
                                                "dns_options",       "dns_search_domains",
                                                "group_add",         "healthchecks",
                                                "interactive",       "ipc_mode",
                                                "ipv4_address",      "ipv6_address",
                                                "isolation",         "mac_address",
                                                "memory_hard_limit", "network_aliases",
                                                "oom_score_adj",     "pid_mode",
                                                "port_map",          "runtime",
                                                "storage_opt",       "tty",
                                                "userns_mode",       "uts_mode",
                                                "cgroupns",          "container_exists_attempts"};
  return options;
}

const Value* Field(const Value::Object& config, const char* key) {
  auto it = config.find(key);
  return it == config.end() || it->second.is_null() ? nullptr : &it->second;
}

void String(const Value::Object& config, const char* key, std::string& out, Errors& errs) {
  if (const Value* v = Field(config, key)) {
    if (const std::string* s = v->as_string())
      out = *s;
    else
      errs.push_back(absl::StrCat("config.", key, ": expected a string"));
  }
}

void Bool(const Value::Object& config, const char* key, bool& out, Errors& errs) {
  if (const Value* v = Field(config, key)) {
    if (const bool* b = std::get_if<bool>(&v->storage()))
      out = *b;
    else
      errs.push_back(absl::StrCat("config.", key, ": expected a bool"));
  }
}

void Int(const Value::Object& config, const char* key, int64_t& out, Errors& errs) {
  if (const Value* v = Field(config, key)) {
    if (const int64_t* i = std::get_if<int64_t>(&v->storage()); i != nullptr && *i >= 0)
      out = *i;
    else
      errs.push_back(absl::StrCat("config.", key, ": expected a non-negative number"));
  }
}

void Strings(const Value::Object& config, const char* key, std::vector<std::string>& out,
             Errors& errs) {
  const Value* v = Field(config, key);
  if (v == nullptr)
    return;
  const Value::Array* list = v->as_array();
  if (list == nullptr) {
    errs.push_back(absl::StrCat("config.", key, ": expected a list of strings"));
    return;
  }
  for (const Value& item : *list) {
    if (const std::string* s = item.as_string()) {
      out.push_back(*s);
    } else {
      errs.push_back(absl::StrCat("config.", key, ": expected a list of strings"));
      return;
    }
  }
}

// A map of strings; HCL gives a block as a list of one object.
void StringMap(const Value::Object& config, const char* key,
               std::map<std::string, std::string>& out, Errors& errs) {
  const Value* v = Field(config, key);
  if (v == nullptr)
    return;
  const Value::Object* map = v->as_object();
  if (map == nullptr && v->as_array() != nullptr && v->as_array()->size() == 1)
    map = (*v->as_array())[0].as_object();
  if (map == nullptr) {
    errs.push_back(absl::StrCat("config.", key, ": expected a map of strings"));
    return;
  }
  for (const auto& [k, val] : *map) {
    if (const std::string* s = val.as_string())
      out[k] = *s;
    else if (const int64_t* i = std::get_if<int64_t>(&val.storage()))
      out[k] = std::to_string(*i);
    else
      errs.push_back(absl::StrCat("config.", key, ".", k, ": expected a string"));
  }
}

// The objects of a block that may repeat (`mount { }`, `auth { }`).
std::vector<const Value::Object*> Blocks(const Value::Object& config, const char* key,
                                         Errors& errs) {
  std::vector<const Value::Object*> out;
  const Value* v = Field(config, key);
  if (v == nullptr)
    return out;
  if (const Value::Object* one = v->as_object()) {
    out.push_back(one);
  } else if (const Value::Array* list = v->as_array()) {
    for (const Value& item : *list) {
      if (const Value::Object* o = item.as_object())
        out.push_back(o);
      else
        errs.push_back(absl::StrCat("config.", key, ": expected blocks"));
    }
  } else {
    errs.push_back(absl::StrCat("config.", key, ": expected a block"));
  }
  return out;
}

void CheckKeys(const Value::Object& block, const std::string& what,
               const std::set<std::string>& known, Errors& errs) {
  // Nomad's, not carried out yet: refused rather than dropped.
  static const std::set<std::string> kNotYet = {"bind_options", "volume_options", "tmpfs_options",
                                                "config"};
  for (const auto& [key, value] : block) {
    if (kNotYet.contains(key))
      errs.push_back(absl::StrCat(what, ".", key, ": not supported by Drover's docker driver yet"));
    else if (!known.contains(key))
      errs.push_back(absl::StrCat(what, ": unknown option ", common::GoQuote(key)));
  }
}

// An image reference Docker takes: [host[:port]/]path[:tag][@digest], lower-case path.
bool ValidImage(const std::string& image) {
  if (image.empty() || image.size() > 512)
    return false;
  for (unsigned char c : image) {
    if (!(std::islower(c) || std::isdigit(c) || std::isupper(c) || c == '.' || c == '_' ||
          c == '-' || c == '/' || c == ':' || c == '@'))
      return false;
  }
  const size_t at = image.find('@');
  const std::string name = image.substr(0, at);
  if (name.empty() || name.front() == '/' || name.back() == '/' || name.back() == ':' ||
      name.find("//") != std::string::npos || name.find("..") != std::string::npos ||
      (at != std::string::npos && at + 1 == image.size()))
    return false;
  // The repository path (after a registry host, before a tag) is lower case.
  const size_t slash = name.find('/');
  const bool has_host = slash != std::string::npos &&
                        (name.substr(0, slash).find_first_of(".:") != std::string::npos ||
                         name.substr(0, slash) == "localhost");
  std::string path = has_host ? name.substr(slash + 1) : name;
  if (const size_t colon = path.rfind(':'); colon != std::string::npos)
    path = path.substr(0, colon);
  return std::none_of(path.begin(), path.end(), [](unsigned char c) { return std::isupper(c); });
}

}  // namespace

namespace {

// Every option is Nomad's, and carried out.
void CheckOptionNames(const Value::Object* config, Errors& errs) {
  static const std::set<std::string> kKnown = {
      "image",          "command",      "args",
      "entrypoint",     "work_dir",     "hostname",
      "labels",         "init",         "readonly_rootfs",
      "extra_hosts",    "dns_servers",  "sysctl",
      "ulimit",         "security_opt", "ports",
      "network_mode",   "mount",        "volumes",
      "shm_size",       "pids_limit",   "privileged",
      "cap_add",        "cap_drop",     "auth",
      "auth_soft_fail", "force_pull",   "image_pull_timeout",
      "load",           "logging"};
  for (const auto& [key, value] : *config) {
    if (NotYet().contains(key))
      errs.push_back(absl::StrCat("config.", key, ": not supported by Drover's docker driver yet"));
    else if (!kKnown.contains(key))
      errs.push_back(absl::StrCat("config: unknown option ", common::GoQuote(key)));
  }
}

// The options that are values.
void ReadOptions(const Value::Object* config, DockerTaskConfig& out, Errors& errs) {
  String(*config, "image", out.image, errs);
  if (out.image.empty())
    errs.push_back("config.image: required");
  else if (!ValidImage(out.image))
    errs.push_back(absl::StrCat("config.image: ", common::GoQuote(out.image),
                                " is not a valid image reference"));
  String(*config, "command", out.command, errs);
  Strings(*config, "args", out.args, errs);
  Strings(*config, "entrypoint", out.entrypoint, errs);
  String(*config, "work_dir", out.work_dir, errs);
  String(*config, "hostname", out.hostname, errs);
  StringMap(*config, "labels", out.labels, errs);
  Bool(*config, "init", out.init, errs);
  Bool(*config, "readonly_rootfs", out.readonly_rootfs, errs);
  Strings(*config, "extra_hosts", out.extra_hosts, errs);
  Strings(*config, "dns_servers", out.dns_servers, errs);
  StringMap(*config, "sysctl", out.sysctl, errs);
  StringMap(*config, "ulimit", out.ulimit, errs);
  Strings(*config, "security_opt", out.security_opt, errs);
  Strings(*config, "ports", out.ports, errs);
  String(*config, "network_mode", out.network_mode, errs);
  Strings(*config, "volumes", out.volumes, errs);
  Int(*config, "shm_size", out.shm_size, errs);
  Int(*config, "pids_limit", out.pids_limit, errs);
  Bool(*config, "privileged", out.privileged, errs);
  Strings(*config, "cap_add", out.cap_add, errs);
  Strings(*config, "cap_drop", out.cap_drop, errs);
  Bool(*config, "auth_soft_fail", out.auth_soft_fail, errs);
  Bool(*config, "force_pull", out.force_pull, errs);
  String(*config, "image_pull_timeout", out.image_pull_timeout, errs);
  // Checked here unless the client fills it in (${...}); the driver checks it again.
  if (!out.image_pull_timeout.empty() && out.image_pull_timeout.find("${") == std::string::npos) {
    absl::StatusOr<common::Duration> d = common::ParseGoDuration(out.image_pull_timeout);
    if (!d.ok() || *d <= common::Duration::zero()) {
      errs.push_back(
          absl::StrCat("config.image_pull_timeout: ", common::GoQuote(out.image_pull_timeout),
                       " is not a positive duration such as \"5m\""));
    }
  }
  String(*config, "load", out.load, errs);
}

// The network mode, and ports that are the group network's labels.
void CheckNetwork(const DockerTaskConfig& out, const model::TaskGroup& group, Errors& errs) {
  if (!out.network_mode.empty() && out.network_mode != "bridge" && out.network_mode != "host" &&
      out.network_mode != "none") {
    errs.push_back(absl::StrCat("config.network_mode: ", common::GoQuote(out.network_mode),
                                " is not bridge, host or none"));
  }
  std::set<std::string> labels;
  for (const model::NetworkResource& n : group.networks) {
    for (const auto* ports : {&n.reserved_ports, &n.dynamic_ports}) {
      for (const model::Port& p : *ports)
        labels.insert(p.label);
    }
  }
  for (const std::string& port : out.ports) {
    if (!labels.contains(port)) {
      errs.push_back(absl::StrCat("config.ports: port label ", common::GoQuote(port),
                                  " is not declared in the group's network"));
    }
  }
}

void ReadMounts(const Value::Object* config, DockerTaskConfig& out, Errors& errs) {
  for (const Value::Object* m : Blocks(*config, "mount", errs)) {
    CheckKeys(*m, "config.mount", {"type", "target", "source", "readonly"}, errs);
    DockerMount mount;
    String(*m, "type", mount.type, errs);
    String(*m, "target", mount.target, errs);
    String(*m, "source", mount.source, errs);
    Bool(*m, "readonly", mount.readonly, errs);
    if (mount.type != "bind" && mount.type != "volume" && mount.type != "tmpfs")
      errs.push_back(absl::StrCat("config.mount: type ", common::GoQuote(mount.type),
                                  " is not bind, volume or tmpfs"));
    if (mount.target.empty() || mount.target.front() != '/')
      errs.push_back("config.mount: target must be an absolute path in the container");
    out.mounts.push_back(std::move(mount));
  }
}

void ReadAuthAndLogging(const Value::Object* config, DockerTaskConfig& out, Errors& errs) {
  const std::vector<const Value::Object*> auth = Blocks(*config, "auth", errs);
  if (auth.size() > 1)
    errs.push_back("config.auth: only one block");
  if (!auth.empty()) {
    CheckKeys(*auth[0], "config.auth", {"username", "password", "email", "server_address"}, errs);
    DockerAuth a;
    String(*auth[0], "username", a.username, errs);
    String(*auth[0], "password", a.password, errs);
    String(*auth[0], "email", a.email, errs);
    String(*auth[0], "server_address", a.server_address, errs);
    out.auth = std::move(a);
  }
  const std::vector<const Value::Object*> logging = Blocks(*config, "logging", errs);
  if (!logging.empty()) {
    CheckKeys(*logging[0], "config.logging", {"type", "driver"}, errs);
    String(*logging[0], "type", out.logging_type, errs);
    if (out.logging_type.empty())
      String(*logging[0], "driver", out.logging_type, errs);
    if (!out.logging_type.empty() && out.logging_type != "json-file")
      errs.push_back(absl::StrCat("config.logging: type ", common::GoQuote(out.logging_type),
                                  " is not supported: Drover collects the task's logs itself"));
  }
}

}  // namespace

namespace {

absl::StatusOr<DockerTaskConfig> Parse(const model::Value& value, const model::TaskGroup* group) {
  Errors errs;
  DockerTaskConfig out;
  const Value::Object* config = value.as_object();
  if (config == nullptr)
    return absl::InvalidArgumentError("config: expected an object");
  CheckOptionNames(config, errs);
  ReadOptions(config, out, errs);
  if (group != nullptr)
    CheckNetwork(out, *group, errs);
  ReadMounts(config, out, errs);
  ReadAuthAndLogging(config, out, errs);
  if (!errs.empty())
    return absl::InvalidArgumentError(absl::StrJoin(errs, "\n"));
  return out;
}

}  // namespace

absl::StatusOr<DockerTaskConfig> ParseDockerConfig(const model::Task& task,
                                                   const model::TaskGroup& group) {
  return Parse(task.config, &group);
}

absl::StatusOr<DockerTaskConfig> ParseDockerTaskConfig(const model::Value& config) {
  return Parse(config, nullptr);
}

}  // namespace drover::codec
