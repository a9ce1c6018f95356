# SPDX-License-Identifier: MIT
# PluginExampleOutOfTree: build plugins/example the way a vendor would,
# against an installed actrace (cmake --install into a scratch prefix):
# with find_package(actrace) + act_add_plugin(), and with pkg-config + make.
# Each result must load and produce the expected trace (test_PluginExample
# run on the built file).
#
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK=... -DGENERATOR=...
#       -DLIBDIR=lib -DEXAMPLE_TEST=<test_PluginExample> [-DPKG_CONFIG=...]
#       [-DMAKE=...] -P out_of_tree.cmake
cmake_minimum_required(VERSION 3.25)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAIL: ${what} (exit ${rc})\n  command: ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "ok: ${what}")
endfunction()

set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
run("cmake --install into ${prefix}"
    ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# 1. CMake, as in docs/plugin-guide.md.
run("configure plugins/example out of tree"
    ${CMAKE_COMMAND} -S ${SOURCE_DIR}/plugins/example -B ${WORK}/cmake
    -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix})
run("build plugins/example out of tree" ${CMAKE_COMMAND} --build ${WORK}/cmake)
run("load the CMake-built example.so"
    ${EXAMPLE_TEST} ${WORK}/cmake/plugins/example.so)

# 2. pkg-config and make only.
if(PKG_CONFIG AND MAKE)
  file(MAKE_DIRECTORY ${WORK}/make)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
  set(ENV{PKG_CONFIG} ${PKG_CONFIG})
  run("make -C plugins/example (pkg-config)"
      ${MAKE} -C ${SOURCE_DIR}/plugins/example OUT=${WORK}/make/example.so)
  run("load the make-built example.so"
      ${EXAMPLE_TEST} ${WORK}/make/example.so)
else()
  message(STATUS "pkg-config or make not found: the make build is not tried")
endif()
