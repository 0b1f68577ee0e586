#include "jit/runtime/kernel_source.h"

#include <exception>
#include <optional>
#include <set>
#include <utility>

#include "core/support/clock.h"
#include "jit/runtime/background.h"
#include "jit/runtime/entry.h"
#include "jit/runtime/stand_in.h"

namespace shapejit::runtime {

using support::Clock;
using support::ms_since;

namespace {

std::shared_ptr<backends::Kernel> kernel_of(const cache::Found& found) {
  return std::static_pointer_cast<backends::Kernel>(found.artifact);
}

// An entry's kernel, as a tier had it or compiled it.
KernelSource::Got got_from(const cache::Found& found) {
  KernelSource::Got got;
  got.kernel = kernel_of(found);
  return got;
}

// Through the cache's tiers, while the call waits.
class SyncSource final : public KernelSource {
 public:
  SyncSource(const std::string& site, const Services& services) : KernelSource(site, services) {}

  Expected<Got> get(StoredTrace& trace, const ir::SpecializedGraphPtr& graph, const std::vector<sym::Layout>&) override {
    const Hash128 k = key(trace, *graph);
    const cache::Maker make = maker(graph, false);
    const Clock::time_point t0 = Clock::now();
    Expected<cache::Found> found = services_.cache.get(k, make);
    if (!found.is_ok()) return found.status().with_context("site " + site_ + ": compiling");
    count(ms_since(t0), &*found);
    return got_from(*found);
  }
};

// compile.async: what memory or disk holds, else a stand-in while the
// background compiles (a generic entry that covers the call would have
// taken it at the lookup, before any miss).
class AsyncSource final : public KernelSource {
 public:
  AsyncSource(const std::string& site, const Services& services, Land land)
      : KernelSource(site, services), background_(*services.background), land_(std::move(land)) {}

  Expected<Got> get(StoredTrace& trace, const ir::SpecializedGraphPtr& graph, const std::vector<sym::Layout>& layouts) override {
    const Hash128 k = key(trace, *graph);
    const Clock::time_point t0 = Clock::now();
    std::optional<cache::Found> found = services_.cache.get_local(k, maker(graph, false));
    count(ms_since(t0), found ? &*found : nullptr);
    if (found) return got_from(*found);

    std::unique_ptr<backends::Kernel> reference = SJ_TRY(services_.backend.compile_reference(graph));
    std::shared_ptr<PendingKernel> own = pending(k, graph);
    std::optional<Queued> queued;
    std::shared_ptr<backends::Kernel> dynamic = dynamic_kernel(trace, *graph, layouts, queued);
    Got got;
    got.kernel = std::make_shared<StandInKernel>(std::move(reference), *graph, own, background_.costs(), counts_, std::move(dynamic),
                                                 quick(graph));
    got.stand_in = true;
    got.begin = [this, k, graph, own, queued](Entry& entry) {
      compile(&entry, k, graph, own);
      if (queued) compile_dynamic(queued->first, queued->second);
    };
    return got;
  }

  SiteStats stats() const override {
    SiteStats s = KernelSource::stats();
    s.stand_in_waits = counts_.waits.load(std::memory_order_relaxed);
    s.stand_in_dynamic = counts_.dynamic.load(std::memory_order_relaxed);
    s.stand_in_quick = counts_.quick.load(std::memory_order_relaxed);
    return s;
  }

 private:
  // A dynamic kernel to compile: its key and graph.
  using Queued = std::pair<Hash128, ir::SpecializedGraphPtr>;

  // The entry's own kernel, for a call that would wait: it gets the kernel
  // itself, counted as the background's compile would be (which then finds
  // it in memory).
  std::shared_ptr<PendingKernel> pending(const Hash128& key, const ir::SpecializedGraphPtr& graph) {
    const size_t nodes = graph->graph->nodes.size();
    auto make = [this, key, maker = maker(graph, false), nodes](bool begun) -> std::shared_ptr<backends::Kernel> {
      const Clock::time_point t0 = Clock::now();
      // Beside the background's compile when it has begun (its kernel lands
      // as the entry's, counted there), else through the cache.
      std::optional<cache::Found> got;
      std::shared_ptr<backends::Kernel> kernel;
      if (begun) {
        Expected<std::unique_ptr<cache::Artifact>> made = maker.compile(nullptr);
        if (!made.is_ok()) return nullptr;
        kernel.reset(static_cast<backends::Kernel*>(made->release()));
      } else {
        Expected<cache::Found> found = services_.cache.get(key, maker);
        if (!found.is_ok()) return nullptr;
        got = std::move(found).value();
        kernel = kernel_of(*got);
      }
      const double ms = ms_since(t0);
      if (!got || got->origin == cache::Origin::kCompile) background_.costs().saw_compile(nodes, ms);
      count(ms, got ? &*got : nullptr);
      return kernel;
    };
    return std::make_shared<PendingKernel>(std::move(make), [this](const PendingKernel* p) { background_.hurry(p); });
  }

  // The quicker tier, for a call that would wait: in no cache (it is only a
  // stand-in), its time counted as compiling.
  std::shared_ptr<QuickKernel> quick(const ir::SpecializedGraphPtr& graph) {
    return std::make_shared<QuickKernel>([this, graph]() -> std::shared_ptr<backends::Kernel> {
      const Clock::time_point t0 = Clock::now();
      Expected<std::unique_ptr<backends::Kernel>> made = services_.backend.compile(graph, {.quick = true, .context = {false, &site_}});
      count(ms_since(t0));
      return made.is_ok() ? std::shared_ptr<backends::Kernel>(std::move(made).value()) : nullptr;
    });
  }

  // The trace with its dims left free, under the entry's layout: it takes
  // every call the entry takes. Null until it has compiled; on the first
  // ask, what to compile goes in `queued`, to start behind the entry's own
  // kernel. When the entry is that already (a dynamic policy's), there is
  // none to add.
  std::shared_ptr<backends::Kernel> dynamic_kernel(StoredTrace& trace, const ir::SpecializedGraph& graph, const std::vector<sym::Layout>& layouts,
                                                   std::optional<Queued>& queued) {
    // Inferred once per trace and layout (a model's inference takes
    // milliseconds, and this is on the call's path).
    auto [it, added] = trace.dynamic.try_emplace(layouts);
    if (added) {
      sym::ShapeEnv env = trace.env;
      env.set_layouts(layouts);
      Expected<ir::SpecializedGraphPtr> free = ir::specialize(trace.graph, env.specialization());
      if (free.is_ok()) it->second = std::move(free).value();
    }
    const ir::SpecializedGraphPtr& free = it->second;
    if (!free || free->spec_hash == graph.spec_hash) return nullptr;
    const Hash128 k = key(trace, *free);
    if (std::optional<cache::Found> found = services_.cache.get_local(k, maker(free, false))) {
      std::shared_ptr<backends::Kernel> kernel = kernel_of(*found);
      return kernel->fallback_reason().empty() ? kernel : nullptr;
    }
    if (dynamic_queued_.insert({k.hi, k.lo}).second) queued.emplace(k, free);
    return nullptr;
  }

  // The entry's kernel, on a background thread; it lands in `stand_in`'s
  // place. A failed compile leaves the stand-in where it is, and says so
  // once.
  void compile(Entry* stand_in, const Hash128& key, ir::SpecializedGraphPtr graph, std::shared_ptr<PendingKernel> pending) {
    const PendingKernel* tag = pending.get();  // what its stand-in's hurry() names
    background_.run([this, stand_in, key, graph = std::move(graph), pending = std::move(pending)] {
      const Clock::time_point t0 = Clock::now();
      pending->started();
      Expected<cache::Found> got = background_get(key, graph);
      const double ms = ms_since(t0);
      std::shared_ptr<backends::Kernel> kernel = got.is_ok() ? kernel_of(*got) : nullptr;
      // Calls waiting on the stand-in go on with the kernel before the entry is replaced.
      pending->finish(kernel);
      count(ms, got.is_ok() ? &*got : nullptr);
      if (!got.is_ok()) {
        services_.log("shapejit: warning: site " + site_ + ": a background compile failed (" + got.status().message() +
                      "); its entry stays on the reference interpreter");
        return;
      }
      land_(stand_in, std::move(kernel));
    }, tag);
  }

  // A stand-in's dynamic kernel, on a background thread: the cache keeps
  // it for the stand-ins of the misses after this one. Counted as time
  // only: no entry runs it.
  void compile_dynamic(const Hash128& key, ir::SpecializedGraphPtr graph) {
    background_.run([this, key, graph = std::move(graph)] {
      const Clock::time_point t0 = Clock::now();
      Expected<cache::Found> got = background_get(key, graph);
      count(ms_since(t0));
      if (got.is_ok() && got->origin == cache::Origin::kCompile && kernel_of(*got)->fallback_reason().empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.stand_in_kernels;  // a graph the backend could not compile dynamic stays on the reference
      }
    });
  }

  // A kernel through the cache on a background thread, whose task has no
  // caller to throw to.
  Expected<cache::Found> background_get(const Hash128& key, const ir::SpecializedGraphPtr& graph) {
    try {
      return services_.cache.get(key, maker(graph, true));
    } catch (const std::exception& ex) {
      return Status(Code::kInternal, std::string("the background compile threw: ") + ex.what());
    }
  }

  Background& background_;
  const Land land_;
  StandInCounts counts_;  // the stand-ins count into it
  std::set<std::pair<uint64_t, uint64_t>> dynamic_queued_;  // dynamic kernels asked for; get()'s, under the site's mutex
};

}  // namespace

std::unique_ptr<KernelSource> KernelSource::make(const std::string& site, const Services& services, Land land) {
  if (services.background) return std::make_unique<AsyncSource>(site, services, std::move(land));
  return std::make_unique<SyncSource>(site, services);
}

SiteStats KernelSource::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Hash128 KernelSource::key(const StoredTrace& trace, const ir::SpecializedGraph& graph) const {
  return cache::make_key(trace.graph_hash, graph.spec_hash, services_.backend.name(), services_.backend.target());
}

cache::Maker KernelSource::maker(const ir::SpecializedGraphPtr& graph, bool background) const {
  backends::WithFallback& backend = services_.backend;
  const backends::CompileContext context{background, &site_};
  cache::Maker m;
  m.target = std::string(backend.name()) + " " + backend.target();
  m.compile = [&backend, graph, context](std::string* image) -> Expected<std::unique_ptr<cache::Artifact>> {
    return std::unique_ptr<cache::Artifact>(SJ_TRY(backend.compile(graph, {.image = image, .context = context})).release());
  };
  if (backend.persists()) {
    m.load = [&backend, graph, context](std::string_view image) -> Expected<std::unique_ptr<cache::Artifact>> {
      return std::unique_ptr<cache::Artifact>(SJ_TRY(backend.load(graph, image, context)).release());
    };
  }
  return m;
}

void KernelSource::count(double ms, const cache::Found* found) {
  std::string fallback;  // logged after the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.compile_ms += ms;
    if (!found) return;
    const auto& kernel = static_cast<const backends::Kernel&>(*found->artifact);
    if (found->origin != cache::Origin::kMemory) {
      if (const backends::CompilePhases* p = kernel.phases()) stats_.phases += *p;
    }
    switch (found->origin) {
      case cache::Origin::kMemory: break;
      case cache::Origin::kDisk: ++stats_.disk_loads; break;
      case cache::Origin::kRemote: ++stats_.remote_loads; break;
      case cache::Origin::kCompile:
        ++stats_.backend_compiles;
        if (!kernel.fallback_reason().empty()) {
          ++stats_.fallbacks;
          fallback = kernel.fallback_reason();
        }
        break;
    }
  }
  if (!fallback.empty()) {
    services_.log("shapejit: site " + site_ + ": the " + services_.backend.name() + " backend could not compile the graph (" + fallback +
                  "); it runs on the reference interpreter");
  }
}

}  // namespace shapejit::runtime
