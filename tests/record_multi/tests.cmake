# SPDX-License-Identifier: MIT
# `actrace record` of many processes (fork, exec, wrappers, daemons) and
# signals: `ctest -R RecordMulti`.
add_executable(act_mp_prog ${PROJECT_SOURCE_DIR}/tests/record_multi/mp_prog.c)
target_link_libraries(act_mp_prog PRIVATE actrace Threads::Threads)
act_warnings(act_mp_prog)
set_target_properties(act_mp_prog PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
if(ACT_HAVE_JANSSON)
  act_add_test(RecordMulti SOURCES ${PROJECT_SOURCE_DIR}/tests/record_multi/test_record_multi.c
               LIBS PkgConfig::JANSSON LABELS cli nosan TIMEOUT 300)
  add_dependencies(test_RecordMulti actrace_cli act_mp_prog)
  # Every way a process ends, with threads recording: the spool keeps it.
  # nosan: ASan turns the segfault into its own report and exit status 1.
  act_add_test(RecordDie SOURCES ${PROJECT_SOURCE_DIR}/tests/record_multi/test_record_die.c
               LIBS PkgConfig::JANSSON LABELS cli nosan TIMEOUT 300)
  add_dependencies(test_RecordDie actrace_cli act_mp_prog)
  # Hostile users and ordinary programs (issue 15): a re-created record
  # directory, ulimit -f, large strings, a relative TMPDIR, signals the
  # program handles, short programs.
  act_add_test(RecordHarden SOURCES ${PROJECT_SOURCE_DIR}/tests/record_multi/test_record_harden.c
               LIBS PkgConfig::JANSSON LABELS cli hardening nosan TIMEOUT 300)
  add_dependencies(test_RecordHarden actrace_cli act_mp_prog)
  # The chunk pool under record (issue 21): SIGKILL with chunks moved and
  # still in slots, a stalled drain (drop, wait, grow), thread churn.
  act_add_test(RecordPoolSpool SOURCES ${PROJECT_SOURCE_DIR}/tests/record_multi/test_record_pool.c
               LIBS PkgConfig::JANSSON LABELS cli nosan TIMEOUT 300)
  add_dependencies(test_RecordPoolSpool actrace_cli act_mp_prog)
  # Lazy start (issue 20): a process that records nothing has no thread,
  # no spool, and is still in the trace; late and fork-only first calls.
  act_add_test(RecordLazy SOURCES ${PROJECT_SOURCE_DIR}/tests/record_multi/test_record_lazy.c
               LIBS PkgConfig::JANSSON LABELS cli nosan TIMEOUT 300)
  add_dependencies(test_RecordLazy actrace_cli act_mp_prog)
endif()
if(TARGET test_RecordMulti)
  add_dependencies(test_RecordMulti actrace_demo)
  if(TARGET actrace_plugin_example)
    add_dependencies(test_RecordMulti actrace_plugin_example)
  endif()
endif()
