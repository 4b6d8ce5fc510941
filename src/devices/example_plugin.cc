#include "devices/example_plugin.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "absl/strings/str_join.h"

#include "common/beneath.h"

namespace drover::devices {

namespace fs = std::filesystem;

namespace {

constexpr uintmax_t kMaxFileBytes = 64 * 1024;
// Device files one directory may hold.
constexpr size_t kMaxDeviceFiles = 4096;

struct DeviceFile {
  std::string id;
  std::string path;
  std::string vendor, type, name;
  std::map<std::string, model::Attribute> attributes;
  bool healthy = true;
  std::string health_description;
  std::string pci_bus_id;
  std::vector<std::pair<std::string, model::StatValue>> stats;  // file order
  std::string summary;
};

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"')
    s = s.substr(1, s.size() - 2);
  return std::string(s);
}

// Parses the device file `name` of the open directory `dir`. Only a regular file is
// read (a symlink could expose any host file to a task; a FIFO would block), and never
// more than kMaxFileBytes, however it grows while being read.
absl::StatusOr<DeviceFile> ParseFile(int dir, const fs::path& path) {
  DeviceFile f;
  f.id = path.filename().string();
  f.path = path.string();
  struct stat st {};
  auto fd = common::OpenRegularBeneath(dir, f.id, &st, common::Links::kRefuse);
  if (!fd.ok()) {
    return absl::UnavailableError("cannot read device file " + f.path + ": " +
                                  std::string(fd.status().message()));
  }
  if (static_cast<uintmax_t>(st.st_size) > kMaxFileBytes) {
    return absl::InvalidArgumentError("device file " + f.path + " is larger than " +
                                      std::to_string(kMaxFileBytes) + " bytes");
  }
  auto text = common::ReadAt(fd->get(), 0, kMaxFileBytes + 1);
  if (!text.ok())
    return absl::UnavailableError("cannot read device file " + f.path);
  if (text->size() > kMaxFileBytes) {
    return absl::InvalidArgumentError("device file " + f.path + " is larger than " +
                                      std::to_string(kMaxFileBytes) + " bytes");
  }
  std::istringstream in(*text);
  std::string line;
  int line_no = 0;
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(f.path + ":" + std::to_string(line_no) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string::npos)
      line.resize(hash);
    const std::string trimmed = Trim(line);
    if (trimmed.empty())
      continue;
    const size_t eq = trimmed.find('=');
    if (eq == std::string::npos)
      return error("expected \"key = value\"");
    const std::string key = Trim(std::string_view(trimmed).substr(0, eq));
    const std::string value = Trim(std::string_view(trimmed).substr(eq + 1));
    if (key == "vendor") {
      f.vendor = value;
    } else if (key == "type") {
      f.type = value;
    } else if (key == "name") {
      f.name = value;
    } else if (key == "healthy") {
      if (value != "true" && value != "false")
        return error("healthy must be true or false, not \"" + value + "\"");
      f.healthy = value == "true";
    } else if (key == "health_description") {
      f.health_description = value;
    } else if (key == "pci_bus_id") {
      f.pci_bus_id = value;
    } else if (key == "summary") {
      f.summary = value;
    } else if (key.rfind("attr.", 0) == 0 && key.size() > 5) {
      f.attributes[key.substr(5)] = model::ParseAttribute(value);
    } else if (key.rfind("stat.", 0) == 0 && key.size() > 5) {
      f.stats.emplace_back(key.substr(5), ParseStatValue(value));
    } else {
      return error("unknown key \"" + key + "\"");
    }
  }
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{"vendor", &f.vendor},
        {"type", &f.type},
        {"name", &f.name}}) {
    if (value->empty())
      return absl::InvalidArgumentError(f.path + ": missing \"" + field + "\"");
  }
  if (!f.summary.empty()) {
    const bool known = std::any_of(f.stats.begin(), f.stats.end(),
                                   [&](const auto& s) { return s.first == f.summary; });
    if (!known)
      return absl::InvalidArgumentError(f.path + ": summary names unknown stat \"" + f.summary +
                                        "\"");
  }
  return f;
}

absl::StatusOr<std::vector<DeviceFile>> ReadDir(const std::string& dir) {
  common::UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    return absl::UnavailableError("cannot read device directory " + dir + ": " +
                                  std::strerror(errno));
  }
  auto entries = common::ReadDirAt(fd.get(), kMaxDeviceFiles);
  if (!entries.ok()) {
    return absl::UnavailableError("cannot read device directory " + dir + ": " +
                                  std::string(entries.status().message()));
  }
  std::vector<std::string> names;
  for (const common::DirEntry& e : *entries) {
    // Regular files only, not symlinks: a link could expose any host file to a task.
    if (!e.name.empty() && e.name[0] != '.' && S_ISREG(e.st.st_mode))
      names.push_back(e.name);
  }
  std::sort(names.begin(), names.end());
  std::vector<DeviceFile> files;
  for (const std::string& name : names) {
    auto f = ParseFile(fd.get(), fs::path(dir) / name);
    struct stat st {};
    if (!f.ok() && fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;  // removed since the listing: the device is gone, not malformed
    if (!f.ok())
      return f.status();
    files.push_back(std::move(*f));
  }
  return files;
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

model::StatValue ParseStatValue(std::string_view text) {
  model::StatValue v;
  const std::string s = Trim(text);
  if (s == "true" || s == "false") {
    v.bool_val = s == "true";
    return v;
  }
  // "<num>[/<num>] [unit]"
  size_t i = 0;
  auto number = [&](std::optional<double>& out) {
    const size_t start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                            (i == start && s[i] == '-')))
      ++i;
    if (i == start)
      return false;
    double d = 0;
    auto [end, ec] = std::from_chars(s.data() + start, s.data() + i, d);
    if (ec != std::errc() || end != s.data() + i)
      return false;
    out = d;
    return true;
  };
  std::optional<double> num, den;
  bool ok = number(num);
  if (ok && i < s.size() && s[i] == '/') {
    ++i;
    ok = number(den);
  }
  // The number must end the text or be followed by a space or '%' ("35 %", "35%").
  if (!ok || (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '%')) {
    v.string_val = s;
    return v;
  }
  const std::string unit = Trim(std::string_view(s).substr(i));
  v.unit = unit;
  const bool integral = *num == static_cast<double>(static_cast<int64_t>(*num)) &&
                        (!den || *den == static_cast<double>(static_cast<int64_t>(*den)));
  if (integral && s.find('.') == std::string::npos) {
    v.int_numerator = static_cast<int64_t>(*num);
    if (den)
      v.int_denominator = static_cast<int64_t>(*den);
  } else {
    v.float_numerator = num;
    v.float_denominator = den;
  }
  return v;
}

absl::StatusOr<std::vector<model::NodeDeviceResource>> ExamplePlugin::Fingerprint() {
  auto files = ReadDir(config_.dir);
  if (!files.ok())
    return files.status();
  std::vector<model::NodeDeviceResource> groups;
  for (DeviceFile& f : *files) {
    model::DeviceInstance d{.id = f.id,
                            .healthy = f.healthy,
                            .health_description = f.health_description,
                            .locality = std::nullopt};
    if (!f.pci_bus_id.empty())
      d.locality = model::DeviceLocality{.pci_bus_id = f.pci_bus_id};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const model::NodeDeviceResource& g) {
      return g.vendor == f.vendor && g.type == f.type && g.name == f.name &&
             g.attributes == f.attributes;
    });
    if (it == groups.end()) {
      groups.push_back(
          {.vendor = f.vendor, .type = f.type, .name = f.name, .attributes = f.attributes});
      it = groups.end() - 1;
    }
    it->instances.push_back(std::move(d));
  }
  return groups;
}

absl::StatusOr<ContainerReservation> ExamplePlugin::Reserve(const std::vector<std::string>& ids) {
  if (ids.empty())
    return absl::InvalidArgumentError("no device IDs to reserve");
  ContainerReservation r;
  for (const std::string& id : ids) {
    const fs::path path = fs::path(config_.dir) / id;
    std::error_code ec;
    if (id.find('/') != std::string::npos || id.empty() || id[0] == '.' ||
        !fs::is_regular_file(fs::symlink_status(path, ec))) {
      return absl::NotFoundError("unknown device \"" + id + "\"");
    }
    r.mounts.push_back(
        {.task_path = "/dev-files/" + id, .host_path = path.string(), .read_only = true});
  }
  r.envs[config_.env_var] = absl::StrJoin(ids, ",");
  return r;
}

absl::StatusOr<std::vector<model::DeviceGroupStats>> ExamplePlugin::Stats() {
  auto files = ReadDir(config_.dir);
  if (!files.ok())
    return files.status();
  const int64_t now = NowNanos();
  std::vector<model::DeviceGroupStats> groups;
  for (DeviceFile& f : *files) {
    model::DeviceStats s;
    s.timestamp = now;
    for (auto& [k, v] : f.stats) {
      if (k == f.summary || (f.summary.empty() && s.stats.attributes.empty()))
        s.summary = v;
      s.stats.attributes[k] = std::move(v);
    }
    auto it = std::find_if(groups.begin(), groups.end(), [&](const model::DeviceGroupStats& g) {
      return g.vendor == f.vendor && g.type == f.type && g.name == f.name;
    });
    if (it == groups.end()) {
      groups.push_back({.vendor = f.vendor, .type = f.type, .name = f.name});
      it = groups.end() - 1;
    }
    it->instance_stats[f.id] = std::move(s);
  }
  return groups;
}

}  // namespace drover::devices
