# SPDX-License-Identifier: MIT
# jansson used to be the JSON parser behind `actrace summary` and `actrace
# check`; they now read traces with actrace's own streaming reader
# (src/reader) and need no JSON library. The option is kept so that
# existing build scripts (-DACT_WITH_JANSSON=OFF) stay valid: it no longer
# changes what is built. jansson remains a test-only dependency (see
# tests/CMakeLists.txt, ACT_TEST_WITH_JANSSON).
option(ACT_WITH_JANSSON "Obsolete: summary/check no longer use jansson" ON)
set(ACT_CLI_HAVE_JANSSON OFF)
