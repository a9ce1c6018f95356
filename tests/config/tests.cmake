# SPDX-License-Identifier: MIT
# Configuration (DESIGN.md section 3): `ctest -R Config`.
act_add_test(Config SOURCES ${PROJECT_SOURCE_DIR}/tests/config/test_config.c
             LABELS config)

# `actrace config check`: exit codes and exact output for the files in
# tests/config/data (FILE.conf -> FILE.out / FILE.err).
act_add_test(ConfigCheckCli SOURCES ${PROJECT_SOURCE_DIR}/tests/config/test_config_cli.c
             LABELS config cli)
add_dependencies(test_ConfigCheckCli actrace_cli)
