// The op-table rows of each family of declarations (src/ops/all_ops.def), each built by its
// family's src/ops/<family>.cpp from its .def file; op_table.cpp gathers them. A kind whose family
// is missing here is caught when the table is built (every kind has exactly one row).
#pragma once
#include <vector>

#include "ops/op_table.h"

#define TG_OP_FAMILIES(X)                                                                                                    \
  X(elementwise_prim_rows) X(source_prim_rows) X(shape_prim_rows) X(reduction_prim_rows) X(matmul_op_rows) X(distributed_op_rows) \
  X(torch_activation_rows) X(torch_normalization_rows) X(torch_loss_rows) X(torch_shape_op_rows) X(torch_reduction_rows)          \
  X(torch_pointwise_rows) X(attention_op_rows) X(convolution_op_rows) X(pooling_op_rows) X(fusion_op_rows)

namespace tg {

#define TG_DECLARE_FAMILY(rows) std::vector<OpInfo> rows();
TG_OP_FAMILIES(TG_DECLARE_FAMILY)
#undef TG_DECLARE_FAMILY

}  // namespace tg
