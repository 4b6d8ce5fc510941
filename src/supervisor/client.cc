#include "supervisor/client.h"

#include <boost/asio/write.hpp>

#include "common/logging.h"
#include "common/offload.h"

namespace drover::supervisor {

using asio::local::stream_protocol;

struct Client::Pending {
  explicit Pending(asio::any_io_executor ex) : done(ex) {}
  absl::StatusOr<Json> result = absl::UnavailableError("no response");
  common::Event done;
};

Client::Client(asio::any_io_executor executor)
    : executor_(executor), wake_writer_(std::make_shared<common::Notifier>(executor)) {}

Client::~Client() {
  *alive_ = false;
  Close();
}

asio::awaitable<absl::Status> Client::Connect(const std::filesystem::path& socket) {
  auto s = std::make_shared<stream_protocol::socket>(executor_);
  auto [ec] = co_await s->async_connect(stream_protocol::endpoint(socket.string()),
                                        asio::as_tuple(asio::use_awaitable));
  if (ec) {
    co_return absl::UnavailableError("failed to connect to supervisor at '" + socket.string() +
                                     "': " + ec.message());
  }
  socket_ = std::move(s);
  connected_ = true;
  common::SpawnDetached(executor_, ReadLoop(), "supervisor client reader");
  common::SpawnDetached(executor_, WriteLoop(), "supervisor client writer");
  co_return absl::OkStatus();
}

void Client::Close() {
  if (!connected_)
    return;
  connected_ = false;
  boost::system::error_code ignored;
  socket_->close(ignored);
  wake_writer_->Notify();
  FailAll(absl::UnavailableError("connection to supervisor closed"));
}

void Client::FailAll(const absl::Status& status) {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    p->result = status;
    p->done.Set();
  }
}

asio::awaitable<void> Client::ReadLoop() {
  auto alive = alive_;
  auto socket = socket_;
  FrameDecoder decoder;
  std::array<char, 16384> buf{};
  for (;;) {
    auto [ec, n] =
        co_await socket->async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (!*alive)
      co_return;
    if (ec)
      break;
    decoder.Append(std::string_view(buf.data(), n));
    bool bad = false;
    while (true) {
      auto msg = decoder.Next();
      if (!msg.ok()) {
        DROVER_LOG_ERROR("supervisor client: {}", msg.status().ToString());
        bad = true;
        break;
      }
      if (!*msg)
        break;
      const Json& m = **msg;
      if (m.contains("event")) {
        if (m["event"] == "exited" && on_exit) {
          auto task = TaskInfoFromJson(m.value("task", Json::object()));
          if (task.ok())
            on_exit(*task);
        }
        continue;
      }
      const uint64_t id = m.value("id", uint64_t{0});
      auto it = pending_.find(id);
      if (it == pending_.end())
        continue;
      auto p = it->second;
      pending_.erase(it);
      if (m.value("ok", false)) {
        p->result = m;
      } else {
        p->result = absl::FailedPreconditionError(m.value("error", std::string("unknown error")));
      }
      p->done.Set();
    }
    if (bad)
      break;
  }
  if (!*alive)
    co_return;
  const bool was_connected = connected_;
  Close();
  if (was_connected && on_disconnect)
    on_disconnect();
}

asio::awaitable<void> Client::WriteLoop() {
  auto alive = alive_;
  auto socket = socket_;
  auto wake = wake_writer_;
  while (*alive && connected_) {
    if (outbox_.empty()) {
      co_await wake->Wait();
      continue;
    }
    const std::string frame = std::move(outbox_.front());
    outbox_.pop_front();
    auto [ec, n] = co_await asio::async_write(*socket, asio::buffer(frame),
                                              asio::as_tuple(asio::use_awaitable));
    if (ec)
      break;
  }
}

asio::awaitable<absl::StatusOr<Json>> Client::Call(Json request) {
  if (!connected_)
    co_return absl::UnavailableError("not connected to the supervisor");
  const uint64_t id = next_id_++;
  request["id"] = id;
  auto p = std::make_shared<Pending>(executor_);
  pending_[id] = p;
  outbox_.push_back(EncodeFrame(request));
  wake_writer_->Notify();
  co_await p->done.Wait();
  co_return p->result;
}

asio::awaitable<absl::StatusOr<TaskInfo>> Client::Spawn(const SpawnSpec& spec) {
  Json req = {{"op", "spawn"}, {"spec", ToJson(spec)}};
  auto r = co_await Call(std::move(req));
  if (!r.ok())
    co_return r.status();
  co_return TaskInfoFromJson(r->value("task", Json::object()));
}

asio::awaitable<absl::Status> Client::Signal(const std::string& task_id, const std::string& signal,
                                             bool group) {
  Json req = {{"op", "signal"}, {"task_id", task_id}, {"signal", signal}, {"group", group}};
  auto r = co_await Call(std::move(req));
  co_return r.status();
}

asio::awaitable<absl::StatusOr<std::vector<TaskInfo>>> Client::List() {
  Json req = {{"op", "list"}};
  auto r = co_await Call(std::move(req));
  if (!r.ok())
    co_return r.status();
  std::vector<TaskInfo> out;
  for (const Json& t : r->value("tasks", Json::array())) {
    auto info = TaskInfoFromJson(t);
    if (!info.ok())
      co_return info.status();
    out.push_back(*info);
  }
  co_return out;
}

asio::awaitable<absl::Status> Client::AckExit(const std::string& task_id) {
  Json req = {{"op", "ack_exit"}, {"task_id", task_id}};
  auto r = co_await Call(std::move(req));
  co_return r.status();
}

}  // namespace drover::supervisor
