// Every job file under testdata/ (written for this project) parses to the JSON beside
// it: `X.nomad.hcl` → `X.json`. A file `X.vars.hcl` is passed as a var file. Set
// DROVER_UPDATE_GOLDEN=1 to rewrite the expected files after a deliberate change, then
// review the diff.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "jobspec/jobspec.h"

namespace drover::jobspec {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> CorpusFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(DROVER_JOBSPEC_TESTDATA)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".nomad.hcl") && !name.ends_with(".vars.hcl")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(CorpusTest, EveryJobFileParsesToItsExpectedJson) {
  const std::vector<fs::path> files = CorpusFiles();
  const bool update = std::getenv("DROVER_UPDATE_GOLDEN") != nullptr;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    const std::string stem = file.string().substr(0, file.string().size() - 10);
    ParseOptions options;
    options.allow_fs = true;
    options.base_dir = DROVER_JOBSPEC_TESTDATA;
    if (fs::exists(stem + ".vars.hcl")) {
      options.var_files.emplace_back(stem + ".vars.hcl", ReadAll(stem + ".vars.hcl"));
    }
    absl::StatusOr<Json> job = ParseJob(file.filename().string(), ReadAll(file), options);
    ASSERT_TRUE(job.ok()) << job.status();
    const fs::path expected_path = stem + ".json";
    if (update) {
      std::ofstream(expected_path) << job->dump(2) << "\n";
      continue;
    }
    ASSERT_TRUE(fs::exists(expected_path)) << "no expected JSON " << expected_path;
    const Json expected = Json::parse(ReadAll(expected_path));
    EXPECT_EQ(*job, expected) << "got:\n" << job->dump(2);
  }
  EXPECT_GE(files.size(), 10u) << "the corpus went missing";
}

// examples/X.nomad.hcl and examples/X.json are the same job in both forms.
TEST(CorpusTest, ExamplesInHclAndJsonAgree) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(DROVER_EXAMPLES_DIR)) {
    const std::string path = entry.path().string();
    if (!path.ends_with(".nomad.hcl")) {
      continue;
    }
    SCOPED_TRACE(path);
    const std::string json_path = path.substr(0, path.size() - 10) + ".json";
    ASSERT_TRUE(fs::exists(json_path)) << "no JSON twin " << json_path;
    absl::StatusOr<Json> job = ParseJob(path, ReadAll(path), ParseOptions{});
    ASSERT_TRUE(job.ok()) << job.status();
    const Json wrapped = {{"Job", *job}};
    EXPECT_EQ(wrapped, Json::parse(ReadAll(json_path)));
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

}  // namespace
}  // namespace drover::jobspec
