# Helpers that make each component's CMakeLists.txt read as a manifest.

# drover_cc_library(NAME <n> [HDRS ...] SRCS ... [DEPS ...])
#   -> static library drover_<n>, alias drover::<n>
function(drover_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "HDRS;SRCS;DEPS" ${ARGN})
  add_library(drover_${ARG_NAME} STATIC ${ARG_SRCS} ${ARG_HDRS})
  add_library(drover::${ARG_NAME} ALIAS drover_${ARG_NAME})
  target_include_directories(drover_${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_features(drover_${ARG_NAME} PUBLIC cxx_std_20)
  target_compile_options(drover_${ARG_NAME} PRIVATE ${DROVER_WARNINGS})
  target_link_libraries(drover_${ARG_NAME} PUBLIC ${ARG_DEPS})
endfunction()

# drover_cc_test(NAME <n> SRCS ... [DEPS ...])
#   -> gtest binary whose cases are registered with ctest
function(drover_cc_test)
  if(NOT DROVER_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_compile_options(${ARG_NAME} PRIVATE ${DROVER_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} drover::testing drover::gtest_main
    GTest::gmock GTest::gtest)
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
endfunction()

# drover_static_dep(<target> <archive> [<interface deps>...])
#   -> imported target <target> for the static archive <archive> (e.g. libnettle.a),
#   which must exist. For a library of which little is used: of a shared library
#   nearly all the text ends up resident in each process that maps it (the kernel maps
#   page-cache folios whole), while an archive adds only the objects used.
function(drover_static_dep TARGET ARCHIVE)
  find_library(${TARGET}_ARCHIVE NAMES ${ARCHIVE} REQUIRED NO_CACHE)
  add_library(${TARGET} STATIC IMPORTED GLOBAL)
  set_target_properties(${TARGET} PROPERTIES IMPORTED_LOCATION ${${TARGET}_ARCHIVE})
  if(ARGN)
    set_property(TARGET ${TARGET} PROPERTY INTERFACE_LINK_LIBRARIES ${ARGN})
  endif()
endfunction()

# drover_absl_from_archives()
#   Points every imported absl:: target at its static archive (libabsl_*.a, shipped
#   beside the shared library) instead of libabsl_*.so. For the reason
#   drover_static_dep gives: Drover uses a little of each of ~25 absl libraries, and
#   linked shared each would be mapped whole into every process (~1 MiB in the agent
#   and in the supervisor). The supervisor also links libstdc++ statically, which only
#   works if no shared library it loads needs libstdc++.so. The targets keep their
#   usage requirements (include directories, dependencies between absl libraries).
function(drover_absl_from_archives)
  get_directory_property(targets DIRECTORY ${PROJECT_SOURCE_DIR} IMPORTED_TARGETS)
  foreach(target IN LISTS targets)
    if(NOT target MATCHES "^absl::")
      continue()
    endif()
    get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
    if(NOT configs)
      continue()  # header-only: nothing to link
    endif()
    foreach(config IN LISTS configs)
      get_target_property(location ${target} IMPORTED_LOCATION_${config})
      if(NOT location MATCHES "^(.*)\\.so(\\.[0-9.]+)?$")
        continue()
      endif()
      set(archive "${CMAKE_MATCH_1}.a")
      if(NOT EXISTS "${archive}")
        message(FATAL_ERROR "${target}: ${archive} is missing (libabsl-dev ships it)")
      endif()
      set_target_properties(${target} PROPERTIES IMPORTED_LOCATION_${config} "${archive}")
    endforeach()
  endforeach()
endfunction()
