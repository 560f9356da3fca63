# Lets find_package(CapnProto) work in a project with or without C enabled: the installed
# banyanConfig.cmake includes it just before finding Cap'n Proto, so that `project(app CXX)` can
# find_package(banyan).
#
# Why: Debian's CapnProtoConfig.cmake probes libatomic with check_library_exists, which compiles C;
# in a CXX-only project that fails ("CMAKE_C_COMPILER not set"). check_library_exists skips the probe
# when its result variable FOUND_LIBATOMIC is already defined, so without C we ask the same question
# in C++ first: does a program link with -latomic? The answer means what the C probe's does (no
# libatomic: Cap'n Proto's own "libatomic not found" error), and a project with C gets the original.
include_guard(GLOBAL)
if(NOT CMAKE_C_COMPILER_LOADED AND NOT DEFINED FOUND_LIBATOMIC)
  include(CheckCXXSourceCompiles)
  set(banyan_saved_required_libraries "${CMAKE_REQUIRED_LIBRARIES}")
  set(banyan_saved_required_quiet "${CMAKE_REQUIRED_QUIET}")
  set(CMAKE_REQUIRED_LIBRARIES atomic)
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles("#include <atomic>
int main() { std::atomic<long long> x{0}; return static_cast<int>(x.load()); }" FOUND_LIBATOMIC)
  set(CMAKE_REQUIRED_LIBRARIES "${banyan_saved_required_libraries}")
  set(CMAKE_REQUIRED_QUIET "${banyan_saved_required_quiet}")
endif()
