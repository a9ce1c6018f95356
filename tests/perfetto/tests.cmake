# SPDX-License-Identifier: MIT
# The Perfetto writer: `ctest -R Perfetto`. gen_pftrace writes one session
# as JSON and .pftrace; pf_check.py decodes the .pftrace with Debian's
# protoc against tests/perfetto/actrace_trace.proto (failing on any field
# the subset does not name), runs `actrace check` on it, and compares its
# slices, counters and flows per track with the JSON's. Without protoc the
# decoding tests are skipped with a reason (scripts/deps.sh installs it).
find_program(ACT_PROTOC protoc)
find_package(Python3 COMPONENTS Interpreter)
act_add_test(PerfettoGen SOURCES tests/perfetto/gen_pftrace.c INTERNAL
             LIBS Threads::Threads LABELS writer
             ARGS ${ACT_TRACE_DIR})
if(Python3_Interpreter_FOUND)
  add_test(NAME PerfettoDecode
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/pf_check.py
                   --protoc "${ACT_PROTOC}" --proto ${PROJECT_SOURCE_DIR}/tests/perfetto/actrace_trace.proto
                   --actrace $<TARGET_FILE:actrace_cli>
                   --json ${ACT_TRACE_DIR}/gen.json ${ACT_TRACE_DIR}/gen.pftrace
                   ${ACT_TRACE_DIR}/gen.pftrace.gz)
  set_tests_properties(PerfettoDecode PROPERTIES DEPENDS PerfettoGen LABELS "writer;cli"
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
# actrace check on a corpus of broken .pftrace files, one per rule, built
# byte by byte by check_broken.py (and one well-formed file that must pass).
if(Python3_Interpreter_FOUND)
  add_test(NAME PerfettoCheckBroken
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/check_broken.py
                   $<TARGET_FILE:actrace_cli> ${PROJECT_BINARY_DIR}/tests/perfetto_broken)
  set_tests_properties(PerfettoCheckBroken PROPERTIES LABELS cli TIMEOUT 120)
endif()
