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
