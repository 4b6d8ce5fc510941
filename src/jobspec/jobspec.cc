#include "jobspec/jobspec.h"

#include "absl/strings/str_cat.h"

#include "jobspec/decode.h"
#include "jobspec/job_schema.h"
#include "jobspec/parser.h"
#include "jobspec/variables.h"

namespace drover::jobspec {

absl::StatusOr<Json> ParseJob(const std::string& file_name, const std::string& source,
                              const ParseOptions& options) {
  absl::StatusOr<File> file = ParseFile(file_name, source);
  if (!file.ok()) {
    return file.status();
  }
  Evaluator ev(file_name, EvalOptions{options.allow_fs, options.base_dir});
  std::vector<const Block*> variable_blocks;
  std::vector<const Block*> locals;
  const Block* job = nullptr;
  for (const Attribute& attr : file->body.attributes) {
    return ev.Error(attr.name_range, "Unsupported argument",
                    absl::StrCat("An argument named \"", attr.name, "\" is not expected here."));
  }
  for (const Block& block : file->body.blocks) {
    const size_t labels = (block.type == "variable" || block.type == "job") ? 1 : 0;
    if (block.type != "variable" && block.type != "variables" && block.type != "locals" &&
        block.type != "job") {
      return ev.Error(block.type_range, "Unsupported block type",
                      absl::StrCat("Blocks of type \"", block.type, "\" are not expected here."));
    }
    if (block.labels.size() != labels) {
      return ev.Error(block.labels.empty() ? block.type_range : block.label_ranges[0],
                      labels == 0 ? absl::StrCat("Extraneous label for ", block.type)
                                  : absl::StrCat("Missing name for ", block.type),
                      labels == 0
                          ? absl::StrCat("No labels are expected for ", block.type, " blocks.")
                          : absl::StrCat("All ", block.type, " blocks must have 1 labels (name)."));
    }
    if (block.type == "job") {
      if (job != nullptr) {
        return ev.Error(block.type_range, "Duplicate job block",
                        "Only one job may be defined in a job file.");
      }
      job = &block;
    } else if (block.type == "locals") {
      locals.push_back(&block);
    } else {
      variable_blocks.push_back(&block);
    }
  }
  if (job == nullptr) {
    return ev.Error(file->body.range, "Missing job block",
                    "A job file must contain a job block, like job \"example\" { ... }.");
  }
  absl::StatusOr<Json> variables = ResolveVariables(ev, variable_blocks, options);
  if (!variables.ok()) {
    return variables.status();
  }
  ev.SetVariables(std::move(*variables));
  for (const Block* block : locals) {
    if (!block->body.blocks.empty()) {
      return ev.Error(block->body.blocks[0].type_range, "Unsupported block type",
                      "A locals block holds only assignments, like name = value.");
    }
    for (const Attribute& attr : block->body.attributes) {
      if (absl::Status s = ev.AddLocal(attr); !s.ok()) {
        return s;
      }
    }
  }
  if (absl::Status s = ev.EvaluateLocals(); !s.ok()) {
    return s;
  }
  Decoder decoder(ev);
  Json out = Json::object();
  if (absl::Status s = decoder.DecodeBody(job->body, JobSpec(), job, out); !s.ok()) {
    return s;
  }
  return out;
}

bool LooksLikeJson(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

}  // namespace drover::jobspec
