# banyan_add_app(<name> SOURCES <files...> [DEPS <targets...>])
# An app on the SDK: an executable linked to banyan::sdk and DEPS (e.g. banyan::trainer), compiled as
# C++20. Shipped with the installed package (find_package(banyan) defines it) and used in the SDK's own
# tree, so a sample's CMakeLists reads the same in both. When a dependency is not part of the build (an
# install or a BANYAN_ONLY build without it), the app is skipped with a status line and no target
# exists: guard anything that refers to it with if(TARGET <name>). In the SDK's own tree the app also
# gets the SDK's warning flags (banyan_flags); a user's build never does.
include_guard(GLOBAL)

function(banyan_add_app name)
  cmake_parse_arguments(arg "" "" "SOURCES;DEPS" ${ARGN})
  foreach(dep IN ITEMS banyan::sdk LISTS arg_DEPS)
    if(NOT TARGET ${dep})
      message(STATUS "${name}: skipped (${dep} not built)")
      return()
    endif()
  endforeach()
  add_executable(${name} ${arg_SOURCES})
  target_compile_features(${name} PRIVATE cxx_std_20)
  target_link_libraries(${name} PRIVATE banyan::sdk ${arg_DEPS})
  if(TARGET banyan_flags)
    target_link_libraries(${name} PRIVATE banyan_flags)
  endif()
endfunction()
