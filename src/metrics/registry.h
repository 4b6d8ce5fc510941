// The agent's metrics (GET /v1/metrics): counters and samples recorded where things
// happen, and gauges read by collectors when someone asks.
//
// As in Nomad (go-metrics' in-memory sink), counters and samples are aggregated per
// interval (10 s by default): the JSON answer shows the last finished interval (or the
// current one while there is no other). The Prometheus answer shows running totals,
// as Prometheus counters and summaries are. Gauges are not kept: every snapshot asks
// the collectors, so a gauge of a thing that is gone is gone too.
//
// Thread-safe: counters and samples may be recorded from any thread (the state DB's
// writer records its commits). Collectors run on the thread that calls Collect (the
// agent calls it on the control loop, where the client and server live).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace drover::metrics {

using Labels = std::map<std::string, std::string>;

// Count, sum, sum of squares, min and max of what was recorded.
struct Aggregate {
  uint64_t count = 0;
  double sum = 0;
  double sum_sq = 0;
  double min = 0;
  double max = 0;

  void Add(double v);
  double Mean() const { return count == 0 ? 0 : sum / static_cast<double>(count); }
  double Stddev() const;
};

struct GaugeValue {
  std::string name;
  Labels labels;
  double value = 0;
};

struct SampledValue {
  std::string name;
  Labels labels;
  Aggregate interval;  // the interval shown (see above)
  Aggregate total;     // since the agent started
};

struct Snapshot {
  common::Time timestamp;
  common::Duration interval{};
  std::vector<GaugeValue> gauges;      // sorted by name, then labels
  std::vector<SampledValue> counters;  // sorted likewise
  std::vector<SampledValue> samples;
};

// Where collectors put gauges.
class GaugeSink {
 public:
  void Set(std::string name, double value, Labels labels = {});

 private:
  friend class Registry;
  std::vector<GaugeValue> gauges_;
};

struct RegistryOptions {
  common::Duration interval = std::chrono::seconds(10);
  // Added to every gauge as the label "host" (telemetry.disable_hostname turns it off,
  // as in Nomad, which prefers the hostname as a label).
  std::string hostname;
};

class Registry {
 public:
  explicit Registry(const common::Clock& clock, RegistryOptions options = {});
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  void IncrCounter(std::string_view name, double delta = 1, const Labels& labels = {});
  // A counter kept elsewhere as a running total (the state DB's commits): what it grew
  // by since the last call counts as one increment.
  void SetCounterTotal(std::string_view name, double total, const Labels& labels = {});
  void AddSample(std::string_view name, double value, const Labels& labels = {});

  using Collector = std::function<void(GaugeSink&)>;
  // Returns an id for RemoveCollector. The collector must stay valid until removed.
  int AddCollector(Collector collector);
  void RemoveCollector(int id);

  Snapshot Collect();

 private:
  using Key = std::pair<std::string, Labels>;
  struct Series {
    Aggregate current;
    Aggregate previous;
    Aggregate total;
    double last_total = 0;  // SetCounterTotal's last value
  };
  void RotateLocked(common::Time now);
  Series& SeriesLocked(std::map<Key, Series>& in, std::string_view name, const Labels& labels);

  const common::Clock& clock_;
  const RegistryOptions options_;
  std::mutex mu_;
  common::Time interval_start_;
  bool rotated_ = false;  // a finished interval exists
  std::map<Key, Series> counters_;
  std::map<Key, Series> samples_;
  std::map<int, Collector> collectors_;
  int next_collector_ = 1;
};

}  // namespace drover::metrics
