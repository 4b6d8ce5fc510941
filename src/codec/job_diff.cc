#include "codec/job_diff.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "codec/internal/json_util.h"
#include "codec/internal/model_json.h"

namespace drover::codec {
namespace {

using model::FieldDiff;
using model::ObjectDiff;
using Flat = std::map<std::string, std::string>;

const Json& Null() {
  static const Json null;
  return null;
}

bool Absent(const Json& j) {
  return j.is_null() || ((j.is_array() || j.is_object()) && j.empty());
}

bool IsScalar(const Json& v) {
  return v.is_string() || v.is_boolean() || v.is_number();
}

// As Nomad's flatmap prints a value.
std::string Scalar(const Json& v) {
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_boolean())
    return v.get<bool>() ? "true" : "false";
  return v.dump();
}

const Json& Member(const Json& object, const std::string& key) {
  if (!object.is_object())
    return Null();
  auto it = object.find(key);
  return it == object.end() ? Null() : *it;
}

// Objects whose members are string values, flattened as "Name[key]" fields.
bool IsMapField(const std::string& key) {
  return key == "Meta" || key == "Env" || key == "Labels";
}

// What one element of a list of blocks is called in a diff (Nomad's names).
std::string ElementName(const std::string& key) {
  static const std::map<std::string, std::string> kNames = {{"Constraints", "Constraint"},
                                                            {"Affinities", "Affinity"},
                                                            {"Spreads", "Spread"},
                                                            {"Networks", "Network"},
                                                            {"ReservedPorts", "Static Port"},
                                                            {"DynamicPorts", "Dynamic Port"},
                                                            {"Devices", "Device"},
                                                            {"Artifacts", "Artifact"},
                                                            {"Templates", "Template"},
                                                            {"Services", "Service"},
                                                            {"VolumeMounts", "VolumeMount"}};
  auto it = kNames.find(key);
  return it == kNames.end() ? key : it->second;
}

// How many bytes of names and values one task's config may flatten to in a diff. Each
// name repeats every key above it, so a config of long keys over large lists would
// flatten to far more than its own size; past this, the config is diffed as a whole.
constexpr size_t kMaxConfigDiffBytes = 1 << 20;

// Everything under `prefix`, as Nomad's flatmap flattens a task's config; false when
// that would take more than `budget` bytes (what was built is then partial).
bool FlattenDeep(const std::string& prefix, const Json& v, Flat& out, size_t& budget) {
  if (prefix.size() > budget)
    return false;
  if (IsScalar(v)) {
    std::string value = Scalar(v);
    if (prefix.size() + value.size() > budget)
      return false;
    budget -= prefix.size() + value.size();
    out[prefix] = std::move(value);
  } else if (v.is_object()) {
    for (const auto& [k, x] : v.items()) {
      if (!FlattenDeep(prefix.empty() ? k : prefix + "[" + k + "]", x, out, budget))
        return false;
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!FlattenDeep(prefix + "[" + std::to_string(i) + "]", v[i], out, budget))
        return false;
    }
  }
  return true;
}

FieldDiff Field(const char* type, const std::string& name, std::string old_value,
                std::string new_value) {
  return FieldDiff{.type = type,
                   .name = name,
                   .old_value = std::move(old_value),
                   .new_value = std::move(new_value),
                   .annotations = {}};
}

std::vector<FieldDiff> FieldDiffs(const Flat& old_flat, const Flat& new_flat, bool contextual) {
  std::set<std::string> names;
  for (const auto& [k, v] : old_flat)
    names.insert(k);
  for (const auto& [k, v] : new_flat)
    names.insert(k);
  std::vector<FieldDiff> out;
  for (const std::string& name : names) {
    auto o = old_flat.find(name);
    auto n = new_flat.find(name);
    if (o == old_flat.end()) {
      out.push_back(Field(model::kDiffAdded, name, "", n->second));
    } else if (n == new_flat.end()) {
      out.push_back(Field(model::kDiffDeleted, name, o->second, ""));
    } else if (o->second != n->second) {
      out.push_back(Field(model::kDiffEdited, name, o->second, n->second));
    } else if (contextual) {
      out.push_back(Field(model::kDiffNone, name, o->second, n->second));
    }
  }
  return out;
}

template <typename T>
bool AnyChanged(const std::vector<T>& diffs) {
  return std::any_of(diffs.begin(), diffs.end(),
                     [](const T& d) { return d.type != model::kDiffNone; });
}

std::string KindOf(bool old_absent, bool new_absent, bool changed) {
  if (old_absent && !new_absent)
    return model::kDiffAdded;
  if (new_absent && !old_absent)
    return model::kDiffDeleted;
  return changed ? model::kDiffEdited : model::kDiffNone;
}

// Edited, Added, Deleted, None: how Nomad orders objects of the same name.
int TypeOrder(const std::string& type) {
  if (type == model::kDiffEdited)
    return 0;
  if (type == model::kDiffAdded)
    return 1;
  if (type == model::kDiffDeleted)
    return 2;
  return 3;
}

std::string FieldsKey(const ObjectDiff& d) {
  std::string key;
  for (const FieldDiff& f : d.fields)
    key += f.name + '\0' + f.old_value + '\0' + f.new_value + '\0';
  return key;
}

void SortObjects(std::vector<ObjectDiff>& objects) {
  std::stable_sort(objects.begin(), objects.end(), [](const ObjectDiff& a, const ObjectDiff& b) {
    if (a.name != b.name)
      return a.name < b.name;
    if (a.type != b.type)
      return TypeOrder(a.type) < TypeOrder(b.type);
    return FieldsKey(a) < FieldsKey(b);
  });
}

struct Parts {
  std::vector<FieldDiff> fields;
  std::vector<ObjectDiff> objects;
  bool Changed() const { return AnyChanged(fields) || AnyChanged(objects); }
};

// `contextual` lists unchanged fields inside changed objects; a level's own unchanged
// fields only with `fields_contextual`.
Parts DiffParts(const Json& o, const Json& n, const std::set<std::string>& skip, bool contextual,
                bool fields_contextual);

std::optional<ObjectDiff> DiffObject(const Json& o, const Json& n, const std::string& name,
                                     bool contextual) {
  if (Absent(o) && Absent(n))
    return std::nullopt;
  Parts parts = DiffParts(o, n, {}, contextual, contextual);
  ObjectDiff d{.type = KindOf(Absent(o), Absent(n), parts.Changed()),
               .name = name,
               .fields = std::move(parts.fields),
               .objects = std::move(parts.objects)};
  if (d.type == model::kDiffNone)
    return std::nullopt;
  return d;
}

// A list of strings ("Datacenters"): one field per element, by that name.
std::optional<ObjectDiff> StringSetDiff(const Json& o, const Json& n, const std::string& name,
                                        bool contextual) {
  std::set<std::string> olds;
  std::set<std::string> news;
  for (const Json* side : {&o, &n}) {
    if (!side->is_array())
      continue;
    for (const Json& v : *side) {
      if (IsScalar(v))
        (side == &o ? olds : news).insert(Scalar(v));
    }
  }
  if (olds.empty() && news.empty())
    return std::nullopt;
  ObjectDiff d{.type = "", .name = name, .fields = {}, .objects = {}};
  std::set<std::string> all = olds;
  all.insert(news.begin(), news.end());
  for (const std::string& v : all) {
    if (!news.contains(v)) {
      d.fields.push_back(Field(model::kDiffDeleted, name, v, ""));
    } else if (!olds.contains(v)) {
      d.fields.push_back(Field(model::kDiffAdded, name, "", v));
    } else if (contextual) {
      d.fields.push_back(Field(model::kDiffNone, name, v, v));
    }
  }
  d.type = KindOf(olds.empty(), news.empty(), AnyChanged(d.fields));
  if (d.type == model::kDiffNone)
    return std::nullopt;
  return d;
}

// A list of blocks: elements are matched by value, so a changed one is a deleted one
// and an added one (as in Nomad).
void ObjectSetDiff(const Json& o, const Json& n, const std::string& name, bool contextual,
                   std::vector<ObjectDiff>& out) {
  std::multimap<std::string, const Json*> unmatched_new;
  if (n.is_array()) {
    for (const Json& v : n)
      unmatched_new.emplace(v.dump(), &v);
  }
  if (o.is_array()) {
    for (const Json& v : o) {
      auto same = unmatched_new.find(v.dump());
      std::optional<ObjectDiff> d;
      if (same != unmatched_new.end()) {
        unmatched_new.erase(same);
        d = DiffObject(v, v, name, contextual);
      } else {
        d = DiffObject(v, Null(), name, contextual);
      }
      if (d)
        out.push_back(*std::move(d));
    }
  }
  for (const auto& [key, v] : unmatched_new) {
    if (std::optional<ObjectDiff> d = DiffObject(Null(), *v, name, contextual))
      out.push_back(*std::move(d));
  }
}

Parts DiffParts(const Json& o, const Json& n, const std::set<std::string>& skip, bool contextual,
                bool fields_contextual) {
  std::set<std::string> keys;
  for (const Json* side : {&o, &n}) {
    if (side->is_object()) {
      for (const auto& [k, v] : side->items())
        keys.insert(k);
    }
  }
  Flat old_flat;
  Flat new_flat;
  Parts parts;
  for (const std::string& key : keys) {
    if (skip.contains(key))
      continue;
    const Json& ov = Member(o, key);
    const Json& nv = Member(n, key);
    const Json& shape = ov.is_null() ? nv : ov;
    if (IsMapField(key)) {
      for (const auto& [side, flat] : {std::pair{&ov, &old_flat}, std::pair{&nv, &new_flat}}) {
        if (!side->is_object())
          continue;
        for (const auto& [k, v] : side->items()) {
          if (IsScalar(v))
            (*flat)[key + "[" + k + "]"] = Scalar(v);
        }
      }
    } else if (IsScalar(shape)) {
      if (IsScalar(ov))
        old_flat[key] = Scalar(ov);
      if (IsScalar(nv))
        new_flat[key] = Scalar(nv);
    } else if (shape.is_array()) {
      const Json& first = ov.empty() ? nv : ov;
      if (!first.empty() && IsScalar(first.front())) {
        if (auto d = StringSetDiff(ov, nv, key, contextual))
          parts.objects.push_back(*std::move(d));
      } else {
        ObjectSetDiff(ov, nv, ElementName(key), contextual, parts.objects);
      }
    } else if (shape.is_object()) {
      if (auto d = DiffObject(ov, nv, key, contextual))
        parts.objects.push_back(*std::move(d));
    }
  }
  parts.fields = FieldDiffs(old_flat, new_flat, fields_contextual);
  SortObjects(parts.objects);
  return parts;
}

// Members of a named list ("TaskGroups", "Tasks") by their Name.
std::map<std::string, const Json*> ByName(const Json& list) {
  std::map<std::string, const Json*> out;
  if (list.is_array()) {
    for (const Json& v : list) {
      const Json& name = Member(v, "Name");
      if (name.is_string())
        out.emplace(name.get<std::string>(), &v);
    }
  }
  return out;
}

// Both sides' names, sorted; a missing side is null.
std::vector<std::tuple<std::string, const Json*, const Json*>> MatchByName(const Json& o,
                                                                           const Json& n) {
  const auto olds = ByName(o);
  const auto news = ByName(n);
  std::set<std::string> names;
  for (const auto& [k, v] : olds)
    names.insert(k);
  for (const auto& [k, v] : news)
    names.insert(k);
  std::vector<std::tuple<std::string, const Json*, const Json*>> out;
  for (const std::string& name : names) {
    auto a = olds.find(name);
    auto b = news.find(name);
    out.emplace_back(name, a == olds.end() ? &Null() : a->second,
                     b == news.end() ? &Null() : b->second);
  }
  return out;
}

model::TaskDiff DiffTask(const std::string& name, const Json& o, const Json& n, bool contextual) {
  Parts parts = DiffParts(o, n, {"Name", "Config"}, contextual, false);
  // The driver's config: one object, flattened all the way down. One that did not
  // change is not shown, and not flattened.
  const Json& old_json = Member(o, "Config");
  const Json& new_json = Member(n, "Config");
  if (old_json != new_json) {
    Flat old_config;
    Flat new_config;
    size_t old_budget = kMaxConfigDiffBytes;
    size_t new_budget = kMaxConfigDiffBytes;
    ObjectDiff config{.type = "", .name = "Config", .fields = {}, .objects = {}};
    if (FlattenDeep("", old_json, old_config, old_budget) &&
        FlattenDeep("", new_json, new_config, new_budget)) {
      config.fields = FieldDiffs(old_config, new_config, contextual);
    } else {
      // Too large to show field by field: one field says that it changed.
      const std::string too_large =
          "(not shown: over " + std::to_string(kMaxConfigDiffBytes) + " bytes flattened)";
      config.fields.push_back(Field(KindOf(Absent(old_json), Absent(new_json), true).c_str(),
                                    "Config", Absent(old_json) ? "" : too_large,
                                    Absent(new_json) ? "" : too_large));
    }
    config.type = KindOf(Absent(old_json), Absent(new_json), AnyChanged(config.fields));
    if (config.type != model::kDiffNone)
      parts.objects.push_back(std::move(config));
    SortObjects(parts.objects);
  }
  return model::TaskDiff{.type = KindOf(o.is_null(), n.is_null(), parts.Changed()),
                         .name = name,
                         .fields = std::move(parts.fields),
                         .objects = std::move(parts.objects),
                         .annotations = {}};
}

model::TaskGroupDiff DiffGroup(const std::string& name, const Json& o, const Json& n,
                               bool contextual) {
  Parts parts = DiffParts(o, n, {"Name", "Tasks"}, contextual, false);
  model::TaskGroupDiff d{.type = "",
                         .name = name,
                         .fields = std::move(parts.fields),
                         .objects = std::move(parts.objects),
                         .tasks = {},
                         .updates = {}};
  for (const auto& [task, ot, nt] : MatchByName(Member(o, "Tasks"), Member(n, "Tasks")))
    d.tasks.push_back(DiffTask(task, *ot, *nt, contextual));
  d.type = KindOf(o.is_null(), n.is_null(),
                  AnyChanged(d.fields) || AnyChanged(d.objects) || AnyChanged(d.tasks));
  return d;
}

Json FieldsJson(const std::vector<FieldDiff>& fields) {
  if (fields.empty())
    return nullptr;
  Json out = Json::array();
  for (const FieldDiff& f : fields) {
    out.push_back({{"Annotations", f.annotations.empty() ? Json(nullptr) : Json(f.annotations)},
                   {"Name", f.name},
                   {"New", f.new_value},
                   {"Old", f.old_value},
                   {"Type", f.type}});
  }
  return out;
}

Json ObjectsJson(const std::vector<ObjectDiff>& objects) {
  if (objects.empty())
    return nullptr;
  Json out = Json::array();
  for (const ObjectDiff& o : objects) {
    out.push_back({{"Fields", FieldsJson(o.fields)},
                   {"Name", o.name},
                   {"Objects", ObjectsJson(o.objects)},
                   {"Type", o.type}});
  }
  return out;
}

}  // namespace

model::JobDiff DiffJobs(const model::Job* old_job, const model::Job* new_job, bool contextual) {
  Json o = old_job != nullptr ? ToJson(*old_job) : Json();
  Json n = new_job != nullptr ? ToJson(*new_job) : Json();
  // A scaling policy's ID, indexes and target are the servers', not the user's.
  for (Json* side : {&o, &n}) {
    if (!side->is_object())
      continue;
    for (Json& g : (*side)["TaskGroups"]) {
      if (Json& s = g["Scaling"]; s.is_object()) {
        for (const char* key : {"ID", "CreateIndex", "ModifyIndex", "Target", "Namespace"})
          s.erase(key);
      }
    }
  }
  // Server-managed, or diffed below.
  static const std::set<std::string> kSkip = {
      "ID",           "Status",      "StatusDescription", "Version",    "Stable",
      "CreateIndex",  "ModifyIndex", "JobModifyIndex",    "SubmitTime", "TaskGroups",
      "NomadTokenID", "Payload",     "VersionTag",        "Update"};
  Parts parts = DiffParts(o, n, kSkip, contextual, false);
  model::JobDiff d{.type = "",
                   .id = new_job != nullptr ? new_job->id : (old_job ? old_job->id : ""),
                   .fields = std::move(parts.fields),
                   .objects = std::move(parts.objects),
                   .task_groups = {}};
  for (const auto& [group, og, ng] : MatchByName(Member(o, "TaskGroups"), Member(n, "TaskGroups")))
    d.task_groups.push_back(DiffGroup(group, *og, *ng, contextual));
  d.type = KindOf(old_job == nullptr, new_job == nullptr,
                  AnyChanged(d.fields) || AnyChanged(d.objects) || AnyChanged(d.task_groups));
  return d;
}

Json ToJson(const model::JobDiff& diff) {
  Json groups = Json::array();
  for (const model::TaskGroupDiff& g : diff.task_groups) {
    Json tasks = Json::array();
    for (const model::TaskDiff& t : g.tasks) {
      tasks.push_back({{"Annotations", t.annotations.empty() ? Json(nullptr) : Json(t.annotations)},
                       {"Fields", FieldsJson(t.fields)},
                       {"Name", t.name},
                       {"Objects", ObjectsJson(t.objects)},
                       {"Type", t.type}});
    }
    groups.push_back({{"Fields", FieldsJson(g.fields)},
                      {"Name", g.name},
                      {"Objects", ObjectsJson(g.objects)},
                      {"Tasks", tasks.empty() ? Json(nullptr) : tasks},
                      {"Type", g.type},
                      {"Updates", g.updates.empty() ? Json(nullptr) : Json(g.updates)}});
  }
  return {{"Fields", FieldsJson(diff.fields)},
          {"ID", diff.id},
          {"Objects", ObjectsJson(diff.objects)},
          {"TaskGroups", groups.empty() ? Json(nullptr) : groups},
          {"Type", diff.type}};
}

Json ToJson(const model::DesiredUpdates& u) {
  return {{"Ignore", u.ignore},
          {"Place", u.place},
          {"Migrate", u.migrate},
          {"Stop", u.stop},
          {"InPlaceUpdate", u.in_place_update},
          {"DestructiveUpdate", u.destructive_update},
          {"Canary", u.canary},
          {"Preemptions", u.preemptions}};
}

Json PlanResponseJson(const model::JobPlan& plan) {
  Json updates = Json::object();
  for (const auto& [group, u] : plan.desired_tg_updates)
    updates[group] = ToJson(u);
  std::string warnings;
  for (const std::string& w : plan.warnings)
    warnings += (warnings.empty() ? "" : "\n") + w;
  return {{"Annotations", {{"DesiredTGUpdates", std::move(updates)}, {"PreemptedAllocs", nullptr}}},
          {"FailedTGAllocs", internal::MapOrNull(plan.failed_tg_allocs, internal::AllocMetricJson)},
          {"JobModifyIndex", plan.job_modify_index},
          {"CreatedEvals", nullptr},
          {"Diff", plan.diff ? ToJson(*plan.diff) : Json(nullptr)},
          {"NextPeriodicLaunch", FormatTime(plan.next_periodic_launch.value_or(model::Time{}))},
          {"Warnings", warnings},
          {"Index", plan.index}};
}

}  // namespace drover::codec
