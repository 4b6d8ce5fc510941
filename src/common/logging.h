// Process-wide logging (spdlog underneath). The logger sink is one of the two pieces of
// process-wide state allowed (the other is signal handling), set once in main.
#pragma once

#include <string_view>

#include <spdlog/spdlog.h>

namespace drover::common {

// level: trace, debug, info, warn, error, off. Logs go to stderr.
void InitLogging(std::string_view level);

}  // namespace drover::common

#define DROVER_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define DROVER_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define DROVER_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define DROVER_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
