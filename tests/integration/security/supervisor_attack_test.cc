// Attacks on the node's supervisor socket (issue 16, defect 15): a peer that sends
// requests of the wrong shape. Only the agent's user can open the socket (it is 0600 in
// a 0700 directory), but whatever arrives there must be answered, never thrown.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "supervisor/protocol.h"
#include "tests/integration/agent_fixture.h"
#include "tests/integration/security/attack_util.h"

namespace drover::integration {
namespace {

int ConnectUnix(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
    return fd;
  if (fd >= 0)
    close(fd);
  return -1;
}

// Reads frames until one arrives whose "id" is `id`, or the connection ends.
std::optional<supervisor::Json> AnswerTo(int fd, const supervisor::Json& id) {
  supervisor::FrameDecoder decoder;
  char buf[4096];
  for (;;) {
    for (;;) {
      auto msg = decoder.Next();
      if (!msg.ok() || !*msg)
        break;
      if ((**msg).value("id", supervisor::Json(nullptr)) == id)
        return **msg;
    }
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      return std::nullopt;
    decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
  }
}

// Defect 15: the frame {"op":1} threw outside the supervisor's try; the connection got
// no answer and leaked.
TEST_F(AgentTest, Defect15_RequestsOfTheWrongShapeAreAnswered) {
  // A job, so the agent has started its supervisor.
  const std::string file = agent_.WriteFile("a.json", RawExecJob("first", "batch", "true"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  WaitAlloc("first", "complete");
  const int fd = ConnectUnix((agent_.data_dir() / "supervisor" / "supervisor.sock").string());
  ASSERT_GE(fd, 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const supervisor::Json requests[] = {
      {{"id", 1}, {"op", 1}},
      {{"id", 2}, {"op", nullptr}},
      {{"id", 3}},
      {{"id", 4}, {"op", "spawn"}, {"argv", "not a list"}},
      {{"id", 5}, {"op", "signal"}, {"task_id", 7}},
      {{"id", 6}, {"op", std::string(100000, 'x')}},
  };
  for (const supervisor::Json& r : requests) {
    const std::string frame = supervisor::EncodeFrame(r);
    ASSERT_EQ(send(fd, frame.data(), frame.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(frame.size()));
    auto answer = AnswerTo(fd, r["id"]);
    ASSERT_TRUE(answer.has_value()) << "no answer to " << r.dump().substr(0, 80);
    EXPECT_EQ((*answer)["ok"], false) << answer->dump().substr(0, 200);
  }
  close(fd);
  // The supervisor still runs tasks.
  const std::string next = agent_.WriteFile("b.json", RawExecJob("second", "batch", "true"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", next}).exit_code, 0);
  WaitAlloc("second", "complete");
  ExpectServing(agent_);
}

}  // namespace
}  // namespace drover::integration
