// KernelSource: where a miss's kernel comes from (miss step 5), and what
// getting it costs. Two sources stand behind one get():
//
//   SyncSource   the kernel cache's tiers on the call's path: memory, disk,
//                Redis, and otherwise the backend compiles while the call
//                waits.
//   AsyncSource  compile.async: only what memory or disk holds now, and
//                otherwise a stand-in (stand_in.h) that runs the entry's
//                calls while its kernel compiles in the background. The
//                source owns the stand-in's parts (the pending kernel, the
//                quick kernel, the trace's dynamic kernel) and the
//                background tasks that make them; a finished kernel goes
//                back to the site through its Land, which puts it in the
//                entry's place in a new snapshot.
//
// get() runs on the miss path, under the site's mutex. The rest of a
// source's work runs on other threads (the background's, a call that
// waits for its stand-in's compile) and takes only the source's own lock,
// which guards its counts and is never held while calling out: the site's
// lock is taken before it or not at all.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "jit/runtime/services.h"
#include "jit/runtime/site_stats.h"

namespace shapejit::runtime {

struct Entry;
struct StoredTrace;

class KernelSource {
 public:
  // Puts `kernel`, compiled in the background, in place of `stand_in`'s:
  // the site's, called on a background thread.
  using Land = std::function<void(Entry* stand_in, std::shared_ptr<backends::Kernel> kernel)>;

  // The source for `services` (an AsyncSource with a Background, else a
  // SyncSource). `site` names the site in logs and errors; it and
  // `services` outlive the source.
  static std::unique_ptr<KernelSource> make(const std::string& site, const Services& services, Land land);
  virtual ~KernelSource() = default;

  // What get() gives the entry.
  struct Got {
    std::shared_ptr<backends::Kernel> kernel;
    bool stand_in = false;  // a stand-in, whose own kernel is compiling
    // Called once the entry is installed, with it: starts what compiles in
    // the background. Null: nothing does.
    std::function<void(Entry&)> begin;
  };
  // The kernel of `trace` under `graph`, its specialization; `layouts` are
  // how the specialization takes each input to lie.
  virtual Expected<Got> get(StoredTrace& trace, const ir::SpecializedGraphPtr& graph, const std::vector<sym::Layout>& layouts) = 0;

  // What it counted: kernels compiled and loaded, their times, and the
  // stand-ins' counts; the site adds them to its own.
  virtual SiteStats stats() const;

 protected:
  KernelSource(const std::string& site, const Services& services) : site_(site), services_(services) {}

  // The kernel's key in the cache.
  Hash128 key(const StoredTrace& trace, const ir::SpecializedGraph& graph) const;
  // How the cache makes the kernel: compiled, or loaded from an image.
  cache::Maker maker(const ir::SpecializedGraphPtr& graph, bool background) const;
  // `ms` spent getting a kernel, and where it came from (`found`; null: a
  // kernel made beside the cache, counted as time only).
  void count(double ms, const cache::Found* found = nullptr);

  const std::string& site_;
  const Services& services_;
  mutable std::mutex mu_;  // stats_
  SiteStats stats_;
};

}  // namespace shapejit::runtime
