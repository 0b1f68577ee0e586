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

// The whole file, or an error; bounded so that a huge foreign file is not
// read. `absent` says the error is only that there is no such file.
Expected<std::string> read_file(const std::string& path, bool* absent = nullptr) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && absent) *absent = errno == ENOENT;
  if (fd < 0) return io_error(path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(path, err);
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxRecordBytes) {
    ::close(fd);
    return Status(Code::kIo, "larger than any record (" + std::to_string(st.st_size) + " bytes)");
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

Expected<std::unique_ptr<DiskTier>> DiskTier::open(const std::string& dir, uint64_t max_bytes) {
  if (dir.empty()) return Status(Code::kIo, "no folder (XDG_CACHE_HOME and HOME are unset)");
  // Made one level at a time, like mkdir -p.
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return io_error("cannot make " + part, errno);
    if (slash == std::string::npos) break;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return io_error(dir, errno);
  if (!S_ISDIR(st.st_mode)) return Status(Code::kIo, dir + " is not a folder");
  // A probe write: a folder we cannot write is no cache (root passes the
  // permission bits, not a read-only mount).
  std::unique_ptr<DiskTier> tier(new DiskTier(dir, max_bytes));
  const std::string probe = dir + "/" + temp_name();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot write in " + dir, errno);
  Status wrote = write_all(fd, "probe", probe);
  ::close(fd);
  ::unlink(probe.c_str());
  SJ_TRY(wrote);
  const std::string usage = dir + "/" + kUsageFile;
  tier->usage_fd_ = ::open(usage.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (tier->usage_fd_ < 0) return io_error("cannot open " + usage, errno);
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
}

std::unique_ptr<DiskTier> DiskTier::inspect(const std::string& dir, uint64_t max_bytes) {
  return std::unique_ptr<DiskTier>(new DiskTier(dir, max_bytes));
}

std::string DiskTier::path_of(const Hash128& key) const { return dir_ + "/" + key.hex() + kSuffix; }

std::optional<std::string> DiskTier::load(const Hash128& key, std::string_view target, std::string* rejected) {
  const std::string path = path_of(key);
  bool absent = false;
  Expected<std::string> bytes = read_file(path, &absent);
  if (!bytes.is_ok()) {
    if (absent) return std::nullopt;  // a miss
    if (rejected) *rejected = bytes.status().message();
    ::unlink(path.c_str());
    return std::nullopt;
  }
  Expected<std::string_view> payload = decode_record(*bytes, key, target);
  if (!payload.is_ok()) {
    if (rejected) *rejected = path + ": " + payload.status().message();
    ::unlink(path.c_str());
    return std::nullopt;
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recently used: now
  return std::string(*payload);
}

Status DiskTier::store(const Hash128& key, std::string_view target, std::string_view payload) {
  const std::string record = encode_record(key, target, payload);
  const std::string temp = dir_ + "/" + temp_name();
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot write in " + dir_, errno);
  Status wrote = write_all(fd, record, temp);
  if (::close(fd) != 0 && wrote.is_ok()) wrote = io_error("writing " + temp, errno);
  if (!wrote.is_ok()) {
    ::unlink(temp.c_str());
    return wrote;
  }
  // The rename and the count change together, under the folder's lock: no
  // process adds to the folder unseen by the count.
  const std::string path = path_of(key);
  std::lock_guard<std::mutex> guard(mu_);
  FolderLock lock(usage_fd_);
  struct stat old {};
  const uint64_t replaced = ::stat(path.c_str(), &old) == 0 ? static_cast<uint64_t>(old.st_size) : 0;
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return io_error("renaming into " + path, err);
  }
  const std::optional<uint64_t> before = read_usage();
  const uint64_t after = before ? *before - std::min(*before, replaced) + record.size() : 0;
  if (!before || after > max_bytes_ || ++writes_since_scan_ >= std::max(kScanEvery, files_at_scan_)) evict_locked();
  else write_usage(after);
  return Status::ok();
}

void DiskTier::remove(const Hash128& key) { ::unlink(path_of(key).c_str()); }

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
    std::string path;
    uint64_t bytes;
    struct timespec modified;
  };
  std::vector<Seen> files;
  uint64_t total = 0;
  const std::time_t now = std::time(nullptr);
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    const bool temp = name.rfind(kTempPrefix, 0) == 0;
    if (!temp && !ends_with(name, kSuffix)) continue;
    const std::string path = dir_ + "/" + std::string(name);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;  // removed by another process meanwhile
    if (temp) {
      if (now - st.st_mtime > kStaleTempSeconds) ::unlink(path.c_str());
      continue;
    }
    files.push_back({path, static_cast<uint64_t>(st.st_size), st.st_mtim});
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
    if (::unlink(f.path.c_str()) == 0 || errno == ENOENT) {
      total -= f.bytes;
      --kept;
    }
  }
  remember(kept);
}

std::vector<DiskTier::File> DiskTier::list(bool verify) const {
  std::vector<File> out;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!ends_with(name, kSuffix)) continue;
    File f;
    f.name = name;
    const std::string path = dir_ + "/" + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    f.bytes = static_cast<uint64_t>(st.st_size);
    f.modified = st.st_mtime;
    Expected<std::string> bytes = read_file(path);
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
        else if (Expected<std::string_view> p = decode_record(*bytes, h->key, h->target); !p.is_ok()) f.status = p.status();
      }
    }
    out.push_back(std::move(f));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const File& a, const File& b) { return a.modified != b.modified ? a.modified > b.modified : a.name < b.name; });
  return out;
}

Expected<size_t> DiskTier::clear() {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return io_error(dir_, errno);
  size_t removed = 0;
  Status failed;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!ends_with(name, kSuffix) && name.rfind(kTempPrefix, 0) != 0) continue;
    const std::string path = dir_ + "/" + std::string(name);
    if (::unlink(path.c_str()) == 0) ++removed;
    else if (errno != ENOENT && failed.is_ok()) failed = io_error("cannot remove " + path, errno);
  }
  ::closedir(d);
  SJ_TRY(failed);
  return removed;
}

}  // namespace shapejit::cache
