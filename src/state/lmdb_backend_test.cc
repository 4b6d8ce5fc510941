// Record framing of the LMDB backend: a file written before records carried checksums
// is framed when opened, and the file as it was is kept first.
#include "state/lmdb_backend.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <lmdb.h>

#include "testing/test_util.h"

namespace drover::state {
namespace {

namespace fs = std::filesystem;

// Writes `records` with LMDB itself, unframed, as an agent before checksums did.
void WriteLegacy(const fs::path& file,
                 const std::vector<std::pair<std::string, std::string>>& records) {
  MDB_env* env = nullptr;
  ASSERT_EQ(mdb_env_create(&env), 0);
  ASSERT_EQ(mdb_env_open(env, file.c_str(), MDB_NOSUBDIR, 0600), 0);
  MDB_txn* txn = nullptr;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi dbi = 0;
  ASSERT_EQ(mdb_dbi_open(txn, nullptr, 0, &dbi), 0);
  for (const auto& [k, v] : records) {
    MDB_val key{k.size(), const_cast<char*>(k.data())};
    MDB_val val{v.size(), const_cast<char*>(v.data())};
    ASSERT_EQ(mdb_put(txn, dbi, &key, &val, 0), 0);
  }
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
}

std::string Bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LmdbBackendTest, ALegacyFileIsBackedUpThenFramed) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "state.db";
  WriteLegacy(file, {{"meta/version", "1"}, {"alloc/a1", "{\"ID\":\"a1\"}"}});
  const std::string before = Bytes(file);
  {
    auto db = OpenLmdb(file);
    ASSERT_TRUE(db.ok()) << db.status();
    auto got = (*db)->Get("alloc/a1");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->value_or(""), "{\"ID\":\"a1\"}");
  }
  const fs::path backup = dir.path() / "state.db.backup-unframed";
  ASSERT_TRUE(fs::exists(backup));
  EXPECT_EQ(Bytes(backup), before);
  EXPECT_EQ(fs::status(backup).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // Framed once: the next open neither backs up again nor changes the records.
  fs::remove(backup);
  auto again = OpenLmdb(file);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->Get("meta/version")->value_or(""), "1");
  EXPECT_FALSE(fs::exists(backup));
}

TEST(LmdbBackendTest, ANewFileNeedsNoBackup) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "state.db";
  auto db = OpenLmdb(file);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Commit({KvOp{KvOp::Kind::kPut, "k", "v"}}).ok());
  EXPECT_FALSE(fs::exists(dir.path() / "state.db.backup-unframed"));
}

}  // namespace
}  // namespace drover::state
