# SPDX-License-Identifier: MIT
# The host plugin (plugins/host): `ctest -R PluginHost`.
#  - PluginHostLifecycle: the plugin driven through its table by a fake
#    host, in every call order (no libactrace session involved);
#  - PluginHost: sessions loading build/plugins/host.so, the trace checked
#    with jansson (kept as traces/plugin_host.json for the CI validators);
#  - PluginHostRecord: `actrace record --plugin host -- actrace-demo`.
if(ACT_BUILD_PLUGINS AND TARGET actrace_plugin_host)
  act_add_test(PluginHostLifecycle
               SOURCES ${PROJECT_SOURCE_DIR}/tests/host/test_host_lifecycle.c
               LIBS Threads::Threads ${CMAKE_DL_LIBS} m LABELS plugin host tsan)
  add_dependencies(test_PluginHostLifecycle actrace_plugin_host)
  if(ACT_HAVE_JANSSON)
    act_add_test(PluginHost SOURCES ${PROJECT_SOURCE_DIR}/tests/host/test_host_plugin.c
                 LIBS PkgConfig::JANSSON Threads::Threads LABELS plugin host tsan)
    add_dependencies(test_PluginHost actrace_plugin_host)
    act_add_test(PluginHostRecord SOURCES ${PROJECT_SOURCE_DIR}/tests/host/test_host_record.c
                 LIBS PkgConfig::JANSSON LABELS plugin host cli nosan TIMEOUT 180)
    add_dependencies(test_PluginHostRecord actrace_plugin_host actrace_cli actrace_demo)
  endif()
endif()
