# SPDX-License-Identifier: MIT
# Compile test for the deprecated activity-type enumerators, run by CTest:
#   cmake -DCOMPILER=cc -DFLAGS="-std=c11;-pedantic-errors" -DSRC=file
#         -DINC=include_dir -DOUT=obj -P deprecated_check.cmake
# 1. SRC compiles (its static assertions prove that each deprecated
#    enumerator equals its canonical one) and the compiler warns about each
#    deprecated enumerator by name: a warning, never an error.
# 2. SRC with -DACT_TEST_CANONICAL_ONLY compiles under -Werror with no
#    diagnostic at all: the header itself warns about nothing.
set(names ACT_CUDA_RUNTIME ACT_MTIA_RUNTIME ACT_GLOW_RUNTIME ACT_HPU_OP
    ACT_XPU_RUNTIME ACT_PRIVATEUSE1_RUNTIME ACT_CUDA_DRIVER ACT_XPU_DRIVER
    ACT_PRIVATEUSE1_DRIVER ACT_MTIA_CCP_EVENTS ACT_MTIA_COUNTERS
    ACT_HARDWARE_COUNTERS)

# LC_ALL=C: plain ASCII quotes in the compiler's messages.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LC_ALL=C
          ${COMPILER} ${FLAGS} -Wall -Wextra -I${INC} -c ${SRC} -o ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SRC} does not compile with ${COMPILER} ${FLAGS}:\n${all}")
endif()
set(missing "")
foreach(n ${names})
  if(NOT all MATCHES "${n}'? is deprecated")
    list(APPEND missing ${n})
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "no deprecation warning for: ${missing}\ncompiler output:\n${all}")
endif()
if(NOT all MATCHES "warning")
  message(FATAL_ERROR "expected warnings, got:\n${all}")
endif()

execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LC_ALL=C
          ${COMPILER} ${FLAGS} -Wall -Wextra -Werror -DACT_TEST_CANONICAL_ONLY
          -I${INC} -c ${SRC} -o ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT "${out}${err}" STREQUAL "")
  message(FATAL_ERROR "canonical enumerators must compile cleanly:\n${out}${err}")
endif()
message(STATUS "ok: ${COMPILER} ${FLAGS}: compiles, warns for all 12 deprecated enumerators")
