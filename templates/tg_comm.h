// thunder-gen collectives: what a distributed trace's entry points call (all_reduce, all_gather,
// reduce_scatter, broadcast on the caller's communicator), and how a harness starts its ranks.
//   GPU builds (nvcc, nvrtc): thunder_gen_comm is NCCL's ncclComm_t; each collective is one NCCL
//     call on the entry point's stream (or the side stream it hands it to).
//   Host emulation: the ranks are threads of one process, and a communicator is this file's
//     struct ncclComm: the group the threads share and the thread's rank. Collectives meet at a
//     barrier, read each other's buffers, and reduce in rank order, so every rank gets the same
//     bits. For tests only: it is as slow as it is simple.
// The harness part (tg::run_ranks) starts ranks the way torchrun jobs do: RANK, WORLD_SIZE and
// LOCAL_RANK from the environment, NCCL's unique id from rank 0 through a file ($TG_NCCL_ID_FILE)
// or a TCP connection to MASTER_ADDR on port $TG_NCCL_PORT (default MASTER_PORT + 1: torchrun's
// own store holds MASTER_PORT). Under emulation `--world-size N` runs N rank threads.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tg_host.h"
#include "tg_runtime.cuh"

#if defined(TG_ON_GPU)
#include <nccl.h>
#else
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#endif

namespace tg {

// A collective failed: NCCL said so, or (emulation) another rank of the group stopped or never
// came. The header's THUNDER_GEN_COMM_FAILED.
constexpr int kCommFailed = 8;

enum class CommType { f16, bf16, f32, f64, i8, u8, i32, i64 };
enum class ReduceOp { sum, avg, prod, min, max };

inline size_t comm_type_bytes(CommType t) {
  switch (t) {
    case CommType::f16: case CommType::bf16: return 2;
    case CommType::f32: case CommType::i32: return 4;
    case CommType::f64: case CommType::i64: return 8;
    case CommType::i8: case CommType::u8: return 1;
  }
  return 1;
}

#if !defined(TG_ON_GPU)
// The rank threads of an emulated job: a barrier that gives up when a rank fails or does not come
// within $TG_EMU_COMM_TIMEOUT seconds (default 120), so a broken job ends instead of hanging.
class EmuGroup {
 public:
  explicit EmuGroup(int size) : size_(size), slots_(size_t(size)) {}
  int size() const { return size_; }
  const void*& slot(int rank) { return slots_[size_t(rank)]; }
  const void* slot_of(int rank) const { return slots_[size_t(rank)]; }

  // Every rank waits here until all have come; false when the group failed instead.
  bool barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (failed_) return false;
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return true;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds());
    if (!changed_.wait_until(lock, deadline, [&] { return generation_ != generation || failed_; })) {
      std::fprintf(stderr, "thunder-gen runtime: a collective waited %d s for the other ranks; giving up\n", timeout_seconds());
      failed_ = true;
      changed_.notify_all();
    }
    return generation_ != generation;
  }
  // A rank stopped (its entry point failed, or it finished early): the others' collectives fail.
  void fail() {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
    changed_.notify_all();
  }

 private:
  static int timeout_seconds() {
    const char* env = std::getenv("TG_EMU_COMM_TIMEOUT");
    const int s = env ? std::atoi(env) : 0;
    return s > 0 ? s : 120;
  }
  const int size_;
  std::vector<const void*> slots_;  // each rank's buffer for the collective at hand
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool failed_ = false;
};
#endif

}  // namespace tg

#if !defined(TG_ON_GPU)
// The emulation's communicator: what thunder_gen_comm points to (on the GPU, NCCL's ncclComm).
struct ncclComm {
  tg::EmuGroup* group;
  int rank;
};
#endif

namespace tg {

using Comm = struct ncclComm*;

// kOk when `comm` is a communicator of `world_size` ranks, the trace's: a group of another size
// would gather into and scatter from buffers sized for the trace's.
inline int check_comm(Comm comm, int world_size) {
  if (!comm) return kNullPointer;
#if defined(TG_ON_GPU)
  int ranks = 0;
  if (ncclCommCount(comm, &ranks) != ncclSuccess) return kCommFailed;
  return ranks == world_size ? kOk : kCommFailed;
#else
  return comm->group && comm->group->size() == world_size ? kOk : kCommFailed;
#endif
}

// Overlap: an entry point runs its collectives on a second stream, so the kernels after one run
// while it communicates. start(i) makes the side stream wait for what the stream has done so far
// (collective i's operand), finish(i) marks the collective's end, join(i) makes the stream wait
// for it before the first step that reads its result; every collective is joined before the entry
// point returns. The side stream (one per thread and device, non-blocking) and the events are
// made once and kept, so a call allocates nothing. Under emulation everything runs in order on
// the calling thread: the functions do nothing.
#if defined(TG_ON_GPU)
class Overlap {
 public:
  Overlap(Stream stream, int collectives) : stream_(stream), count_(collectives) {}
  Stream side() const { return side_; }
  int start(int i) {
    if (!side_ && setup() != kOk) return kCudaFailed;
    return ok(cudaEventRecord(event(i, 0), stream_)) && ok(cudaStreamWaitEvent(side_, event(i, 0), 0)) ? kOk : kCudaFailed;
  }
  int finish(int i) { return ok(cudaEventRecord(event(i, 1), side_)) ? kOk : kCudaFailed; }
  int join(int i) { return ok(cudaStreamWaitEvent(stream_, event(i, 1), 0)) ? kOk : kCudaFailed; }

 private:
  struct DeviceState {  // a thread's side stream and events on one device
    cudaStream_t side = nullptr;
    std::vector<cudaEvent_t> events;
  };
  static bool ok(cudaError_t e) { return e == cudaSuccess; }
  cudaEvent_t event(int i, int which) const { return state_->events[2 * size_t(i) + size_t(which)]; }
  int setup() {
    int device = 0;
    if (!ok(cudaGetDevice(&device))) return kCudaFailed;
    thread_local std::vector<DeviceState> by_device;
    if (by_device.size() <= size_t(device)) by_device.resize(size_t(device) + 1);
    DeviceState& d = by_device[size_t(device)];
    if (!d.side && !ok(cudaStreamCreateWithFlags(&d.side, cudaStreamNonBlocking))) return kCudaFailed;
    while (d.events.size() < 2 * size_t(count_)) {
      cudaEvent_t e = nullptr;
      if (!ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming))) return kCudaFailed;
      d.events.push_back(e);
    }
    state_ = &d;
    side_ = d.side;
    return kOk;
  }
  Stream stream_;
  Stream side_ = nullptr;
  int count_;
  DeviceState* state_ = nullptr;
};
#else
class Overlap {
 public:
  Overlap(Stream stream, int) : stream_(stream) {}
  Stream side() const { return stream_; }
  int start(int) { return kOk; }
  int finish(int) { return kOk; }
  int join(int) { return kOk; }

 private:
  Stream stream_;
};
#endif

#if defined(TG_ON_GPU)
inline ncclDataType_t nccl_type(CommType t) {
  switch (t) {
    case CommType::f16: return ncclFloat16;
    case CommType::bf16: return ncclBfloat16;
    case CommType::f32: return ncclFloat32;
    case CommType::f64: return ncclFloat64;
    case CommType::i8: return ncclInt8;
    case CommType::u8: return ncclUint8;
    case CommType::i32: return ncclInt32;
    case CommType::i64: return ncclInt64;
  }
  return ncclFloat32;
}
inline ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
  }
  return ncclSum;
}
inline int comm_status(ncclResult_t r) { return r == ncclSuccess ? kOk : kCommFailed; }

inline int all_reduce(Comm comm, const void* send, void* recv, size_t count, CommType t, ReduceOp op, Stream s) {
  return comm ? comm_status(ncclAllReduce(send, recv, count, nccl_type(t), nccl_op(op), comm, s)) : kNullPointer;
}
// count: elements each rank sends; recv holds world size x count.
inline int all_gather(Comm comm, const void* send, void* recv, size_t count, CommType t, Stream s) {
  return comm ? comm_status(ncclAllGather(send, recv, count, nccl_type(t), comm, s)) : kNullPointer;
}
// count: elements each rank receives; send holds world size x count.
inline int reduce_scatter(Comm comm, const void* send, void* recv, size_t count, CommType t, ReduceOp op, Stream s) {
  return comm ? comm_status(ncclReduceScatter(send, recv, count, nccl_type(t), nccl_op(op), comm, s)) : kNullPointer;
}
inline int broadcast(Comm comm, const void* send, void* recv, size_t count, CommType t, int root, Stream s) {
  return comm ? comm_status(ncclBroadcast(send, recv, count, nccl_type(t), root, comm, s)) : kNullPointer;
}
#else
namespace emu_comm {

template <class T> double get(const void* p, size_t i) { return double(static_cast<const T*>(p)[i]); }
template <class T> void put(void* p, size_t i, double v) { static_cast<T*>(p)[i] = T(v); }

// Element i of a buffer as a double (exact for every type here but i64 beyond 2^53, which
// reduces through integer arithmetic below), and back with the type's rounding.
inline double load(const void* p, size_t i, CommType t) {
  switch (t) {
    case CommType::f16: return to_float(static_cast<const half*>(p)[i]);
    case CommType::bf16: return to_float(static_cast<const bfloat16*>(p)[i]);
    case CommType::f32: return get<float>(p, i);
    case CommType::f64: return get<double>(p, i);
    case CommType::i8: return get<int8_t>(p, i);
    case CommType::u8: return get<uint8_t>(p, i);
    case CommType::i32: return get<int32_t>(p, i);
    case CommType::i64: return get<int64_t>(p, i);
  }
  return 0;
}
inline void store(void* p, size_t i, CommType t, double v) {
  switch (t) {
    case CommType::f16: static_cast<half*>(p)[i] = to_half(float(v)); break;
    case CommType::bf16: static_cast<bfloat16*>(p)[i] = to_bfloat16(float(v)); break;
    case CommType::f32: put<float>(p, i, v); break;
    case CommType::f64: put<double>(p, i, v); break;
    case CommType::i8: put<int8_t>(p, i, v); break;
    case CommType::u8: put<uint8_t>(p, i, v); break;
    case CommType::i32: put<int32_t>(p, i, v); break;
    case CommType::i64: put<int64_t>(p, i, v); break;
  }
}

// A reduction in rank order, in the element type's own arithmetic (f32 for 16-bit floats, as
// NCCL computes them, rounded once here), so every rank computes the same bits.
inline double combine(double acc, double x, ReduceOp op, CommType t) {
  double r = acc;
  switch (op) {
    case ReduceOp::sum: case ReduceOp::avg: r = acc + x; break;
    case ReduceOp::prod: r = acc * x; break;
    case ReduceOp::min: r = x < acc ? x : acc; break;
    case ReduceOp::max: r = x > acc ? x : acc; break;
  }
  return t == CommType::f32 || t == CommType::f16 || t == CommType::bf16 ? double(float(r)) : r;
}
inline void reduce(EmuGroup& g, size_t offset, size_t count, CommType t, ReduceOp op, void* out) {
  for (size_t i = 0; i < count; ++i) {
    double acc = load(g.slot_of(0), offset + i, t);
    for (int r = 1; r < g.size(); ++r) acc = combine(acc, load(g.slot_of(r), offset + i, t), op, t);
    if (op == ReduceOp::avg) acc /= g.size();
    store(out, i, t, acc);
  }
}

// Publishes this rank's buffer, waits for all, runs `read` (which reads the others' buffers into
// a private result), waits again (so no rank's buffer is reused while read), then `write`s.
template <class Read, class Write> int exchange(Comm comm, const void* send, Read read, Write write) {
  if (!comm || !comm->group) return kNullPointer;
  EmuGroup& g = *comm->group;
  g.slot(comm->rank) = send;
  if (!g.barrier()) return kCommFailed;
  read(g);
  if (!g.barrier()) return kCommFailed;
  write();
  return kOk;
}

}  // namespace emu_comm

inline int all_reduce(Comm comm, const void* send, void* recv, size_t count, CommType t, ReduceOp op, Stream) {
  std::vector<unsigned char> result(count * comm_type_bytes(t));
  return emu_comm::exchange(
      comm, send, [&](EmuGroup& g) { emu_comm::reduce(g, 0, count, t, op, result.data()); },
      [&] { if (count) std::memcpy(recv, result.data(), result.size()); });
}
inline int all_gather(Comm comm, const void* send, void* recv, size_t count, CommType t, Stream) {
  const size_t bytes = count * comm_type_bytes(t);
  std::vector<unsigned char> result;
  return emu_comm::exchange(
      comm, send,
      [&](EmuGroup& g) {
        result.resize(bytes * size_t(g.size()));
        for (int r = 0; r < g.size(); ++r)
          if (bytes) std::memcpy(result.data() + size_t(r) * bytes, g.slot_of(r), bytes);
      },
      [&] { if (!result.empty()) std::memcpy(recv, result.data(), result.size()); });
}
inline int reduce_scatter(Comm comm, const void* send, void* recv, size_t count, CommType t, ReduceOp op, Stream) {
  std::vector<unsigned char> result(count * comm_type_bytes(t));
  return emu_comm::exchange(
      comm, send, [&](EmuGroup& g) { emu_comm::reduce(g, size_t(comm->rank) * count, count, t, op, result.data()); },
      [&] { if (count) std::memcpy(recv, result.data(), result.size()); });
}
inline int broadcast(Comm comm, const void* send, void* recv, size_t count, CommType t, int root, Stream) {
  std::vector<unsigned char> result(count * comm_type_bytes(t));
  return emu_comm::exchange(
      comm, send, [&](EmuGroup& g) { if (count) std::memcpy(result.data(), g.slot_of(root), result.size()); },
      [&] { if (count) std::memcpy(recv, result.data(), result.size()); });
}
#endif

}  // namespace tg
