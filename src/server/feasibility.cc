#include "server/feasibility.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

namespace drover::server {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) {
    const size_t b = part.find_first_not_of(" \t");
    const size_t e = part.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? "" : part.substr(b, e - b + 1));
  }
  return out;
}

std::optional<double> AsNumber(const std::string& s) {
  if (s.empty())
    return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == nullptr || *end != '\0')
    return std::nullopt;
  return v;
}

bool GlobMatch(const std::string& pattern, const std::string& s) {
  size_t p = 0, i = 0, star = std::string::npos, mark = 0;
  while (i < s.size()) {
    if (p < pattern.size() && (pattern[p] == s[i] || pattern[p] == '?')) {
      ++p;
      ++i;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

bool Compare(const std::string& op, const std::string& l, const std::string& r) {
  auto ln = AsNumber(l);
  auto rn = AsNumber(r);
  int cmp;
  if (ln && rn) {
    cmp = *ln < *rn ? -1 : (*ln > *rn ? 1 : 0);
  } else {
    cmp = l.compare(r);
  }
  if (op == "<")
    return cmp < 0;
  if (op == "<=")
    return cmp <= 0;
  if (op == ">")
    return cmp > 0;
  return cmp >= 0;
}

}  // namespace

std::optional<std::string> ResolveTarget(const std::string& target, const model::Node& node) {
  if (target.size() < 3 || target.rfind("${", 0) != 0 || target.back() != '}') {
    return target;
  }
  const std::string inner = target.substr(2, target.size() - 3);
  if (inner == "node.unique.id")
    return node.id;
  if (inner == "node.datacenter")
    return node.datacenter;
  if (inner == "node.unique.name")
    return node.name;
  if (inner == "node.class")
    return node.node_class;
  if (inner == "node.pool")
    return node.node_pool;
  if (inner.rfind("attr.", 0) == 0) {
    auto it = node.attributes.find(inner.substr(5));
    if (it == node.attributes.end())
      return std::nullopt;
    return it->second;
  }
  if (inner.rfind("meta.", 0) == 0) {
    auto it = node.meta.find(inner.substr(5));
    if (it == node.meta.end())
      return std::nullopt;
    return it->second;
  }
  return std::nullopt;
}

// The pattern compiled with RE2 (linear time, no recursion: no pattern or input can hang
// or overflow the scheduler, as std::regex could), or null if it does not compile.
// Each scheduler thread keeps what it compiled; a pass compares each pattern with many
// nodes.
const re2::RE2* CompiledRegexp(const std::string& pattern) {
  thread_local std::map<std::string, std::unique_ptr<re2::RE2>> cache;
  if (auto it = cache.find(pattern); it != cache.end())
    return it->second.get();
  if (cache.size() >= 256)
    cache.clear();
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<re2::RE2>(pattern, options);
  const re2::RE2* out = re->ok() ? re.get() : nullptr;
  cache.emplace(pattern, std::move(re));
  return out;
}

bool MeetsConstraint(const model::Constraint& c, const model::Node& node) {
  const std::string& op = c.operand.empty() ? std::string("=") : c.operand;
  if (op == "distinct_hosts" || op == "distinct_property") {
    return true;
  }
  const auto l = ResolveTarget(c.ltarget, node);
  const auto r = ResolveTarget(c.rtarget, node);
  if (op == "is_set")
    return l.has_value();
  if (op == "is_not_set")
    return !l.has_value();
  if (!l)
    return false;
  if (op == "=" || op == "==" || op == "is")
    return r && *l == *r;
  if (op == "!=" || op == "not")
    return !r || *l != *r;
  if (!r)
    return false;
  if (op == "<" || op == "<=" || op == ">" || op == ">=")
    return Compare(op, *l, *r);
  if (op == "regexp") {
    const re2::RE2* re = CompiledRegexp(*r);
    return re != nullptr && re2::RE2::PartialMatch(*l, *re);
  }
  if (op == "version" || op == "semver")
    return VersionSatisfies(*l, *r);
  if (op == "set_contains" || op == "set_contains_all" || op == "set_contains_any") {
    std::set<std::string> have;
    for (const auto& v : Split(*l, ','))
      have.insert(v);
    const auto want = Split(*r, ',');
    if (op == "set_contains_any") {
      return std::any_of(want.begin(), want.end(), [&](const auto& w) { return have.contains(w); });
    }
    return std::all_of(want.begin(), want.end(), [&](const auto& w) { return have.contains(w); });
  }
  return false;
}

std::string ConstraintString(const model::Constraint& c) {
  return c.ltarget + " " + (c.operand.empty() ? "=" : c.operand) + " " + c.rtarget;
}

int CompareVersions(const std::string& a, const std::string& b) {
  auto strip = [](std::string v) {
    if (!v.empty() && v[0] == 'v')
      v.erase(0, 1);
    const size_t cut = v.find_first_of("-+");
    return cut == std::string::npos ? v : v.substr(0, cut);
  };
  const auto pa = Split(strip(a), '.');
  const auto pb = Split(strip(b), '.');
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    const std::string x = i < pa.size() ? pa[i] : "0";
    const std::string y = i < pb.size() ? pb[i] : "0";
    auto xn = AsNumber(x);
    auto yn = AsNumber(y);
    int c = (xn && yn) ? (*xn < *yn ? -1 : (*xn > *yn ? 1 : 0)) : x.compare(y);
    if (c != 0)
      return c < 0 ? -1 : 1;
  }
  return 0;
}

bool VersionSatisfies(const std::string& version, const std::string& spec) {
  for (const std::string& clause : Split(spec, ',')) {
    if (clause.empty())
      continue;
    size_t i = 0;
    while (i < clause.size() && std::string("<>=!~").find(clause[i]) != std::string::npos)
      ++i;
    std::string op = clause.substr(0, i);
    std::string want = clause.substr(i);
    want.erase(0, want.find_first_not_of(' '));
    if (op.empty())
      op = "=";
    const int c = CompareVersions(version, want);
    bool ok;
    if (op == "=" || op == "==")
      ok = c == 0;
    else if (op == "!=")
      ok = c != 0;
    else if (op == "<")
      ok = c < 0;
    else if (op == "<=")
      ok = c <= 0;
    else if (op == ">")
      ok = c > 0;
    else if (op == ">=")
      ok = c >= 0;
    else if (op == "~>") {
      // Pessimistic: >= want and < next significant release.
      auto parts = Split(want, '.');
      ok = c >= 0;
      if (parts.size() > 1) {
        parts.pop_back();
        auto last = AsNumber(parts.back());
        parts.back() = std::to_string(static_cast<long>(last.value_or(0)) + 1);
        std::string upper;
        for (size_t k = 0; k < parts.size(); ++k)
          upper += (k ? "." : "") + parts[k];
        ok = ok && CompareVersions(version, upper) < 0;
      }
    } else {
      ok = false;
    }
    if (!ok)
      return false;
  }
  return true;
}

bool DatacenterMatches(const std::vector<std::string>& datacenters, const std::string& dc) {
  return std::any_of(datacenters.begin(), datacenters.end(),
                     [&](const std::string& pattern) { return GlobMatch(pattern, dc); });
}

}  // namespace drover::server
