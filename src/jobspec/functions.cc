#include "jobspec/functions.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

#include "common/go_duration.h"
#include "common/ids.h"
#include "jobspec/parser.h"

namespace drover::jobspec {

namespace {

using Args = std::vector<Json>;
using Fn = std::function<absl::StatusOr<Json>(Evaluator&, const Args&)>;

absl::Status Bad(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

absl::Status Arity(const Args& args, size_t min, size_t max) {
  if (args.size() < min || args.size() > max) {
    if (min == max) {
      return Bad(
          absl::StrCat(min, " argument", min == 1 ? "" : "s", " required, got ", args.size()));
    }
    return Bad(
        absl::StrCat("between ", min, " and ", max, " arguments required, got ", args.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Str(const Json& v, size_t index) {
  std::string s;
  if (!ToHclString(v, s)) {
    return Bad(absl::StrCat("argument ", index + 1, ": string required, got ", TypeName(v)));
  }
  return s;
}

absl::StatusOr<Json> Num(const Json& v, size_t index) {
  Json n;
  if (!ToHclNumber(v, n)) {
    return Bad(absl::StrCat("argument ", index + 1, ": number required, got ", TypeName(v)));
  }
  return n;
}

absl::StatusOr<int64_t> Int(const Json& v, size_t index) {
  absl::StatusOr<Json> n = Num(v, index);
  if (!n.ok()) {
    return n.status();
  }
  if (n->is_number_integer()) {
    return n->get<int64_t>();
  }
  const double d = n->get<double>();
  if (d != std::floor(d) || std::fabs(d) > 9e15) {
    return Bad(absl::StrCat("argument ", index + 1, ": a whole number is required"));
  }
  return static_cast<int64_t>(d);
}

absl::StatusOr<const Json*> List(const Json& v, size_t index) {
  if (!v.is_array()) {
    return Bad(absl::StrCat("argument ", index + 1, ": list required, got ", TypeName(v)));
  }
  return &v;
}

absl::StatusOr<const Json*> Map(const Json& v, size_t index) {
  if (!v.is_object()) {
    return Bad(absl::StrCat("argument ", index + 1, ": map required, got ", TypeName(v)));
  }
  return &v;
}

#define ASSIGN_OR_RETURN_(lhs, expr) \
  auto lhs##_or = (expr);            \
  if (!lhs##_or.ok()) {              \
    return lhs##_or.status();        \
  }                                  \
  auto lhs = std::move(*lhs##_or)

// Characters of a UTF-8 string (code point sequences).
std::vector<std::string> Chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0xF0) {
      n = 4;
    } else if (b >= 0xE0) {
      n = 3;
    } else if (b >= 0xC0) {
      n = 2;
    }
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

Fn StringFn(std::function<std::string(const std::string&)> f) {
  return [f](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
    if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
      return s;
    }
    ASSIGN_OR_RETURN_(s, Str(a[0], 0));
    return Json(f(s));
  };
}

absl::StatusOr<Json> Format(const Args& a) {
  if (a.empty()) {
    return Bad("at least 1 argument required");
  }
  ASSIGN_OR_RETURN_(fmt, Str(a[0], 0));
  std::string out;
  size_t next = 1;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    ++i;
    std::string flags;
    while (i < fmt.size() && absl::string_view("-+ 0#").find(fmt[i]) != absl::string_view::npos) {
      flags += fmt[i++];
    }
    int width = 0;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
      width = width * 10 + (fmt[i++] - '0');
    }
    int precision = -1;
    if (i < fmt.size() && fmt[i] == '.') {
      precision = 0;
      ++i;
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
        precision = precision * 10 + (fmt[i++] - '0');
      }
    }
    if (i >= fmt.size()) {
      return Bad("format string ends in an incomplete verb");
    }
    const char verb = fmt[i];
    if (verb == '%') {
      out += '%';
      continue;
    }
    if (next >= a.size()) {
      return Bad(absl::StrCat("not enough arguments for the format verbs (needs more than ",
                              a.size() - 1, ")"));
    }
    const Json& v = a[next++];
    std::string text;
    switch (verb) {
      case 'v':
      case 's': {
        if (!ToHclString(v, text)) {
          if (verb == 's') {
            return Bad(absl::StrCat("%s requires a string, got ", TypeName(v)));
          }
          text = v.dump();
        }
        if (precision >= 0 && static_cast<size_t>(precision) < text.size()) {
          text.resize(precision);
        }
        break;
      }
      case 'q': {
        std::string s;
        if (!ToHclString(v, s)) {
          return Bad(absl::StrCat("%q requires a string, got ", TypeName(v)));
        }
        text = Json(s).dump();
        break;
      }
      case 'd':
      case 'x':
      case 'X':
      case 'o':
      case 'b': {
        ASSIGN_OR_RETURN_(n, Int(v, next - 1));
        if (verb == 'd') {
          text = std::to_string(n);
        } else {
          const int base = verb == 'o' ? 8 : verb == 'b' ? 2 : 16;
          const bool negative = n < 0;
          uint64_t u = negative ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
          const char* digits = verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
          do {
            text.insert(text.begin(), digits[u % base]);
            u /= base;
          } while (u != 0);
          if (negative) {
            text.insert(text.begin(), '-');
          }
        }
        if (flags.find('+') != std::string::npos && n >= 0) {
          text.insert(text.begin(), '+');
        }
        break;
      }
      case 'f':
      case 'e':
      case 'g': {
        ASSIGN_OR_RETURN_(n, Num(v, next - 1));
        std::ostringstream os;
        if (verb == 'f') {
          os << std::fixed;
        } else if (verb == 'e') {
          os << std::scientific;
        }
        os.precision(precision >= 0 ? precision : 6);
        os << n.get<double>();
        text = os.str();
        break;
      }
      case 't': {
        bool b = false;
        if (!ToHclBool(v, b)) {
          return Bad(absl::StrCat("%t requires a bool, got ", TypeName(v)));
        }
        text = b ? "true" : "false";
        break;
      }
      default:
        return Bad(absl::StrCat("unsupported format verb %", std::string(1, verb)));
    }
    if (static_cast<int>(text.size()) < width) {
      const size_t pad = width - text.size();
      if (flags.find('-') != std::string::npos) {
        text.append(pad, ' ');
      } else if (flags.find('0') != std::string::npos && verb != 's' && verb != 'q') {
        const size_t sign = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
        text.insert(sign, pad, '0');
      } else {
        text.insert(0, pad, ' ');
      }
    }
    out += text;
  }
  if (next < a.size()) {
    return Bad(
        absl::StrCat("too many arguments; the format uses ", next - 1, " but got ", a.size() - 1));
  }
  return Json(out);
}

// HCL's regular expressions are RE2; std::regex's ECMAScript grammar agrees on the
// common subset job files use.
absl::StatusOr<std::regex> CompileRegex(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Bad(absl::StrCat("invalid regular expression \"", pattern, "\": ", e.what()));
  }
}

Json MatchValue(const std::smatch& m) {
  if (m.size() == 1) {
    return m.str(0);
  }
  Json groups = Json::array();
  for (size_t i = 1; i < m.size(); ++i) {
    groups.push_back(m[i].matched ? Json(m.str(i)) : Json(nullptr));
  }
  return groups;
}

absl::StatusOr<std::string> ReadFile(Evaluator& ev, const std::string& path,
                                     const std::string& fn) {
  if (!ev.options().allow_fs) {
    return Bad(absl::StrCat(fn,
                            "() is not available here: job files parsed by the server "
                            "cannot read files; run the job from the CLI instead"));
  }
  std::filesystem::path p(path);
  if (p.is_relative()) {
    p = std::filesystem::path(ev.options().base_dir) / p;
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    return Bad(absl::StrCat("no file exists at ", p.string()));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > kMaxSourceBytes) {
    return Bad(absl::StrCat("file ", p.string(), " is larger than ", kMaxSourceBytes, " bytes"));
  }
  return text.str();
}

const std::unordered_map<std::string, Fn>& Functions() {
  static const auto* table = new std::unordered_map<std::string, Fn>{
      {"upper", StringFn([](const std::string& s) { return absl::AsciiStrToUpper(s); })},
      {"lower", StringFn([](const std::string& s) { return absl::AsciiStrToLower(s); })},
      {"title", StringFn([](const std::string& s) {
         std::string out = s;
         bool start = true;
         for (char& c : out) {
           if (std::isspace(static_cast<unsigned char>(c))) {
             start = true;
           } else if (start) {
             c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
             start = false;
           }
         }
         return out;
       })},
      {"trimspace",
       StringFn([](const std::string& s) { return std::string(absl::StripAsciiWhitespace(s)); })},
      {"chomp", StringFn([](const std::string& s) {
         std::string out = s;
         while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
           out.pop_back();
         }
         return out;
       })},
      {"strrev", StringFn([](const std::string& s) {
         std::vector<std::string> chars = Chars(s);
         std::reverse(chars.begin(), chars.end());
         return absl::StrJoin(chars, "");
       })},
      {"urlencode", StringFn([](const std::string& s) {
         std::string out;
         for (unsigned char c : s) {
           if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
             out += static_cast<char>(c);
           } else {
             absl::StrAppend(&out, "%",
                             absl::AsciiStrToUpper(absl::BytesToHexString(
                                 absl::string_view(reinterpret_cast<char*>(&c), 1))));
           }
         }
         return out;
       })},
      {"base64encode", StringFn([](const std::string& s) { return absl::Base64Escape(s); })},
      {"base64decode",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(s, Str(a[0], 0));
         std::string out;
         if (!absl::Base64Unescape(s, &out)) {
           return Bad("the argument is not valid base64");
         }
         return Json(out);
       }},
      {"format", [](Evaluator&, const Args& a) { return Format(a); }},
      {"join",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (a.size() < 2) {
           return Bad("at least 2 arguments required");
         }
         ASSIGN_OR_RETURN_(sep, Str(a[0], 0));
         std::vector<std::string> parts;
         for (size_t i = 1; i < a.size(); ++i) {
           ASSIGN_OR_RETURN_(list, List(a[i], i));
           for (const Json& v : *list) {
             ASSIGN_OR_RETURN_(s, Str(v, i));
             parts.push_back(s);
           }
         }
         return Json(absl::StrJoin(parts, sep));
       }},
      {"split",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(sep, Str(a[0], 0));
         ASSIGN_OR_RETURN_(s, Str(a[1], 1));
         Json out = Json::array();
         if (sep.empty()) {
           for (std::string& c : Chars(s)) {
             out.push_back(c);
           }
           return out;
         }
         for (absl::string_view part : absl::StrSplit(s, sep)) {
           out.push_back(std::string(part));
         }
         return out;
       }},
      {"replace",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 3, 3); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(s, Str(a[0], 0));
         ASSIGN_OR_RETURN_(from, Str(a[1], 1));
         ASSIGN_OR_RETURN_(to, Str(a[2], 2));
         if (from.size() >= 2 && from.front() == '/' && from.back() == '/') {
           ASSIGN_OR_RETURN_(re, CompileRegex(from.substr(1, from.size() - 2)));
           return Json(std::regex_replace(s, re, to));
         }
         if (from.empty()) {
           return Json(s);
         }
         return Json(absl::StrReplaceAll(s, {{from, to}}));
       }},
      {"trim",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(s, Str(a[0], 0));
         ASSIGN_OR_RETURN_(cut, Str(a[1], 1));
         const size_t b = s.find_first_not_of(cut);
         if (b == std::string::npos) {
           return Json("");
         }
         return Json(s.substr(b, s.find_last_not_of(cut) - b + 1));
       }},
      {"trimprefix",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(s, Str(a[0], 0));
         ASSIGN_OR_RETURN_(p, Str(a[1], 1));
         return Json(std::string(absl::StripPrefix(s, p)));
       }},
      {"trimsuffix",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(s, Str(a[0], 0));
         ASSIGN_OR_RETURN_(p, Str(a[1], 1));
         return Json(std::string(absl::StripSuffix(s, p)));
       }},
      {"startswith",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(s, Str(a[0], 0));
         ASSIGN_OR_RETURN_(p, Str(a[1], 1));
         return Json(absl::StartsWith(s, p));
       }},
      {"endswith",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(s, Str(a[0], 0));
         ASSIGN_OR_RETURN_(p, Str(a[1], 1));
         return Json(absl::EndsWith(s, p));
       }},
      {"substr",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 3, 3); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(s, Str(a[0], 0));
         ASSIGN_OR_RETURN_(offset, Int(a[1], 1));
         ASSIGN_OR_RETURN_(length, Int(a[2], 2));
         std::vector<std::string> chars = Chars(s);
         const auto n = static_cast<int64_t>(chars.size());
         if (offset < 0) {
           offset += n;
         }
         if (offset < 0 || offset > n) {
           return Bad("offset out of range");
         }
         const int64_t end = length < 0 ? n : std::min(n, offset + length);
         std::string out;
         for (int64_t i = offset; i < end; ++i) {
           out += chars[static_cast<size_t>(i)];
         }
         return Json(out);
       }},
      {"indent",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(n, Int(a[0], 0));
         ASSIGN_OR_RETURN_(s, Str(a[1], 1));
         if (n < 0 || n > 1024) {
           return Bad("the indent must be between 0 and 1024");
         }
         return Json(absl::StrReplaceAll(s, {{"\n", "\n" + std::string(n, ' ')}}));
       }},
      {"regex",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(pattern, Str(a[0], 0));
         ASSIGN_OR_RETURN_(s, Str(a[1], 1));
         ASSIGN_OR_RETURN_(re, CompileRegex(pattern));
         std::smatch m;
         if (!std::regex_search(s, m, re)) {
           return Bad("pattern did not match any part of the given string");
         }
         return MatchValue(m);
       }},
      {"regexall",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         ASSIGN_OR_RETURN_(pattern, Str(a[0], 0));
         ASSIGN_OR_RETURN_(s, Str(a[1], 1));
         ASSIGN_OR_RETURN_(re, CompileRegex(pattern));
         Json out = Json::array();
         for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator();
              ++it) {
           out.push_back(MatchValue(*it));
         }
         return out;
       }},
      {"length",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         if (a[0].is_string()) {
           return Json(Chars(a[0].get<std::string>()).size());
         }
         if (a[0].is_array() || a[0].is_object()) {
           return Json(a[0].size());
         }
         return Bad(
             absl::StrCat("argument must be a string or a collection, got ", TypeName(a[0])));
       }},
      {"concat",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           Json out = Json::array();
                                           for (size_t i = 0; i < a.size(); ++i) {
                                             ASSIGN_OR_RETURN_(list, List(a[i], i));
                                             out.insert(out.end(), list->begin(), list->end());
                                           }
                                           return out;
                                         }},
      {"contains",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           return Json(std::find(list->begin(), list->end(),
                                                                 a[1]) != list->end());
                                         }},
      {"keys",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(m, Map(a[0], 0));
                                           Json out = Json::array();
                                           for (auto it = m->begin(); it != m->end(); ++it) {
                                             out.push_back(it.key());
                                           }
                                           return out;
                                         }},
      {"values",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(m, Map(a[0], 0));
                                           Json out = Json::array();
                                           for (const Json& v : *m) {
                                             out.push_back(v);
                                           }
                                           return out;
                                         }},
      {"lookup",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 2, 3); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(m, Map(a[0], 0));
                                           ASSIGN_OR_RETURN_(key, Str(a[1], 1));
                                           if (auto it = m->find(key); it != m->end()) {
                                             return *it;
                                           }
                                           if (a.size() == 3) {
                                             return a[2];
                                           }
                                           return Bad(absl::StrCat("the given key \"", key,
                                                                   "\" is not in the map"));
                                         }},
      {"merge",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           Json out = Json::object();
                                           for (size_t i = 0; i < a.size(); ++i) {
                                             if (a[i].is_null()) {
                                               continue;
                                             }
                                             ASSIGN_OR_RETURN_(m, Map(a[i], i));
                                             for (auto it = m->begin(); it != m->end(); ++it) {
                                               out[it.key()] = it.value();
                                             }
                                           }
                                           return out;
                                         }},
      {"element",
       [](Evaluator&,
          const Args& a) -> absl::
                             StatusOr<Json> {
                               if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                                 return s;
                               }
                               ASSIGN_OR_RETURN_(list, List(a[0], 0));
                               ASSIGN_OR_RETURN_(i, Int(a[1], 1));
                               if (list->empty()) {
                                 return Bad("cannot use element function with an empty list");
                               }
                               if (i < 0) {
                                 return Bad("cannot use element function with a negative index");
                               }
                               return (*list)[static_cast<size_t>(i) % list->size()];
                             }},
      {"index",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           auto it = std::find(list->begin(), list->end(), a[1]);
                                           if (it == list->end()) {
                                             return Bad("item not found");
                                           }
                                           return Json(it - list->begin());
                                         }},
      {"range",
       [](Evaluator&,
          const Args& a) -> absl::
                             StatusOr<Json> {
                               if (absl::Status s = Arity(a, 1, 3); !s.ok()) {
                                 return s;
                               }
                               double start = 0;
                               double limit = 0;
                               double step = 1;
                               ASSIGN_OR_RETURN_(first, Num(a[0], 0));
                               if (a.size() == 1) {
                                 limit = first.get<double>();
                               } else {
                                 ASSIGN_OR_RETURN_(second, Num(a[1], 1));
                                 start = first.get<double>();
                                 limit = second.get<double>();
                                 if (a.size() == 3) {
                                   ASSIGN_OR_RETURN_(third, Num(a[2], 2));
                                   step = third.get<double>();
                                 } else if (limit < start) {
                                   step = -1;
                                 }
                               }
                               if (step == 0 || (step > 0) != (limit >= start)) {
                                 if (limit == start) {
                                   return Json::array();
                                 }
                                 return Bad("the step must move from the start towards the limit");
                               }
                               if (std::fabs((limit - start) / step) > 1024) {
                                 return Bad("more than 1024 values would be produced");
                               }
                               Json out = Json::array();
                               for (double v = start; step > 0 ? v < limit : v > limit; v += step) {
                                 if (v == std::floor(v)) {
                                   out.push_back(static_cast<int64_t>(v));
                                 } else {
                                   out.push_back(v);
                                 }
                               }
                               return out;
                             }},
      {"distinct",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           Json out = Json::array();
                                           for (const Json& v : *list) {
                                             if (std::find(out.begin(), out.end(), v) ==
                                                 out.end()) {
                                               out.push_back(v);
                                             }
                                           }
                                           return out;
                                         }},
      {"flatten",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           Json out = Json::array();
                                           std::function<void(const Json&)> add =
                                               [&](const Json& v) {
                                                 if (v.is_array()) {
                                                   for (const Json& item : v) {
                                                     add(item);
                                                   }
                                                 } else {
                                                   out.push_back(v);
                                                 }
                                               };
                                           add(*list);
                                           return out;
                                         }},
      {"coalesce",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           for (const Json& v : a) {
                                             if (!v.is_null() && v != "") {
                                               return v;
                                             }
                                           }
                                           return Bad("no non-null, non-empty-string arguments");
                                         }},
      {"coalescelist",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           for (size_t i = 0; i < a.size(); ++i) {
                                             ASSIGN_OR_RETURN_(list, List(a[i], i));
                                             if (!list->empty()) {
                                               return *list;
                                             }
                                           }
                                           return Bad("no non-empty list arguments");
                                         }},
      {"compact",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           Json out = Json::array();
                                           for (const Json& v : *list) {
                                             if (!v.is_null() && v != "") {
                                               out.push_back(v);
                                             }
                                           }
                                           return out;
                                         }},
      {"slice",
       [](Evaluator&,
          const Args& a) -> absl::
                             StatusOr<Json> {
                               if (absl::Status s = Arity(a, 3, 3); !s.ok()) {
                                 return s;
                               }
                               ASSIGN_OR_RETURN_(list, List(a[0], 0));
                               ASSIGN_OR_RETURN_(from, Int(a[1], 1));
                               ASSIGN_OR_RETURN_(to, Int(a[2], 2));
                               if (from < 0 || to < from ||
                                   static_cast<size_t>(to) > list->size()) {
                                 return Bad("the indexes must satisfy 0 <= start <= end <= length");
                               }
                               return Json(Json::array_t(list->begin() + from, list->begin() + to));
                             }},
      {"reverse",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           return Json(Json::array_t(list->rbegin(), list->rend()));
                                         }},
      {"sort",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           std::vector<std::string> items;
                                           for (const Json& v : *list) {
                                             ASSIGN_OR_RETURN_(s, Str(v, 0));
                                             items.push_back(s);
                                           }
                                           std::sort(items.begin(), items.end());
                                           return Json(items);
                                         }},
      {"zipmap",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(keys, List(a[0], 0));
                                           ASSIGN_OR_RETURN_(values, List(a[1], 1));
                                           if (keys->size() != values->size()) {
                                             return Bad("the two lists must have the same length");
                                           }
                                           Json out = Json::object();
                                           for (size_t i = 0; i < keys->size(); ++i) {
                                             ASSIGN_OR_RETURN_(k, Str((*keys)[i], 0));
                                             out[k] = (*values)[i];
                                           }
                                           return out;
                                         }},
      {"chunklist",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           ASSIGN_OR_RETURN_(size, Int(a[1], 1));
                                           if (size < 0) {
                                             return Bad("the size must not be negative");
                                           }
                                           Json out = Json::array();
                                           if (size == 0) {
                                             out.push_back(*list);
                                             return out;
                                           }
                                           for (size_t i = 0; i < list->size(); i += size) {
                                             const size_t end = std::min(
                                                 list->size(), i + static_cast<size_t>(size));
                                             out.push_back(Json::array_t(list->begin() + i,
                                                                         list->begin() + end));
                                           }
                                           return out;
                                         }},
      {"tolist",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           return *list;
                                         }},
      {"toset",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(list, List(a[0], 0));
                                           std::set<Json> unique(list->begin(), list->end());
                                           return Json(Json::array_t(unique.begin(), unique.end()));
                                         }},
      {"tomap",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(m, Map(a[0], 0));
                                           return *m;
                                         }},
      {"tostring",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           if (a[0].is_null()) {
                                             return a[0];
                                           }
                                           ASSIGN_OR_RETURN_(s, Str(a[0], 0));
                                           return Json(s);
                                         }},
      {"tonumber",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           if (a[0].is_null()) {
                                             return a[0];
                                           }
                                           return Num(a[0], 0);
                                         }},
      {"tobool",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           bool b = false;
                                           if (a[0].is_null()) {
                                             return a[0];
                                           }
                                           if (!ToHclBool(a[0], b)) {
                                             return Bad(absl::StrCat("bool required, got ",
                                                                     TypeName(a[0])));
                                           }
                                           return Json(b);
                                         }},
      {"min",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (a.empty()) {
                                             return Bad("at least 1 argument required");
                                           }
                                           Json best;
                                           for (size_t i = 0; i < a.size(); ++i) {
                                             ASSIGN_OR_RETURN_(n, Num(a[i], i));
                                             if (i == 0 || n.get<double>() < best.get<double>()) {
                                               best = n;
                                             }
                                           }
                                           return best;
                                         }},
      {"max",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (a.empty()) {
                                             return Bad("at least 1 argument required");
                                           }
                                           Json best;
                                           for (size_t i = 0; i < a.size(); ++i) {
                                             ASSIGN_OR_RETURN_(n, Num(a[i], i));
                                             if (i == 0 || n.get<double>() > best.get<double>()) {
                                               best = n;
                                             }
                                           }
                                           return best;
                                         }},
      {"abs",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(n, Num(a[0], 0));
                                           if (n.is_number_integer() &&
                                               n.get<int64_t>() != INT64_MIN) {
                                             return Json(std::llabs(n.get<int64_t>()));
                                           }
                                           return Json(std::fabs(n.get<double>()));
                                         }},
      {"ceil",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(n, Num(a[0], 0));
                                           return Json(
                                               static_cast<int64_t>(std::ceil(n.get<double>())));
                                         }},
      {"floor",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(n, Num(a[0], 0));
                                           return Json(
                                               static_cast<int64_t>(std::floor(n.get<double>())));
                                         }},
      {"signum",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(n, Num(a[0], 0));
                                           const double d = n.get<double>();
                                           return Json(d > 0 ? 1 : d < 0 ? -1 : 0);
                                         }},
      {"pow",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(x, Num(a[0], 0));
                                           ASSIGN_OR_RETURN_(y, Num(a[1], 1));
                                           const double r =
                                               std::pow(x.get<double>(), y.get<double>());
                                           if (!std::isfinite(r)) {
                                             return Bad("the result is not a finite number");
                                           }
                                           if (r == std::floor(r) && std::fabs(r) < 9e15) {
                                             return Json(static_cast<int64_t>(r));
                                           }
                                           return Json(r);
                                         }},
      {"parseint",
       [](Evaluator&,
          const Args& a) -> absl::
                             StatusOr<Json> {
                               if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                                 return s;
                               }
                               ASSIGN_OR_RETURN_(s, Str(a[0], 0));
                               ASSIGN_OR_RETURN_(base, Int(a[1], 1));
                               if (base < 2 || base > 36) {
                                 return Bad("the base must be between 2 and 36");
                               }
                               int64_t v = 0;
                               const char* begin = s.data() + ((!s.empty() && s[0] == '+') ? 1 : 0);
                               auto [p, ec] = std::from_chars(begin, s.data() + s.size(), v,
                                                              static_cast<int>(base));
                               if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
                                 return Bad(absl::StrCat("cannot parse \"", s, "\" as a base ",
                                                         base, " integer"));
                               }
                               return Json(v);
                             }},
      {"jsonencode",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           return Json(a[0].dump());
                                         }},
      {"jsondecode",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                             return s;
                                           }
                                           ASSIGN_OR_RETURN_(s, Str(a[0], 0));
                                           Json out =
                                               Json::parse(s, nullptr, /*allow_exceptions=*/false);
                                           if (out.is_discarded()) {
                                             return Bad("the argument is not valid JSON");
                                           }
                                           return out;
                                         }},
      {"uuidv4",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 0, 0); !s.ok()) {
                                             return s;
                                           }
                                           return Json(common::NewUuid());
                                         }},
      {"timestamp",
       [](Evaluator&, const Args& a) -> absl::
                                         StatusOr<Json> {
                                           if (absl::Status s = Arity(a, 0, 0); !s.ok()) {
                                             return s;
                                           }
                                           return Json(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                                                                        absl::Now(),
                                                                        absl::UTCTimeZone()));
                                         }},
      {"timeadd",
       [](Evaluator&, const Args& a)
           -> absl::
               StatusOr<Json> {
                 if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                   return s;
                 }
                 ASSIGN_OR_RETURN_(ts, Str(a[0], 0));
                 ASSIGN_OR_RETURN_(d, Str(a[1], 1));
                 absl::Time t;
                 std::string err;
                 if (!absl::ParseTime(absl::RFC3339_full, ts, &t, &err)) {
                   return Bad(absl::StrCat("\"", ts, "\" is not an RFC 3339 timestamp"));
                 }
                 absl::StatusOr<common::Duration> delta = common::ParseGoDuration(d);
                 if (!delta.ok()) {
                   return Bad(delta.status().message());
                 }
                 t += absl::FromChrono(*delta);
                 return Json(absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone()));
               }},
      {"file",
       [](Evaluator& ev, const Args& a) -> absl::
                                            StatusOr<Json> {
                                              if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                                                return s;
                                              }
                                              ASSIGN_OR_RETURN_(path, Str(a[0], 0));
                                              ASSIGN_OR_RETURN_(text, ReadFile(ev, path, "file"));
                                              return Json(text);
                                            }},
      {"fileexists",
       [](Evaluator& ev, const Args& a)
           -> absl::
               StatusOr<Json> {
                 if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
                   return s;
                 }
                 ASSIGN_OR_RETURN_(path, Str(a[0], 0));
                 if (!ev.options().allow_fs) {
                   return Bad(
                       "fileexists() is not available here: job files parsed by the server "
                       "cannot read files; run the job from the CLI instead");
                 }
                 std::filesystem::path p(path);
                 if (p.is_relative()) {
                   p = std::filesystem::path(ev.options().base_dir) / p;
                 }
                 std::error_code ec;
                 return Json(std::filesystem::is_regular_file(p, ec));
               }},
      {"templatefile",
       [](Evaluator& ev,
          const Args& a) -> absl::
                             StatusOr<Json> {
                               if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
                                 return s;
                               }
                               ASSIGN_OR_RETURN_(path, Str(a[0], 0));
                               ASSIGN_OR_RETURN_(vars, Map(a[1], 1));
                               ASSIGN_OR_RETURN_(text, ReadFile(ev, path, "templatefile"));
                               absl::StatusOr<ExprPtr> tmpl = ParseTemplate(path, text);
                               if (!tmpl.ok()) {
                                 return absl::FailedPreconditionError(tmpl.status().message());
                               }
                               EvalOptions options = ev.options();
                               options.allow_fs = false;  // no recursive file reads from a template
                               Evaluator inner(path, options);
                               inner.SetRootScope(*vars);
                               absl::StatusOr<Json> out = inner.Evaluate(**tmpl);
                               if (!out.ok()) {
                                 return absl::FailedPreconditionError(out.status().message());
                               }
                               std::string s;
                               if (!ToHclString(*out, s)) {
                                 return Bad("the template does not produce a string");
                               }
                               return Json(s);
                             }},
  };
  return *table;
}

}  // namespace

absl::StatusOr<Json> CallFunction(Evaluator& evaluator, const std::string& name,
                                  const std::vector<Json>& args) {
  const auto& table = Functions();
  auto it = table.find(name);
  if (it == table.end()) {
    return absl::NotFoundError(name);
  }
  return it->second(evaluator, args);
}

}  // namespace drover::jobspec
