// What thunder-gen reads: a trace (JSON, docs/trace-format.md) or a PT2 archive that
// torch.export.save wrote (docs/pt2.md), told apart by the file's first bytes.
#pragma once
#include <string>

#include "ir/trace.h"
#include "support/diagnostics.h"

namespace tg {

// A symbolic trace read without --specialize: the error reading reports when the caller cannot
// generate code that takes the sizes at run time, and the symbols it needs to choose them.
struct SizesNotGiven : UserError {
  Symbols symbols;
  SizesNotGiven(std::string where, const std::string& message, Symbols symbols_)
      : UserError(std::move(where), message), symbols(std::move(symbols_)) {}
};

// Whether `path` starts as a zip does ("PK\3\4"): a PT2 archive rather than a trace.
bool is_zip_file(const std::string& path);
// The file read into a verified Trace, whichever of the two it is, its symbolic sizes (if any)
// specialised as `specialize` says.
Trace read_input_file(const std::string& path, const SymbolValues& specialize = {});

}  // namespace tg
