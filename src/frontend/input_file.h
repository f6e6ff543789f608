// What thunder-gen reads: a trace (JSON, docs/trace-format.md) or a PT2 archive that
// torch.export.save wrote (docs/pt2.md), told apart by the file's first bytes.
#pragma once
#include <string>

#include "ir/trace.h"

namespace tg {

// Whether `path` starts as a zip does ("PK\3\4"): a PT2 archive rather than a trace.
bool is_zip_file(const std::string& path);
// The file read into a verified Trace, whichever of the two it is, its symbolic sizes (if any)
// specialised as `specialize` says.
Trace read_input_file(const std::string& path, const SymbolValues& specialize = {});

}  // namespace tg
