# SPDX-License-Identifier: MIT
# The nvtx plugin (plugins/nvtx): `ctest -R Nvtx`.
#  - Nvtx: nvtx_app (built against the NVTX v3 headers only) run without
#    actrace, under `actrace record --plugin nvtx`, with ACTRACE_PLUGINS=nvtx
#    and with a foreign NVTX_INJECTION64_PATH; traces checked with jansson
#    and left in ACT_TRACE_DIR for the CI validators. Skips (77) when the
#    NVTX headers were not found (no nvtx.so, no nvtx_app).
#  - NvtxThreads: the same executable loading nvtx.so in process (threads,
#    sessions in turn, a small budget); labelled for ASan and TSan.
if(ACT_HAVE_JANSSON)
  act_add_test(Nvtx SOURCES ${PROJECT_SOURCE_DIR}/tests/nvtx/test_nvtx.c
               LIBS PkgConfig::JANSSON LABELS plugin nvtx cli nosan TIMEOUT 180)
  if(ACT_BUILD_PLUGINS AND TARGET actrace_plugin_nvtx)
    add_executable(nvtx_app ${PROJECT_SOURCE_DIR}/tests/nvtx/nvtx_app.c)
    # The "unmodified program": NVTX headers, threads and dl only.
    target_include_directories(nvtx_app PRIVATE ${ACT_NVTX_INCLUDE_DIR})
    target_compile_definitions(nvtx_app PRIVATE _GNU_SOURCE)
    target_link_libraries(nvtx_app PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
    set_target_properties(nvtx_app PROPERTIES
      RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/nvtx)
    target_compile_definitions(test_Nvtx PRIVATE ACT_HAVE_NVTX=1)
    target_include_directories(test_Nvtx PRIVATE ${ACT_NVTX_INCLUDE_DIR})
    target_link_libraries(test_Nvtx PRIVATE Threads::Threads)
    add_dependencies(test_Nvtx nvtx_app actrace_plugin_nvtx actrace_cli)
    # The same executable, in process (no LD_PRELOAD): sanitizers run it.
    add_test(NAME NvtxThreads COMMAND test_Nvtx threads)
    set_tests_properties(NvtxThreads PROPERTIES TIMEOUT 180
      LABELS "unit;plugin;nvtx;tsan" SKIP_RETURN_CODE 77
      ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR}")
  endif()
endif()
