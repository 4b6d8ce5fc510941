#include "codec/unsupported_fields.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace drover::codec {
namespace {

TEST(UnsupportedFieldsTest, AcceptsWhatDroverRunsAndEmptyOrNullFields) {
  Json job =
      Json::parse(R"({"ID": "a", "Periodic": null, "Affinities": [], "Update": {"MaxParallel": 2},
    "TaskGroups": [{"Name": "g", "Migrate": {"MaxParallel": 1}, "Services": null,
      "Tasks": [{"Name": "t", "Templates": [], "Resources": {"Devices": [{"Name": "gpu"}]}}]}]})");
  EXPECT_TRUE(CheckSupportedJobFields(job).ok());
  // Device affinities are carried out by the scheduler; task affinities are not.
  EXPECT_TRUE(CheckSupportedJobFields(Json::parse(R"({"TaskGroups": [{"Tasks": [{"Resources":
              {"Devices": [{"Name": "gpu", "Affinities": [{"LTarget": "x"}]}]}}]}]})"))
                  .ok());
}

TEST(UnsupportedFieldsTest, NamesTheFirstUnsupportedField) {
  EXPECT_EQ(CheckSupportedJobFields(Json::parse(R"({"Multiregion": {"Regions": [{"Name": "a"}]}})"))
                .message(),
            "Job.Multiregion: multiregion jobs are not supported by Drover yet");
  EXPECT_EQ(
      CheckSupportedJobFields(Json::parse(R"({"TaskGroups": [{}, {"Tasks": [{},
              {"Templates": [{"EmbeddedTmpl": "x"}]}]}]})"))
          .message(),
      "Job.TaskGroups[1].Tasks[1].Templates: template blocks are not supported by Drover yet");
  EXPECT_EQ(CheckSupportedJobFields(
                Json::parse(R"({"TaskGroups": [{"Disconnect": {"LostAfter": 60000000000}}]})"))
                .message(),
            "Job.TaskGroups[0].Disconnect: disconnect blocks are not supported by Drover yet");
  // max_client_disconnect is carried out.
  EXPECT_TRUE(
      CheckSupportedJobFields(Json::parse(R"({"TaskGroups": [{"MaxClientDisconnect": 1}]})")).ok());
}

}  // namespace
}  // namespace drover::codec
