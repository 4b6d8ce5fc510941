#include "model/node.h"

#include <algorithm>
#include <cstdio>

namespace drover::model {

namespace {

// FNV-1a over a length-prefixed encoding: stable across builds and platforms (unlike
// std::hash), and the prefixes keep ("ab","c") apart from ("a","bc").
class ClassHasher {
 public:
  void Add(std::string_view s) {
    AddRaw(std::to_string(s.size()));
    AddRaw(":");
    AddRaw(s);
  }
  void AddMap(const std::map<std::string, std::string>& m) {
    for (const auto& [k, v] : m) {
      if (k.rfind("unique.", 0) == 0)
        continue;
      Add(k);
      Add(v);
    }
    Add("}");
  }
  uint64_t value() const { return h_; }

 private:
  void AddRaw(std::string_view s) {
    for (unsigned char c : s) {
      h_ ^= c;
      h_ *= 1099511628211ULL;
    }
  }
  uint64_t h_ = 14695981039346656037ULL;
};

}  // namespace

std::string ComputeNodeClass(const Node& node) {
  ClassHasher h;
  h.Add(node.datacenter);
  h.Add(node.node_class);
  h.Add(node.node_pool);
  h.AddMap(node.attributes);
  h.AddMap(node.meta);
  // Groups in a canonical order: plugins may report them in any order.
  std::vector<std::string> groups;
  for (const NodeDeviceResource& d : node.node_resources.devices) {
    ClassHasher g;
    g.Add(d.vendor);
    g.Add(d.type);
    g.Add(d.name);
    for (const auto& [k, a] : d.attributes) {
      if (k.rfind("unique.", 0) == 0)
        continue;
      g.Add(k);
      g.Add(a.ToString());
    }
    groups.push_back(std::to_string(g.value()));
  }
  std::sort(groups.begin(), groups.end());
  // Two groups of the same model (split by health or locality upstream) count once.
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  for (const std::string& g : groups)
    h.Add(g);
  char buf[32];
  std::snprintf(buf, sizeof buf, "v1:%llu", static_cast<unsigned long long>(h.value()));
  return buf;
}

void AddNodeEvent(Node& node, NodeEvent event) {
  node.events.push_back(std::move(event));
  if (node.events.size() > kMaxNodeEvents)
    node.events.erase(node.events.begin(),
                      node.events.end() - static_cast<std::ptrdiff_t>(kMaxNodeEvents));
}

}  // namespace drover::model
