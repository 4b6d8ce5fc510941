#include "drivers/docker/plugin_config.h"

#include <fnmatch.h>

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/go_duration.h"
#include "drivers/docker/engine.h"

namespace drover::drivers::docker {

namespace {

using Json = nlohmann::json;

absl::Status Bad(std::string_view key, std::string_view why) {
  return absl::InvalidArgumentError("plugin \"docker\" config " + std::string(key) + ": " +
                                    std::string(why));
}

// Nomad's settings Drover does not carry out, each with the reason given to the user.
const std::map<std::string, std::string>& NotCarriedOut() {
  static const std::map<std::string, std::string> settings = {
      {"auth", "Drover takes registry credentials from the task's auth block only"},
      {"tls", "Drover speaks to a local daemon over its unix socket only"},
      {"nvidia_runtime", "not supported yet"},
      {"infra_image", "Drover runs no infrastructure (pause) containers"},
      {"infra_image_pull_timeout", "Drover runs no infrastructure (pause) containers"},
      {"image_pull_timeout", "set image_pull_timeout in the task's config"},
      {"pull_activity_timeout", "not supported yet (the task's image_pull_timeout bounds a pull)"},
      {"allow_runtimes", "tasks cannot choose a runtime in Drover"},
      {"logging", "Drover collects the task's logs itself"},
      {"disable_log_collection", "Drover always collects the task's logs"},
      {"windows_allow_insecure_container_admin", "Drover runs on Linux only"},
  };
  return settings;
}

// A block as HCL's JSON gives it: an object, or a list of one object.
absl::StatusOr<Json> Block(const Json& config, const char* key) {
  const Json& v = config[key];
  if (v.is_object())
    return v;
  if (v.is_array() && v.size() == 1 && v[0].is_object())
    return v[0];
  return Bad(key, "must be a block");
}

absl::Status ReadBool(const Json& block, const std::string& path, const char* key, bool& out) {
  if (!block.contains(key))
    return absl::OkStatus();
  if (!block[key].is_boolean())
    return Bad(path + key, "must be true or false");
  out = block[key].get<bool>();
  return absl::OkStatus();
}

absl::Status ReadDuration(const Json& block, const std::string& path, const char* key,
                          common::Duration& out) {
  if (!block.contains(key))
    return absl::OkStatus();
  const Json& v = block[key];
  absl::StatusOr<common::Duration> d = absl::InvalidArgumentError("not a string");
  if (v.is_string())
    d = common::ParseGoDuration(v.get<std::string>());
  if (!d.ok() || *d < common::Duration::zero())
    return Bad(path + key, "must be a duration such as \"3m\"");
  out = *d;
  return absl::OkStatus();
}

absl::Status OnlyKeys(const Json& block, const std::string& path,
                      std::initializer_list<const char*> known) {
  for (auto it = block.begin(); it != block.end(); ++it) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      if (auto nc = NotCarriedOut().find(it.key()); path.empty() && nc != NotCarriedOut().end())
        return Bad(it.key(), "is not carried out by Drover: " + nc->second);
      std::vector<std::string> names(known.begin(), known.end());
      return Bad(path + it.key(),
                 "unknown setting (Drover knows " + absl::StrJoin(names, ", ") + ")");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> StringList(const Json& config, const char* key) {
  std::vector<std::string> out;
  if (!config.contains(key))
    return out;
  if (!config[key].is_array())
    return Bad(key, "must be a list of strings");
  for (const Json& v : config[key]) {
    if (!v.is_string())
      return Bad(key, "must be a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

absl::Status ReadGc(const Json& config, PluginConfig& out) {
  if (!config.contains("gc"))
    return absl::OkStatus();
  absl::StatusOr<Json> gc = Block(config, "gc");
  if (!gc.ok())
    return gc.status();
  if (absl::Status s =
          OnlyKeys(*gc, "gc.", {"image", "image_delay", "container", "dangling_containers"});
      !s.ok())
    return s;
  if (absl::Status s = ReadBool(*gc, "gc.", "image", out.gc_image); !s.ok())
    return s;
  if (absl::Status s = ReadDuration(*gc, "gc.", "image_delay", out.gc_image_delay); !s.ok())
    return s;
  if (absl::Status s = ReadBool(*gc, "gc.", "container", out.gc_container); !s.ok())
    return s;
  if (gc->contains("dangling_containers")) {
    absl::StatusOr<Json> dangling = Block(*gc, "dangling_containers");
    if (!dangling.ok())
      return dangling.status();
    if (absl::Status s = OnlyKeys(*dangling, "gc.dangling_containers.", {"enabled"}); !s.ok())
      return s;
    return ReadBool(*dangling, "gc.dangling_containers.", "enabled", out.gc_dangling);
  }
  return absl::OkStatus();
}

absl::Status ReadLists(const Json& config, PluginConfig& out) {
  if (config.contains("allow_caps")) {
    absl::StatusOr<std::vector<std::string>> caps = StringList(config, "allow_caps");
    if (!caps.ok())
      return caps.status();
    out.allow_caps.clear();
    for (std::string cap : *caps) {
      cap = absl::AsciiStrToLower(cap);
      if (cap.starts_with("cap_"))
        cap = cap.substr(4);
      out.allow_caps.push_back(std::move(cap));
    }
  }
  absl::StatusOr<std::vector<std::string>> labels = StringList(config, "extra_labels");
  if (!labels.ok())
    return labels.status();
  for (std::string label : *labels) {
    if (label.starts_with("com.hashicorp.nomad."))
      label = label.substr(std::string_view("com.hashicorp.nomad.").size());
    const std::vector<std::string>& names = ExtraLabelNames();
    if (std::none_of(names.begin(), names.end(),
                     [&](const std::string& name) { return ExtraLabelMatches(label, name); })) {
      return Bad("extra_labels", "\"" + label + "\" matches none of " + absl::StrJoin(names, ", ") +
                                     " (globs such as job_* may)");
    }
    out.extra_labels.push_back(std::move(label));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& ExtraLabelNames() {
  static const std::vector<std::string> names = {
      "job_name", "job_id", "task_group_name", "task_name", "namespace", "node_id", "node_name"};
  return names;
}

bool ExtraLabelMatches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

absl::StatusOr<PluginConfig> ParsePluginConfig(const nlohmann::json& config) {
  PluginConfig out;
  if (config.is_null())
    return out;
  if (!config.is_object())
    return Bad("", "must be a block");
  if (absl::Status s = OnlyKeys(config, "",
                                {"endpoint", "allow_privileged", "allow_caps", "volumes", "gc",
                                 "pids_limit", "extra_labels", "fingerprint_period"});
      !s.ok())
    return s;
  if (config.contains("endpoint")) {
    if (!config["endpoint"].is_string())
      return Bad("endpoint", "must be a string");
    out.endpoint = config["endpoint"].get<std::string>();
    if (absl::StatusOr<std::string> address = EndpointAddress(out.endpoint); !address.ok())
      return Bad("endpoint", std::string(address.status().message()));
  }
  if (absl::Status s = ReadBool(config, "", "allow_privileged", out.allow_privileged); !s.ok())
    return s;
  if (config.contains("volumes")) {
    absl::StatusOr<Json> volumes = Block(config, "volumes");
    if (!volumes.ok())
      return volumes.status();
    if (volumes->contains("selinuxlabel"))
      return Bad("volumes.selinuxlabel", "is not carried out by Drover");
    if (absl::Status s = OnlyKeys(*volumes, "volumes.", {"enabled"}); !s.ok())
      return s;
    if (absl::Status s = ReadBool(*volumes, "volumes.", "enabled", out.volumes_enabled); !s.ok())
      return s;
  }
  if (absl::Status s = ReadGc(config, out); !s.ok())
    return s;
  if (absl::Status s = ReadLists(config, out); !s.ok())
    return s;
  if (config.contains("pids_limit")) {
    if (!config["pids_limit"].is_number_integer() || config["pids_limit"].get<int64_t>() < 0)
      return Bad("pids_limit", "must be a number, 0 or more");
    out.pids_limit = config["pids_limit"].get<int64_t>();
  }
  if (absl::Status s = ReadDuration(config, "", "fingerprint_period", out.fingerprint_period);
      !s.ok())
    return s;
  if (out.fingerprint_period < std::chrono::milliseconds(100))
    return Bad("fingerprint_period", "must be at least 100ms");
  return out;
}

}  // namespace drover::drivers::docker
