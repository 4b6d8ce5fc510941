// drover operator client-state: the client state DB of a data dir, as JSON (Nomad's
// `nomad operator client-state`), for debugging a node.
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include <nlohmann/json.hpp>

#include "state/state_db.h"

namespace drover::cli {

int RunOperatorClientState(const std::string& data_dir, Ui& ui) {
  if (data_dir.empty()) {
    ui.Error("-data-dir is required: the agent's data directory");
    return kExitError;
  }
  absl::StatusOr<codec::Json> dump = state::DumpStateDb(state::StateDbFile(data_dir));
  if (!dump.ok()) {
    ui.Error(absl::StrCat("Error reading the client state: ", dump.status().message()));
    return kExitError;
  }
  ui.Output(dump->dump(2));
  return kExitOk;
}

}  // namespace drover::cli
