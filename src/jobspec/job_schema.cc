// The job file schema: which blocks and attributes each level of a job holds and the
// API field each maps to (Nomad's jobspec2 meaning), plus the few blocks whose HCL
// shape differs from their JSON shape (constraint shorthands, ports, spread targets).
#include "jobspec/job_schema.h"

#include "absl/strings/str_cat.h"

namespace drover::jobspec {

namespace {

using F = FieldType;

// constraint { attribute, operator, value } and its shorthands
// (`distinct_hosts = true`, `regexp = "..."`, `version = ">= 1.2"`, ...).
absl::Status FixConstraint(Decoder&, const Block*, Json& out) {
  static constexpr const char* kShorthands[] = {
      "distinct_hosts", "distinct_property", "regexp",           "version",
      "semver",         "set_contains",      "set_contains_any", "set_contains_all",
  };
  for (const char* key : kShorthands) {
    if (!out.contains(key)) {
      continue;
    }
    Json value = out[key];
    out.erase(key);
    out["Operand"] = key;  // the shorthand wins over `operator`, as in Nomad
    if (absl::string_view(key) == "distinct_hosts") {
      if (value == false) {
        out.erase("Operand");  // distinct_hosts = false is no constraint at all
      }
    } else if (absl::string_view(key) == "distinct_property") {
      out["LTarget"] = value;
    } else {
      out["RTarget"] = value;
    }
  }
  if (!out.contains("Operand")) {
    out["Operand"] = "=";
  }
  return absl::OkStatus();
}

absl::Status FixAffinity(Decoder& decoder, const Block* block, Json& out) {
  return FixConstraint(decoder, block, out);
}

// port "http" { static = 8080 } is reserved; without `static` it is dynamic.
absl::Status FixNetwork(Decoder&, const Block*, Json& out) {
  if (!out.contains("Ports")) {
    return absl::OkStatus();
  }
  Json ports = std::move(out["Ports"]);
  out.erase("Ports");
  for (Json& port : ports) {
    const bool reserved = port.value("Value", 0) > 0;  // static = 0 is dynamic
    out[reserved ? "ReservedPorts" : "DynamicPorts"].push_back(std::move(port));
  }
  return absl::OkStatus();
}

// A task's identity block without a `name` is its default identity (Identity); named
// ones are Identities, as Nomad's jobspec2 splits them.
absl::Status FixTask(Decoder&, const Block*, Json& out) {
  if (!out.contains("Identities")) {
    return absl::OkStatus();
  }
  Json named = Json::array();
  for (Json& identity : out["Identities"]) {
    if (identity.value("Name", "").empty() && !out.contains("Identity")) {
      out["Identity"] = std::move(identity);
    } else {
      named.push_back(std::move(identity));
    }
  }
  if (named.empty()) {
    out.erase("Identities");
  } else {
    out["Identities"] = std::move(named);
  }
  return absl::OkStatus();
}

absl::Status FixPeriodic(Decoder&, const Block*, Json& out) {
  if (out.contains("Spec") || out.contains("Specs")) {
    out["SpecType"] = "cron";
  }
  return absl::OkStatus();
}

// job "example" { } — the label is the ID, and the name unless `name` is set.
absl::Status FixJob(Decoder&, const Block* block, Json& out) {
  if (block != nullptr) {
    out["ID"] = block->labels[0];
    if (!out.contains("Name")) {
      out["Name"] = block->labels[0];
    }
  }
  return absl::OkStatus();
}

const BlockSpec kConstraint{"constraint",
                            {
                                {"attribute", "LTarget", F::kString},
                                {"operator", "Operand", F::kString},
                                {"value", "RTarget", F::kString},
                                {"distinct_hosts", "distinct_hosts", F::kBool},
                                {"distinct_property", "distinct_property", F::kString},
                                {"regexp", "regexp", F::kString},
                                {"version", "version", F::kString},
                                {"semver", "semver", F::kString},
                                {"set_contains", "set_contains", F::kString},
                                {"set_contains_any", "set_contains_any", F::kString},
                                {"set_contains_all", "set_contains_all", F::kString},
                            },
                            FixConstraint};

const BlockSpec kAffinity{"affinity",
                          {
                              {"attribute", "LTarget", F::kString},
                              {"operator", "Operand", F::kString},
                              {"value", "RTarget", F::kString},
                              {"weight", "Weight", F::kInt},
                              {"regexp", "regexp", F::kString},
                              {"version", "version", F::kString},
                              {"semver", "semver", F::kString},
                              {"set_contains", "set_contains", F::kString},
                              {"set_contains_any", "set_contains_any", F::kString},
                              {"set_contains_all", "set_contains_all", F::kString},
                          },
                          FixAffinity};

const BlockSpec kSpreadTarget{"target", {{"percent", "Percent", F::kInt}}};

const BlockSpec kSpread{"spread",
                        {
                            {"attribute", "Attribute", F::kString},
                            {"weight", "Weight", F::kInt},
                            {"target", "SpreadTarget", F::kLabeledList, &kSpreadTarget, "Value"},
                        }};

const BlockSpec kPort{"port",
                      {
                          {"static", "Value", F::kInt},
                          {"to", "To", F::kInt},
                          {"host_network", "HostNetwork", F::kString},
                      }};

const BlockSpec kDns{"dns",
                     {
                         {"servers", "Servers", F::kStringList},
                         {"searches", "Searches", F::kStringList},
                         {"options", "Options", F::kStringList},
                     }};

const BlockSpec kNetwork{"network",
                         {
                             {"mode", "Mode", F::kString},
                             {"mbits", "MBits", F::kInt},
                             {"hostname", "Hostname", F::kString},
                             {"port", "Ports", F::kLabeledList, &kPort, "Label"},
                             {"dns", "DNS", F::kBlock, &kDns},
                         },
                         FixNetwork};

const BlockSpec kDevice{"device",
                        {
                            {"count", "Count", F::kInt},
                            {"constraint", "Constraints", F::kBlockList, &kConstraint},
                            {"affinity", "Affinities", F::kBlockList, &kAffinity},
                        }};

const BlockSpec kResources{"resources",
                           {
                               {"cpu", "CPU", F::kInt},
                               {"cores", "Cores", F::kInt},
                               {"memory", "MemoryMB", F::kSizeMB},
                               {"memory_max", "MemoryMaxMB", F::kSizeMB},
                               {"network", "Networks", F::kBlockList, &kNetwork},
                               {"device", "Devices", F::kLabeledList, &kDevice, "Name"},
                           }};

const BlockSpec kRestart{"restart",
                         {
                             {"attempts", "Attempts", F::kInt},
                             {"interval", "Interval", F::kDuration},
                             {"delay", "Delay", F::kDuration},
                             {"mode", "Mode", F::kString},
                             {"render_templates", "RenderTemplates", F::kBool},
                         }};

const BlockSpec kReschedule{"reschedule",
                            {
                                {"attempts", "Attempts", F::kInt},
                                {"interval", "Interval", F::kDuration},
                                {"delay", "Delay", F::kDuration},
                                {"delay_function", "DelayFunction", F::kString},
                                {"max_delay", "MaxDelay", F::kDuration},
                                {"unlimited", "Unlimited", F::kBool},
                            }};

const BlockSpec kUpdate{"update",
                        {
                            {"max_parallel", "MaxParallel", F::kInt},
                            {"health_check", "HealthCheck", F::kString},
                            {"min_healthy_time", "MinHealthyTime", F::kDuration},
                            {"healthy_deadline", "HealthyDeadline", F::kDuration},
                            {"progress_deadline", "ProgressDeadline", F::kDuration},
                            {"auto_revert", "AutoRevert", F::kBool},
                            {"auto_promote", "AutoPromote", F::kBool},
                            {"canary", "Canary", F::kInt},
                            {"stagger", "Stagger", F::kDuration},
                        }};

// Decoded so that registration refuses it by name (codec/unsupported_fields.cc).
const BlockSpec kDisconnect{"disconnect",
                            {
                                {"lost_after", "LostAfter", F::kDuration},
                                {"replace", "Replace", F::kBool},
                                {"reconcile", "Reconcile", F::kString},
                                {"stop_on_client_after", "StopOnClientAfter", F::kDuration},
                            }};

const BlockSpec kMigrate{"migrate",
                         {
                             {"max_parallel", "MaxParallel", F::kInt},
                             {"health_check", "HealthCheck", F::kString},
                             {"min_healthy_time", "MinHealthyTime", F::kDuration},
                             {"healthy_deadline", "HealthyDeadline", F::kDuration},
                         }};

const BlockSpec kEphemeralDisk{"ephemeral_disk",
                               {
                                   {"sticky", "Sticky", F::kBool},
                                   {"migrate", "Migrate", F::kBool},
                                   {"size", "SizeMB", F::kSizeMB},
                               }};

const BlockSpec kPeriodic{"periodic",
                          {
                              {"cron", "Spec", F::kString},
                              {"crons", "Specs", F::kStringList},
                              {"prohibit_overlap", "ProhibitOverlap", F::kBool},
                              {"time_zone", "TimeZone", F::kString},
                              {"enabled", "Enabled", F::kBool},
                          },
                          FixPeriodic};

const BlockSpec kParameterized{"parameterized",
                               {
                                   {"payload", "Payload", F::kString},
                                   {"meta_required", "MetaRequired", F::kStringList},
                                   {"meta_optional", "MetaOptional", F::kStringList},
                               }};

const BlockSpec kLifecycle{"lifecycle",
                           {
                               {"hook", "Hook", F::kString},
                               {"sidecar", "Sidecar", F::kBool},
                           }};

const BlockSpec kLogs{"logs",
                      {
                          {"max_files", "MaxFiles", F::kInt},
                          {"max_file_size", "MaxFileSizeMB", F::kSizeMB},
                          {"disabled", "Disabled", F::kBool},
                      }};

const BlockSpec kArtifact{"artifact",
                          {
                              {"source", "GetterSource", F::kString},
                              {"destination", "RelativeDest", F::kString},
                              {"mode", "GetterMode", F::kString},
                              {"options", "GetterOptions", F::kStringMap},
                              {"headers", "GetterHeaders", F::kStringMap},
                          }};

const BlockSpec kTemplateWait{"wait",
                              {
                                  {"min", "Min", F::kDuration},
                                  {"max", "Max", F::kDuration},
                              }};

const BlockSpec kTemplate{"template",
                          {
                              {"data", "EmbeddedTmpl", F::kString},
                              {"source", "SourcePath", F::kString},
                              {"destination", "DestPath", F::kString},
                              {"change_mode", "ChangeMode", F::kString},
                              {"change_signal", "ChangeSignal", F::kString},
                              {"splay", "Splay", F::kDuration},
                              {"perms", "Perms", F::kString},
                              {"uid", "Uid", F::kInt},
                              {"gid", "Gid", F::kInt},
                              {"left_delimiter", "LeftDelim", F::kString},
                              {"right_delimiter", "RightDelim", F::kString},
                              {"env", "Envvars", F::kBool},
                              {"error_on_missing_key", "ErrMissingKey", F::kBool},
                              {"wait", "Wait", F::kBlock, &kTemplateWait},
                          }};

const BlockSpec kDispatchPayload{"dispatch_payload", {{"file", "File", F::kString}}};

// Decoded (Nomad 1.7+ job files have them) so that registration refuses them by name.
const BlockSpec kVault{"vault",
                       {
                           {"policies", "Policies", F::kStringList},
                           {"role", "Role", F::kString},
                           {"namespace", "Namespace", F::kString},
                           {"cluster", "Cluster", F::kString},
                           {"env", "Env", F::kBool},
                           {"disable_file", "DisableFile", F::kBool},
                           {"change_mode", "ChangeMode", F::kString},
                           {"change_signal", "ChangeSignal", F::kString},
                           {"allow_token_expiration", "AllowTokenExpiration", F::kBool},
                       }};

const BlockSpec kIdentity{"identity",
                          {
                              {"name", "Name", F::kString},
                              {"aud", "Audience", F::kStringList},
                              {"env", "Env", F::kBool},
                              {"file", "File", F::kBool},
                              {"filepath", "Filepath", F::kString},
                              {"ttl", "TTL", F::kDuration},
                              {"change_mode", "ChangeMode", F::kString},
                              {"change_signal", "ChangeSignal", F::kString},
                          }};

const BlockSpec kConsul{"consul",
                        {
                            {"namespace", "Namespace", F::kString},
                            {"cluster", "Cluster", F::kString},
                            {"partition", "Partition", F::kString},
                        }};

const BlockSpec kVolume{"volume",
                        {
                            {"type", "Type", F::kString},
                            {"source", "Source", F::kString},
                            {"read_only", "ReadOnly", F::kBool},
                            {"access_mode", "AccessMode", F::kString},
                            {"attachment_mode", "AttachmentMode", F::kString},
                            {"per_alloc", "PerAlloc", F::kBool},
                        }};

const BlockSpec kVolumeMount{"volume_mount",
                             {
                                 {"volume", "Volume", F::kString},
                                 {"destination", "Destination", F::kString},
                                 {"read_only", "ReadOnly", F::kBool},
                                 {"propagation_mode", "PropagationMode", F::kString},
                             }};

const BlockSpec kCheckRestart{"check_restart",
                              {
                                  {"limit", "Limit", F::kInt},
                                  {"grace", "Grace", F::kDuration},
                                  {"ignore_warnings", "IgnoreWarnings", F::kBool},
                              }};

const BlockSpec kCheck{"check",
                       {
                           {"name", "Name", F::kString},
                           {"type", "Type", F::kString},
                           {"port", "PortLabel", F::kString},
                           {"path", "Path", F::kString},
                           {"protocol", "Protocol", F::kString},
                           {"method", "Method", F::kString},
                           {"command", "Command", F::kString},
                           {"args", "Args", F::kStringList},
                           {"interval", "Interval", F::kDuration},
                           {"timeout", "Timeout", F::kDuration},
                           {"initial_status", "InitialStatus", F::kString},
                           {"address_mode", "AddressMode", F::kString},
                           {"task", "TaskName", F::kString},
                           {"tls_skip_verify", "TLSSkipVerify", F::kBool},
                           {"header", "Header", F::kAny},
                           {"check_restart", "CheckRestart", F::kBlock, &kCheckRestart},
                       }};

// Parsed so job files with services read (and show in -output and /v1/jobs/parse);
// registration refuses them until Drover has service discovery.
const BlockSpec kService{"service",
                         {
                             {"name", "Name", F::kString},
                             {"port", "PortLabel", F::kString},
                             {"tags", "Tags", F::kStringList},
                             {"canary_tags", "CanaryTags", F::kStringList},
                             {"provider", "Provider", F::kString},
                             {"address_mode", "AddressMode", F::kString},
                             {"address", "Address", F::kString},
                             {"task", "TaskName", F::kString},
                             {"meta", "Meta", F::kStringMap},
                             {"check", "Checks", F::kBlockList, &kCheck},
                             {"check_restart", "CheckRestart", F::kBlock, &kCheckRestart},
                         }};

const BlockSpec kTask{"task",
                      {
                          {"driver", "Driver", F::kString},
                          {"user", "User", F::kString},
                          {"config", "Config", F::kAny},
                          {"env", "Env", F::kStringMap},
                          {"meta", "Meta", F::kStringMap},
                          {"leader", "Leader", F::kBool},
                          {"kill_timeout", "KillTimeout", F::kDuration},
                          {"kill_signal", "KillSignal", F::kString},
                          {"shutdown_delay", "ShutdownDelay", F::kDuration},
                          {"kind", "Kind", F::kString},
                          {"resources", "Resources", F::kBlock, &kResources},
                          {"restart", "RestartPolicy", F::kBlock, &kRestart},
                          {"lifecycle", "Lifecycle", F::kBlock, &kLifecycle},
                          {"logs", "LogConfig", F::kBlock, &kLogs},
                          {"constraint", "Constraints", F::kBlockList, &kConstraint},
                          {"affinity", "Affinities", F::kBlockList, &kAffinity},
                          {"artifact", "Artifacts", F::kBlockList, &kArtifact},
                          {"template", "Templates", F::kBlockList, &kTemplate},
                          {"dispatch_payload", "DispatchPayload", F::kBlock, &kDispatchPayload},
                          {"volume_mount", "VolumeMounts", F::kBlockList, &kVolumeMount},
                          {"service", "Services", F::kBlockList, &kService},
                          {"vault", "Vault", F::kBlock, &kVault},
                          {"identity", "Identities", F::kBlockList, &kIdentity},
                          {"consul", "Consul", F::kBlock, &kConsul},
                      },
                      FixTask};

const BlockSpec kScaling{"scaling",
                         {{"min", "Min", F::kInt},
                          {"max", "Max", F::kInt},
                          {"enabled", "Enabled", F::kBool},
                          {"type", "Type", F::kString},
                          {"policy", "Policy", F::kAny}}};

const BlockSpec kGroup{
    "group",
    {
        {"count", "Count", F::kInt},
        {"shutdown_delay", "ShutdownDelay", F::kDuration},
        {"stop_after_client_disconnect", "StopAfterClientDisconnect", F::kDuration},
        {"max_client_disconnect", "MaxClientDisconnect", F::kDuration},
        {"disconnect", "Disconnect", F::kBlock, &kDisconnect},
        {"meta", "Meta", F::kStringMap},
        {"constraint", "Constraints", F::kBlockList, &kConstraint},
        {"affinity", "Affinities", F::kBlockList, &kAffinity},
        {"spread", "Spreads", F::kBlockList, &kSpread},
        {"restart", "RestartPolicy", F::kBlock, &kRestart},
        {"reschedule", "ReschedulePolicy", F::kBlock, &kReschedule},
        {"update", "Update", F::kBlock, &kUpdate},
        {"migrate", "Migrate", F::kBlock, &kMigrate},
        {"ephemeral_disk", "EphemeralDisk", F::kBlock, &kEphemeralDisk},
        {"network", "Networks", F::kBlockList, &kNetwork},
        {"volume", "Volumes", F::kLabeledMap, &kVolume, "Name"},
        {"service", "Services", F::kBlockList, &kService},
        {"scaling", "Scaling", F::kBlock, &kScaling},
        {"consul", "Consul", F::kBlock, &kConsul},
        {"task", "Tasks", F::kLabeledList, &kTask, "Name"},
    }};

const BlockSpec kJob{"job",
                     {
                         {"name", "Name", F::kString},
                         {"region", "Region", F::kString},
                         {"namespace", "Namespace", F::kString},
                         {"type", "Type", F::kString},
                         {"priority", "Priority", F::kInt},
                         {"all_at_once", "AllAtOnce", F::kBool},
                         {"datacenters", "Datacenters", F::kStringList},
                         {"node_pool", "NodePool", F::kString},
                         {"meta", "Meta", F::kStringMap},
                         {"constraint", "Constraints", F::kBlockList, &kConstraint},
                         {"affinity", "Affinities", F::kBlockList, &kAffinity},
                         {"spread", "Spreads", F::kBlockList, &kSpread},
                         {"update", "Update", F::kBlock, &kUpdate},
                         {"migrate", "Migrate", F::kBlock, &kMigrate},
                         {"reschedule", "Reschedule", F::kBlock, &kReschedule},
                         {"periodic", "Periodic", F::kBlock, &kPeriodic},
                         {"parameterized", "ParameterizedJob", F::kBlock, &kParameterized},
                         {"group", "TaskGroups", F::kLabeledList, &kGroup, "Name"},
                     },
                     FixJob};

}  // namespace

const BlockSpec& JobSpec() {
  return kJob;
}

}  // namespace drover::jobspec
