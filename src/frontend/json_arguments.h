// An op's arguments as the JSON reader reads them from its "args" and "kwargs": bound to the op's
// signature the way Python binds them (defaults filled in), each checked against its parameter's
// kind; literals ({"dtype": "f32"}, {"slice": [...]}, {"process_group": {...}}) read; an op with
// no row keeps them as written. Internal to frontend/ (the JSON reader).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "frontend/json_element.h"
#include "frontend/json_names.h"
#include "frontend/reader.h"
#include "ir/trace.h"
#include "ops/op_table.h"

namespace tg::json {

// Devices generated code runs on: "cuda" or "cuda:N".
void check_device(std::string_view device, const std::string& where);
// Generated code runs on one device: the trace's ("cuda" is "cuda:0").
void check_same_device(const Trace& trace, std::string_view device, const std::string& where);

class Arguments {
 public:
  // Arguments name values through `names`; process groups set the trace's world size. In a
  // symbolic trace, an integer is a constant or a size alone as `integers` says (reader.h).
  Arguments(Trace& trace, const Names& names, PlainIntegers integers) : t_(trace), names_(names), integers_(integers) {}

  // The arguments of the op `op_json` (at `at`, spelled `where`) into op.args and op.kwargs
  // (op.arg_where for those given by keyword). op.info is its row, or null.
  void read(Object op_json, const Path& at, const std::string& where, Op& op);

 private:
  // An argument as given: where it is (spelled only for a message), and its element.
  struct Given {
    Path where;
    Json json;
    bool keyword = false;
  };
  Trace& t_;
  const Names& names_;
  const PlainIntegers integers_;

  void bind(Op& op, const std::vector<Given>& positional, const std::vector<Given>& keyword, const std::vector<std::string>& keyword_names,
            const std::string& where);
  std::string describe(const Arg& a, Json j) const;
  Arg typed_arg(Json j, const Param& param, const Path& where);
  Arg literal_or_ref(Json j, const Path& where, int depth);
  Arg typed_literal(Object j, const Path& where);
  Arg integer_literal(int64_t value) const;
  Arg process_group_literal(Json j, const std::string& where);
  Arg slice_literal(Json j, const std::string& where);
};

}  // namespace tg::json
