#include "cache/disk_tier.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>

namespace shapejit::cache {

namespace {

constexpr const char* kSuffix = ".sjk";
constexpr const char* kTempPrefix = ".tmp-";
// A record larger than this is not one of ours.
constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 30;
// Writes between two scans of the folder, at least (disk_tier.h).
constexpr uint64_t kScanEvery = 32;
// A temporary file this old was left by a process that died mid-write.
constexpr std::time_t kStaleTempSeconds = 600;

Status io_error(const std::string& what, int err) { return Status(Code::kIo, what + ": " + std::strerror(err)); }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The whole file `name` in the folder `dir_fd`, or an error; never through
// a link, and bounded so that a huge foreign file is not read. `absent`
// says the error is only that there is no such file.
Expected<std::string> read_file(int dir_fd, const std::string& name, const std::string& path, bool* absent = nullptr) {
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && absent) *absent = errno == ENOENT;
  if (fd < 0 && errno == ELOOP) return Status(Code::kIo, path + ": a symbolic link, which the cache does not follow");
  if (fd < 0) return io_error(path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(Code::kIo, path + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxRecordBytes) {
    ::close(fd);
    return Status(Code::kIo, path + ": larger than any record (" + std::to_string(st.st_size) + " bytes)");
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error(path, err);
    }
    if (n == 0) break;  // shrank under us: the checks find it short
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

Status write_all(int fd, std::string_view bytes, const std::string& path) {
  size_t put = 0;
  while (put < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + put, bytes.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("writing " + path, errno);
    put += static_cast<size_t>(n);
  }
  return Status::ok();
}

// Holds the folder's lock (DiskTier::kUsageFile) for a scope. Without one
// (an inspecting tier, or a file system with no locks) the count is still
// kept, as best one process can.
class FolderLock {
 public:
  explicit FolderLock(int fd) : fd_(fd) {
    while (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) fd_ = -1;
    }
  }
  ~FolderLock() {
    if (fd_ >= 0) ::flock(fd_, LOCK_UN);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

// A listing of the folder open as `dir_fd`, or null.
DIR* open_listing(int dir_fd) {
  const int fd = dir_fd < 0 ? -1 : ::dup(dir_fd);
  if (fd < 0) return nullptr;
  DIR* d = ::fdopendir(fd);
  if (!d) ::close(fd);
  else ::rewinddir(d);
  return d;
}

std::string temp_name() {
  static std::atomic<uint64_t> next{0};
  return std::string(kTempPrefix) + std::to_string(::getpid()) + "-" + std::to_string(next++);
}

}  // namespace

std::string default_disk_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/shapejit";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/shapejit";
  return "";
}

// Why `dir` is no folder for code every process runs, or ok: it must be a
// folder (not a link to one) owned by this user that nobody else can write.
Status check_folder(int dir_fd, const std::string& dir) {
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0) return io_error(dir, errno);
  if (!S_ISDIR(st.st_mode)) return Status(Code::kIo, dir + " is not a folder");
  if (st.st_uid != ::geteuid()) {
    return Status(Code::kIo, dir + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " + std::to_string(::geteuid()) +
                                 "): its kernels would run as this user");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status(Code::kIo, dir + " is writable by its group or by others (mode " + mode +
                                 "), who could put code in it that this process runs; `chmod go-w` it");
  }
  return Status::ok();
}

Expected<std::unique_ptr<DiskTier>> DiskTier::open(const std::string& dir, uint64_t max_bytes, Signer signer) {
  if (dir.empty()) return Status(Code::kIo, "no folder (XDG_CACHE_HOME and HOME are unset)");
  // Made one level at a time, like mkdir -p; the folder itself for its
  // user alone.
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), slash == std::string::npos ? 0700 : 0755) != 0 && errno != EEXIST) return io_error("cannot make " + part, errno);
    if (slash == std::string::npos) break;
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(dir, max_bytes, std::move(signer)));
  tier->dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (tier->dir_fd_ < 0 && (errno == ELOOP || errno == ENOTDIR)) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return Status(Code::kIo, dir + " is a symbolic link; the cache folder must be the folder itself");
    }
    return Status(Code::kIo, dir + " is not a folder");
  }
  if (tier->dir_fd_ < 0) return io_error(dir, errno);
  SJ_TRY(check_folder(tier->dir_fd_, dir));
  // A probe write: a folder we cannot write is no cache (root passes the
  // permission bits, not a read-only mount).
  const std::string probe = temp_name();
  const int fd = ::openat(tier->dir_fd_, probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot write in " + dir, errno);
  Status wrote = write_all(fd, "probe", dir + "/" + probe);
  ::close(fd);
  ::unlinkat(tier->dir_fd_, probe.c_str(), 0);
  SJ_TRY(wrote);
  tier->usage_fd_ = ::openat(tier->dir_fd_, kUsageFile, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (tier->usage_fd_ < 0) return io_error("cannot open " + dir + "/" + kUsageFile, errno);
  {
    std::lock_guard<std::mutex> guard(tier->mu_);
    FolderLock lock(tier->usage_fd_);
    // A folder without a count is counted now; one with a count is not
    // scanned (a scan per open made every process with a cache of
    // 40,000 kernels spend a second in stat before its first call).
    if (!tier->read_usage()) tier->evict_locked();
  }
  return tier;
}

DiskTier::~DiskTier() {
  if (usage_fd_ >= 0) ::close(usage_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::unique_ptr<DiskTier> DiskTier::inspect(const std::string& dir, uint64_t max_bytes, Signer signer) {
  std::unique_ptr<DiskTier> tier(new DiskTier(dir, max_bytes, std::move(signer)));
  tier->dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // the command names it: a link is the user's choice
  return tier;
}

std::string DiskTier::path_of(const Hash128& key) const { return dir_ + "/" + key.hex() + kSuffix; }

std::optional<std::string> DiskTier::load(const Hash128& key, std::string_view target, std::string* rejected, Rejection* why) {
  const std::string name = key.hex() + kSuffix;
  const std::string path = dir_ + "/" + name;
  bool absent = false;
  Expected<std::string> bytes = read_file(dir_fd_, name, path, &absent);
  if (!bytes.is_ok()) {
    if (absent) return std::nullopt;  // a miss
    if (why) *why = Rejection::kMalformed;
    // A file is removed; a folder (or any other thing) under the name is
    // someone's, and is left where it is.
    const bool removed = ::unlinkat(dir_fd_, name.c_str(), 0) == 0;
    if (rejected) {
      *rejected = bytes.status().message() + (removed ? "; removed, the kernel is compiled again"
                                                      : "; left as it is, and the kernel is compiled (and not written there)");
    }
    return std::nullopt;
  }
  Rejection kind = Rejection::kNone;
  Expected<std::string_view> payload = decode_record(*bytes, key, target, signer_, &kind);
  if (!payload.is_ok()) {
    if (rejected) *rejected = path + ": " + payload.status().message() + "; removed, the kernel is compiled again";
    if (why) *why = kind;
    ::unlinkat(dir_fd_, name.c_str(), 0);
    return std::nullopt;
  }
  ::utimensat(dir_fd_, name.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // recently used: now
  return std::string(*payload);
}

Status DiskTier::store(const Hash128& key, std::string_view target, std::string_view payload) {
  const std::string record = encode_record(key, target, payload, signer_);
  const std::string temp = temp_name();
  const int fd = ::openat(dir_fd_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot write in " + dir_, errno);
  // On the disk before it has its name: a crash after the rename must not
  // leave the name on a file whose bytes never landed.
  Status wrote = write_all(fd, record, dir_ + "/" + temp);
  if (wrote.is_ok() && ::fsync(fd) != 0) wrote = io_error("flushing " + dir_ + "/" + temp, errno);
  if (::close(fd) != 0 && wrote.is_ok()) wrote = io_error("writing " + dir_ + "/" + temp, errno);
  if (!wrote.is_ok()) {
    ::unlinkat(dir_fd_, temp.c_str(), 0);
    return wrote;
  }
  // The rename and the count change together, under the folder's lock: no
  // process adds to the folder unseen by the count.
  const std::string name = key.hex() + kSuffix;
  std::lock_guard<std::mutex> guard(mu_);
  FolderLock lock(usage_fd_);
  struct stat old {};
  const uint64_t replaced = ::fstatat(dir_fd_, name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 ? static_cast<uint64_t>(old.st_size) : 0;
  if (::renameat(dir_fd_, temp.c_str(), dir_fd_, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir_fd_, temp.c_str(), 0);
    if (err == EISDIR || err == ENOTEMPTY || err == EEXIST || err == ENOTDIR) {
      return invalid(path_of(key) + " is not a record (a folder?): this kernel is not written to the disk");
    }
    return io_error("renaming into " + path_of(key), err);
  }
  // The rename itself, on the disk: the folder's entry.
  if (::fsync(dir_fd_) != 0) return io_error("flushing " + dir_, errno);
  const std::optional<uint64_t> before = read_usage();
  const uint64_t after = before ? *before - std::min(*before, replaced) + record.size() : 0;
  if (!before || after > max_bytes_ || ++writes_since_scan_ >= std::max(kScanEvery, files_at_scan_)) evict_locked();
  else write_usage(after);
  return Status::ok();
}

void DiskTier::remove(const Hash128& key) { ::unlinkat(dir_fd_, (key.hex() + kSuffix).c_str(), 0); }

std::string DiskTier::unusable(const Hash128& key, const Status& why) {
  remove(key);
  return path_of(key) + ": the backend cannot load it (" + why.message() + "); removed, the kernel is compiled again";
}

void DiskTier::describe(const Tier*, TierStats& s) {
  const TierCounts& c = s.counts;
  s.fields = {{"hits", c.loads}, {"misses", c.misses}, {"rejected", c.rejected}, {"bad_signatures", c.bad_signatures}, {"writes", c.writes}};
  s.part_fields = {{"disk_hits", c.part_loads}, {"disk_writes", c.part_writes}};
}

std::optional<uint64_t> DiskTier::read_usage() const {
  unsigned char bytes[8];
  if (usage_fd_ < 0 || ::pread(usage_fd_, bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) return std::nullopt;
  uint64_t count = 0;
  for (int i = 7; i >= 0; --i) count = count << 8 | bytes[i];  // little-endian on every host
  return count;
}

void DiskTier::write_usage(uint64_t count) const {
  unsigned char bytes[8];
  for (unsigned char& b : bytes) {
    b = static_cast<unsigned char>(count);
    count >>= 8;
  }
  // A count that fails to land is read short, or high: either costs the
  // next write a scan, nothing more.
  if (usage_fd_ >= 0) (void)::pwrite(usage_fd_, bytes, sizeof bytes, 0);
}

// Least recently used first, down to the bound; stray temporaries that a
// dead writer left go too.
void DiskTier::evict_locked() {
  struct Seen {
    std::string name;
    uint64_t bytes;
    struct timespec modified;
  };
  std::vector<Seen> files;
  uint64_t total = 0;
  const std::time_t now = std::time(nullptr);
  DIR* d = open_listing(dir_fd_);
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const bool temp = name.rfind(kTempPrefix, 0) == 0;
    if (!temp && !ends_with(name, kSuffix)) continue;
    struct stat st {};
    if (::fstatat(dir_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // removed by another process meanwhile
    if (temp) {
      if (now - st.st_mtime > kStaleTempSeconds) ::unlinkat(dir_fd_, name.c_str(), 0);
      continue;
    }
    files.push_back({name, static_cast<uint64_t>(st.st_size), st.st_mtim});
    total += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(d);
  const auto remember = [&](uint64_t kept) {
    write_usage(total);
    writes_since_scan_ = 0;
    files_at_scan_ = kept;
  };
  if (total <= max_bytes_) return remember(files.size());
  std::sort(files.begin(), files.end(), [](const Seen& a, const Seen& b) {
    return a.modified.tv_sec != b.modified.tv_sec ? a.modified.tv_sec < b.modified.tv_sec : a.modified.tv_nsec < b.modified.tv_nsec;
  });
  uint64_t kept = files.size();
  for (const Seen& f : files) {
    if (total <= max_bytes_) break;
    // Gone already (a load that found it corrupt) counts as removed.
    if (::unlinkat(dir_fd_, f.name.c_str(), 0) == 0 || errno == ENOENT) {
      total -= f.bytes;
      --kept;
    }
  }
  remember(kept);
}

std::vector<DiskTier::File> DiskTier::list(bool verify) const {
  std::vector<File> out;
  DIR* d = open_listing(dir_fd_);
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!ends_with(name, kSuffix)) continue;
    File f;
    f.name = name;
    const std::string path = dir_ + "/" + name;
    struct stat st {};
    if (::fstatat(dir_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    f.bytes = static_cast<uint64_t>(st.st_size);
    f.modified = st.st_mtime;
    Expected<std::string> bytes = read_file(dir_fd_, name, path);
    if (!bytes.is_ok()) {
      f.status = bytes.status();
    } else if (Expected<RecordHeader> h = decode_header(*bytes); !h.is_ok()) {
      f.status = h.status();
    } else {
      f.header = *h;
      // The name is the key: a file under another's name is as wrong as a bad checksum.
      if (verify) {
        const std::string stem = name.substr(0, name.size() - std::strlen(kSuffix));
        if (stem != h->key.hex()) f.status = Status(Code::kIo, "named " + stem + " but holds key " + h->key.hex());
        else if (Expected<std::string_view> p = decode_record(*bytes, h->key, h->target, signer_); !p.is_ok()) f.status = p.status();
      }
    }
    out.push_back(std::move(f));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const File& a, const File& b) { return a.modified != b.modified ? a.modified > b.modified : a.name < b.name; });
  return out;
}

Expected<size_t> DiskTier::clear() {
  DIR* d = open_listing(dir_fd_);
  if (!d) return io_error(dir_, dir_fd_ < 0 ? ENOENT : errno);
  size_t removed = 0;
  Status failed;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!ends_with(name, kSuffix) && name.rfind(kTempPrefix, 0) != 0) continue;
    if (::unlinkat(dir_fd_, std::string(name).c_str(), 0) == 0) ++removed;
    else if (errno != ENOENT && failed.is_ok()) failed = io_error("cannot remove " + dir_ + "/" + std::string(name), errno);
  }
  ::closedir(d);
  SJ_TRY(failed);
  return removed;
}

}  // namespace shapejit::cache
