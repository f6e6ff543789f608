// thunder-gen device runtime: the helpers generated kernels call. Written into every output
// folder by thunder-gen; compiles three ways from the same text:
//   nvcc (__CUDACC__), NVRTC (__CUDACC_RTC__: no standard headers), and g++ for host emulation
//   (neither defined: tg_emu.h turns CUDA threads into fibers).
// 16-bit floats are stored as raw bits (tg::half, tg::bfloat16) and computed in float: one
// rounding per stored output, round-to-nearest-even.
#pragma once

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#endif
#define TG_INFINITY tg::bits_float(0x7f800000u)

// Host code that never sees a kernel (the harness, the host side of an NVRTC build) needs only
// the storage types.
#if defined(TG_NVRTC_HOST) && !defined(TG_HOST_ONLY)
#define TG_HOST_ONLY
#endif

// The host runtime's larger parts (the emulator's scheduler, the harness) are inline in these
// headers by default. A program of many emulated builds (the test suite) compiles them once
// instead: its builds define TG_RUNTIME_PREBUILT and link one translation unit that defines
// TG_RUNTIME_LIBRARY (tests/emu_runtime.cpp), compiled with the same flags.
#if defined(TG_RUNTIME_LIBRARY)
#define TG_OUT_OF_LINE
#define TG_DEFINE_OUT_OF_LINE 1
#elif defined(TG_RUNTIME_PREBUILT)
#define TG_OUT_OF_LINE
#define TG_DEFINE_OUT_OF_LINE 0
#else
#define TG_OUT_OF_LINE inline
#define TG_DEFINE_OUT_OF_LINE 1
#endif

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__) && !defined(TG_HOST_ONLY)
#include "tg_emu.h"
#endif

#if defined(TG_HOST_ONLY)
#define TG_HD inline
#else
#define TG_HD __host__ __device__ __forceinline__
#endif

namespace tg {

// ---- storage types -------------------------------------------------------------------------

struct half { uint16_t bits; };
struct bfloat16 { uint16_t bits; };

// Device passes use the bit-cast intrinsics; host passes (g++, nvcc's host side) use memcpy.
TG_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u; std::memcpy(&u, &f, 4); return u;
#endif
}
TG_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f; std::memcpy(&f, &u, 4); return f;
#endif
}

TG_HD float to_float(bfloat16 h) { return bits_float(uint32_t(h.bits) << 16); }
TG_HD bfloat16 to_bfloat16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bfloat16{uint16_t((u >> 16) | 0x40)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return bfloat16{uint16_t(u >> 16)};
}

TG_HD float to_float(half h) {
  uint32_t sign = uint32_t(h.bits & 0x8000u) << 16, exp = (h.bits >> 10) & 0x1fu, man = h.bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_float(sign);
    // subnormal: value = man * 2^-24
    float f = float(man) * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  return bits_float(sign | ((exp + 112) << 23) | (man << 13));
}
TG_HD half to_half(float f) {
  uint32_t u = float_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return half{uint16_t(sign | 0x7e00u)};             // NaN
  if (a >= 0x477ff000u) return half{uint16_t(sign | 0x7c00u)};            // rounds to inf
  if (a < 0x38800000u) {                                                  // subnormal or zero
    float scaled = bits_float(a) * 16777216.0f;                           // value / 2^-24
    uint32_t m = uint32_t(scaled);
    float rest = scaled - float(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1u))) ++m;
    return half{uint16_t(sign | m)};
  }
  uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
  return half{uint16_t(sign | ((rounded - 0x38000000u) >> 13))};
}

// ---- random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3")
// A counter-based generator: draw i of (seed, offset) is a pure function of the three, so host
// emulation, the GPU and the reference interpreter make the same draws. Element i uses word i % 4
// of the block at counter (i / 4, offset) under key seed.
TG_HD uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t block, unsigned word) {
  uint32_t c0 = uint32_t(block), c1 = uint32_t(block >> 32), c2 = uint32_t(offset), c3 = uint32_t(offset >> 32);
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0, p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;  // the Weyl key schedule
    k1 += 0xBB67AE85u;
  }
  return word == 0 ? c0 : word == 1 ? c1 : word == 2 ? c2 : c3;
}
// Uniform in [0, 1): the top 24 bits of the word, so every value is exact in f32. Stream k
// (one per dropout call under one seed and offset) starts at block k * 2^40, so streams of up to
// 2^42 elements never share a counter.
TG_HD float philox_uniform(uint64_t seed, uint64_t offset, int64_t i, uint64_t stream = 0) {
  return float(philox_word(seed, offset, (uint64_t(i) >> 2) + (stream << 40), unsigned(i & 3)) >> 8) * (1.0f / 16777216.0f);
}

// ---- division by a size taken at run time ---------------------------------------------------
// x / d for 0 <= x < 2^63 as a multiply-high, an add and a shift, as a compiler divides by a
// constant (Granlund and Montgomery, "Division by invariant integers using multiplication", 1994):
// with s = ceil(log2 d) and the 65-bit multiplier 2^64 + magic = floor(2^(64+s) / d) + 1,
// x / d = (mulhi(x, magic) + x) >> s. The host computes magic once per launch (tg::divider); a
// kernel taking its sizes at run time divides by its dv_<symbol> parameters with tg::quot and
// tg::rem instead of a 64-bit division routine.
// Where the code proves x < 2^31 at every size, the same in 32 bits (tg::quot32, tg::rem32):
// 2^32 + magic32 = floor(2^(32+s) / d) + 1; a divisor past 2^31 gives 0 (magic32 0, shift 31).
struct Divider {
  int64_t divisor;
  uint64_t magic;
  uint32_t shift;
  uint32_t magic32, shift32;
};
#if !defined(__CUDACC_RTC__)
inline Divider divider(int64_t d) {
  if (d <= 0) return {d, 0, 0, 0, 0};  // (no kernel divides by a size of 0: it has nothing to compute)
  uint32_t s = 0;
  while (s < 63 && (int64_t(1) << s) < d) ++s;
  const uint64_t excess = (uint64_t(1) << s) - uint64_t(d);
  const uint64_t magic = uint64_t(((unsigned __int128)excess << 64) / uint64_t(d)) + 1;
  if (s > 31) return {d, magic, s, 0, 31};
  return {d, magic, s, uint32_t((excess << 32) / uint64_t(d)) + 1, s};
}
#endif
TG_HD int64_t quot(int64_t x, const Divider& d) {
#if defined(__CUDA_ARCH__)
  const uint64_t high = __umul64hi(uint64_t(x), d.magic);
#else
  const uint64_t high = uint64_t(((unsigned __int128)uint64_t(x) * d.magic) >> 64);
#endif
  return int64_t((high + uint64_t(x)) >> d.shift);
}
TG_HD int64_t rem(int64_t x, const Divider& d) { return x - quot(x, d) * d.divisor; }
// (In 32 bits throughout: a divisor past 2^31 makes the quotient 0, whatever int(divisor) is.)
TG_HD int quot32(int64_t x, const Divider& d) {
#if defined(__CUDA_ARCH__)
  const uint32_t high = __umulhi(uint32_t(x), d.magic32);
#else
  const uint32_t high = uint32_t((uint64_t(uint32_t(x)) * d.magic32) >> 32);
#endif
  return int((high + uint32_t(x)) >> d.shift32);
}
TG_HD int rem32(int64_t x, const Divider& d) { return int(x) - quot32(x, d) * int(d.divisor); }

// ---- loads and stores: storage type <-> compute type ----------------------------------------

template <class T> TG_HD T load(const T* p, int64_t i) { return p[i]; }
TG_HD float load(const half* p, int64_t i) { return to_float(p[i]); }
TG_HD float load(const bfloat16* p, int64_t i) { return to_float(p[i]); }
template <class T, class V> TG_HD void store(T* p, int64_t i, V v) { p[i] = static_cast<T>(v); }
template <class V> TG_HD void store(half* p, int64_t i, V v) { p[i] = to_half(float(v)); }
template <class V> TG_HD void store(bfloat16* p, int64_t i, V v) { p[i] = to_bfloat16(float(v)); }
// An element moved unchanged (a transpose's, a broadcast's): its bits, in its storage type.
template <class T> TG_HD T load_as_stored(const T* p, int64_t i) { return p[i]; }
TG_HD void store(half* p, int64_t i, half v) { p[i] = v; }
TG_HD void store(bfloat16* p, int64_t i, bfloat16 v) { p[i] = v; }

// ---- runs: N neighbouring elements moved as one access --------------------------------------
// A pointwise kernel loads and stores each contiguous operand N elements at a time, N * size
// bytes <= 16 (float x4, bf16 x8: one ld.global.v4 / st.global.v4), when its pointers are
// 16-byte aligned; `Run` carries the alignment that lets the compiler use one wide access.
template <class T, int N> struct alignas(sizeof(T) * N) Run { T v[N]; };
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TG_UNROLL _Pragma("unroll")
#else
#define TG_UNROLL
#endif
// A fact the generator proves and nvcc cannot (a grid-stride index is never negative), for
// nvcc's device code (and NVRTC's); checked under host emulation; nothing in nvcc's host pass.
#if defined(__CUDA_ARCH__)
#define TG_ASSUME(fact) __builtin_assume(fact)
#elif !defined(__CUDACC__) && !defined(__CUDACC_RTC__) && !defined(TG_HOST_ONLY)
#define TG_ASSUME(fact) ((fact) ? (void)0 : ::tg_emu::detail::fatal("an assumption does not hold: %s", #fact))
#else
#define TG_ASSUME(fact) ((void)0)
#endif
// Elements i .. i + N - 1 to or from out[0 .. N - 1]: a row kernel moves run g of the row part a
// thread holds (out = c_x + g * N) this way.
template <int N, class T, class C> TG_HD void load_run_to(const T* p, int64_t i, C* out) {
  const Run<T, N> r = *reinterpret_cast<const Run<T, N>*>(p + i);
  TG_UNROLL for (int k = 0; k < N; ++k) out[k] = load(r.v, k);
}
template <int N, class T> TG_HD void load_run_to(const T* p, int64_t i, T* out) {  // (into the pointer's type: as stored)
  const Run<T, N> r = *reinterpret_cast<const Run<T, N>*>(p + i);
  TG_UNROLL for (int k = 0; k < N; ++k) out[k] = r.v[k];
}
template <int N, class T, class C> TG_HD void store_run_from(T* p, int64_t i, const C* in) {
  Run<T, N> r;
  TG_UNROLL for (int k = 0; k < N; ++k) store(r.v, k, in[k]);
  *reinterpret_cast<Run<T, N>*>(p + i) = r;
}
template <class T, class C, int N> TG_HD void load_run(const T* p, int64_t i, C (&out)[N]) { load_run_to<N>(p, i, out); }
template <class T, class C, int N> TG_HD void store_run(T* p, int64_t i, const C (&in)[N]) { store_run_from<N>(p, i, in); }
TG_HD bool aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0; }

// A boolean tensor stored at one bit per element (a saved mask): element i is bit i % 32 of
// 32-bit word i / 32. Each element is written once, by one thread, with an atomic on its word, so
// the buffer needs no clearing and neighbouring threads never lose each other's bits.
struct PackedBits { unsigned word; };
TG_HD bool load(const PackedBits* p, int64_t i) { return (p[i >> 5].word >> (i & 31)) & 1u; }
// A run of N bits (N a power of two <= 32, i a multiple of N, so the run lies in one word) from
// one 32-bit load. The generic run of N elements would read N words.
template <int N, class C> TG_HD void load_run_to(const PackedBits* p, int64_t i, C* out) {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "a run of bits lies in one word");
  const unsigned bits = p[i >> 5].word >> (i & 31);
  TG_UNROLL for (int k = 0; k < N; ++k) out[k] = (bits >> k) & 1u;
}
// Runs of bits are stored by store_run_bits (a warp writes whole words), never element-wise.
template <int N, class C> void store_run_from(PackedBits* p, int64_t i, const C* in) = delete;
#if !defined(TG_HOST_ONLY)
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
__device__ __forceinline__
#else
inline
#endif
void store(PackedBits* p, int64_t i, bool v) {
  const unsigned bit = 1u << (i & 31);
  if (v) atomicOr(&p[i >> 5].word, bit);
  else atomicAnd(&p[i >> 5].word, ~bit);
}
// A run's bits (bit k: element i + k; i a multiple of L, L a power of two <= 16) stored without
// atomics: the warp's lanes, on consecutive runs, OR their bits into whole 32-bit words and one
// lane per word writes it. Every lane of the warp must call it (a warp-uniform loop).
template <int L> __device__ __forceinline__ void store_run_bits(PackedBits* p, int64_t i, unsigned bits) {
  constexpr unsigned lanes_per_word = 32 / L;
  const unsigned place = unsigned(i & 31) / L;  // this run's position in its word
  unsigned word = bits << (place * L);
  for (unsigned m = 1; m < lanes_per_word; m <<= 1) word |= __shfl_xor_sync(0xffffffffu, word, m);
  if (place == 0) p[i >> 5].word = word;
}
#endif

// Explicit conversions inside a kernel round like a store would.
TG_HD float round_to_half(float x) { return to_float(to_half(x)); }
TG_HD float round_to_bfloat16(float x) { return to_float(to_bfloat16(x)); }

#if !defined(TG_HOST_ONLY)

// ---- math: one name per op, overloaded by compute type ----------------------------------------
// Floats use the CUDA math library (libm under emulation); integer overloads follow PyTorch.

#define TG_UNARY_FLOAT(name, f32, f64) \
  TG_HD float name(float x) { return f32(x); } \
  TG_HD double name(double x) { return f64(x); }
TG_UNARY_FLOAT(exp, expf, ::exp)
TG_UNARY_FLOAT(exp2, exp2f, ::exp2)
TG_UNARY_FLOAT(expm1, expm1f, ::expm1)
TG_UNARY_FLOAT(log, logf, ::log)
TG_UNARY_FLOAT(log1p, log1pf, ::log1p)
TG_UNARY_FLOAT(log2, log2f, ::log2)
TG_UNARY_FLOAT(log10, log10f, ::log10)
TG_UNARY_FLOAT(sqrt, sqrtf, ::sqrt)
TG_UNARY_FLOAT(rsqrt, rsqrtf, ::rsqrt)
TG_UNARY_FLOAT(sin, sinf, ::sin)
TG_UNARY_FLOAT(cos, cosf, ::cos)
TG_UNARY_FLOAT(tan, tanf, ::tan)
TG_UNARY_FLOAT(tanh, tanhf, ::tanh)
TG_UNARY_FLOAT(sinh, sinhf, ::sinh)
TG_UNARY_FLOAT(cosh, coshf, ::cosh)
TG_UNARY_FLOAT(asin, asinf, ::asin)
TG_UNARY_FLOAT(acos, acosf, ::acos)
TG_UNARY_FLOAT(atan, atanf, ::atan)
TG_UNARY_FLOAT(asinh, asinhf, ::asinh)
TG_UNARY_FLOAT(acosh, acoshf, ::acosh)
TG_UNARY_FLOAT(atanh, atanhf, ::atanh)
TG_UNARY_FLOAT(erf, erff, ::erf)
TG_UNARY_FLOAT(erfc, erfcf, ::erfc)
TG_UNARY_FLOAT(erfinv, erfinvf, ::erfinv)
TG_UNARY_FLOAT(lgamma, lgammaf, ::lgamma)
TG_UNARY_FLOAT(ndtri, normcdfinvf, ::normcdfinv)
TG_UNARY_FLOAT(floor, floorf, ::floor)
TG_UNARY_FLOAT(ceil, ceilf, ::ceil)
TG_UNARY_FLOAT(round, rintf, ::rint)  // half to even, like torch.round
TG_UNARY_FLOAT(trunc, truncf, ::trunc)
#undef TG_UNARY_FLOAT

// The sine and cosine of one float angle from one range reduction, for a kernel that needs both
// (rotary embeddings): on the device sincosf's two values are sinf's and cosf's (libdevice runs
// the same reduction and polynomials), computed once; on the host, the two functions.
struct SinCos { float sin, cos; };
TG_HD SinCos sincos(float x) {
#if defined(__CUDA_ARCH__)
  SinCos r;
  ::sincosf(x, &r.sin, &r.cos);
  return r;
#else
  return {sinf(x), cosf(x)};
#endif
}

TG_HD float reciprocal(float x) { return 1.0f / x; }
TG_HD double reciprocal(double x) { return 1.0 / x; }

// Integer rounding is the identity.
template <class T> TG_HD T floor(T x) { return x; }
template <class T> TG_HD T ceil(T x) { return x; }
template <class T> TG_HD T round(T x) { return x; }
template <class T> TG_HD T trunc(T x) { return x; }

// Integer arithmetic wraps, as PyTorch's does. Signed overflow is undefined in C++ (a compiler may
// assume it never happens), so integers compute in an unsigned type at least as wide as int (a
// narrower one would be promoted to signed int, where a product can overflow) and wrap when
// converted back. Floats and bools compute in their own type.
template <class T> struct Unsigned { typedef T type; };
template <> struct Unsigned<int8_t> { typedef uint32_t type; };
template <> struct Unsigned<uint8_t> { typedef uint32_t type; };
template <> struct Unsigned<int16_t> { typedef uint32_t type; };
template <> struct Unsigned<uint16_t> { typedef uint32_t type; };
template <> struct Unsigned<int32_t> { typedef uint32_t type; };
template <> struct Unsigned<uint32_t> { typedef uint32_t type; };
template <> struct Unsigned<int64_t> { typedef uint64_t type; };
template <> struct Unsigned<uint64_t> { typedef uint64_t type; };
template <class T> TG_HD T wrapping_add(T a, T b) { typedef typename Unsigned<T>::type U; return T(U(a) + U(b)); }
template <class T> TG_HD T wrapping_sub(T a, T b) { typedef typename Unsigned<T>::type U; return T(U(a) - U(b)); }
template <class T> TG_HD T wrapping_mul(T a, T b) { typedef typename Unsigned<T>::type U; return T(U(a) * U(b)); }
template <class T> TG_HD T wrapping_neg(T a) { typedef typename Unsigned<T>::type U; return T(U(0) - U(a)); }

TG_HD float abs(float x) { return fabsf(x); }
TG_HD double abs(double x) { return ::fabs(x); }
template <class T> TG_HD T abs(T x) { return x < 0 ? wrapping_neg(x) : x; }  // (the minimum is its own absolute value)

template <class T> TG_HD T sign(T x) { return x != x ? x : T((T(0) < x) - (x < T(0))); }
TG_HD bool sign(bool x) { return x; }
// Classification from the bits, so the three compilers agree without <cmath> macros.
TG_HD uint64_t double_bits(double d) {
#if defined(__CUDA_ARCH__)
  return uint64_t(__double_as_longlong(d));
#else
  uint64_t u; std::memcpy(&u, &d, 8); return u;
#endif
}
TG_HD bool signbit(float x) { return (float_bits(x) >> 31) != 0; }
TG_HD bool signbit(double x) { return (double_bits(x) >> 63) != 0; }
template <class T> TG_HD bool signbit(T x) { return x < 0; }
TG_HD bool isfinite(float x) { return (float_bits(x) & 0x7f800000u) != 0x7f800000u; }
TG_HD bool isfinite(double x) { return (double_bits(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }
template <class T> TG_HD bool isfinite(T) { return true; }
TG_HD bool bitwise_not(bool x) { return !x; }
template <class T> TG_HD T bitwise_not(T x) { return T(~x); }

// Division: true division for floats, truncation for integers (prims.div).
TG_HD float div(float a, float b) { return a / b; }
TG_HD double div(double a, double b) { return a / b; }
template <class T> TG_HD T div(T a, T b) { return T(a / b); }

TG_HD float pow(float a, float b) { return powf(a, b); }
TG_HD double pow(double a, double b) { return ::pow(a, b); }
template <class T> TG_HD T pow(T base, T e) {
  if (e < 0) return base == 1 ? T(1) : base == T(-1) ? T((e & 1) ? -1 : 1) : T(0);
  T r = 1;
  for (; e > 0; e >>= 1, base = wrapping_mul(base, base))
    if (e & 1) r = wrapping_mul(r, base);
  return r;
}

TG_HD float fmod(float a, float b) { return fmodf(a, b); }
TG_HD double fmod(double a, double b) { return ::fmod(a, b); }
template <class T> TG_HD T fmod(T a, T b) { return T(a % b); }

// remainder takes the sign of the divisor (Python's %).
TG_HD float remainder(float a, float b) { float r = fmodf(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
TG_HD double remainder(double a, double b) { double r = ::fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
template <class T> TG_HD T remainder(T a, T b) { T r = T(a % b); return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r; }

TG_HD float atan2(float a, float b) { return atan2f(a, b); }
TG_HD double atan2(double a, double b) { return ::atan2(a, b); }
TG_HD float hypot(float a, float b) { return hypotf(a, b); }
TG_HD double hypot(double a, double b) { return ::hypot(a, b); }
TG_HD float copysign(float a, float b) { return copysignf(a, b); }
TG_HD double copysign(double a, double b) { return ::copysign(a, b); }

// digamma (psi), as torch.digamma: psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic
// series ln x - 1/(2x) - sum B_2k / (2k x^2k) to x^-14 (its next term is under 1e-16 there); below
// 0 the reflection psi(x) = psi(1 - x) - pi / tan(pi x). At the poles: -inf at +0, +inf at -0,
// NaN at the negative integers.
template <class T> TG_HD T digamma_of(T x) {
  if (x == T(0)) return signbit(x) ? T(TG_INFINITY) : -T(TG_INFINITY);
  T result = 0;
  if (x < T(0)) {
    if (x == floor(x)) return T(TG_INFINITY) - T(TG_INFINITY);  // NaN
    const T pi = T(3.14159265358979323846);
    result = -pi / tan(pi * x);
    x = T(1) - x;
  }
  for (; x < T(10); x += T(1)) result -= T(1) / x;
  const T f = T(1) / (x * x);
  const T series =
      f * (T(-1.0 / 12) + f * (T(1.0 / 120) + f * (T(-1.0 / 252) + f * (T(1.0 / 240) + f * (T(-1.0 / 132) + f * (T(691.0 / 32760) + f * T(-1.0 / 12)))))));
  return result + log(x) - T(0.5) / x + series;
}
TG_HD float digamma(float x) { return digamma_of(x); }
TG_HD double digamma(double x) { return digamma_of(x); }

// maximum/minimum propagate NaN, like torch.maximum.
template <class T> TG_HD T maximum(T a, T b) { return (a != a) ? a : (b != b) ? b : (a > b ? a : b); }
template <class T> TG_HD T minimum(T a, T b) { return (a != a) ? a : (b != b) ? b : (a < b ? a : b); }

// A shift by a negative amount or by the type's width or more gives 0 (or -1, shifting a negative
// value right), as PyTorch's does; C++ leaves those undefined.
template <class T> TG_HD T shift_left(T a, T b) {
  typedef typename Unsigned<T>::type U;
  return (b < 0 || b >= T(8 * sizeof(T))) ? T(0) : T(U(a) << b);
}
template <class T> TG_HD T shift_right(T a, T b) {
  return (b < 0 || b >= T(8 * sizeof(T))) ? T(a < 0 ? -1 : 0) : T(a >> b);
}

TG_HD float lerp(float a, float b, float w) { return w < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w); }
TG_HD double lerp(double a, double b, double w) { return w < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w); }

// ---- reductions --------------------------------------------------------------------------------

template <class T> struct Sum { static TG_HD T init() { return T(0); } static TG_HD T combine(T a, T b) { return wrapping_add(a, b); } };
template <class T> struct Prod { static TG_HD T init() { return T(1); } static TG_HD T combine(T a, T b) { return wrapping_mul(a, b); } };
template <class T> struct Max {
  static TG_HD T init();
  static TG_HD T combine(T a, T b) { return maximum(a, b); }
};
template <class T> struct Min {
  static TG_HD T init();
  static TG_HD T combine(T a, T b) { return minimum(a, b); }
};
template <> TG_HD float Max<float>::init() { return -TG_INFINITY; }
template <> TG_HD double Max<double>::init() { return -double(TG_INFINITY); }
template <> TG_HD float Min<float>::init() { return TG_INFINITY; }
template <> TG_HD double Min<double>::init() { return double(TG_INFINITY); }
template <> TG_HD bool Max<bool>::init() { return false; }
template <> TG_HD bool Min<bool>::init() { return true; }
#define TG_INT_LIMITS(T, lo, hi) \
  template <> TG_HD T Max<T>::init() { return lo; } \
  template <> TG_HD T Min<T>::init() { return hi; }
TG_INT_LIMITS(uint8_t, 0, 0xff)
TG_INT_LIMITS(int8_t, -128, 127)
TG_INT_LIMITS(int16_t, -32768, 32767)
TG_INT_LIMITS(int32_t, (-2147483647 - 1), 2147483647)
TG_INT_LIMITS(int64_t, (-9223372036854775807LL - 1), 9223372036854775807LL)
#undef TG_INT_LIMITS

// argmax/argmin carry (value, index); ties keep the smaller index, NaN wins (like PyTorch).
template <class T> struct ArgPair { T value; int64_t index; };
template <class T, bool IsMax> struct ArgBest {
  static TG_HD ArgPair<T> init() { return ArgPair<T>{IsMax ? Max<T>::init() : Min<T>::init(), -1}; }
  static TG_HD ArgPair<T> combine(ArgPair<T> a, ArgPair<T> b) {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan || b_nan) return (a_nan && (!b_nan || a.index < b.index)) ? a : b;
    bool b_better = IsMax ? (b.value > a.value) : (b.value < a.value);
    if (b_better || (b.value == a.value && b.index < a.index)) return b;
    return a;
  }
};

// A row's max and its sum of exp(x - max) in one pass (online softmax): each partial result is
// (max, sum relative to that max), and combining two rescales the one with the smaller max. The
// results agree with the two passes (max, then the sum) at the edges too: a +inf makes the sum
// NaN, -inf elements add 0 beside a finite max, and a row of -inf alone sums to NaN.
template <class T> struct MaxSum { T max; T sum; };
template <class T> struct OnlineSumExp {
  static TG_HD MaxSum<T> init() { return MaxSum<T>{Max<T>::init(), T(0)}; }
  static TG_HD MaxSum<T> of(T x) { return MaxSum<T>{x, x == -Max<T>::init() ? x - x : T(1)}; }  // exp(x - x), without the exp
  static TG_HD MaxSum<T> combine(MaxSum<T> a, MaxSum<T> b) {
    const T m = maximum(a.max, b.max);
    return a.max >= b.max ? MaxSum<T>{m, a.sum + rescale(b.sum, b.max, m)} : MaxSum<T>{m, rescale(a.sum, a.max, m) + b.sum};
  }
  // sum * exp(from - to); while every element was -inf (from == to == -inf) the sum is their count,
  // which a later finite max scales to 0.
  static TG_HD T rescale(T sum, T from, T to) { return from == to && from == Max<T>::init() ? sum : sum * exp(from - to); }
  static TG_HD T sum_of(MaxSum<T> total) { return total.max == Max<T>::init() && total.sum > T(0) ? total.max - total.max : total.sum; }
};

template <class T> __device__ __forceinline__ T shuffle_xor(T v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }
__device__ __forceinline__ bool shuffle_xor(bool v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, int(v), lane_mask) != 0; }
#define TG_SHUFFLE_VIA_INT(T) \
  __device__ __forceinline__ T shuffle_xor(T v, int lane_mask) { return T(__shfl_xor_sync(0xffffffffu, int(v), lane_mask)); }
TG_SHUFFLE_VIA_INT(int8_t)
TG_SHUFFLE_VIA_INT(uint8_t)
TG_SHUFFLE_VIA_INT(int16_t)
#undef TG_SHUFFLE_VIA_INT
// After the narrow-type overloads, so v.value finds them.
template <class T> __device__ __forceinline__ ArgPair<T> shuffle_xor(ArgPair<T> v, int lane_mask) {
  return ArgPair<T>{shuffle_xor(v.value, lane_mask), __shfl_xor_sync(0xffffffffu, v.index, lane_mask)};
}
template <class T> __device__ __forceinline__ MaxSum<T> shuffle_xor(MaxSum<T> v, int lane_mask) {
  return MaxSum<T>{shuffle_xor(v.max, lane_mask), shuffle_xor(v.sum, lane_mask)};
}

// A column kernel's reduction: thread t works on column t % 32 of the block's 32 and on rows
// t / 32, t / 32 + blockDim.x / 32, ...; this combines the partial values of each column in row
// order (fixed, so results are deterministic) and gives every thread its column's result.
template <class Op, class T> __device__ T column_reduce(T v) {
  __shared__ T scratch[32][32];
  const int column = threadIdx.x & 31, part = threadIdx.x >> 5, parts = blockDim.x >> 5;
  __syncthreads();
  scratch[part][column] = v;
  __syncthreads();
  T total = Op::init();
  for (int k = 0; k < parts; ++k) total = Op::combine(total, scratch[k][column]);
  return total;
}

// Reduces one value per thread over the whole block; every thread gets the result. blockDim.x
// must be a multiple of 32. Safe to call repeatedly: it syncs before reusing its scratch.
template <class Op, class T> __device__ T block_reduce(T v) {
  __shared__ T scratch[32];
  for (int m = 16; m > 0; m >>= 1) v = Op::combine(v, shuffle_xor(v, m));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : Op::init();
  for (int m = 16; m > 0; m >>= 1) v = Op::combine(v, shuffle_xor(v, m));
  return v;
}

// Two block reductions at the price of one's barriers (a pass with two accumulators, LayerNorm's
// backward, say): each value is combined exactly as block_reduce combines it, in place.
template <class OpA, class OpB, class A, class B> __device__ void block_reduce2(A& a, B& b) {
  __shared__ A scratch_a[32];
  __shared__ B scratch_b[32];
  for (int m = 16; m > 0; m >>= 1) {
    a = OpA::combine(a, shuffle_xor(a, m));
    b = OpB::combine(b, shuffle_xor(b, m));
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) {
    scratch_a[warp] = a;
    scratch_b[warp] = b;
  }
  __syncthreads();
  a = lane < warps ? scratch_a[lane] : OpA::init();
  b = lane < warps ? scratch_b[lane] : OpB::init();
  for (int m = 16; m > 0; m >>= 1) {
    a = OpA::combine(a, shuffle_xor(a, m));
    b = OpB::combine(b, shuffle_xor(b, m));
  }
}

#endif  // !TG_HOST_ONLY

}  // namespace tg
