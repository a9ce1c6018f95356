# SPDX-License-Identifier: MIT
# Plugin ABI tests: validation units, the loader (one test plugin per
# refusal reason, a garbage plugin, two at once) and the example plugin end
# to end. The test plugins go to <build>/tests/plugin/plugins/, never into
# the installed plugin directory.
set(ACT_TP_DIR ${PROJECT_BINARY_DIR}/tests/plugin/plugins)
set(ACT_TP_VARIANTS ok=1 second=2 decline=3 fail=4 nosym=5 major2=6 small=7
    nullentry=8 garbage=9 log=10 hang=11 leak=12 race=13)
set(ACT_TP_TARGETS "")
foreach(v ${ACT_TP_VARIANTS})
  string(REPLACE "=" ";" kv ${v})
  list(GET kv 0 name)
  list(GET kv 1 num)
  add_library(act_tp_${name} MODULE ${PROJECT_SOURCE_DIR}/tests/plugin/test_plugins.c)
  set_target_properties(act_tp_${name} PROPERTIES PREFIX "" OUTPUT_NAME tp_${name}
    SUFFIX ".so" LIBRARY_OUTPUT_DIRECTORY ${ACT_TP_DIR} C_VISIBILITY_PRESET hidden)
  target_include_directories(act_tp_${name} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_definitions(act_tp_${name} PRIVATE _GNU_SOURCE TP_VARIANT=${num})
  target_link_libraries(act_tp_${name} PRIVATE m Threads::Threads)
  act_warnings(act_tp_${name})
  list(APPEND ACT_TP_TARGETS act_tp_${name})
endforeach()

# hook.so (hook_plugin.c): a plugin the test program drives through dlsym
# (emit through any instance's host table, a callback in stop).
add_library(act_tp_hook MODULE ${PROJECT_SOURCE_DIR}/tests/plugin/hook_plugin.c)
set_target_properties(act_tp_hook PROPERTIES PREFIX "" OUTPUT_NAME hook
  SUFFIX ".so" LIBRARY_OUTPUT_DIRECTORY ${ACT_TP_DIR} C_VISIBILITY_PRESET hidden)
target_include_directories(act_tp_hook PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(act_tp_hook PRIVATE _GNU_SOURCE)
target_link_libraries(act_tp_hook PRIVATE Threads::Threads)
act_warnings(act_tp_hook)

act_add_test(PluginValidate SOURCES ${PROJECT_SOURCE_DIR}/tests/plugin/test_plugin_validate.c
             INTERNAL LIBS m LABELS plugin)

if(ACT_HAVE_JANSSON)
  act_add_test(PluginLoader SOURCES ${PROJECT_SOURCE_DIR}/tests/plugin/test_plugin_loader.c
               LIBS PkgConfig::JANSSON Threads::Threads m LABELS plugin tsan)
  add_dependencies(test_PluginLoader ${ACT_TP_TARGETS})
  if(ACT_BUILD_PLUGINS)
    act_add_test(PluginExample SOURCES ${PROJECT_SOURCE_DIR}/tests/plugin/test_plugin_example.c
                 LIBS PkgConfig::JANSSON Threads::Threads LABELS plugin tsan)
    add_dependencies(test_PluginExample actrace_plugin_example)
    # The public read-back (actrace/visit.h) over the example plugin's
    # session, against the trace it then writes (`ctest -R SessionVisit`).
    act_add_test(SessionVisit SOURCES ${PROJECT_SOURCE_DIR}/tests/plugin/test_visit.c
                 LIBS PkgConfig::JANSSON Threads::Threads LABELS plugin writer)
    add_dependencies(test_SessionVisit actrace_plugin_example)
  endif()
endif()

# The example built out of tree against an installed actrace (nosan: the
# out-of-tree builds do not carry the sanitizer flags).
if(ACT_HAVE_JANSSON AND ACT_BUILD_PLUGINS AND NOT ACT_SANITIZE)
  find_program(ACT_PKG_CONFIG_EXE NAMES pkg-config pkgconf)
  find_program(ACT_MAKE_EXE NAMES make gmake)
  add_test(NAME PluginExampleOutOfTree
           COMMAND ${CMAKE_COMMAND}
             -DBUILD_DIR=${PROJECT_BINARY_DIR}
             -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
             -DWORK=${PROJECT_BINARY_DIR}/tests/plugin-oot
             -DGENERATOR=${CMAKE_GENERATOR}
             -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
             -DEXAMPLE_TEST=$<TARGET_FILE:test_PluginExample>
             -DPKG_CONFIG=${ACT_PKG_CONFIG_EXE}
             -DMAKE=${ACT_MAKE_EXE}
             -P ${PROJECT_SOURCE_DIR}/tests/plugin/out_of_tree.cmake)
  set_tests_properties(PluginExampleOutOfTree PROPERTIES
    LABELS "unit;install;nosan" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()

# Misbehaving plugins (issue 12): log escapes, symlinks, a stuck flush, a
# thread outliving finalize, records rewritten while checked.
if(ACT_HAVE_JANSSON)
  act_add_test(PluginHardening SOURCES ${PROJECT_SOURCE_DIR}/tests/plugin/test_plugin_hardening.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS plugin tsan TIMEOUT 120)
  add_dependencies(test_PluginHardening ${ACT_TP_TARGETS})
endif()
