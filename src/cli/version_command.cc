// drover version.
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"

#ifndef DROVER_VERSION
#define DROVER_VERSION "0.0.0-unknown"
#endif

namespace drover::cli {

std::string VersionString() {
  return absl::StrCat("Drover v", DROVER_VERSION);
}

int RunVersion(Ui& ui) {
  ui.Output(VersionString());
  return kExitOk;
}

}  // namespace drover::cli
