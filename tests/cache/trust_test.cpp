// What the cache trusts: signed records (a record that is unsigned, signed
// with another key or altered is never handed to the backend, from disk or
// from Redis), a folder nobody else can write, and writes that a killed
// process never leaves half done.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "cache/kernel_cache.h"
#include "tests/support/redis_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_artifact.h"

namespace shapejit::cache {
namespace {

namespace fs = std::filesystem;
using testing::RedisServer;
using testing::TempDir;

Hash128 key_of(int i) { return Hasher().add(static_cast<uint64_t>(i) + 7000).finish(); }

const std::string kKeyA(32, 'a'), kKeyB(40, 'b'), kKeyC(32, 'c');

Signer signer_of(std::vector<std::string> keys) { return std::move(Signer::with_keys(std::move(keys))).value(); }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The three records a signed cache must refuse, for `key`: unsigned, signed
// with a key it does not hold, and signed but altered with its checksum
// made right again (the payload re-encoded, the old signature kept).
std::vector<std::pair<std::string, std::string>> forgeries(const Hash128& key, const std::string& target) {
  const std::string good = encode_record(key, target, "the real kernel", signer_of({kKeyA}));
  // Another payload of the same length with the good record's signature in
  // place of its own (its checksum, which anyone can compute, made right).
  std::string altered = encode_record(key, target, "an evil kernel!", signer_of({kKeyC}));
  altered.replace(altered.size() - Signer::kSignatureBytes, Signer::kSignatureBytes, good.substr(good.size() - Signer::kSignatureBytes));
  return {{"unsigned", encode_record(key, target, "an evil kernel!")},
          {"foreign key", encode_record(key, target, "an evil kernel!", signer_of({kKeyC}))},
          {"altered", altered}};
}

// ---- keys ----

TEST(Signer, KeysComeFromFilesOrTheEnvironmentAndShortOnesAreRefused) {
  TempDir tmp;
  write_all(tmp.path() + "/k1", std::string(64, 'f') + "\n");
  write_all(tmp.path() + "/short", "0123456789\n");
  ::unsetenv(Signer::kKeysVariable);
  auto s = Signer::load({tmp.path() + "/k1"});
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_TRUE(s->enabled());
  // The trailing newline is not part of the key.
  const std::string bytes = "some record";
  EXPECT_TRUE(signer_of({std::string(64, 'f')}).verify(bytes, s->sign(bytes)));
  EXPECT_FALSE(Signer().enabled());
  EXPECT_TRUE(Signer::load({}).is_ok() && !Signer::load({})->enabled());

  auto missing = Signer::load({tmp.path() + "/none"});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("cannot read \"" + tmp.path() + "/none\""), std::string::npos) << missing.status().message();
  auto short_key = Signer::load({tmp.path() + "/short"});
  ASSERT_FALSE(short_key.is_ok());
  EXPECT_NE(short_key.status().message().find("holds 10 bytes; a key needs at least 32"), std::string::npos) << short_key.status().message();

  // The environment replaces the files: hex keys, the first signs.
  ::setenv(Signer::kKeysVariable, (std::string(64, '0') + "," + std::string(66, '1')).c_str(), 1);
  auto env = Signer::load({tmp.path() + "/none"});
  ASSERT_TRUE(env.is_ok()) << env.status().message();
  EXPECT_EQ(env->key_count(), 2u);
  EXPECT_TRUE(signer_of({std::string(32, '\0')}).verify(bytes, env->sign(bytes)));
  for (const auto& [value, why] : std::vector<std::pair<std::string, std::string>>{
           {std::string(63, '0'), "key 1: an odd number of hex digits"},
           {std::string(64, '0') + ",00zz", "key 2: not a hex digit at character 3"},
           {std::string(62, '0'), "key 1: 31 bytes; at least 32 are needed (64 hex digits)"},
           {std::string(64, '0') + ",", "key 2: 0 bytes"}}) {
    ::setenv(Signer::kKeysVariable, value.c_str(), 1);
    auto bad = Signer::load({});
    ASSERT_FALSE(bad.is_ok()) << value;
    EXPECT_NE(bad.status().message().find(std::string(Signer::kKeysVariable) + ", " + why), std::string::npos) << bad.status().message();
  }
  ::unsetenv(Signer::kKeysVariable);
}

// ---- records ----

TEST(SignedRecord, VerifiesUnderAnyKeyOfTheRingAndRefusesEveryForgery) {
  const Hash128 key = key_of(1);
  const std::string rec = encode_record(key, "t", "the real kernel", signer_of({kKeyA}));
  Rejection why = Rejection::kNone;
  auto ok = decode_record(rec, key, "t", signer_of({kKeyA}), &why);
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(*ok, "the real kernel");
  EXPECT_EQ(why, Rejection::kNone);
  // Rotation: the new key first, the old one still verifies.
  EXPECT_TRUE(decode_record(rec, key, "t", signer_of({kKeyB, kKeyA})).is_ok());
  const std::string by_new = encode_record(key, "t", "the real kernel", signer_of({kKeyB, kKeyA}));
  EXPECT_FALSE(decode_record(by_new, key, "t", signer_of({kKeyA})).is_ok()) << "the first key signs";
  // Without keys, a signed record is read like any other.
  EXPECT_EQ(*decode_record(rec, key, "t"), "the real kernel");

  for (const auto& [name, bytes] : forgeries(key, "t")) {
    EXPECT_TRUE(decode_record(bytes, key, "t").is_ok()) << name << ": the checksum alone passes it";
    auto r = decode_record(bytes, key, "t", signer_of({kKeyA, kKeyB}), &why);
    ASSERT_FALSE(r.is_ok()) << name;
    EXPECT_EQ(why, Rejection::kSignature) << name;
    EXPECT_NE(r.status().message().find(name == "unsigned" ? "unsigned, and this process accepts only signed records"
                                                           : "made by none of this process's keys"),
              std::string::npos)
        << name << ": " << r.status().message();
  }
  // Every byte of a signed record flipped in turn: never accepted.
  for (size_t i = 0; i < rec.size(); ++i) {
    std::string bad = rec;
    bad[i] ^= 0x01;
    EXPECT_FALSE(decode_record(bad, key, "t", signer_of({kKeyA})).is_ok()) << "byte " << i;
  }
}

// ---- the kernel cache over signed tiers ----

// The backend counts what it is handed: a forged record must reach neither.
using testing::Counting;
using testing::Text;
using testing::text_of;

TEST(SignedTiers, AForgedFileIsNeverLoadedItIsCountedLoggedOnceAndCompiledAgain) {
  TempDir tmp;
  Counting c;
  std::vector<std::string> lines;
  KernelCache cache(0, TierOptions{tmp.path(), 1 << 20, {}, signer_of({kKeyA})}, [&](const std::string& l) { lines.push_back(l); });
  const auto forged = forgeries(key_of(0), "fake-target");
  for (size_t i = 0; i < forged.size(); ++i) write_all(cache.disk()->path_of(key_of(static_cast<int>(i))), forged[i].second);
  for (size_t i = 0; i < forged.size(); ++i) {
    auto f = cache.get(key_of(static_cast<int>(i)), c.maker("the real kernel"));
    EXPECT_EQ(text_of(f), "the real kernel") << forged[i].first;
    EXPECT_EQ(f->origin, Origin::kCompile) << forged[i].first;
  }
  EXPECT_EQ(c.loads.load(), 0) << "no forged payload reached the backend";
  EXPECT_EQ(c.compiles.load(), 3);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.tier("disk").counts.bad_signatures, 3u);
  EXPECT_EQ(s.tier("disk").counts.rejected, 3u);
  EXPECT_TRUE(s.signed_records);
  ASSERT_EQ(lines.size(), 2u) << "once per tier";
  EXPECT_NE(lines[0].find(cache.disk()->path_of(key_of(0)) + ": unsigned"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("further records from " + tmp.path() + " that fail their signature are counted"), std::string::npos) << lines[1];
  // What was compiled again is written signed, and loads.
  KernelCache again(0, TierOptions{tmp.path(), 1 << 20, {}, signer_of({kKeyA})}, {});
  EXPECT_EQ(again.get(key_of(1), c.maker("the real kernel"))->origin, Origin::kDisk);
  EXPECT_EQ(c.loads.load(), 1);
  // A process with another key compiles its own, and one without keys
  // reads signed records as it always read records.
  KernelCache other(0, TierOptions{tmp.path(), 1 << 20, {}, signer_of({kKeyB})}, {});
  EXPECT_EQ(other.get(key_of(2), c.maker("the real kernel"))->origin, Origin::kCompile);
  KernelCache unsigned_cache(0, TierOptions{tmp.path(), 1 << 20, {}, {}}, {});
  EXPECT_EQ(unsigned_cache.get(key_of(2), c.maker("the real kernel"))->origin, Origin::kDisk);
}

TEST(SignedTiers, AForgedRedisValueIsNeverLoadedAndTheFleetGetsASignedOne) {
  RedisServer server;
  ASSERT_TRUE(server.start()) << "redis-server did not start (scripts/setup.sh installs it)";
  RedisOptions o;
  o.url = server.url();
  o.key_prefix = "trust:" + std::to_string(::getpid()) + ":";
  {
    auto writer = std::move(RedisTier::open(o, {})).value();
    const auto forged = forgeries(key_of(0), "fake-target");
    for (size_t i = 0; i < forged.size(); ++i) writer->put(key_of(static_cast<int>(i)), forged[i].second);
    writer->flush();
  }
  TempDir a, b;
  Counting c;
  std::vector<std::string> lines;
  {
    KernelCache cache(1 << 20, TierOptions{a.path(), 1 << 20, o, signer_of({kKeyA})}, [&](const std::string& l) { lines.push_back(l); });
    for (int i = 0; i < 3; ++i) EXPECT_EQ(cache.get(key_of(i), c.maker("the real kernel"))->origin, Origin::kCompile) << i;
    EXPECT_EQ(c.loads.load(), 0);
    EXPECT_EQ(cache.stats().tier("remote").counts.bad_signatures, 3u);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[0].find("redis at " + server.url() + ": the value of " + key_of(0).hex() + " is unusable (unsigned"), std::string::npos)
        << lines[0];
    cache.remote()->flush();  // the compiles replaced the forgeries, signed
  }
  KernelCache fleet(1 << 20, TierOptions{b.path(), 1 << 20, o, signer_of({kKeyA})}, {});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fleet.get(key_of(i), c.maker("the real kernel"))->origin, Origin::kRemote) << i;
  EXPECT_EQ(c.compiles.load(), 3);
}

// ---- the folder ----

// The line a KernelCache logs when its disk tier will not open `dir`.
std::string refusal(const std::string& dir) {
  std::vector<std::string> lines;
  KernelCache cache(1 << 20, TierOptions{dir, 1 << 20, {}, {}}, [&](const std::string& l) { lines.push_back(l); });
  if (cache.disk() != nullptr) return "the tier opened";
  return lines.size() == 1 ? lines[0] : std::to_string(lines.size()) + " lines";
}

TEST(DiskTierSafety, AFolderOthersCouldWriteIsRefusedWithOneLine) {
  TempDir tmp;
  const std::string real = tmp.path() + "/real", link = tmp.path() + "/link";
  ASSERT_TRUE(DiskTier::open(real, 1 << 20).is_ok());
  EXPECT_EQ(fs::status(real).permissions() & fs::perms::all, fs::perms::owner_all) << "a new folder is its user's alone";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  EXPECT_NE(refusal(link).find(link + " is a symbolic link"), std::string::npos) << refusal(link);
  for (const mode_t mode : {0777, 0775, 0757, 01777}) {
    ASSERT_EQ(::chmod(real.c_str(), mode), 0);
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(refusal(real).find(real + " is writable by its group or by others (mode " + text + ")"), std::string::npos) << refusal(real);
  }
  ASSERT_EQ(::chmod(real.c_str(), 0755), 0);
  EXPECT_EQ(refusal(real), "the tier opened");
  if (::geteuid() == 0) {  // a folder of another user's (only root can make one here)
    const passwd* nobody = ::getpwnam("nobody");
    ASSERT_NE(nobody, nullptr);
    ASSERT_EQ(::chown(real.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
    EXPECT_NE(refusal(real).find(real + " is owned by uid " + std::to_string(nobody->pw_uid) + ", not by this user"), std::string::npos)
        << refusal(real);
  }
}

TEST(DiskTierSafety, ARecordThatIsALinkIsNotFollowed) {
  TempDir tmp, elsewhere;
  auto tier = std::move(DiskTier::open(tmp.path(), 1 << 20)).value();
  const std::string target = elsewhere.path() + "/kernel.sjk";
  write_all(target, encode_record(key_of(1), "t", "planted"));
  ASSERT_EQ(::symlink(target.c_str(), tier->path_of(key_of(1)).c_str()), 0);
  std::string why;
  EXPECT_FALSE(tier->load(key_of(1), "t", &why).has_value());
  EXPECT_NE(why.find("a symbolic link, which the cache does not follow"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(fs::symlink_status(tier->path_of(key_of(1))))) << "the link is removed";
  EXPECT_EQ(read_all(target), encode_record(key_of(1), "t", "planted")) << "what it pointed to is untouched";
}

// ---- durable writes ----

TEST(DiskTierSafety, WritersKilledAtRandomPointsLeaveOnlyWholeRecords) {
  std::mt19937 rng(20261126);
  size_t records = 0, temporaries = 0;
  for (int round = 0; round < 100; ++round) {
    TempDir tmp;
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      auto tier = DiskTier::open(tmp.path(), 1 << 30, signer_of({kKeyA}));
      if (!tier.is_ok()) ::_exit(1);
      for (int i = 0;; ++i) {
        (void)(*tier)->store(key_of(i % 8), "t", std::string(size_t{64} << 10 | static_cast<size_t>(i), static_cast<char>('a' + i % 26)));
        if (i == 0 && (::write(ready[1], "1", 1) != 1 || ::close(ready[1]) != 0)) ::_exit(1);
      }
    }
    // The kill comes at a random point after the first record is whole, so
    // that how many rounds leave a record does not hang on how busy the
    // machine is (a loaded CI machine once let 70 writers die before it).
    ::close(ready[1]);
    char byte = 0;
    const bool stored = ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    if (stored) std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 4000)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && stored) << "round " << round << ": the writer failed on its own";
    auto tier = DiskTier::open(tmp.path(), 1 << 30, signer_of({kKeyA}));
    ASSERT_TRUE(tier.is_ok()) << tier.status().message();
    for (const DiskTier::File& f : (*tier)->list(/*verify=*/true)) {
      EXPECT_TRUE(f.status.is_ok()) << "round " << round << ": " << f.name << ": " << f.status.message();
      ++records;
    }
    for (const auto& e : fs::directory_iterator(tmp.path())) temporaries += e.path().filename().string().rfind(".tmp-", 0) == 0;
  }
  // Said so that a run shows the rounds were not all empty.
  std::printf("100 writers killed: %zu whole records left, %zu temporary files (never read)\n", records, temporaries);
  EXPECT_GE(records, 100u) << "every round's first record was whole before its kill";
}

}  // namespace
}  // namespace shapejit::cache
