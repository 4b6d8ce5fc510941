// Regular expressions: regex, regexall, and replace() with a /pattern/. RE2 runs in
// time linear in the input and without recursion on it, so hostile patterns cannot hang
// or overflow the parser (std::regex can do both). Syntax is RE2's, which is Go's.
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "jobspec/functions_internal.h"

namespace drover::jobspec::internal {

namespace {

absl::StatusOr<std::unique_ptr<re2::RE2>> Compile(const std::string& pattern) {
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(8 << 20);
  auto re = std::make_unique<re2::RE2>(pattern, options);
  if (!re->ok()) {
    return Bad(absl::StrCat("invalid regular expression \"", pattern, "\": ", re->error()));
  }
  return re;
}

// One match as HCL gives it: the whole match without capture groups, an object of the
// named groups when there are any, else a list of the groups (null when unmatched).
Json MatchValue(const re2::RE2& re, const std::vector<re2::StringPiece>& groups) {
  if (groups.size() == 1) {
    return std::string(groups[0].data(), groups[0].size());
  }
  auto text = [&](size_t i) {
    return groups[i].data() == nullptr ? Json(nullptr)
                                       : Json(std::string(groups[i].data(), groups[i].size()));
  };
  const std::map<std::string, int>& named = re.NamedCapturingGroups();
  if (!named.empty()) {
    Json out = Json::object();
    for (const auto& [name, index] : named) {
      out[name] = text(static_cast<size_t>(index));
    }
    return out;
  }
  Json out = Json::array();
  for (size_t i = 1; i < groups.size(); ++i) {
    out.push_back(text(i));
  }
  return out;
}

// Every non-overlapping match of `re` in `s`, each as its groups (index 0: the match).
std::vector<std::vector<re2::StringPiece>> AllMatches(const re2::RE2& re, const std::string& s) {
  std::vector<std::vector<re2::StringPiece>> matches;
  const int n = re.NumberOfCapturingGroups() + 1;
  size_t at = 0;
  while (at <= s.size()) {
    std::vector<re2::StringPiece> groups(static_cast<size_t>(n));
    if (!re.Match(s, at, s.size(), re2::RE2::UNANCHORED, groups.data(), n)) {
      break;
    }
    const size_t begin = static_cast<size_t>(groups[0].data() - s.data());
    const size_t end = begin + groups[0].size();
    matches.push_back(std::move(groups));
    at = end > begin ? end : end + 1;  // an empty match moves on by one
  }
  return matches;
}

}  // namespace

absl::StatusOr<std::string> RegexReplace(const std::string& s, const std::string& pattern,
                                         const std::string& to) {
  JOBSPEC_ASSIGN_OR_RETURN(re, Compile(pattern));
  const std::map<std::string, int>& named = re->NamedCapturingGroups();
  // Go's expansion: $1, ${1}, ${name}, $$ for a dollar.
  auto expand = [&](const std::vector<re2::StringPiece>& groups) -> absl::StatusOr<std::string> {
    std::string out;
    for (size_t i = 0; i < to.size(); ++i) {
      if (to[i] != '$' || i + 1 >= to.size()) {
        out += to[i];
        continue;
      }
      if (to[i + 1] == '$') {
        out += '$';
        ++i;
        continue;
      }
      std::string ref;
      size_t j = i + 1;
      if (to[j] == '{') {
        const size_t close = to.find('}', j);
        if (close == std::string::npos) {
          out += to[i];
          continue;
        }
        ref = to.substr(j + 1, close - j - 1);
        j = close + 1;
      } else {
        while (j < to.size() && (std::isalnum(static_cast<unsigned char>(to[j])) || to[j] == '_')) {
          ref += to[j++];
        }
      }
      int index = -1;
      if (!ref.empty() && std::all_of(ref.begin(), ref.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
          })) {
        index = ref.size() < 5 ? std::stoi(ref) : -1;
      } else if (auto it = named.find(ref); it != named.end()) {
        index = it->second;
      }
      if (index >= 0 && static_cast<size_t>(index) < groups.size() &&
          groups[static_cast<size_t>(index)].data() != nullptr) {
        out.append(groups[static_cast<size_t>(index)].data(),
                   groups[static_cast<size_t>(index)].size());
      }
      i = j - 1;
    }
    return out;
  };
  const auto matches = AllMatches(*re, s);
  std::string out;
  size_t last = 0;
  for (const auto& groups : matches) {
    const size_t begin = static_cast<size_t>(groups[0].data() - s.data());
    out.append(s, last, begin - last);
    JOBSPEC_ASSIGN_OR_RETURN(piece, expand(groups));
    out += piece;
    last = begin + groups[0].size();
    if (absl::Status size = CheckResultSize(out.size()); !size.ok()) {
      return size;
    }
  }
  out.append(s, last, std::string::npos);
  if (absl::Status size = CheckResultSize(out.size()); !size.ok()) {
    return size;
  }
  return out;
}

// regex/regexall: checks (pattern, string), compiles, and hands both to `match`.
Fn RegexFn(std::function<absl::StatusOr<Json>(const re2::RE2&, const std::string&)> match) {
  return [match](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
    if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
      return s;
    }
    JOBSPEC_ASSIGN_OR_RETURN(pattern, Str(a[0], 0));
    JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[1], 1));
    JOBSPEC_ASSIGN_OR_RETURN(re, Compile(pattern));
    return match(*re, s);
  };
}

void AddRegexFunctions(FunctionTable& table) {
  table.insert({
      {"regex", RegexFn([](const re2::RE2& re, const std::string& s) -> absl::StatusOr<Json> {
         const int n = re.NumberOfCapturingGroups() + 1;
         std::vector<re2::StringPiece> groups(static_cast<size_t>(n));
         if (!re.Match(s, 0, s.size(), re2::RE2::UNANCHORED, groups.data(), n)) {
           return Bad("pattern did not match any part of the given string");
         }
         return MatchValue(re, groups);
       })},
      {"regexall", RegexFn([](const re2::RE2& re, const std::string& s) -> absl::StatusOr<Json> {
         Json out = Json::array();
         for (const auto& groups : AllMatches(re, s)) {
           out.push_back(MatchValue(re, groups));
         }
         return out;
       })},
  });
}

}  // namespace drover::jobspec::internal
