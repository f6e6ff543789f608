// Tests of templates/tg_emu.h: CUDA kernels compiled by g++ and run as fibers on the CPU.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tg_emu.h"

namespace {

constexpr unsigned kFull = 0xffffffffu;

// Restores the default number of OS threads when a test ends.
struct ThreadsGuard {
  explicit ThreadsGuard(unsigned n) { tg_emu::set_threads(n); }
  ~ThreadsGuard() { tg_emu::set_threads(0); }
};

// Runs `body` in a forked child with stderr captured; returns the wait status and stderr.
struct ChildResult {
  int status = 0;
  std::string err;
};

template <class F>
ChildResult run_in_child(F body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    std::signal(SIGABRT, SIG_DFL);  // Catch2's handler would report the abort as a test failure
    ::close(fds[0]);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    body();
    std::fflush(stderr);
    ::_exit(0);
  }
  ::close(fds[1]);
  ChildResult result;
  char buffer[4096];
  for (ssize_t got; (got = ::read(fds[0], buffer, sizeof buffer)) > 0;) result.err.append(buffer, std::size_t(got));
  ::close(fds[0]);
  ::waitpid(pid, &result.status, 0);
  return result;
}

bool aborted(const ChildResult& r) { return WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT; }

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// ---- kernels ---------------------------------------------------------------------------------

__global__ void axpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}

__device__ __forceinline__ float warp_sum_xor(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFull, v, offset);
  return v;
}

__device__ __forceinline__ float warp_sum_down(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(kFull, v, offset);
  return v;
}

// One partial sum per block: grid-stride loop, warp shuffles, shared memory, then warp 0 alone
// reduces the per-warp sums.
template <bool UseXor>
__global__ void block_sum(int n, const float* in, float* partial) {
  __shared__ float warp_sums[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += in[i];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = UseXor ? warp_sum_xor(v) : warp_sum_down(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0f;
    v = UseXor ? warp_sum_xor(v) : warp_sum_down(v);
    if (lane == 0) partial[blockIdx.x] = v;
  }
}

// Only warp 0 shuffles; the other warps finish (or wait at the barrier) meanwhile.
__global__ void warp0_shuffles(int* out) {
  const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
  int v = -1;
  if (warp == 0) {
    v = __shfl_sync(kFull, lane * 10 + 7, 3);   // broadcast lane 3: 37
    v += __shfl_up_sync(kFull, lane, 1);         // lane 0 keeps its own 0
  }
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

struct ShuffleResults {
  int idx_width8, down_width16, xor_width8;
  double xor_double;
  unsigned long long idx_u64;
  long long up_i64;
};

__global__ void shuffle_variants(ShuffleResults* out) {
  const int lane = int(threadIdx.x);
  ShuffleResults r;
  r.idx_width8 = __shfl_sync(kFull, lane, 1, 8);
  r.down_width16 = __shfl_down_sync(kFull, lane, 2, 16);
  r.xor_width8 = __shfl_xor_sync(kFull, lane, 4, 8);
  r.xor_double = __shfl_xor_sync(kFull, lane + 0.25, 1);
  r.idx_u64 = __shfl_sync(kFull, (1ull << 40) + unsigned(lane), 31 - lane);
  r.up_i64 = __shfl_up_sync(kFull, -(1ll << 35) - lane, 3);
  out[lane] = r;
}

__global__ void neighbour_exchange(int* out) {
  __shared__ int s[256];
  const unsigned t = threadIdx.x, n = blockDim.x;
  s[t] = int(blockIdx.x * 1000 + t);
  __syncthreads();
  const int left = s[(t + n - 1) % n], right = s[(t + 1) % n];
  __syncthreads();  // everybody has read before anybody overwrites
  s[t] = left + right;
  __syncthreads();
  out[blockIdx.x * n + t] = s[(t + 1) % n];
}

__global__ void early_exit_then_sync(int active, int* out) {
  __shared__ int s[128];
  if (int(threadIdx.x) >= active) return;
  s[threadIdx.x] = int(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = s[active - 1 - int(threadIdx.x)];
}

std::mutex os_threads_mutex;
std::set<std::thread::id> os_threads;

__global__ void shared_isolation(int* errors) {
  __shared__ unsigned tag[64];
  tag[threadIdx.x] = blockIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    {
      std::lock_guard<std::mutex> lock(os_threads_mutex);
      os_threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));  // other blocks run meanwhile
  }
  __syncthreads();
  for (unsigned j = 0; j < blockDim.x; ++j)
    if (tag[j] != blockIdx.x) atomicAdd(errors, 1);
}

struct Votes {
  unsigned ballot, parity_ballot, active;
  int any, all, all_but_lane20;
};

__global__ void votes(Votes* out) {
  const unsigned t = threadIdx.x, lane = t % 32;
  Votes v;
  v.ballot = __ballot_sync(kFull, lane % 3 == 0);
  // Even and odd lanes vote in two interleaved groups.
  v.parity_ballot = __ballot_sync(lane % 2 ? 0xaaaaaaaau : 0x55555555u, lane < 10);
  v.any = __any_sync(kFull, t == 37);
  v.all = __all_sync(kFull, lane < 40);
  v.all_but_lane20 = __all_sync(kFull, lane != 20);
  v.active = __activemask();
  __syncwarp();
  out[t] = v;
}

__global__ void coordinates(unsigned* out, dim3 expect_block, dim3 expect_grid, int* bad_dims) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned local = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned g = block * (blockDim.x * blockDim.y * blockDim.z) + local;
  const unsigned values[7] = {threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z,
                              unsigned(__shfl_sync(kFull, int(local), 0))};
  for (int k = 0; k < 7; ++k) out[g * 7 + k] = values[k];
  if (blockDim.x != expect_block.x || blockDim.y != expect_block.y || blockDim.z != expect_block.z ||
      gridDim.x != expect_grid.x || gridDim.y != expect_grid.y || gridDim.z != expect_grid.z)
    atomicAdd(bad_dims, 1);
}

struct Counters {
  int i = 0;
  unsigned u = 0;
  unsigned long long ull = 0;
  float f = 0;
  double d = 0;
  int max = std::numeric_limits<int>::min();
  unsigned min = std::numeric_limits<unsigned>::max();
  int cas = 0;
  int flag = 0;
  int first_to_flag = 0;
};

__global__ void atomics(Counters* c) {
  const int g = int(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(&c->i, 1);
  atomicAdd(&c->u, 2u);
  atomicAdd(&c->ull, 3ull << 32);
  atomicAdd(&c->f, 1.0f);
  atomicAdd(&c->d, 0.5);
  atomicMax(&c->max, g);
  atomicMin(&c->min, unsigned(g) + 5);
  for (int expected = atomicAdd(&c->cas, 0);;) {  // increment by compare-and-swap
    const int seen = atomicCAS(&c->cas, expected, expected + 1);
    if (seen == expected) break;
    expected = seen;
  }
  if (atomicExch(&c->flag, 1) == 0) atomicAdd(&c->first_to_flag, 1);  // exactly one thread sees 0
}

__global__ void record_order(int* counter, int* order, float* sum, const float* values) {
  const int g = int(blockIdx.x * blockDim.x + threadIdx.x);
  float v = values[g];
  __syncthreads();
  v += __shfl_down_sync(kFull, v, 1);
  order[g] = atomicAdd(counter, 1);
  atomicAdd(sum, v);
}

__device__ int no_argument_hits;
__global__ void no_arguments() { atomicAdd(&no_argument_hits, 1); }

__global__ void divergent_sync(int bad_block) {
  if (int(blockIdx.x) != bad_block) return;
  if (threadIdx.x % 32 < 16) __syncthreads();
  else __ballot_sync(kFull, 1);
}

__global__ void mismatched_warp_ops(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(kFull, 1, 0);
  else out[threadIdx.x] = int(__ballot_sync(kFull, 1));
}

#if TG_EMU_ASAN
__global__ void overflow_after_switch(int* p) {
  __syncthreads();
  if (threadIdx.x == 0) p[blockDim.x] = 1;  // one past the end
}
#endif

// ---- helpers ---------------------------------------------------------------------------------

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Distance in representable floats between two finite floats.
long ulp_distance(float a, float b) {
  auto ordered = [](float x) {
    const std::int32_t bits = __float_as_int(x);
    return bits < 0 ? std::int64_t{INT32_MIN} - bits : std::int64_t{bits};
  };
  return long(std::llabs(ordered(a) - ordered(b)));
}

// erfinv by bisection on std::erf: the reference the emulator's erfinvf is compared to.
double erfinv_by_bisection(double x) {
  double lo = 0, hi = 6;
  const double target = std::fabs(x);
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) break;
    (std::erf(mid) < target ? lo : hi) = mid;
  }
  return std::copysign((lo + hi) / 2, x);
}

double block_sum_total(bool use_xor, int n, const std::vector<float>& in, unsigned grid, unsigned block) {
  std::vector<float> partial(grid, -1.0f);
  if (use_xor) tg_emu::launch(block_sum<true>, grid, block, n, in.data(), partial.data());
  else tg_emu::launch(block_sum<false>, grid, block, n, in.data(), partial.data());
  double total = 0;
  for (float p : partial) total += p;
  return total;
}

}  // namespace

// ---- tests -----------------------------------------------------------------------------------

TEST_CASE("grid-stride elementwise kernel touches every element of odd sizes once") {
  for (int n : {1, 31, 33, 255, 257, 1000, 100003}) {
    for (unsigned block : {256u, 100u, 1u}) {
      for (unsigned grid : {1u, 3u, unsigned((n + block - 1) / block)}) {
        std::vector<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n), 1.0f);
        for (int i = 0; i < n; ++i) x[std::size_t(i)] = float(i) * 0.5f;
        tg_emu::launch(axpy, grid, block, n, 2.0f, x.data(), y.data());
        int wrong = 0;
        for (int i = 0; i < n; ++i) wrong += y[std::size_t(i)] != float(i) + 1.0f;
        INFO("n=" << n << " block=" << block << " grid=" << grid);
        REQUIRE(wrong == 0);
      }
    }
  }
}

TEST_CASE("block reduction with shared memory and shuffles matches a serial sum") {
  const int n = 100003;
  std::vector<float> in(static_cast<std::size_t>(n));
  double serial = 0;
  for (int i = 0; i < n; ++i) serial += in[std::size_t(i)] = float((i * 7919) % 8);  // exact in float
  for (unsigned threads : {1u, 3u}) {
    ThreadsGuard guard(threads);
    for (unsigned block : {256u, 96u, 100u, 32u, 1024u}) {
      for (unsigned grid : {1u, 7u, 64u}) {
        INFO("os threads=" << threads << " block=" << block << " grid=" << grid);
        REQUIRE(block_sum_total(true, n, in, grid, block) == serial);
        REQUIRE(block_sum_total(false, n, in, grid, block) == serial);
      }
    }
  }
}

TEST_CASE("warp 0 may shuffle alone while the other warps do something else") {
  const unsigned block = 256, grid = 5;
  std::vector<int> out(block * grid);
  tg_emu::launch(warp0_shuffles, grid, block, out.data());
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < block; ++t) {
      const int expected = t < 32 ? 37 + (t == 0 ? 0 : int(t) - 1) : -1;
      INFO("block " << b << " thread " << t);
      REQUIRE(out[b * block + t] == expected);
    }
  }
}

TEST_CASE("shuffle variants honour width and transport 64-bit values") {
  std::vector<ShuffleResults> out(32);
  tg_emu::launch(shuffle_variants, 1, 32, out.data());
  for (int lane = 0; lane < 32; ++lane) {
    INFO("lane " << lane);
    const ShuffleResults& r = out[std::size_t(lane)];
    REQUIRE(r.idx_width8 == (lane & ~7) + 1);
    REQUIRE(r.down_width16 == (lane % 16 + 2 >= 16 ? lane : lane + 2));
    REQUIRE(r.xor_width8 == (lane ^ 4));
    REQUIRE(r.xor_double == (lane ^ 1) + 0.25);
    REQUIRE(r.idx_u64 == (1ull << 40) + unsigned(31 - lane));
    REQUIRE(r.up_i64 == -(1ll << 35) - (lane < 3 ? lane : lane - 3));
  }
}

TEST_CASE("__syncthreads orders shared-memory writes and reads") {
  const unsigned block = 256, grid = 9;
  std::vector<int> out(block * grid);
  tg_emu::launch(neighbour_exchange, grid, block, out.data());
  for (unsigned b = 0; b < grid; ++b) {
    auto v = [&](unsigned u) { return int(b * 1000 + u % block); };
    for (unsigned t = 0; t < block; ++t) {
      const unsigned u = (t + 1) % block;  // the slot thread t reads at the end
      INFO("block " << b << " thread " << t);
      REQUIRE(out[b * block + t] == v(u + block - 1) + v(u + 1));
    }
  }
}

TEST_CASE("threads that exited count as arrived at __syncthreads") {
  const int active = 40;
  std::vector<int> out(128, -1);
  tg_emu::launch(early_exit_then_sync, 1, 128, active, out.data());
  for (int t = 0; t < 128; ++t) REQUIRE(out[std::size_t(t)] == (t < active ? active - 1 - t : -1));
}

TEST_CASE("__shared__ memory is private to each block with several OS threads") {
  ThreadsGuard guard(4);
  os_threads.clear();
  int errors = 0;
  tg_emu::launch(shared_isolation, 400, 64, &errors);
  REQUIRE(errors == 0);
  REQUIRE(os_threads.size() >= 2);
}

TEST_CASE("__ballot_sync, __any_sync, __all_sync and __activemask on a partial last warp") {
  const unsigned block = 40;  // warp 1 has lanes 0..7 only
  std::vector<Votes> out(block);
  tg_emu::launch(votes, 1, block, out.data());
  for (unsigned t = 0; t < block; ++t) {
    const Votes& v = out[t];
    const bool warp1 = t >= 32;
    const unsigned lane = t % 32;
    INFO("thread " << t);
    REQUIRE(v.ballot == (warp1 ? 0x49u : 0x49249249u));
    const unsigned parity = (lane % 2 ? 0x2aau : 0x155u) & (warp1 ? 0xffu : kFull);
    REQUIRE(v.parity_ballot == parity);
    REQUIRE(v.any == (warp1 ? 1 : 0));
    REQUIRE(v.all == 1);
    REQUIRE(v.all_but_lane20 == (warp1 ? 1 : 0));
    REQUIRE(v.active == (warp1 ? 0xffu : kFull));
  }
}

TEST_CASE("2D and 3D blocks and grids get the right indices") {
  const dim3 block(8, 4, 2), grid(3, 2, 2);
  const unsigned per_block = block.x * block.y * block.z, total = per_block * grid.x * grid.y * grid.z;
  std::vector<unsigned> out(total * 7, ~0u);
  int bad_dims = 0;
  tg_emu::launch(coordinates, grid, block, out.data(), block, grid, &bad_dims);
  REQUIRE(bad_dims == 0);
  for (unsigned g = 0; g < total; ++g) {
    const unsigned local = g % per_block, b = g / per_block;
    const unsigned expected[7] = {local % block.x, local / block.x % block.y, local / (block.x * block.y),
                                  b % grid.x,      b / grid.x % grid.y,      b / (grid.x * grid.y),
                                  local & ~31u};  // lane 0 of the warp: warps are 32 consecutive threads
    for (int k = 0; k < 7; ++k) {
      INFO("global thread " << g << " component " << k);
      REQUIRE(out[g * 7 + unsigned(k)] == expected[k]);
    }
  }
}

TEST_CASE("atomics from many blocks on several OS threads") {
  ThreadsGuard guard(4);
  const unsigned grid = 300, block = 128, n = grid * block;
  Counters c;
  tg_emu::launch(atomics, grid, block, &c);
  REQUIRE(c.i == int(n));
  REQUIRE(c.u == 2 * n);
  REQUIRE(c.ull == (3ull << 32) * n);
  REQUIRE(c.f == float(n));
  REQUIRE(c.d == 0.5 * n);
  REQUIRE(c.max == int(n) - 1);
  REQUIRE(c.min == 5u);
  REQUIRE(c.cas == int(n));
  REQUIRE(c.flag == 1);
  REQUIRE(c.first_to_flag == 1);
}

TEST_CASE("a kernel without parameters") {
  no_argument_hits = 0;
  tg_emu::launch_named("no_arguments", no_arguments, dim3(2, 3), 33);
  REQUIRE(no_argument_hits == 2 * 3 * 33);
}

TEST_CASE("erfinvf is within 2 ulp of the inverse of std::erf") {
  std::vector<float> xs = {0.0f, 1e-30f, -1e-20f, 1e-7f, 0.5f, -0.5f, 0.49999997f, 0.50000006f};
  for (int k = 0; k <= 20000; ++k) xs.push_back(-1.0f + float(k) / 10000.0f);
  for (int k = 1; k <= 24; ++k) {
    xs.push_back(1.0f - std::ldexp(1.0f, -k));
    xs.push_back(-1.0f + std::ldexp(1.0f, -k));
  }
  long worst = 0;
  for (float x : xs) {
    if (std::fabs(x) >= 1.0f) continue;
    const float reference = float(erfinv_by_bisection(x));
    const long d = ulp_distance(erfinvf(x), reference);
    worst = std::max(worst, d);
    INFO("x = " << x << " erfinvf = " << erfinvf(x) << " reference = " << reference);
    REQUIRE(d <= 2);
  }
  std::printf("erfinvf: worst distance to the bisection reference %ld ulp over %zu points\n", worst, xs.size());
  REQUIRE(std::isinf(erfinvf(1.0f)));
  REQUIRE(erfinvf(-1.0f) < 0);
  REQUIRE(std::isnan(erfinvf(1.5f)));
  REQUIRE(std::isnan(erfinvf(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("double erfinv and erfcinv invert erf and erfc") {
  const double eps = std::numeric_limits<double>::epsilon();
  for (int k = -999; k <= 999; ++k) {
    const double x = k / 1000.0;
    const double y = erfinv(x);
    INFO("x = " << x);
    REQUIRE(std::fabs(std::erf(y) - x) <= 4 * eps * std::fabs(x));
  }
  for (int e = 1; e <= 300; ++e) {
    const double z = std::pow(10.0, -e);
    const double y = erfcinv(z);
    INFO("z = " << z << " y = " << y);
    // erfc varies by a factor (1 + 2y dy) near y: allow a few ulp of y.
    REQUIRE(std::fabs(std::erfc(y) / z - 1) <= 8 * eps * (1 + 2 * y * y));
  }
  REQUIRE(erfcinv(1.0) == 0.0);
  REQUIRE(erfcinv(1.75) == -erfcinv(0.25));
  REQUIRE(erfcinvf(0.0f) == std::numeric_limits<float>::infinity());
  REQUIRE(erfcinvf(2.0f) == -std::numeric_limits<float>::infinity());
  REQUIRE(erfcinvf(0.3f) == Approx(double(erfinvf(0.7f))).epsilon(1e-6));
}

TEST_CASE("bit and fast-math device functions") {
  REQUIRE(rsqrtf(4.0f) == 0.5f);
  REQUIRE(rsqrt(0.25) == 2.0);
  REQUIRE(__expf(0.0f) == 1.0f);
  REQUIRE(__logf(1.0f) == 0.0f);
  REQUIRE(__fdividef(1.0f, 4.0f) == 0.25f);
  REQUIRE(__saturatef(-1.0f) == 0.0f);
  REQUIRE(__saturatef(2.0f) == 1.0f);
  REQUIRE(__saturatef(0.25f) == 0.25f);
  REQUIRE(__saturatef(std::numeric_limits<float>::quiet_NaN()) == 0.0f);
  REQUIRE(__float_as_int(1.0f) == 0x3f800000);
  REQUIRE(__int_as_float(0x40000000) == 2.0f);
  REQUIRE(__float_as_uint(-0.0f) == 0x80000000u);
  REQUIRE(__uint_as_float(0x3f000000u) == 0.5f);
  REQUIRE(__double_as_longlong(1.0) == 0x3ff0000000000000ll);
  REQUIRE(__longlong_as_double(0x4000000000000000ll) == 2.0);
  REQUIRE(__popc(0xf0f0u) == 8);
  REQUIRE(__popcll(~0ull) == 64);
  REQUIRE(__ffs(0) == 0);
  REQUIRE(__ffs(8) == 4);
  REQUIRE(__ffs(int(0x80000000u)) == 32);
  REQUIRE(__clz(0) == 32);
  REQUIRE(__clz(1) == 31);
  REQUIRE(__clz(-1) == 0);
  REQUIRE(__brev(1u) == 0x80000000u);
  REQUIRE(__brev(0x12345678u) == 0x1e6a2c48u);
  REQUIRE(__umulhi(0xffffffffu, 2u) == 1u);
  REQUIRE(__mul24(0x00ffffff, 5) == -5);  // 0xffffff is -1 as a 24-bit number
  REQUIRE(__mul24(0x01000003, 7) == 21);  // bits above 24 are ignored
  const float v = 3.5f;
  REQUIRE(__ldg(&v) == 3.5f);
}

TEST_CASE("one OS thread gives identical results run after run") {
  ThreadsGuard guard(1);
  const unsigned grid = 40, block = 96, n = grid * block;
  std::vector<float> values(n);
  for (unsigned i = 0; i < n; ++i) values[i] = 1.0f / float(i + 1);  // float sums depend on the order
  auto run = [&](std::vector<int>& order, float& sum) {
    int counter = 0;
    order.assign(n, -1);
    sum = 0;
    tg_emu::launch(record_order, grid, block, &counter, order.data(), &sum, values.data());
  };
  std::vector<int> order1, order2;
  float sum1 = 0, sum2 = 0;
  run(order1, sum1);
  run(order2, sum2);
  REQUIRE(order1 == order2);
  REQUIRE(__float_as_uint(sum1) == __float_as_uint(sum2));
}

TEST_CASE("a deadlocked block is reported and aborts") {
  const ChildResult r = run_in_child([] {
    tg_emu::set_threads(1);
    tg_emu::launch_named("divergent_sync", divergent_sync, 3, 64, 1);
  });
  INFO(r.err);
  REQUIRE(aborted(r));
  REQUIRE(contains(r.err, "deadlock in kernel 'divergent_sync', block (1,0,0)"));
  REQUIRE(contains(r.err, "threads 0..15, threadIdx (0,0,0)..(15,0,0): waiting in __syncthreads()"));
  REQUIRE(contains(r.err, "threads 16..31, threadIdx (16,0,0)..(31,0,0): waiting in __ballot_sync in warp 0"));
  REQUIRE(contains(r.err, "threads 48..63"));
}

TEST_CASE("lanes meeting at different warp operations abort") {
  const ChildResult r = run_in_child([] {
    std::vector<int> out(32);
    tg_emu::launch_named("mismatched", mismatched_warp_ops, 1, 32, out.data());
  });
  INFO(r.err);
  REQUIRE(aborted(r));
  REQUIRE(contains(r.err, "different warp operations"));
  REQUIRE(contains(r.err, "lane 0: __shfl_sync"));
  REQUIRE(contains(r.err, "lane 16: __ballot_sync"));
}

TEST_CASE("invalid launch configurations abort like a CUDA launch error") {
  const ChildResult block = run_in_child([] { tg_emu::launch_named("k", axpy, 1, 1025, 0, 1.0f, nullptr, nullptr); });
  INFO(block.err);
  REQUIRE(aborted(block));
  REQUIRE(contains(block.err, "launch of kernel 'k' failed: invalid block (1025,1,1)"));
  const ChildResult grid = run_in_child([] { tg_emu::launch(axpy, dim3(4, 0), 32, 0, 1.0f, nullptr, nullptr); });
  INFO(grid.err);
  REQUIRE(aborted(grid));
  REQUIRE(contains(grid.err, "invalid grid (4,0,1)"));
}

#if TG_EMU_ASAN
TEST_CASE("AddressSanitizer still reports bugs inside fibers") {
  const ChildResult r = run_in_child([] {
    const std::unique_ptr<int[]> data(new int[64]);
    tg_emu::launch(overflow_after_switch, 1, 64, data.get());
  });
  INFO(r.err);
  REQUIRE(r.status != 0);
  REQUIRE(contains(r.err, "heap-buffer-overflow"));
}
#endif

TEST_CASE("speed of an elementwise and a block-reduction kernel on one OS thread") {
  ThreadsGuard guard(1);
  const int n = 1 << 22;
  std::vector<float> x(static_cast<std::size_t>(n), 1.0f), y(static_cast<std::size_t>(n), 2.0f);
  const unsigned block = 256, one_per_thread = unsigned(n) / block;

  // Elementwise with one element per thread (4M fibers) and with a small grid-stride grid.
  const double elementwise_full =
      seconds_of([&] { tg_emu::launch(axpy, one_per_thread, block, n, 3.0f, x.data(), y.data()); });
  const double elementwise_small = seconds_of([&] { tg_emu::launch(axpy, 64, block, n, 3.0f, x.data(), y.data()); });
  REQUIRE(y[0] == 8.0f);
  REQUIRE(y[static_cast<std::size_t>(n) - 1] == 8.0f);

  // Reductions wait at every shuffle and barrier, so each costs a fiber switch per thread:
  // grid-stride with 1024 and 64 blocks.
  double total = 0;
  const double reduction_1024 = seconds_of([&] { total = block_sum_total(true, n, x, 1024, block); });
  REQUIRE(total == double(n));
  const double reduction_64 = seconds_of([&] { total = block_sum_total(true, n, x, 64, block); });
  REQUIRE(total == double(n));

  std::printf("tg_emu speed, 4M floats, 256 threads/block, 1 OS thread:\n"
              "  elementwise: grid %u %.3f s, grid 64 %.3f s\n"
              "  reduction:   grid 1024 %.3f s, grid 64 %.3f s\n",
              one_per_thread, elementwise_full, elementwise_small, reduction_1024, reduction_64);
  CHECK(elementwise_full < 10);
  CHECK(elementwise_small < 10);
  CHECK(reduction_1024 < 10);
  CHECK(reduction_64 < 10);
}
