# SPDX-License-Identifier: MIT
# The cupti plugin (plugins/cupti), without a GPU: `ctest -R PluginCupti`.
#  - PluginCuptiTranslate: hand-built CUDA 13 activity buffers walked by
#    the real cuptiActivityGetNextRecord into the translation code;
#  - PluginCuptiPm: PM metrics of chip GH100 through the profiler host API
#    (list, units, one-pass check, unknown and multi-pass refusals) and
#    the decode path with a stubbed sample source;
#  - PluginCuptiRecord: `actrace record --plugin cupti -- actrace-demo`
#    declines cleanly and leaves the exit status and trace unchanged.
# The first two need libcupti at run time and skip (77) without it.
# tests/gpu/run.sh is the check on a real GPU (not run by ctest).
if(ACT_BUILD_PLUGINS AND TARGET actrace_plugin_cupti)
  set(cupti_dir ${PROJECT_SOURCE_DIR}/plugins/cupti)
  act_add_test(PluginCuptiTranslate
               SOURCES tests/cupti/test_cupti_translate.c ${cupti_dir}/cupti_translate.c
                       ${cupti_dir}/cupti_api.c
               LIBS ${CMAKE_DL_LIBS} LABELS plugin cupti)
  act_add_test(PluginCuptiPm
               SOURCES tests/cupti/test_cupti_pm.c ${cupti_dir}/cupti_pm.c
                       ${cupti_dir}/cupti_api.c
               LIBS ${CMAKE_DL_LIBS} m LABELS plugin cupti TIMEOUT 300)
  foreach(t PluginCuptiTranslate PluginCuptiPm)
    target_include_directories(test_${t} PRIVATE ${cupti_dir} ${cupti_dir}/shim
                               ${ACT_CUPTI_INCLUDE_DIR} ${ACT_CUDA_INCLUDE_DIR})
    if(ACT_CUPTI_LIBDIR)
      target_compile_definitions(test_${t} PRIVATE ACT_CUPTI_LIBDIR="${ACT_CUPTI_LIBDIR}")
    endif()
  endforeach()
  if(ACT_HAVE_JANSSON)
    act_add_test(PluginCuptiRecord SOURCES tests/cupti/test_cupti_record.c
                 LIBS PkgConfig::JANSSON LABELS plugin cupti cli nosan TIMEOUT 180)
    add_dependencies(test_PluginCuptiRecord actrace_plugin_cupti actrace_cli actrace_demo)
  endif()
endif()
