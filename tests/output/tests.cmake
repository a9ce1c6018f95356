# SPDX-License-Identifier: MIT
# What the writer makes of hard input (timestamps, 64-bit streams, counter
# samples at one time, overlapping sources): `ctest -R WriterOutput`.
if(ACT_HAVE_JANSSON)
  act_add_test(WriterOutput SOURCES ${PROJECT_SOURCE_DIR}/tests/output/test_output.c
               INTERNAL LIBS PkgConfig::JANSSON Threads::Threads m LABELS engine writer tsan)
endif()
