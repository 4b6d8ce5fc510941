#include "client/taskrunner/task_env.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

extern char** environ;

namespace drover::taskrunner {
namespace {

// Replaces characters not allowed in environment variable names, keeping case.
std::string EnvKey(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  }
  return s;
}

std::string UpperEnvKey(std::string s) {
  s = EnvKey(std::move(s));
  for (char& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void AddPortVars(std::map<std::string, std::string>& env, const std::string& label,
                 const std::string& ip, int value, int to) {
  const std::string key = EnvKey(label);
  const int port = to > 0 ? to : value;
  env["NOMAD_IP_" + key] = ip;
  env["NOMAD_PORT_" + key] = std::to_string(port);
  env["NOMAD_ADDR_" + key] = ip + ":" + std::to_string(port);
  env["NOMAD_HOST_IP_" + key] = ip;
  env["NOMAD_HOST_PORT_" + key] = std::to_string(value);
  env["NOMAD_HOST_ADDR_" + key] = ip + ":" + std::to_string(value);
  env["NOMAD_ALLOC_PORT_" + key] = std::to_string(port);
}

}  // namespace

std::map<std::string, std::string> HostEnvironment() {
  static const std::set<std::string> kDenied = {
      "CONSUL_TOKEN",      "CONSUL_HTTP_TOKEN",
      "VAULT_TOKEN",       "NOMAD_TOKEN",
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
      "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"};
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos)
      continue;
    std::string k = kv.substr(0, eq);
    if (kDenied.contains(k))
      continue;
    out[k] = kv.substr(eq + 1);
  }
  return out;
}

TaskEnv TaskEnv::Build(const TaskEnvInput& in) {
  TaskEnv te;
  auto& env = te.env_;
  env = in.host_env;
  const model::Allocation& a = *in.alloc;
  const model::Task& t = *in.task;
  if (in.node != nullptr) {
    for (const auto& [k, v] : in.node->attributes)
      te.node_vars_["attr." + k] = v;
    for (const auto& [k, v] : in.node->meta)
      te.node_vars_["meta." + k] = v;
    te.node_vars_["node.unique.id"] = in.node->id;
    te.node_vars_["node.unique.name"] = in.node->name;
    te.node_vars_["node.datacenter"] = in.node->datacenter;
    te.node_vars_["node.class"] = in.node->node_class;
    te.node_vars_["node.pool"] = in.node->node_pool;
    env["NOMAD_DC"] = in.node->datacenter;
  }
  env["NOMAD_ALLOC_DIR"] = in.alloc_dir;
  env["NOMAD_TASK_DIR"] = in.task_dir;
  env["NOMAD_SECRETS_DIR"] = in.secrets_dir;
  env["NOMAD_ALLOC_ID"] = a.id;
  env["NOMAD_SHORT_ALLOC_ID"] = a.id.substr(0, 8);
  env["NOMAD_ALLOC_NAME"] = a.name;
  env["NOMAD_ALLOC_INDEX"] = std::to_string(std::max(a.Index(), 0));
  env["NOMAD_GROUP_NAME"] = a.task_group;
  env["NOMAD_TASK_NAME"] = t.name;
  env["NOMAD_REGION"] = in.region;
  env["NOMAD_NAMESPACE"] = a.namespace_;
  if (a.job) {
    env["NOMAD_JOB_ID"] = a.job->id;
    env["NOMAD_JOB_NAME"] = a.job->name;
    if (!a.job->parent_id.empty())
      env["NOMAD_JOB_PARENT_ID"] = a.job->parent_id;
  }
  auto res = a.allocated_resources.tasks.find(t.name);
  if (res != a.allocated_resources.tasks.end()) {
    env["NOMAD_CPU_LIMIT"] = std::to_string(res->second.cpu_shares);
    env["NOMAD_MEMORY_LIMIT"] = std::to_string(res->second.memory_mb);
    if (res->second.memory_max_mb > 0) {
      env["NOMAD_MEMORY_MAX_LIMIT"] = std::to_string(res->second.memory_max_mb);
    }
    for (const auto& net : res->second.networks) {
      for (const auto& p : net.reserved_ports)
        AddPortVars(env, p.label, net.ip, p.value, p.to);
      for (const auto& p : net.dynamic_ports)
        AddPortVars(env, p.label, net.ip, p.value, p.to);
    }
  } else {
    env["NOMAD_CPU_LIMIT"] = std::to_string(t.resources.cpu);
    env["NOMAD_MEMORY_LIMIT"] = std::to_string(t.resources.memory_mb);
  }
  for (const auto& p : a.allocated_resources.shared.ports) {
    AddPortVars(env, p.label, p.host_ip, p.value, p.to);
  }
  // Meta: job, then group, then task (later wins), as NOMAD_META_<key> and raw key.
  std::map<std::string, std::string> meta;
  if (a.job) {
    meta = a.job->meta;
    if (const model::TaskGroup* g = a.job->FindGroup(a.task_group)) {
      for (const auto& [k, v] : g->meta)
        meta[k] = v;
    }
  }
  for (const auto& [k, v] : t.meta)
    meta[k] = v;
  for (const auto& [k, v] : meta) {
    env["NOMAD_META_" + UpperEnvKey(k)] = v;
    env["NOMAD_META_" + k] = v;
  }
  // The task's env block, interpolated against everything above.
  std::map<std::string, std::string> task_env;
  for (const auto& [k, v] : t.env)
    task_env[te.Interpolate(k)] = te.Interpolate(v);
  for (auto& [k, v] : task_env)
    env[k] = std::move(v);
  // Hook-provided variables last: they describe what hooks set up (e.g. devices).
  for (const auto& [k, v] : in.hook_env)
    env[k] = v;
  return te;
}

std::optional<std::string> TaskEnv::Lookup(const std::string& raw) const {
  std::string key = raw;
  key.erase(0, key.find_first_not_of(' '));
  key.erase(key.find_last_not_of(' ') + 1);
  // env["NAME"] / env.NAME
  if (key.rfind("env[\"", 0) == 0 && key.size() > 7 && key.substr(key.size() - 2) == "\"]") {
    key = key.substr(5, key.size() - 7);
  } else if (key.rfind("env.", 0) == 0) {
    key = key.substr(4);
  }
  if (auto it = env_.find(key); it != env_.end())
    return it->second;
  if (auto it = node_vars_.find(key); it != node_vars_.end())
    return it->second;
  return std::nullopt;
}

std::string TaskEnv::Interpolate(const std::string& s) const {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      const size_t close = s.find('}', i + 2);
      if (close == std::string::npos) {
        out.append(s, i, std::string::npos);
        break;
      }
      const std::string key = s.substr(i + 2, close - i - 2);
      if (auto v = Lookup(key)) {
        out += *v;
      } else {
        out.append(s, i, close - i + 1);
      }
      i = close + 1;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

model::Value TaskEnv::InterpolateValue(const model::Value& v) const {
  if (const auto* s = v.as_string())
    return Interpolate(*s);
  if (const auto* arr = v.as_array()) {
    model::Value::Array out;
    for (const auto& e : *arr)
      out.push_back(InterpolateValue(e));
    return out;
  }
  if (const auto* obj = v.as_object()) {
    model::Value::Object out;
    for (const auto& [k, e] : *obj)
      out[Interpolate(k)] = InterpolateValue(e);
    return out;
  }
  return v;
}

}  // namespace drover::taskrunner
