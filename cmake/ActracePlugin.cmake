# SPDX-License-Identifier: MIT
# act_add_plugin(): build an actrace plugin (a MODULE library) the way the
# plugin loader expects it. Used by plugins/<name>/CMakeLists.txt in this
# repository and, installed with the CMake package, by out-of-tree vendors:
#
#   find_package(actrace 0.1 REQUIRED)     # brings act_add_plugin()
#   act_add_plugin(myaccel SOURCES myaccel.c LIBS MyRuntime::rt)
#
#   act_add_plugin(<name> SOURCES src.c...
#                  [LIBS targets-or-flags...]     # linked PRIVATE
#                  [INCLUDE_DIRS dirs...] [DEFINITIONS defs...]
#                  [OUTPUT_DIRECTORY dir]         # build tree location
#                  [INSTALL_DIR dir] [NO_INSTALL]
#                  [ALLOW_UNDEFINED])
#
# Naming scheme (docs/building.md): the plugin `<name>` ([a-z][a-z0-9_]*) is
# the CMake target `actrace_plugin_<name>` and the file `<name>.so`. In the
# build tree it goes to ${PROJECT_BINARY_DIR}/plugins/ (where an uninstalled
# actrace looks), and it installs to <libdir>/actrace/plugins/<name>.so.
# The loader resolves a bare name `foo` to `<plugin dir>/foo.so`.
#
# Plugins include only actrace/plugin.h (through the plugin_headers target)
# and talk to the host through its function table, so they do not link
# libactrace; -Wl,--no-undefined catches a plugin that calls act_* directly.
# ALLOW_UNDEFINED drops that check (e.g. for an interposing plugin that
# resolves symbols at run time).
include_guard(GLOBAL)
include(GNUInstallDirs)

function(act_add_plugin name)
  cmake_parse_arguments(P "NO_INSTALL;ALLOW_UNDEFINED"
    "OUTPUT_DIRECTORY;INSTALL_DIR" "SOURCES;LIBS;INCLUDE_DIRS;DEFINITIONS" ${ARGN})
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "act_add_plugin: plugin name '${name}' must match [a-z][a-z0-9_]*")
  endif()
  if(NOT P_SOURCES)
    message(FATAL_ERROR "act_add_plugin(${name}): SOURCES is required")
  endif()
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "act_add_plugin(${name}): unknown arguments: ${P_UNPARSED_ARGUMENTS}")
  endif()

  # In this repository the headers come from the source tree; elsewhere from
  # the installed package.
  if(TARGET actrace_plugin_headers)
    set(headers actrace_plugin_headers)
    set(in_tree ON)
  elseif(TARGET actrace::plugin_headers)
    set(headers actrace::plugin_headers)
    set(in_tree OFF)
  else()
    message(FATAL_ERROR "act_add_plugin: call find_package(actrace) first")
  endif()

  if(NOT P_OUTPUT_DIRECTORY)
    if(in_tree)
      set(P_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/plugins)
    else()
      set(P_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
    endif()
  endif()
  if(NOT P_INSTALL_DIR)
    set(P_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/actrace/plugins)
  endif()

  set(tgt actrace_plugin_${name})
  add_library(${tgt} MODULE ${P_SOURCES})
  set_target_properties(${tgt} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name} SUFFIX ".so"
    C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIRECTORY})
  target_link_libraries(${tgt} PRIVATE ${headers} ${P_LIBS})
  target_compile_definitions(${tgt} PRIVATE _GNU_SOURCE ${P_DEFINITIONS})
  if(P_INCLUDE_DIRS)
    target_include_directories(${tgt} PRIVATE ${P_INCLUDE_DIRS})
  endif()
  if(in_tree AND COMMAND act_warnings)
    act_warnings(${tgt})
  endif()

  # A module compiled with clang's sanitizers leaves the runtime's symbols
  # to the executable, so --no-undefined cannot hold there.
  set(sanitized OFF)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND
     (ACT_SANITIZE OR ACT_FUZZ OR CMAKE_C_FLAGS MATCHES "-fsanitize"))
    set(sanitized ON)
  endif()
  if(NOT P_ALLOW_UNDEFINED AND NOT sanitized AND NOT APPLE)
    target_link_options(${tgt} PRIVATE -Wl,--no-undefined)
  endif()

  if(NOT P_NO_INSTALL)
    install(TARGETS ${tgt} LIBRARY DESTINATION ${P_INSTALL_DIR} COMPONENT plugins)
  endif()
  set_property(GLOBAL APPEND PROPERTY ACT_PLUGINS ${name})
endfunction()
