#include "metrics/format.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace drover::metrics {

namespace {

nlohmann::json LabelsJson(const Labels& labels) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : labels)
    out[k] = v;
  return out;
}

nlohmann::json SampledJson(const SampledValue& s, double interval_seconds) {
  const Aggregate& a = s.interval;
  return {{"Name", s.name},
          {"Count", a.count},
          {"Rate", interval_seconds > 0 ? a.sum / interval_seconds : 0},
          {"Sum", a.sum},
          {"Min", a.min},
          {"Max", a.max},
          {"Mean", a.Mean()},
          {"Stddev", a.Stddev()},
          {"Labels", LabelsJson(s.labels)}};
}

// Go's time.Time String() in UTC, as Nomad's answer has it.
std::string GoTimestamp(common::Time t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(
      std::chrono::time_point_cast<std::chrono::system_clock::duration>(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S +0000 UTC", &tm);
  return buf;
}

std::string PromName(const std::string& name) {
  std::string out = name;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok)
      out[i] = '_';
  }
  return out.empty() ? "_" : out;
}

std::string PromLabelName(const std::string& name) {
  std::string out = PromName(name);
  for (char& c : out) {
    if (c == ':')
      c = '_';
  }
  return out;
}

std::string PromLabels(const Labels& labels) {
  std::string out;
  const auto add = [&out](const std::string& k, const std::string& v) {
    out += out.empty() ? "{" : ",";
    out += PromLabelName(k) + "=\"";
    for (char c : v) {
      if (c == '\\')
        out += "\\\\";
      else if (c == '"')
        out += "\\\"";
      else if (c == '\n')
        out += "\\n";
      else
        out += c;
    }
    out += "\"";
  };
  for (const auto& [k, v] : labels)
    add(k, v);
  return out.empty() ? "" : out + "}";
}

std::string PromValue(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// One TYPE line per family, however many label sets it has (the format requires a
// family's lines together, which the snapshot's sort order gives).
void TypeLine(std::string& out, std::string& last, const std::string& name, const char* type) {
  if (name == last)
    return;
  out += "# TYPE " + name + " " + type + "\n";
  last = name;
}

}  // namespace

nlohmann::json ToNomadJson(const Snapshot& snapshot) {
  const double interval = std::chrono::duration<double>(snapshot.interval).count();
  nlohmann::json gauges = nlohmann::json::array();
  for (const GaugeValue& g : snapshot.gauges)
    gauges.push_back({{"Name", g.name}, {"Value", g.value}, {"Labels", LabelsJson(g.labels)}});
  nlohmann::json counters = nlohmann::json::array();
  for (const SampledValue& c : snapshot.counters)
    counters.push_back(SampledJson(c, interval));
  nlohmann::json samples = nlohmann::json::array();
  for (const SampledValue& s : snapshot.samples)
    samples.push_back(SampledJson(s, interval));
  return {{"Timestamp", GoTimestamp(snapshot.timestamp)},
          {"Gauges", std::move(gauges)},
          {"Points", nlohmann::json::array()},
          {"Counters", std::move(counters)},
          {"Samples", std::move(samples)}};
}

std::string ToPrometheus(const Snapshot& snapshot) {
  std::string out;
  std::string last;
  for (const GaugeValue& g : snapshot.gauges) {
    const std::string name = PromName(g.name);
    TypeLine(out, last, name, "gauge");
    out += name + PromLabels(g.labels) + " " + PromValue(g.value) + "\n";
  }
  for (const SampledValue& c : snapshot.counters) {
    const std::string name = PromName(c.name);
    TypeLine(out, last, name, "counter");
    out += name + PromLabels(c.labels) + " " + PromValue(c.total.sum) + "\n";
  }
  for (const SampledValue& s : snapshot.samples) {
    const std::string name = PromName(s.name);
    TypeLine(out, last, name, "summary");
    out += name + "_sum" + PromLabels(s.labels) + " " + PromValue(s.total.sum) + "\n";
    out += name + "_count" + PromLabels(s.labels) + " " +
           PromValue(static_cast<double>(s.total.count)) + "\n";
  }
  return out;
}

}  // namespace drover::metrics
