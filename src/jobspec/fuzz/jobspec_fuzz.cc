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

namespace {

// Variables of every kind of type, so var file values go through each conversion.
constexpr char kTypedJob[] = R"(variable "s" {
  type    = string
  default = ""
}
variable "n" {
  type    = number
  default = 0
}
variable "l" {
  type    = list(string)
  default = []
}
variable "set" {
  type    = set(number)
  default = []
}
variable "m" {
  type    = map(string)
  default = {}
}
variable "o" {
  type    = object({ a = string })
  default = { a = "" }
}
variable "any" {
  default = null
}
job "vars" {
  meta = { s = var.s, n = var.n, l = length(var.l), set = length(var.set) }
}
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  drover::jobspec::ParseOptions options;  // no file access: the server's configuration
  options.var_assignments = {"x=1"};
  (void)drover::jobspec::ParseJob("fuzz.nomad.hcl", source, options);

  // The input as variable values: a var file (JSON when it starts with `{`, else HCL)
  // and a -var of a collection type, for a fixed job declaring typed variables.
  drover::jobspec::ParseOptions with_vars;
  with_vars.var_files = {{"fuzz.vars", source}};
  (void)drover::jobspec::ParseJob("vars.nomad.hcl", kTypedJob, with_vars);
  drover::jobspec::ParseOptions with_assignment;
  with_assignment.var_assignments = {"l=" + source};
  (void)drover::jobspec::ParseJob("vars.nomad.hcl", kTypedJob, with_assignment);

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
