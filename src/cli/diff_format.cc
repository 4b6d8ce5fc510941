#include "cli/diff_format.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include <nlohmann/json.hpp>

namespace drover::cli {
namespace {

const codec::Json& EmptyList() {
  static const codec::Json empty = codec::Json::array();
  return empty;
}

// A member that is a list (null and absent read as empty).
const codec::Json& List(const codec::Json& j, std::string_view key) {
  const codec::Json* v = JsonMember(j, key);
  return v != nullptr && v->is_array() ? *v : EmptyList();
}

std::string Marker(const std::string& type) {
  if (type == "Added")
    return "+ ";
  if (type == "Deleted")
    return "- ";
  if (type == "Edited")
    return "+/- ";
  return "";
}

std::string Spaces(size_t n) {
  return std::string(n, ' ');
}

// The widest field name and marker among a level's fields and objects, to align them.
struct Widths {
  size_t field = 0;
  size_t marker = 0;
};

Widths WidthsOf(const codec::Json& fields, const codec::Json& objects) {
  Widths w;
  for (const codec::Json& f : fields) {
    w.field = std::max(w.field, JsonString(f, "Name").size());
    w.marker = std::max(w.marker, Marker(JsonString(f, "Type")).size());
  }
  for (const codec::Json& o : objects)
    w.marker = std::max(w.marker, Marker(JsonString(o, "Type")).size());
  return w;
}

// WidthsOf, with the markers of the items (groups, tasks) listed below them too.
Widths WidthsWith(const codec::Json& fields, const codec::Json& objects, const codec::Json& items) {
  Widths w = WidthsOf(fields, objects);
  for (const codec::Json& item : items)
    w.marker = std::max(w.marker, Marker(JsonString(item, "Type")).size());
  return w;
}

std::string Annotations(const codec::Json& j) {
  std::vector<std::string> notes = JsonStrings(j, "Annotations");
  return notes.empty() ? "" : absl::StrCat(" (", absl::StrJoin(notes, ", "), ")");
}

std::string FormatField(const codec::Json& f, size_t start, size_t key_pad, size_t value_pad) {
  const std::string type = JsonString(f, "Type");
  std::string out = absl::StrCat(Spaces(start), Marker(type), Spaces(key_pad),
                                 JsonString(f, "Name"), ": ", Spaces(value_pad));
  if (type == "Deleted")
    absl::StrAppend(&out, Quote(JsonString(f, "Old")));
  else if (type == "Edited")
    absl::StrAppend(&out, Quote(JsonString(f, "Old")), " => ", Quote(JsonString(f, "New")));
  else
    absl::StrAppend(&out, Quote(JsonString(f, "New")));
  return out + Annotations(f);
}

std::string FieldsAndObjects(const codec::Json& fields, const codec::Json& objects, size_t start,
                             const Widths& w);

std::string FormatObject(const codec::Json& o, size_t start, size_t key_pad) {
  const std::string marker = Marker(JsonString(o, "Type"));
  std::string out =
      absl::StrCat(Spaces(start), marker, Spaces(key_pad), JsonString(o, "Name"), " {\n");
  const codec::Json& fields = List(o, "Fields");
  const codec::Json& objects = List(o, "Objects");
  out += FieldsAndObjects(fields, objects, start + key_pad + 2, WidthsOf(fields, objects));
  return absl::StrCat(out, "\n", Spaces(start + marker.size() + key_pad), "}");
}

std::string FieldsAndObjects(const codec::Json& fields, const codec::Json& objects, size_t start,
                             const Widths& w) {
  std::vector<std::string> lines;
  for (const codec::Json& f : fields) {
    const size_t key_pad = w.marker - Marker(JsonString(f, "Type")).size();
    lines.push_back(FormatField(f, start, key_pad, w.field - JsonString(f, "Name").size()));
  }
  for (const codec::Json& o : objects)
    lines.push_back(FormatObject(o, start, w.marker - Marker(JsonString(o, "Type")).size()));
  return absl::StrJoin(lines, "\n");
}

std::string FormatTask(const codec::Json& task, size_t start, size_t task_pad, bool verbose) {
  const std::string type = JsonString(task, "Type");
  std::string out = absl::StrCat(Spaces(start), Marker(type), Spaces(task_pad),
                                 "Task: ", Quote(JsonString(task, "Name")), Annotations(task));
  if (type == "None" || type.empty() || ((type == "Added" || type == "Deleted") && !verbose))
    return out;
  const codec::Json& fields = List(task, "Fields");
  const codec::Json& objects = List(task, "Objects");
  return absl::StrCat(out, "\n",
                      FieldsAndObjects(fields, objects, start + 2, WidthsOf(fields, objects)));
}

// " (2 create, 1 in-place update)", update types in name order.
std::string Updates(const codec::Json& group) {
  const codec::Json* updates = JsonMember(group, "Updates");
  if (updates == nullptr || !updates->is_object() || updates->empty())
    return "";
  std::vector<std::string> parts;
  for (const auto& [type, count] : updates->items()) {  // sorted by name
    if (count.is_number())
      parts.push_back(absl::StrCat(count.dump(), " ", type));
  }
  return absl::StrCat(" (", absl::StrJoin(parts, ", "), ")");
}

std::string FormatGroup(const codec::Json& group, size_t group_pad, bool verbose) {
  const std::string type = JsonString(group, "Type");
  std::string out =
      absl::StrCat(Marker(type), Spaces(group_pad),
                   "Task Group: ", Quote(JsonString(group, "Name")), Updates(group), "\n");
  const codec::Json& fields = List(group, "Fields");
  const codec::Json& objects = List(group, "Objects");
  const codec::Json& tasks = List(group, "Tasks");
  const Widths w = WidthsWith(fields, objects, tasks);
  const size_t start = group_pad + 2;
  if (type == "Edited" || verbose) {
    const std::string lines = FieldsAndObjects(fields, objects, start, w);
    if (!lines.empty())
      absl::StrAppend(&out, lines, "\n");
  }
  for (const codec::Json& t : tasks) {
    const size_t pad = w.marker - Marker(JsonString(t, "Type")).size();
    absl::StrAppend(&out, FormatTask(t, start, pad, verbose), "\n");
  }
  return out;
}

}  // namespace

std::string FormatJobDiff(const codec::Json& diff, bool verbose) {
  const std::string type = JsonString(diff, "Type");
  std::string out = absl::StrCat(Marker(type), "Job: ", Quote(JsonString(diff, "ID")), "\n");
  const codec::Json& fields = List(diff, "Fields");
  const codec::Json& objects = List(diff, "Objects");
  const codec::Json& groups = List(diff, "TaskGroups");
  const Widths w = WidthsWith(fields, objects, groups);
  if (type == "Edited" || verbose) {
    const std::string lines = FieldsAndObjects(fields, objects, 0, w);
    if (!lines.empty())
      absl::StrAppend(&out, lines, "\n");
  }
  for (const codec::Json& g : groups) {
    const size_t pad = w.marker - Marker(JsonString(g, "Type")).size();
    absl::StrAppend(&out, FormatGroup(g, pad, verbose), "\n");
  }
  return out;
}

}  // namespace drover::cli
