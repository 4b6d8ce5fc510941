// Collection and conversion functions: length, concat, keys, lookup, merge, range, ...
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"

#include "jobspec/functions_internal.h"

namespace drover::jobspec::internal {

void AddCollectionFunctions(FunctionTable& table) {
  table.insert({
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
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         Json out = Json::array();
         for (size_t i = 0; i < a.size(); ++i) {
           JOBSPEC_ASSIGN_OR_RETURN(list, List(a[i], i));
           out.insert(out.end(), list->begin(), list->end());
         }
         return out;
       }},
      {"contains",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         return Json(std::find(list->begin(), list->end(), a[1]) != list->end());
       }},
      {"keys",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(m, Map(a[0], 0));
         Json out = Json::array();
         for (auto it = m->begin(); it != m->end(); ++it) {
           out.push_back(it.key());
         }
         return out;
       }},
      {"values",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(m, Map(a[0], 0));
         Json out = Json::array();
         for (const Json& v : *m) {
           out.push_back(v);
         }
         return out;
       }},
      {"lookup",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 3); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(m, Map(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(key, Str(a[1], 1));
         if (auto it = m->find(key); it != m->end()) {
           return *it;
         }
         if (a.size() == 3) {
           return a[2];
         }
         return Bad(absl::StrCat("the given key \"", key, "\" is not in the map"));
       }},
      {"merge",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         Json out = Json::object();
         for (size_t i = 0; i < a.size(); ++i) {
           if (a[i].is_null()) {
             continue;
           }
           JOBSPEC_ASSIGN_OR_RETURN(m, Map(a[i], i));
           for (auto it = m->begin(); it != m->end(); ++it) {
             out[it.key()] = it.value();
           }
         }
         return out;
       }},
      {"element",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(i, Int(a[1], 1));
         if (list->empty()) {
           return Bad("cannot use element function with an empty list");
         }
         if (i < 0) {
           return Bad("cannot use element function with a negative index");
         }
         return (*list)[static_cast<size_t>(i) % list->size()];
       }},
      {"index",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         auto it = std::find(list->begin(), list->end(), a[1]);
         if (it == list->end()) {
           return Bad("item not found");
         }
         return Json(it - list->begin());
       }},
      {"range",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 3); !s.ok()) {
           return s;
         }
         double start = 0;
         double limit = 0;
         double step = 1;
         JOBSPEC_ASSIGN_OR_RETURN(first, Num(a[0], 0));
         if (a.size() == 1) {
           limit = first.get<double>();
         } else {
           JOBSPEC_ASSIGN_OR_RETURN(second, Num(a[1], 1));
           start = first.get<double>();
           limit = second.get<double>();
           if (a.size() == 3) {
             JOBSPEC_ASSIGN_OR_RETURN(third, Num(a[2], 2));
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
         const double count = std::ceil((limit - start) / step);
         if (!std::isfinite(count) || count > 1024) {
           return Bad("more than 1024 values would be produced");
         }
         // By index: start + i * step, so a step too small to change a huge start
         // cannot loop forever.
         Json out = Json::array();
         for (int i = 0; i < static_cast<int>(count); ++i) {
           const double v = start + i * step;
           if (v == std::floor(v) && std::fabs(v) < 9e15) {
             out.push_back(static_cast<int64_t>(v));
           } else {
             out.push_back(v);
           }
         }
         return out;
       }},
      {"distinct",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         Json out = Json::array();
         std::set<Json> seen;  // first occurrences, in order, in O(n log n)
         for (const Json& v : *list) {
           if (seen.insert(v).second) {
             out.push_back(v);
           }
         }
         return out;
       }},
      {"flatten",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         Json out = Json::array();
         std::function<void(const Json&)> add = [&](const Json& v) {
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
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         for (const Json& v : a) {
           if (!v.is_null() && v != "") {
             return v;
           }
         }
         return Bad("no non-null, non-empty-string arguments");
       }},
      {"coalescelist",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         for (size_t i = 0; i < a.size(); ++i) {
           JOBSPEC_ASSIGN_OR_RETURN(list, List(a[i], i));
           if (!list->empty()) {
             return *list;
           }
         }
         return Bad("no non-empty list arguments");
       }},
      {"compact",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         Json out = Json::array();
         for (const Json& v : *list) {
           if (!v.is_null() && v != "") {
             out.push_back(v);
           }
         }
         return out;
       }},
      {"slice",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 3, 3); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(from, Int(a[1], 1));
         JOBSPEC_ASSIGN_OR_RETURN(to, Int(a[2], 2));
         if (from < 0 || to < from || static_cast<size_t>(to) > list->size()) {
           return Bad("the indexes must satisfy 0 <= start <= end <= length");
         }
         return Json(Json::array_t(list->begin() + from, list->begin() + to));
       }},
      {"reverse",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         return Json(Json::array_t(list->rbegin(), list->rend()));
       }},
      {"sort",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         std::vector<std::string> items;
         for (const Json& v : *list) {
           JOBSPEC_ASSIGN_OR_RETURN(s, Str(v, 0));
           items.push_back(s);
         }
         std::sort(items.begin(), items.end());
         return Json(items);
       }},
      {"zipmap",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(keys, List(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(values, List(a[1], 1));
         if (keys->size() != values->size()) {
           return Bad("the two lists must have the same length");
         }
         Json out = Json::object();
         for (size_t i = 0; i < keys->size(); ++i) {
           JOBSPEC_ASSIGN_OR_RETURN(k, Str((*keys)[i], 0));
           out[k] = (*values)[i];
         }
         return out;
       }},
      {"chunklist",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(size, Int(a[1], 1));
         if (size < 0) {
           return Bad("the size must not be negative");
         }
         Json out = Json::array();
         if (size == 0) {
           out.push_back(*list);
           return out;
         }
         for (size_t i = 0; i < list->size(); i += size) {
           const size_t end = std::min(list->size(), i + static_cast<size_t>(size));
           out.push_back(Json::array_t(list->begin() + i, list->begin() + end));
         }
         return out;
       }},
      {"tolist",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         return *list;
       }},
      {"toset",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(list, List(a[0], 0));
         std::set<Json> unique(list->begin(), list->end());
         return Json(Json::array_t(unique.begin(), unique.end()));
       }},
      {"tomap",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(m, Map(a[0], 0));
         return *m;
       }},
      {"tostring",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         if (a[0].is_null()) {
           return a[0];
         }
         JOBSPEC_ASSIGN_OR_RETURN(s, Str(a[0], 0));
         return Json(s);
       }},
      {"tonumber",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         if (a[0].is_null()) {
           return a[0];
         }
         return Num(a[0], 0);
       }},
      {"tobool",
       [](Evaluator&, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         bool b = false;
         if (a[0].is_null()) {
           return a[0];
         }
         if (!ToHclBool(a[0], b)) {
           return Bad(absl::StrCat("bool required, got ", TypeName(a[0])));
         }
         return Json(b);
       }},
  });
}

}  // namespace drover::jobspec::internal
