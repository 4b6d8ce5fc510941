// The agent's side of the supervisor protocol (protocol.h): one connection, calls
// matched to responses by id, "exited" events handed to a callback. Lives on the
// control loop; not thread-safe.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include <boost/asio/local/stream_protocol.hpp>

#include "common/event.h"
#include "supervisor/protocol.h"

namespace drover::supervisor {

class Client {
 public:
  explicit Client(asio::any_io_executor executor);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Called for every "exited" event, on the control loop.
  std::function<void(const TaskInfo&)> on_exit;
  // Called once when the connection is lost (after pending calls failed).
  std::function<void()> on_disconnect;

  asio::awaitable<absl::Status> Connect(const std::filesystem::path& socket);
  bool connected() const { return connected_; }
  void Close();

  asio::awaitable<absl::StatusOr<TaskInfo>> Spawn(const SpawnSpec& spec);
  // `group`: the task's whole process group, else the process alone.
  asio::awaitable<absl::Status> Signal(const std::string& task_id, const std::string& signal,
                                       bool group = true);
  asio::awaitable<absl::StatusOr<std::vector<TaskInfo>>> List();
  // The agent has recorded the exit: the supervisor may forget the task.
  asio::awaitable<absl::Status> AckExit(const std::string& task_id);

  // Sends `request` (an "id" is added) and waits for its response. Unavailable when
  // the connection is lost; the supervisor's error text otherwise.
  asio::awaitable<absl::StatusOr<Json>> Call(Json request);

 private:
  struct Pending;
  asio::awaitable<void> ReadLoop();
  asio::awaitable<void> WriteLoop();
  void FailAll(const absl::Status& status);

  asio::any_io_executor executor_;
  std::shared_ptr<asio::local::stream_protocol::socket> socket_;
  bool connected_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::deque<std::string> outbox_;
  // Shared with the reader/writer coroutines, which may resume after the client is
  // gone (they then see *alive_ == false and leave without touching it).
  std::shared_ptr<common::Notifier> wake_writer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace drover::supervisor
