// The rows of the ops fusion makes, built from fusion_ops.def.
#include "ops/family.h"

namespace tg {
namespace {

using namespace op_rows;

std::vector<OutType> partial_sum_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  Shape shape = reduced_shape(a.shape, reduction_dims(t, op));
  shape.insert(shape.begin(), op.arg("parts").dim());
  return {{dtype_bytes(a.dtype) < 4 ? DType::f32 : a.dtype, shape}};
}

}  // namespace

#define TG_FAMILY_ROWS fusion_op_rows
#define TG_FAMILY "fusion_ops"
#define TG_FAMILY_FILE "ops/fusion_ops.def"
#include "ops/family_rows.inc"

}  // namespace tg
