#include "client/taskrunner/local_state_json.h"

namespace drover::taskrunner {

using Json = nlohmann::json;

Json ToJson(const LocalState& s) {
  Json hooks = Json::object();
  for (const auto& [name, h] : s.hooks)
    hooks[name] = {{"PrestartDone", h.prestart_done}, {"Data", h.data}, {"Env", h.env}};
  Json handle = nullptr;
  if (s.handle) {
    const drivers::TaskHandle& t = *s.handle;
    handle = {{"Version", t.version},      {"Driver", t.driver},
              {"TaskID", t.task_id},       {"Pid", t.pid},
              {"StartedAt", t.started_at}, {"ProcStartTicks", t.proc_start_ticks}};
    if (!t.driver_ref.empty())
      handle["DriverRef"] = t.driver_ref;
  }
  Json restarts = nullptr;
  if (s.restarts)
    restarts = {{"WindowStart", s.restarts->start_unix_nanos}, {"Count", s.restarts->count}};
  return {{"Hooks", hooks},
          {"TaskHandle", handle},
          {"RunComplete", s.run_complete},
          {"Restarts", restarts}};
}

absl::StatusOr<LocalState> LocalStateFromJson(const Json& j) {
  if (!j.is_object())
    return absl::InvalidArgumentError("local state is not an object");
  LocalState s;
  try {
    if (auto it = j.find("Hooks"); it != j.end() && it->is_object()) {
      for (const auto& [name, h] : it->items()) {
        HookState hs;
        hs.prestart_done = h.value("PrestartDone", false);
        if (auto d = h.find("Data"); d != h.end() && !d->is_null())
          hs.data = d->get<std::map<std::string, std::string>>();
        if (auto e = h.find("Env"); e != h.end() && !e->is_null())
          hs.env = e->get<std::map<std::string, std::string>>();
        s.hooks[name] = std::move(hs);
      }
    }
    if (auto it = j.find("TaskHandle"); it != j.end() && it->is_object()) {
      drivers::TaskHandle t;
      t.version = it->value("Version", 1);
      t.driver = it->value("Driver", std::string());
      t.task_id = it->value("TaskID", std::string());
      t.pid = it->value("Pid", 0);
      t.started_at = it->value("StartedAt", int64_t{0});
      t.proc_start_ticks = it->value("ProcStartTicks", uint64_t{0});
      t.driver_ref = it->value("DriverRef", std::string());
      s.handle = t;
    }
    s.run_complete = j.value("RunComplete", false);
    if (auto it = j.find("Restarts"); it != j.end() && it->is_object()) {
      s.restarts = RestartWindow{.start_unix_nanos = it->value("WindowStart", int64_t{0}),
                                 .count = it->value("Count", 0)};
    }
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(std::string("bad local state: ") + e.what());
  }
  return s;
}

}  // namespace drover::taskrunner
