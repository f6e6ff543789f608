// The op table: every op thunder-gen knows is declared once, in its family's src/ops/<family>.def
// (all_ops.def lists them), with its signature, fusion class, shape/dtype rule, code template or
// lowering, gradient rule and what that rule saves; the rules live beside the declarations, in
// src/ops/<family>.cpp. The reader binds arguments with the table, the verifier checks with it,
// the printer names with it, fusion groups by it, the emitter generates code from it, autograd
// differentiates with it and the reference interpreter evaluates from it.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/trace.h"

namespace tg {

// Every op kind, generated from the declarations (src/ops/all_ops.def lists the families in order).
enum class OpKind {
#define TG_EACH_OP(name, ...) name,
#include "ops/all_ops.def"
#undef TG_EACH_OP
};
inline constexpr size_t kOpKindCount = 0
#define TG_EACH_OP(name, ...) +1
#include "ops/all_ops.def"
#undef TG_EACH_OP
    ;

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

// The kinds of parameter a signature declares (each with its name in list-ops --json).
#define TG_PARAM_KINDS(X)                                                                                                        \
  X(tensor)                    /* a tensor value */                                                                            \
  X(tensor_or_number)          /* a tensor value or a number literal / scalar value */                                         \
  X(tensor_list)               /* a list of tensor values */                                                                   \
  X(number)                    /* a number literal or scalar value */                                                          \
  X(integer)                   /* an integer literal */                                                                        \
  X(optional_integer)          /* an integer literal or null */                                                                \
  X(int_list)                  /* a list of integer literals (shape, dims, permutation) */                                     \
  X(optional_int_list)         /* a list of integer literals or null */                                                        \
  X(padding_config)            /* a list of [lo, hi, interior] integer triples */                                              \
  X(dtype)                     /* a dtype literal */                                                                           \
  X(device)                    /* a device literal (or string) */                                                              \
  X(optional_tensor)           /* torch-level signatures: a tensor value or null */                                            \
  X(optional_dtype)            /* a dtype literal or null */                                                                   \
  X(dims)                      /* an integer, a list of integers, or null (all dims) */                                        \
  X(boolean)                   /* true or false */                                                                             \
  X(string)                    /* a string literal {"str": ...} */                                                             \
  X(optional_string)           /* a string literal or null */                                                                  \
  X(optional_number)           /* a number literal, a scalar value or null */                                                  \
  X(int_or_int_list)           /* an integer or a list of integers */                                                          \
  X(optional_int_or_int_list)  /* an integer, a list of integers or null (a pooling's stride: null is its window) */            \
  X(dim_or_tensor)             /* an integer, a tensor or null (torch.max's dim, which a tensor makes the elementwise form) */ \
  X(optional_tensor_or_number) /* a tensor, a number or null (torch.clamp's bounds) */                                         \
  X(process_group)             /* {"process_group": {"world_size": N}} (distributed prims) */
enum class ParamKind {
#define TG_PARAM_KIND(name) name,
  TG_PARAM_KINDS(TG_PARAM_KIND)
#undef TG_PARAM_KIND
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
  // About the operands' sizes (a reduction over a dim that is empty, or may be), not how the op
  // was built: a composite whose lowering meets it is refused as bad input, at its place.
  bool about_sizes = false;
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
// How a composite (torch-level) op is computed: appends the prims computing `op`, returns its outputs.
using Lowering = std::vector<ValueId> (*)(GradBuilder&, const Op&);

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
  Lowering lowering = nullptr;  // composite ops: how it is computed in prims
  // Its own gradient rule; empty: none flows through it (comparisons, rounding, integer ops), or,
  // for a composite op, its lowering's prims are differentiated.
  GradRule grad = {};
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
  // The family declaring it (its file, src/ops/<family>.def: "unary_float_prims", "shape_prims",
  // "torch_activations", ...); the PyTorch function giving its value (elementwise prims); the domain
  // each operand's test inputs are drawn from (declared float prims and activations).
  std::string_view family = {};
  std::string_view torch_function = {};
  std::vector<Domain> domains = {};
  // How LibTorch's reference (reference/reference.cpp) computes it when ATen has it: the ATen op,
  // its overload and the parameters passed to it in order ("softmax.int(a, dim)"); empty where the
  // reference computes it by hand.
  std::string_view aten = {};
  bool has_lowering() const { return fusion == FusionClass::composite; }
  // Made by the fusion pass, never read from a trace or written by autograd.
  bool made_by_fusion() const { return fusion == FusionClass::partial || fusion == FusionClass::kernel; }
};

const std::vector<OpInfo>& op_table();
const OpInfo* find_op(std::string_view id);
const OpInfo& op_info(OpKind kind);
// The kind's name in the declarations ("exp", "t_softmax").
std::string_view op_kind_name(OpKind kind);
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
