# Finds every third-party dependency, all from Debian 12 packages (see tools/setup), and wraps the ones
# that ship no CMake config in imported targets named like the ones that do.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

include(BanyanFindCAF)

find_package(CapnProto CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)

pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET GLOBAL libzmq)
find_package(cppzmq CONFIG REQUIRED)

find_library(Z3_LIBRARY z3 REQUIRED)
find_path(Z3_INCLUDE_DIR z3++.h REQUIRED)
if(NOT TARGET z3::z3)
  add_library(z3::z3 SHARED IMPORTED GLOBAL)
  set_target_properties(z3::z3 PROPERTIES IMPORTED_LOCATION ${Z3_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${Z3_INCLUDE_DIR})
endif()

pkg_check_modules(CBC REQUIRED IMPORTED_TARGET GLOBAL cbc)

find_library(METIS_LIBRARY metis REQUIRED)
find_path(METIS_INCLUDE_DIR metis.h REQUIRED)
if(NOT TARGET metis::metis)
  add_library(metis::metis SHARED IMPORTED GLOBAL)
  set_target_properties(metis::metis PROPERTIES IMPORTED_LOCATION ${METIS_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${METIS_INCLUDE_DIR})
endif()

pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET GLOBAL openblas)
pkg_check_modules(HWLOC IMPORTED_TARGET GLOBAL hwloc)

if(BANYAN_ENABLE_TESTING)
  find_package(GTest CONFIG REQUIRED)
endif()
if(BANYAN_ENABLE_BENCHMARKS)
  find_package(benchmark CONFIG REQUIRED)
endif()
