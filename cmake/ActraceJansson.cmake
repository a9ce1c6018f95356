# SPDX-License-Identifier: MIT
# jansson, the JSON parser behind `actrace summary` and `actrace check`
# (and the tests that read traces back). Optional: without it the CLI's
# readers say "built without JSON support" and exit 1.
#
# Sets ACT_CLI_HAVE_JANSSON (ON/OFF) and, when found, the imported target
# PkgConfig::JANSSON (also used by tests/CMakeLists.txt, whose own
# ACT_TEST_WITH_JANSSON switch stays independent of this one).
option(ACT_WITH_JANSSON "Build actrace summary/check with jansson (if found)" ON)
set(ACT_CLI_HAVE_JANSSON OFF)
if(ACT_WITH_JANSSON)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(JANSSON QUIET IMPORTED_TARGET jansson)
    if(JANSSON_FOUND)
      set(ACT_CLI_HAVE_JANSSON ON)
    endif()
  endif()
  if(NOT ACT_CLI_HAVE_JANSSON)
    list(APPEND _act_missing
         "jansson (actrace summary/check disabled, apt-get install libjansson-dev pkg-config)")
  endif()
endif()
