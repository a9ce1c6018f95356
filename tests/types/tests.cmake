# SPDX-License-Identifier: MIT
# Activity types (DESIGN.md section 2): `ctest -R ActivityTypes`.
act_add_test(ActivityTypes SOURCES ${PROJECT_SOURCE_DIR}/tests/types/test_activity_types.c
             LIBS Threads::Threads LABELS types tsan)

if(ACT_HAVE_JANSSON)
  # `actrace types [--json]`, run as a command and in-process.
  act_add_test(ActivityTypesCli SOURCES ${PROJECT_SOURCE_DIR}/tests/types/test_types_cli.c
               ${PROJECT_SOURCE_DIR}/tools/actrace/cmd_types.c
               LIBS PkgConfig::JANSSON LABELS types cli)
  target_include_directories(test_ActivityTypesCli PRIVATE
                             ${PROJECT_SOURCE_DIR}/tools/actrace)
  add_dependencies(test_ActivityTypesCli actrace_cli)
endif()

# The deprecated enumerators compile, equal their canonical enumerator and
# draw a deprecation warning, never an error (tests/compile/deprecated*).
set(_act_dep ${PROJECT_SOURCE_DIR}/tests/compile)
add_test(NAME ActivityTypesDeprecatedC
  COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_C_COMPILER}
          "-DFLAGS=-std=c11;-pedantic-errors" -DSRC=${_act_dep}/deprecated.c
          -DINC=${PROJECT_SOURCE_DIR}/include
          -DOUT=${CMAKE_CURRENT_BINARY_DIR}/deprecated_c.o
          -P ${_act_dep}/deprecated_check.cmake)
set_tests_properties(ActivityTypesDeprecatedC PROPERTIES TIMEOUT 60
                     LABELS "unit;types;compile")

include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  foreach(_std 11 17)
    add_test(NAME ActivityTypesDeprecatedCxx${_std}
      COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_CXX_COMPILER}
              "-DFLAGS=-std=c++${_std};-pedantic-errors"
              -DSRC=${_act_dep}/deprecated.cpp
              -DINC=${PROJECT_SOURCE_DIR}/include
              -DOUT=${CMAKE_CURRENT_BINARY_DIR}/deprecated_cxx${_std}.o
              -P ${_act_dep}/deprecated_check.cmake)
    set_tests_properties(ActivityTypesDeprecatedCxx${_std} PROPERTIES
                         TIMEOUT 60 LABELS "unit;types;compile")
  endforeach()
else()
  message(STATUS "actrace: no C++ compiler: ActivityTypesDeprecatedCxx* skipped")
endif()
