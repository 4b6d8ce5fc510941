#include "state/lmdb_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>

#include <lmdb.h>
#include <xxhash.h>

namespace drover::state {

namespace {

// What says the file itself is damaged (as opposed to the disk being full, or the
// file being unreadable): DataLoss, which the agent treats as "move it aside or stop".
bool IsDamage(int rc) {
  return rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND ||
         rc == MDB_VERSION_MISMATCH;
}

absl::Status SyncFile(const std::filesystem::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0)
      ::close(fd);
    return absl::InternalError("failed to sync '" + p.string() + "': " + std::strerror(err));
  }
  ::close(fd);
  return absl::OkStatus();
}

absl::Status LmdbError(const std::string& what, int rc) {
  std::string msg = what + ": " + mdb_strerror(rc);
  return IsDamage(rc) ? absl::DataLossError(msg) : absl::InternalError(msg);
}

MDB_val Val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view View(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// Every value is stored framed: a format byte, an XXH3-64 checksum of the key and the
// value, then the value. A record whose bytes changed on disk (a bad sector, a stray
// write) is found when it is read, named by its key, instead of being decoded. The
// marker key says the file is framed; one written before framing existed is framed
// when it is opened (every value rewritten in one transaction).
constexpr char kFramed = '\xd7';
constexpr size_t kFrameHeader = 1 + 8;
constexpr std::string_view kFramedMarker =
    "\x01"
    "drover/framed";

// The value's hash seeded with the key's: a value moved to another key fails too.
uint64_t RecordHash(std::string_view key, std::string_view value) {
  return XXH3_64bits_withSeed(value.data(), value.size(), XXH3_64bits(key.data(), key.size()));
}

std::string Frame(std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(kFrameHeader + value.size());
  out.push_back(kFramed);
  const uint64_t h = RecordHash(key, value);
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((h >> (8 * i)) & 0xff));
  out.append(value);
  return out;
}

// The value of a framed record, or DataLoss naming the key and the file.
absl::StatusOr<std::string_view> Unframe(std::string_view key, std::string_view stored,
                                         const std::string& path) {
  if (stored.size() < kFrameHeader || stored[0] != kFramed) {
    return absl::DataLossError("state DB " + path + " is damaged: record '" + std::string(key) +
                               "' is not framed");
  }
  uint64_t h = 0;
  for (int i = 0; i < 8; ++i)
    h |= static_cast<uint64_t>(static_cast<unsigned char>(stored[1 + i])) << (8 * i);
  const std::string_view value = stored.substr(kFrameHeader);
  if (h != RecordHash(key, value)) {
    return absl::DataLossError("state DB " + path + " is damaged: record '" + std::string(key) +
                               "' fails its checksum");
  }
  return value;
}

// How long the open file must be for every page its meta page says it has.
uint64_t BytesItsPagesNeed(MDB_env* env) {
  MDB_envinfo info;
  MDB_stat stat;
  mdb_env_info(env, &info);
  mdb_env_stat(env, &stat);
  return (static_cast<uint64_t>(info.me_last_pgno) + 1) * stat.ms_psize;
}

// Reads every record once (and checks its frame, in a framed file). 0, or the LMDB
// error; a record that fails its frame is MDB_CORRUPTED, with `detail` naming it.
int VerifyRecords(MDB_env* env, std::string& detail) {
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn); rc != 0)
    return rc;
  MDB_dbi dbi = 0;
  int rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
  MDB_cursor* cursor = nullptr;
  if (rc == 0)
    rc = mdb_cursor_open(txn, dbi, &cursor);
  if (rc == 0) {
    MDB_val mk = Val(kFramedMarker);
    MDB_val mv;
    const bool framed = mdb_get(txn, dbi, &mk, &mv) == 0;
    MDB_val k;
    MDB_val v;
    rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST);
    uint64_t touched = 0;
    while (rc == 0) {
      // Every value is read (its frame checked, or else hashed): a page past the end of
      // the file faults here, in the child, not later in the agent.
      if (!framed)
        touched ^= XXH3_64bits(v.mv_data, v.mv_size);
      if (framed && View(k) != kFramedMarker) {
        if (auto value = Unframe(View(k), View(v), ""); !value.ok()) {
          detail = "record '" + std::string(View(k)) + "' fails its checksum";
          rc = MDB_CORRUPTED;
          break;
        }
      }
      rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cursor);
    volatile uint64_t sink = touched;
    (void)sink;
  }
  mdb_txn_abort(txn);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

// How long reading a whole state DB may take before it is called damaged (a tree
// whose pages point in a circle never ends).
constexpr int kVerifySeconds = 60;

// The verifying child: opens the file read-only, checks its size against its last page,
// reads every record, writes what went wrong (if anything) to `report` and exits 0 (sound),
// 2 (damaged) or 3 (could not be read for another reason).
[[noreturn]] void VerifyChildMain(const std::string& path, size_t map_size, int report) {
  // A crash here is the finding; it must not leave a core file.
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  MDB_env* env = nullptr;
  int rc = mdb_env_create(&env);
  if (rc == 0)
    rc = mdb_env_set_mapsize(env, map_size);
  if (rc == 0)
    rc = mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0600);
  // Once the file is open, any error walking it is the file's.
  const bool opened = rc == 0;
  std::string detail;
  if (rc == 0) {
    // A file shorter than its last page: reading those pages would fault.
    const uint64_t needed = BytesItsPagesNeed(env);
    std::error_code size_ec;
    const uint64_t size = std::filesystem::file_size(path, size_ec);
    if (!size_ec && size < needed) {
      detail = "truncated (" + std::to_string(size) + " bytes, its pages need " +
               std::to_string(needed) + ")";
      rc = MDB_CORRUPTED;
    }
  }
  if (rc == 0)
    rc = VerifyRecords(env, detail);
  const char* msg = rc == 0 ? "" : (detail.empty() ? mdb_strerror(rc) : detail.c_str());
  (void)!write(report, msg, std::strlen(msg));
  _exit(rc == 0 ? 0 : (IsDamage(rc) || opened ? 2 : 3));
}

// Reads the child's report until end of file (the child holds the write end until it
// exits) or `seconds` pass. Returns whether it finished; the first KiB lands in `msg`.
bool AwaitReport(int fd, int seconds, std::string& msg) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    const int n = left.count() > 0 ? poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    char buf[256];
    const ssize_t got = read(fd, buf, sizeof buf);
    if (got > 0 && msg.size() < 1024)
      msg.append(buf, static_cast<size_t>(got));
    if (got == 0)
      return true;
  }
}

// What the child's end says about the file at `path`.
absl::Status VerdictOf(const std::string& path, int status, const std::string& msg) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    // A fault while reading is the file's; anything else (the OOM killer) is not.
    if (sig == SIGBUS || sig == SIGSEGV || sig == SIGFPE || sig == SIGILL || sig == SIGABRT) {
      return absl::DataLossError("state DB " + path + " is damaged: reading it crashed (" +
                                 std::string(strsignal(sig)) + ")");
    }
    return absl::InternalError("failed to verify state DB " + path + ": the reader was killed (" +
                               std::string(strsignal(sig)) + ")");
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
  if (code == 2) {
    return absl::DataLossError("state DB " + path +
                               (msg.rfind("truncated", 0) == 0 ? " is " : " is damaged: ") + msg);
  }
  if (code != 0)
    return absl::InternalError("failed to read state DB " + path + ": " + msg);
  return absl::OkStatus();
}

// Reads the whole file in a child process before the agent maps it: whatever a damaged
// file makes LMDB do (read past the map, SIGBUS or SIGSEGV; loop) happens there, and
// ends as DataLoss naming the file instead of killing the agent.
absl::Status VerifyInChild(const std::string& path, size_t map_size) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0)
    return absl::InternalError(std::string("failed to verify state DB: pipe: ") +
                               std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    close(report[0]);
    close(report[1]);
    return absl::InternalError(std::string("failed to verify state DB: fork: ") +
                               std::strerror(errno));
  }
  if (pid == 0)
    VerifyChildMain(path, map_size, report[1]);
  close(report[1]);
  // Reading a healthy file takes time in proportion to its size; a damaged one that
  // loops never ends.
  std::error_code size_ec;
  const uint64_t size = std::filesystem::file_size(path, size_ec);
  const int seconds = kVerifySeconds + static_cast<int>((size_ec ? 0 : size) >> 24);  // +1s/16MiB
  std::string msg;
  const bool finished = AwaitReport(report[0], seconds, msg);
  close(report[0]);
  if (!finished)
    kill(pid, SIGKILL);
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited != pid)
    return absl::InternalError("failed to verify state DB " + path +
                               ": waitpid: " + std::strerror(errno));
  if (!finished) {
    return absl::DataLossError("state DB " + path + " is damaged: reading it did not finish in " +
                               std::to_string(seconds) + "s");
  }
  return VerdictOf(path, status, msg);
}

// Opens the LMDB environment of the file `p` and its one database.
absl::StatusOr<std::pair<MDB_env*, MDB_dbi>> OpenEnv(const std::string& p,
                                                     const LmdbOptions& options) {
  MDB_env* env = nullptr;
  if (int rc = mdb_env_create(&env); rc != 0)
    return LmdbError("failed to open state DB " + p, rc);
  auto fail = [&](const std::string& what, int rc) {
    mdb_env_close(env);
    return LmdbError(what + " " + p, rc);
  };
  if (int rc = mdb_env_set_mapsize(env, options.map_size); rc != 0)
    return fail("failed to size state DB", rc);
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
  const uint64_t needed = BytesItsPagesNeed(env);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(p, ec);
  if (ec) {
    mdb_env_close(env);
    return absl::InternalError("failed to open state DB " + p + ": " + ec.message());
  }
  if (size < needed) {
    mdb_env_close(env);
    return absl::DataLossError("state DB " + p + " is truncated (" + std::to_string(size) +
                               " bytes, its pages need " + std::to_string(needed) + ")");
  }
  return std::make_pair(env, dbi);
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
  LmdbBackend(MDB_env* env, MDB_dbi dbi, std::string path, LmdbOptions options)
      : env_(env), dbi_(dbi), path_(std::move(path)), options_(options) {}
  ~LmdbBackend() override {
    if (env_ != nullptr)
      mdb_env_close(env_);
  }

  std::string Name() const override { return "lmdb"; }

  absl::Status Commit(const std::vector<KvOp>& ops) override {
    MDB_txn* txn = nullptr;
    int rc = env_ == nullptr ? MDB_PANIC : mdb_txn_begin(env_, nullptr, 0, &txn);
    if (rc == MDB_PANIC) {
      // A commit whose meta page could not be written leaves the environment unusable
      // (LMDB's fatal-error flag); that commit failed and said so. The file still
      // holds the last commit that succeeded: open it again, and go on from there.
      if (absl::Status s = Reopen(); !s.ok())
        return s;
      rc = mdb_txn_begin(env_, nullptr, 0, &txn);
    }
    if (rc != 0)
      return LmdbError("failed to begin a write transaction on " + path_, rc);
    absl::Status status = Apply(txn, ops);
    if (!status.ok()) {
      mdb_txn_abort(txn);
      return status;
    }
    if (int rc = mdb_txn_commit(txn); rc != 0) {
      // A failed meta-page write refuses reads too (MDB_PANIC): reopen now, not at the
      // next commit, which may be long in coming on an idle node.
      if (IsFatal())
        (void)Reopen();
      return LmdbError("failed to commit to " + path_, rc);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override {
    std::shared_lock lock(env_mu_);
    if (env_ == nullptr)
      return Unavailable();
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
    auto value = Unframe(key, View(v), path_);
    if (!value.ok())
      return value.status();
    return std::optional<std::string>(std::string(*value));
  }

  absl::StatusOr<KvPairs> Scan(std::string_view prefix) override {
    std::shared_lock lock(env_mu_);
    if (env_ == nullptr)
      return Unavailable();
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
    absl::Status damaged;
    while (rc == 0 && View(k).substr(0, prefix.size()) == prefix) {
      if (View(k) != kFramedMarker) {
        auto value = Unframe(View(k), View(v), path_);
        if (!value.ok()) {
          damaged = value.status();
          break;
        }
        out.emplace_back(std::string(View(k)), std::string(*value));
      }
      rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cursor);
    if (!damaged.ok())
      return damaged;
    if (rc != 0 && rc != MDB_NOTFOUND)
      return LmdbError("failed to read " + path_, rc);
    return out;
  }

  // Frames the values of a file written before records were framed (once).
  absl::Status EnsureFramed() {
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0)
      return LmdbError("failed to begin a write transaction on " + path_, rc);
    MDB_val mk = Val(kFramedMarker);
    MDB_val mv;
    int rc = mdb_get(txn, dbi_, &mk, &mv);
    if (rc == 0) {
      mdb_txn_abort(txn);
      return absl::OkStatus();
    }
    std::vector<std::pair<std::string, std::string>> legacy;
    MDB_cursor* cursor = nullptr;
    if (rc == MDB_NOTFOUND)
      rc = mdb_cursor_open(txn, dbi_, &cursor);
    if (rc == 0) {
      MDB_val k;
      MDB_val v;
      rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST);
      while (rc == 0) {
        legacy.emplace_back(std::string(View(k)), std::string(View(v)));
        rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
      }
      mdb_cursor_close(cursor);
      rc = rc == MDB_NOTFOUND ? 0 : rc;
    }
    // Framing is one transaction: values that are framed already, without the marker,
    // mean the marker itself was damaged, not an old file.
    for (const auto& [key, value] : legacy) {
      if (rc == 0 && Unframe(key, value, path_).ok()) {
        mdb_txn_abort(txn);
        return absl::DataLossError("state DB " + path_ +
                                   " is damaged: its records are framed but the marker is gone");
      }
    }
    // Every record is rewritten: the file as it was is kept first (nothing else writes
    // while this transaction is open).
    if (rc == 0 && !legacy.empty()) {
      if (absl::Status s = BackupStateFile(path_, path_ + ".backup-unframed"); !s.ok()) {
        mdb_txn_abort(txn);
        return s;
      }
    }
    std::vector<KvOp> ops;
    for (auto& [key, value] : legacy)
      ops.push_back(KvOp{.kind = KvOp::Kind::kPut, .key = key, .value = std::move(value)});
    ops.push_back(KvOp{.kind = KvOp::Kind::kPut, .key = std::string(kFramedMarker), .value = "1"});
    absl::Status status = rc == 0 ? Apply(txn, ops) : LmdbError("failed to read " + path_, rc);
    if (!status.ok()) {
      mdb_txn_abort(txn);
      return status;
    }
    if (int crc = mdb_txn_commit(txn); crc != 0)
      return LmdbError("failed to commit to " + path_, crc);
    return absl::OkStatus();
  }

 private:
  // Whether the environment has LMDB's fatal-error flag (a read transaction says so).
  bool IsFatal() {
    MDB_txn* txn = nullptr;
    const int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
    if (rc == 0)
      mdb_txn_abort(txn);
    return rc == MDB_PANIC;
  }

  // Closes the environment and opens the file again (on the writer's thread; readers
  // wait). Until it succeeds, every call fails and the next commit tries again.
  absl::Status Reopen() {
    std::unique_lock lock(env_mu_);
    if (env_ != nullptr)
      mdb_env_close(env_);
    env_ = nullptr;
    auto opened = OpenEnv(path_, options_);
    if (!opened.ok()) {
      reopen_error_ = std::string(opened.status().message());
      return absl::Status(opened.status().code(), "state DB " + path_ +
                                                      " had a fatal write error and could not be "
                                                      "opened again: " +
                                                      std::string(opened.status().message()));
    }
    env_ = opened->first;
    dbi_ = opened->second;
    return absl::OkStatus();
  }

  absl::Status Unavailable() const {
    return absl::UnavailableError("state DB " + path_ +
                                  " is not open after a fatal write error: " + reopen_error_);
  }

  absl::Status Apply(MDB_txn* txn, const std::vector<KvOp>& ops) {
    for (const KvOp& op : ops) {
      MDB_val k = Val(op.key);
      int rc = 0;
      switch (op.kind) {
        case KvOp::Kind::kPut: {
          const std::string framed = Frame(op.key, op.value);
          MDB_val v = Val(framed);
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
      if (View(k) == kFramedMarker) {
        rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
        continue;
      }
      if ((rc = mdb_cursor_del(cursor, 0)) != 0)
        break;
      // After a delete the cursor rests on the next item.
      rc = mdb_cursor_get(cursor, &k, &v, MDB_GET_CURRENT);
    }
    mdb_cursor_close(cursor);
    return rc == MDB_NOTFOUND || rc == EINVAL ? 0 : rc;
  }

  // Readers hold it shared; Reopen, which replaces env_, holds it alone. The writer's
  // own commits need it only to reopen (nothing else changes env_).
  std::shared_mutex env_mu_;
  MDB_env* env_;
  MDB_dbi dbi_;
  std::string path_;
  LmdbOptions options_;
  std::string reopen_error_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<KvBackend>> OpenLmdb(const std::filesystem::path& path,
                                                    LmdbOptions options) {
  const std::string p = path.string();
  // LMDB writes its two meta pages when it creates a file: an existing empty file was
  // cut short, not new, and LMDB would silently start it over.
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  if (existed && std::filesystem::file_size(path, ec) == 0 && !ec) {
    return absl::DataLossError("state DB " + p +
                               " is empty (0 bytes): it was cut short, or the agent stopped "
                               "while creating it");
  }
  if (existed) {
    if (absl::Status s = VerifyInChild(p, options.map_size); !s.ok())
      return s;
  }
  auto opened = OpenEnv(p, options);
  if (!opened.ok())
    return opened.status();
  auto backend = std::make_unique<LmdbBackend>(opened->first, opened->second, p, options);
  if (absl::Status s = backend->EnsureFramed(); !s.ok())
    return s;
  return std::unique_ptr<KvBackend>(std::move(backend));
}

absl::Status BackupStateFile(const std::filesystem::path& file,
                             const std::filesystem::path& backup) {
  std::error_code ec;
  std::filesystem::copy_file(file, backup, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec)
    return absl::InternalError("failed to back up '" + file.string() + "' to '" + backup.string() +
                               "': " + ec.message());
  std::filesystem::permissions(
      backup, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
  if (ec)
    return absl::InternalError("failed to restrict '" + backup.string() + "': " + ec.message());
  if (absl::Status s = SyncFile(backup, O_RDONLY); !s.ok())
    return s;
  return SyncFile(backup.parent_path(), O_RDONLY | O_DIRECTORY);
}

}  // namespace drover::state
