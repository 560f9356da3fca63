# Finds every third-party dependency, all from Debian 12 packages (see tools/setup), and wraps the ones
# that ship no CMake config in imported targets named like the ones that do.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

include(BanyanFindCAF)

find_package(CapnProto CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(simdjson CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)

pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET GLOBAL libzmq)
find_package(cppzmq CONFIG REQUIRED)

# banyan_import_library(<target> <library name> <a header it installs>): an imported shared library
# target for a package that ships neither a CMake config nor a pkg-config file.
function(banyan_import_library target library header)
  string(MAKE_C_IDENTIFIER ${target} id)
  find_library(${id}_LIBRARY ${library} REQUIRED)
  find_path(${id}_INCLUDE_DIR ${header} REQUIRED)
  if(NOT TARGET ${target})
    add_library(${target} SHARED IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${${id}_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${${id}_INCLUDE_DIR})
  endif()
endfunction()

banyan_import_library(z3::z3 z3 z3++.h)

pkg_check_modules(CBC REQUIRED IMPORTED_TARGET GLOBAL cbc)

banyan_import_library(metis::metis metis metis.h)

pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET GLOBAL openblas)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET GLOBAL hwloc)

if(BANYAN_ENABLE_TESTING)
  find_package(GTest CONFIG REQUIRED)
endif()
if(BANYAN_ENABLE_BENCHMARKS)
  find_package(benchmark CONFIG REQUIRED)
endif()
