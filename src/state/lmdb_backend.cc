#include "state/lmdb_backend.h"

#include <filesystem>
#include <string>

#include <lmdb.h>

namespace drover::state {

namespace {

// What says the file itself is damaged (as opposed to the disk being full, or the
// file being unreadable): DataLoss, which the agent treats as "move it aside or stop".
bool IsDamage(int rc) {
  return rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND ||
         rc == MDB_VERSION_MISMATCH;
}

absl::Status LmdbError(const std::string& what, int rc) {
  std::string msg = what + ": " + mdb_strerror(rc);
  return IsDamage(rc) ? absl::DataLossError(msg) : absl::InternalError(msg);
}

// Reads every record once, so that a damaged tree is found at open, not halfway
// through a restore. (Page numbers were checked against the file size first, so LMDB
// never touches memory past the end of the file.)
int VerifyTree(MDB_env* env, MDB_dbi dbi) {
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn); rc != 0)
    return rc;
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn, dbi, &cursor);
  if (rc == 0) {
    MDB_val k;
    MDB_val v;
    rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST);
    while (rc == 0)
      rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    mdb_cursor_close(cursor);
  }
  mdb_txn_abort(txn);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

MDB_val Val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view View(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// A read-only transaction, aborted when it goes out of scope.
class ReadTxn {
 public:
  explicit ReadTxn(MDB_env* env) { rc_ = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn_); }
  ~ReadTxn() {
    if (rc_ == 0)
      mdb_txn_abort(txn_);
  }
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;
  int rc() const { return rc_; }
  MDB_txn* get() const { return txn_; }

 private:
  MDB_txn* txn_ = nullptr;
  int rc_ = 0;
};

class LmdbBackend final : public KvBackend {
 public:
  LmdbBackend(MDB_env* env, MDB_dbi dbi, std::string path) : env_(env), dbi_(dbi), path_(path) {}
  ~LmdbBackend() override { mdb_env_close(env_); }

  std::string Name() const override { return "lmdb"; }

  absl::Status Commit(const std::vector<KvOp>& ops) override {
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0)
      return LmdbError("failed to begin a write transaction on " + path_, rc);
    absl::Status status = Apply(txn, ops);
    if (!status.ok()) {
      mdb_txn_abort(txn);
      return status;
    }
    if (int rc = mdb_txn_commit(txn); rc != 0)
      return LmdbError("failed to commit to " + path_, rc);
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override {
    ReadTxn txn(env_);
    if (txn.rc() != 0)
      return LmdbError("failed to read " + path_, txn.rc());
    MDB_val k = Val(key);
    MDB_val v;
    const int rc = mdb_get(txn.get(), dbi_, &k, &v);
    if (rc == MDB_NOTFOUND)
      return std::optional<std::string>();
    if (rc != 0)
      return LmdbError("failed to read " + path_, rc);
    return std::optional<std::string>(std::string(View(v)));
  }

  absl::StatusOr<KvPairs> Scan(std::string_view prefix) override {
    ReadTxn txn(env_);
    if (txn.rc() != 0)
      return LmdbError("failed to read " + path_, txn.rc());
    MDB_cursor* cursor = nullptr;
    if (int rc = mdb_cursor_open(txn.get(), dbi_, &cursor); rc != 0)
      return LmdbError("failed to read " + path_, rc);
    KvPairs out;
    MDB_val k = Val(prefix);
    MDB_val v;
    // LMDB has no empty keys: an empty prefix starts at the first one.
    int rc = mdb_cursor_get(cursor, &k, &v, prefix.empty() ? MDB_FIRST : MDB_SET_RANGE);
    while (rc == 0 && View(k).substr(0, prefix.size()) == prefix) {
      out.emplace_back(std::string(View(k)), std::string(View(v)));
      rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cursor);
    if (rc != 0 && rc != MDB_NOTFOUND)
      return LmdbError("failed to read " + path_, rc);
    return out;
  }

 private:
  absl::Status Apply(MDB_txn* txn, const std::vector<KvOp>& ops) {
    for (const KvOp& op : ops) {
      MDB_val k = Val(op.key);
      int rc = 0;
      switch (op.kind) {
        case KvOp::Kind::kPut: {
          MDB_val v = Val(op.value);
          rc = mdb_put(txn, dbi_, &k, &v, 0);
          break;
        }
        case KvOp::Kind::kDelete:
          rc = mdb_del(txn, dbi_, &k, nullptr);
          if (rc == MDB_NOTFOUND)
            rc = 0;
          break;
        case KvOp::Kind::kDeletePrefix:
          rc = DeletePrefix(txn, op.key);
          break;
      }
      if (rc != 0)
        return LmdbError("failed to write '" + op.key + "' to " + path_, rc);
    }
    return absl::OkStatus();
  }

  int DeletePrefix(MDB_txn* txn, std::string_view prefix) {
    MDB_cursor* cursor = nullptr;
    if (int rc = mdb_cursor_open(txn, dbi_, &cursor); rc != 0)
      return rc;
    MDB_val k = Val(prefix);
    MDB_val v;
    int rc = mdb_cursor_get(cursor, &k, &v, prefix.empty() ? MDB_FIRST : MDB_SET_RANGE);
    while (rc == 0 && View(k).substr(0, prefix.size()) == prefix) {
      if ((rc = mdb_cursor_del(cursor, 0)) != 0)
        break;
      // After a delete the cursor rests on the next item.
      rc = mdb_cursor_get(cursor, &k, &v, MDB_GET_CURRENT);
    }
    mdb_cursor_close(cursor);
    return rc == MDB_NOTFOUND || rc == EINVAL ? 0 : rc;
  }

  MDB_env* env_;
  MDB_dbi dbi_;
  std::string path_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<KvBackend>> OpenLmdb(const std::filesystem::path& path,
                                                    LmdbOptions options) {
  const std::string p = path.string();
  MDB_env* env = nullptr;
  if (int rc = mdb_env_create(&env); rc != 0)
    return LmdbError("failed to open state DB " + p, rc);
  auto fail = [&](const std::string& what, int rc) {
    mdb_env_close(env);
    return LmdbError(what + " " + p, rc);
  };
  if (int rc = mdb_env_set_mapsize(env, options.map_size); rc != 0)
    return fail("failed to size state DB", rc);
  // LMDB writes its two meta pages when it creates a file: an existing empty file was
  // cut short, not new, and LMDB would silently start it over.
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  if (existed && std::filesystem::file_size(path, ec) == 0 && !ec) {
    mdb_env_close(env);
    return absl::DataLossError("state DB " + p +
                               " is empty (0 bytes): it was cut short, or the agent stopped "
                               "while creating it");
  }
  // One file (no directory of its own); read transactions may move between threads.
  if (int rc = mdb_env_open(env, p.c_str(), MDB_NOSUBDIR | MDB_NOTLS, 0600); rc != 0)
    return fail("failed to open state DB", rc);
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(env, nullptr, 0, &txn); rc != 0)
    return fail("failed to open state DB", rc);
  MDB_dbi dbi = 0;
  if (int rc = mdb_dbi_open(txn, nullptr, 0, &dbi); rc != 0) {
    mdb_txn_abort(txn);
    return fail("failed to open state DB", rc);
  }
  if (int rc = mdb_txn_commit(txn); rc != 0)
    return fail("failed to open state DB", rc);
  // A file shorter than its last page: reading those pages through the map would be
  // SIGBUS, not an error.
  MDB_envinfo info;
  MDB_stat stat;
  mdb_env_info(env, &info);
  mdb_env_stat(env, &stat);
  const uint64_t needed = (static_cast<uint64_t>(info.me_last_pgno) + 1) * stat.ms_psize;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    mdb_env_close(env);
    return absl::InternalError("failed to open state DB " + p + ": " + ec.message());
  }
  if (size < needed) {
    mdb_env_close(env);
    return absl::DataLossError("state DB " + p + " is truncated (" + std::to_string(size) +
                               " bytes, its pages need " + std::to_string(needed) + ")");
  }
  if (int rc = VerifyTree(env, dbi); rc != 0)
    return fail(IsDamage(rc) ? "state DB is damaged:" : "failed to read state DB", rc);
  return std::unique_ptr<KvBackend>(new LmdbBackend(env, dbi, p));
}

}  // namespace drover::state
