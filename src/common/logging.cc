#include "common/logging.h"

#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace drover::common {

void InitLogging(std::string_view level) {
  auto logger = spdlog::stderr_color_mt("drover");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z [%^%l%$] %v");
  logger->set_level(spdlog::level::from_str(std::string(level)));
  spdlog::set_default_logger(logger);
}

}  // namespace drover::common
