# SPDX-License-Identifier: MIT
# The trace tools under hostile and real input (issue 35, part A):
# record's merge of a process named with a byte that is not UTF-8, merge's
# ids and base times, convert's one-ended flows and base time, options
# anywhere. `ctest -R ToolsInput`. The .pftrace checker's rules are in
# tests/perfetto/check_broken.py (PerfettoCheckBroken).
find_program(ACT_PYTHON3 python3)
if(ACT_PYTHON3 AND TARGET actrace_cli)
  foreach(case record_non_utf8_name merge_last_ids merge_far_bases convert_one_ended_flow
               convert_base_overflow options_anywhere)
    add_test(NAME ToolsInput.${case}
             COMMAND ${ACT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_tools_input.py
                     $<TARGET_FILE:actrace_cli> ${case})
    set_tests_properties(ToolsInput.${case} PROPERTIES LABELS "unit;cli" TIMEOUT 300)
  endforeach()
  # record preloads libactrace: not under the sanitizers' builds.
  set_tests_properties(ToolsInput.record_non_utf8_name PROPERTIES LABELS "unit;cli;nosan")
endif()
