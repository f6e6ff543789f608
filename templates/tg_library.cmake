# tg_library.cmake: how a thunder-gen output folder's code is built, in each of the three modes.
# One file for both ways of building it: thunder-gen writes it into every output folder (whose
# CMakeLists.txt includes it), and the ThunderGen CMake package installs it beside
# ThunderGenConfig.cmake (its thunder_gen_add_trace() calls thunder_gen_library()).
#
#   thunder_gen_library(<target> MODE emu|nvcc|nvrtc DIR <output folder> SOURCES <file>...
#                       [INCLUDE_DIR <folder>] [CUDA_ARCH <architectures>] [NCCL])
# The static library <target>: SOURCES are the folder's forward.cu and backward.cu (or files
# that #include them). Its interface is <trace>.h, in INCLUDE_DIR (default DIR/include): plain C,
# needing no include path of CUDA's, Boost's or the runtime's; what the runtime needs is linked,
# not included, by consumers.
#   emu    g++ only: the .cu files compiled as C++, kernels run on the CPU (Boost.Context fibers)
#   nvcc   the CUDA language (enable it first: it must be enabled at file scope, not in a
#          function); CUDA_ARCH sets CUDA_ARCHITECTURES, else CMAKE_CUDA_ARCHITECTURES applies
#   nvrtc  g++ host code; the kernels are compiled by NVRTC at run time from DIR/kernels.cu
# NCCL: a distributed trace's library, whose collectives link libnccl in the GPU modes (found
# beside the CUDA Toolkit's libraries, or with the usual CMAKE_PREFIX_PATH / CMAKE_LIBRARY_PATH).
#
#   thunder_gen_harness(<target> LIBRARY <library> SOURCE <harness.cpp>)
# The folder's harness program, linked with <library> and built for the library's mode.

function(thunder_gen_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NCCL" "MODE;DIR;INCLUDE_DIR;CUDA_ARCH" "SOURCES")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_DIR OR NOT arg_SOURCES)
    message(FATAL_ERROR "thunder_gen_library(${target}): usage: thunder_gen_library(<target> MODE emu|nvcc|nvrtc DIR <folder> SOURCES <file>... [INCLUDE_DIR <folder>] [CUDA_ARCH <n>])")
  endif()
  if(NOT arg_INCLUDE_DIR)
    set(arg_INCLUDE_DIR "${arg_DIR}/include")
  endif()
  _thunder_gen_runtime(${arg_MODE} runtime_libraries host_definitions "thunder_gen_library(${target})")
  if(arg_MODE STREQUAL "nvcc")
    add_library(${target} STATIC ${arg_SOURCES})
    # C++17 for nvcc: unset, CUDA_STANDARD would follow CXX_STANDARD (20 in the folder's CMakeLists.txt).
    set_target_properties(${target} PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
    if(arg_CUDA_ARCH)
      set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${arg_CUDA_ARCH}")
    endif()
  else()
    # g++ compiles the .cu files as C++: the runtime headers stand in for CUDA (tg_emu.h, tg_host.h).
    set_source_files_properties(${arg_SOURCES} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
    add_library(${target} STATIC ${arg_SOURCES})
  endif()
  if(arg_MODE STREQUAL "nvrtc")
    # The kernels are read from the folder at run time (the cubin too, when compiled ahead).
    target_compile_definitions(${target} PRIVATE ${host_definitions} TG_NVRTC_HOST "TG_KERNEL_DIR=\"${arg_DIR}\"")
  endif()
  target_compile_features(${target} PRIVATE cxx_std_20)
  # PRIVATE: a static library's link dependencies still reach whoever links it ($<LINK_ONLY:>).
  target_link_libraries(${target} PRIVATE ${runtime_libraries})
  if(arg_NCCL AND NOT arg_MODE STREQUAL "emu")
    find_package(CUDAToolkit REQUIRED)  # (its variables, in this function's scope)
    find_library(TG_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64 REQUIRED)
    find_path(TG_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)
    target_link_libraries(${target} PRIVATE ${TG_NCCL_LIBRARY})
    target_include_directories(${target} PRIVATE ${TG_NCCL_INCLUDE_DIR})
  endif()
  # The header is the interface; the runtime headers beside the sources are the library's own.
  target_include_directories(${target} PUBLIC "${arg_INCLUDE_DIR}" PRIVATE "${arg_DIR}")
  # Kernels reinterpret storage (bf16 bits, vector loads) the way CUDA allows.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-strict-aliasing>)
  # (linkable into shared objects too)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON THUNDER_GEN_MODE ${arg_MODE})
endfunction()

function(thunder_gen_harness target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "LIBRARY;SOURCE" "")
  get_target_property(mode ${arg_LIBRARY} THUNDER_GEN_MODE)
  _thunder_gen_runtime(${mode} runtime_libraries host_definitions "thunder_gen_harness(${target})")
  get_filename_component(dir "${arg_SOURCE}" DIRECTORY)
  add_executable(${target} "${arg_SOURCE}")
  target_include_directories(${target} PRIVATE "${dir}")
  target_compile_definitions(${target} PRIVATE ${host_definitions})
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_compile_options(${target} PRIVATE -fno-strict-aliasing)
  target_link_libraries(${target} PRIVATE ${arg_LIBRARY} ${runtime_libraries})
endfunction()

# What MODE links, and defines in host code; `caller` names the call in a refusal.
function(_thunder_gen_runtime mode libraries_var definitions_var caller)
  if(mode STREQUAL "emu")
    find_package(Boost REQUIRED COMPONENTS context)
    find_package(Threads REQUIRED)
    set(libraries Boost::context Threads::Threads)
    set(definitions "")
  elseif(mode STREQUAL "nvcc" OR mode STREQUAL "nvrtc")
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(mode STREQUAL "nvcc" AND NOT "CUDA" IN_LIST languages)
      message(FATAL_ERROR "${caller}: MODE nvcc needs the CUDA language: enable_language(CUDA), or LANGUAGES CXX CUDA in project(), before this call")
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(libraries CUDA::cudart CUDA::cublasLt)
    if(mode STREQUAL "nvrtc")
      list(APPEND libraries CUDA::nvrtc CUDA::cuda_driver)
    endif()
    set(definitions TG_GPU)
  else()
    message(FATAL_ERROR "${caller}: MODE must be emu, nvcc or nvrtc, not \"${mode}\"")
  endif()
  set(${libraries_var} ${libraries} PARENT_SCOPE)
  set(${definitions_var} ${definitions} PARENT_SCOPE)
endfunction()
