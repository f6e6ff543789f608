// The op table: every op thunder-gen knows is declared once, in src/ops/op_table.cpp, with its
// signature, shape/dtype rule, fusion class and code template. The reader binds arguments with it,
// the verifier checks with it, the printer names with it, fusion groups by it, the emitter
// generates code from it and the reference interpreter dispatches on its OpKind.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/trace.h"

namespace tg {

enum class OpKind {
  // the unary float prims (declared in unary_float_prims.def)
#define TG_UNARY_FLOAT(name, torch, saves, derivative, lo, hi) name,
#include "ops/unary_float_prims.def"
#undef TG_UNARY_FLOAT
  // elementwise unary
  abs, neg, floor, ceil, round, trunc, sign, signbit, isfinite, bitwise_not,
  // the binary float prims (declared in binary_float_prims.def)
#define TG_BINARY_FLOAT(name, ...) name,
#include "ops/binary_float_prims.def"
#undef TG_BINARY_FLOAT
  // the binary exact prims: bitwise ops, shifts, comparisons (declared in binary_exact_prims.def)
#define TG_BINARY_EXACT(name, ...) name,
#include "ops/binary_exact_prims.def"
#undef TG_BINARY_EXACT
  // elementwise ternary
  where, lerp,
  convert_element_type,
  // sources
  full, iota, uniform, uniform_philox,
  // shape
  broadcast_in_dim, reshape, transpose, squeeze, slice, pad, cat,
  // reductions
  sum, prod, amax, amin, var, var_mean, argmax, argmin,
  // library calls
  matmul,
  // collectives across the ranks of the process group (thunder.distributed.prims; NCCL on the GPU)
  all_reduce, all_gather, reduce_scatter, broadcast,
  // torch-level (composite) ops: lowered to prims, some with gradient rules of their own
  t_softmax, t_log_softmax, t_relu, t_sigmoid, t_tanh, t_silu, t_gelu, t_linear, t_matmul,
  t_reshape, t_permute, t_transpose, t_unsqueeze, t_sum, t_mean, t_layer_norm, t_rms_norm,
  t_cross_entropy, t_nll_loss, t_cat, t_split, t_var, t_embedding, t_sdpa,
  // torch calls Thunder runs whole (or decomposes), which real models make (docs/torch-ops.md)
  t_addmm, t_baddbmm, t_bmm, t_addcmul, t_addcdiv, t_max, t_min, t_clamp, t_masked_fill, t_tril, t_triu,
  t_cumsum, t_normalize, t_mha, t_conv1d, t_conv2d, t_convolution,
  t_prim_linear,  // prims.linear: what Thunder's autocast records for F.linear
  t_dropout,
  // prims that only name a copy or a memory layout: lowered to an identity reshape
  shallow_copy, stride_order,
  // distributed prims lowered to the collectives above and to copies: synchronize (a parameter's
  // all-gather or nothing, with Thunder's gradient rule), wait (the identity), gradient buckets
  t_synchronize, t_wait, t_pack, t_unpack, t_pack_for_fsdp, t_unpack_for_fsdp,
  // made by the fusion pass only (never read from a trace): a row kernel's partial column sums,
  // and a fused kernel, whose `sub` holds the ops it computes
  partial_sum, fused_kernel,
};

enum class FusionClass {
  elementwise,  // one output element from the same-index elements of its inputs
  shape,        // moves elements: an index map, no arithmetic
  source,       // makes values from nothing but its attributes (full, iota)
  reduction,    // reduces dims of one input
  library,      // a call into a vendor library (cuBLASLt, NCCL); its operands and result live in memory
  composite,    // a torch-level op: lowered to prims (after autograd, which may use its own rule)
  partial,      // sums over a row kernel's rows in a fixed number of parts, finished by a sum later
  kernel,       // a fused kernel
};
std::string_view fusion_class_name(FusionClass c);

enum class ParamKind {
  tensor,            // a tensor value
  tensor_or_number,  // a tensor value or a number literal / scalar value
  tensor_list,       // a list of tensor values
  number,            // a number literal or scalar value
  integer,           // an integer literal
  optional_integer,  // an integer literal or null
  int_list,          // a list of integer literals (shape, dims, permutation)
  optional_int_list, // a list of integer literals or null
  padding_config,    // a list of [lo, hi, interior] integer triples
  dtype,             // a dtype literal
  device,            // a device literal (or string)
  // torch-level signatures
  optional_tensor,   // a tensor value or null
  optional_dtype,    // a dtype literal or null
  dims,              // an integer, a list of integers, or null (all dims)
  boolean,           // true or false
  string,            // a string literal {"str": ...}
  optional_string,   // a string literal or null
  optional_number,   // a number literal, a scalar value or null
  int_or_int_list,   // an integer or a list of integers
  dim_or_tensor,     // an integer, a tensor or null (torch.max's dim, which a tensor makes the elementwise form)
  optional_tensor_or_number,  // a tensor, a number or null (torch.clamp's bounds)
  process_group,     // {"process_group": {"world_size": N}} (distributed prims)
};

struct Param {
  std::string_view name;
  ParamKind kind;
  bool keyword_only = false;
  bool has_default = false;
  Arg default_value = {};
};

// Which element types an elementwise op accepts.
enum class DTypes { floats, numbers, numbers_and_bool, integers_and_bool, integers, any };
bool dtypes_accept(DTypes set, DType t);
std::string_view dtypes_name(DTypes set);  // "floats", "numbers", ...

// Where a declared elementwise prim's test operands are drawn from.
struct Domain {
  double lo = 0, hi = 0;
};

// The type of one output, as an op's rule computes it.
struct OutType {
  DType dtype;
  Shape shape;
};

// Thrown by shape rules; arg is the parameter index the problem is about (-1: the op itself).
struct RuleError {
  int arg;
  std::string message;
};

using ShapeRule = std::function<std::vector<OutType>(const Trace&, const Op&)>;

// What gradient rules build with: it appends prims to the joint trace being made, typing each
// output with the prim's own shape rule.
class GradBuilder {
 public:
  virtual ~GradBuilder() = default;
  virtual const Trace& trace() const = 0;
  // Appends prim `id` with `args` bound in its signature's order; returns its outputs.
  virtual std::vector<ValueId> emit(std::string_view id, std::vector<Arg> args) = 0;
};

// One contribution to the cotangent of an input: (input value, cotangent).
using GradContribution = std::pair<ValueId, ValueId>;
// A gradient rule: given the op and the cotangent of each output (kNoValue where the output gets
// none), the contributions to its inputs' cotangents. Ops without a rule are not differentiable.
using GradRule = std::function<std::vector<GradContribution>(GradBuilder&, const Op&, const std::vector<ValueId>& cotangents)>;

// Thunder's class losses keep ignore_index and reduction at different positions:
// cross_entropy(a, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing)
// and nll_loss(a, target, weight, ignore_index, reduction).
struct ClassLossArgs {
  int64_t ignore_index;
  std::string reduction;
};
struct Op;
ClassLossArgs class_loss_args(const Op& op);

// PyTorch's reading of is_causal there: a hint that attn_mask is the causal mask, which replaces
// the mask only without key_padding_mask and need_weights (then SDPA's is_causal is used).
bool mha_causal_replaces_mask(const Op& op);

struct OpInfo {
  OpKind kind;
  std::string_view id;  // Thunder's symbol id
  FusionClass fusion;
  std::vector<Param> params;
  ShapeRule rule;
  // Elementwise ops: a C++ expression over {0}, {1}, {2}, the operands in compute type.
  std::string_view code;
  DTypes accepts = DTypes::any;
  std::string_view summary;
  GradRule grad = {};  // empty: no gradient flows through (comparisons, rounding, integer ops)
  // What the gradient rule reads of the forward, so what a backward must keep: "inputs",
  // "output" (exp, tanh, sqrt... read their result, not their operand), "inputs, output", or
  // "nothing". Checked against the rules themselves by tests/reference/test_gradients.cpp.
  std::string_view grad_saves = {};
  // Its result jumps when an operand moves by less than a rounding unit (comparisons, argmax and
  // argmin, floor and its kin, sign, isfinite, fmod and remainder): a 16-bit operand computed in
  // f32 inside a kernel is rounded to its dtype before this op reads it, so the op sees what
  // PyTorch's op-by-op rounding and every other copy of the value see (docs/design-notes.md,
  // "Rounding").
  bool discontinuous = false;
  // Elementwise ops whose `code` could overflow on integer operands (undefined in C++): the code
  // for integers, which wraps as PyTorch's integers do. Empty: `code` serves every dtype.
  std::string_view integer_code = {};
  // Continuous, but its gradient compares the operands (maximum, minimum): the LibTorch reference
  // rounds its 16-bit operands as it does a discontinuous op's (binary_float_prims.def).
  bool kinked = false;
  // Elementwise ops whose result is b8 whatever their operands (comparisons, signbit, isfinite).
  bool bool_result = false;
  // The declared prims: the list declaring it ("unary_float", "binary_float", "binary_exact": the
  // src/ops/<family>_prims.def), the PyTorch function giving its value, and the domain
  // each operand's test inputs are drawn from (none for the exact prims). Empty elsewhere.
  std::string_view family = {};
  std::string_view torch_function = {};
  std::vector<Domain> domains = {};
  bool has_lowering() const { return fusion == FusionClass::composite; }
  // Made by the fusion pass, never read from a trace or written by autograd.
  bool made_by_fusion() const { return fusion == FusionClass::partial || fusion == FusionClass::kernel; }
};

const std::vector<OpInfo>& op_table();
const OpInfo* find_op(std::string_view id);
const OpInfo& op_info(OpKind kind);
// The position of parameter `name` in info's signature; info.params.size() when it declares none.
size_t param_index(const OpInfo& info, std::string_view name);
// A collective of thunder.distributed.prims (all_reduce, all_gather, reduce_scatter, broadcast).
bool is_collective(OpKind kind);
// A torch-level form of an elementwise prim (`torch.add` of `prims.add`, src/ops/torch_elementwise.h):
// its kind is the prim's, its row composite.
bool is_torch_form(const OpInfo& info);

// The dtype an elementwise op's operands compute in: that of its tensor operands (numbers and
// scalar values are converted to it).
DType operand_dtype(const Trace& t, const Op& op);

// The reduced dims of a reduction op (sorted, non-negative).
std::vector<int64_t> reduction_dims(const Trace& t, const Op& op);

}  // namespace tg
