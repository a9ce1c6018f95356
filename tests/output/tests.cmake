# SPDX-License-Identifier: MIT
# What the writer makes of hard input (timestamps, 64-bit streams, counter
# samples at one time, overlapping sources): `ctest -R WriterOutput`.
if(ACT_HAVE_JANSSON)
  act_add_test(WriterOutput SOURCES ${PROJECT_SOURCE_DIR}/tests/output/test_output.c
               INTERNAL LIBS PkgConfig::JANSSON Threads::Threads m LABELS engine writer tsan)
endif()
# Config keys that act on the session: ACTIVITIES_ENABLED, PROFILE_START_TIME,
# REQUEST_GROUP_TRACE_ID (`ctest -R SessionConfigKeys`). Uses the test plugin
# tp_ok from tests/plugin.
if(ACT_HAVE_JANSSON)
  act_add_test(SessionConfigKeys SOURCES ${PROJECT_SOURCE_DIR}/tests/output/test_config_keys.c
               LIBS PkgConfig::JANSSON LABELS engine tsan)
  add_dependencies(test_SessionConfigKeys act_tp_ok)
endif()
# Back-to-back spans whose ts + dur in doubles would pass the next ts
# (`ctest -R WriterTouching`).
if(ACT_HAVE_JANSSON)
  act_add_test(WriterTouching SOURCES ${PROJECT_SOURCE_DIR}/tests/output/test_touching.c
               INTERNAL LIBS PkgConfig::JANSSON Threads::Threads m LABELS engine writer)
endif()
