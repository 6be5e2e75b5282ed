# Every third-party dependency is found here, once; scripts/install-deps.sh installs the Debian
# packages that provide them. Third-party include directories are SYSTEM so that our warning
# flags do not apply to them.

find_package(MPI REQUIRED COMPONENTS C CXX)

set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "sdc-engine needs the parallel (MPI) build of HDF5, but the HDF5 found is serial "
    "(HDF5_C_INCLUDE_DIRS=${HDF5_C_INCLUDE_DIRS}). On Debian 12 install libhdf5-openmpi-dev "
    "(scripts/install-deps.sh does), and make sure no serial HDF5 comes first on CMAKE_PREFIX_PATH.")
endif()
add_library(sdc_hdf5 INTERFACE)
target_include_directories(sdc_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS})
target_compile_definitions(sdc_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} H5_USE_110_API)
target_link_libraries(sdc_hdf5 INTERFACE ${HDF5_C_LIBRARIES} MPI::MPI_C)

find_package(TBB REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(Threads REQUIRED)
find_package(absl REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 2.1 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBDEFLATE REQUIRED IMPORTED_TARGET libdeflate)

if(SDC_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SDC_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
