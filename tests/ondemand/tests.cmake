# SPDX-License-Identifier: MIT
# On-demand tracing with the dynolog daemon's protocol (issues 19 and 33,
# docs/on-demand.md): test_ondemand.py plays the daemon (written from the
# protocol's description, in Python, apart from the C code under test) and
# drives od_prog, a program that never starts a session; it also drives
# `actrace trigger --serve`, and standin_dynolog.py, a stand-in for the
# dynolog daemon with its behaviours that matter to clients (the
# REQUEST_TRACE_ID it appends, the blocking retries of a reply to a
# vanished endpoint, registrations keyed by the pid list). `ctest -R OnDemand`.
find_program(ACT_PYTHON3 python3)
add_executable(od_prog ${PROJECT_SOURCE_DIR}/tests/ondemand/od_prog.c)
target_link_libraries(od_prog PRIVATE actrace ${CMAKE_DL_LIBS})
act_warnings(od_prog)
# A library that defines libkineto_init, as torch's does (kineto_owns).
add_library(kineto_standin SHARED ${PROJECT_SOURCE_DIR}/tests/ondemand/kineto_standin.c)
# write(2) slowed down, for a program that ends while its trace is written.
add_library(od_slow_write SHARED ${PROJECT_SOURCE_DIR}/tests/ondemand/slow_write.c)
target_link_libraries(od_slow_write PRIVATE ${CMAKE_DL_LIBS})
if(ACT_PYTHON3 AND TARGET actrace_cli)
  # Each case in its own socket directory (KINETO_IPC_SOCKET_DIR), except
  # the one abstract-socket case, which holds the name "dynolog" of the
  # whole host: RESOURCE_LOCK keeps two runs from binding it at once.
  set(_od_cases registration duration_busy_iterations no_daemon own_session busy_owner fork path plugins
      exit trigger trigger_busy trigger_not_ours trigger_tcp abstract
      standin_trace_id standin_busy standin_forkexec cli_never_polls kineto_owns trigger_forged
      iter_timeout exit_write file_safety remote_keys doc_python)
  set(_od_env "ACT_TEST_KINETO_LIB=$<TARGET_FILE:kineto_standin>"
      "ACT_TEST_SLOW_WRITE=$<TARGET_FILE:od_slow_write>"
      "ACT_TEST_LIBACTRACE=$<TARGET_FILE:actrace>")
  if(TARGET actrace_cl_demo_dlopen)
    list(APPEND _od_cases opencl_ready doc_c)
    list(APPEND _od_env "ACT_TEST_CL_DEMO=$<TARGET_FILE:actrace_cl_demo_dlopen>")
  endif()
  foreach(case ${_od_cases})
    add_test(NAME OnDemand.${case}
             COMMAND ${ACT_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/ondemand/test_ondemand.py
                     $<TARGET_FILE:od_prog> $<TARGET_FILE:actrace_cli> ${case})
    set_tests_properties(OnDemand.${case} PROPERTIES LABELS "unit;ondemand;tsan" TIMEOUT 120
                         SKIP_RETURN_CODE 77
                         ENVIRONMENT "${_od_env}")
  endforeach()
  # Not under TSan (labels without tsan):
  #  - kineto_owns: the poller's dl_iterate_phdr reads a library name that
  #    ld.so wrote under its own lock, which TSan does not see.
  #  - doc_python, doc_c: a Python interpreter and PoCL not built for TSan;
  #    nor for ASan (the docs' blocks LD_PRELOAD the library into programs
  #    without the ASan runtime, which then refuses to start): nosan.
  set_tests_properties(OnDemand.kineto_owns PROPERTIES LABELS "unit;ondemand")
  foreach(case doc_python doc_c)
    if(TEST OnDemand.${case})
      set_tests_properties(OnDemand.${case} PROPERTIES LABELS "unit;ondemand;nosan")
    endif()
  endforeach()
  set_tests_properties(OnDemand.abstract OnDemand.doc_python PROPERTIES
                       RESOURCE_LOCK dynolog_abstract)
  if(TARGET actrace_cl_demo_dlopen)
    set_tests_properties(OnDemand.doc_c PROPERTIES RESOURCE_LOCK dynolog_abstract)
  endif()
endif()
