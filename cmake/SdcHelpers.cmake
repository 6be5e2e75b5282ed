# sdc_add_test(NAME SOURCES ... LIBS ... LABELS ... [RUNS_MPI])
#   One GoogleTest binary; every TEST becomes a CTest test carrying LABELS. RUNS_MPI marks binaries
#   whose tests start MPI processes (the sdc executable): LeakSanitizer is off for them, because
#   Open MPI keeps allocations from MPI_Init in plug-ins it unloads before exit, which LeakSanitizer
#   reports as leaks of unknown modules. Our own code keeps leak checking in the unit-test binaries.
function(sdc_add_test name)
  cmake_parse_arguments(ARG "RUNS_MPI" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main sdc_warnings sdc_sanitizers)
  target_compile_definitions(${name} PRIVATE
    SDC_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    SDC_BINARY_DIR="${PROJECT_BINARY_DIR}"
    SDC_SHARED_DATA_DIR="${PROJECT_SOURCE_DIR}/../shared/data")
  include(GoogleTest)
  set(environment "")
  if(ARG_RUNS_MPI)
    set(environment "ASAN_OPTIONS=detect_leaks=0")
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${environment}" DISCOVERY_TIMEOUT 60)
endfunction()

# sdc_add_bench(NAME SOURCES ... LIBS ...)
function(sdc_add_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} benchmark::benchmark benchmark::benchmark_main sdc_warnings)
  target_compile_definitions(${name} PRIVATE SDC_BUILD_TYPE="${CMAKE_BUILD_TYPE}")
endfunction()
