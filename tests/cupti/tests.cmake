# SPDX-License-Identifier: MIT
# The cupti plugin (plugins/cupti), without a GPU: `ctest -R PluginCupti`.
#  - PluginCuptiTranslate: hand-built CUDA 13 activity buffers walked by
#    the real cuptiActivityGetNextRecord into the translation code;
#  - PluginCuptiPm: PM metrics of chip GH100 through the profiler host API
#    (list, units, one-pass check, unknown and multi-pass refusals) and
#    the decode path with a stubbed sample source;
#  - PluginCuptiPmLifecycle: the PM sampler thread's start/stop/start and
#    single profiler (de)initialisation (also under TSan);
#  - PluginCuptiRecord: `actrace record --plugin cupti -- actrace-demo`
#    declines cleanly and leaves the exit status and trace unchanged.
# The first two need libcupti at run time and skip (77) without it.
# Whatever uses CUPTI's profiler host API is labelled nosan: libcupti opens
# libnvperf_host.so with RTLD_DEEPBIND, which the sanitizer runtimes refuse.
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
               LIBS ${CMAKE_DL_LIBS} m LABELS plugin cupti nosan TIMEOUT 300)
  act_add_test(PluginCuptiPmLifecycle
               SOURCES tests/cupti/test_cupti_pm.c ${cupti_dir}/cupti_pm.c
                       ${cupti_dir}/cupti_api.c
               LIBS ${CMAKE_DL_LIBS} m Threads::Threads LABELS plugin cupti tsan
               ARGS lifecycle)
  foreach(t PluginCuptiTranslate PluginCuptiPm PluginCuptiPmLifecycle)
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
# actrace-cupti-metrics answers for chip GH100 without a GPU (needs
# libcupti at run time like the tests above; 2 = no libcupti -> skipped).
if(TARGET actrace_cupti_metrics)
  add_test(NAME PluginCuptiMetricsCli
           COMMAND actrace_cupti_metrics --chip GH100 --check
                   sm__cycles_active.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum.per_second)
  set_tests_properties(PluginCuptiMetricsCli PROPERTIES LABELS "unit;plugin;cupti;nosan"
    PASS_REGULAR_EXPRESSION "GH100: 2 metrics, 1 pass.*byte/second" SKIP_RETURN_CODE 2 TIMEOUT 120)
  add_test(NAME PluginCuptiMetricsCliUnknown
           COMMAND actrace_cupti_metrics --chip GH100 --check nosuch__metric.sum)
  set_tests_properties(PluginCuptiMetricsCliUnknown PROPERTIES LABELS "unit;plugin;cupti;nosan"
    PASS_REGULAR_EXPRESSION "unknown metric 'nosuch__metric.sum' on chip GH100.*sm__cycles_active"
    SKIP_RETURN_CODE 2 TIMEOUT 120)
endif()
# A real session with cupti_replay.so (replay_plugin.c): the translation
# and PM sink fed with a synthetic GPU run, through the host and the
# writer, checked with jansson and by tests/gpu/check_trace.py. Plus the
# checker's own self-test on hand-made good and broken traces.
if(ACT_BUILD_PLUGINS AND TARGET actrace_plugin_cupti AND ACT_HAVE_JANSSON)
  add_library(act_cupti_replay MODULE ${PROJECT_SOURCE_DIR}/tests/cupti/replay_plugin.c
              ${cupti_dir}/cupti_translate.c ${cupti_dir}/cupti_api.c ${cupti_dir}/cupti_pm.c)
  set_target_properties(act_cupti_replay PROPERTIES PREFIX "" OUTPUT_NAME cupti_replay
    SUFFIX ".so" LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/cupti
    C_STANDARD 11 C_VISIBILITY_PRESET hidden)
  target_include_directories(act_cupti_replay PRIVATE ${PROJECT_SOURCE_DIR}/include ${cupti_dir}
                             ${cupti_dir}/shim ${ACT_CUPTI_INCLUDE_DIR} ${ACT_CUDA_INCLUDE_DIR})
  target_compile_definitions(act_cupti_replay PRIVATE _GNU_SOURCE)
  if(ACT_CUPTI_LIBDIR)
    target_compile_definitions(act_cupti_replay PRIVATE ACT_CUPTI_LIBDIR="${ACT_CUPTI_LIBDIR}")
  endif()
  target_link_libraries(act_cupti_replay PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  act_warnings(act_cupti_replay)
  act_add_test(PluginCuptiReplay SOURCES tests/cupti/test_cupti_replay.c
               LIBS PkgConfig::JANSSON Threads::Threads LABELS plugin cupti)
  add_dependencies(test_PluginCuptiReplay act_cupti_replay)
endif()
find_program(ACT_PYTHON3 python3)
if(ACT_PYTHON3)
  add_test(NAME PluginCuptiGpuCheckSelfTest
           COMMAND ${ACT_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/gpu/check_trace.py --self-test)
  set_tests_properties(PluginCuptiGpuCheckSelfTest PROPERTIES LABELS "unit;plugin;cupti"
                       TIMEOUT 120)
endif()
# actrace config check --chip: PM_COUNTER_METRICS (or Kineto's
# CUPTI_PM_SAMPLING_METRICS) checked for a chip by actrace-cupti-metrics.
if(TARGET actrace_cupti_metrics AND TARGET actrace_cli)
  set(cfgdir ${PROJECT_BINARY_DIR}/tests/cupti)
  file(WRITE ${cfgdir}/pm_good.cfg
       "CUPTI_PM_SAMPLING_METRICS = sm__cycles_active.avg, dram__bytes_read.sum.per_second\n")
  file(WRITE ${cfgdir}/pm_bad.cfg
       "PM_COUNTER_METRICS = sm__cycles_active.avg, sm__nosuch.avg\n")
  add_test(NAME PluginCuptiConfigCheckChip
           COMMAND actrace_cli config check --chip GH100 ${cfgdir}/pm_good.cfg)
  add_test(NAME PluginCuptiConfigCheckChipBad
           COMMAND actrace_cli config check --chip GH100 ${cfgdir}/pm_bad.cfg)
  set_tests_properties(PluginCuptiConfigCheckChip PROPERTIES LABELS "unit;plugin;cupti;cli;nosan"
    PASS_REGULAR_EXPRESSION "PM_COUNTER_INTERVAL_USECS=10000"
    SKIP_REGULAR_EXPRESSION "no CUPTI library" TIMEOUT 120)
  set_tests_properties(PluginCuptiConfigCheckChipBad PROPERTIES LABELS "unit;plugin;cupti;cli;nosan"
    PASS_REGULAR_EXPRESSION "unknown metric 'sm__nosuch.avg' on chip GH100.*pm_bad.cfg: error: PM_COUNTER_METRICS: not valid for chip GH100"
    SKIP_REGULAR_EXPRESSION "no CUPTI library" TIMEOUT 120)
endif()
# act-bench-cupti: translation cost per record against the bare
# cuptiActivityGetNextRecord walk (run by hand; see the file).
if(ACT_BUILD_PLUGINS AND TARGET actrace_plugin_cupti)
  add_executable(act_bench_cupti ${PROJECT_SOURCE_DIR}/tests/cupti/bench_cupti_translate.c
                 ${cupti_dir}/cupti_translate.c ${cupti_dir}/cupti_api.c)
  set_target_properties(act_bench_cupti PROPERTIES OUTPUT_NAME act-bench-cupti
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin C_STANDARD 11)
  target_include_directories(act_bench_cupti PRIVATE ${PROJECT_SOURCE_DIR}/include ${cupti_dir}
                             ${cupti_dir}/shim ${ACT_CUPTI_INCLUDE_DIR} ${ACT_CUDA_INCLUDE_DIR})
  target_compile_definitions(act_bench_cupti PRIVATE _GNU_SOURCE)
  if(ACT_CUPTI_LIBDIR)
    target_compile_definitions(act_bench_cupti PRIVATE ACT_CUPTI_LIBDIR="${ACT_CUPTI_LIBDIR}")
  endif()
  target_link_libraries(act_bench_cupti PRIVATE ${CMAKE_DL_LIBS})
  act_warnings(act_bench_cupti)
endif()
# PluginCuptiFake: cupti.so's glue end to end in real sessions, with
# libfakecupti.so / libfakecuda.so standing in for libcupti and the driver.
if(ACT_BUILD_PLUGINS AND TARGET actrace_plugin_cupti AND ACT_HAVE_JANSSON)
  foreach(f cupti cuda)
    add_library(act_fake_${f} SHARED ${PROJECT_SOURCE_DIR}/tests/cupti/fake_${f}.c)
    set_target_properties(act_fake_${f} PROPERTIES OUTPUT_NAME fake${f}
      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/cupti C_STANDARD 11
      C_VISIBILITY_PRESET hidden)
    target_include_directories(act_fake_${f} PRIVATE ${ACT_CUPTI_INCLUDE_DIR} ${ACT_CUDA_INCLUDE_DIR})
    target_compile_definitions(act_fake_${f} PRIVATE _GNU_SOURCE)
    target_link_libraries(act_fake_${f} PRIVATE Threads::Threads)
  endforeach()
  act_add_test(PluginCuptiFake SOURCES tests/cupti/test_cupti_fake.c
               LIBS PkgConfig::JANSSON Threads::Threads ${CMAKE_DL_LIBS}
               LABELS plugin cupti tsan)
  target_include_directories(test_PluginCuptiFake PRIVATE ${ACT_CUPTI_INCLUDE_DIR}
                             ${ACT_CUDA_INCLUDE_DIR})
  add_dependencies(test_PluginCuptiFake act_fake_cupti act_fake_cuda actrace_plugin_cupti)
  # PluginCuptiFork: the same fakes under record, a program that forks:
  # the child never delivers into its parent's session.
  act_add_test(PluginCuptiFork SOURCES tests/cupti/test_cupti_fork.c
               LIBS PkgConfig::JANSSON ${CMAKE_DL_LIBS} LABELS plugin cupti cli nosan TIMEOUT 120)
  add_dependencies(test_PluginCuptiFork act_fake_cupti act_fake_cuda actrace_plugin_cupti
                   actrace_cli)
endif()
