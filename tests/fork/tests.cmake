# SPDX-License-Identifier: MIT
# Forked children and the process-wide plugins: `ctest -R Fork`.
#  - ForkPlugins: under `actrace record --plugin opencl --plugin nvtx`, a C
#    program that forks and Python's multiprocessing (fork start method)
#    whose workers call libact_fork_calls.so through ctypes: each process's
#    OpenCL calls and NVTX ranges once, in its own process, none declined
#    or dropped; and a library user whose forked child starts a session of
#    its own (test_fork_plugins.c). Skips (77) without an OpenCL
#    platform; the Python part needs /usr/bin/python3.
if(ACT_HAVE_JANSSON AND ACT_BUILD_PLUGINS AND TARGET actrace_plugin_opencl
   AND TARGET actrace_plugin_nvtx AND ACT_NVTX_INCLUDE_DIR)
  add_library(act_fork_calls SHARED ${PROJECT_SOURCE_DIR}/tests/fork/fork_calls.c)
  set_target_properties(act_fork_calls PROPERTIES OUTPUT_NAME act_fork_calls
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/fork C_STANDARD 11
    C_VISIBILITY_PRESET hidden)
  target_include_directories(act_fork_calls PRIVATE ${ACT_NVTX_INCLUDE_DIR})
  target_link_libraries(act_fork_calls PRIVATE OpenCL::OpenCL ${CMAKE_DL_LIBS})
  act_warnings(act_fork_calls)
  act_add_test(ForkPlugins SOURCES ${PROJECT_SOURCE_DIR}/tests/fork/test_fork_plugins.c
               LIBS PkgConfig::JANSSON act_fork_calls LABELS plugin opencl nvtx cli nosan
               TIMEOUT 300)
  add_dependencies(test_ForkPlugins actrace_plugin_opencl actrace_plugin_nvtx actrace_cli)
endif()
