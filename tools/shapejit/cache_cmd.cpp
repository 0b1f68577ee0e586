#include "tools/shapejit/cache_cmd.h"

#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <map>

#include "cache/disk_tier.h"
#include "cache/signer.h"
#include "jit/policy/config.h"
#include "tools/shapejit/replay.h"

namespace shapejit::tools {

namespace {

const char kUsage[] = "usage: shapejit cache stats|ls|verify|clear [--config C.json]\n";

int usage(const std::string& why) {
  std::fprintf(stderr, "shapejit: cache: %s\n%s", why.c_str(), kUsage);
  return 2;
}

std::string age_text(std::time_t modified) {
  const long long s = std::max<long long>(0, static_cast<long long>(std::time(nullptr) - modified));
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%lldm", s / 60);
  else if (s < 172800) std::snprintf(buf, sizeof buf, "%lldh", s / 3600);
  else std::snprintf(buf, sizeof buf, "%lldd", s / 86400);
  return buf;
}

}  // namespace

int cache_command(const std::string& sub, const policy::Config& config) {
  if (sub != "stats" && sub != "ls" && sub != "verify" && sub != "clear") return usage("unknown subcommand '" + sub + "'");
  const std::string dir = config.cache.disk_path.empty() ? cache::default_disk_dir() : config.cache.disk_path;
  if (dir.empty()) {
    std::fprintf(stderr, "shapejit: cache: no folder: cache.disk.path is empty and XDG_CACHE_HOME and HOME are unset\n");
    return 1;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::printf("%s: no cache folder (nothing stored yet)\n", dir.c_str());
    return 0;
  }
  // `verify` checks signatures with the keys a Jit of this config would use.
  Expected<cache::Signer> signer = cache::Signer::load(config.cache.sign_key_files);
  if (!signer.is_ok()) {
    std::fprintf(stderr, "shapejit: cache: %s\n", signer.status().message().c_str());
    return 1;
  }
  const bool signatures = signer->enabled();
  const auto tier = cache::DiskTier::inspect(dir, static_cast<uint64_t>(config.cache.disk_max_mb) << 20, std::move(signer).value());

  if (sub == "clear") {
    auto removed = tier->clear();
    if (!removed.is_ok()) {
      std::fprintf(stderr, "shapejit: cache: %s\n", removed.status().message().c_str());
      return 1;
    }
    std::printf("%s: removed %zu files\n", dir.c_str(), *removed);
    return 0;
  }

  const std::vector<cache::DiskTier::File> files = tier->list(/*verify=*/sub == "verify");
  if (sub == "ls") {
    std::printf("%-36s %10s %6s %-8s  %s\n", "key", "bytes", "age", "signed", "target");
    for (const auto& f : files) {
      const std::string key = f.name.substr(0, f.name.find('.'));
      std::printf("%-36s %10llu %6s %-8s  %s\n", key.c_str(), static_cast<unsigned long long>(f.bytes), age_text(f.modified).c_str(),
                  f.header ? (f.header->signature_bytes ? "yes" : "no") : "",
                  f.header ? f.header->target.c_str() : ("unreadable: " + f.status.message()).c_str());
    }
    return 0;
  }
  if (sub == "verify") {
    size_t bad = 0;
    for (const auto& f : files) {
      if (f.status.is_ok()) continue;
      ++bad;
      std::printf("%s/%s: %s\n", dir.c_str(), f.name.c_str(), f.status.message().c_str());
    }
    std::printf("%s: %zu files, %zu ok, %zu bad%s\n", dir.c_str(), files.size(), files.size() - bad, bad,
                bad ? " (a bad file is removed and recompiled when it is next asked for; `shapejit cache clear` removes all)" : "");
    std::printf("signatures: %s\n", signatures ? "checked (cache.sign): an unsigned record, or one no key signed, is bad"
                                                : "not checked: no key configured (cache.sign.key_file or $SHAPEJIT_CACHE_SIGN_KEYS)");
    return bad ? 1 : 0;
  }
  // stats
  uint64_t total = 0;
  std::time_t oldest = 0, newest = 0;
  std::map<std::string, std::pair<size_t, uint64_t>> targets;
  size_t unreadable = 0;
  for (const auto& f : files) {
    total += f.bytes;
    if (oldest == 0 || f.modified < oldest) oldest = f.modified;
    newest = std::max(newest, f.modified);
    if (!f.header) {
      ++unreadable;
      continue;
    }
    auto& t = targets[f.header->target];
    ++t.first;
    t.second += f.bytes;
  }
  std::printf("folder:   %s\n", dir.c_str());
  std::printf("entries:  %zu%s\n", files.size(), unreadable ? (" (" + std::to_string(unreadable) + " unreadable)").c_str() : "");
  std::printf("bytes:    %s of %s (cache.disk.max_mb %lld)\n", format_bytes(total).c_str(), format_bytes(tier->max_bytes()).c_str(),
              static_cast<long long>(config.cache.disk_max_mb));
  if (!files.empty()) std::printf("ages:     newest %s, oldest %s (since last used)\n", age_text(newest).c_str(), age_text(oldest).c_str());
  for (const auto& [target, t] : targets) {
    std::printf("target:   %zu entries, %s: %s\n", t.first, format_bytes(t.second).c_str(), target.c_str());
  }
  return 0;
}

}  // namespace shapejit::tools
