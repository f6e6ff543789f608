// torch-level elementwise calls (src/ops/torch_elementwise.cpp): thunder-gen's type promotion against
// LibTorch's own (ResultTypeState), for every pair and every triple of operands: each dtype as a
// tensor with dims and as a 0-dim tensor, and Python's bool, int and float numbers.
#define CATCH_CONFIG_PREFIX_ALL
#include <catch2/catch.hpp>
#include <torch/types.h>
#include <ATen/native/TypeProperties.h>

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ops/torch_elementwise.h"
#include "reference.h"

namespace {

using tg::DType;
using Form = tg::PromotionOperand::Form;

std::vector<tg::PromotionOperand> all_operands() {
  std::vector<tg::PromotionOperand> out;
  for (DType t : tg::kAllDTypes) {
    out.push_back({t, Form::tensor});
    out.push_back({t, Form::zero_dim});
  }
  for (DType t : {DType::b8, DType::i64, DType::f32}) out.push_back({t, Form::number});  // as thunder-gen types Python's numbers
  return out;
}

at::native::ResultTypeState with(const tg::PromotionOperand& o, const at::native::ResultTypeState& state) {
  if (o.form == Form::number) {
    const torch::Scalar s = o.dtype == DType::f32 ? torch::Scalar(0.5) : o.dtype == DType::i64 ? torch::Scalar(int64_t(2)) : torch::Scalar(true);
    return at::native::update_result_type_state(s, state);
  }
  const auto sizes = o.form == Form::tensor ? std::vector<int64_t>{1} : std::vector<int64_t>{};
  return at::native::update_result_type_state(torch::empty(sizes, torch::TensorOptions().dtype(tg::torch_storage_dtype(o.dtype))), state);
}

std::string describe(const std::vector<tg::PromotionOperand>& ops) {
  std::string s;
  for (const auto& o : ops)
    s += std::string(tg::dtype_name(o.dtype)) + (o.form == Form::tensor ? " tensor, " : o.form == Form::zero_dim ? " 0-dim, " : " number, ");
  return s;
}

void check(const std::vector<tg::PromotionOperand>& ops, int& checked) {
  at::native::ResultTypeState state;
  for (const auto& o : ops) state = with(o, state);
  const torch::ScalarType expected = at::native::result_type(state);
  const std::optional<DType> got = tg::result_type(ops);
  CATCH_INFO(describe(ops));
  CATCH_REQUIRE(got.has_value());
  CATCH_CHECK(tg::torch_storage_dtype(*got) == expected);
  ++checked;
}

}  // namespace

CATCH_TEST_CASE("type promotion of torch-level calls is LibTorch's, for every pair and triple of operands") {
  const std::vector<tg::PromotionOperand> ops = all_operands();
  int checked = 0;
  for (const auto& a : ops)
    for (const auto& b : ops) {
      if (a.form == Form::number && b.form == Form::number) continue;  // (no tensor: not a call thunder-gen accepts)
      check({a, b}, checked);
      for (const auto& c : ops) check({a, b, c}, checked);
    }
  CATCH_CHECK(checked > 10000);
}
