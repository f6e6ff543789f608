#include "ops/distributed.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <map>
#include <set>
#include <string>

#include "ops/family.h"
#include "ops/prim_builder.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using namespace vocabulary;
using namespace op_rows;

constexpr std::string_view kAllReduce = "thunder.distributed.prims.all_reduce";
constexpr std::string_view kAllGather = "thunder.distributed.prims.all_gather";
constexpr std::string_view kReduceScatter = "thunder.distributed.prims.reduce_scatter";

// NCCL has no 16-bit integer and no bool type; everything else maps onto one of its types.
const Value& communicated_tensor(const Trace& t, const Op& op, size_t i) {
  const Value& a = t.value(op.arg(i).value);
  if (a.dtype == DType::i16 || a.dtype == DType::b8)
    fail(int(i), "dtype " + std::string(dtype_name(a.dtype)) + " cannot be communicated (NCCL has no " +
                     (a.dtype == DType::b8 ? "bool" : "16-bit integer") + " type)");
  return a;
}

int64_t world_size_of(const Op& op) { return op.arg("group").integer; }

// Dim 0 of a gathered tensor: the shard's times the world size (with its expression), which must
// not overflow.
Dim gathered(const Dim& dim0, int64_t ws) {
  if (dim0 > std::numeric_limits<int64_t>::max() / ws) fail(0, "gathered over " + std::to_string(ws) + " ranks, dim 0 overflows 64 bits");
  return multiply_dims(dim0, Dim::constant(ws));
}

void check_reduce_op(const Op& op, size_t i) {
  const std::string& name = op.arg(i).text;
  if (name != "SUM" && name != "AVG" && name != "PRODUCT" && name != "MIN" && name != "MAX")
    fail(int(i), "reduction \"" + name + "\" is not supported (SUM, AVG, PRODUCT, MIN or MAX, as NCCL has them)");
}

// Collectives along dim 0 only: NCCL gathers and scatters rank buffers one after another, which is
// dim 0 of a row-major tensor. (thunder.distributed.fsdp shards along dim 0.)
void check_dim0(const Op& op, size_t i, const Value& a) {
  const Arg& dim = op.arg(i);
  if (dim.kind == Arg::Kind::integer && dim.integer != 0) fail(int(i), "only dim 0 (or null) is supported: NCCL lays ranks out along dim 0");
  if (a.shape.empty()) fail(0, "needs at least one dim (it is gathered or scattered along dim 0)");
}

// all_reduce(a, op, group, do_async, skip_clone) and broadcast(a, root, group, do_async): a's type.
std::vector<OutType> all_reduce_rule(const Trace& t, const Op& op) {
  const Value& a = communicated_tensor(t, op, 0);
  check_reduce_op(op, 1);
  return {{a.dtype, a.shape}};
}
std::vector<OutType> collective_broadcast_rule(const Trace& t, const Op& op) {
  const Value& a = communicated_tensor(t, op, 0);
  if (op.arg("root").integer < 0 || op.arg("root").integer >= world_size_of(op))
    fail(1, "root " + std::to_string(op.arg("root").integer) + " is not a rank of the group (world size " + std::to_string(world_size_of(op)) + ")");
  return {{a.dtype, a.shape}};
}
// all_gather(a, group, do_async, dim): dim 0 times the world size.
std::vector<OutType> all_gather_rule(const Trace& t, const Op& op) {
  const Value& a = communicated_tensor(t, op, 0);
  check_dim0(op, 3, a);
  Shape out = a.shape;
  out[0] = gathered(out[0], world_size_of(op));
  return {{a.dtype, out}};
}
// reduce_scatter(a, op, group, do_async, dim): dim 0 divided by the world size, which must divide it.
std::vector<OutType> reduce_scatter_rule(const Trace& t, const Op& op) {
  const Value& a = communicated_tensor(t, op, 0);
  check_reduce_op(op, 1);
  check_dim0(op, 4, a);
  const int64_t ws = world_size_of(op);
  if (a.shape[0] % ws) fail(0, "dim 0 of shape " + shape_str(a.shape) + " is not divisible by the world size " + std::to_string(ws));
  Shape out = a.shape;
  if (!out[0].symbolic()) {
    out[0] = computed_from(out[0], out[0] / ws);
  } else if (provably_divisible(*out[0].expr(), ws, t.symbols)) {
    out[0] = floor_div_dim(out[0], ws, t.symbols);
  } else {
    fail(0, "dim 0, " + out[0].expr()->text() + ", is not a multiple of the world size " + std::to_string(ws) +
                " at every size the symbols allow: declare a multiple_of that makes it one");
  }
  return {{a.dtype, out}};
}

bool fully_sharded(const Op& op) { return op.arg("distparallel_type").text == "FULLY_SHARDED"; }

// synchronize(a, group, type): REPLICATED a's type; FULLY_SHARDED (a shard along dim 0) the whole
// parameter, dim 0 times the world size. (Thunder pads dim 0 to a multiple of the world size when
// sharding and slices the padding off after the synchronize: that slice is in the trace.)
std::vector<OutType> synchronize_rule(const Trace& t, const Op& op) {
  const Value& a = communicated_tensor(t, op, 0);
  const std::string& type = op.arg("distparallel_type").text;
  if (type != "REPLICATED" && type != "FULLY_SHARDED")
    fail(2, "distparallel_type must be \"REPLICATED\" (ddp) or \"FULLY_SHARDED\" (fsdp), not \"" + type + "\"");
  Shape out = a.shape;
  if (fully_sharded(op)) {
    if (out.empty()) fail(0, "a fully sharded parameter needs at least one dim (it is sharded along dim 0)");
    out[0] = gathered(out[0], world_size_of(op));
  }
  return {{a.dtype, out}};
}

std::vector<OutType> wait_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  return {{a.dtype, a.shape}};
}

// The tensors of a bucket: one dtype; their total element count.
int64_t bucket_elements(const Trace& t, const Arg& list, int arg, DType* dtype) {
  int64_t n = 0;
  for (size_t i = 0; i < list.items.size(); ++i) {
    const Value& v = t.value(list.items[i].value);
    if (i == 0) *dtype = v.dtype;
    if (v.dtype != *dtype) fail(arg, "the tensors of a bucket share one dtype: tensor " + std::to_string(i) + " is " + std::string(dtype_name(v.dtype)));
    n += numel(v.shape);
  }
  return n;
}

// pack(tensors, bucket_key): one flat buffer. pack_for_fsdp(tensors, world_size, mode): the same size.
std::vector<OutType> pack_rule(const Trace& t, const Op& op) {
  DType dtype = DType::f32;
  const int64_t n = bucket_elements(t, op.arg("tensors"), 0, &dtype);
  if (op.info->kind == OpKind::t_pack_for_fsdp) {
    const std::string& mode = op.arg("mode").text;
    if (mode != "gather" && mode != "scatter") fail(2, "mode must be \"gather\" or \"scatter\", not \"" + mode + "\"");
    if (op.arg("world_size").integer < 1) fail(1, "world_size must be positive");
    if (mode == "scatter")
      for (const Arg& item : op.arg("tensors").items)
        if (numel(t.value(item.value).shape) % op.arg("world_size").integer) fail(0, "every tensor of a scatter bucket must split into world_size chunks");
  }
  return {{dtype, {n}}};
}

// unpack(buffer, tensors, bucket_key): tensors like `tensors`, from consecutive runs of buffer.
// unpack_for_fsdp(buffer, tensors, world_size, mode): gather mode, each tensor's dim 0 times the
// world size (the buffer holds every rank's bucket); scatter mode, divided by it.
std::vector<OutType> unpack_rule(const Trace& t, const Op& op) {
  const Value& buffer = t.value(op.arg("buffer").value);
  if (buffer.shape.size() != 1) fail(0, "a bucket is one-dimensional, got shape " + shape_str(buffer.shape));
  DType dtype = buffer.dtype;
  const int64_t n = bucket_elements(t, op.arg("tensors"), 1, &dtype);
  if (dtype != buffer.dtype) fail(1, "the tensors must have the bucket's dtype " + std::string(dtype_name(buffer.dtype)));
  int64_t ws = 1;
  bool gather = false;
  if (op.info->kind == OpKind::t_unpack_for_fsdp) {
    ws = op.arg("world_size").integer;
    const std::string& mode = op.arg("mode").text;
    if (mode != "gather" && mode != "scatter") fail(3, "mode must be \"gather\" or \"scatter\", not \"" + mode + "\"");
    if (ws < 1) fail(2, "world_size must be positive");
    gather = mode == "gather";
  }
  const int64_t expected = gather ? int64_t(gathered(Dim(n), ws)) : n / ws;
  if (buffer.shape[0] != expected || (!gather && n % ws))
    fail(0, "holds " + std::to_string(buffer.shape[0]) + " elements, the tensors need " + std::to_string(expected));
  std::vector<OutType> out;
  for (const Arg& item : op.arg("tensors").items) {
    Shape s = t.value(item.value).shape;
    if (ws > 1) {
      if (s.empty() || (!gather && s[0] % ws)) fail(1, "a tensor of shape " + shape_str(s) + " cannot be split along dim 0 by the world size");
      s[0] = gather ? gathered(s[0], ws) : computed_from(s[0], s[0] / ws);
    }
    out.push_back({dtype, s});
  }
  return out;
}

// ---- lowerings ----

Arg bool_arg(bool b) { return Arg::of_bool(b); }

V flat(G& g, V a) { return reshape(g, a, {numel(shape_of(g, a))}); }
V slice1(G& g, V a, int64_t begin, int64_t end) { return call(g, "prims.slice_prim", {val(a), int_list({begin}), int_list({end}), int_list({1})}); }
V cat0(G& g, const std::vector<V>& parts) {
  if (parts.size() == 1) return parts[0];
  std::vector<Arg> items;
  for (V v : parts) items.push_back(val(v));
  return call(g, "prims.cat", {Arg::of_list(std::move(items)), Arg::of_int(0)});
}
// A copy of a with the output's shape (synchronize of a replicated parameter, wait).
V identity(G& g, const Op& op) { return call(g, "prims.reshape", {val(op.arg("a").value), int_list(g.trace().value(op.outs[0]).shape)}); }
V lower_wait(G& g, const Op& op) { return identity(g, op); }

V lower_synchronize(G& g, const Op& op) {
  if (!fully_sharded(op)) return identity(g, op);
  Arg dim;  // null: dim 0
  return call(g, kAllGather, {val(op.arg("a").value), op.arg("group"), bool_arg(false), dim});
}

// pack: the tensors flattened, one after another. pack_for_fsdp's scatter mode: rank r's chunk of
// every tensor, then rank r+1's, so a reduce-scatter hands each rank its shards together.
V lower_pack(G& g, const Op& op) {
  std::vector<V> tensors;
  for (const Arg& item : op.arg("tensors").items) tensors.push_back(flat(g, item.value));
  const bool scatter = op.info->kind == OpKind::t_pack_for_fsdp && op.arg("mode").text == "scatter";
  if (!scatter) return cat0(g, tensors);
  const int64_t ws = op.arg("world_size").integer;
  std::vector<V> parts;
  for (int64_t r = 0; r < ws; ++r)
    for (V t : tensors) {
      const int64_t chunk = numel(shape_of(g, t)) / ws;
      parts.push_back(slice1(g, t, r * chunk, (r + 1) * chunk));
    }
  return cat0(g, parts);
}

// unpack (and unpack_for_fsdp's scatter mode): consecutive runs of the buffer. unpack_for_fsdp's
// gather mode: the buffer is [world_size, bucket]; a tensor's run in every rank's bucket, stacked,
// is the gathered tensor.
std::vector<V> lower_unpack(G& g, const Op& op) {
  const V buffer = op.arg("buffer").value;
  const bool gather = op.info->kind == OpKind::t_unpack_for_fsdp && op.arg("mode").text == "gather";
  const int64_t ws = gather ? op.arg("world_size").integer : 1;
  const int64_t per_rank = numel(shape_of(g, buffer)) / ws;
  const V rows = gather ? reshape(g, buffer, {ws, per_rank}) : buffer;
  std::vector<V> out;
  int64_t offset = 0;
  for (ValueId o : op.outs) {
    const Shape shape = g.trace().value(o).shape;
    const int64_t n = numel(shape) / ws;
    V run = gather ? call(g, "prims.slice_prim", {val(rows), int_list({0, offset}), int_list({ws, offset + n}), int_list({1, 1})})
                   : slice1(g, buffer, offset, offset + n);
    out.push_back(call(g, "prims.reshape", {val(run), int_list(shape)}));
    offset += n;
  }
  return out;
}

// Thunder's rule (synchronize_backward_rule): the cotangent over the world size, then summed over
// the ranks: all of it (DDP) or each rank's dim-0 shard (FSDP).
std::vector<GradContribution> synchronize_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  const int64_t ws = world_size_of(op);
  const V preaveraged = div(g, val(cot[0]), num(double(ws)));
  Arg none;
  const V synced = fully_sharded(op) ? call(g, kReduceScatter, {val(preaveraged), string_arg("SUM"), op.arg("group"), bool_arg(true), none})
                                     : call(g, kAllReduce, {val(preaveraged), string_arg("SUM"), op.arg("group"), bool_arg(true), bool_arg(false)});
  return {{op.arg("a").value, synced}};
}

// The collectives' own gradients, for traces that differentiate through them (a model's code
// calling them, as tensor parallelism does): each rank's cotangents summed back the way the values
// came. all_reduce SUM: all_reduce SUM (AVG: AVG) of the cotangent; all_gather: reduce_scatter SUM;
// reduce_scatter SUM: all_gather. The others (MIN, MAX, PRODUCT, broadcast, whose gradient goes
// to one rank only) are refused rather than dropped.
[[noreturn]] void no_collective_gradient(const Op& op, const std::string& what) {
  throw UserError(op.where.empty() ? "/" : op.where, op.symbol + ": " + what + " has no gradient here; only SUM and AVG reductions, "
                                                     "all_gather and reduce_scatter SUM are differentiated");
}

std::vector<GradContribution> collective_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  Arg none;
  const V c = cot[0];
  switch (op.info->kind) {
    case OpKind::all_reduce:
      if (op.arg("op").text != "SUM" && op.arg("op").text != "AVG") no_collective_gradient(op, "reduction " + op.arg("op").text);
      return {{op.arg("a").value, call(g, kAllReduce, {val(c), op.arg("op"), op.arg("group"), bool_arg(false), bool_arg(false)})}};
    case OpKind::all_gather:
      return {{op.arg("a").value, call(g, kReduceScatter, {val(c), string_arg("SUM"), op.arg("group"), bool_arg(false), none})}};
    case OpKind::reduce_scatter:
      if (op.arg("op").text != "SUM") no_collective_gradient(op, "reduction " + op.arg("op").text);
      return {{op.arg("a").value, call(g, kAllGather, {val(c), op.arg("group"), bool_arg(false), none})}};
    default: no_collective_gradient(op, "broadcast");
  }
}

}  // namespace

#define TG_FAMILY_ROWS distributed_op_rows
#define TG_FAMILY "distributed_ops"
#define TG_FAMILY_FILE "ops/distributed_ops.def"
#include "ops/family_rows.inc"

int64_t communication_bytes(const Trace& t, const Op& op) {
  if (op.info && op.info->kind == OpKind::t_synchronize) return fully_sharded(op) ? stored_bytes(t.value(op.outs[0])) : 0;
  if (!op.info || !is_collective(op.info->kind)) return 0;
  const ValueId v = op.info->kind == OpKind::all_gather ? op.outs[0] : op.arg("a").value;
  return stored_bytes(t.value(v));
}

namespace {

struct Bucket {
  std::vector<size_t> members;  // indices of the all-reduce ops, in gradient order
  int64_t bytes = 0;
};

// The buckets of the backward's gradient all-reduces (see the header), by Thunder's rule.
std::vector<Bucket> gradient_buckets(const Trace& b, int64_t bucket_bytes) {
  std::set<ValueId> read;
  for (const Op& op : b.ops) for_each_value(op, [&](ValueId v) { read.insert(v); });
  std::map<ValueId, size_t> reducing;  // gradient value -> the all-reduce defining it
  for (size_t i = 0; i < b.ops.size(); ++i)
    if (const Op& op = b.ops[i]; op.info && op.info->kind == OpKind::all_reduce && !read.count(op.outs[0])) reducing[op.outs[0]] = i;
  std::map<std::pair<DType, std::string>, Bucket> open;
  std::vector<Bucket> closed;
  std::set<ValueId> seen;
  for (ValueId g : b.outputs) {
    auto it = reducing.find(g);
    if (it == reducing.end() || !seen.insert(g).second) continue;
    const Op& op = b.ops[it->second];
    Bucket& bucket = open[{b.value(g).dtype, op.arg("op").text}];
    bucket.members.push_back(it->second);
    bucket.bytes += stored_bytes(b.value(g));
    if (bucket.bytes >= bucket_bytes) closed.push_back(std::exchange(bucket, Bucket{}));
  }
  for (auto& [key, bucket] : open)
    if (!bucket.members.empty()) closed.push_back(std::move(bucket));
  return closed;
}

// pack -> one all-reduce -> unpack, writing the members' own result values.
std::vector<Op> packed_all_reduce(Trace& b, NameSet& taken, const std::vector<const Op*>& members) {
  PrimBuilder g(b, taken, "bucket");
  g.differentiating(*members.back());
  std::vector<Arg> flats;
  for (const Op* op : members) flats.push_back(val(flat(g, op->arg("a").value)));
  const V packed = call(g, "prims.cat", {Arg::of_list(std::move(flats)), Arg::of_int(0)});
  const Op& first = *members.front();
  const V reduced = call(g, kAllReduce, {val(packed), first.arg("op"), first.arg("group"), first.arg("do_async"), first.arg("skip_clone")});
  int64_t offset = 0;
  std::vector<Op> ops;
  for (const Op* op : members) {
    const Shape shape = b.value(op->outs[0]).shape;
    const V run = slice1(g, reduced, offset, offset + numel(shape));
    call(g, "prims.reshape", {val(run), int_list(shape)});
    offset += numel(shape);
    ops = g.take_ops();  // (the last op is this member's reshape: it defines the member's value)
    ops.back().outs[0] = op->outs[0];
    for (Op& done : ops) g.append(std::move(done));
  }
  return g.take_ops();
}

}  // namespace

void bucket_gradient_all_reduces(Trace& b, int64_t bucket_bytes) {
  if (bucket_bytes <= 0) return;
  NameSet taken;
  for (const Value& v : b.values) taken.insert(v.name);
  std::map<size_t, std::vector<Op>> replacement;  // at the bucket's last all-reduce: its ops
  std::set<size_t> removed;
  for (const Bucket& bucket : gradient_buckets(b, bucket_bytes)) {
    if (bucket.members.size() < 2) continue;
    std::vector<const Op*> members;
    for (size_t i : bucket.members) members.push_back(&b.ops[i]);
    const size_t last = *std::max_element(bucket.members.begin(), bucket.members.end());
    replacement[last] = packed_all_reduce(b, taken, members);
    removed.insert(bucket.members.begin(), bucket.members.end());
  }
  if (removed.empty()) return;
  std::vector<Op> ops;
  for (size_t i = 0; i < b.ops.size(); ++i) {
    if (auto it = replacement.find(i); it != replacement.end())
      for (Op& op : it->second) ops.push_back(std::move(op));
    else if (!removed.count(i))
      ops.push_back(std::move(b.ops[i]));
  }
  b.ops = std::move(ops);
}

namespace {

// Ops that only prepare collectives' operands: elementwise or shape ops (or copies) whose every
// result is read only by collectives and by other such ops, and is no trace output.
std::vector<bool> collective_preparation(const Trace& t) {
  std::vector<std::vector<size_t>> readers(t.values.size());
  for (size_t i = 0; i < t.ops.size(); ++i) for_each_value(t.ops[i], [&](ValueId v) { readers[size_t(v)].push_back(i); });
  std::set<ValueId> outputs(t.outputs.begin(), t.outputs.end());
  std::vector<bool> moves(t.ops.size(), false);
  for (size_t i = t.ops.size(); i-- > 0;) {
    const Op& op = t.ops[i];
    if (op.info && is_collective(op.info->kind)) {
      moves[i] = true;
      continue;
    }
    const bool cheap = op.info && (op.info->fusion == FusionClass::elementwise || op.info->fusion == FusionClass::shape);
    bool feeds_only_moved = cheap && !op.outs.empty();
    for (ValueId v : op.outs) {
      if (outputs.count(v) || readers[size_t(v)].empty()) feeds_only_moved = false;
      for (size_t r : readers[size_t(v)]) feeds_only_moved = feeds_only_moved && moves[r];
    }
    moves[i] = feeds_only_moved;
  }
  return moves;
}

}  // namespace

void schedule_collectives_early(Trace& t) {
  const std::vector<bool> moves = collective_preparation(t);
  std::vector<bool> ready(t.values.size(), false);
  for (ValueId v : t.inputs) ready[size_t(v)] = true;
  auto can_run = [&](const Op& op) {
    bool ok = true;
    for_each_value(op, [&](ValueId v) { ok = ok && ready[size_t(v)]; });
    return ok;
  };
  std::vector<Op> ops;
  std::vector<size_t> waiting;  // moved ops not yet placed, in their order
  std::vector<bool> placed(t.ops.size(), false);
  auto place = [&](size_t i) {
    for (ValueId v : t.ops[i].outs) ready[size_t(v)] = true;
    ops.push_back(std::move(t.ops[i]));
    placed[i] = true;
  };
  // After each op: every moved op whose operands are now all computed, repeatedly.
  auto place_ready_moved = [&] {
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t i : waiting)
        if (!placed[i] && can_run(t.ops[i])) {
          place(i);
          progress = true;
        }
    }
  };
  for (size_t i = 0; i < t.ops.size(); ++i)
    if (moves[i]) waiting.push_back(i);
  place_ready_moved();
  for (size_t i = 0; i < t.ops.size(); ++i) {
    if (moves[i]) continue;
    place(i);
    place_ready_moved();
  }
  for (size_t i : waiting) TG_CHECK(placed[i], "schedule_collectives_early: an op was left unplaced");
  t.ops = std::move(ops);
}

std::vector<CollectiveCall> collectives_of(const Trace& t, const std::string& pass) {
  std::vector<CollectiveCall> calls;
  for (const Op& op : t.ops) {
    const int64_t bytes = communication_bytes(t, op);
    if (bytes == 0 && !(op.info && is_collective(op.info->kind))) continue;
    const std::string kind = op.info->kind == OpKind::t_synchronize ? "all_gather" : op.symbol.substr(op.symbol.rfind('.') + 1);
    calls.push_back({pass, kind, t.value(op.outs[0]).name, bytes});
  }
  return calls;
}

}  // namespace tg
