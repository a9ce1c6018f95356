# SPDX-License-Identifier: MIT
# InstallConsumers: `cmake --install` into a temporary prefix, then programs
# built against it with find_package(actrace) and with pkg-config
# (tests/install/run.cmake). Labelled nosan: the consumers are built without
# the sanitizer flags the library would need them to carry.
find_program(ACT_PKG_CONFIG NAMES pkg-config pkgconf)
if(NOT ACT_PKG_CONFIG)
  set(ACT_PKG_CONFIG "")
endif()
add_test(NAME InstallConsumers
         COMMAND ${CMAKE_COMMAND}
           -DBUILD_DIR=${PROJECT_BINARY_DIR}
           -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
           -DWORK=${PROJECT_BINARY_DIR}/tests/install-work
           -DC_COMPILER=${CMAKE_C_COMPILER}
           -DGENERATOR=${CMAKE_GENERATOR}
           -DVERSION=${PROJECT_VERSION}
           -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
           -DPKG_CONFIG=${ACT_PKG_CONFIG}
           -P ${CMAKE_CURRENT_LIST_DIR}/run.cmake)
set_tests_properties(InstallConsumers PROPERTIES LABELS "install;nosan" TIMEOUT 300)
