// What a family's src/ops/<family>.cpp is written with: the declarations' words and row builders
// (op_rows.h), the shape rules' helpers (rule_helpers.h), the prims vocabulary with the lowering
// helpers (lowering_helpers.h), and the rows functions one of which it defines (families.h).
#pragma once
#include "ops/families.h"
#include "ops/lowering_helpers.h"
#include "ops/op_rows.h"
#include "ops/rule_helpers.h"
