#include "cli/diff_format.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace drover::cli {
namespace {

codec::Json Field(const std::string& type, const std::string& name, const std::string& old_value,
                  const std::string& new_value, codec::Json annotations = nullptr) {
  return {{"Type", type},
          {"Name", name},
          {"Old", old_value},
          {"New", new_value},
          {"Annotations", std::move(annotations)}};
}

TEST(DiffFormatTest, AlignsMarkersNamesAndValuesPerLevel) {
  codec::Json config = {{"Type", "Edited"},
                        {"Name", "Config"},
                        {"Fields",
                         {Field("Edited", "args[0]", "600", "700"),
                          Field("None", "command", "/bin/sleep", "/bin/sleep")}},
                        {"Objects", nullptr}};
  codec::Json diff = {{"Type", "Edited"},
                      {"ID", "web"},
                      {"Fields", {Field("Added", "Meta[owner]", "", "ops")}},
                      {"Objects", nullptr},
                      {"TaskGroups",
                       {{{"Type", "Edited"},
                         {"Name", "front"},
                         {"Updates", {{"create", 2}, {"create/destroy update", 1}}},
                         {"Fields", {Field("Edited", "Count", "1", "3", {"forces create"})}},
                         {"Objects", nullptr},
                         {"Tasks",
                          {{{"Type", "Edited"},
                            {"Name", "server"},
                            {"Annotations", {"forces create/destroy update"}},
                            {"Fields", nullptr},
                            {"Objects", {config}}},
                           {{"Type", "None"}, {"Name", "sidecar"}, {"Annotations", nullptr}}}}},
                        {{"Type", "Added"},
                         {"Name", "back"},
                         {"Updates", {{"create", 1}}},
                         {"Fields", {Field("Added", "Count", "", "1")}},
                         {"Tasks",
                          {{{"Type", "Added"},
                            {"Name", "db"},
                            {"Annotations", {"forces create"}},
                            {"Fields", {Field("Added", "Driver", "", "raw_exec")}}}}}}}}};
  EXPECT_EQ(FormatJobDiff(diff, /*verbose=*/false),
            "+/- Job: \"web\"\n"
            "+   Meta[owner]: \"ops\"\n"
            "+/- Task Group: \"front\" (2 create, 1 create/destroy update)\n"
            "  +/- Count: \"1\" => \"3\" (forces create)\n"
            "  +/- Task: \"server\" (forces create/destroy update)\n"
            "    +/- Config {\n"
            "      +/- args[0]: \"600\" => \"700\"\n"
            "          command: \"/bin/sleep\"\n"
            "        }\n"
            "      Task: \"sidecar\"\n"
            "\n"
            "+   Task Group: \"back\" (1 create)\n"
            "    + Task: \"db\" (forces create)\n"
            "\n");
  // Verbose shows what an added group and task hold.
  const std::string verbose = FormatJobDiff(diff, /*verbose=*/true);
  EXPECT_NE(verbose.find("    + Count: \"1\"\n"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("      + Driver: \"raw_exec\""), std::string::npos) << verbose;
}

TEST(DiffFormatTest, AnUnchangedJobIsItsNameAndItsGroups) {
  codec::Json diff = {{"Type", "None"},
                      {"ID", "web"},
                      {"TaskGroups",
                       {{{"Type", "None"},
                         {"Name", "front"},
                         {"Updates", {{"ignore", 1}}},
                         {"Tasks", {{{"Type", "None"}, {"Name", "server"}}}}}}}};
  EXPECT_EQ(FormatJobDiff(diff, false),
            "Job: \"web\"\n"
            "Task Group: \"front\" (1 ignore)\n"
            "  Task: \"server\"\n"
            "\n");
}

}  // namespace
}  // namespace drover::cli
