#include "frontend/input_file.h"

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

Trace read_input_file(const std::string& path) { return is_zip_file(path) ? read_pt2_file(path) : read_trace_file(path); }

}  // namespace tg
