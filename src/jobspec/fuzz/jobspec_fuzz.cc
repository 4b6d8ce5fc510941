// libFuzzer entry point: any input is a job file. Parsing, variable resolution,
// evaluation (every function is reachable from an attribute) and decoding must return
// a Status, never crash, hang or read out of bounds. Run with `make fuzz`; `make test`
// runs it for a bounded time (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string>

#include "jobspec/eval.h"
#include "jobspec/jobspec.h"
#include "jobspec/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  drover::jobspec::ParseOptions options;  // no file access: the server's configuration
  options.var_assignments = {"x=1"};
  (void)drover::jobspec::ParseJob("fuzz.nomad.hcl", source, options);

  // Top-level attributes as free expressions, so functions and operators are reached
  // without a job block around them.
  absl::StatusOr<drover::jobspec::File> file = drover::jobspec::ParseFile("fuzz.hcl", source);
  if (file.ok()) {
    drover::jobspec::Evaluator evaluator("fuzz.hcl", drover::jobspec::EvalOptions{});
    evaluator.SetVariables(nlohmann::json{{"x", 1}, {"s", "str"}, {"l", {1, 2}}});
    for (const drover::jobspec::Attribute& attr : file->body.attributes) {
      (void)evaluator.Evaluate(*attr.expr);
    }
  }
  return 0;
}
