# Installs the library, headers and a CMake package so users can
# find_package(collie) and link collie::collie.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS collie EXPORT collieTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/collie DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT collieTargets NAMESPACE collie:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collie)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/collieConfig.cmake.in
  "@PACKAGE_INIT@\ninclude(CMakeFindDependencyMacro)\nfind_dependency(Threads)\ninclude(\"\${CMAKE_CURRENT_LIST_DIR}/collieTargets.cmake\")\n")
configure_package_config_file(${CMAKE_CURRENT_BINARY_DIR}/collieConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/collieConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collie)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/collieConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/collieConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/collieConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collie)
