# SPDX-License-Identifier: MIT
# `actrace record` end to end: `ctest -R CliRecord`.
if(ACT_HAVE_JANSSON)
  act_add_test(CliRecord SOURCES ${PROJECT_SOURCE_DIR}/tests/cli/test_record_cli.c
               LIBS PkgConfig::JANSSON LABELS cli nosan TIMEOUT 180)
  add_dependencies(test_CliRecord actrace_cli actrace_demo)
endif()
add_executable(act_term_self ${PROJECT_SOURCE_DIR}/tests/cli/term_self.c)
target_link_libraries(act_term_self PRIVATE actrace)
act_warnings(act_term_self)
set_target_properties(act_term_self PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
if(TARGET test_CliRecord)
  add_dependencies(test_CliRecord act_term_self)
  if(TARGET actrace_plugin_example)
    add_dependencies(test_CliRecord actrace_plugin_example)
  endif()
endif()
