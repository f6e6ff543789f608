// tg_emu.h - run CUDA kernels unchanged on the CPU (host emulation for g++).
//
// The device runtime header includes this file when neither __CUDACC__ nor
// __CUDACC_RTC__ is defined; generated kernels then compile with g++ as-is and
// are started with tg_emu::launch / tg_emu::launch_named instead of <<<...>>>.
//
// Execution model
// ---------------
// * Every CUDA thread is a cooperatively scheduled fiber (Boost.Context,
//   fcontext switches: a few nanoseconds, no system call).
// * One OS thread runs one block at a time: all threads of the block are fibers
//   on that OS thread. Blocks are handed out to tg_emu::threads() OS threads
//   (default std::thread::hardware_concurrency(), env TG_EMU_THREADS, or
//   tg_emu::set_threads). With one OS thread the execution order, and thus
//   every result, is deterministic.
// * A thread runs until it finishes or must wait: at __syncthreads() (block
//   barrier) or at a warp operation (__shfl*_sync, __ballot_sync, __any_sync,
//   __all_sync, __syncwarp), which is a rendezvous of the lanes named in its
//   mask only. Threads that have exited count as arrived; their shuffle values
//   read as 0 and their votes as false. The scheduler is round-robin over the
//   threads a barrier or rendezvous released.
// * A thread that never waits does not need a stack of its own, so a fiber
//   ("carrier") runs threads back to back and a new carrier is only started
//   when a thread has to wait. Carrier stacks come from a process-wide pool
//   (64 KiB, 256 KiB under AddressSanitizer, env TG_EMU_STACK_KB) with a guard
//   page below each stack, so an overflow faults instead of corrupting memory.
// * __shared__ is `static thread_local`: one instance per OS thread, i.e. per
//   running block. It keeps whatever the previous block on that OS thread left
//   in it; CUDA gives no guarantee about initial contents either.
// * If no thread of a block can run while some still wait (e.g. __syncthreads()
//   in one branch and a shuffle in the other), the emulator prints the kernel,
//   the block and what each waiting thread waits on, then calls std::abort().
// * Context switches are annotated for AddressSanitizer.
// * Cost: a thread that never waits costs about a function call; every wait
//   costs one fiber switch (some 10-20 ns). Kernels that synchronise are
//   therefore cheapest as grid-stride loops over few blocks.
//
// Limits
// ------
// * No dynamic shared memory (`extern __shared__`), no cooperative groups, no
//   grid-wide synchronisation, no dynamic parallelism, no texture/surface API.
// * Warp operations must be reached by every live lane named in their mask;
//   lanes of one rendezvous must call the same kind of operation.
//   __activemask() returns the lanes of the warp that have not exited.
// * Threads are never preempted: a thread spinning on a value that another
//   thread of the same block will write (without a barrier) hangs.
// * Standard headers that a kernel needs should be included before this one:
//   the keyword macros below (e.g. __noinline__) could clash with them.
// * __expf/__logf etc. are the exact libm functions, not the fast variants.
// * Exceptions escaping a kernel abort the process. ThreadSanitizer is not
//   told about the fiber switches.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#error "tg_emu.h is the host emulation of CUDA; it must not be compiled by nvcc/NVRTC"
#endif

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/fiber.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define TG_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TG_EMU_ASAN 1
#endif
#endif
#ifndef TG_EMU_ASAN
#define TG_EMU_ASAN 0
#endif
#if TG_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// tg_runtime.cuh chooses how the scheduler is linked (TG_RUNTIME_PREBUILT); on its own this
// header is header-only.
#ifndef TG_OUT_OF_LINE
#define TG_OUT_OF_LINE inline
#define TG_DEFINE_OUT_OF_LINE 1
#endif

// ---------------------------------------------------------------------------
// CUDA keywords. __restrict__ is a native g++ keyword and needs nothing.
// ---------------------------------------------------------------------------
#ifndef __global__
#define __global__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __constant__
#define __constant__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
// Empty rather than __attribute__((noinline)): libstdc++ spells
// __attribute__((__noinline__)), which must stay valid if <memory> is included
// after this header. Inlining decisions do not change results.
#ifndef __noinline__
#define __noinline__
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#ifndef __shared__
#define __shared__ static thread_local
#endif

struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) noexcept : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) noexcept : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const noexcept { return {x, y, z}; }
};

inline constexpr int warpSize = 32;

namespace tg_emu {
namespace detail {

[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fatal(const char* fmt, ...) {
  std::fputs("tg_emu: ", stderr);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

// A positive decimal from the environment, or 0 when unset or malformed.
inline unsigned env_unsigned(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long value = std::strtoul(text, &end, 10);
  return (*end == '\0' && value <= UINT_MAX) ? static_cast<unsigned>(value) : 0;
}

inline std::atomic<unsigned> threads_override{0};

enum class WarpOp : std::uint8_t { syncwarp, shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all };

inline const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::syncwarp: return "__syncwarp";
    case WarpOp::shfl: return "__shfl_sync";
    case WarpOp::shfl_up: return "__shfl_up_sync";
    case WarpOp::shfl_down: return "__shfl_down_sync";
    case WarpOp::shfl_xor: return "__shfl_xor_sync";
    case WarpOp::ballot: return "__ballot_sync";
    case WarpOp::any: return "__any_sync";
    case WarpOp::all: return "__all_sync";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// The scheduler's interface: what device code and launches call. Defined with
// the scheduler below (inline), or, under TG_RUNTIME_PREBUILT, in a library.
// ---------------------------------------------------------------------------
TG_OUT_OF_LINE const uint3& thread_idx() noexcept;
TG_OUT_OF_LINE const uint3& block_idx() noexcept;
TG_OUT_OF_LINE const dim3& block_dim() noexcept;
TG_OUT_OF_LINE const dim3& grid_dim() noexcept;
// __syncthreads(): waits until every thread of the block has arrived.
TG_OUT_OF_LINE void sync_block();
// A warp operation's rendezvous: `value` is this lane's posted bits (or predicate); returns
// its result for this lane.
TG_OUT_OF_LINE std::uint64_t warp_rendezvous(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width);
TG_OUT_OF_LINE unsigned active_lanes();
// Runs a launch: invoke(bound) once per thread of every block.
TG_OUT_OF_LINE void run_grid(const char* name, dim3 grid, dim3 block, const void* bound, void (*invoke)(const void*));

template <class T>
T warp_exchange(WarpOp op, unsigned mask, T value, int arg, int width) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t),
                "warp shuffles support trivially copyable types of at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = warp_rendezvous(op, mask, bits, arg, width);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

inline std::uint64_t warp_vote(WarpOp op, unsigned mask, int predicate) {
  return warp_rendezvous(op, mask, predicate != 0, 0, warpSize);
}

#if TG_DEFINE_OUT_OF_LINE

// ---------------------------------------------------------------------------
// AddressSanitizer bookkeeping for stack switches (no-ops without ASan).
// ---------------------------------------------------------------------------
inline void asan_start_switch([[maybe_unused]] void** fake_stack_save, [[maybe_unused]] const void* bottom,
                              [[maybe_unused]] std::size_t size) {
#if TG_EMU_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#endif
}

inline void asan_finish_switch([[maybe_unused]] void* fake_stack_save, [[maybe_unused]] const void** bottom_old,
                               [[maybe_unused]] std::size_t* size_old) {
#if TG_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#endif
}

// Runs f() with ASan believing that a stack switch is under way. Boost enters
// a new fiber once while constructing it, unannotated; this keeps the frame it
// leaves there off the current fiber's fake stack (detect_stack_use_after_return
// mode), which may be gone by the time the new fiber finishes.
template <class F>
void asan_as_switch(F f) {
#if TG_EMU_ASAN
  void* fake_stack = nullptr;
  const void* bottom = nullptr;
  std::size_t size = 0;
  __sanitizer_start_switch_fiber(&fake_stack, nullptr, 0);
  f();
  __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
  // The "switch" targeted an unknown stack: restore the bounds of this one.
  __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
  f();
#endif
}

// Frees the fake stack (ASan's detect_stack_use_after_return mode) of a fiber
// that has finished, from the stack at [bottom, bottom + size) we are on.
// The finished fiber could not free it itself: Boost code still used its
// frames after the last switch was announced. ASan only frees the current
// fake stack, so make it current by "switching" from this stack to itself.
inline void asan_discard_fake_stack([[maybe_unused]] void* fake_stack, [[maybe_unused]] const void* bottom,
                                    [[maybe_unused]] std::size_t size) {
#if TG_EMU_ASAN
  if (fake_stack == nullptr) return;
  void* own = nullptr;
  __sanitizer_start_switch_fiber(&own, bottom, size);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
  __sanitizer_start_switch_fiber(nullptr, bottom, size);
  __sanitizer_finish_switch_fiber(own, nullptr, nullptr);
#endif
}

// ---------------------------------------------------------------------------
// Fiber stacks: mmap'ed once with a guard page, then recycled process-wide.
// ---------------------------------------------------------------------------
class StackPool {
 public:
  static StackPool& instance() {
    static StackPool pool;
    return pool;
  }

  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  ~StackPool() {
    for (const boost::context::stack_context& stack : free_) ::munmap(mapping_base(stack), stack.size + page_);
  }

  boost::context::stack_context take() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        const boost::context::stack_context stack = free_.back();
        free_.pop_back();
        return stack;
      }
    }
    void* base = ::mmap(nullptr, size_ + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) fatal("cannot map a %zu KiB fiber stack", size_ / 1024);
    ::mprotect(base, page_, PROT_NONE);  // guard page: stacks grow down into it
    boost::context::stack_context stack;
    stack.size = size_;
    stack.sp = static_cast<char*>(base) + page_ + size_;
    return stack;
  }

  void give(const boost::context::stack_context& stack) noexcept {
#if TG_EMU_ASAN
    // Frames of the finished fiber never returned, so their redzones may
    // still be poisoned; the next fiber on this stack must start clean.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(stack.sp) - stack.size, stack.size);
#endif
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(stack);
  }

 private:
  StackPool() : page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {
    std::size_t kib = env_unsigned("TG_EMU_STACK_KB");
    if (kib == 0) kib = TG_EMU_ASAN ? 256 : 64;
    const std::size_t bytes = std::max<std::size_t>(kib, 16) * 1024;
    size_ = (bytes + page_ - 1) / page_ * page_;
  }

  void* mapping_base(const boost::context::stack_context& stack) const {
    return static_cast<char*>(stack.sp) - stack.size - page_;
  }

  std::size_t page_;
  std::size_t size_ = 0;
  std::mutex mutex_;
  std::vector<boost::context::stack_context> free_;
};

// Boost.Context stack allocator handing out one stack taken from the pool;
// Boost calls deallocate() when the fiber has finished.
struct PooledStack {
  boost::context::stack_context stack;
  boost::context::stack_context allocate() const noexcept { return stack; }
  void deallocate(boost::context::stack_context& s) const noexcept { StackPool::instance().give(s); }
};

// ---------------------------------------------------------------------------
// Scheduler state.
// ---------------------------------------------------------------------------
enum class Wait : std::uint8_t { none, barrier, warp, exited };

struct Carrier;

// Index of the lowest set bit of a non-empty lane mask.
inline unsigned lowest_lane(unsigned lanes) { return static_cast<unsigned>(std::countr_zero(lanes)); }

// One CUDA thread of the running block.
struct Thread {
  uint3 idx{};                 // threadIdx
  unsigned linear = 0;         // x + y * blockDim.x + z * blockDim.x * blockDim.y
  Wait wait = Wait::none;
  // The pending warp operation, valid while wait == Wait::warp.
  WarpOp op = WarpOp::syncwarp;
  int arg = 0;                 // source lane, delta or lane mask
  int width = 32;
  unsigned mask = 0;           // participating lanes, always including this one
  std::uint64_t posted = 0;    // this lane's value (bits) or predicate
  std::uint64_t result = 0;
  Carrier* carrier = nullptr;  // fiber running this thread
};

struct Warp {
  unsigned present = 0;      // lanes that exist (the last warp may be partial)
  unsigned exited = 0;
  unsigned arrived = 0;      // lanes waiting at a warp operation
  unsigned common_mask = 0;  // the mask of all arrived lanes, unless mixed_masks
  bool mixed_masks = false;
};

// A suspended execution context: the OS thread's own stack or a carrier fiber.
struct Context {
  boost::context::fiber fiber;  // continuation, empty while running
  void* asan_fake_stack = nullptr;
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
};

struct Carrier : Context {
  Thread* thread = nullptr;  // the CUDA thread it currently runs
};

struct Launch {
  const char* name;
  const void* bound;                   // kernel pointer and arguments
  void (*invoke)(const void* bound);   // runs the kernel for the current thread
  dim3 grid, block;
  unsigned nthreads;
  std::uint64_t nblocks;
  std::atomic<std::uint64_t> next_block{0};
};

class Executor;
constinit inline thread_local Executor* current_exec = nullptr;
constinit inline thread_local Thread* current_thread = nullptr;

// Runs blocks of one launch on the calling OS thread.
class Executor {
 public:
  explicit Executor(Launch& launch)
      : block_dim(launch.block), grid_dim(launch.grid), launch_(launch), threads_(launch.nthreads),
        warps_((launch.nthreads + 31) / 32), ready_(launch.nthreads) {
    const dim3 b = launch.block;
    for (unsigned i = 0; i < launch.nthreads; ++i) {
      threads_[i].linear = i;
      threads_[i].idx = {i % b.x, i / b.x % b.y, i / (b.x * b.y)};
    }
    for (unsigned w = 0; w < warps_.size(); ++w) {
      const unsigned lanes = std::min(32u, launch.nthreads - w * 32);
      warps_[w].present = lanes == 32 ? ~0u : (1u << lanes) - 1;
    }
  }

  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // All carriers are parked: let each return so its stack goes back to the pool.
  ~Executor() {
    quitting_ = true;
    for (const std::unique_ptr<Carrier>& carrier : carriers_) {
      switch_to(sched_, *carrier);
      asan_discard_fake_stack(carrier->asan_fake_stack, sched_.stack_bottom, sched_.stack_size);
    }
  }

  void run() {
    current_exec = this;
    for (;;) {
      const std::uint64_t block = launch_.next_block.fetch_add(1, std::memory_order_relaxed);
      if (block >= launch_.nblocks) break;
      run_block(block);
    }
    current_exec = nullptr;
    current_thread = nullptr;
  }

  // --- entry points for device code -------------------------------------

  void syncthreads(Thread& t) {
    t.wait = Wait::barrier;
    ++at_barrier_;
    release_barrier_if_complete();
    if (t.wait != Wait::none) suspend(*t.carrier);
  }

  std::uint64_t warp_op(Thread& t, WarpOp op, unsigned mask, std::uint64_t value, int arg, int width) {
    if (width < 1 || width > 32 || (width & (width - 1)) != 0)
      fatal("kernel '%s': %s with width %d (must be a power of two in 1..32)", name(), warp_op_name(op), width);
    const unsigned w = t.linear / 32, bit = 1u << (t.linear % 32);
    Warp& warp = warps_[w];
    t.wait = Wait::warp;
    t.op = op;
    t.mask = mask | bit;
    t.posted = value;
    t.arg = arg;
    t.width = width;
    if (warp.arrived == 0) {
      warp.common_mask = t.mask;
      warp.mixed_masks = false;
    } else if (t.mask != warp.common_mask) {
      warp.mixed_masks = true;
    }
    warp.arrived |= bit;
    complete_warp_ops(w);
    if (t.wait != Wait::none) suspend(*t.carrier);
    return t.result;
  }

  unsigned active_mask(const Thread& t) const {
    const Warp& warp = warps_[t.linear / 32];
    return warp.present & ~warp.exited;
  }

  uint3 block_idx{};
  const dim3 block_dim;
  const dim3 grid_dim;

 private:
  const char* name() const { return launch_.name != nullptr ? launch_.name : "<unnamed>"; }

  void run_block(std::uint64_t block) {
    const dim3 g = grid_dim;
    block_idx = {static_cast<unsigned>(block % g.x), static_cast<unsigned>(block / g.x % g.y),
                 static_cast<unsigned>(block / (std::uint64_t{g.x} * g.y))};
    next_unstarted_ = exited_ = at_barrier_ = 0;
    for (Thread& t : threads_) t.wait = Wait::none;
    for (Warp& warp : warps_) warp.exited = warp.arrived = 0;
    // Control comes back here once no carrier can continue: either every
    // thread has exited or the rest wait on something that cannot happen.
    switch_to(sched_, idle_carrier());
    if (exited_ != launch_.nthreads) report_deadlock();
  }

  // --- context switching -------------------------------------------------

  // Every switch goes through here; `last_` tells the resumed side whose
  // continuation it received, so that it can be stored (symmetric switching:
  // a waiting thread hands over directly to the next runnable one).
  void switch_to(Context& from, Context& to) {
    last_ = &from;
    asan_start_switch(&from.asan_fake_stack, to.stack_bottom, to.stack_size);
    boost::context::fiber back = std::move(to.fiber).resume();
    arrived(std::move(back), from.asan_fake_stack);
  }

  void arrived(boost::context::fiber&& from, void* fake_stack) {
    const void* bottom = nullptr;
    std::size_t size = 0;
    asan_finish_switch(fake_stack, &bottom, &size);
    last_->fiber = std::move(from);
    // ASan reports the stack we came from; this is how the OS thread's own
    // stack bounds become known (carriers' bounds are set at creation).
    if (TG_EMU_ASAN) {
      last_->stack_bottom = bottom;
      last_->stack_size = size;
    }
  }

  Carrier& idle_carrier() {
    if (idle_.empty()) return new_carrier();
    Carrier* carrier = idle_.back();
    idle_.pop_back();
    return *carrier;
  }

  Carrier& new_carrier() {
    carriers_.push_back(std::make_unique<Carrier>());
    Carrier& carrier = *carriers_.back();
    const boost::context::stack_context stack = StackPool::instance().take();
    carrier.stack_bottom = static_cast<char*>(stack.sp) - stack.size;
    carrier.stack_size = stack.size;
    asan_as_switch([&] {
      carrier.fiber = boost::context::fiber(
          std::allocator_arg, PooledStack{stack},
          [this, &carrier](boost::context::fiber&& from) { return carrier_main(carrier, std::move(from)); });
    });
    return carrier;
  }

  boost::context::fiber carrier_main(Carrier& self, boost::context::fiber&& from) {
    arrived(std::move(from), nullptr);
    try {
      do {
        while (next_unstarted_ < launch_.nthreads) run_thread(self, threads_[next_unstarted_++]);
      } while (park(self));
    } catch (const std::exception& e) {
      fatal("kernel '%s' threw an exception: %s", name(), e.what());
    } catch (...) {
      fatal("kernel '%s' threw an exception", name());
    }
    // Wound down by ~Executor, which also discards the saved fake stack.
    last_ = &self;
    asan_start_switch(&self.asan_fake_stack, sched_.stack_bottom, sched_.stack_size);
    return std::move(sched_.fiber);
  }

  void run_thread(Carrier& self, Thread& t) {
    self.thread = &t;
    t.carrier = &self;
    current_thread = &t;
    launch_.invoke(launch_.bound);
    thread_exited(t);
  }

  // The current thread must wait: hand the OS thread to another context.
  void suspend(Carrier& self) {
    Context* next = &sched_;  // nothing can run: run_block() reports the deadlock
    if (ready_count_ != 0) next = &pop_ready();
    else if (next_unstarted_ < launch_.nthreads) next = &idle_carrier();
    switch_to(self, *next);
    current_thread = self.thread;
  }

  // The carrier has no thread left to start; returns false when winding down.
  bool park(Carrier& self) {
    idle_.push_back(&self);
    if (ready_count_ != 0) switch_to(self, pop_ready());
    else switch_to(self, sched_);
    return !quitting_;
  }

  void push_ready(Carrier& carrier) {
    std::size_t slot = ready_head_ + ready_count_++;
    if (slot >= ready_.size()) slot -= ready_.size();
    ready_[slot] = &carrier;
  }

  Carrier& pop_ready() {
    Carrier& carrier = *ready_[ready_head_];
    if (++ready_head_ == ready_.size()) ready_head_ = 0;
    --ready_count_;
    return carrier;
  }

  void wake(Thread& t) {
    t.wait = Wait::none;
    if (&t != current_thread) push_ready(*t.carrier);
  }

  // --- barriers and warp rendezvous ----------------------------------------

  void thread_exited(Thread& t) {
    t.wait = Wait::exited;
    ++exited_;
    Warp& warp = warps_[t.linear / 32];
    warp.exited |= 1u << (t.linear % 32);
    if (at_barrier_ != 0) release_barrier_if_complete();
    if (warp.arrived != 0) complete_warp_ops(t.linear / 32);
  }

  void release_barrier_if_complete() {
    if (at_barrier_ + exited_ != launch_.nthreads) return;
    at_barrier_ = 0;
    for (Thread& t : threads_)
      if (t.wait == Wait::barrier) wake(t);
  }

  // Completes every rendezvous of warp `w` whose named live lanes have all arrived.
  void complete_warp_ops(unsigned w) {
    Warp& warp = warps_[w];
    const unsigned live = warp.present & ~warp.exited;
    if (!warp.mixed_masks) {
      // Common case: one mask, which contains every arrived lane.
      const unsigned group = warp.common_mask & live;
      if ((group & ~warp.arrived) == 0) finish_group(w, group);
      return;
    }
    for (bool progress = true; progress && warp.arrived != 0;) {
      progress = false;
      for (unsigned pending = warp.arrived; pending != 0; pending &= pending - 1) {
        const unsigned group = threads_[w * 32 + lowest_lane(pending)].mask & live;
        if ((group & ~warp.arrived) == 0) {
          finish_group(w, group);
          progress = true;
          break;
        }
      }
    }
  }

  void finish_group(unsigned w, unsigned group) {
    Thread* lanes = threads_.data() + w * 32;
    const WarpOp op = lanes[lowest_lane(group)].op;
    unsigned votes = 0;
    if (op == WarpOp::ballot || op == WarpOp::any || op == WarpOp::all) {
      for (unsigned g = group; g != 0; g &= g - 1)
        if (lanes[lowest_lane(g)].posted != 0) votes |= 1u << lowest_lane(g);
    }
    warps_[w].arrived &= ~group;
    // Results only read `posted`, so each lane can be released right away.
    for (unsigned g = group; g != 0; g &= g - 1) {
      const unsigned lane = lowest_lane(g);
      if (lanes[lane].op != op) report_mismatch(w, group);
      lanes[lane].result = lane_result(lanes, lane, group, votes);
      wake(lanes[lane]);
    }
  }

  static std::uint64_t lane_result(const Thread* lanes, unsigned lane, unsigned group, unsigned votes) {
    const Thread& t = lanes[lane];
    const unsigned width = static_cast<unsigned>(t.width);
    const unsigned first = lane & ~(width - 1);  // first lane of this lane's width-segment
    const unsigned arg = static_cast<unsigned>(t.arg);
    unsigned src = lane;
    switch (t.op) {
      case WarpOp::syncwarp: return 0;
      case WarpOp::ballot: return votes;
      case WarpOp::any: return votes != 0;
      case WarpOp::all: return votes == group;
      case WarpOp::shfl: src = first + (arg & (width - 1)); break;
      case WarpOp::shfl_up:
        if (lane - first < arg) return t.posted;  // nothing below: keep own value
        src = lane - arg;
        break;
      case WarpOp::shfl_down:
        if (arg >= width - (lane - first)) return t.posted;
        src = lane + arg;
        break;
      case WarpOp::shfl_xor:
        src = lane ^ arg;
        if (src >= first + width) return t.posted;  // later segments are out of reach
        break;
    }
    // Exited, missing or non-participating lanes contribute 0.
    return (group >> src & 1u) != 0 ? lanes[src].posted : 0;
  }

  // --- diagnostics -----------------------------------------------------------

  std::string describe_wait(const Thread& t) const {
    if (t.wait == Wait::barrier) return "__syncthreads()";
    const Warp& warp = warps_[t.linear / 32];
    char text[160];
    std::snprintf(text, sizeof text, "%s in warp %u (mask 0x%08x, lanes not arrived 0x%08x)", warp_op_name(t.op),
                  t.linear / 32, t.mask, t.mask & warp.present & ~warp.exited & ~warp.arrived);
    return text;
  }

  [[noreturn]] void report_deadlock() const {
    const unsigned n = launch_.nthreads;
    std::fprintf(stderr,
                 "tg_emu: deadlock in kernel '%s', block (%u,%u,%u): %u of %u threads wait and none can run\n",
                 name(), block_idx.x, block_idx.y, block_idx.z, n - exited_, n);
    auto waiting = [](const Thread& t) { return t.wait == Wait::barrier || t.wait == Wait::warp; };
    for (unsigned i = 0; i < n;) {
      if (!waiting(threads_[i])) {
        ++i;
        continue;
      }
      const std::string what = describe_wait(threads_[i]);
      unsigned j = i + 1;
      while (j < n && waiting(threads_[j]) && describe_wait(threads_[j]) == what) ++j;
      const uint3 a = threads_[i].idx, b = threads_[j - 1].idx;
      std::fprintf(stderr, "  threads %u..%u, threadIdx (%u,%u,%u)..(%u,%u,%u): waiting in %s\n", i, j - 1, a.x,
                   a.y, a.z, b.x, b.y, b.z, what.c_str());
      i = j;
    }
    if (exited_ != 0) std::fprintf(stderr, "  %u threads have exited\n", exited_);
    std::fprintf(stderr,
                 "  (__syncthreads() and warp operations must be reached by every live thread they cover)\n");
    std::fflush(stderr);
    std::abort();
  }

  [[noreturn]] void report_mismatch(unsigned w, unsigned group) const {
    std::fprintf(stderr, "tg_emu: kernel '%s', block (%u,%u,%u), warp %u: lanes met at different warp operations:\n",
                 name(), block_idx.x, block_idx.y, block_idx.z, w);
    for (unsigned g = group; g != 0; g &= g - 1) {
      const unsigned lane = lowest_lane(g);
      std::fprintf(stderr, "  lane %u: %s\n", lane, warp_op_name(threads_[w * 32 + lane].op));
    }
    std::fflush(stderr);
    std::abort();
  }

  Launch& launch_;
  Context sched_;            // the OS thread's own stack, running run()
  Context* last_ = nullptr;  // the context that performed the latest switch
  std::vector<Thread> threads_;
  std::vector<Warp> warps_;
  std::vector<std::unique_ptr<Carrier>> carriers_;
  std::vector<Carrier*> idle_;   // carriers with no thread, reused LIFO
  std::vector<Carrier*> ready_;  // ring buffer of carriers whose thread was released
  std::size_t ready_head_ = 0;
  std::size_t ready_count_ = 0;
  unsigned next_unstarted_ = 0;
  unsigned exited_ = 0;
  unsigned at_barrier_ = 0;
  bool quitting_ = false;
};

inline Thread& running_thread(const char* what) {
  if (current_thread == nullptr) fatal("%s called outside a kernel launched by tg_emu", what);
  return *current_thread;
}

TG_OUT_OF_LINE const uint3& thread_idx() noexcept { return current_thread->idx; }
TG_OUT_OF_LINE const uint3& block_idx() noexcept { return current_exec->block_idx; }
TG_OUT_OF_LINE const dim3& block_dim() noexcept { return current_exec->block_dim; }
TG_OUT_OF_LINE const dim3& grid_dim() noexcept { return current_exec->grid_dim; }

TG_OUT_OF_LINE void sync_block() { current_exec->syncthreads(running_thread("__syncthreads")); }

TG_OUT_OF_LINE std::uint64_t warp_rendezvous(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width) {
  return current_exec->warp_op(running_thread(warp_op_name(op)), op, mask, value, arg, width);
}

TG_OUT_OF_LINE unsigned active_lanes() { return current_exec->active_mask(running_thread("__activemask")); }

#endif  // TG_DEFINE_OUT_OF_LINE

inline unsigned default_threads() {
  static const unsigned from_env = env_unsigned("TG_EMU_THREADS");
  return from_env != 0 ? from_env : std::max(1u, std::thread::hardware_concurrency());
}

// ---------------------------------------------------------------------------
// Inverse error functions: a closed-form starting point, then Newton steps on
// libm's erf/erfc (quadratic convergence; stop once the step is below 1 ulp).
// ---------------------------------------------------------------------------
inline constexpr double two_over_sqrt_pi = std::numbers::inv_sqrtpi * 2;

// erfinv(x) for |x| < 0.5, starting from the Maclaurin series of erfinv.
inline double erfinv_central(double x) {
  constexpr double pi = std::numbers::pi;
  const double x2 = x * x;
  double y = x / two_over_sqrt_pi *
             (1 + x2 * (pi / 12 + x2 * (7 * pi * pi / 480 + x2 * (127 * pi * pi * pi / 40320))));
  for (int i = 0; i < 8; ++i) {
    const double step = (std::erf(y) - x) / (two_over_sqrt_pi * std::exp(-y * y));
    y -= step;
    if (std::fabs(step) <= 0x1p-53 * std::fabs(y)) break;
  }
  return y;
}

// The y > 0 with erfc(y) == w, for 0 < w <= 0.5. Works on erfc and logarithms
// so that tiny w (x close to 1) keeps full relative precision.
inline double erfc_inverse_tail(double w) {
  // Winitzki's approximation (relative error ~2e-3) with ln(1 - x^2) = ln(w (2 - w)).
  constexpr double a = 0.147;
  constexpr double c = 2 / (std::numbers::pi * a);
  const double log_w = std::log(w);
  const double l = log_w + std::log(2 - w);
  const double b = c + l / 2;
  double y = std::sqrt(std::sqrt(b * b - l / a) - b);
  // Newton on ln erfc(y) - ln w, which is close to quadratic in y.
  for (int i = 0; i < 12; ++i) {
    const double e = std::erfc(y);
    const double step = (std::log(e) - log_w) * e / (-two_over_sqrt_pi * std::exp(-y * y));
    if (!std::isfinite(step)) break;  // erfc(y) underflowed: w is among the smallest subnormals
    y -= step;
    if (std::fabs(step) <= 0x1p-53 * y) break;
  }
  return y;
}

template <class T>
T atomic_max(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (old < value && !a.compare_exchange_weak(old, value)) {
  }
  return old;
}

template <class T>
T atomic_min(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (value < old && !a.compare_exchange_weak(old, value)) {
  }
  return old;
}

template <class T>
T atomic_cas(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;  // the old value either way
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Host API.
// ---------------------------------------------------------------------------

// Number of OS threads used for blocks; 0 restores the default
// (TG_EMU_THREADS, else std::thread::hardware_concurrency()).
inline void set_threads(unsigned n) noexcept { detail::threads_override.store(n, std::memory_order_relaxed); }

inline unsigned threads() {
  const unsigned n = detail::threads_override.load(std::memory_order_relaxed);
  return n != 0 ? n : detail::default_threads();
}

// Runs kernel<<<grid, block>>>(args...) and returns when every block has
// finished. Arguments are converted to the parameter types, as nvcc does.
// `name` (may be null) is used in diagnostics.
template <class... Params, class... Args>
void launch_named(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "tg_emu::launch: wrong number of kernel arguments");
  struct Bound {
    void (*kernel)(Params...);
    std::tuple<std::decay_t<Params>...> args;
  };
  const Bound bound{kernel, std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)};
  detail::run_grid(name, grid, block, &bound, [](const void* p) {
    const Bound& b = *static_cast<const Bound*>(p);
    std::apply(b.kernel, b.args);
  });
}

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args&&... args) {
  launch_named(nullptr, kernel, grid, block, std::forward<Args>(args)...);
}

#if TG_DEFINE_OUT_OF_LINE
namespace detail {

TG_OUT_OF_LINE void run_grid(const char* name, dim3 grid, dim3 block, const void* bound, void (*invoke)(const void*)) {
  const char* shown = name != nullptr ? name : "<unnamed>";
  if (current_exec != nullptr) fatal("launch of kernel '%s' from inside a kernel is not supported", shown);
  const std::uint64_t nthreads = std::uint64_t{block.x} * block.y * block.z;
  if (nthreads == 0 || nthreads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64)
    fatal("launch of kernel '%s' failed: invalid block (%u,%u,%u); a block has 1..1024 threads "
          "(x, y <= 1024, z <= 64)",
          shown, block.x, block.y, block.z);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    fatal("launch of kernel '%s' failed: invalid grid (%u,%u,%u); need 1 <= x < 2^31, 1 <= y, z <= 65535", shown,
          grid.x, grid.y, grid.z);

  Launch launch{name, bound, invoke, grid, block, static_cast<unsigned>(nthreads),
                std::uint64_t{grid.x} * grid.y * grid.z};
  const unsigned workers = static_cast<unsigned>(std::min<std::uint64_t>(threads(), launch.nblocks));
  auto work = [&launch] {
    Executor executor(launch);
    executor.run();
  };
  std::vector<std::thread> helpers;
  helpers.reserve(workers - 1);
  for (unsigned i = 1; i < workers; ++i) helpers.emplace_back(work);
  work();  // the calling thread is a worker too
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace detail
#endif  // TG_DEFINE_OUT_OF_LINE
}  // namespace tg_emu

// ---------------------------------------------------------------------------
// Built-in variables (read-only expressions for the running thread).
// ---------------------------------------------------------------------------
#define threadIdx (::tg_emu::detail::thread_idx())
#define blockIdx (::tg_emu::detail::block_idx())
#define blockDim (::tg_emu::detail::block_dim())
#define gridDim (::tg_emu::detail::grid_dim())

// ---------------------------------------------------------------------------
// Synchronisation and warp intrinsics.
// ---------------------------------------------------------------------------
inline void __syncthreads() { ::tg_emu::detail::sync_block(); }

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::tg_emu::detail::warp_vote(::tg_emu::detail::WarpOp::syncwarp, mask, 0);
}

template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  return ::tg_emu::detail::warp_exchange(::tg_emu::detail::WarpOp::shfl, mask, var, srcLane, width);
}

template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::tg_emu::detail::warp_exchange(::tg_emu::detail::WarpOp::shfl_up, mask, var, static_cast<int>(delta),
                                         width);
}

template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::tg_emu::detail::warp_exchange(::tg_emu::detail::WarpOp::shfl_down, mask, var, static_cast<int>(delta),
                                         width);
}

template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
  return ::tg_emu::detail::warp_exchange(::tg_emu::detail::WarpOp::shfl_xor, mask, var, laneMask, width);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(::tg_emu::detail::warp_vote(::tg_emu::detail::WarpOp::ballot, mask, predicate));
}

inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(::tg_emu::detail::warp_vote(::tg_emu::detail::WarpOp::any, mask, predicate));
}

inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(::tg_emu::detail::warp_vote(::tg_emu::detail::WarpOp::all, mask, predicate));
}

inline unsigned __activemask() { return ::tg_emu::detail::active_lanes(); }

// Blocks of one OS thread never run concurrently, so within a block ordering
// the compiler is enough; across blocks a real fence is needed.
inline void __threadfence_block() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }
inline void __threadfence() noexcept { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---------------------------------------------------------------------------
// Atomics (blocks may run on several OS threads at once).
// ---------------------------------------------------------------------------
inline int atomicAdd(int* p, int v) noexcept { return std::atomic_ref<int>(*p).fetch_add(v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) noexcept { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) noexcept {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}
inline float atomicAdd(float* p, float v) noexcept { return std::atomic_ref<float>(*p).fetch_add(v); }
inline double atomicAdd(double* p, double v) noexcept { return std::atomic_ref<double>(*p).fetch_add(v); }

inline int atomicSub(int* p, int v) noexcept { return std::atomic_ref<int>(*p).fetch_sub(v); }
inline unsigned atomicSub(unsigned* p, unsigned v) noexcept { return std::atomic_ref<unsigned>(*p).fetch_sub(v); }

inline unsigned atomicOr(unsigned* p, unsigned v) noexcept { return std::atomic_ref<unsigned>(*p).fetch_or(v); }
inline unsigned atomicAnd(unsigned* p, unsigned v) noexcept { return std::atomic_ref<unsigned>(*p).fetch_and(v); }

inline int atomicMax(int* p, int v) noexcept { return ::tg_emu::detail::atomic_max(p, v); }
inline unsigned atomicMax(unsigned* p, unsigned v) noexcept { return ::tg_emu::detail::atomic_max(p, v); }
inline int atomicMin(int* p, int v) noexcept { return ::tg_emu::detail::atomic_min(p, v); }
inline unsigned atomicMin(unsigned* p, unsigned v) noexcept { return ::tg_emu::detail::atomic_min(p, v); }

inline int atomicCAS(int* p, int compare, int v) noexcept { return ::tg_emu::detail::atomic_cas(p, compare, v); }
inline unsigned atomicCAS(unsigned* p, unsigned compare, unsigned v) noexcept {
  return ::tg_emu::detail::atomic_cas(p, compare, v);
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long compare,
                                    unsigned long long v) noexcept {
  return ::tg_emu::detail::atomic_cas(p, compare, v);
}

inline int atomicExch(int* p, int v) noexcept { return std::atomic_ref<int>(*p).exchange(v); }
inline unsigned atomicExch(unsigned* p, unsigned v) noexcept { return std::atomic_ref<unsigned>(*p).exchange(v); }
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) noexcept {
  return std::atomic_ref<unsigned long long>(*p).exchange(v);
}
inline float atomicExch(float* p, float v) noexcept { return std::atomic_ref<float>(*p).exchange(v); }

// ---------------------------------------------------------------------------
// Device math and bit functions that libm lacks. Declared noexcept because
// glibc already declares __expf and __logf (without exporting them).
// ---------------------------------------------------------------------------
inline float rsqrtf(float x) noexcept { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) noexcept { return 1.0 / std::sqrt(x); }

inline double erfinv(double x) noexcept {
  if (!(std::fabs(x) <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(x) == 1) return std::copysign(std::numeric_limits<double>::infinity(), x);
  if (std::fabs(x) < 0.5) return ::tg_emu::detail::erfinv_central(x);
  return std::copysign(::tg_emu::detail::erfc_inverse_tail(1 - std::fabs(x)), x);  // 1 - |x| is exact here
}

inline double erfcinv(double x) noexcept {
  if (!(x >= 0 && x <= 2)) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return std::numeric_limits<double>::infinity();
  if (x == 2) return -std::numeric_limits<double>::infinity();
  if (x <= 0.5) return ::tg_emu::detail::erfc_inverse_tail(x);
  if (x >= 1.5) return -::tg_emu::detail::erfc_inverse_tail(2 - x);
  return ::tg_emu::detail::erfinv_central(1 - x);
}

// The inverse of the standard normal CDF: ndtri(p) = -sqrt(2) erfcinv(2p), accurate in both tails.
inline double normcdfinv(double p) noexcept { return -1.4142135623730950488 * erfcinv(2 * p); }
inline float normcdfinvf(float p) noexcept { return static_cast<float>(normcdfinv(p)); }

inline float erfinvf(float x) noexcept { return static_cast<float>(erfinv(x)); }
inline float erfcinvf(float x) noexcept { return static_cast<float>(erfcinv(x)); }

inline float __expf(float x) noexcept { return std::exp(x); }
inline float __logf(float x) noexcept { return std::log(x); }
inline float __fdividef(float x, float y) noexcept { return x / y; }
inline float __saturatef(float x) noexcept { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }  // NaN -> 0

inline float __int_as_float(int x) noexcept { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) noexcept { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned x) noexcept { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) noexcept { return std::bit_cast<unsigned>(x); }
inline double __longlong_as_double(long long x) noexcept { return std::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) noexcept { return std::bit_cast<long long>(x); }

inline int __popc(unsigned x) noexcept { return std::popcount(x); }
inline int __popcll(unsigned long long x) noexcept { return std::popcount(x); }
inline int __ffs(int x) noexcept { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __ffsll(long long x) noexcept {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1;
}
inline int __clz(int x) noexcept { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) noexcept { return std::countl_zero(static_cast<unsigned long long>(x)); }

inline unsigned __brev(unsigned x) noexcept {
  x = (x >> 1 & 0x55555555u) | (x & 0x55555555u) << 1;
  x = (x >> 2 & 0x33333333u) | (x & 0x33333333u) << 2;
  x = (x >> 4 & 0x0f0f0f0fu) | (x & 0x0f0f0f0fu) << 4;
  x = (x >> 8 & 0x00ff00ffu) | (x & 0x00ff00ffu) << 8;
  return x >> 16 | x << 16;
}
inline unsigned long long __brevll(unsigned long long x) noexcept {
  return static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32 | __brev(static_cast<unsigned>(x >> 32));
}

template <class T>
T __ldg(const T* p) noexcept {
  return *p;
}

inline unsigned __umulhi(unsigned a, unsigned b) noexcept {
  return static_cast<unsigned>(std::uint64_t{a} * b >> 32);
}
inline int __mulhi(int a, int b) noexcept {
  return static_cast<int>(static_cast<std::int64_t>(a) * b >> 32);
}
// Product of the low 24 bits of a and b (as signed 24-bit numbers), low 32 bits.
inline int __mul24(int a, int b) noexcept {
  auto low24 = [](int v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v) << 8) >> 8; };
  return static_cast<int>(static_cast<std::uint32_t>(std::int64_t{low24(a)} * low24(b)));
}
inline unsigned __umul24(unsigned a, unsigned b) noexcept { return (a & 0xffffffu) * (b & 0xffffffu); }
