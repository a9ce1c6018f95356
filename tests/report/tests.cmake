# SPDX-License-Identifier: MIT
# `actrace report` (issue 36, docs/report.md): each case writes a report and
# loads it in headless Chromium (no console message, no request, the numbers
# on the page against `actrace summary --json`); screenshots go to
# build/traces/report_*.png. `ctest -R Report`. Skipped (77) without
# chromium or Chart.js (libjs-chart.js); the torch case needs the cached
# venv (scripts/pyvenv.sh), the kineto case the shared reference trace.
find_program(ACT_PYTHON3 python3)
if(ACT_PYTHON3 AND TARGET actrace_cli AND TARGET actrace_demo)
  set(_act_report_kineto "")
  foreach(_dir "${ACT_SHARED_DIR}" "$ENV{ACT_SHARED_DIR}" "${PROJECT_SOURCE_DIR}/../shared")
    if(_dir AND EXISTS "${_dir}/data/kineto-cpu-ops.json")
      get_filename_component(_act_report_kineto "${_dir}/data/kineto-cpu-ops.json" ABSOLUTE)
      break()
    endif()
  endforeach()
  execute_process(COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/pyvenv.sh --path
                  OUTPUT_VARIABLE _act_report_venv OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  set(_act_cl_demo "")
  if(TARGET actrace_cl_demo)
    set(_act_cl_demo $<TARGET_FILE:actrace_cl_demo>)
  endif()
  foreach(case demo opencl torch kineto ranks harness errors)
    add_test(NAME Report.${case}
             COMMAND ${ACT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_report.py ${case})
    set_tests_properties(Report.${case} PROPERTIES LABELS "unit;report;nosan" TIMEOUT 600
      SKIP_RETURN_CODE 77
      ENVIRONMENT "ACTRACE=$<TARGET_FILE:actrace_cli>;ACT_DEMO=$<TARGET_FILE:actrace_demo>;ACT_PLUGIN_DIR=${PROJECT_BINARY_DIR}/plugins;ACT_CL_DEMO=${_act_cl_demo};ACT_TRACE_DIR=${ACT_TRACE_DIR};ACT_VENV_PY=${_act_report_venv}/bin/python;ACT_KINETO_REF=${_act_report_kineto}")
  endforeach()
endif()
