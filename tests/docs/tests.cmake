# SPDX-License-Identifier: MIT
# The docs' and the demo's checks (`ctest -L docs`; the doc blocks
# themselves run in DocBlocks, tests/python).
#
# ArchIndex: docs/architecture.md's index names every CLI flag (from the
# built command's --help), config key (src/config/keys.c), environment
# variable and trace field the code has, and nothing it lost
# (scripts/gen-arch-index.py --check; rerun the script without --check to
# regenerate the index).
#
# DemoOutput: `make demo` stays quiet and ends naming the main trace
# (tests/docs/demo_output.sh over scripts/demo.sh; its traces go to the
# build's traces/, as make demo's do).
find_program(ACT_SH sh)
if(ACT_SH AND TARGET actrace_demo)
  add_test(NAME DemoOutput
           COMMAND ${ACT_SH} ${CMAKE_CURRENT_LIST_DIR}/demo_output.sh ${PROJECT_SOURCE_DIR}
                   ${PROJECT_BINARY_DIR})
  set_tests_properties(DemoOutput PROPERTIES LABELS "docs;nosan" TIMEOUT 300 RESOURCE_LOCK actrace_demo_traces)
endif()

find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "actrace: python3 not found: ArchIndex skipped")
  return()
endif()
add_test(NAME ArchIndex
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen-arch-index.py --check
                 --actrace $<TARGET_FILE:actrace_cli>)
set_tests_properties(ArchIndex PROPERTIES LABELS "docs" TIMEOUT 60)
