#include "frontend/input_file.h"

#include <filesystem>
#include <fstream>

#include "frontend/pt2_program.h"
#include "frontend/reader.h"
#include "support/diagnostics.h"

namespace tg {

bool is_zip_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

// A .pt2 file is read as an archive whatever it holds, so that a broken one is reported as such.
Trace read_input_file(const std::string& path, const SymbolValues& specialize) {
  const bool archive = is_zip_file(path) || std::filesystem::path(path).extension() == ".pt2";
  return archive ? read_pt2_file(path, specialize) : read_trace_file(path, specialize);
}

}  // namespace tg
