# SPDX-License-Identifier: MIT
# On-demand tracing with the dynolog daemon's protocol (issue 19,
# docs/on-demand.md): test_ondemand.py plays the daemon (written from the
# protocol's description, in Python, apart from the C code under test) and
# drives od_prog, a program that never starts a session; it also drives
# `actrace trigger --serve`. `ctest -R OnDemand`.
find_program(ACT_PYTHON3 python3)
add_executable(od_prog ${PROJECT_SOURCE_DIR}/tests/ondemand/od_prog.c)
target_link_libraries(od_prog PRIVATE actrace)
act_warnings(od_prog)
if(ACT_PYTHON3 AND TARGET actrace_cli)
  # Each case in its own socket directory (KINETO_IPC_SOCKET_DIR), except
  # the one abstract-socket case, which holds the name "dynolog" of the
  # whole host: RESOURCE_LOCK keeps two runs from binding it at once.
  foreach(case registration duration_busy_iterations no_daemon own_session fork path plugins exit
          trigger trigger_busy trigger_not_ours trigger_tcp abstract)
    add_test(NAME OnDemand.${case}
             COMMAND ${ACT_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/ondemand/test_ondemand.py
                     $<TARGET_FILE:od_prog> $<TARGET_FILE:actrace_cli> ${case})
    set_tests_properties(OnDemand.${case} PROPERTIES LABELS "unit;ondemand;tsan" TIMEOUT 120)
  endforeach()
  set_tests_properties(OnDemand.abstract PROPERTIES RESOURCE_LOCK dynolog_abstract)
endif()
