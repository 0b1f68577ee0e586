// The disk tier: one file per key in a folder, shared by every process that
// opens it (DESIGN.md, Cache).
//
// A file is a record (record.h) named <key in hex>.sjk. A write goes to a
// temporary file in the same folder, flushed to the disk and renamed into
// place, and then the folder is flushed: a reader sees the whole old file or
// the whole new one, never half of either, two processes writing one key at
// once leave one whole file, and neither a killed process nor a lost machine
// leaves a record that a later run must reject. Recency is the file's
// modification time, which a load renews.
//
// The folder holds code that every process on it runs, so the tier refuses
// one that others could write to: a symbolic link, a folder writable by its
// group or by others, or one owned by another user (the tier is then off,
// with a line that says why, as for a folder it cannot write). Files are
// opened relative to the folder opened at the start, never through a link.
// Records are signed and checked with the tier's signer (signer.h).
//
// The bound holds for every process on the folder together. Beside the
// entries lies one small file, `.usage`: its lock (flock) orders the
// processes' renames into the folder and their scans of it, and its eight
// bytes count the entries' bytes. A writer adds its record to the count
// under the lock; when the count passes the bound (and every few writes,
// for drift), it scans the folder and removes the least recently used files
// until it is under. The count may run high (a file that fails its checks,
// or that someone else removes, is not subtracted), which costs a scan,
// never the bound. A file that fails its checks is removed and reported, and
// its kernel compiled again; a folder that cannot be written turns the tier
// off (KernelCache).
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/record.h"
#include "cache/tier.h"

namespace shapejit::cache {

using Log = std::function<void(const std::string&)>;

// The folder the config's empty `cache.disk.path` means:
// $XDG_CACHE_HOME/shapejit, else ~/.cache/shapejit; empty when neither is set.
std::string default_disk_dir();

class DiskTier final : public Tier {
 public:
  // The lock and count file beside the entries.
  static constexpr const char* kUsageFile = ".usage";

  // The tier over `dir`, made when missing; an error that says why when it
  // cannot be made or written (read-only, not a folder, no space).
  static Expected<std::unique_ptr<DiskTier>> open(const std::string& dir, uint64_t max_bytes, Signer signer = Signer());
  // The folder as it is, to look at (the cache command): made and written
  // by nothing but `clear`.
  static std::unique_ptr<DiskTier> inspect(const std::string& dir, uint64_t max_bytes, Signer signer = Signer());

  const std::string& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }
  std::string path_of(const Hash128& key) const;

  // The payload stored under `key` for `target`, or nullopt when there is
  // none. A file that fails its checks is removed (anything else under the
  // name, a folder, is left); `rejected` then says why and what became of
  // it, in one line that names the file, and `why` which kind of check.
  std::optional<std::string> load(const Hash128& key, std::string_view target, std::string* rejected = nullptr,
                                  Rejection* why = nullptr) override;
  // Writes the record and, when the folder passes its bound, evicts down to
  // it. kInvalidArgument: the key's name is taken by what is not a record (a
  // folder), which stays, and the record is not written; any other error
  // means the folder can no longer be written (full, read-only, gone).
  Status store(const Hash128& key, std::string_view target, std::string_view payload) override;
  void remove(const Hash128& key);

  // As a tier of the kernel cache (tier.h): the file the backend cannot
  // load is removed, and the kernel compiled again.
  std::string where() const override { return dir_; }
  bool local() const override { return true; }
  std::string unusable(const Hash128& key, const Status& why) override;
  static void describe(const Tier* tier, TierStats& s);

  // What the cache command shows: each entry's header, size and age, and
  // with `verify`, whether it passes every check.
  struct File {
    std::string name;
    uint64_t bytes = 0;
    std::time_t modified = 0;
    std::optional<RecordHeader> header;  // none when unreadable
    Status status;                       // with verify: the record's checks
  };
  std::vector<File> list(bool verify) const;
  // Removes every entry and stray temporary file; the count removed. The
  // usage count is left high, and the next write's scan sets it right.
  Expected<size_t> clear();

  ~DiskTier() override;
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

 private:
  DiskTier(std::string dir, uint64_t max_bytes, Signer signer) : dir_(std::move(dir)), max_bytes_(max_bytes), signer_(std::move(signer)) {}
  // With the folder locked: scans it, evicts down to the bound and writes
  // the count of what is left.
  void evict_locked();
  // The count in `.usage`; nullopt when it holds none yet.
  std::optional<uint64_t> read_usage() const;
  void write_usage(uint64_t bytes) const;

  std::string dir_;
  uint64_t max_bytes_;
  Signer signer_;
  int dir_fd_ = -1;    // the folder, opened once: files are found relative to it
  int usage_fd_ = -1;  // `.usage`, open for the tier's life (-1 for inspect)
  // Orders this process's threads, whom one open file's flock does not.
  std::mutex mu_;
  // A scan reads every file's size, milliseconds for thousands of files:
  // the count saves it on most writes, and one scan now and then corrects
  // what the count cannot see (files added by hand). It comes after as many
  // writes as the last scan saw files (at least kScanEvery), so that it
  // costs a write one file's stat on the average: a scan every 32 writes
  // made a folder of 40,000 kernels cost each write 1,300 stats.
  uint64_t writes_since_scan_ = 0;
  uint64_t files_at_scan_ = 0;
};

}  // namespace shapejit::cache
