#include "ir/dtype.h"

namespace tg {
namespace {
struct DTypeRow {
  DType type;
  std::string_view name;
  int bytes;
  std::string_view compute;
  std::string_view storage;
};
constexpr DTypeRow kRows[] = {
    {DType::b8, "b8", 1, "bool", "bool"},
    {DType::u8, "u8", 1, "uint8_t", "uint8_t"},
    {DType::i8, "i8", 1, "int8_t", "int8_t"},
    {DType::i16, "i16", 2, "int16_t", "int16_t"},
    {DType::i32, "i32", 4, "int32_t", "int32_t"},
    {DType::i64, "i64", 8, "int64_t", "int64_t"},
    {DType::f16, "f16", 2, "float", "tg::half"},
    {DType::bf16, "bf16", 2, "float", "tg::bfloat16"},
    {DType::f32, "f32", 4, "float", "float"},
    {DType::f64, "f64", 8, "double", "double"},
};
const DTypeRow& dtype_row(DType t) { return kRows[static_cast<int>(t)]; }
}  // namespace

std::string_view dtype_name(DType t) { return dtype_row(t).name; }
int dtype_bytes(DType t) { return dtype_row(t).bytes; }
std::string_view compute_ctype(DType t) { return dtype_row(t).compute; }
std::string_view storage_ctype(DType t) { return dtype_row(t).storage; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& r : kRows)
    if (r.name == name) return r.type;
  return std::nullopt;
}

bool is_float(DType t) { return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64; }
bool is_bool(DType t) { return t == DType::b8; }
bool is_integer(DType t) { return !is_float(t) && !is_bool(t); }

IntRange integer_range(DType t) {
  switch (t) {
    case DType::u8: return {0, 255};
    case DType::i8: return {-128, 127};
    case DType::i16: return {-32768, 32767};
    case DType::i32: return {INT32_MIN, INT32_MAX};
    case DType::i64: return {INT64_MIN, INT64_MAX};
    default: return {0, 1};
  }
}

}  // namespace tg
