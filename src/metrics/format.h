// The two answers of GET /v1/metrics: Nomad's JSON (go-metrics' DisplayMetrics shape)
// and the Prometheus text exposition format (version 0.0.4).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "metrics/registry.h"

namespace drover::metrics {

// {"Timestamp": "2026-12-02 16:44:10 +0000 UTC", "Gauges": [{"Name", "Value",
// "Labels"}], "Counters": [{"Name", "Count", "Rate", "Sum", "Min", "Max", "Mean",
// "Stddev", "Labels"}], "Samples": [...like counters], "Points": []}.
nlohmann::json ToNomadJson(const Snapshot& snapshot);

// Names with every character Prometheus does not allow made '_' ("nomad.client.x" is
// nomad_client_x); gauges as gauges, counters as counters (running totals), samples as
// summaries (_sum and _count). Label values escaped.
std::string ToPrometheus(const Snapshot& snapshot);

// The content type of ToPrometheus's answer.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace drover::metrics
