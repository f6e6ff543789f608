// An op's call in a stage listing, "(a, [1, 2], dtype=dtypes.f32)": its literals read as the
// printer writes them (src/ops/printer.h), and its arguments bound to the op's signature as Python
// binds them (defaults filled in) and checked as the JSON reader checks them; a kernel's
// arguments are the values it reads; a symbol with no row keeps them as written. Internal to
// frontend/ (the listing reader).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/listing_cursor.h"
#include "ir/trace.h"

namespace tg::listing {

// Every value read so far, by name.
using ValueIds = std::unordered_map<std::string, ValueId>;

// The value the name just read (ending at the cursor) refers to.
ValueId value_named(Cursor& c, const ValueIds& ids, const std::string& name);

class Call {
 public:
  // Arguments name values of `ids`; a process group sets the trace's world size.
  Call(Trace& trace, const ValueIds& ids) : t_(trace), ids_(ids) {}

  // The call at the cursor into op.args and op.kwargs. op.info is its row, or null.
  void read(Cursor& c, Op& op);

 private:
  // An argument as written: by keyword (`keyword` its name) or by position.
  struct Written {
    std::string keyword;
    Arg arg;
  };
  Trace& t_;
  const ValueIds& ids_;

  std::vector<Written> read_call(Cursor& c);
  Arg literal(Cursor& c, int depth);
  Arg named_literal(Cursor& c);
  Arg process_group(Cursor& c);
  void bind(Cursor& c, Op& op, std::vector<Written> args) const;
};

}  // namespace tg::listing
