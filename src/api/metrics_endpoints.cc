// GET /v1/metrics: the agent's metrics in Nomad's JSON, or with ?format=prometheus in
// the Prometheus text format when telemetry.prometheus_metrics is on (docs/metrics.md).
#include <memory>
#include <string>

#include "api/api_context.h"
#include "metrics/format.h"
#include "metrics/registry.h"

namespace drover::api {

void RegisterMetricsRoutes(Router& router, ApiContext& ctx) {
  if (ctx.metrics == nullptr)
    return;
  router.Add({"GET"}, "/v1/metrics", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::string format;
    if (auto it = req.query.find("format"); it != req.query.end())
      format = it->second;
    if (!format.empty() && format != "prometheus") {
      co_return Response::Error(400,
                                "Unsupported metrics format \"" + format.substr(0, 64) +
                                    "\": Drover answers JSON (no format) and format=prometheus");
    }
    if (format == "prometheus" && !ctx.prometheus_metrics)
      co_return Response::Error(400, "Prometheus is not enabled");
    // Collected here, on the control loop (collectors read the client and the server);
    // encoded on the pool, as a node with many allocations has many series.
    auto snapshot = std::make_shared<const metrics::Snapshot>(ctx.metrics->Collect());
    Response res;
    if (format == "prometheus") {
      auto work = [snapshot] { return metrics::ToPrometheus(*snapshot); };
      res.body = co_await OffloadRequestWork(ctx, std::move(work));
      res.content_type = metrics::kPrometheusContentType;
    } else {
      auto work = [snapshot] { return metrics::ToNomadJson(*snapshot).dump(); };
      res.body = co_await OffloadRequestWork(ctx, std::move(work));
    }
    co_return res;
  });
}

}  // namespace drover::api
