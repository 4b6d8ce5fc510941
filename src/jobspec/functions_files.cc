// File functions (CLI only, EvalOptions::allow_fs): file, fileexists, templatefile.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

#include "jobspec/functions_internal.h"
#include "jobspec/parser.h"

namespace drover::jobspec::internal {

namespace {

absl::StatusOr<std::string> ReadFile(Evaluator& ev, const std::string& path,
                                     const std::string& fn) {
  if (!ev.options().allow_fs) {
    return Bad(absl::StrCat(fn,
                            "() is not available here: job files parsed by the server "
                            "cannot read files; run the job from the CLI instead"));
  }
  std::filesystem::path p(path);
  if (p.is_relative()) {
    p = std::filesystem::path(ev.options().base_dir) / p;
  }
  std::ifstream in(p, std::ios::binary);
  std::error_code ec;
  if (!in || !std::filesystem::is_regular_file(p, ec)) {
    return Bad(absl::StrCat("no file exists at ", p.string()));
  }
  // At most one byte past the limit: /dev/zero-like files must not be read whole.
  std::string text(kMaxSourceBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxSourceBytes) {
    return Bad(absl::StrCat("file ", p.string(), " is larger than ", kMaxSourceBytes, " bytes"));
  }
  if (!IsValidUtf8(text)) {
    return Bad(absl::StrCat("file ", p.string(), " is not valid UTF-8"));
  }
  return text;
}

}  // namespace

void AddFileFunctions(FunctionTable& table) {
  table.insert({
      {"file",
       [](Evaluator& ev, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(path, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(text, ReadFile(ev, path, "file"));
         return Json(text);
       }},
      {"fileexists",
       [](Evaluator& ev, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 1, 1); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(path, Str(a[0], 0));
         if (!ev.options().allow_fs) {
           return Bad(
               "fileexists() is not available here: job files parsed by the server "
               "cannot read files; run the job from the CLI instead");
         }
         std::filesystem::path p(path);
         if (p.is_relative()) {
           p = std::filesystem::path(ev.options().base_dir) / p;
         }
         std::error_code ec;
         return Json(std::filesystem::is_regular_file(p, ec));
       }},
      {"templatefile",
       [](Evaluator& ev, const Args& a) -> absl::StatusOr<Json> {
         if (absl::Status s = Arity(a, 2, 2); !s.ok()) {
           return s;
         }
         JOBSPEC_ASSIGN_OR_RETURN(path, Str(a[0], 0));
         JOBSPEC_ASSIGN_OR_RETURN(vars, Map(a[1], 1));
         JOBSPEC_ASSIGN_OR_RETURN(text, ReadFile(ev, path, "templatefile"));
         absl::StatusOr<ExprPtr> tmpl = ParseTemplate(path, text);
         if (!tmpl.ok()) {
           return absl::FailedPreconditionError(tmpl.status().message());
         }
         EvalOptions options = ev.options();
         options.allow_fs = false;  // no recursive file reads from a template
         Evaluator inner(path, options);
         inner.ShareBudget(ev);
         inner.SetRootScope(*vars);
         absl::StatusOr<Json> out = inner.Evaluate(**tmpl);
         if (!out.ok()) {
           return absl::FailedPreconditionError(out.status().message());
         }
         std::string s;
         if (!ToHclString(*out, s)) {
           return Bad("the template does not produce a string");
         }
         return Json(s);
       }},
  });
}

}  // namespace drover::jobspec::internal
