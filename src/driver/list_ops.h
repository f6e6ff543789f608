// `thunder-gen list-ops`: the op table, as text for people or (--json) as JSON for the Python
// tools. Both return the exit code.
#pragma once

namespace tg {

int list_ops();
int list_ops_json();
// --aten: the ATen ops a PT2 archive may use that thunder-gen translates, against Core ATen.
int list_aten_ops(bool as_json);

}  // namespace tg
