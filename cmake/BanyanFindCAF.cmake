# CAF 0.17.6 (Debian 12) ships no CMake config: find its headers and libraries and define caf::core
# and caf::io. Used by the build and by the installed banyanConfig.cmake.
find_package(Threads REQUIRED)
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
if(NOT TARGET caf::core)
  add_library(caf::core SHARED IMPORTED GLOBAL)
  set_target_properties(caf::core PROPERTIES IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  add_library(caf::io SHARED IMPORTED GLOBAL)
  set_target_properties(caf::io PROPERTIES IMPORTED_LOCATION ${CAF_IO_LIBRARY}
    INTERFACE_LINK_LIBRARIES caf::core)
endif()
