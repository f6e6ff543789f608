// Thunder's distributed prims (thunder/distributed/prims.py), as thunder.distributed.ddp and
// thunder.distributed.fsdp record them, declared in distributed_ops.def (their rows, rules,
// gradient rules and lowerings are in distributed.cpp), and what each collective sends.
//
// - Collectives (FusionClass::library, like cuBLASLt calls: operands and result in memory):
//   all_reduce, all_gather (along dim 0), reduce_scatter (dim 0, which the world size divides),
//   broadcast. On the GPU each is one NCCL call on the entry point's communicator; under host
//   emulation the ranks are threads of one process (templates/tg_comm.h).
// - synchronize(a, group, type): a parameter as the forward reads it. REPLICATED (DDP): a itself;
//   FULLY_SHARDED (FSDP): the all-gather of each rank's dim-0 shard. Thunder's gradient rule:
//   the cotangent divided by the world size, then all-reduced (DDP) or reduce-scattered (FSDP),
//   so each rank gets the mean over ranks of the full gradient, or its shard of it.
// - wait(a): the identity (every collective here is complete when its result is read).
// - pack / unpack, pack_for_fsdp / unpack_for_fsdp: gradient buckets in Thunder's layouts (one
//   flat buffer; for FSDP's scatter mode, each rank's chunks of every tensor together), lowered
//   to reshapes, slices and a cat.
// The process group is the typed literal {"process_group": {"world_size": N}}; the rank is not in
// the trace: the communicator the caller passes knows it.
#pragma once
#include <string>
#include <vector>

#include "ops/op_table.h"

namespace tg {

// The bytes one rank's collective moves as NCCL counts a call's size: all_reduce and broadcast
// the tensor, all_gather its result, reduce_scatter its operand. 0 for anything else.
int64_t communication_bytes(const Trace& t, const Op& op);

// Thunder's gradient buckets for DDP (thunder/distributed/bucketing.py, GradBuckets.build): the
// backward's all-reduces of gradients (an all-reduce whose result only leaves the backward as a
// gradient) are grouped by dtype and reduction, in the order of the gradients, each bucket closed
// once it holds `bucket_bytes` or more; a bucket of several is one all-reduce of their
// concatenation (pack), sliced back into the gradients (unpack), at the place of its last member.
// bucket_bytes 0 leaves every all-reduce alone.
void bucket_gradient_all_reduces(Trace& backward, int64_t bucket_bytes);

// Moves each collective of a trace, with the copies and elementwise ops that only prepare its
// operand (the division by the world size, a bucket's reshapes and cat), to just after the ops
// its operand needs: the gradient of the last layer is reduced while the others are still being
// computed. The generated code then runs it on a second stream (tg::Overlap). A topological
// reordering: every value is computed as before.
void schedule_collectives_early(Trace& t);

// One collective of a step (the manifest's and explain's account of communication).
struct CollectiveCall {
  std::string pass;   // "forward" or "backward"
  std::string op;     // all_reduce, all_gather, reduce_scatter, broadcast
  std::string value;  // the value it defines
  int64_t bytes = 0;  // communication_bytes
};
// The collectives of a trace's ops, in order. A synchronize not yet lowered (a trace that does not
// train) counts as the all-gather it becomes when fully sharded.
std::vector<CollectiveCall> collectives_of(const Trace& t, const std::string& pass);

}  // namespace tg
