// Descriptors a child process must not inherit.
#pragma once

namespace drover::common {

// Closes every descriptor from `low` up except `keep` (-1: none). Async-signal-safe: for a
// child between fork and exec. Uses close_range (Linux 5.9+), else closes them one by one
// up to the descriptor limit, so no kernel leaves a descriptor open.
void CloseDescriptorsFrom(int low, int keep);

// Marks `fd` close-on-exec (sockets Asio opens are not).
void SetCloseOnExec(int fd);

// Raises this process's soft descriptor limit to its hard limit (connections need
// descriptors) and returns the new soft limit. Children that start tasks put the
// original back with RestoreDescriptorLimit (async-signal-safe), so tasks see the
// limit the agent was started with.
long RaiseDescriptorLimit();
void RestoreDescriptorLimit();

}  // namespace drover::common
