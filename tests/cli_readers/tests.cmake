# SPDX-License-Identifier: MIT
# `actrace summary` and `actrace check` (the CLI's trace readers), run as the
# built binary: `ctest -R 'CliSummary|CliCheck'`.
#
# They read the Kineto reference trace from the shared folder, found at
# configure time: -DACT_SHARED_DIR=..., $ACT_SHARED_DIR, or ../shared beside
# the source tree. Without it the Kineto checks are skipped (with a note).
set(_act_kineto_ref "")
foreach(_dir "${ACT_SHARED_DIR}" "$ENV{ACT_SHARED_DIR}" "${PROJECT_SOURCE_DIR}/../shared")
  if(_dir AND EXISTS "${_dir}/data/kineto-cpu-ops.json")
    get_filename_component(_act_kineto_ref "${_dir}/data/kineto-cpu-ops.json" ABSOLUTE)
    break()
  endif()
endforeach()
if(NOT _act_kineto_ref)
  list(APPEND ACT_MISSING_TEST_DEPS
       "shared/data/kineto-cpu-ops.json (CliSummary/CliCheck skip the Kineto checks, set ACT_SHARED_DIR)")
endif()

set(_act_cli_libs Threads::Threads)
set(_act_cli_defs ACT_KINETO_REF="${_act_kineto_ref}")
if(ACT_HAVE_JANSSON)
  list(APPEND _act_cli_libs PkgConfig::JANSSON)
  list(APPEND _act_cli_defs CLI_TEST_HAVE_JANSSON=1)
endif()
if(ACT_HAVE_ZLIB)
  list(APPEND _act_cli_libs ZLIB::ZLIB)
  list(APPEND _act_cli_defs CLI_TEST_HAVE_ZLIB=1)
endif()

foreach(_t Summary Check)
  string(TOLOWER ${_t} _lt)
  act_add_test(Cli${_t} SOURCES tests/cli_readers/test_cli_${_lt}.c
               LIBS ${_act_cli_libs} LABELS cli
               ARGS $<TARGET_FILE:actrace_cli>)
  target_compile_definitions(test_Cli${_t} PRIVATE ${_act_cli_defs})
  add_dependencies(test_Cli${_t} actrace_cli)
endforeach()

# The streaming reader (src/reader) through its own API, with a
# differential test against jansson when it is there.
act_add_test(CliReader SOURCES tests/cli_readers/test_reader.c
             LIBS actrace_reader ${_act_cli_libs} LABELS cli TIMEOUT 300)
target_compile_definitions(test_CliReader PRIVATE ${_act_cli_defs})

# gen_trace: known-content traces of any size on standard output (the
# bounded-memory test below and bench/reader).
add_executable(act_gen_trace ${PROJECT_SOURCE_DIR}/tests/cli_readers/gen_trace.c)
act_warnings(act_gen_trace)

# summary and check on streams: pipes, FIFOs, hostile input, a Kineto GPU
# trace of known content; CliStreamBig: a 2 GiB generated trace read
# through a pipe in bounded memory (slow under sanitizers: labelled nosan).
act_add_test(CliStream SOURCES tests/cli_readers/test_cli_stream.c
             LIBS ${_act_cli_libs} LABELS cli TIMEOUT 300
             ARGS $<TARGET_FILE:actrace_cli> $<TARGET_FILE:act_gen_trace>)
target_compile_definitions(test_CliStream PRIVATE ${_act_cli_defs})
add_dependencies(test_CliStream actrace_cli act_gen_trace)
add_test(NAME CliStreamBig COMMAND test_CliStream $<TARGET_FILE:actrace_cli>
         $<TARGET_FILE:act_gen_trace> --big)
set_tests_properties(CliStreamBig PROPERTIES TIMEOUT 900 LABELS "unit;cli;nosan"
                     SKIP_RETURN_CODE 77 ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")

# Issue 35 part B: summary on torch.profiler's traces and directories of
# them (jobs), check on Kineto's string pids.
act_add_test(CliSummaryJob SOURCES tests/cli_readers/test_cli_summary_job.c
             LIBS ${_act_cli_libs} LABELS cli
             ARGS $<TARGET_FILE:actrace_cli>)
target_compile_definitions(test_CliSummaryJob PRIVATE ${_act_cli_defs})
add_dependencies(test_CliSummaryJob actrace_cli)
