#include "cli/ui.h"

#include <chrono>
#include <istream>
#include <ostream>
#include <string>

namespace drover::cli {

Ui::Ui(std::istream& in, std::ostream& out, std::ostream& err, std::function<common::Time()> now)
    : in_(in), out_(out), err_(err), now_(std::move(now)) {}

void Ui::Raw(std::string_view bytes) {
  out_ << bytes;
  out_.flush();
}

void Ui::Output(std::string_view message) {
  out_ << message << '\n';
  out_.flush();
}

void Ui::Error(std::string_view message) {
  err_ << message << '\n';
  err_.flush();
}

std::string Ui::Ask(std::string_view question) {
  out_ << question << ' ';
  out_.flush();
  std::string line;
  if (!std::getline(in_, line)) {
    return "";
  }
  return line;
}

common::Time Ui::Now() const {
  if (now_) {
    return now_();
  }
  return std::chrono::time_point_cast<common::Duration>(std::chrono::system_clock::now());
}

}  // namespace drover::cli
