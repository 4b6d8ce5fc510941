// External device plugins: an executable that speaks Drover's line-delimited JSON
// device protocol on stdin/stdout (docs/device-plugin-protocol.md), so users add device
// types without rebuilding Drover.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "devices/device_plugin.h"

namespace drover::devices {

struct ExternalPluginConfig {
  std::string name;     // the plugin block's label
  std::string command;  // absolute path of the executable
  std::vector<std::string> args;
  // The plugin block's `config` object, as JSON text, sent in the first request.
  std::string config_json = "{}";
  // How long one request may take before the process is killed (zero or less: the
  // default). See MaxExternalPluginCallDuration for how long a whole call may take.
  common::Duration request_timeout = std::chrono::seconds(10);
};

// How long a plugin whose conversation broke (timeout, crash, garbage, Reset) is given
// to die after SIGKILL before the call returns anyway; one still not gone (stuck in the
// kernel) is reaped by a later call or when the plugin is destroyed.
inline constexpr common::Duration kExternalPluginKillGrace = std::chrono::seconds(1);

// The longest one call (Fingerprint, Reserve, Stats) of a plugin made with `config`
// takes once it has its turn: 2 * request_timeout + kExternalPluginKillGrace. Starting
// and configuring a fresh process and then the request itself each get request_timeout,
// all within 2 * request_timeout of the call's start; a plugin that broke the
// conversation gets at most the kill grace to die (a plugin that closed its stdout gets
// up to a second to exit by itself, within the request's time). Calls are serialized:
// one made while another is in flight first waits for it.
//
// Callers that put their own deadline on a call (DeviceManagerConfig::call_timeout)
// must allow more than this, or they reset plugins that are merely slow, and report
// "no answer" where the plugin's own, more precise error was about to arrive.
common::Duration MaxExternalPluginCallDuration(const ExternalPluginConfig& config);

// Reset() kills the process group without waiting for it (nor for a call in flight,
// which it wakes and which then fails "was reset"); the process is reaped by that call,
// the next one, or the destructor (which waits for it).
DevicePluginPtr MakeExternalPlugin(ExternalPluginConfig config);

}  // namespace drover::devices
