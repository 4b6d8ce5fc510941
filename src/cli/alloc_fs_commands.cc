// drover alloc logs / drover alloc fs: a task's output and the allocation's files,
// through the client file-system API (Nomad's command/alloc_logs.go and alloc_fs.go).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/alloc_fetch.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::cli {

namespace {

// The last `n` lines of `text` (a trailing newline does not start another line).
std::string LastLines(const std::string& text, int64_t n) {
  if (n <= 0)
    return "";
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n')
    --pos;
  while (n > 0 && pos > 0) {
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
    --n;
  }
  return text.substr(pos == 0 ? 0 : pos + 1);
}

// The task to show: the one named, or the group's only task (Nomad's rule).
std::optional<std::string> PickTask(const model::Allocation& alloc, const std::string& task,
                                    Ui& ui) {
  if (!task.empty())
    return task;
  const model::TaskGroup* group = alloc.Group();
  if (group != nullptr && group->tasks.size() == 1)
    return group->tasks[0].name;
  std::vector<std::string> names;
  if (group != nullptr) {
    for (const auto& t : group->tasks)
      names.push_back(t.name);
  }
  ui.Error(absl::StrCat("Allocation \"", ShortId(alloc.id), "\" is running the following tasks:\n",
                        FormatList(names), "\n\nPlease specify the task."));
  return std::nullopt;
}

}  // namespace

int RunAllocLogs(const AllocLogsOptions& options, HttpClient& client, Ui& ui) {
  if (options.lines < -1 || options.bytes < -1) {
    ui.Error("-n and -c must not be negative");
    return kExitError;
  }
  std::optional<model::Allocation> alloc =
      FetchAllocWithTask(client, ui, options.id, options.verbose, options.task);
  if (!alloc)
    return kExitError;
  std::optional<std::string> task = PickTask(*alloc, options.task, ui);
  if (!task)
    return kExitError;
  std::string query = absl::StrCat("?task=", QueryEscape(*task),
                                   "&type=", options.stderr_ ? "stderr" : "stdout", "&plain=true");
  if (options.bytes >= 0)
    absl::StrAppend(&query, "&origin=end&offset=", options.bytes);
  // -tail alone shows the last 10 lines, as Nomad does; -n N the last N.
  const int64_t lines = options.lines >= 0 ? options.lines : (options.tail ? 10 : -1);
  if (options.follow) {
    if (lines >= 0 && options.bytes < 0) {
      // The last lines as of now, then everything after them as it comes.
      absl::StatusOr<HttpResponse> now =
          client.Do("GET", absl::StrCat("/v1/client/fs/logs/", PathEscape(alloc->id), query));
      if (!now.ok()) {
        ui.Error(absl::StrCat("Error reading file: ", now.status().message()));
        return kExitError;
      }
      ui.Raw(LastLines(now->body, lines));
      absl::StrAppend(&query, "&origin=start&offset=", now->body.size());
    }
    absl::StrAppend(&query, "&follow=true");
    absl::Status s =
        client.Stream(absl::StrCat("/v1/client/fs/logs/", PathEscape(alloc->id), query),
                      [&ui](std::string_view data) {
                        ui.Raw(data);
                        return true;
                      });
    if (!s.ok()) {
      ui.Error(absl::StrCat("Error reading file: ", s.message()));
      return kExitError;
    }
    return kExitOk;
  }
  absl::StatusOr<HttpResponse> r =
      client.Do("GET", absl::StrCat("/v1/client/fs/logs/", PathEscape(alloc->id), query));
  if (!r.ok()) {
    ui.Error(absl::StrCat("Error reading file: ", r.status().message()));
    return kExitError;
  }
  std::string text = std::move(r->body);
  if (lines >= 0 && options.bytes < 0)
    text = LastLines(text, lines);
  ui.Raw(text);
  return kExitOk;
}

int RunAllocFs(const AllocFsOptions& options, HttpClient& client, Ui& ui) {
  std::optional<model::Allocation> alloc =
      FetchAllocWithTask(client, ui, options.id, options.verbose, "");
  if (!alloc)
    return kExitError;
  const std::string path = options.path.empty() ? "/" : options.path;
  const std::string id = PathEscape(alloc->id);
  absl::StatusOr<codec::Json> stat =
      GetJson(client, absl::StrCat("/v1/client/fs/stat/", id, "?path=", QueryEscape(path)));
  if (!stat.ok()) {
    ui.Error(absl::StrCat("Error getting file info: ", stat.status().message()));
    return kExitError;
  }
  auto row = [](const codec::Json& f) {
    std::string name = f.value("Name", "");
    if (f.value("IsDir", false))
      name += "/";
    return absl::StrCat(f.value("FileMode", ""), "|", f.value("Size", int64_t{0}), "|",
                        f.value("ModTime", ""), "|", name);
  };
  const std::string header = "Mode|Size|Modified Time|Name";
  if (options.stat) {
    ui.Output(FormatList({header, row(*stat)}));
    return kExitOk;
  }
  if (stat->value("IsDir", false)) {
    absl::StatusOr<codec::Json> list =
        GetJson(client, absl::StrCat("/v1/client/fs/ls/", id, "?path=", QueryEscape(path)));
    if (!list.ok()) {
      ui.Error(absl::StrCat("Error listing alloc dir: ", list.status().message()));
      return kExitError;
    }
    std::vector<std::string> rows = {header};
    for (const auto& f : *list)
      rows.push_back(row(f));
    ui.Output(FormatList(rows));
    return kExitOk;
  }
  absl::StatusOr<HttpResponse> r =
      client.Do("GET", absl::StrCat("/v1/client/fs/cat/", id, "?path=", QueryEscape(path)));
  if (!r.ok()) {
    ui.Error(absl::StrCat("Error reading file: ", r.status().message()));
    return kExitError;
  }
  ui.Raw(r->body);
  return kExitOk;
}

}  // namespace drover::cli
