# SPDX-License-Identifier: MIT
# The opencl backend (plugins/opencl): `ctest -R Opencl`.
#  - OpenclRecord: `actrace record --plugin opencl -- actrace-cl-demo`,
#    output identical to an untraced run, every kernel/copy/fill in the
#    trace with names, bytes and flows, times inside the host window;
#  - OpenclRecordDlopen: the same for the variant that loads libOpenCL
#    with dlopen/dlsym;
#  - OpenclExtension: a library user's session, then extension functions
#    (command buffers) from clGetExtensionFunctionAddressForPlatform, traced,
#    and an out-of-order queue in a second context with program events;
#  - OpenclLate: a library user that initialised OpenCL before its session:
#    the plugin says so once (log, actraceStats warnings, trace) and the
#    program goes on untraced;
#  - OpenclAnswers: what OpenCL answers a program (queue and event
#    reference counts, queue properties, profiling info on queues that did
#    not ask for it) is the same traced as untraced, and more than 4096
#    queues created and released are all traced (test_opencl_answers.c);
#  - OpenclStopWindow: device work harvested by the program between the
#    plugin's stop and its flush is in the trace (hook.so runs clFinish
#    there);
#  - OpenclLanes: commands of an out-of-order queue that overlap (a test
#    layer below the plugin's makes them) go to lane tracks whose spans
#    nest (test_opencl_answers.c --lanes, overlap_layer.c);
#  - OpenclSameStart: commands that start at once (zero-length copies of
#    CL_MEM_USE_HOST_PTR buffers) each keep the flow from their own launch;
#  - OpenclMemcheck: the example under valgrind, with and without tracing
#    (labelled memcheck and nosan: skipped in sanitizer and minimal builds).
# Without an OpenCL platform they skip (77).
if(ACT_BUILD_PLUGINS AND TARGET actrace_plugin_opencl AND TARGET actrace_cl_demo
   AND ACT_HAVE_JANSSON)
  act_add_test(OpenclRecord SOURCES ${PROJECT_SOURCE_DIR}/tests/opencl/test_opencl_record.c
               LIBS PkgConfig::JANSSON OpenCL::OpenCL LABELS plugin opencl cli nosan TIMEOUT 300
               ARGS actrace-cl-demo)
  add_dependencies(test_OpenclRecord actrace_plugin_opencl actrace_cli
                   actrace_cl_demo actrace_cl_demo_dlopen)
  add_test(NAME OpenclRecordDlopen COMMAND test_OpenclRecord actrace-cl-demo-dlopen)
  set_tests_properties(OpenclRecordDlopen PROPERTIES TIMEOUT 300
    LABELS "unit;plugin;opencl;cli;nosan" SKIP_RETURN_CODE 77
    ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")
  # Under valgrind: slow (pocl under memcheck), out of sanitizer builds.
  if(NOT ACT_SANITIZE)
    add_test(NAME OpenclMemcheck COMMAND test_OpenclRecord --memcheck actrace-cl-demo)
    set_tests_properties(OpenclMemcheck PROPERTIES TIMEOUT 900
      LABELS "unit;plugin;opencl;memcheck;nosan" SKIP_RETURN_CODE 77
      ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")
  endif()
  add_test(NAME OpenclExtension COMMAND test_OpenclRecord --ext)
  set_tests_properties(OpenclExtension PROPERTIES TIMEOUT 120
    LABELS "unit;plugin;opencl;nosan" SKIP_RETURN_CODE 77
    ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")
  act_add_test(OpenclAnswers SOURCES ${PROJECT_SOURCE_DIR}/tests/opencl/test_opencl_answers.c
               LIBS PkgConfig::JANSSON OpenCL::OpenCL ${CMAKE_DL_LIBS}
               LABELS plugin opencl cli nosan TIMEOUT 300 ARGS --answers)
  add_dependencies(test_OpenclAnswers actrace_plugin_opencl actrace_cli act_tp_hook)
  add_test(NAME OpenclStopWindow COMMAND test_OpenclAnswers --stop-window)
  set_tests_properties(OpenclStopWindow PROPERTIES TIMEOUT 120
    LABELS "unit;plugin;opencl;nosan" SKIP_RETURN_CODE 77
    ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")
  add_library(act_overlap_layer MODULE ${PROJECT_SOURCE_DIR}/tests/opencl/overlap_layer.c)
  set_target_properties(act_overlap_layer PROPERTIES PREFIX "" OUTPUT_NAME overlap_layer
    C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/opencl)
  target_include_directories(act_overlap_layer PRIVATE ${OpenCL_INCLUDE_DIRS})
  add_dependencies(test_OpenclAnswers act_overlap_layer)
  add_test(NAME OpenclLanes COMMAND test_OpenclAnswers --lanes)
  set_tests_properties(OpenclLanes PROPERTIES TIMEOUT 120
    LABELS "unit;plugin;opencl;nosan" SKIP_RETURN_CODE 77
    ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")
  add_test(NAME OpenclSameStart COMMAND test_OpenclAnswers --same-start)
  set_tests_properties(OpenclSameStart PROPERTIES TIMEOUT 120
    LABELS "unit;plugin;opencl;nosan" SKIP_RETURN_CODE 77
    ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")
  add_test(NAME OpenclLate COMMAND test_OpenclRecord --late)
  set_tests_properties(OpenclLate PROPERTIES TIMEOUT 120
    LABELS "unit;plugin;opencl;nosan" SKIP_RETURN_CODE 77
    ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")
endif()
