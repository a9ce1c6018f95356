# SPDX-License-Identifier: MIT
# InstallConsumers: install the build into a temporary prefix, then build and
# run small programs against it, both ways users do:
#   1. find_package(actrace) (consumer/CMakeLists.txt): shared and static
#      library, and a plugin built with the installed act_add_plugin();
#   2. pkg-config --cflags --libs actrace (shared; and --static with the
#      static library), plus the plugindir variable and actrace-plugin.pc;
# and check the installed `actrace` command runs from the prefix (RPATH).
#
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK=... -DC_COMPILER=...
#       -DGENERATOR=... -DVERSION=... -DLIBDIR=lib [-DPKG_CONFIG=...] -P run.cmake
cmake_minimum_required(VERSION 3.25)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAIL: ${what} (exit ${rc})\n  command: ${ARGN}\n${out}\n${err}")
  endif()
  set(RUN_OUT "${out}" PARENT_SCOPE)
  message(STATUS "ok: ${what}")
endfunction()

function(expect_file path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "FAIL: not installed: ${path}")
  endif()
endfunction()

set(prefix ${WORK}/prefix)
set(libdir ${prefix}/${LIBDIR})
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

run("cmake --install into ${prefix}"
    ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
string(REGEX MATCH "^[0-9]+" major "${VERSION}")
foreach(f bin/actrace include/actrace/actrace.h include/actrace/version.h
          ${LIBDIR}/libactrace.so ${LIBDIR}/libactrace.so.${major}
          ${LIBDIR}/libactrace.a ${LIBDIR}/pkgconfig/actrace.pc
          ${LIBDIR}/pkgconfig/actrace-plugin.pc
          ${LIBDIR}/cmake/actrace/actraceConfig.cmake
          ${LIBDIR}/cmake/actrace/actraceConfigVersion.cmake
          ${LIBDIR}/cmake/actrace/ActracePlugin.cmake
          ${LIBDIR}/actrace/plugins)
  expect_file(${prefix}/${f})
endforeach()

# The installed command finds its library through its RPATH.
run("installed actrace runs" ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH
    ${prefix}/bin/actrace version)
if(NOT RUN_OUT MATCHES "${VERSION}")
  message(FATAL_ERROR "FAIL: 'actrace version' printed '${RUN_OUT}', expected ${VERSION}")
endif()

# ---- 1. find_package ---------------------------------------------------------
set(cbuild ${WORK}/consumer-build)
run("configure consumer with find_package(actrace)"
    ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${cbuild}
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    -DEXPECT_PLUGIN_DIR=${libdir}/actrace/plugins)
run("build consumer" ${CMAKE_COMMAND} --build ${cbuild})
run("run consumer_shared" ${cbuild}/consumer_shared)
run("run consumer_static" ${cbuild}/consumer_static)
expect_file(${cbuild}/plugins/vendor_demo.so)
run("install consumer plugin" ${CMAKE_COMMAND} --install ${cbuild} --prefix ${WORK}/vendor)
expect_file(${WORK}/vendor/${LIBDIR}/actrace/plugins/vendor_demo.so)

# ---- 2. pkg-config -------------------------------------------------------------
if(NOT PKG_CONFIG)
  message(STATUS "pkg-config not found: pkg-config half skipped")
  return()
endif()
set(pc ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${libdir}/pkgconfig ${PKG_CONFIG})
run("pkg-config --cflags --libs actrace" ${pc} --cflags --libs actrace)
string(STRIP "${RUN_OUT}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("cc with pkg-config flags" ${C_COMPILER} -std=c11
    ${SOURCE_DIR}/tests/install/consumer/main.c ${flags} -o ${WORK}/pc_shared)
run("run pc_shared" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK}/pc_shared)

run("pkg-config --static --libs actrace" ${pc} --static --libs actrace)
string(STRIP "${RUN_OUT}" slibs)
string(REPLACE "-lactrace" "-l:libactrace.a" slibs "${slibs}")
separate_arguments(slibs UNIX_COMMAND "${slibs}")
run("pkg-config --cflags actrace" ${pc} --cflags actrace)
string(STRIP "${RUN_OUT}" cflags)
separate_arguments(cflags UNIX_COMMAND "${cflags}")
run("cc static with pkg-config --static flags" ${C_COMPILER} -std=c11
    ${SOURCE_DIR}/tests/install/consumer/main.c ${cflags} ${slibs} -o ${WORK}/pc_static)
run("run pc_static" ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${WORK}/pc_static)

foreach(mod actrace actrace-plugin)
  run("pkg-config --variable=plugindir ${mod}" ${pc} --variable=plugindir ${mod})
  string(STRIP "${RUN_OUT}" dir)
  if(NOT dir STREQUAL "${libdir}/actrace/plugins")
    message(FATAL_ERROR "FAIL: ${mod}.pc plugindir is '${dir}', expected '${libdir}/actrace/plugins'")
  endif()
endforeach()
run("pkg-config --cflags actrace-plugin" ${pc} --cflags actrace-plugin)
if(NOT RUN_OUT MATCHES "-I${prefix}/include")
  message(FATAL_ERROR "FAIL: actrace-plugin cflags '${RUN_OUT}' lack -I${prefix}/include")
endif()
run("pkg-config --modversion actrace" ${pc} --modversion actrace)
string(STRIP "${RUN_OUT}" v)
if(NOT v STREQUAL VERSION)
  message(FATAL_ERROR "FAIL: actrace.pc version '${v}', expected '${VERSION}'")
endif()
message(STATUS "InstallConsumers: all checks passed")
