# SPDX-License-Identifier: MIT
# The recording engine and the Chrome writer: `ctest -R 'Record|Writer'`.
if(ACT_HAVE_JANSSON)
  act_add_test(RecordApi SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_record.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine tsan)
endif()
if(ACT_HAVE_JANSSON)
  act_add_test(RecordStress SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_stress.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine tsan TIMEOUT 300)
  # nosan: gcc 12's ASan allocator has no fork handlers. With the session's
  # pre-fault thread running in the parent, the child's first allocation
  # hung on an allocator lock inherited locked in 2 of 15 ASan runs (gdb:
  # __sanitizer::SizeClassAllocator64::GetFromAllocator), never in the
  # plain or TSan builds (as LifetimeForkLocks).
  act_add_test(RecordFork SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_fork.c
               LIBS PkgConfig::JANSSON LABELS engine nosan)
  # A session is bound to its process: a forked child's emits through the
  # plugin context it inherited are refused (under record: never into the
  # parent's spool).
  act_add_test(RecordForkBound SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_fork_bound.c
               LIBS PkgConfig::JANSSON ${CMAKE_DL_LIBS} LABELS engine cli nosan TIMEOUT 180)
  add_dependencies(test_RecordForkBound act_tp_hook actrace_cli)
  act_add_test(WriterFailure SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_write_failure.c
               LIBS PkgConfig::JANSSON LABELS engine writer)
  if(ACT_HAVE_ZLIB)
    act_add_test(WriterHostileInput SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_writer_json.c
                 LIBS PkgConfig::JANSSON ZLIB::ZLIB LABELS engine writer)
  endif()
endif()
# Replaces malloc: not under sanitizers, which own the allocator.
act_add_test(RecordAllocFailure SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_alloc_failure.c
             LIBS Threads::Threads LABELS engine nosan TIMEOUT 300 INTERNAL)
if(ACT_HAVE_JANSSON)
  # Signal handlers that record while their thread holds an engine lock.
  act_add_test(RecordSignalLocks SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_signal_locks.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine TIMEOUT 180)
  act_add_test(RecordArgs SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_args.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine tsan TIMEOUT 300)
  # The writers' arg walk: the one-pass and cached ways give what the
  # byte-by-byte way gives (duplicates, reserved, empty, unknown, long keys).
  act_add_test(VisitArgs SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_visit_args.c
               LIBS PkgConfig::JANSSON LABELS engine writer INTERNAL)
  act_add_test(RecordThreadChurn SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_churn.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine TIMEOUT 300)
endif()
# Windows on the active session (act_window_*): a slice of a session that
# keeps collecting, read while another thread records.
act_add_test(SessionWindow SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_window.c
             LIBS Threads::Threads LABELS engine tsan)
if(ACT_HAVE_JANSSON)
  act_add_test(RecordPrefault SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_prefault.c
               LIBS PkgConfig::JANSSON LABELS engine)
endif()
if(ACT_HAVE_JANSSON)
  # The chunk pool: steady state, a stalled drain (drop, wait), churn.
  act_add_test(RecordPool SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_pool.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine tsan TIMEOUT 300 INTERNAL)
endif()
if(ACT_HAVE_JANSSON)
  # Counter timestamps: the conversion through calibration pairs, and
  # scoped spans end to end (engine/clock.c).
  act_add_test(RecordClock SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_clock.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine tsan TIMEOUT 300 INTERNAL)
endif()
if(ACT_HAVE_JANSSON)
  # The spill file only past the budget (thread.c, tmp_wanted).
  act_add_test(RecordSpillThreshold SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_spill_threshold.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine tsan TIMEOUT 300 INTERNAL)
endif()
if(ACT_HAVE_JANSSON)
  # String names cost what ids cost and write the same trace (record.c, name_ref).
  act_add_test(RecordNames SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_names.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS engine tsan TIMEOUT 300)
endif()
# Compact frames of sealed chunks (engine/frame.c): exact round trip, damaged
# input refused; the bytes per event of a real session's chunks as frames.
act_add_test(RecordFrame SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_frame.c
             LABELS engine INTERNAL TIMEOUT 300)
# Destroy while other threads record: the grace period of act_session_stop
# (src/engine/grace.c). Fails under ASan (heap-use-after-free) and TSan
# (a race with the free) without it.
act_add_test(RecordGrace SOURCES ${PROJECT_SOURCE_DIR}/tests/engine/test_grace.c
             LIBS Threads::Threads LABELS engine tsan TIMEOUT 300)
