// `thunder-gen list-ops`: the op table, as text for people or (--json) as JSON for the Python
// tools. Both return the exit code.
#pragma once

namespace tg {

int list_ops();
int list_ops_json();

}  // namespace tg
