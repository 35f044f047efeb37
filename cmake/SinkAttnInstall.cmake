# Installs headers, libraries, tools and a CMake package so that another MLIR
# project can `find_package(SinkAttn)` and link SinkAttn::<library>.
include(CMakePackageConfigHelpers)

get_property(SINKATTN_EXPORTED_LIBS GLOBAL PROPERTY SINKATTN_EXPORTED_LIBS)
install(TARGETS ${SINKATTN_EXPORTED_LIBS}
  EXPORT SinkAttnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS sinkattn-opt sinkattn-runner RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Public headers and TableGen sources, then the generated .inc files.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/SinkAttn ${PROJECT_SOURCE_DIR}/include/SinkAttn-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/SinkAttn
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc" PATTERN "*.h"
  PATTERN "CMakeFiles" EXCLUDE)

set(SINKATTN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/SinkAttn)
install(EXPORT SinkAttnTargets
  NAMESPACE SinkAttn::
  DESTINATION ${SINKATTN_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/SinkAttnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/SinkAttnConfig.cmake
  INSTALL_DESTINATION ${SINKATTN_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/SinkAttnConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/SinkAttnConfig.cmake
  ${PROJECT_BINARY_DIR}/SinkAttnConfigVersion.cmake
  DESTINATION ${SINKATTN_INSTALL_CMAKEDIR})
