// Element types of trace values, with Thunder's short names (f32, bf16, b8, ...).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace tg {

enum class DType : uint8_t { b8, u8, i8, i16, i32, i64, f16, bf16, f32, f64 };

inline constexpr DType kAllDTypes[] = {DType::b8,  DType::u8,  DType::i8,   DType::i16, DType::i32,
                                       DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64};

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
int dtype_bytes(DType t);
bool is_float(DType t);
bool is_bool(DType t);
// Integer types, not counting bool.
bool is_integer(DType t);
// The values an integer type holds.
struct IntRange {
  int64_t min, max;
};
IntRange integer_range(DType t);
// The C++ type a kernel computes in: 16-bit floats compute in float, one rounding per output.
std::string_view compute_ctype(DType t);
// The C++ type a tensor of this dtype is stored as (tg::half / tg::bfloat16 for 16-bit floats).
std::string_view storage_ctype(DType t);

}  // namespace tg
