// String functions: upper, lower, format, join, split, replace, trim*, substr, ...
#include <algorithm>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#include "jobspec/functions_internal.h"

namespace drover::jobspec::internal {

namespace {

absl::StatusOr<Json> Format(const Args& a) {
  if (a.empty()) {
    return Bad("at least 1 argument required");
  }
  JOBSPEC_ASSIGN_OR_RETURN(fmt, Str(a[0], 0));
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
      width = std::min(width * 10 + (fmt[i++] - '0'), 100000);
    }
    int precision = -1;
    if (i < fmt.size() && fmt[i] == '.') {
      precision = 0;
      ++i;
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
        precision = std::min(precision * 10 + (fmt[i++] - '0'), 100000);
      }
    }
    if (i >= fmt.size()) {
      return Bad("format string ends in an incomplete verb");
    }
    if (width > 1000 || precision > 1000) {
      return Bad("widths and precisions above 1000 are not supported");
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
        JOBSPEC_ASSIGN_OR_RETURN(n, Int(v, next - 1));
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
        JOBSPEC_ASSIGN_OR_RETURN(n, Num(v, next - 1));
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
    if (absl::Status size = CheckResultSize(out.size()); !size.ok()) {
      return size;
    }
  }
  if (next < a.size()) {
    return Bad(
        absl::StrCat("too many arguments; the format uses ", next - 1, " but got ", a.size() - 1));
  }
  return Json(out);
}

}  // namespace

void AddStringFunctions(FunctionTable& table) {
  table.insert({
      {"upper", StringFn([](const std::string& s) { return absl::AsciiStrToUpper(s); })},
      {"lower", StringFn([](const std::string& s) { return absl::AsciiStrToLower(s); })},
      {"title", StringFn([](const std::string& s) {
         std::string out = s;
         bool start = true;
         for (char& c : out) {
           // Go's strings.Title: a word starts after anything but a letter, digit or _.
           if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
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
      {"format", [](Evaluator&, const Args& a) { return Format(a); }},
      {"join",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (a.size() < 2) {
           return Bad("at least 2 arguments required");
         }
         JOBSPEC_ASSIGN_OR_RETURN(sep, Str(a[0], 0));
         std::vector<std::string> parts;
         uint64_t bytes = 0;
         for (size_t i = 1; i < a.size(); ++i) {
           JOBSPEC_ASSIGN_OR_RETURN(list, List(a[i], i));
           for (const Json& v : *list) {
             JOBSPEC_ASSIGN_OR_RETURN(s, Str(v, i));
             bytes += s.size() + sep.size();
             if (absl::Status size = CheckResultSize(bytes); !size.ok()) {
               return size;
             }
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
         JOBSPEC_ASSIGN_OR_RETURN(sep, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[1], 1));
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
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(from, Str(a[1], 1));
         JOBSPEC_ASSIGN_OR_RETURN(to, Str(a[2], 2));
         if (from.size() >= 2 && from.front() == '/' && from.back() == '/') {
           JOBSPEC_ASSIGN_OR_RETURN(replaced, RegexReplace(s, from.substr(1, from.size() - 2), to));
           return Json(std::move(replaced));
         }
         if (from.empty()) {
           return Json(s);
         }
         uint64_t count = 0;
         for (size_t at = s.find(from); at != std::string::npos;
              at = s.find(from, at + from.size())) {
           ++count;
         }
         if (absl::Status size = CheckResultSize(s.size() + count * to.size()); !size.ok()) {
           return size;
         }
         return Json(absl::StrReplaceAll(s, {{from, to}}));
       }},
      {"trim",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(cut, Str(a[1], 1));
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
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(p, Str(a[1], 1));
         return Json(std::string(absl::StripPrefix(s, p)));
       }},
      {"trimsuffix",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(p, Str(a[1], 1));
         return Json(std::string(absl::StripSuffix(s, p)));
       }},
      {"startswith",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(p, Str(a[1], 1));
         return Json(absl::StartsWith(s, p));
       }},
      {"endswith",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(p, Str(a[1], 1));
         return Json(absl::EndsWith(s, p));
       }},
      {"substr",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 3, 3); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(offset, Int(a[1], 1));
         JOBSPEC_ASSIGN_OR_RETURN(length, Int(a[2], 2));
         std::vector<std::string> chars = Chars(s);
         const auto n = static_cast<int64_t>(chars.size());
         if (offset < 0) {
           offset += n;
         }
         if (offset < 0 || offset > n) {
           return Bad("offset out of range");
         }
         const int64_t end = length < 0 || length > n - offset ? n : offset + length;
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
         JOBSPEC_ASSIGN_OR_RETURN(n, Int(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[1], 1));
         if (n < 0 || n > 1024) {
           return Bad("the indent must be between 0 and 1024");
         }
         const auto lines = static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n'));
         if (absl::Status size = CheckResultSize(s.size() + lines * static_cast<uint64_t>(n));
             !size.ok()) {
           return size;
         }
         return Json(absl::StrReplaceAll(s, {{"\n", "\n" + std::string(n, ' ')}}));
       }},
  });
}

}  // namespace drover::jobspec::internal
