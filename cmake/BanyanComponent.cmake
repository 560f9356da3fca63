# One place that says how a banyan component is built.
#
# banyan_flags: INTERFACE target with our warnings, standard and sanitizer flags. Every target of ours
# links it PRIVATE, so consumers of the installed SDK never inherit -Werror or sanitizers.
add_library(banyan_flags INTERFACE)
target_compile_features(banyan_flags INTERFACE cxx_std_20)
target_compile_options(banyan_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -Wno-missing-field-initializers>)
if(BANYAN_SANITIZE)
  list(JOIN BANYAN_SANITIZE "," banyan_sanitizers)
  target_compile_options(banyan_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${banyan_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(banyan_flags INTERFACE -fsanitize=${banyan_sanitizers})
endif()

# banyan_component(<name>
#   SOURCES <files...>        private sources (usually src/*.cpp)
#   PUBLIC_DEPS <targets...>  targets that the public headers expose
#   PRIVATE_DEPS <targets...> targets used only in src/
#   TESTS <files...>          GoogleTest sources, usually ${PROJECT_SOURCE_DIR}/tests/<name>/*.cpp
#   TEST_DEPS <targets...>    extra targets for the tests
#   NO_HEADER_CHECK)          headers are checked by another component sharing the include dir
# Declares the shared library banyan::<name> (public headers in ./include/banyan/<name>/), installs
# it with its headers, and declares its test executable test_<name> with one ctest per test case.
function(banyan_component name)
  cmake_parse_arguments(arg "NO_HEADER_CHECK" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS;TESTS;TEST_DEPS" ${ARGN})
  set(target banyan_${name})
  add_library(${target} SHARED ${arg_SOURCES})
  add_library(banyan::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name}
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(${target} PUBLIC ${arg_PUBLIC_DEPS} PRIVATE ${arg_PRIVATE_DEPS} banyan_flags)
  set_property(GLOBAL APPEND PROPERTY BANYAN_COMPONENTS ${name})
  install(TARGETS ${target} EXPORT banyan-targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/include)
    install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
  if(arg_TESTS)
    banyan_test(${name} SOURCES ${arg_TESTS} DEPS banyan::${name} ${arg_TEST_DEPS})
  endif()
  if(NOT arg_NO_HEADER_CHECK)
    banyan_check_headers(${target} ${CMAKE_CURRENT_SOURCE_DIR}/include)
  endif()
endfunction()

# banyan_check_headers(<target> <include dir>)
# Compiles every public header under <include dir> alone (one generated .cpp each, as Seastar's
# checkheaders): a header that misses an include or leaks a private one fails the build. Part of `all`,
# collected in the `checkheaders` target.
function(banyan_check_headers target include_dir)
  file(GLOB_RECURSE headers RELATIVE ${include_dir} CONFIGURE_DEPENDS ${include_dir}/*.hpp)
  if(NOT headers)
    return()
  endif()
  set(sources)
  foreach(header IN LISTS headers)
    string(MAKE_C_IDENTIFIER ${header} stem)
    set(source ${CMAKE_CURRENT_BINARY_DIR}/checkheaders/${stem}.cpp)
    file(CONFIGURE OUTPUT ${source} CONTENT "#include \"${header}\"  // must compile alone\n")
    list(APPEND sources ${source})
  endforeach()
  add_library(${target}_checkheaders OBJECT ${sources})
  target_link_libraries(${target}_checkheaders PRIVATE ${target} banyan_flags)
  if(NOT TARGET checkheaders)
    add_custom_target(checkheaders)
  endif()
  add_dependencies(checkheaders ${target}_checkheaders)
endfunction()

# banyan_test(<name> SOURCES <files...> DEPS <targets...>)
# A GoogleTest executable test_<name>; every TEST becomes one ctest labelled <name>.
function(banyan_test name)
  if(NOT BANYAN_ENABLE_TESTING)
    return()
  endif()
  cmake_parse_arguments(arg "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(test_${name} ${arg_SOURCES})
  target_link_libraries(test_${name} PRIVATE ${arg_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
    banyan_flags)
  target_compile_definitions(test_${name} PRIVATE
    BANYAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}" BANYAN_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(test_${name} DISCOVERY_TIMEOUT 120
    PROPERTIES LABELS ${name} TIMEOUT 600)
endfunction()

# banyan_test_properties(<name> MATCHING <regex> PROPERTIES <property> <value> ...)  (one value each)
# Sets ctest properties on those tests of test_<name> (a banyan_test) whose names match <regex>, e.g.
# PROCESSORS for the tests that start node processes, so that `ctest -j` counts each as the cores it
# keeps busy and never runs more at once than the machine has. The tests are known only once the
# executable has listed them (gtest_discover_tests, after the build), so the properties are set by a
# script that ctest reads after that list; a test that no longer matches simply keeps the defaults.
# May be called from any folder; call it again for another group of tests of the same executable.
function(banyan_test_properties name)
  if(NOT TARGET test_${name})
    return()
  endif()
  cmake_parse_arguments(arg "" "MATCHING" "PROPERTIES" ${ARGN})
  list(LENGTH arg_PROPERTIES count)
  math(EXPR odd "${count} % 2")
  if(NOT arg_MATCHING OR count EQUAL 0 OR odd)
    message(FATAL_ERROR "banyan_test_properties(${name}): needs MATCHING <regex> and PROPERTIES <property> <value> pairs")
  endif()
  set(pairs "")
  math(EXPR last "${count} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET arg_PROPERTIES ${i} property)
    list(GET arg_PROPERTIES ${j} value)
    string(APPEND pairs " ${property} [==[${value}]==]")
  endforeach()
  # One script per call, numbered in the order of the calls (later calls override earlier ones).
  get_property(calls GLOBAL PROPERTY BANYAN_TEST_PROPERTIES_${name})
  list(LENGTH calls n)
  set_property(GLOBAL APPEND PROPERTY BANYAN_TEST_PROPERTIES_${name} "${arg_MATCHING}")
  get_target_property(folder test_${name} BINARY_DIR)
  set(script ${folder}/test_${name}_properties_${n}.cmake)
  file(WRITE ${script}
    "# Generated by banyan_test_properties: ctest reads it after test_${name}'s discovered tests.\n"
    "foreach(t IN LISTS test_${name}_TESTS)\n"
    "  if(t MATCHES [==[${arg_MATCHING}]==])\n"
    "    set_tests_properties(\"\${t}\" PROPERTIES${pairs})\n"
    "  endif()\n"
    "endforeach()\n")
  # The folder that declared the executable: its CTestTestfile includes the discovered list first.
  get_target_property(source_folder test_${name} SOURCE_DIR)
  set_property(DIRECTORY ${source_folder} APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()

# banyan_all_targets(<out-var> <targets...>): TRUE when every one of <targets> is part of this build
# (BANYAN_ONLY may leave some out; optional tools and benchmarks are then skipped, not broken).
function(banyan_all_targets out)
  foreach(dep IN LISTS ARGN)
    if(NOT TARGET ${dep})
      set(${out} FALSE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} TRUE PARENT_SCOPE)
endfunction()

# banyan_cli_command(<name> SOURCES <files...> DEPS <targets...>)
# Adds a group of subcommand sources to the `banyan` CLI (tools/banyan): each defines the setup
# function of a command listed in tools/banyan/main.cpp, which includes the group when the executable
# is compiled with BANYAN_CLI_<NAME>. Skipped (no sources, no definition) when a dependency target is
# not part of this build.
function(banyan_cli_command name)
  cmake_parse_arguments(arg "" "" "SOURCES;DEPS" ${ARGN})
  banyan_all_targets(built ${arg_DEPS})
  if(NOT built)
    return()
  endif()
  add_library(banyan_cli_${name} OBJECT ${arg_SOURCES})
  target_link_libraries(banyan_cli_${name} PRIVATE banyan_cli_support ${arg_DEPS} banyan_flags)
  set_property(GLOBAL APPEND PROPERTY BANYAN_CLI_COMMANDS banyan_cli_${name})
  set_property(GLOBAL APPEND PROPERTY BANYAN_CLI_DEPS ${arg_DEPS})
endfunction()
