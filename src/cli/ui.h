// Where a command reads and writes (Nomad's cli.Ui), plus the wall clock its relative
// times are computed against, so tests can capture output and fix "now".
// Not thread-safe; one per command run.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace drover::cli {

class Ui {
 public:
  // The streams must outlive the Ui. `now` defaults to the system clock.
  Ui(std::istream& in, std::ostream& out, std::ostream& err,
     std::function<common::Time()> now = nullptr);

  // Writes `message` and a newline to stdout / stderr.
  void Output(std::string_view message);
  void Error(std::string_view message);
  // Writes `bytes` to stdout as they are (file contents, logs).
  void Raw(std::string_view bytes);
  // Prints `question` followed by a space and reads one line ("" at end of input).
  std::string Ask(std::string_view question);

  common::Time Now() const;

 private:
  std::istream& in_;
  std::ostream& out_;
  std::ostream& err_;
  std::function<common::Time()> now_;
};

}  // namespace drover::cli
