// thunder-gen matrix products (prims.matmul) for generated host code:
//   on the GPU (nvcc and nvrtc modes)  cuBLASLt, f32 accumulation (f64 for f64)
//   under host emulation               a plain reference GEMM on the CPU, same accumulation types
// No hand-written GPU GEMM: the vendor library is faster than anything a generator should emit.
// An optional epilogue adds a bias row and/or applies GELU (tanh form) to the f32 accumulator
// before the one rounding to the output type, as cuBLASLt's BIAS / GELU / GELU_BIAS epilogues do.
#pragma once
#include <cmath>
#include <cstdint>

#include "tg_host.h"
#include "tg_runtime.cuh"

#if defined(TG_ON_GPU)
#include <cublasLt.h>

#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#else
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

// What happens to each accumulated element before it is stored: + bias[column], then GELU.
enum class Activation { none, gelu_tanh };

// GELU, tanh approximation, as cuBLASLt's epilogue and torch's approximate='tanh' define it.
template <class Acc> Acc gelu_tanh(Acc x) {
  const Acc k = Acc(0.7978845608028654);  // sqrt(2 / pi)
  return Acc(0.5) * x * (Acc(1) + std::tanh(k * (x + Acc(0.044715) * x * x * x)));
}

#if defined(TG_ON_GPU)

#define TG_CUBLAS_CHECK(expr)                                                      \
  do {                                                                             \
    cublasStatus_t tg_status_ = (expr);                                            \
    if (tg_status_ != CUBLAS_STATUS_SUCCESS) ::tg::fatal(#expr, cublasLtGetStatusString(tg_status_)); \
  } while (0)

template <class T> struct CublasType;
template <> struct CublasType<float> { static constexpr cudaDataType_t data = CUDA_R_32F; };
template <> struct CublasType<double> { static constexpr cudaDataType_t data = CUDA_R_64F; };
template <> struct CublasType<half> { static constexpr cudaDataType_t data = CUDA_R_16F; };
template <> struct CublasType<bfloat16> { static constexpr cudaDataType_t data = CUDA_R_16BF; };

inline cublasLtHandle_t cublaslt_handle() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t h;
    TG_CUBLAS_CHECK(cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;
inline void* gemm_workspace() {
  static void* workspace = [] {
    void* p = nullptr;
    TG_CUDA_CHECK(cudaMalloc(&p, kGemmWorkspaceBytes));
    return p;
  }();
  return workspace;
}

// Row-major C = A B is column-major C^T = B^T A^T, so cuBLASLt's first operand is our b.
template <class T>
void matmul(const T* a, const T* b, T* c, GemmShape s, Stream stream, const T* bias = nullptr, Activation act = Activation::none) {
  using Scale = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const cudaDataType_t type = CublasType<T>::data;
  const cudaDataType_t scale_type = std::is_same_v<T, double> ? CUDA_R_64F : CUDA_R_32F;
  const cublasComputeType_t compute = std::is_same_v<T, double> ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t desc;
  TG_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, compute, scale_type));
  // In cuBLASLt's column-major view the bias runs along its rows, which are our columns (n).
  cublasLtEpilogue_t epilogue = act == Activation::gelu_tanh ? (bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                                             : (bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
  TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  if (bias) {
    const void* bias_pointer = bias;
    cudaDataType_t bias_type = type;
    TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof bias_pointer));
    TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
  }
  // Row-major b [k, n] is column-major b^T, what the first operand must be; stored [n, k] it is
  // column-major b itself, which cuBLASLt then transposes (TRANSA). Likewise a, second operand.
  const cublasOperation_t op_b = s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof op_b));
  TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof op_a));
  cublasLtMatrixLayout_t lb, la, lc;
  if (s.transpose_b) TG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, type, uint64_t(s.k), uint64_t(s.n), int64_t(s.k)));
  else TG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, type, uint64_t(s.n), uint64_t(s.k), int64_t(s.n)));
  if (s.transpose_a) TG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, type, uint64_t(s.m), uint64_t(s.k), int64_t(s.m)));
  else TG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, type, uint64_t(s.k), uint64_t(s.m), int64_t(s.k)));
  TG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, type, uint64_t(s.n), uint64_t(s.m), int64_t(s.n)));
  if (s.batch > 1) {
    int32_t count = int32_t(s.batch);
    int64_t stride_b = s.b_batched ? s.k * s.n : 0, stride_a = s.m * s.k, stride_c = s.m * s.n;
    for (cublasLtMatrixLayout_t l : {lb, la, lc})
      TG_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    TG_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_b, sizeof stride_b));
    TG_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_a, sizeof stride_a));
    TG_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_c, sizeof stride_c));
  }
  // The heuristic's choice, asked once per problem: the query costs tens of microseconds of host
  // time, as long as a small GEMM runs.
  const auto key = std::make_tuple(int(type), s.batch, s.m, s.n, s.k, s.b_batched, s.transpose_a, s.transpose_b, bias != nullptr, int(act),
                                   (reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(c) |
                                    reinterpret_cast<uintptr_t>(bias)) % 16 == 0);  // alignment decides which kernels apply
  static std::mutex chosen_lock;
  static std::map<decltype(key), cublasLtMatmulAlgo_t> chosen;
  size_t workspace_bytes = kGemmWorkspaceBytes;
  std::unique_lock<std::mutex> lock(chosen_lock);
  auto it = chosen.find(key);
  if (it == chosen.end()) {
    cublasLtMatmulPreference_t preference;
    TG_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    TG_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                         sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    TG_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(cublaslt_handle(), desc, lb, la, lc, lc, preference, 1, &heuristic, &found));
    cublasLtMatmulPreferenceDestroy(preference);
    if (found == 0) fatal("cuBLASLt", "no algorithm for this matmul");
    it = chosen.emplace(key, heuristic.algo).first;
  }
  const cublasLtMatmulAlgo_t algo = it->second;
  lock.unlock();
  Scale alpha = 1, beta = 0;
  TG_CUBLAS_CHECK(cublasLtMatmul(cublaslt_handle(), desc, &alpha, b, lb, a, la, &beta, c, lc, c, lc, &algo, gemm_workspace(),
                                 workspace_bytes, stream));
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatmulDescDestroy(desc);
}

#else

// The reference GEMM: each output row accumulates a[i][p] * b[p][:] over p in the compute type
// (f32, f64 for f64), rows split over CPU threads. Optimized and not sanitized even in
// sanitizer builds: it is plain loops over memory the caller owns, and it dominates run time.
template <class T>
__attribute__((optimize("O2"), no_sanitize("address", "undefined"))) void gemm_rows(const T* a, const T* b, T* c, GemmShape s,
                                                                                    const T* bias, Activation act,
                                                                                    int64_t first_row, int64_t end_row) {
  using Acc = decltype(load(a, 0));
  std::vector<Acc> acc(size_t(s.n));
  for (int64_t row = first_row; row < end_row; ++row) {  // row over batch * m
    int64_t batch = row / s.m;
    const T* b_batch = b + (s.b_batched ? batch * s.k * s.n : 0);
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (int64_t p = 0; p < s.k; ++p) {
      Acc x = s.transpose_a ? load(a, p * s.m + row) : load(a, row * s.k + p);  // (transposed: 2-D, batch 1)
      if (s.transpose_b) {
        for (int64_t j = 0; j < s.n; ++j) acc[size_t(j)] += x * load(b_batch, j * s.k + p);
        continue;
      }
      const T* b_row = b_batch + p * s.n;
      for (int64_t j = 0; j < s.n; ++j) acc[size_t(j)] += x * load(b_row, j);
    }
    for (int64_t j = 0; j < s.n; ++j) {
      Acc x = acc[size_t(j)];
      if (bias) x += load(bias, j);
      if (act == Activation::gelu_tanh) x = gelu_tanh(x);
      store(c, row * s.n + j, x);
    }
  }
}

template <class T>
void matmul(const T* a, const T* b, T* c, GemmShape s, Stream, const T* bias = nullptr, Activation act = Activation::none) {
  const int64_t rows = s.batch * s.m;
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(rows, std::thread::hardware_concurrency()));
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t)
    workers.emplace_back(gemm_rows<T>, a, b, c, s, bias, act, rows * t / threads, rows * (t + 1) / threads);
  for (std::thread& w : workers) w.join();
}

#endif

}  // namespace tg
