#include "metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace drover::metrics {

void Aggregate::Add(double v) {
  if (count == 0 || v < min)
    min = v;
  if (count == 0 || v > max)
    max = v;
  ++count;
  sum += v;
  sum_sq += v * v;
}

double Aggregate::Stddev() const {
  if (count < 2)
    return 0;
  const double n = static_cast<double>(count);
  const double variance = (sum_sq - sum * sum / n) / (n - 1);
  return variance > 0 ? std::sqrt(variance) : 0;
}

void GaugeSink::Set(std::string name, double value, Labels labels) {
  gauges_.push_back(GaugeValue{std::move(name), std::move(labels), value});
}

Registry::Registry(const common::Clock& clock, RegistryOptions options)
    : clock_(clock), options_(std::move(options)), interval_start_(clock.Now()) {}

void Registry::RotateLocked(common::Time now) {
  if (options_.interval <= common::Duration::zero() || now < interval_start_ + options_.interval)
    return;
  const auto passed = (now - interval_start_) / options_.interval;
  for (auto* series : {&counters_, &samples_}) {
    for (auto& [key, s] : *series) {
      // More than one interval went by: the one before now saw nothing.
      s.previous = passed == 1 ? s.current : Aggregate{};
      s.current = Aggregate{};
    }
  }
  interval_start_ += passed * options_.interval;
  rotated_ = true;
}

Registry::Series& Registry::SeriesLocked(std::map<Key, Series>& in, std::string_view name,
                                         const Labels& labels) {
  return in[Key(std::string(name), labels)];
}

void Registry::IncrCounter(std::string_view name, double delta, const Labels& labels) {
  std::lock_guard lock(mu_);
  RotateLocked(clock_.Now());
  Series& s = SeriesLocked(counters_, name, labels);
  s.current.Add(delta);
  s.total.Add(delta);
}

void Registry::SetCounterTotal(std::string_view name, double total, const Labels& labels) {
  std::lock_guard lock(mu_);
  RotateLocked(clock_.Now());
  Series& s = SeriesLocked(counters_, name, labels);
  if (total > s.last_total) {
    s.current.Add(total - s.last_total);
    s.total.Add(total - s.last_total);
  }
  s.last_total = total;
}

void Registry::AddSample(std::string_view name, double value, const Labels& labels) {
  std::lock_guard lock(mu_);
  RotateLocked(clock_.Now());
  Series& s = SeriesLocked(samples_, name, labels);
  s.current.Add(value);
  s.total.Add(value);
}

int Registry::AddCollector(Collector collector) {
  std::lock_guard lock(mu_);
  const int id = next_collector_++;
  collectors_[id] = std::move(collector);
  return id;
}

void Registry::RemoveCollector(int id) {
  std::lock_guard lock(mu_);
  collectors_.erase(id);
}

Snapshot Registry::Collect() {
  std::vector<Collector> collectors;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, c] : collectors_)
      collectors.push_back(c);
  }
  // Outside the lock: a collector may record counters (SetCounterTotal).
  GaugeSink sink;
  for (const Collector& c : collectors)
    c(sink);
  Snapshot out;
  out.timestamp = clock_.Now();
  out.interval = options_.interval;
  out.gauges = std::move(sink.gauges_);
  if (!options_.hostname.empty()) {
    for (GaugeValue& g : out.gauges)
      g.labels.emplace("host", options_.hostname);
  }
  std::sort(out.gauges.begin(), out.gauges.end(), [](const GaugeValue& a, const GaugeValue& b) {
    return std::tie(a.name, a.labels) < std::tie(b.name, b.labels);
  });
  std::lock_guard lock(mu_);
  RotateLocked(out.timestamp);
  const auto copy = [this](const std::map<Key, Series>& from, std::vector<SampledValue>& to) {
    for (const auto& [key, s] : from)
      to.push_back(SampledValue{key.first, key.second, rotated_ ? s.previous : s.current, s.total});
  };
  copy(counters_, out.counters);
  copy(samples_, out.samples);
  return out;
}

}  // namespace drover::metrics
