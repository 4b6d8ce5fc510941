#include "server/device_alloc.h"

#include "server/feasibility.h"

namespace drover::server {

namespace {

// The value a device target names, or a literal parsed as an attribute. nullopt for a
// reference the group does not have.
std::optional<model::Attribute> ResolveDeviceTarget(const std::string& target,
                                                    const model::NodeDeviceResource& g) {
  if (target.size() < 3 || target.rfind("${", 0) != 0 || target.back() != '}')
    return model::ParseAttribute(target);
  const std::string inner = target.substr(2, target.size() - 3);
  if (inner == "device.vendor")
    return model::Attribute::String(g.vendor);
  if (inner == "device.type")
    return model::Attribute::String(g.type);
  if (inner == "device.model")
    return model::Attribute::String(g.name);
  if (inner.rfind("device.attr.", 0) == 0) {
    auto it = g.attributes.find(inner.substr(12));
    if (it != g.attributes.end())
      return it->second;
  }
  return std::nullopt;
}

double AffinityScore(const std::vector<model::Affinity>& affinities,
                     const model::NodeDeviceResource& g) {
  double total = 0, matched = 0;
  for (const model::Affinity& a : affinities) {
    total += std::abs(a.weight);
    if (MeetsDeviceConstraint({a.ltarget, a.rtarget, a.operand}, g))
      matched += a.weight;
  }
  return total == 0 ? 0 : matched / total;
}

}  // namespace

std::string DeviceInstanceKey(const std::string& vendor, const std::string& type,
                              const std::string& id) {
  return vendor + "/" + type + "\x1f" + id;
}

void AddUsedDevices(const model::AllocatedTaskResources& r, std::set<std::string>& used) {
  for (const model::AllocatedDeviceResource& d : r.devices) {
    for (const std::string& id : d.device_ids)
      used.insert(DeviceInstanceKey(d.vendor, d.type, id));
  }
}

bool MeetsDeviceConstraint(const model::Constraint& c, const model::NodeDeviceResource& group) {
  const std::string op = c.operand.empty() ? "=" : c.operand;
  const std::optional<model::Attribute> l = ResolveDeviceTarget(c.ltarget, group);
  const std::optional<model::Attribute> r = ResolveDeviceTarget(c.rtarget, group);
  if (op == "is_set")
    return l.has_value();
  if (op == "is_not_set")
    return !l.has_value();
  if (!l || !r)
    return op == "!=" || op == "not" ? l.has_value() != r.has_value() : false;
  const std::optional<int> cmp = model::CompareAttributes(*l, *r);
  if (op == "=" || op == "==" || op == "is")
    return cmp == 0;
  if (op == "!=" || op == "not")
    return cmp != 0;
  if (op == "<")
    return cmp.has_value() && *cmp < 0;
  if (op == "<=")
    return cmp.has_value() && *cmp <= 0;
  if (op == ">")
    return cmp.has_value() && *cmp > 0;
  if (op == ">=")
    return cmp.has_value() && *cmp >= 0;
  // Text operators (regexp, version, set_contains...) work on the text as written in
  // the job (a literal "8.0" stays "8.0"), and on the attribute's text form.
  const bool r_literal = c.rtarget.rfind("${", 0) != 0;
  return MeetsConstraint({l->ToString(), r_literal ? c.rtarget : r->ToString(), op}, model::Node{});
}

std::optional<DeviceFailure> AssignDevices(const model::TaskGroup& group, const model::Node& node,
                                           const std::set<std::string>& used,
                                           DeviceAssignment& out) {
  std::set<std::string> taken = used;
  const auto& groups = node.node_resources.devices;
  double score_sum = 0;
  int scored = 0;
  for (const model::Task& task : group.tasks) {
    for (const model::RequestedDevice& req : task.resources.devices) {
      bool any_name = false;
      bool any_meets = false;  // a group of that name meets every constraint
      std::string failed_constraint;
      const model::NodeDeviceResource* best = nullptr;
      double best_score = 0;
      for (const model::NodeDeviceResource& g : groups) {
        if (!model::DeviceNameMatches(req.name, g))
          continue;
        any_name = true;
        bool meets = true;
        for (const model::Constraint& c : req.constraints) {
          if (!MeetsDeviceConstraint(c, g)) {
            if (failed_constraint.empty())
              failed_constraint = ConstraintString(c);
            meets = false;
            break;
          }
        }
        if (!meets)
          continue;
        any_meets = true;
        uint64_t free = 0;
        for (const model::DeviceInstance& d : g.instances) {
          if (d.healthy && !taken.contains(DeviceInstanceKey(g.vendor, g.type, d.id)))
            ++free;
        }
        if (free < req.count)
          continue;
        const double score = AffinityScore(req.affinities, g);
        if (best == nullptr || score > best_score) {
          best = &g;
          best_score = score;
        }
      }
      if (best == nullptr) {
        if (!any_name)
          return DeviceFailure{.filtered = true, .reason = "missing devices"};
        if (!any_meets)
          return DeviceFailure{.filtered = true, .reason = failed_constraint};
        return DeviceFailure{.filtered = false,
                             .reason = "devices: not enough healthy, unallocated \"" + req.name +
                                       "\" instances (" + std::to_string(req.count) +
                                       " requested)"};
      }
      model::AllocatedDeviceResource a{
          .vendor = best->vendor, .type = best->type, .name = best->name};
      for (const model::DeviceInstance& d : best->instances) {
        if (a.device_ids.size() == req.count)
          break;
        const std::string key = DeviceInstanceKey(best->vendor, best->type, d.id);
        if (d.healthy && !taken.contains(key)) {
          taken.insert(key);
          a.device_ids.push_back(d.id);
        }
      }
      out.tasks[task.name].push_back(std::move(a));
      if (!req.affinities.empty()) {
        score_sum += best_score;
        ++scored;
      }
    }
  }
  out.affinity_score = scored == 0 ? 0 : score_sum / scored;
  return std::nullopt;
}

}  // namespace drover::server
