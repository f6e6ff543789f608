// The sources' op-table rows, built from source_prims.def, with their shape rules.
#include "ops/family.h"

namespace tg {
namespace {

using namespace op_rows;

std::vector<OutType> full_rule(const Trace&, const Op& op) {
  Shape shape = op.arg("shape").dim_list();
  check_shape(shape, 0);
  return {{op.arg("dtype").dtype, shape}};
}

std::vector<OutType> uniform_rule(const Trace&, const Op& op) {
  Shape shape = op.arg("shape").dim_list();
  check_shape(shape, 0);
  if (!is_float(op.arg("dtype").dtype)) fail(4, std::string(op.info->id) + " makes floats, not " + std::string(dtype_name(op.arg("dtype").dtype)));
  return {{op.arg("dtype").dtype, shape}};
}

std::vector<OutType> iota_rule(const Trace&, const Op& op) {
  const Dim n = op.arg("length").dim();
  if (n < 0) fail(0, "length must not be negative");
  if (op.arg("step").integer == 0) fail(2, "step must not be zero");
  DType dt = op.arg("dtype").dtype;
  if (is_bool(dt)) fail(4, "iota cannot make b8");
  return {{dt, Shape{n}}};
}

}  // namespace

#define TG_FAMILY_ROWS source_prim_rows
#define TG_FAMILY "source_prims"
#define TG_FAMILY_FILE "ops/source_prims.def"
#include "ops/family_rows.inc"

}  // namespace tg
