# SPDX-License-Identifier: MIT
# `cmake --install`: headers, libactrace (shared and static), the actrace
# command, the bundled plugins (installed by act_add_plugin), actrace.pc and
# actrace-plugin.pc for pkg-config, and the CMake package actrace
# (find_package(actrace) -> actrace::actrace, actrace::actrace_static,
# actrace::plugin_headers, act_add_plugin()).
#
# Everything is relative to the prefix chosen at install time, so
# `cmake --install build --prefix /tmp/x` gives a working tree under /tmp/x.
include(CMakePackageConfigHelpers)

set(ACT_PLUGIN_INSTALL_REL ${CMAKE_INSTALL_LIBDIR}/actrace/plugins)
set(ACT_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/actrace)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/actrace
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel
        FILES_MATCHING PATTERN "*.h")
install(TARGETS actrace actrace_static actrace_plugin_headers
        EXPORT actraceTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                NAMELINK_COMPONENT devel
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS actrace_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT runtime)
# An empty plugin directory exists even before any plugin is built, so
# pkg-config's plugindir always names a real directory.
install(DIRECTORY DESTINATION ${ACT_PLUGIN_INSTALL_REL} COMPONENT runtime)

# ---- CMake package -----------------------------------------------------------
install(EXPORT actraceTargets NAMESPACE actrace:: FILE actraceTargets.cmake
        DESTINATION ${ACT_CMAKE_INSTALL_DIR} COMPONENT devel)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/actraceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/actraceConfig.cmake
  INSTALL_DESTINATION ${ACT_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR ACT_PLUGIN_INSTALL_REL)
# SONAME = major version, so any later minor of the same major is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/actraceConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/actraceConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/actraceConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/ActracePlugin.cmake
        DESTINATION ${ACT_CMAKE_INSTALL_DIR} COMPONENT devel)

# ---- pkg-config --------------------------------------------------------------
# The prefix is written at install time (install(CODE)), so --prefix works.
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(ACT_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(ACT_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
set(ACT_PC_LIBS_PRIVATE "-pthread")
foreach(_l ${CMAKE_DL_LIBS} m)
  string(APPEND ACT_PC_LIBS_PRIVATE " -l${_l}")
endforeach()
set(ACT_PC_PREFIX "@ACT_PC_PREFIX@") # kept for install time
foreach(_pc actrace actrace-plugin)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${_pc}.pc.in
                 ${PROJECT_BINARY_DIR}/cmake/${_pc}.pc.in @ONLY)
  install(CODE "
    file(READ \"${PROJECT_BINARY_DIR}/cmake/${_pc}.pc.in\" _pc)
    string(REPLACE \"@ACT_PC_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" _pc \"\${_pc}\")
    file(WRITE \"${PROJECT_BINARY_DIR}/cmake/install/${_pc}.pc\" \"\${_pc}\")
    file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\"
         TYPE FILE FILES \"${PROJECT_BINARY_DIR}/cmake/install/${_pc}.pc\")
  " COMPONENT devel)
endforeach()

# The installed actrace finds libactrace next to it, wherever the prefix is.
if(NOT DEFINED CMAKE_INSTALL_RPATH)
  file(RELATIVE_PATH _rel ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(actrace_cli PROPERTIES INSTALL_RPATH "\$ORIGIN/${_rel}")
endif()
