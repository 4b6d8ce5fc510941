#include "agent/config_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#include "agent/device_plugin_config.h"
#include "jobspec/decode.h"
#include "jobspec/parser.h"

namespace drover::agent {

namespace {

namespace fs = std::filesystem;
using jobspec::BlockSpec;
using F = jobspec::FieldType;
using Json = nlohmann::json;

// Field names are the file's own (snake_case) so ApplyConfig reads what users write.
const BlockSpec kPorts{
    "ports", {{"http", "http", F::kInt}, {"rpc", "rpc", F::kInt}, {"serf", "serf", F::kInt}}};
const BlockSpec kAddresses{
    "addresses",
    {{"http", "http", F::kString}, {"rpc", "rpc", F::kString}, {"serf", "serf", F::kString}}};
const BlockSpec kAdvertise{
    "advertise",
    {{"http", "http", F::kString}, {"rpc", "rpc", F::kString}, {"serf", "serf", F::kString}}};
const BlockSpec kSchedulerConfig{
    "default_scheduler_config",
    {{"memory_oversubscription_enabled", "memory_oversubscription_enabled", F::kBool}}};
const BlockSpec kEtcd{"etcd",
                      {{"endpoints", "endpoints", F::kStringList},
                       {"prefix", "prefix", F::kString},
                       {"dial_timeout", "dial_timeout", F::kDuration},
                       {"lease_ttl", "lease_ttl", F::kDuration}}};
const BlockSpec kServer{
    "server",
    {{"enabled", "enabled", F::kBool},
     {"etcd", "etcd", F::kBlock, &kEtcd},
     {"bootstrap_expect", "bootstrap_expect", F::kInt},
     {"heartbeat_grace", "heartbeat_grace", F::kDuration},
     {"min_heartbeat_ttl", "min_heartbeat_ttl", F::kDuration},
     {"max_heartbeats_per_second", "max_heartbeats_per_second", F::kNumber},
     {"eval_gc_threshold", "eval_gc_threshold", F::kDuration},
     {"batch_eval_gc_threshold", "batch_eval_gc_threshold", F::kDuration},
     {"job_gc_threshold", "job_gc_threshold", F::kDuration},
     {"node_gc_threshold", "node_gc_threshold", F::kDuration},
     {"job_gc_interval", "job_gc_interval", F::kDuration},
     {"job_tracked_versions", "job_tracked_versions", F::kInt},
     {"event_buffer_size", "event_buffer_size", F::kInt},
     {"default_scheduler_config", "default_scheduler_config", F::kBlock, &kSchedulerConfig}}};
const BlockSpec kReserved{"reserved",
                          {{"cpu", "cpu", F::kInt},
                           {"memory", "memory", F::kSizeMB},
                           {"disk", "disk", F::kSizeMB},
                           {"reserved_ports", "reserved_ports", F::kString}}};
const BlockSpec kHostVolume{"host_volume",
                            {{"path", "path", F::kString}, {"read_only", "read_only", F::kBool}}};
const BlockSpec kClient{"client",
                        {
                            {"enabled", "enabled", F::kBool},
                            {"servers", "servers", F::kStringList},
                            {"node_class", "node_class", F::kString},
                            {"node_pool", "node_pool", F::kString},
                            {"meta", "meta", F::kStringMap},
                            {"options", "options", F::kStringMap},
                            {"chroot_env", "chroot_env", F::kStringMap},
                            {"gc_interval", "gc_interval", F::kDuration},
                            {"gc_disk_usage_threshold", "gc_disk_usage_threshold", F::kNumber},
                            {"gc_inode_usage_threshold", "gc_inode_usage_threshold", F::kNumber},
                            {"gc_max_allocs", "gc_max_allocs", F::kInt},
                            {"reserved", "reserved", F::kBlock, &kReserved},
                            {"host_volume", "host_volume", F::kLabeledMap, &kHostVolume, "name"},
                        }};
const BlockSpec kPlugin{"plugin",
                        {{"config", "config", F::kAny},
                         {"command", "command", F::kString},
                         {"args", "args", F::kStringList}}};
const BlockSpec kTelemetry{
    "telemetry",
    {
        {"collection_interval", "collection_interval", F::kDuration},
        {"publish_allocation_metrics", "publish_allocation_metrics", F::kBool},
        {"publish_node_metrics", "publish_node_metrics", F::kBool},
        {"prometheus_metrics", "prometheus_metrics", F::kBool},
        {"disable_hostname", "disable_hostname", F::kBool},
    }};
const BlockSpec kLimits{"limits",
                        {{"rpc_max_conns_per_client", "rpc_max_conns_per_client", F::kInt},
                         {"rpc_max_conns", "rpc_max_conns", F::kInt},
                         {"http_max_conns_per_client", "http_max_conns_per_client", F::kInt},
                         {"http_max_conns", "http_max_conns", F::kInt},
                         {"http_max_header_bytes", "http_max_header_bytes", F::kInt},
                         {"http_max_body_bytes", "http_max_body_bytes", F::kInt},
                         {"http_max_inflight_body_bytes", "http_max_inflight_body_bytes", F::kInt},
                         {"http_max_streams", "http_max_streams", F::kInt},
                         {"http_idle_timeout", "http_idle_timeout", F::kDuration},
                         {"http_read_timeout", "http_read_timeout", F::kDuration},
                         {"http_write_timeout", "http_write_timeout", F::kDuration}}};
const BlockSpec kHttp{"http",
                      {{"allowed_origins", "allowed_origins", F::kStringList},
                       {"allowed_hosts", "allowed_hosts", F::kStringList}}};
const BlockSpec kAgent{"agent",
                       {
                           {"name", "name", F::kString},
                           {"region", "region", F::kString},
                           {"datacenter", "datacenter", F::kString},
                           {"data_dir", "data_dir", F::kString},
                           {"bind_addr", "bind_addr", F::kString},
                           {"log_level", "log_level", F::kString},
                           {"leave_on_interrupt", "leave_on_interrupt", F::kBool},
                           {"leave_on_terminate", "leave_on_terminate", F::kBool},
                           {"disable_update_check", "disable_update_check", F::kBool},
                           {"ports", "ports", F::kBlock, &kPorts},
                           {"addresses", "addresses", F::kBlock, &kAddresses},
                           {"advertise", "advertise", F::kBlock, &kAdvertise},
                           {"server", "server", F::kBlock, &kServer},
                           {"client", "client", F::kBlock, &kClient},
                           {"plugin", "plugin", F::kLabeledMap, &kPlugin, "name"},
                           {"telemetry", "telemetry", F::kBlock, &kTelemetry},
                           {"limits", "limits", F::kBlock, &kLimits},
                           {"http", "http", F::kBlock, &kHttp},
                       }};

absl::Status Unsupported(absl::string_view setting, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(setting, ": ", why));
}

// "1"/"true" → true, "0"/"false" → false.
std::optional<bool> OptionBool(const std::string& value) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "1" || v == "true") {
    return true;
  }
  if (v == "0" || v == "false") {
    return false;
  }
  return std::nullopt;
}

// "22,80-90": ports 1-65535 and ascending ranges, comma separated.
bool ValidPortList(const std::string& list) {
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    std::vector<absl::string_view> bounds = absl::StrSplit(item, '-');
    if (bounds.size() > 2) {
      return false;
    }
    int low = 0;
    int high = 0;
    if (!absl::SimpleAtoi(bounds[0], &low) ||
        !absl::SimpleAtoi(bounds.size() == 2 ? bounds[1] : bounds[0], &high) || low < 1 ||
        high > 65535 || low > high) {
      return false;
    }
  }
  return true;
}

std::set<std::string> OptionList(const std::string& value) {
  std::set<std::string> out;
  for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    out.insert(std::string(absl::StripAsciiWhitespace(item)));
  }
  return out;
}

// The limits block: every value at least 1 (durations at least 1s), but
// rpc_max_conns_per_client, which may be 0 (no limit) as in Nomad.
absl::Status ApplyLimits(const Json& l, AgentConfig& config) {
  if (l.contains("rpc_max_conns_per_client")) {
    const int64_t v = l["rpc_max_conns_per_client"].get<int64_t>();
    if (v < 0)
      return Unsupported("limits.rpc_max_conns_per_client", "must be at least 0");
    config.rpc_max_conns_per_client = static_cast<size_t>(v);
  }
  if (l.contains("rpc_max_conns")) {
    const int64_t v = l["rpc_max_conns"].get<int64_t>();
    if (v < 1)
      return Unsupported("limits.rpc_max_conns", "must be at least 1");
    config.rpc_max_conns = static_cast<size_t>(v);
  }
  api::HttpLimits& h = config.http_limits;
  const std::pair<const char*, size_t*> counts[] = {
      {"http_max_conns_per_client", &h.max_conns_per_client},
      {"http_max_conns", &h.max_conns},
      {"http_max_header_bytes", &h.max_header_bytes},
      {"http_max_body_bytes", &h.max_body_bytes},
      {"http_max_inflight_body_bytes", &h.max_inflight_body_bytes},
      {"http_max_streams", &h.max_streams}};
  for (const auto& [key, field] : counts) {
    if (!l.contains(key))
      continue;
    const int64_t v = l[key].get<int64_t>();
    if (v < 1)
      return Unsupported(absl::StrCat("limits.", key), "must be at least 1");
    *field = static_cast<size_t>(v);
  }
  const std::pair<const char*, std::chrono::milliseconds*> times[] = {
      {"http_idle_timeout", &h.idle_timeout},
      {"http_read_timeout", &h.read_timeout},
      {"http_write_timeout", &h.write_timeout}};
  for (const auto& [key, field] : times) {
    if (!l.contains(key))
      continue;
    const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(
        common::Duration(l[key].get<int64_t>()));
    if (d < std::chrono::seconds(1))
      return Unsupported(absl::StrCat("limits.", key), "must be at least 1s");
    *field = d;
  }
  if (h.max_inflight_body_bytes < h.max_body_bytes) {
    return Unsupported("limits.http_max_inflight_body_bytes",
                       "must be at least limits.http_max_body_bytes");
  }
  return absl::OkStatus();
}

// The http block: which browsers may use the API.
absl::Status ApplyHttp(const Json& h, AgentConfig& config) {
  config.browser.allowed_origins = h.value("allowed_origins", config.browser.allowed_origins);
  config.browser.allowed_hosts = h.value("allowed_hosts", config.browser.allowed_hosts);
  for (const std::string& o : config.browser.allowed_origins) {
    if (!absl::StartsWith(o, "http://") && !absl::StartsWith(o, "https://"))
      return Unsupported("http.allowed_origins",
                         absl::StrCat("\"", o, "\" is not an http:// or https:// origin"));
  }
  return absl::OkStatus();
}

// server { etcd { ... } }.
absl::Status ApplyEtcd(const Json& e, EtcdConfig& etcd) {
  if (e.contains("endpoints"))
    etcd.endpoints = e["endpoints"].get<std::vector<std::string>>();
  for (const std::string& endpoint : etcd.endpoints) {
    if (absl::StartsWith(endpoint, "https://"))
      return Unsupported("server.etcd.endpoints",
                         "TLS to etcd is not supported by Drover yet (use http:// endpoints)");
    if (endpoint.empty())
      return Unsupported("server.etcd.endpoints", "an endpoint is empty");
  }
  etcd.prefix = e.value("prefix", etcd.prefix);
  if (etcd.prefix.empty() || etcd.prefix.front() != '/' || etcd.prefix == "/")
    return Unsupported("server.etcd.prefix",
                       absl::StrCat("\"", etcd.prefix,
                                    "\" must start with '/' and name a key "
                                    "prefix of its own, such as \"/drover\""));
  if (e.contains("dial_timeout")) {
    etcd.dial_timeout = common::Duration(e["dial_timeout"].get<int64_t>());
    if (etcd.dial_timeout < std::chrono::milliseconds(100))
      return Unsupported("server.etcd.dial_timeout", "must be at least 100ms");
  }
  if (e.contains("lease_ttl")) {
    etcd.lease_ttl = common::Duration(e["lease_ttl"].get<int64_t>());
    if (etcd.lease_ttl < std::chrono::seconds(2) ||
        etcd.lease_ttl % std::chrono::seconds(1) != common::Duration(0))
      return Unsupported("server.etcd.lease_ttl", "must be whole seconds, at least 2s");
  }
  return absl::OkStatus();
}

absl::Status ApplyHeartbeats(const Json& s, AgentConfig& config) {
  if (s.contains("min_heartbeat_ttl")) {
    config.min_heartbeat_ttl = common::Duration(s["min_heartbeat_ttl"].get<int64_t>());
    if (config.min_heartbeat_ttl < std::chrono::milliseconds(100))
      return Unsupported("server.min_heartbeat_ttl", "must be at least 100ms");
  }
  if (s.contains("heartbeat_grace")) {
    config.heartbeat_grace = common::Duration(s["heartbeat_grace"].get<int64_t>());
    if (config.heartbeat_grace < std::chrono::milliseconds(0))
      return Unsupported("server.heartbeat_grace", "must not be negative");
  }
  if (s.contains("max_heartbeats_per_second")) {
    config.max_heartbeats_per_second = s["max_heartbeats_per_second"].get<double>();
    if (!(config.max_heartbeats_per_second > 0))
      return Unsupported("server.max_heartbeats_per_second", "must be above 0");
  }
  return absl::OkStatus();
}

absl::Status ApplyServerGc(const Json& s, AgentConfig& config) {
  const std::pair<const char*, common::Duration*> kThresholds[] = {
      {"eval_gc_threshold", &config.eval_gc_threshold},
      {"batch_eval_gc_threshold", &config.batch_eval_gc_threshold},
      {"job_gc_threshold", &config.job_gc_threshold},
      {"node_gc_threshold", &config.node_gc_threshold}};
  for (const auto& [name, field] : kThresholds) {
    if (!s.contains(name))
      continue;
    *field = common::Duration(s[name].get<int64_t>());
    if (*field < common::Duration(0))
      return Unsupported(std::string("server.") + name, "must not be negative");
  }
  if (s.contains("job_tracked_versions")) {
    const int64_t n = s["job_tracked_versions"].get<int64_t>();
    if (n < 1 || n > 1000)
      return Unsupported("server.job_tracked_versions", "must be between 1 and 1000");
    config.job_tracked_versions = static_cast<size_t>(n);
  }
  if (s.contains("event_buffer_size")) {
    const int64_t n = s["event_buffer_size"].get<int64_t>();
    if (n < 1 || n > 100000)
      return Unsupported("server.event_buffer_size", "must be between 1 and 100000");
    config.event_buffer_size = static_cast<size_t>(n);
  }
  if (s.contains("job_gc_interval")) {
    config.job_gc_interval = common::Duration(s["job_gc_interval"].get<int64_t>());
    if (config.job_gc_interval < std::chrono::seconds(1))
      return Unsupported("server.job_gc_interval", "must be at least 1s");
  }
  return absl::OkStatus();
}

absl::Status ApplyClient(const Json& c, AgentConfig& config) {
  config.client_enabled = c.value("enabled", config.client_enabled);
  if (c.contains("servers"))
    config.servers = c["servers"].get<std::vector<std::string>>();
  if (c.contains("host_volume") && !c["host_volume"].empty()) {
    return Unsupported("client.host_volume", "host volumes are not supported by Drover yet");
  }
  config.node_class = c.value("node_class", config.node_class);
  config.node_pool = c.value("node_pool", config.node_pool);
  if (c.contains("meta")) {
    for (auto it = c["meta"].begin(); it != c["meta"].end(); ++it) {
      config.meta[it.key()] = it.value().get<std::string>();
    }
  }
  if (c.contains("chroot_env")) {
    config.chroot_env = c["chroot_env"].get<std::map<std::string, std::string>>();
  }
  if (c.contains("gc_interval")) {
    config.gc.interval = common::Duration(c["gc_interval"].get<int64_t>());
    if (config.gc.interval <= common::Duration::zero()) {
      return Unsupported("client.gc_interval", "must be positive");
    }
  }
  for (const char* key : {"gc_disk_usage_threshold", "gc_inode_usage_threshold"}) {
    if (!c.contains(key)) {
      continue;
    }
    const double percent = c[key].get<double>();
    if (percent < 0 || percent > 100) {
      return Unsupported(absl::StrCat("client.", key), "must be a percentage (0-100)");
    }
    (std::string_view(key) == "gc_disk_usage_threshold" ? config.gc.disk_usage_threshold
                                                        : config.gc.inode_usage_threshold) =
        percent;
  }
  if (c.contains("gc_max_allocs")) {
    config.gc.max_allocs = c["gc_max_allocs"].get<int>();
    if (config.gc.max_allocs < 1) {
      return Unsupported("client.gc_max_allocs", "must be at least 1");
    }
  }
  if (c.contains("reserved")) {
    const Json& r = c["reserved"];
    config.reserved.cpu_shares = r.value("cpu", config.reserved.cpu_shares);
    config.reserved.memory_mb = r.value("memory", config.reserved.memory_mb);
    config.reserved.disk_mb = r.value("disk", config.reserved.disk_mb);
    config.reserved.reserved_host_ports =
        r.value("reserved_ports", config.reserved.reserved_host_ports);
    if (!ValidPortList(config.reserved.reserved_host_ports)) {
      return Unsupported("client.reserved.reserved_ports",
                         absl::StrCat("\"", config.reserved.reserved_host_ports,
                                      "\" is not a list of ports and ranges like \"22,80-90\""));
    }
    if (config.reserved.cpu_shares < 0 || config.reserved.memory_mb < 0 ||
        config.reserved.disk_mb < 0) {
      return Unsupported("client.reserved", "reserved resources cannot be negative");
    }
  }
  if (c.contains("options")) {
    for (auto it = c["options"].begin(); it != c["options"].end(); ++it) {
      const std::string& key = it.key();
      const std::string value = it.value().get<std::string>();
      if (key == "driver.raw_exec.enable") {
        std::optional<bool> on = OptionBool(value);
        if (!on) {
          return Unsupported("client.options[\"driver.raw_exec.enable\"]",
                             absl::StrCat("\"", value, "\" is not a bool"));
        }
        config.raw_exec_enabled = *on;
      } else if (key == "driver.allowlist" || key == "driver.whitelist") {
        config.driver_allowlist = OptionList(value);
      } else if (key == "driver.denylist" || key == "driver.blacklist") {
        config.driver_denylist = OptionList(value);
      } else {
        return Unsupported(absl::StrCat("client.options[\"", key, "\"]"),
                           "unknown client option (Drover knows driver.raw_exec.enable, "
                           "driver.allowlist and driver.denylist)");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyPlugins(const Json& plugins, AgentConfig& config) {
  for (auto it = plugins.begin(); it != plugins.end(); ++it) {
    const std::string& name = it.key();
    const Json plugin_config = it->value("config", Json::object());
    if (name == "raw_exec") {
      for (auto key = plugin_config.begin(); key != plugin_config.end(); ++key) {
        if (key.key() != "enabled" || !key->is_boolean()) {
          return Unsupported(absl::StrCat("plugin \"raw_exec\" config ", key.key()),
                             "raw_exec's only setting is enabled = true|false");
        }
        config.raw_exec_enabled = key->get<bool>();
      }
    } else if (name == "exec") {
      if (!plugin_config.empty()) {
        return Unsupported(absl::StrCat("plugin \"exec\" config ", plugin_config.begin().key()),
                           "exec has no settings in Drover yet (chroot_env belongs in the client "
                           "block)");
      }
    } else if (name == "docker") {
      absl::StatusOr<drivers::docker::PluginConfig> docker =
          drivers::docker::ParsePluginConfig(plugin_config);
      if (!docker.ok())
        return docker.status();
      config.docker = *std::move(docker);
    } else if (name == "example" || name == "nvidia" || it->contains("command")) {
      if (absl::Status s = ApplyDevicePlugin(name, *it, config); !s.ok())
        return s;
    } else {
      return Unsupported(
          absl::StrCat("plugin \"", name, "\""),
          "Drover has no plugin of that name (drivers: raw_exec, exec, docker; device "
          "plugins: example, nvidia, or an external one with a command)");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandConfigPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> entries;
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && !absl::StartsWith(name, ".") &&
            (absl::EndsWith(name, ".hcl") || absl::EndsWith(name, ".json"))) {
          entries.push_back(entry.path().string());
        }
      }
      if (ec) {
        return absl::InternalError(
            absl::StrCat("Error reading config directory ", path, ": ", ec.message()));
      }
      std::sort(entries.begin(), entries.end());
      files.insert(files.end(), entries.begin(), entries.end());
    } else if (fs::exists(path, ec)) {
      files.push_back(path);
    } else {
      return absl::NotFoundError(
          absl::StrCat("Error loading configuration from ", path, ": no such file or directory"));
    }
  }
  return files;
}

absl::StatusOr<Json> ReadConfigFile(const std::string& path, const std::string& text) {
  jobspec::Evaluator evaluator(path, jobspec::EvalOptions{});
  jobspec::Decoder decoder(evaluator);
  Json out = Json::object();
  if (absl::EndsWith(path, ".json")) {
    Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Error loading configuration from ", path, ": not a JSON object"));
    }
    const jobspec::Body body = jobspec::BodyFromJson(parsed, kAgent);
    if (absl::Status s = decoder.DecodeBody(body, kAgent, nullptr, out); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Error loading configuration from ", path, ": ", s.message()));
    }
    return out;
  }
  absl::StatusOr<jobspec::File> file = jobspec::ParseFile(path, text);
  if (!file.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Error loading configuration from ", path, ": ", file.status().message()));
  }
  if (absl::Status s = decoder.DecodeBody(file->body, kAgent, nullptr, out); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Error loading configuration from ", path, ": ", s.message()));
  }
  return out;
}

void MergeConfig(Json& base, const Json& overlay) {
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    if (it->is_object() && base.contains(it.key()) && base[it.key()].is_object()) {
      MergeConfig(base[it.key()], *it);
    } else {
      base[it.key()] = *it;
    }
  }
}

absl::Status ApplyConfig(const Json& merged, AgentConfig& config) {
  config.node_name = merged.value("name", config.node_name);
  config.region = merged.value("region", config.region);
  config.datacenter = merged.value("datacenter", config.datacenter);
  config.data_dir = merged.value("data_dir", config.data_dir);
  config.bind_addr = merged.value("bind_addr", config.bind_addr);
  if (merged.contains("advertise")) {
    // Where other servers reach this one ("host" or "host:port"); serf is unused.
    config.advertise_http = merged["advertise"].value("http", config.advertise_http);
    config.advertise_rpc = merged["advertise"].value("rpc", config.advertise_rpc);
  }
  if (merged.contains("addresses") && merged["addresses"].contains("http")) {
    config.bind_addr = merged["addresses"]["http"].get<std::string>();
  }
  if (merged.contains("log_level")) {
    const std::string level = absl::AsciiStrToLower(merged["log_level"].get<std::string>());
    if (level != "trace" && level != "debug" && level != "info" && level != "warn" &&
        level != "error" && level != "off") {
      return Unsupported("log_level", absl::StrCat("unknown level \"", level, "\""));
    }
    config.log_level = level;
  }
  if (merged.contains("ports")) {
    for (auto it = merged["ports"].begin(); it != merged["ports"].end(); ++it) {
      const int64_t port = it->get<int64_t>();
      if (port < 0 || port > 65535) {
        return Unsupported(absl::StrCat("ports.", it.key()), "must be 0-65535");
      }
    }
    config.http_port = merged["ports"].value("http", config.http_port);
    config.rpc_port = merged["ports"].value("rpc", config.rpc_port);
    // ports.serf is accepted and unused: Drover has no gossip layer (docs/cluster.md).
  }
  if (merged.contains("server")) {
    const Json& s = merged["server"];
    config.server_enabled = s.value("enabled", config.server_enabled);
    config.bootstrap_expect = s.value("bootstrap_expect", config.bootstrap_expect);
    if (config.bootstrap_expect < 1)
      return Unsupported("server.bootstrap_expect", "must be at least 1");
    if (s.contains("etcd")) {
      if (absl::Status st = ApplyEtcd(s["etcd"], config.etcd); !st.ok())
        return st;
    }
    if (absl::Status st = ApplyHeartbeats(s, config); !st.ok())
      return st;
    if (absl::Status st = ApplyServerGc(s, config); !st.ok())
      return st;
    if (s.contains("default_scheduler_config")) {
      config.memory_oversubscription = s["default_scheduler_config"].value(
          "memory_oversubscription_enabled", config.memory_oversubscription);
    }
  }
  if (merged.contains("client")) {
    if (absl::Status s = ApplyClient(merged["client"], config); !s.ok()) {
      return s;
    }
  }
  if (merged.contains("plugin")) {
    if (absl::Status s = ApplyPlugins(merged["plugin"], config); !s.ok()) {
      return s;
    }
  }
  if (merged.contains("limits")) {
    if (absl::Status s = ApplyLimits(merged["limits"], config); !s.ok())
      return s;
  }
  if (merged.contains("http")) {
    if (absl::Status s = ApplyHttp(merged["http"], config); !s.ok())
      return s;
  }
  if (merged.contains("telemetry")) {
    const Json& t = merged["telemetry"];
    config.prometheus_metrics = t.value("prometheus_metrics", false);
    config.disable_hostname = t.value("disable_hostname", false);
    config.publish_allocation_metrics = t.value("publish_allocation_metrics", false);
    config.publish_node_metrics = t.value("publish_node_metrics", false);
    if (t.contains("collection_interval")) {
      config.stats_interval = common::Duration(t["collection_interval"].get<int64_t>());
      if (config.stats_interval < std::chrono::milliseconds(100)) {
        return Unsupported("telemetry.collection_interval", "must be at least 100ms");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status NormalizeServerAddresses(std::vector<std::string>& servers) {
  for (std::string& address : servers) {
    const auto bad = [&address](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("Invalid server address \"", address, "\": ", why));
    };
    if (address.empty())
      return bad("empty");
    const bool bracketed = address.front() == '[';
    const size_t close = bracketed ? address.find(']') : std::string::npos;
    if (bracketed && close == std::string::npos)
      return bad("unterminated [");
    const size_t colon = address.rfind(':');
    const bool has_port =
        bracketed ? colon != std::string::npos && colon > close : colon != std::string::npos;
    if (!bracketed && has_port && address.find(':') != colon)
      return bad("an IPv6 address must be written in brackets, as [::1]:4647");
    if (!has_port) {
      address += ":4647";
      continue;
    }
    uint32_t port = 0;
    if (colon == 0 || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port == 0 ||
        port > 65535)
      return bad("the port must be 1-65535");
  }
  return absl::OkStatus();
}

absl::Status ApplyConfigFiles(const std::vector<std::string>& paths, AgentConfig& config) {
  absl::StatusOr<std::vector<std::string>> files = ExpandConfigPaths(paths);
  if (!files.ok()) {
    return files.status();
  }
  Json merged = Json::object();
  for (const std::string& file : *files) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("Error loading configuration from ", file, ": cannot read the file"));
    }
    absl::StatusOr<Json> one = ReadConfigFile(file, text.str());
    if (!one.ok()) {
      return one.status();
    }
    MergeConfig(merged, *one);
  }
  if (absl::Status s = ApplyConfig(merged, config); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("Error loading configuration: ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace drover::agent
