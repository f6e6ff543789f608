# Writes OUT: a C++ file defining tg::FUNCTION() (declared in HEADER), the files of DIR as
# (name, text) pairs.
file(GLOB files RELATIVE ${DIR} ${DIR}/*)
list(SORT files)
set(body "")
foreach(f ${files})
  file(READ ${DIR}/${f} text)
  string(APPEND body "      {\"${f}\", R\"TGTEMPLATE(${text})TGTEMPLATE\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from ${DIR} by cmake/embed_templates.cmake; do not edit.
#include \"${HEADER}\"
namespace tg {
const std::vector<std::pair<std::string_view, std::string_view>>& ${FUNCTION}() {
  static const std::vector<std::pair<std::string_view, std::string_view>> files = {
${body}  };
  return files;
}
}  // namespace tg
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
