#include "driver/list_ops.h"

#include <iostream>

#include "ops/op_listing.h"

namespace tg {

// The op table as src/ops/op_listing.h writes it: readable, or as JSON for the Python tools.
int list_ops_json() {
  std::cout << op_table_json();
  return 0;
}

int list_ops() {
  std::cout << op_table_text();
  return 0;
}

}  // namespace tg
