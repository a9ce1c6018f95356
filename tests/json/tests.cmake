# SPDX-License-Identifier: MIT
# JSON output layer (src/writer/json_out.h): formatting primitives, string
# escaping, streaming sink.
act_add_test(JsonFormat SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json_format.c INTERNAL LIBS m
             LABELS json tsan)
act_add_test(JsonString SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json_string.c INTERNAL
             LABELS json tsan)
act_add_test(JsonValid SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json_valid.c INTERNAL
             LABELS json)
act_add_test(JsonSink SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json_sink.c INTERNAL
             LABELS json)
if(ACT_HAVE_JANSSON)
  foreach(t JsonString JsonSink JsonValid)
    target_compile_definitions(test_${t} PRIVATE ACT_HAVE_JANSSON=1)
    target_link_libraries(test_${t} PRIVATE PkgConfig::JANSSON)
  endforeach()
endif()
if(ACT_HAVE_ZLIB)
  target_compile_definitions(test_JsonSink PRIVATE ACT_HAVE_ZLIB=1)
  target_link_libraries(test_JsonSink PRIVATE ZLIB::ZLIB)
endif()
