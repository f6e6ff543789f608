# tg_declared_op_ids(OUT): the id of every declared op with a prims or torch id, read from its
# declaration (src/ops/<family>.def; the files become configure dependencies). A row starts a line
# with TG_<SHAPE>(name, ...: the elementwise families' ids are prims.<name>, the other rows' the
# quoted id after the name.
function(tg_declared_op_ids out)
  file(GLOB declaration_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/ops/*.def)
  set(ids)
  foreach(declarations ${declaration_files})
    file(STRINGS ${declarations} rows REGEX "^TG_[A-Z_]+\\(")
    foreach(row ${rows})
      if(row MATCHES "^TG_(UNARY_FLOAT|UNARY|BINARY_FLOAT|BINARY_EXACT)\\(([a-z0-9_]+),")
        list(APPEND ids prims.${CMAKE_MATCH_2})
      elseif(row MATCHES "^TG_[A-Z_]+\\([a-z0-9_]+, \"((prims|torch)\\.[a-z0-9_.]+)\"")
        list(APPEND ids ${CMAKE_MATCH_1})
      endif()
    endforeach()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${declarations})
  endforeach()
  list(REMOVE_DUPLICATES ids)
  set(${out} ${ids} PARENT_SCOPE)
endfunction()
