// Where the pieces of a streamed body go, one at a time, as they arrive (an HTTP answer
// read piece by piece, an archive being unpacked). An error stops the stream with it.
#pragma once

#include <string>

#include "absl/status/status.h"

#include "common/asio.h"

namespace drover::common {

class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  virtual asio::awaitable<absl::Status> Write(std::string chunk) = 0;
};

}  // namespace drover::common
