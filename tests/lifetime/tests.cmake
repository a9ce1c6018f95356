# SPDX-License-Identifier: MIT
# Concurrency and lifetime of the engine (issue 12): `ctest -R Lifetime`.
# The race tests are labelled tsan so the TSan job runs them; each one
# reproduces a defect that crashed, deadlocked, lost records or raced.
set(ACT_LT_DIR ${PROJECT_BINARY_DIR}/tests/lifetime)
add_library(act_tp_slow MODULE ${PROJECT_SOURCE_DIR}/tests/lifetime/tp_slow.c)
set_target_properties(act_tp_slow PROPERTIES PREFIX "" OUTPUT_NAME tp_slow
  SUFFIX ".so" LIBRARY_OUTPUT_DIRECTORY ${ACT_LT_DIR} C_VISIBILITY_PRESET hidden)
target_include_directories(act_tp_slow PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(act_tp_slow PRIVATE _GNU_SOURCE)
act_warnings(act_tp_slow)

if(ACT_HAVE_JANSSON)
  act_add_test(LifetimeStepRace SOURCES tests/lifetime/test_step_race.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine lifetime tsan)
  target_compile_definitions(test_LifetimeStepRace PRIVATE
    TP_SLOW_PATH="${ACT_LT_DIR}/tp_slow.so")
  add_dependencies(test_LifetimeStepRace act_tp_slow)
endif()

# Not under TSan: forking a threaded process is what it tests, and TSan's
# own fork handling is not the subject.
act_add_test(LifetimeForkLocks SOURCES tests/lifetime/test_fork_locks.c
             LIBS Threads::Threads LABELS engine lifetime TIMEOUT 180)

if(ACT_HAVE_JANSSON)
  act_add_test(LifetimeBudget SOURCES tests/lifetime/test_budget.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine lifetime tsan)
endif()

if(ACT_HAVE_JANSSON)
  act_add_test(LifetimeSignal SOURCES tests/lifetime/test_signal.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine lifetime TIMEOUT 120)
endif()

if(ACT_HAVE_JANSSON)
  act_add_test(LifetimeServicesRace SOURCES tests/lifetime/test_services_race.c INTERNAL
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine lifetime tsan TIMEOUT 300)
endif()
act_add_test(LifetimeLogSet SOURCES tests/lifetime/test_log_set.c
             LIBS Threads::Threads LABELS lifetime tsan)
