// The disk tier: one file per key in a folder, shared by every process that
// opens it (DESIGN.md, Cache).
//
// A file is a record (record.h) named <key in hex>.sjk. A write goes to a
// temporary file in the same folder, renamed into place: a reader sees the
// whole old file or the whole new one, never half of either, and two
// processes writing one key at once leave one whole file. Recency is the
// file's modification time, which a load renews; a writer scans the folder
// and removes the least recently used files until it is under its bound
// (when its estimate says the folder may be over, and every few writes),
// so any process evicts for all of them. A file
// that fails its checks is removed and reported, and its kernel compiled
// again; a folder that cannot be written turns the tier off (KernelCache).
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

namespace shapejit::cache {

using Log = std::function<void(const std::string&)>;

// The folder the config's empty `cache.disk.path` means:
// $XDG_CACHE_HOME/shapejit, else ~/.cache/shapejit; empty when neither is set.
std::string default_disk_dir();

class DiskTier {
 public:
  // The tier over `dir`, made when missing; an error that says why when it
  // cannot be made or written (read-only, not a folder, no space).
  static Expected<std::unique_ptr<DiskTier>> open(const std::string& dir, uint64_t max_bytes);
  // The folder as it is, to look at (the cache command): made and written
  // by nothing but `clear`.
  static std::unique_ptr<DiskTier> inspect(const std::string& dir, uint64_t max_bytes);

  const std::string& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }
  std::string path_of(const Hash128& key) const;

  // The payload stored under `key` for `target`, or nullopt when there is
  // none. A file that fails its checks is removed; `rejected` then says
  // why, in one line that names the file.
  std::optional<std::string> load(const Hash128& key, std::string_view target, std::string* rejected = nullptr);
  // Writes the record and evicts down to the bound; an error means the
  // folder can no longer be written (full, read-only, gone).
  Status store(const Hash128& key, std::string_view target, std::string_view payload);
  void remove(const Hash128& key);

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
  // Removes every entry and stray temporary file; the count removed.
  Expected<size_t> clear();

 private:
  DiskTier(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  // Scans the folder and evicts down to the bound; what it found is the
  // estimate later writes add to.
  void evict();

  std::string dir_;
  uint64_t max_bytes_;
  // The folder's bytes as of the last scan plus this process's writes
  // since: a write scans when that passes the bound, or after
  // kScanEvery writes (other processes write too). A scan reads every
  // file's size, milliseconds for thousands of files, so not every write.
  std::mutex scan_mu_;
  uint64_t estimate_ = 0;
  int writes_since_scan_ = 0;
};

}  // namespace shapejit::cache
