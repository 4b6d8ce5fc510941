// libFuzzer target for the supervisor protocol (protocol.h): any input is a byte stream
// from a peer on the supervisor's socket. It is split into frames (length, size and
// depth limits), and every frame is decoded as each request the supervisor serves
// would decode it (spawn specs, task infos), then encoded again. A crash, leak,
// undefined behaviour or hang is a finding. `make test` runs it briefly, `make fuzz`
// longer (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "supervisor/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  drover::supervisor::FrameDecoder decoder;
  // Fed in two pieces, as a socket may deliver them.
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  decoder.Append(bytes.substr(0, size / 2));
  for (int pass = 0; pass < 2; ++pass) {
    for (;;) {
      auto msg = decoder.Next();
      if (!msg.ok() || !*msg)
        break;
      const drover::supervisor::Json& j = **msg;
      if (auto spec = drover::supervisor::SpawnSpecFromJson(j); spec.ok())
        (void)drover::supervisor::EncodeFrame(drover::supervisor::ToJson(*spec));
      if (auto info = drover::supervisor::TaskInfoFromJson(j); info.ok())
        (void)drover::supervisor::EncodeFrame(drover::supervisor::ToJson(*info));
      (void)j.dump();
    }
    decoder.Append(bytes.substr(size / 2));
  }
  return 0;
}
