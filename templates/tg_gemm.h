// thunder-gen matrix products (prims.matmul) for generated host code:
//   on the GPU (nvcc and nvrtc modes)  cuBLASLt, f32 accumulation (f64 for f64)
//   under host emulation               a plain reference GEMM on the CPU, same accumulation types
// No hand-written GPU GEMM: the vendor library is faster than anything a generator should emit.
// An optional epilogue adds a bias row and/or applies GELU (tanh form) to the f32 accumulator
// before the one rounding to the output type, as cuBLASLt's BIAS / GELU / GELU_BIAS epilogues do;
// in training it also writes the GELU's input (GELU_AUX, GELU_AUX_BIAS), and a weight gradient's
// GEMM also writes the bias gradient, the left operand summed over k (BGRADB).
#pragma once
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "tg_host.h"
#include "tg_runtime.cuh"

#if defined(TG_ON_GPU)
#include <cublasLt.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>
#else
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>
#endif

namespace tg {

// C[batch][m][n] = sum over k of A[batch][m][k] * B[batch][k][n], all row-major and contiguous.
// A B without batch dims (b_batched false) is shared by every batch; the emitter then folds the
// batch into m, so batch is 1.
struct GemmShape {
  int64_t batch, m, n, k;
  bool b_batched;
  bool transpose_a = false;  // a is stored [k, m] (its transpose), not [m, k]; 2-D only
  bool transpose_b = false;  // b is stored [n, k]
};

// What happens around the product, after the bias (+ bias[column]) if there is one:
//   gelu_tanh      c = GELU(product)
//   gelu_tanh_aux  c = GELU(product), extra = product (the GELU's input, kept for the backward)
//   bias_grad      extra[i] = sum over p of a[i][p] (a as read, [m, k]; 2-D, batch 1)
enum class Epilogue { none, gelu_tanh, gelu_tanh_aux, bias_grad };
// T as matmul's operands fix it: the bias and extra pointers may be a plain nullptr.
template <class T> struct NotDeducedType { using type = T; };
template <class T> using NotDeduced = typename NotDeducedType<T>::type;

// The epilogues with a second output, which two plain GEMMs can also compute (matmul_unfused).
inline bool has_unfused_way(Epilogue e) { return e == Epilogue::gelu_tanh_aux || e == Epilogue::bias_grad; }

// gelu_tanh_aux and bias_grad from the epilogues every GEMM has (below).
template <class T>
int matmul_unfused(const T* a, const T* b, T* c, GemmShape s, Stream stream, Memory::Span space, const NotDeduced<T>* bias, Epilogue e,
                   NotDeduced<T>* extra);

// A product of more matrices than cuBLASLt's batch count (an int32) takes, as products of at most
// gemm_batch_slice() of them each (TG_GEMM_BATCH_SLICE=N under emulation, so tests reach it).
template <class T>
int matmul_in_batch_slices(const T* a, const T* b, T* c, GemmShape s, Stream stream, Memory::Span space, const NotDeduced<T>* bias,
                           Epilogue e, NotDeduced<T>* extra);
inline int64_t gemm_batch_slice() {
#if defined(TG_ON_GPU)
  return INT32_MAX;
#else
  static const int64_t slice = [] {
    const char* v = std::getenv("TG_GEMM_BATCH_SLICE");
    const long long n = v ? std::atoll(v) : 0;
    return n > 0 && n < INT32_MAX ? int64_t(n) : int64_t(INT32_MAX);
  }();
  return slice;
#endif
}

// GELU, tanh approximation, as cuBLASLt's epilogue and torch's approximate='tanh' define it.
template <class Acc> Acc gelu_tanh(Acc x) {
  const Acc k = Acc(0.7978845608028654);  // sqrt(2 / pi)
  return Acc(0.5) * x * (Acc(1) + std::tanh(k * (x + Acc(0.044715) * x * x * x)));
}

#if defined(TG_ON_GPU)

template <class T> struct CublasType;
template <> struct CublasType<float> { static constexpr cudaDataType_t data = CUDA_R_32F; };
template <> struct CublasType<double> { static constexpr cudaDataType_t data = CUDA_R_64F; };
template <> struct CublasType<half> { static constexpr cudaDataType_t data = CUDA_R_16F; };
template <> struct CublasType<bfloat16> { static constexpr cudaDataType_t data = CUDA_R_16BF; };

// The cuBLASLt handle of the current device, created once per device (thread-safely); null when
// it cannot be created.
inline cublasLtHandle_t cublaslt_handle() {
  static std::mutex lock;
  static std::map<int, cublasLtHandle_t> handles;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  std::lock_guard<std::mutex> guard(lock);
  auto it = handles.find(device);
  if (it == handles.end()) {
    cublasLtHandle_t h = nullptr;
    if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) return nullptr;
    it = handles.emplace(device, h).first;
  }
  return it->second;
}

// cuBLASLt's workspace when the caller gave none: allocated once per device.
inline void* gemm_workspace() {
  static std::mutex lock;
  static std::map<int, void*> workspaces;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  std::lock_guard<std::mutex> guard(lock);
  void*& p = workspaces[device];
  if (!p && cudaMalloc(&p, kGemmWorkspaceBytes) != cudaSuccess) p = nullptr;
  return p;
}

// k ones of type T on the device: the right operand of the bias gradient's fallback GEMM (null
// when they cannot be made). Made once per size, outside any workspace.
template <class T> const T* device_ones(int64_t k) {
  static std::mutex lock;
  static T* ones = nullptr;
  static int64_t size = 0;
  std::lock_guard<std::mutex> guard(lock);
  if (k > size) {
    std::vector<T> host(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) store(host.data(), i, 1.0f);
    if (ones) cudaFree(ones);  // (synchronizes the device: no GEMM still reads it)
    ones = nullptr, size = 0;
    if (cudaMalloc(&ones, sizeof(T) * size_t(k)) != cudaSuccess) return ones = nullptr;
    if (cudaMemcpy(ones, host.data(), sizeof(T) * size_t(k), cudaMemcpyHostToDevice) != cudaSuccess) return nullptr;
    size = k;
  }
  return ones;
}

// cuBLASLt objects destroyed when the call returns, on every path.
struct MatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~MatmulDesc() { if (d) cublasLtMatmulDescDestroy(d); }
};
struct MatrixLayout {
  cublasLtMatrixLayout_t l = nullptr;
  ~MatrixLayout() { if (l) cublasLtMatrixLayoutDestroy(l); }
};
struct MatmulPreference {
  cublasLtMatmulPreference_t p = nullptr;
  ~MatmulPreference() { if (p) cublasLtMatmulPreferenceDestroy(p); }
};
#define TG_GEMM_TRY(expr)                                                     \
  do {                                                                        \
    if ((expr) != CUBLAS_STATUS_SUCCESS) return ::tg::kGemmFailed;            \
  } while (0)

// TG_GEMM_TUNE=1: the first GEMM of each problem times cuBLASLt's best kGemmTuneCandidates heuristics on
// its own operands (a warm-up call and kGemmTuneRuns timed ones each) and keeps the fastest, as
// cudnn.benchmark does for convolutions. Off by default: the first call then synchronizes the
// stream, and which algorithm wins may differ between runs, so results need not be bit-identical
// from run to run. Never while the stream is being captured into a graph.
constexpr int kGemmTuneCandidates = 8;
constexpr size_t kGemmChoicesKept = 4096;  // problems whose heuristic choice is remembered
constexpr int kGemmTuneRuns = 3;
inline bool gemm_tuning() {
  static const bool on = [] {
    const char* v = std::getenv("TG_GEMM_TUNE");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// The index of the fastest of `count` candidates; `run(algo)` launches the GEMM with one of them.
// A candidate whose launch fails is skipped; with no timing possible, the heuristic's first.
template <class Run>
int fastest_gemm(const cublasLtMatmulHeuristicResult_t* candidates, int count, Stream stream, const Run& run) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) return 0;
  cudaEvent_t start, stop;
  if (cudaEventCreate(&start) != cudaSuccess) return 0;
  if (cudaEventCreate(&stop) != cudaSuccess) return cudaEventDestroy(start), 0;
  int best = 0;
  float best_ms = -1;
  for (int i = 0; i < count; ++i) {
    if (candidates[i].state != CUBLAS_STATUS_SUCCESS || run(candidates[i].algo) != CUBLAS_STATUS_SUCCESS) continue;  // (warm-up)
    bool ok = cudaEventRecord(start, stream) == cudaSuccess;
    for (int r = 0; r < kGemmTuneRuns && ok; ++r) ok = run(candidates[i].algo) == CUBLAS_STATUS_SUCCESS;
    float ms = 0;
    ok = ok && cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess &&
         cudaEventElapsedTime(&ms, start, stop) == cudaSuccess;
    if (ok && (best_ms < 0 || ms < best_ms)) {
      best = i;
      best_ms = ms;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

inline cublasLtEpilogue_t cublaslt_epilogue(Epilogue e, bool bias) {
  switch (e) {
    case Epilogue::gelu_tanh: return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case Epilogue::gelu_tanh_aux: return bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    case Epilogue::bias_grad: return CUBLASLT_EPILOGUE_BGRADB;  // cuBLASLt's B is our a (see below)
    case Epilogue::none: break;
  }
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

// The matrix layouts of a product in cuBLASLt's column-major view (see matmul).
inline cublasStatus_t describe_layouts(cudaDataType_t type, GemmShape s, MatrixLayout& lb, MatrixLayout& la, MatrixLayout& lc) {
  cublasStatus_t r = s.transpose_b ? cublasLtMatrixLayoutCreate(&lb.l, type, uint64_t(s.k), uint64_t(s.n), int64_t(s.k))
                                   : cublasLtMatrixLayoutCreate(&lb.l, type, uint64_t(s.n), uint64_t(s.k), int64_t(s.n));
  if (r != CUBLAS_STATUS_SUCCESS) return r;
  r = s.transpose_a ? cublasLtMatrixLayoutCreate(&la.l, type, uint64_t(s.m), uint64_t(s.k), int64_t(s.m))
                    : cublasLtMatrixLayoutCreate(&la.l, type, uint64_t(s.k), uint64_t(s.m), int64_t(s.k));
  if (r != CUBLAS_STATUS_SUCCESS) return r;
  if ((r = cublasLtMatrixLayoutCreate(&lc.l, type, uint64_t(s.n), uint64_t(s.m), int64_t(s.n))) != CUBLAS_STATUS_SUCCESS || s.batch <= 1) return r;
  int32_t count = int32_t(s.batch);  // (at most gemm_batch_slice(): see matmul)
  int64_t stride_b = s.b_batched ? s.k * s.n : 0, stride_a = s.m * s.k, stride_c = s.m * s.n;
  for (cublasLtMatrixLayout_t l : {lb.l, la.l, lc.l})
    if ((r = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count)) != CUBLAS_STATUS_SUCCESS) return r;
  if ((r = cublasLtMatrixLayoutSetAttribute(lb.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_b, sizeof stride_b)) != CUBLAS_STATUS_SUCCESS)
    return r;
  if ((r = cublasLtMatrixLayoutSetAttribute(la.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_a, sizeof stride_a)) != CUBLAS_STATUS_SUCCESS)
    return r;
  return cublasLtMatrixLayoutSetAttribute(lc.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_c, sizeof stride_c);
}

// The epilogue, bias and aux attributes of a product's description (see matmul).
template <class T>
cublasStatus_t describe_epilogue(cublasLtMatmulDesc_t desc, GemmShape s, const T* bias, Epilogue e, T* extra) {
  // In cuBLASLt's column-major view the bias runs along its rows, which are our columns (n); the
  // bias gradient along its columns (our rows, m), summed over k of its B, our a.
  const cublasLtEpilogue_t epilogue = cublaslt_epilogue(e, bias != nullptr);
  cublasStatus_t r = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  if (r == CUBLAS_STATUS_SUCCESS && (bias || e == Epilogue::bias_grad)) {
    const void* bias_pointer = bias ? static_cast<const void*>(bias) : extra;
    cudaDataType_t bias_type = CublasType<T>::data;
    r = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof bias_pointer);
    if (r == CUBLAS_STATUS_SUCCESS) r = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type);
  }
  if (r == CUBLAS_STATUS_SUCCESS && e == Epilogue::gelu_tanh_aux) {  // the GELU's input, laid out like c: leading dimension n
    void* aux = extra;
    int64_t aux_ld = s.n, aux_batch_stride = s.m * s.n;
    r = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
    if (r == CUBLAS_STATUS_SUCCESS) r = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld);
    if (r == CUBLAS_STATUS_SUCCESS && s.batch > 1)
      r = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &aux_batch_stride, sizeof aux_batch_stride);
  }
  return r;
}

// Row-major C = A B is column-major C^T = B^T A^T, so cuBLASLt's first operand is our b.
// `space`: the caller's workspace for cuBLASLt ({}: one allocated once per device). Returns a Status.
template <class T>
int matmul(const T* a, const T* b, T* c, GemmShape s, Stream stream, Memory::Span space, const NotDeduced<T>* bias = nullptr,
           Epilogue e = Epilogue::none, NotDeduced<T>* extra = nullptr) {
  if (s.batch > gemm_batch_slice()) return matmul_in_batch_slices(a, b, c, s, stream, space, bias, e, extra);
  if (e == Epilogue::gelu_tanh_aux && s.n % 8 != 0)  // cuBLASLt's aux leading dimension must be a multiple of 8
    return matmul_unfused(a, b, c, s, stream, space, bias, e, extra);
  using Scale = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const cudaDataType_t type = CublasType<T>::data;
  const cudaDataType_t scale_type = std::is_same_v<T, double> ? CUDA_R_64F : CUDA_R_32F;
  const cublasComputeType_t compute = std::is_same_v<T, double> ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const cublasLtHandle_t handle = cublaslt_handle();
  void* workspace = space.data ? space.data : gemm_workspace();
  size_t workspace_bytes = space.data ? space.bytes : kGemmWorkspaceBytes;
  if (!handle || !workspace) return kGemmFailed;
  MatmulDesc desc;
  TG_GEMM_TRY(cublasLtMatmulDescCreate(&desc.d, compute, scale_type));
  TG_GEMM_TRY(describe_epilogue(desc.d, s, static_cast<const T*>(bias), e, static_cast<T*>(extra)));
  // Row-major b [k, n] is column-major b^T, what the first operand must be; stored [n, k] it is
  // column-major b itself, which cuBLASLt then transposes (TRANSA). Likewise a, second operand.
  const cublasOperation_t op_b = s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  TG_GEMM_TRY(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof op_b));
  TG_GEMM_TRY(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof op_a));
  MatrixLayout lb, la, lc;
  TG_GEMM_TRY(describe_layouts(type, s, lb, la, lc));
  // The heuristic's choice, asked once per problem: the query costs tens of microseconds of host
  // time, as long as a small GEMM runs. No choice at all is remembered too.
  const auto key = std::make_tuple(int(type), s.batch, s.m, s.n, s.k, s.b_batched, s.transpose_a, s.transpose_b, bias != nullptr, int(e),
                                   (reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(c) |
                                    reinterpret_cast<uintptr_t>(bias) | reinterpret_cast<uintptr_t>(extra)) % 16 == 0,  // alignment decides which kernels apply
                                   workspace_bytes);
  static std::mutex chosen_lock;
  static std::map<decltype(key), std::optional<cublasLtMatmulAlgo_t>> chosen;
  std::unique_lock<std::mutex> lock(chosen_lock);
  auto it = chosen.find(key);
  if (it == chosen.end()) {
    MatmulPreference preference;
    TG_GEMM_TRY(cublasLtMatmulPreferenceCreate(&preference.p));
    TG_GEMM_TRY(cublasLtMatmulPreferenceSetAttribute(preference.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t heuristics[kGemmTuneCandidates];
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc.d, lb.l, la.l, lc.l, lc.l, preference.p,
                                                                 gemm_tuning() ? kGemmTuneCandidates : 1, heuristics, &found);
    // A problem the training epilogues do not take is refused, as NOT_SUPPORTED or INVALID_VALUE:
    // the plain epilogues below then do it.
    if (status != CUBLAS_STATUS_SUCCESS && !(has_unfused_way(e) || status == CUBLAS_STATUS_NOT_SUPPORTED)) return kGemmFailed;
    if (status != CUBLAS_STATUS_SUCCESS) found = 0;
    int best = 0;
    if (found > 1) {
      Scale alpha = 1, beta = 0;
      best = fastest_gemm(heuristics, found, stream, [&](const cublasLtMatmulAlgo_t& algo) {
        return cublasLtMatmul(handle, desc.d, &alpha, b, lb.l, a, la.l, &beta, c, lc.l, c, lc.l, &algo, workspace, workspace_bytes, stream);
      });
    }
    if (chosen.size() >= kGemmChoicesKept) chosen.clear();  // (a folder taking its sizes at run time meets a new problem at each size)
    it = chosen.emplace(key, found ? std::optional(heuristics[best].algo) : std::nullopt).first;
  }
  const std::optional<cublasLtMatmulAlgo_t> algo = it->second;
  lock.unlock();
  if (algo) {
    Scale alpha = 1, beta = 0;
    TG_GEMM_TRY(cublasLtMatmul(handle, desc.d, &alpha, b, lb.l, a, la.l, &beta, c, lc.l, c, lc.l, &*algo, workspace, workspace_bytes, stream));
    return kOk;
  }
  // No kernel with this epilogue: two plain products (matmul_unfused); none at all is a failure.
  return has_unfused_way(e) ? matmul_unfused(a, b, c, s, stream, space, bias, e, extra) : kGemmFailed;
}

#else

// The reference GEMM: each output row accumulates a[i][p] * b[p][:] over p in the compute type
// Acc (f32, f64 for f64), rows split over CPU threads. b comes converted to Acc and stored [k, n]
// (matmul makes that copy), so the inner loop is a plain multiply-add over two arrays.
// Optimized and not sanitized even in sanitizer builds: it is loops over memory the caller owns,
// and it dominates run time. (GCC does not inline across optimize levels: the inner loop must
// call nothing, not even load() or vector::operator[].)
template <class T, class Acc>
__attribute__((optimize("O2"), no_sanitize("address", "undefined"))) void gemm_rows(const T* a, const Acc* b, T* c, GemmShape s,
                                                                                    const T* bias, Epilogue e, T* extra,
                                                                                    int64_t first_row, int64_t end_row) {
  std::vector<Acc> row_acc(size_t(s.n));
  Acc* acc = row_acc.data();
  for (int64_t row = first_row; row < end_row; ++row) {  // row over batch * m
    int64_t batch = row / s.m;
    const Acc* b_batch = b + (s.b_batched ? batch * s.k * s.n : 0);
    for (int64_t j = 0; j < s.n; ++j) acc[j] = Acc(0);
    Acc row_sum = 0;  // the bias gradient: this row of a summed over k
    for (int64_t p = 0; p < s.k; ++p) {
      Acc x = s.transpose_a ? load(a, p * s.m + row) : load(a, row * s.k + p);  // (transposed: 2-D, batch 1)
      row_sum += x;
      const Acc* b_row = b_batch + p * s.n;
      for (int64_t j = 0; j < s.n; ++j) acc[j] += x * b_row[j];
    }
    if (e == Epilogue::bias_grad) store(extra, row, row_sum);
    for (int64_t j = 0; j < s.n; ++j) {
      Acc x = acc[j];
      if (bias) x += load(bias, j);
      if (e == Epilogue::gelu_tanh_aux) store(extra, row * s.n + j, x);
      if (e == Epilogue::gelu_tanh || e == Epilogue::gelu_tanh_aux) x = gelu_tanh(x);
      store(c, row * s.n + j, x);
    }
  }
}

// k ones of type T, never freed (earlier pointers stay valid).
template <class T> const T* device_ones(int64_t k) {
  static std::mutex lock;
  static std::deque<std::vector<T>> buffers;
  std::lock_guard<std::mutex> guard(lock);
  if (buffers.empty() || int64_t(buffers.back().size()) < k) {
    buffers.emplace_back(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) store(buffers.back().data(), i, 1.0f);
  }
  return buffers.back().data();
}

// TG_GEMM_UNFUSED=1: the emulation computes gelu_tanh_aux and bias_grad the way the GPU does
// where cuBLASLt has no fused kernel, so the tests check that path too.
inline bool unfused_epilogues_forced() {
  static const bool forced = [] {
    const char* v = std::getenv("TG_GEMM_UNFUSED");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return forced;
}

// Returns a Status: kOk, or kGemmFailed where a test asks for it (TG_EMU_FAIL=gemm).
template <class T>
int matmul(const T* a, const T* b, T* c, GemmShape s, Stream stream, Memory::Span space, const NotDeduced<T>* bias = nullptr,
           Epilogue e = Epilogue::none, NotDeduced<T>* extra = nullptr) {
  if (emulated_failure("gemm")) return kGemmFailed;
  if (s.batch > gemm_batch_slice()) return matmul_in_batch_slices(a, b, c, s, stream, space, bias, e, extra);
  if (has_unfused_way(e) && unfused_epilogues_forced()) return matmul_unfused(a, b, c, s, stream, space, bias, e, extra);
  // b in the compute type, [k, n]: converted once, not once per row, and a transposed b read
  // contiguously. The terms of each sum and their order do not change.
  using Acc = decltype(load(a, 0));
  const int64_t matrices = s.b_batched ? s.batch : 1;
  std::vector<Acc> b_acc(size_t(matrices * s.k * s.n));
  for (int64_t q = 0; q < matrices; ++q)
    for (int64_t p = 0; p < s.k; ++p)
      for (int64_t j = 0; j < s.n; ++j)
        b_acc[size_t((q * s.k + p) * s.n + j)] = load(b, s.transpose_b ? (q * s.n + j) * s.k + p : (q * s.k + p) * s.n + j);
  const int64_t rows = s.batch * s.m;
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(rows, std::thread::hardware_concurrency()));
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t)
    workers.emplace_back(gemm_rows<T, Acc>, a, b_acc.data(), c, s, bias, e, extra, rows * t / threads, rows * (t + 1) / threads);
  for (std::thread& w : workers) w.join();
  return kOk;
}

#endif

// The results of gelu_tanh_aux and bias_grad from two plain GEMMs: the GELU's input with the bias
// epilogue, then the GELU's result; or the product, then a @ ones (each row of a summed over k).
template <class T>
int matmul_unfused(const T* a, const T* b, T* c, GemmShape s, Stream stream, Memory::Span space, const NotDeduced<T>* bias, Epilogue e,
                   NotDeduced<T>* extra) {
  if (e == Epilogue::gelu_tanh_aux) {
    if (const int status = matmul(a, b, extra, s, stream, space, bias)) return status;
    return matmul(a, b, c, s, stream, space, bias, Epilogue::gelu_tanh);
  }
  if (const int status = matmul(a, b, c, s, stream, space, bias)) return status;
  const T* ones = device_ones<T>(s.k);
  if (!ones) return kGemmFailed;
  return matmul(a, ones, extra, GemmShape{1, s.m, 1, s.k, false, s.transpose_a, false}, stream, space);
}

template <class T>
int matmul_in_batch_slices(const T* a, const T* b, T* c, GemmShape s, Stream stream, Memory::Span space, const NotDeduced<T>* bias,
                           Epilogue e, NotDeduced<T>* extra) {
  for (int64_t first = 0; first < s.batch; first += gemm_batch_slice()) {
    GemmShape slice = s;
    slice.batch = std::min(gemm_batch_slice(), s.batch - first);
    // (bias_grad's extra is 2-D, batch 1; gelu_tanh_aux's is laid out like c.)
    NotDeduced<T>* extra_slice = e == Epilogue::gelu_tanh_aux ? extra + first * s.m * s.n : extra;
    const T* b_slice = s.b_batched ? b + first * s.k * s.n : b;
    if (const int status = matmul(a + first * s.m * s.k, b_slice, c + first * s.m * s.n, slice, stream, space, bias, e, extra_slice)) return status;
  }
  return kOk;
}

}  // namespace tg
