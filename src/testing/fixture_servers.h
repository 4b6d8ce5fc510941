// The server processes test fixtures started with SpawnServer (etcd, dockerd, a
// registry) and have not reaped yet. A test's sweep of its leftover children (the
// integration tests' AgentProcess) leaves these to their fixtures, which stop them in
// order: killing dockerd under its fixture would leave the fixture waiting for a child
// that is gone, and the daemon without its clean shutdown.
#pragma once

#include <sys/types.h>

namespace drover::testing {

bool IsFixtureServer(pid_t pid);
// Called by a fixture once it has reaped its server.
void ForgetFixtureServer(pid_t pid);

}  // namespace drover::testing
