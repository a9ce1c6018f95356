# SPDX-License-Identifier: MIT
# The library's layers point one way (tests/layering/check_layering.sh,
# docs/building.md "Source layout"):
#   LayeringIncludes  no #include of a higher layer in src/<component>/
#   LayeringSymbols   no object of libactrace uses a symbol that a higher
#                     layer defines (nm over the object library's files)
find_program(ACT_SH sh)
if(NOT ACT_SH)
  message(STATUS "actrace: sh not found: Layering* tests skipped")
  return()
endif()
set(_chk ${CMAKE_CURRENT_LIST_DIR}/check_layering.sh)
add_test(NAME LayeringIncludes
         COMMAND ${ACT_SH} ${_chk} includes ${PROJECT_SOURCE_DIR}/src)
set_tests_properties(LayeringIncludes PROPERTIES LABELS "layering" TIMEOUT 60)
if(CMAKE_NM)
  add_test(NAME LayeringSymbols
           COMMAND ${ACT_SH} ${_chk} symbols ${CMAKE_NM} $<TARGET_OBJECTS:actrace_obj>
           COMMAND_EXPAND_LISTS)
  set_tests_properties(LayeringSymbols PROPERTIES LABELS "layering" TIMEOUT 60)
endif()
