# SPDX-License-Identifier: MIT
# ArchIndex: docs/architecture.md's index names every CLI flag (from the
# built command's --help), config key (src/config/keys.c), environment
# variable and trace field the code has, and nothing it lost
# (scripts/gen-arch-index.py --check; rerun the script without --check to
# regenerate the index). The doc blocks themselves run in DocBlocks
# (tests/python).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "actrace: python3 not found: ArchIndex skipped")
  return()
endif()
add_test(NAME ArchIndex
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen-arch-index.py --check
                 --actrace $<TARGET_FILE:actrace_cli>)
set_tests_properties(ArchIndex PROPERTIES LABELS "docs" TIMEOUT 60)
