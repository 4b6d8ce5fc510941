// libFuzzer target for the receiving side of ephemeral disk migration
// (snapshot_extract.h): any input is an archive another node sent. It is unpacked into
// a fresh alloc dir, in pieces whose size the input's first byte picks; afterwards
// nothing may exist outside that alloc dir, and nothing in it may be setuid or setgid.
// A violation aborts, as does a crash, leak, undefined behaviour or hang. `make test`
// runs it briefly, `make fuzz` longer (scripts/fuzz.sh).
#include <stdlib.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "client/allocdir/snapshot_extract.h"

namespace {

namespace fs = std::filesystem;

struct Dirs {
  fs::path base;
  fs::path root;     // the alloc root: holds only the alloc dir "new"
  fs::path outside;  // must stay empty
};

// The temp dir, removed at exit (a plain array: it outlives every static object).
char g_base[] = "/tmp/drover-snapshot-fuzz-XXXXXX";

const Dirs& TheDirs() {
  static const Dirs dirs = [] {
    char* tmpl = g_base;
    if (mkdtemp(tmpl) == nullptr)
      abort();
    atexit([] {
      std::error_code ec;
      fs::remove_all(g_base, ec);
    });
    Dirs d{.base = tmpl,
           .root = fs::path(tmpl) / "a" / "b" / "root",
           .outside = fs::path(tmpl) / "outside"};
    fs::create_directories(d.root);
    fs::create_directories(d.outside);
    return d;
  }();
  return dirs;
}

void Check(const Dirs& d) {
  if (!fs::is_empty(d.outside))
    abort();
  for (const auto& e : fs::directory_iterator(d.root)) {
    if (e.path().filename() != "new")
      abort();
  }
  for (const fs::path& p : {d.base, d.base / "a", d.base / "a" / "b"}) {
    for (const auto& e : fs::directory_iterator(p)) {
      const std::string name = e.path().filename();
      if (name != "a" && name != "b" && name != "root" && name != "outside")
        abort();
    }
  }
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(d.root / "new", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) != 0)
      abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Dirs& d = TheDirs();
  drover::allocdir::AllocDir dest(d.root, "new");
  if (!dest.Destroy().ok() || !dest.Build().ok())
    abort();
  auto x = drover::allocdir::SnapshotExtractor::Open(dest, "prev", {"web", "db"}, 1 << 20);
  if (!x.ok())
    abort();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const size_t piece = bytes.empty() ? 1 : 1 + static_cast<uint8_t>(bytes[0]) * 4;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    if (!(*x)->Feed(bytes.substr(at, piece)).ok())
      break;
  }
  (void)(*x)->Finish();
  Check(d);
  return 0;
}
