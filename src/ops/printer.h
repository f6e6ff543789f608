// Printer: a Trace as a readable, Thunder-style listing, e.g.
//   t2 = prims.mul(t0, t1)  # t2: f32[1024, 1024]
// Decompositions and the bodies of fused kernels follow their op as indented comments. The
// comment after an op gives its values' types, its tags and where it came from ("(/ops/3)", or
// "(torch.nn.functional.gelu at /ops/3)" for a prim a torch-level call lowered to).
#pragma once
#include <functional>
#include <string>

#include "ir/trace.h"

namespace tg {

// A note printed under top-level op `op_index` as a "# <note>" line, or "" for none: how a later
// stage shows what it decided about an op (a fused kernel's plan, src/schedule/kernel_plan.h).
using OpNote = std::function<std::string(size_t op_index, const Op& op)>;

std::string print_trace(const Trace& trace, const OpNote& note = {});
// Where a joint trace's (src/autograd/autograd.h) parts meet: its inputs from `forward_inputs` on are
// cotangents ("# cotangent_t2: f32[8] cotangent"), and a "# backward" line comes before op
// `forward_ops`, so the listing reads back as a joint trace.
struct JointMarks {
  size_t forward_inputs = 0;
  size_t forward_ops = 0;
};
std::string print_joint_trace(const Trace& trace, const JointMarks& marks);
// How a size is written: its number (listings, which read back), or, in the comments of code
// that takes its sizes at run time, its expression where it has one ("f32[B*T, 64]"): the
// numbers there would be one size's of many.
enum class SizeText { numbers, expressions };
// SizeText for the comments of code generated from `t`.
SizeText comment_sizes(const Trace& t);
// One op as a comment of generated code (the listing line without its decomposition, sizes as
// comment_sizes(trace) writes them); `types` adds the "# t2: f32[...]" comment.
std::string print_op(const Op& op, const Trace& trace, bool types = true);
std::string print_type(const Value& v, SizeText sizes = SizeText::numbers);  // "f32[1024, 1024]" or "f64 scalar"
void append_type(std::string& out, const Value& v, SizeText sizes = SizeText::numbers);  // print_type, appended to `out`
void append_int(std::string& out, int64_t i);         // std::to_string, appended
void append_dim(std::string& out, const Dim& d, SizeText sizes);  // its number or its expression, appended
std::string print_literal(const Arg& arg, const Trace& trace, SizeText sizes = SizeText::numbers);
std::string print_number(double d);           // shortest text that reads back to d

}  // namespace tg
