# SPDX-License-Identifier: MIT
# The Perfetto writer: `ctest -R Perfetto`. gen_pftrace writes one session
# as JSON and .pftrace; pf_check.py decodes the .pftrace with Debian's
# protoc against tests/perfetto/actrace_trace.proto (failing on any field
# the subset does not name), runs `actrace check` on it, and compares its
# slices, counters and flows per track with the JSON's. Without protoc the
# decoding tests are skipped with a reason (scripts/deps.sh installs it).
find_program(ACT_PROTOC protoc)
find_package(Python3 COMPONENTS Interpreter)
# The .gz variants only where the library writes gzip (the minimal build
# has no zlib).
set(_pf_gen_gz "")
set(_pf_gz "")
set(_pf_conv_gz "")
if(ACT_HAVE_ZLIB)
  set(_pf_gen_gz gz)
  set(_pf_gz ${ACT_TRACE_DIR}/gen.pftrace.gz)
  set(_pf_conv_gz ${ACT_TRACE_DIR}/gen_converted.pftrace.gz)
endif()
act_add_test(PerfettoGen SOURCES tests/perfetto/gen_pftrace.c INTERNAL
             LIBS Threads::Threads LABELS writer
             ARGS ${ACT_TRACE_DIR} ${_pf_gen_gz})
if(Python3_Interpreter_FOUND)
  add_test(NAME PerfettoDecode
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/pf_check.py
                   --protoc "${ACT_PROTOC}" --proto ${PROJECT_SOURCE_DIR}/tests/perfetto/actrace_trace.proto
                   --actrace $<TARGET_FILE:actrace_cli>
                   --json ${ACT_TRACE_DIR}/gen.json ${ACT_TRACE_DIR}/gen.pftrace
                   ${_pf_gz})
  set_tests_properties(PerfettoDecode PROPERTIES DEPENDS PerfettoGen LABELS "writer;cli"
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
# The same .pftrace decoded with Perfetto's own schema (PyPI's perfetto
# package in the cached venv; skipped without it): no field it does not
# name. validate-traces.sh does the same for every .pftrace of a run.
add_test(NAME PerfettoSchema
         COMMAND sh -c "v=$(sh \"$0/scripts/pyvenv.sh\" --path) && [ -x \"$v/bin/python\" ] || { echo 'PerfettoSchema: skipped: no venv (scripts/pyvenv.sh)'; exit 77; }; exec \"$v/bin/python\" \"$0/tests/perfetto/pf_schema.py\" \"$@\""
                 ${PROJECT_SOURCE_DIR} ${ACT_TRACE_DIR}/gen.pftrace ${_pf_gz})
set_tests_properties(PerfettoSchema PROPERTIES DEPENDS PerfettoGen LABELS "writer;python;nosan"
                     SKIP_RETURN_CODE 77 TIMEOUT 120)
# actrace check on a corpus of broken .pftrace files, one per rule, built
# byte by byte by check_broken.py (and one well-formed file that must pass).
if(Python3_Interpreter_FOUND)
  add_test(NAME PerfettoCheckBroken
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/check_broken.py
                   $<TARGET_FILE:actrace_cli> ${PROJECT_BINARY_DIR}/tests/perfetto_broken)
  set_tests_properties(PerfettoCheckBroken PROPERTIES LABELS cli TIMEOUT 120)
endif()
# Round trip: JSON -> actrace convert -> .pftrace has the same slices,
# counters, flows and metadata per track (exact times: both come from the
# JSON text). Once in memory, once with a 4 KiB run buffer so the sort
# spills runs and merges them; and the Kineto reference trace when found.
if(Python3_Interpreter_FOUND)
  set(_pf_args --protoc "${ACT_PROTOC}" --proto ${PROJECT_SOURCE_DIR}/tests/perfetto/actrace_trace.proto
      --actrace $<TARGET_FILE:actrace_cli> --convert --dur-slack 0)
  add_test(NAME PerfettoConvert
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/pf_check.py ${_pf_args}
                   --json ${ACT_TRACE_DIR}/gen.json ${ACT_TRACE_DIR}/gen_converted.pftrace
                   ${_pf_conv_gz})
  add_test(NAME PerfettoConvertSpill
           COMMAND ${CMAKE_COMMAND} -E env ACT_CONVERT_RUN_BYTES=4096
                   ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/pf_check.py ${_pf_args}
                   --json ${ACT_TRACE_DIR}/gen.json ${ACT_TRACE_DIR}/gen_spilled.pftrace)
  # Keys given twice, escapes, NULs, non-ASCII, extreme numbers, empty
  # keys, strings around the interning hash's 4- and 8-byte steps, names,
  # categories, keys and values too long to intern (carried inline), and a
  # slice that both ends one flow and starts another.
  add_test(NAME PerfettoConvertOdd
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/pf_check.py ${_pf_args}
                   --json ${PROJECT_SOURCE_DIR}/tests/perfetto/convert_odd.json
                   ${ACT_TRACE_DIR}/convert_odd.pftrace)
  set_tests_properties(PerfettoConvert PerfettoConvertSpill PROPERTIES DEPENDS PerfettoGen
                       LABELS "writer;cli" SKIP_RETURN_CODE 77 TIMEOUT 120)
  set_tests_properties(PerfettoConvertOdd PROPERTIES LABELS "writer;cli" SKIP_RETURN_CODE 77
                       TIMEOUT 120)
  # _act_kineto_ref: found by tests/cli_readers/tests.cmake (included first).
  if(_act_kineto_ref)
    add_test(NAME PerfettoConvertKineto
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/pf_check.py ${_pf_args}
                     --json ${_act_kineto_ref} ${PROJECT_BINARY_DIR}/tests/kineto_converted.pftrace)
    set_tests_properties(PerfettoConvertKineto PROPERTIES LABELS "cli" SKIP_RETURN_CODE 77
                         TIMEOUT 120)
  endif()
endif()
# actrace record -o run.pftrace: the merged trace written as Perfetto's
# protobuf (merge to JSON, then convert), decoded and checked; with the
# example and host plugins so that device work, flows and counters are in.
if(Python3_Interpreter_FOUND AND TARGET actrace_demo AND TARGET actrace_plugin_example
   AND TARGET actrace_plugin_host)
  add_test(NAME PerfettoRecord
           COMMAND $<TARGET_FILE:actrace_cli> record --force -o ${ACT_TRACE_DIR}/record_demo.pftrace
                   --plugin $<TARGET_FILE:actrace_plugin_example> --plugin $<TARGET_FILE:actrace_plugin_host>
                   -- $<TARGET_FILE:actrace_demo>)
  add_test(NAME PerfettoRecordDecode
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/perfetto/pf_check.py
                   --protoc "${ACT_PROTOC}" --proto ${PROJECT_SOURCE_DIR}/tests/perfetto/actrace_trace.proto
                   --actrace $<TARGET_FILE:actrace_cli> ${ACT_TRACE_DIR}/record_demo.pftrace)
  set_tests_properties(PerfettoRecord PROPERTIES LABELS "cli;nosan" TIMEOUT 120)
  set_tests_properties(PerfettoRecordDecode PROPERTIES DEPENDS PerfettoRecord LABELS "cli;nosan"
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
