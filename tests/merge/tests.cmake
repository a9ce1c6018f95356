# SPDX-License-Identifier: MIT
# Multi-rank traces (issue 19, docs/multi-rank.md): `actrace merge` of
# synthetic rank traces with colliding pids and ids, bad inputs, and
# record's merged and per-process (--per-process DIR) traces of a 2-rank
# launcher running the demo with the example plugin. `ctest -R Merge`.
find_program(ACT_PYTHON3 python3)
if(ACT_PYTHON3 AND TARGET actrace_cli AND TARGET actrace_demo AND TARGET actrace_plugin_example)
  foreach(case basic errors record_merged record_per_process bandwidth)
    add_test(NAME Merge.${case}
             COMMAND ${ACT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_merge.py
                     $<TARGET_FILE:actrace_cli> $<TARGET_FILE:actrace_demo>
                     $<TARGET_FILE:actrace_plugin_example> ${case})
    set_tests_properties(Merge.${case} PROPERTIES LABELS "unit;merge" TIMEOUT 300
      ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR};ACT_HAVE_ZLIB=${ACT_HAVE_ZLIB}")
  endforeach()
  # record preloads libactrace: not under the sanitizers' builds.
  set_tests_properties(Merge.record_merged Merge.record_per_process Merge.bandwidth PROPERTIES LABELS "unit;merge;nosan")
endif()
# HolisticTraceAnalysis reads record --per-process ranks and a merged
# trace (test_hta.py, the cached venv's pytest; run_hta.sh skips with
# ACT_NO_VENV=1 when the venv is absent).
if(TARGET actrace_cli AND TARGET actrace_demo AND TARGET actrace_plugin_example)
  set(_act_cl_demo "")
  if(TARGET actrace_cl_demo)
    set(_act_cl_demo $<TARGET_FILE:actrace_cl_demo>)
  endif()
  add_test(NAME Merge.hta
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_hta.sh ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:actrace_cli> $<TARGET_FILE:actrace_demo>
                   $<TARGET_FILE:actrace_plugin_example> "${_act_cl_demo}")
  set_tests_properties(Merge.hta PROPERTIES LABELS "python;merge;nosan" TIMEOUT 600
    SKIP_RETURN_CODE 77)
  # Every HTA analysis that runs on Kineto's traces runs on a trace of the
  # OpenCL demo with HTA's defaults (test_hta_ns.py: its microsecond rounding;
  # the opencl plugin counts calls under 1 us that launch nothing).
  add_test(NAME Merge.hta_ns
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_hta.sh ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:actrace_cli> $<TARGET_FILE:actrace_demo>
                   $<TARGET_FILE:actrace_plugin_example> "${_act_cl_demo}"
                   tests/merge/test_hta_ns.py)
  set_tests_properties(Merge.hta_ns PROPERTIES LABELS "python;merge;nosan" TIMEOUT 600
    SKIP_RETURN_CODE 77)
endif()
