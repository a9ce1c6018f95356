# SPDX-License-Identifier: MIT
# ABI of the built library (tests/symbols/check_symbols.sh):
#   SymbolsApi             exported dynamic symbols == ACT_API declarations
#                          of include/actrace/*.h (pending.txt: not yet built)
#   SymbolsSoname          SONAME is libactrace.so.<major>
#   SymbolsStaticNamespace every global of libactrace.a starts with act_
# Labelled nosan: sanitizer runtimes may add symbols of their own.
find_program(ACT_SH sh)
if(NOT CMAKE_NM OR NOT CMAKE_READELF OR NOT ACT_SH)
  message(STATUS "actrace: nm/readelf/sh not found: Symbols* tests skipped")
  return()
endif()
set(_chk ${CMAKE_CURRENT_LIST_DIR}/check_symbols.sh)
add_test(NAME SymbolsApi
         COMMAND ${ACT_SH} ${_chk} api $<TARGET_FILE:actrace>
                 ${PROJECT_SOURCE_DIR}/include/actrace
                 ${CMAKE_CURRENT_LIST_DIR}/pending.txt ${CMAKE_NM})
add_test(NAME SymbolsSoname
         COMMAND ${ACT_SH} ${_chk} soname $<TARGET_FILE:actrace>
                 ${PROJECT_VERSION_MAJOR} ${CMAKE_READELF})
add_test(NAME SymbolsStaticNamespace
         COMMAND ${ACT_SH} ${_chk} static $<TARGET_FILE:actrace_static> ${CMAKE_NM})
set_tests_properties(SymbolsApi SymbolsSoname SymbolsStaticNamespace
                     PROPERTIES LABELS "symbols;nosan" TIMEOUT 60)
