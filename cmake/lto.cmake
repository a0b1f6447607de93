# collie::collie_lto: the library again, compiled for link-time optimisation.
#
# A small collective passes through a dozen of collie's files (api, group,
# backend, engine, step protocol, tensors), each call a few dozen instructions
# that cross-file inlining removes: 2 ranks, 8 B, 10-15 % fewer instructions per
# call (docs/performance_history.md, "A small call's time is its instructions:
# link-time optimisation"). The programs whose speed per call is the point link
# this copy: the benchmark worker and the Python module. Everything else (the
# tests, the examples, the CLI, and the installed libcollie.a) uses the ordinary
# objects, so no other link pays for LTO and an installed collie carries no
# compiler-specific intermediate code.
# In-tree C++ programs may link collie::collie_lto too (GCC only).
#
# -DCOLLIE_LTO=OFF (the default outside optimised GCC builds) makes
# collie::collie_lto the ordinary library.
set(collie_lto_default OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND
   CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo|MinSizeRel)$")
  set(collie_lto_default ON)
endif()
option(COLLIE_LTO "Build collie::collie_lto with link-time optimisation (GCC)" ${collie_lto_default})
if(COLLIE_LTO AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  message(FATAL_ERROR "COLLIE_LTO needs GCC; configure with -DCOLLIE_LTO=OFF")
endif()

if(NOT COLLIE_LTO)
  add_library(collie::collie_lto ALIAS collie)
  return()
endif()

# The same sources and usage requirements as `collie`: copied when the top
# directory is done, so that sources a later subdirectory adds to `collie` are
# in it too (the targets that link collie::collie_lto name it before it exists,
# which CMake resolves when it generates).
function(collie_define_lto)
  get_target_property(sources collie SOURCES)
  add_library(collie_lto STATIC EXCLUDE_FROM_ALL ${sources})
  add_library(collie::collie_lto ALIAS collie_lto)
  foreach(prop INCLUDE_DIRECTORIES COMPILE_DEFINITIONS COMPILE_OPTIONS LINK_LIBRARIES
               INTERFACE_INCLUDE_DIRECTORIES INTERFACE_COMPILE_DEFINITIONS
               INTERFACE_LINK_LIBRARIES POSITION_INDEPENDENT_CODE)
    get_target_property(value collie ${prop})
    if(value)
      set_property(TARGET collie_lto PROPERTY ${prop} "${value}")
    endif()
  endforeach()
  # A program linking it compiles its own files for LTO too, so collie's calls
  # inline into its loops.
  target_compile_options(collie_lto PUBLIC -flto=auto)
  target_link_options(collie_lto INTERFACE -flto=auto)
endfunction()
cmake_language(DEFER CALL collie_define_lto)  # at the end of the including (top) directory
