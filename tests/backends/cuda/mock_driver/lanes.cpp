// A launch on the CPU: the blocks one after another, the threads of a block
// as fibers (Boost.Context) on the calling thread.
//
// A round resumes every lane that is not waiting, in order, until each
// waits or returns; then the waits resolve: a warp whose live lanes all
// wait at a shuffle exchanges and goes on (32 lanes in lockstep), one whose
// lanes all wait at __syncwarp goes on, and when every live lane of the
// block waits at __syncthreads the block goes on (a lane that returned no
// longer counts, as on sm_70 and later). Anything else (lanes of one warp
// at different barriers, a shuffle with a lane that returned or is not in
// its mask) is an error, as it is undefined on a GPU.
#if defined(__SANITIZE_ADDRESS__)
#define SJ_MOCK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SJ_MOCK_ASAN 1
#endif
#endif
#ifdef SJ_MOCK_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#include <boost/context/fiber.hpp>
#include <cstdlib>
#include <cstring>

#include "tests/backends/cuda/mock_driver/mock_cuda.h"

namespace shapejit::mock_cuda {

namespace {

namespace ctx = boost::context;

#ifdef SJ_MOCK_ASAN
constexpr size_t kStack = size_t{256} << 10;
#else
constexpr size_t kStack = size_t{64} << 10;
#endif
constexpr unsigned kWarp = 32;

enum class Wait : uint8_t { kNone, kBlock, kWarp, kShuffle, kDone };

struct Lane {
  SjMockLane ids;
  ctx::fiber fiber;
  ctx::fiber* back = nullptr;  // inside the lane: the scheduler to return to
  Wait wait = Wait::kNone;
  unsigned mask = 0;
  uint64_t bits = 0;  // a shuffle's value, then its result
  int lane_mask = 0, width = 32;
  const void* stack = nullptr;  // its lowest address
};

// The running lane; read on every threadIdx, so in the static TLS block.
__attribute__((tls_model("initial-exec"))) thread_local Lane* t_lane = nullptr;
// Free stacks of this thread, freed when it ends.
struct Stacks {
  std::vector<void*> free;
  ~Stacks() {
    for (void* s : free) std::free(s);
  }
};
thread_local Stacks t_stacks;
thread_local void* t_last_stack = nullptr;  // the stack allocated last

// AddressSanitizer is told of each switch between the scheduler's stack
// and a lane's (Boost's fcontext, which Debian builds, does not tell it).
#ifdef SJ_MOCK_ASAN
thread_local const void* t_scheduler_stack = nullptr;
thread_local size_t t_scheduler_size = 0;
void to_lane(void** fake, const Lane& l) { __sanitizer_start_switch_fiber(fake, l.stack, kStack); }
void to_scheduler(void** fake) { __sanitizer_start_switch_fiber(fake, t_scheduler_stack, t_scheduler_size); }
void arrived_in_lane(void* fake) { __sanitizer_finish_switch_fiber(fake, &t_scheduler_stack, &t_scheduler_size); }
void arrived_in_scheduler(void* fake) { __sanitizer_finish_switch_fiber(fake, nullptr, nullptr); }
#else
void to_lane(void**, const Lane&) {}
void to_scheduler(void**) {}
void arrived_in_lane(void*) {}
void arrived_in_scheduler(void*) {}
#endif

// Boost's stack allocator over this thread's free stacks.
struct PooledStack {
  ctx::stack_context allocate() {
    void* base = nullptr;
    if (!t_stacks.free.empty()) {
      base = t_stacks.free.back();
      t_stacks.free.pop_back();
    } else {
      base = std::malloc(kStack);
      if (!base) throw std::bad_alloc();
    }
    t_last_stack = base;
    ctx::stack_context sc;
    sc.size = kStack;
    sc.sp = static_cast<char*>(base) + kStack;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) { t_stacks.free.push_back(static_cast<char*>(sc.sp) - sc.size); }
};

void suspend(Wait why) {
  Lane* self = t_lane;
  self->wait = why;
  void* fake = nullptr;
  to_scheduler(&fake);
  *self->back = std::move(*self->back).resume();
  arrived_in_lane(fake);
}

const SjMockLane* lane_ids() { return &t_lane->ids; }
void syncthreads() { suspend(Wait::kBlock); }
void syncwarp(unsigned mask) {
  t_lane->mask = mask;
  suspend(Wait::kWarp);
}
unsigned long long shfl_xor(unsigned mask, unsigned long long bits, int lane_mask, int width) {
  t_lane->mask = mask;
  t_lane->bits = bits;
  t_lane->lane_mask = lane_mask;
  t_lane->width = width;
  suspend(Wait::kShuffle);
  return t_lane->bits;
}

// Lanes [w0, w1) of one warp, all waiting at a shuffle: each gets its
// partner's value. "" or what is wrong.
std::string exchange(std::vector<Lane>& lanes, unsigned w0, unsigned w1) {
  uint64_t got[kWarp];
  for (unsigned i = w0; i < w1; ++i) {
    const Lane& l = lanes[i];
    const unsigned id = i - w0, width = static_cast<unsigned>(l.width);
    if (width == 0 || width > kWarp || (width & (width - 1)) != 0) return "a shuffle of width " + std::to_string(l.width);
    unsigned src = id ^ static_cast<unsigned>(l.lane_mask);
    if ((src & ~(width - 1)) > (id & ~(width - 1))) src = id;  // a later group: its own value
    if (w0 + src >= w1 || lanes[w0 + src].wait != Wait::kShuffle) return "lane " + std::to_string(id) + " shuffles with lane " + std::to_string(src) + ", which has returned";
    if (!(l.mask >> id & 1) || !(l.mask >> src & 1)) return "lane " + std::to_string(id) + " shuffles outside its mask";
    got[id] = lanes[w0 + src].bits;
  }
  for (unsigned i = w0; i < w1; ++i) {
    lanes[i].bits = got[i - w0];
    lanes[i].wait = Wait::kNone;
  }
  return "";
}

std::string run_block(const Kernel& k, void** params, std::vector<Lane>& lanes) {
  for (Lane& l : lanes) {
    Lane* self = &l;
    l.wait = Wait::kNone;
    l.fiber = ctx::fiber(std::allocator_arg, PooledStack{}, [self, &k, params](ctx::fiber&& back) {
      arrived_in_lane(nullptr);
      self->back = &back;
      k.run(params);
      self->wait = Wait::kDone;
      to_scheduler(nullptr);  // for good: the lane's stack goes
      return std::move(back);
    });
    l.stack = t_last_stack;
  }
  const unsigned n = static_cast<unsigned>(lanes.size());
  for (;;) {
    for (Lane& l : lanes) {
      if (l.wait != Wait::kNone) continue;
      t_lane = &l;
      void* fake = nullptr;
      to_lane(&fake, l);
      l.fiber = std::move(l.fiber).resume();
      arrived_in_scheduler(fake);
    }
    bool live = false, released = false;
    for (unsigned w0 = 0; w0 < n; w0 += kWarp) {
      const unsigned w1 = std::min(n, w0 + kWarp);
      unsigned alive = 0, block = 0, warp = 0, shuffle = 0;
      for (unsigned i = w0; i < w1; ++i) {
        alive += lanes[i].wait != Wait::kDone;
        block += lanes[i].wait == Wait::kBlock;
        warp += lanes[i].wait == Wait::kWarp;
        shuffle += lanes[i].wait == Wait::kShuffle;
      }
      live |= alive > 0;
      if (block == alive) continue;
      const std::string warp_name = "warp " + std::to_string(w0 / kWarp) + ": ";
      if (block > 0 || (warp > 0 && shuffle > 0)) {
        return warp_name + std::to_string(block) + " lanes wait at __syncthreads, " + std::to_string(warp) + " at __syncwarp, " +
               std::to_string(shuffle) + " at a shuffle";
      }
      if (shuffle > 0) {
        if (std::string e = exchange(lanes, w0, w1); !e.empty()) return warp_name + e;
      } else {
        for (unsigned i = w0; i < w1; ++i) {
          if (lanes[i].wait == Wait::kWarp) lanes[i].wait = Wait::kNone;
        }
      }
      released = true;
    }
    if (!live) return "";
    if (released) continue;
    for (Lane& l : lanes) {
      if (l.wait == Wait::kBlock) l.wait = Wait::kNone;
    }
  }
}

}  // namespace

const SjMockRuntime& lane_runtime() {
  static const SjMockRuntime rt{lane_ids, syncthreads, syncwarp, shfl_xor};
  return rt;
}

std::string run_grid(const Kernel& k, void** params, SjDim3 grid, SjDim3 block) {
  const unsigned n = block.x * block.y * block.z;
  std::vector<Lane> lanes(n);
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        for (unsigned i = 0; i < n; ++i) {
          lanes[i].ids = SjMockLane{{i % block.x, i / block.x % block.y, i / (block.x * block.y)}, {x, y, z}, block, grid};
        }
        std::string e = run_block(k, params, lanes);
        if (!e.empty()) {
          return k.name + ", block (" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + "), " + e;
        }
      }
    }
  }
  return "";
}

}  // namespace shapejit::mock_cuda
