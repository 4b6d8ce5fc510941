// Shared by the docker tests: the test image, a root file system of Debian's
// busybox-static (never pulled from the internet), imported as drover-test/busybox:1.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "drivers/docker/engine.h"
#include "testing/await.h"
#include "testing/test_util.h"

namespace drover::drivers::docker::test {

inline constexpr char kBusybox[] = "drover-test/busybox:1";

// /bin/busybox and a few applets as a tar (made with tar(1) under `dir`).
inline std::string BusyboxTar(const testing::TempDir& dir) {
  const std::filesystem::path root = dir.path() / "rootfs";
  std::filesystem::create_directories(root / "bin");
  std::filesystem::copy_file("/usr/bin/busybox", root / "bin" / "busybox");
  for (const char* applet : {"sh", "echo", "sleep", "cat", "ls"})
    std::filesystem::create_symlink("busybox", root / "bin" / applet);
  const std::string tar = (dir.path() / "rootfs.tar").string();
  const std::string cmd = "tar -C " + root.string() + " -cf " + tar + " .";
  if (std::system(cmd.c_str()) != 0)
    return "";
  return testing::ReadFile(tar);
}

// An image with an ENTRYPOINT and EXPOSE, built by the daemon from kBusybox (which must
// be there) with the Engine API's build endpoint.
inline constexpr char kEntrypoint[] = "drover-test/entrypoint:1";
inline absl::Status BuildEntrypointImage(asio::io_context& io, Engine& engine,
                                         const testing::TempDir& dir) {
  const std::filesystem::path context = dir.path() / "context";
  std::filesystem::create_directories(context);
  std::ofstream(context / "Dockerfile") << "FROM " << kBusybox
                                        << "\nENTRYPOINT [\"/bin/echo\", \"entry\"]\n"
                                           "EXPOSE 8080\n";
  const std::string tar = (dir.path() / "context.tar").string();
  const std::string cmd = "tar -C " + context.string() + " -cf " + tar + " Dockerfile";
  if (std::system(cmd.c_str()) != 0)
    return absl::InternalError("tar failed");
  return testing::Await(io, engine.BuildImage(testing::ReadFile(tar), kEntrypoint));
}

// Imports kBusybox into the daemon `engine` talks to (negotiated).
inline absl::Status ImportBusybox(asio::io_context& io, Engine& engine,
                                  const testing::TempDir& dir) {
  return testing::Await(io, engine.ImportImage(BusyboxTar(dir), "drover-test/busybox", "1"));
}

}  // namespace drover::drivers::docker::test
