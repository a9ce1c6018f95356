# SPDX-License-Identifier: MIT
# ABI compatibility: plugins built from frozen copies of plugin.h must keep
# loading and producing the same events. tests/abi/v1/actrace/plugin.h is
# the first published header (ABI 1.0); never edit it or plugin_v1.c.
add_library(act_abi_v1 MODULE ${PROJECT_SOURCE_DIR}/tests/abi/plugin_v1.c)
set_target_properties(act_abi_v1 PROPERTIES PREFIX "" OUTPUT_NAME abi_v1
  SUFFIX ".so" LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/abi
  C_VISIBILITY_PRESET hidden)
# The frozen header comes first; activity_type.h (whose codes never change)
# still comes from include/.
target_include_directories(act_abi_v1 BEFORE PRIVATE ${PROJECT_SOURCE_DIR}/tests/abi/v1)
target_include_directories(act_abi_v1 PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(act_abi_v1 PRIVATE _GNU_SOURCE)
act_warnings(act_abi_v1)

if(ACT_HAVE_JANSSON)
  act_add_test(AbiPluginV1 SOURCES ${PROJECT_SOURCE_DIR}/tests/abi/test_abi_v1.c
               LIBS PkgConfig::JANSSON Threads::Threads m LABELS plugin abi tsan)
  add_dependencies(test_AbiPluginV1 act_abi_v1)
endif()

# ABI 1.1 (name_thread): tests/abi/v1_1/actrace/plugin.h is frozen as 1.1
# shipped; never edit it or plugin_v1_1.c.
add_library(act_abi_v1_1 MODULE ${PROJECT_SOURCE_DIR}/tests/abi/plugin_v1_1.c)
set_target_properties(act_abi_v1_1 PROPERTIES PREFIX "" OUTPUT_NAME abi_v1_1
  SUFFIX ".so" LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/abi
  C_VISIBILITY_PRESET hidden)
target_include_directories(act_abi_v1_1 BEFORE PRIVATE ${PROJECT_SOURCE_DIR}/tests/abi/v1_1)
target_include_directories(act_abi_v1_1 PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(act_abi_v1_1 PRIVATE _GNU_SOURCE)
act_warnings(act_abi_v1_1)
if(ACT_HAVE_JANSSON)
  act_add_test(AbiPluginV1_1 SOURCES ${PROJECT_SOURCE_DIR}/tests/abi/test_abi_v1_1.c
               LIBS PkgConfig::JANSSON Threads::Threads m LABELS plugin abi tsan)
  add_dependencies(test_AbiPluginV1_1 act_abi_v1_1)
endif()

# ABI 1.2 (every, every_cancel: ticks on the host's helper thread):
# tests/abi/v1_2/actrace/plugin.h is frozen as 1.2 shipped; never edit it
# or plugin_v1_2.c.
add_library(act_abi_v1_2 MODULE ${PROJECT_SOURCE_DIR}/tests/abi/plugin_v1_2.c)
set_target_properties(act_abi_v1_2 PROPERTIES PREFIX "" OUTPUT_NAME abi_v1_2
  SUFFIX ".so" LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/abi
  C_VISIBILITY_PRESET hidden)
target_include_directories(act_abi_v1_2 BEFORE PRIVATE ${PROJECT_SOURCE_DIR}/tests/abi/v1_2)
target_include_directories(act_abi_v1_2 PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(act_abi_v1_2 PRIVATE _GNU_SOURCE)
act_warnings(act_abi_v1_2)
if(ACT_HAVE_JANSSON)
  act_add_test(AbiPluginV1_2 SOURCES ${PROJECT_SOURCE_DIR}/tests/abi/test_abi_v1_2.c
               LIBS PkgConfig::JANSSON Threads::Threads m ${CMAKE_DL_LIBS} LABELS plugin abi tsan)
  add_dependencies(test_AbiPluginV1_2 act_abi_v1_2)
endif()
