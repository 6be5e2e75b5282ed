# sdc_add_test(NAME SOURCES ... LIBS ... LABELS ...)
#   One GoogleTest binary; every TEST becomes a CTest test carrying LABELS.
function(sdc_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main sdc_warnings sdc_sanitizers)
  target_compile_definitions(${name} PRIVATE
    SDC_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    SDC_BINARY_DIR="${PROJECT_BINARY_DIR}"
    SDC_SHARED_DATA_DIR="${PROJECT_SOURCE_DIR}/../shared/data")
  include(GoogleTest)
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()

# sdc_add_bench(NAME SOURCES ... LIBS ...)
function(sdc_add_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} benchmark::benchmark benchmark::benchmark_main sdc_warnings)
  target_compile_definitions(${name} PRIVATE SDC_BUILD_TYPE="${CMAKE_BUILD_TYPE}")
endfunction()
