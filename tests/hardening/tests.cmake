# SPDX-License-Identifier: MIT
# Hardening (issue 12): environment, config limits, output files, `record`
# preconditions. `ctest -R Harden`.
add_executable(act_suid_probe ${PROJECT_SOURCE_DIR}/tests/hardening/suid_probe.c)
target_link_libraries(act_suid_probe PRIVATE actrace)
act_warnings(act_suid_probe)
set_target_properties(act_suid_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
act_add_test(HardenSetuid SOURCES ${PROJECT_SOURCE_DIR}/tests/hardening/test_setuid.c
             LABELS hardening nosan)
add_dependencies(test_HardenSetuid act_suid_probe act_tp_ok)
act_add_test(HardenConfig SOURCES ${PROJECT_SOURCE_DIR}/tests/hardening/test_config_limits.c
             LABELS hardening config nosan TIMEOUT 120)
add_dependencies(test_HardenConfig actrace_cli)
act_add_test(HardenOutput SOURCES ${PROJECT_SOURCE_DIR}/tests/hardening/test_output_files.c
             LIBS Threads::Threads LABELS hardening writer TIMEOUT 60)
act_add_test(HardenRecord SOURCES ${PROJECT_SOURCE_DIR}/tests/hardening/test_record_output.c
             LABELS hardening cli nosan TIMEOUT 120)
add_dependencies(test_HardenRecord actrace_cli)
