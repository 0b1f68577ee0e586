// The cache's lower tiers: the record format, the disk tier (eviction,
// corruption of every kind, folders that cannot be written, two processes
// at once) and the kernel cache over them, with artifacts that are strings.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "cache/kernel_cache.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_artifact.h"

namespace shapejit::cache {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

Hash128 key_of(int i) { return Hasher().add(static_cast<uint64_t>(i)).finish(); }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// ---- the record ----

TEST(Record, RoundTripsAndRejectsEveryKindOfDamage) {
  const Hash128 key = key_of(1);
  const std::string payload = "\x7f" "ELF object bytes \0 with a NUL";
  const std::string rec = encode_record(key, "llvm x86_64", payload);
  auto ok = decode_record(rec, key, "llvm x86_64");
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(*ok, payload);
  auto why = [&](const std::string& bytes, const Hash128& k = key_of(1), const std::string& target = "llvm x86_64") {
    auto r = decode_record(bytes, k, target);
    EXPECT_FALSE(r.is_ok());
    return r.is_ok() ? std::string() : r.status().message();
  };
  // Cut at every length: never accepted.
  for (size_t n = 0; n < rec.size(); ++n) EXPECT_FALSE(decode_record(rec.substr(0, n), key, "llvm x86_64").is_ok()) << n;
  EXPECT_NE(why(rec.substr(0, rec.size() - 3)).find("truncated"), std::string::npos);
  EXPECT_NE(why(rec + "x").find("trailing bytes"), std::string::npos);
  // Every bit of the payload flipped in turn: the checksum catches it.
  for (size_t bit = 0; bit < payload.size() * 8; ++bit) {
    std::string bad = rec;
    bad[kRecordHeaderBytes + 11 + bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_NE(why(bad).find("checksum"), std::string::npos) << bit;
  }
  // Every bit of the target too, where a check that accepts any target
  // (the cache command's verify) has nothing else to catch it; and of the
  // key, read against a key that is none of those.
  for (size_t bit = 0; bit < 11 * 8; ++bit) {
    std::string bad = rec;
    bad[kRecordHeaderBytes + bit / 8] ^= static_cast<char>(1 << (bit % 8));
    auto any = decode_record(bad, key, "");
    ASSERT_FALSE(any.is_ok()) << bit;
    EXPECT_NE(any.status().message().find("checksum"), std::string::npos) << bit << ": " << any.status().message();
  }
  for (size_t bit = 0; bit < 16 * 8; ++bit) {
    std::string bad = rec;
    bad[16 + bit / 8] ^= static_cast<char>(1 << (bit % 8));
    auto r = decode_record(bad, decode_header(bad)->key, "");
    ASSERT_FALSE(r.is_ok()) << bit;
    EXPECT_NE(r.status().message().find("checksum"), std::string::npos) << bit;
  }
  std::string foreign = rec;
  foreign[0] = 'X';
  EXPECT_NE(why(foreign).find("not a shapejit cache record"), std::string::npos);
  EXPECT_NE(why("#!/bin/sh\necho hello\n").find("not a shapejit cache record"), std::string::npos);
  std::string version = rec;
  version[8] = 1;
  EXPECT_NE(why(version).find("format version 1 (this shapejit reads 3)"), std::string::npos);
  EXPECT_NE(why(rec, key_of(2)).find("holds key " + key.hex()), std::string::npos);
  EXPECT_NE(why(rec, key, "llvm aarch64").find("built for \"llvm x86_64\""), std::string::npos);
  // The header alone, for listings.
  auto h = decode_header(rec);
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(h->key, key);
  EXPECT_EQ(h->target, "llvm x86_64");
  EXPECT_EQ(h->payload_bytes, payload.size());
}

// ---- the disk tier ----

TEST(DiskTier, StoresLoadsAndMakesItsFolder) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/a/b/c";
  auto tier = DiskTier::open(dir, 1 << 20);
  ASSERT_TRUE(tier.is_ok()) << tier.status().message();
  EXPECT_FALSE((*tier)->load(key_of(1), "t").has_value());
  ASSERT_TRUE((*tier)->store(key_of(1), "t", "payload one").is_ok());
  std::string rejected;
  EXPECT_EQ((*tier)->load(key_of(1), "t", &rejected), "payload one");
  EXPECT_TRUE(rejected.empty());
  // Nothing but the entry and the usage file is left behind (no temporary file).
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{key_of(1).hex() + ".sjk", DiskTier::kUsageFile}));
}

TEST(DiskTier, EvictsTheLeastRecentlyUsedDownToItsBound) {
  TempDir tmp;
  const std::string payload(1000, 'x');  // a record is 1000 + 56 + 1 bytes
  auto tier = std::move(DiskTier::open(tmp.path(), 5 * 1057)).value();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(tier->store(key_of(i), "t", payload).is_ok());
    // Distinct times, oldest first.
    const timespec times[2] = {{0, UTIME_OMIT}, {1000 + i, 0}};
    ::utimensat(AT_FDCWD, tier->path_of(key_of(i)).c_str(), times, 0);
  }
  ASSERT_TRUE(tier->load(key_of(0), "t").has_value());  // 0 is now the most recent
  ASSERT_TRUE(tier->store(key_of(5), "t", payload).is_ok());
  EXPECT_TRUE(fs::exists(tier->path_of(key_of(0))));
  EXPECT_FALSE(fs::exists(tier->path_of(key_of(1))));  // the least recently used
  for (int i : {2, 3, 4, 5}) EXPECT_TRUE(fs::exists(tier->path_of(key_of(i)))) << i;
}

TEST(DiskTier, EveryKindOfBadFileIsRemovedWithItsReason) {
  TempDir tmp;
  auto tier = std::move(DiskTier::open(tmp.path(), 1 << 20)).value();
  const std::string good = encode_record(key_of(1), "t", "the payload");
  struct Case {
    const char* what;
    std::string bytes;
    const char* reason;
  };
  std::string flipped = good;
  flipped.back() ^= 0x10;
  std::string version = good;
  version[8] = 9;
  const std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() - 4), "truncated"},
      {"empty", "", "bad magic"},
      {"bit-flipped", flipped, "checksum mismatch"},
      {"foreign", "GIF89a not ours at all, but long enough to have a header........", "bad magic"},
      {"wrong version", version, "format version 9"},
      {"wrong key", encode_record(key_of(2), "t", "the payload"), "holds key"},
      {"wrong target", encode_record(key_of(1), "other", "the payload"), "built for \"other\""},
  };
  for (const Case& c : cases) {
    write_all(tier->path_of(key_of(1)), c.bytes);
    std::string rejected;
    EXPECT_FALSE(tier->load(key_of(1), "t", &rejected).has_value()) << c.what;
    EXPECT_NE(rejected.find(c.reason), std::string::npos) << c.what << ": " << rejected;
    EXPECT_NE(rejected.find(tier->path_of(key_of(1))), std::string::npos) << c.what << ": the line names the file";
    EXPECT_FALSE(fs::exists(tier->path_of(key_of(1)))) << c.what << ": removed";
  }
}

TEST(DiskTier, ListsAndVerifiesAndClears) {
  TempDir tmp;
  auto tier = std::move(DiskTier::open(tmp.path(), 1 << 20)).value();
  ASSERT_TRUE(tier->store(key_of(1), "llvm a", "one").is_ok());
  ASSERT_TRUE(tier->store(key_of(2), "llvm a", "two").is_ok());
  std::string bad = read_all(tier->path_of(key_of(2)));
  bad.back() ^= 1;
  write_all(tier->path_of(key_of(2)), bad);
  write_all(tier->path_of(key_of(3)), read_all(tier->path_of(key_of(1))));  // a copy under another name
  auto files = tier->list(/*verify=*/true);
  ASSERT_EQ(files.size(), 3u);
  int ok = 0;
  for (const auto& f : files) {
    ASSERT_TRUE(f.header.has_value());
    EXPECT_EQ(f.header->target, "llvm a");
    if (f.status.is_ok()) ++ok;
    else if (f.name == key_of(2).hex() + ".sjk") EXPECT_NE(f.status.message().find("checksum"), std::string::npos);
    else EXPECT_NE(f.status.message().find("holds key"), std::string::npos) << f.status.message();
  }
  EXPECT_EQ(ok, 1);
  auto removed = tier->clear();
  ASSERT_TRUE(removed.is_ok());
  EXPECT_EQ(*removed, 3u);
  EXPECT_TRUE(tier->list(false).empty());
}

TEST(DiskTier, AFolderThatCannotBeMadeOrWrittenIsAnError) {
  TempDir tmp;
  write_all(tmp.path() + "/file", "x");
  auto under_file = DiskTier::open(tmp.path() + "/file/cache", 1 << 20);
  ASSERT_FALSE(under_file.is_ok());
  EXPECT_NE(under_file.status().message().find("cannot make " + tmp.path() + "/file/cache"), std::string::npos) << under_file.status().message();
  auto is_file = DiskTier::open(tmp.path() + "/file", 1 << 20);
  ASSERT_FALSE(is_file.is_ok());
  EXPECT_NE(is_file.status().message().find("is not a folder"), std::string::npos) << is_file.status().message();
}

// Runs `body` in a child process that is not root (root writes through
// permission bits), and returns its exit status.
template <typename F>
int as_unprivileged_child(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0) {
      const passwd* nobody = ::getpwnam("nobody");
      if (!nobody || ::setgid(nobody->pw_gid) != 0 || ::setuid(nobody->pw_uid) != 0) ::_exit(99);
    }
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(DiskTier, AReadOnlyFolderTurnsTheTierOffWithOneLine) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/ro";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
  // The child's own folder (a folder of another user's is refused for that
  // alone: DiskTierSafety), which it cannot write.
  if (::geteuid() == 0) {
    const passwd* nobody = ::getpwnam("nobody");
    ASSERT_NE(nobody, nullptr);
    ASSERT_EQ(::chown(dir.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  }
  const int rc = as_unprivileged_child([&] {
    std::vector<std::string> lines;
    KernelCache cache(1 << 20, TierOptions{dir, 1 << 20, {}, {}}, [&](const std::string& l) { lines.push_back(l); });
    if (cache.disk() != nullptr) return 1;
    if (lines.size() != 1 || lines[0].find("the disk tier is off") == std::string::npos || lines[0].find("cannot write in " + dir) == std::string::npos) {
      return 2;
    }
    Maker m;
    m.target = "t";
    m.compile = [](std::string* image) -> Expected<std::unique_ptr<Artifact>> {
      struct A : Artifact {
        size_t code_bytes() const override { return 1; }
      };
      if (image) *image = "img";
      return std::unique_ptr<Artifact>(new A);
    };
    m.load = [](std::string_view) -> Expected<std::unique_ptr<Artifact>> { return internal_error("never"); };
    return cache.get(key_of(1), m).is_ok() && lines.size() == 1 ? 0 : 3;  // calls go on, quietly
  });
  EXPECT_EQ(rc, 0);
}

// ---- the kernel cache over the tiers ----

using testing::Counting;
using testing::Text;
using testing::text_of;

TEST(KernelCacheTiers, ACompileIsWrittenAndAnotherCacheLoadsItWithoutCompiling) {
  TempDir tmp;
  Counting c;
  {
    KernelCache first(1 << 20, TierOptions{tmp.path(), 1 << 20, {}, {}}, {});
    auto f = first.get(key_of(1), c.maker("kernel one"));
    EXPECT_EQ(text_of(f), "kernel one");
    EXPECT_EQ(f->origin, Origin::kCompile);
    EXPECT_EQ(first.stats().tier("disk").counts.writes, 1u);
    EXPECT_EQ(first.get(key_of(1), c.maker("kernel one"))->origin, Origin::kMemory);
  }
  KernelCache second(1 << 20, TierOptions{tmp.path(), 1 << 20, {}, {}}, {});
  auto f = second.get(key_of(1), c.maker("kernel one"));
  EXPECT_EQ(text_of(f), "kernel one");
  EXPECT_EQ(f->origin, Origin::kDisk);
  EXPECT_EQ(c.compiles.load(), 1);
  EXPECT_EQ(c.loads.load(), 1);
  EXPECT_EQ(second.stats().tier("disk").counts.loads, 1u);
  // get_local sees memory and disk, and compiles nothing.
  KernelCache third(1 << 20, TierOptions{tmp.path(), 1 << 20, {}, {}}, {});
  EXPECT_FALSE(third.get_local(key_of(2), c.maker("two")).has_value());
  auto local = third.get_local(key_of(1), c.maker("kernel one"));
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->origin, Origin::kDisk);
  EXPECT_EQ(c.compiles.load(), 1);
}

TEST(KernelCacheTiers, ACorruptOrUnloadableFileIsLoggedRemovedAndRecompiled) {
  TempDir tmp;
  Counting c;
  std::vector<std::string> lines;
  KernelCache cache(0, TierOptions{tmp.path(), 1 << 20, {}, {}}, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(cache.get(key_of(1), c.maker("k1")).is_ok());
  ASSERT_TRUE(cache.get(key_of(2), c.maker("k2")).is_ok());  // capacity 0: k1 leaves memory
  const std::string path = cache.disk()->path_of(key_of(1));
  std::string bytes = read_all(path);
  bytes[bytes.size() - 1] ^= 0x40;
  write_all(path, bytes);
  auto f = cache.get(key_of(1), c.maker("k1"));
  EXPECT_EQ(text_of(f), "k1");
  EXPECT_EQ(f->origin, Origin::kCompile);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(path + ": checksum mismatch: the record is corrupt; removed, the kernel is compiled again"), std::string::npos) << lines[0];
  EXPECT_EQ(read_all(path), encode_record(key_of(1), "fake-target", "k1"));  // written again, whole

  // A record that passes its checks but that the backend cannot load.
  ASSERT_TRUE(cache.get(key_of(3), c.maker("k3")).is_ok());
  write_all(cache.disk()->path_of(key_of(1)), encode_record(key_of(1), "fake-target", "unloadable"));
  lines.clear();
  EXPECT_EQ(text_of(cache.get(key_of(1), c.maker("k1"))), "k1");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("the backend cannot load it (the backend cannot link it)"), std::string::npos) << lines[0];
  EXPECT_EQ(cache.stats().tier("disk").counts.rejected, 2u);
}

TEST(KernelCacheTiers, AFolderUnderARecordsNameIsLeftAndTheTierStaysOn) {
  TempDir tmp;
  Counting c;
  std::vector<std::string> lines;
  KernelCache cache(0, TierOptions{tmp.path(), 1 << 20, {}, {}}, [&](const std::string& l) { lines.push_back(l); });
  const std::string path = cache.disk()->path_of(key_of(1));
  fs::create_directory(path);
  auto f = cache.get(key_of(1), c.maker("k1"));
  EXPECT_EQ(text_of(f), "k1");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(path + ": not a regular file; left as it is"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("warning: cache: " + path + " is not a record"), std::string::npos) << lines[1];
  EXPECT_TRUE(fs::is_directory(path));
  EXPECT_TRUE(cache.stats().tier("disk").on);
  ASSERT_TRUE(cache.get(key_of(2), c.maker("k2")).is_ok());  // other keys are written and read
  EXPECT_EQ(read_all(cache.disk()->path_of(key_of(2))), encode_record(key_of(2), "fake-target", "k2"));
  ASSERT_TRUE(cache.get(key_of(3), c.maker("k3")).is_ok());  // capacity 0: k2 leaves memory
  EXPECT_EQ(cache.get(key_of(2), c.maker("k2"))->origin, Origin::kDisk);
}

TEST(KernelCacheTiers, AFullFolderTurnsTheTierOffWithOneLineAndCallsGoOn) {
  TempDir tmp;
  Counting c;
  std::vector<std::string> lines;
  KernelCache cache(1 << 20, TierOptions{tmp.path(), 1 << 30, {}, {}}, [&](const std::string& l) { lines.push_back(l); });
  // A file size limit stands in for a full disk: writes past it fail (EFBIG
  // where ENOSPC would be), and SIGXFSZ is ignored so that they return.
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto a = cache.get(key_of(1), c.maker(std::string(4096, 'a')));
  auto b = cache.get(key_of(2), c.maker(std::string(4096, 'b')));
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(a.is_ok());
  EXPECT_TRUE(b.is_ok());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("the disk tier at " + tmp.path() + " is off"), std::string::npos) << lines[0];
  EXPECT_EQ(cache.disk(), nullptr);
  EXPECT_FALSE(cache.stats().tier("disk").on);
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename(), DiskTier::kUsageFile) << "no half-written file is left";
  }
}

// ---- two processes on one folder ----

// Runs `body(i)` in `n` child processes at once; true when all exit 0.
template <typename F>
bool in_processes(int n, F body) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(body(i));
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

TEST(DiskTierProcesses, TwoProcessesWritingOneKeyWhileAThirdReadsNeverShowHalfAFile) {
  TempDir tmp;
  const std::string a(64 << 10, 'a'), b(64 << 10, 'b');
  ASSERT_TRUE(in_processes(3, [&](int i) {
    auto tier = DiskTier::open(tmp.path(), 1 << 30);
    if (!tier.is_ok()) return 1;
    for (int round = 0; round < 300; ++round) {
      if (i < 2) {
        if (!(*tier)->store(key_of(7), "t", i == 0 ? a : b).is_ok()) return 2;
      } else {
        std::string rejected;
        std::optional<std::string> got = (*tier)->load(key_of(7), "t", &rejected);
        if (!rejected.empty()) return 3;  // a torn or half-written file
        if (got && *got != a && *got != b) return 4;
      }
    }
    return 0;
  }));
  auto tier = std::move(DiskTier::open(tmp.path(), 1 << 30)).value();
  const auto got = tier->load(key_of(7), "t");
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == a || *got == b);
  EXPECT_EQ(tier->list(false).size(), 1u) << "one file, no temporaries left";
}

TEST(DiskTierProcesses, EvictionKeepsTheFolderUnderItsBoundAcrossProcesses) {
  // Each process alone would stay under the bound; only a count shared by
  // all of them keeps the folder under it. (An estimate of each process's
  // own writes since its last scan once left two writers' folder 62% over.)
  for (int round = 0; round < 5; ++round) {
    TempDir tmp;
    const uint64_t bound = 20 * 1100;
    // Four processes write 30 distinct 1 KB entries each; any of them evicts.
    ASSERT_TRUE(in_processes(4, [&](int i) {
      auto tier = DiskTier::open(tmp.path(), bound);
      if (!tier.is_ok()) return 1;
      for (int k = 0; k < 30; ++k) {
        if (!(*tier)->store(key_of(i * 1000 + k), "t", std::string(1000, static_cast<char>('a' + i))).is_ok()) return 2;
      }
      return 0;
    }));
    uint64_t total = 0;
    size_t entries = 0;
    for (const auto& e : fs::directory_iterator(tmp.path())) {
      if (e.path().extension() != ".sjk") continue;
      total += e.file_size();
      ++entries;
    }
    EXPECT_LE(total, bound) << "round " << round;
    EXPECT_GE(entries, 15u) << "evicted down to the bound, not emptied";
    // The usage file counts exactly what is there: eight bytes, little-endian.
    const std::string usage = read_all(tmp.path() + "/" + DiskTier::kUsageFile);
    ASSERT_EQ(usage.size(), 8u);
    uint64_t counted = 0;
    for (int b = 7; b >= 0; --b) counted = counted << 8 | static_cast<unsigned char>(usage[b]);
    EXPECT_EQ(counted, total) << "round " << round;
    // Every survivor is whole.
    auto tier = std::move(DiskTier::open(tmp.path(), bound)).value();
    for (const auto& f : tier->list(/*verify=*/true)) EXPECT_TRUE(f.status.is_ok()) << f.name << ": " << f.status.message();
  }
}

}  // namespace
}  // namespace shapejit::cache
