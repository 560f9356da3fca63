# Installs the package config so an app can `find_package(banyan)` and link banyan::<component>.
get_property(banyan_components GLOBAL PROPERTY BANYAN_COMPONENTS)
if(NOT banyan_components)
  return()
endif()
include(CMakePackageConfigHelpers)
set(banyan_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/banyan)
install(EXPORT banyan-targets NAMESPACE banyan:: DESTINATION ${banyan_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/banyanConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/banyanConfig.cmake INSTALL_DESTINATION ${banyan_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/banyanConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/banyanConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/banyanConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/BanyanFindCAF.cmake
  ${CMAKE_CURRENT_LIST_DIR}/BanyanCapnProto.cmake
  ${CMAKE_CURRENT_LIST_DIR}/BanyanApp.cmake
  DESTINATION ${banyan_cmake_dir})
