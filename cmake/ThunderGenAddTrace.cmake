# thunder_gen_add_trace(): a trace as a static library, generated at build time.
#
#   thunder_gen_add_trace(<target> TRACE <trace.json>
#                         [TAGS <overrides.json>] [TAG <selector>=<policy> ...]
#                         [MODE emu|nvcc|nvrtc] [CUDA_ARCH <architectures>]
#                         [OPTIONS <thunder-gen argument> ...] [NAME <trace name>])
#
# Defines the static library <target>, whose public include folder holds <name>.h, <name> being
# the trace's "name": link it and #include "<name>.h". thunder-gen writes the output folder
# ${CMAKE_CURRENT_BINARY_DIR}/thunder-gen/<target>/ when the project is built, and again whenever
# the trace, the TAGS file or the thunder-gen executable changes. Relative TRACE and TAGS paths
# are relative to the current source folder. TAG and TAGS are thunder-gen's --tag and --tags
# (rematerialization policies); OPTIONS are more of its arguments (--activation-budget N,
# --no-pack-bool). MODE (default emu) and CUDA_ARCH (nvcc mode; default 90) are the output
# folder's own CMakeLists.txt's TG_MODE and CMAKE_CUDA_ARCHITECTURES; MODE nvcc needs the CUDA
# language enabled first. The property THUNDER_GEN_OUTPUT_DIR of <target> names the folder (its
# manifest.json describes the entry points' arguments; nvrtc mode reads kernels.cu from it at run
# time). Call find_package(ThunderGen) in the same folder or one above it.
#
# Two things about the output are known only from the trace, and a build needs both when CMake
# configures: which files thunder-gen writes (backward.cu only when an input requires grad), and
# the header's name. So
# - the library is built from two files written here, at configure time, in
#   ${CMAKE_CURRENT_BINARY_DIR}/thunder-gen/<target>.sources/: forward.cu, which #includes the
#   folder's forward.cu, and backward.cu, which #includes its backward.cu when there is one
#   (__has_include) and is empty otherwise. The generation's declared outputs are files every
#   folder has, and every generation recompiles both wrappers, so a trace that gains or loses its
#   backward builds without a new configure;
# - the trace's name is read from the trace here (NAME gives it where the trace is itself made
#   by the build), and the trace is a configure dependency, so a renamed trace reconfigures. The
#   header is a declared output: Ninja then knows a generation may change it, and recompiles the
#   files including it in the same build.

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  # After a generation: cmake -DTRACE=... -DFOLDER=... -DNAME=... -DINCLUDE=... -P ThunderGenAddTrace.cmake
  # copies FOLDER/include/NAME.h into INCLUDE, the library's public include folder, where it
  # keeps its time stamp while its text stays the same (so what includes it is not recompiled).
  if(NOT EXISTS "${FOLDER}/include/${NAME}.h")
    message(FATAL_ERROR "${TRACE}: thunder-gen wrote no include/${NAME}.h: the trace is not named ${NAME} (correct NAME, or re-run cmake)")
  endif()
  file(GLOB others "${INCLUDE}/*")
  list(REMOVE_ITEM others "${INCLUDE}/${NAME}.h")
  if(others)
    file(REMOVE ${others})  # (a header of the trace's name before)
  endif()
  file(COPY_FILE "${FOLDER}/include/${NAME}.h" "${INCLUDE}/${NAME}.h" ONLY_IF_DIFFERENT)
  return()
endif()

include("${CMAKE_CURRENT_LIST_DIR}/tg_library.cmake")
set_property(GLOBAL PROPERTY THUNDER_GEN_ADD_TRACE_FILE "${CMAKE_CURRENT_LIST_FILE}")

function(thunder_gen_add_trace target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TRACE;TAGS;MODE;CUDA_ARCH;NAME" "TAG;OPTIONS")
  set(call "thunder_gen_add_trace(${target})")
  _thunder_gen_check_arguments()
  if(NOT arg_MODE)
    set(arg_MODE emu)
  endif()
  if(NOT arg_CUDA_ARCH)
    set(arg_CUDA_ARCH 90)
  endif()
  _thunder_gen_input_file(TRACE)
  _thunder_gen_input_file(TAGS)
  if(NOT arg_NAME)
    _thunder_gen_trace_name()
  endif()
  set(folder "${CMAKE_CURRENT_BINARY_DIR}/thunder-gen/${target}")
  if(folder MATCHES "[\"\\\n]")
    message(FATAL_ERROR "${call}: the build folder ${CMAKE_CURRENT_BINARY_DIR} has a quote, backslash or newline in its path, which an #include cannot name")
  endif()

  # Files every output folder has, and the header; thunder-gen replaces the whole folder, so a
  # generation rewrites each.
  set(outputs "${folder}/manifest.json" "${folder}/forward.cu" "${folder}/kernels.cu")
  if(arg_NAME)
    list(APPEND outputs "${folder}.include/${arg_NAME}.h")
  endif()
  _thunder_gen_generation("${outputs}")
  set(wrappers "${folder}.sources/forward.cu" "${folder}.sources/backward.cu")
  file(CONFIGURE OUTPUT "${folder}.sources/forward.cu" CONTENT
       "// Written by ${call}: the forward, from the folder thunder-gen writes at build time.\n#include \"${folder}/forward.cu\"\n")
  file(CONFIGURE OUTPUT "${folder}.sources/backward.cu" CONTENT
       "// Written by ${call}: the backward, when the trace has one (some input requires grad).\n#if __has_include(\"${folder}/backward.cu\")\n#include \"${folder}/backward.cu\"\n#endif\n")

  file(MAKE_DIRECTORY "${folder}.include")  # (an include folder must exist when CMake generates)
  thunder_gen_library(${target} MODE ${arg_MODE} DIR "${folder}" INCLUDE_DIR "${folder}.include" SOURCES ${wrappers} CUDA_ARCH ${arg_CUDA_ARCH})
  # The generation belongs to the library (a custom command runs for a target it is a source of),
  # and each run recompiles both wrappers: what they include may have appeared or gone.
  target_sources(${target} PRIVATE ${outputs})
  set_source_files_properties(${outputs} PROPERTIES HEADER_FILE_ONLY ON)
  set_source_files_properties(${wrappers} PROPERTIES OBJECT_DEPENDS "${folder}/manifest.json")
  set_target_properties(${target} PROPERTIES THUNDER_GEN_OUTPUT_DIR "${folder}")
endfunction()

# The rule running thunder-gen (arg_*, call, folder: the caller's).
function(_thunder_gen_generation outputs)
  set(arguments "${arg_TRACE}" -o "${folder}")
  if(arg_TAGS)
    list(APPEND arguments "--tags=${arg_TAGS}")
  endif()
  foreach(tag IN LISTS arg_TAG)
    list(APPEND arguments "--tag=${tag}")
  endforeach()
  list(APPEND arguments ${arg_OPTIONS})
  set(copy_header)
  if(arg_NAME)
    get_property(script GLOBAL PROPERTY THUNDER_GEN_ADD_TRACE_FILE)
    set(copy_header COMMAND ${CMAKE_COMMAND} "-DTRACE=${arg_TRACE}" "-DFOLDER=${folder}" "-DNAME=${arg_NAME}" "-DINCLUDE=${folder}.include" -P "${script}")
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ThunderGen::thunder-gen ${arguments}
    ${copy_header}
    DEPENDS "${arg_TRACE}" ${arg_TAGS} "$<TARGET_FILE:ThunderGen::thunder-gen>"
    COMMENT "thunder-gen: generating ${target} from ${arg_TRACE}"
    VERBATIM)
endfunction()

# arg_<kind> made absolute (relative to the current source folder); it must exist unless a rule
# of this folder makes it.
function(_thunder_gen_input_file kind)
  if(NOT arg_${kind})
    return()
  endif()
  cmake_path(ABSOLUTE_PATH arg_${kind} BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
  get_source_file_property(made_by_a_rule "${arg_${kind}}" GENERATED)
  if(NOT EXISTS "${arg_${kind}}" AND NOT made_by_a_rule)
    message(FATAL_ERROR "${call}: ${kind} ${arg_${kind}}: no such file")
  endif()
  set(arg_${kind} "${arg_${kind}}" PARENT_SCOPE)
endfunction()

# arg_NAME: the trace's "name", read now; the trace becomes a configure dependency. A trace that
# is not JSON with a name gets no header output: thunder-gen names its fault when the project builds.
function(_thunder_gen_trace_name)
  if(NOT EXISTS "${arg_TRACE}")
    message(FATAL_ERROR "${call}: TRACE ${arg_TRACE} is made by the build, so its name cannot be read now: give it as NAME <trace name>")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${arg_TRACE}")
  file(READ "${arg_TRACE}" json)
  string(JSON name ERROR_VARIABLE error GET "${json}" name)
  if(error OR NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    set(name "")
  endif()
  set(arg_NAME "${name}" PARENT_SCOPE)
endfunction()

# Refuses what thunder_gen_add_trace() cannot use, naming it (arg_*, call: the caller's).
function(_thunder_gen_check_arguments)
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${call}: unexpected arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${call}: ${arg_KEYWORDS_MISSING_VALUES} needs a value")
  endif()
  if(NOT arg_TRACE)
    message(FATAL_ERROR "${call}: TRACE <trace.json> is required")
  endif()
  if(arg_MODE AND NOT arg_MODE MATCHES "^(emu|nvcc|nvrtc)$")
    message(FATAL_ERROR "${call}: MODE must be emu, nvcc or nvrtc, not \"${arg_MODE}\"")
  endif()
  foreach(tag IN LISTS arg_TAG)
    if(NOT tag MATCHES "^[^=]+=[^=]+$")
      message(FATAL_ERROR "${call}: TAG \"${tag}\" is not <selector>=<policy> (such as torch.nn.functional.dropout=save or @t3=recompute)")
    endif()
  endforeach()
  # CUDA_ARCHITECTURES entries: 90, 90a, 90-real, 80-virtual, native, all, all-major.
  foreach(arch IN LISTS arg_CUDA_ARCH)
    if(NOT arch MATCHES "^([0-9]+[af]?(-real|-virtual)?|native|all|all-major)$")
      message(FATAL_ERROR "${call}: CUDA_ARCH \"${arch}\" is not a CUDA architecture (90, 90a, 90-real, native, ...)")
    endif()
  endforeach()
  if(arg_NAME AND NOT arg_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${call}: NAME \"${arg_NAME}\" is not a trace name (an identifier)")
  endif()
  if(TARGET ${target})
    message(FATAL_ERROR "${call}: a target named ${target} exists already")
  endif()
  if(NOT TARGET ThunderGen::thunder-gen)
    message(FATAL_ERROR "${call}: no ThunderGen::thunder-gen here: call find_package(ThunderGen) in this folder or one above it")
  endif()
endfunction()
