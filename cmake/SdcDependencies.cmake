# Every third-party dependency is found here, once, and each names the Debian package that provides
# it; scripts/install-deps.sh installs exactly those packages and scripts/check-deps.sh audits the
# build against that list. Third-party include directories are SYSTEM so that our warning flags do
# not apply to them.
#
# A missing dependency never surfaces as a compile error later: every lookup is quiet, the missing
# ones are collected, and configure stops with one line naming every Debian package to install.

set(SDC_MISSING_PACKAGES "")

# sdc_missing(<what> <debian-package>): records that <what> was not found.
function(sdc_missing what package)
  set(SDC_MISSING_PACKAGES "${SDC_MISSING_PACKAGES};${package} (${what})" PARENT_SCOPE)
endfunction()

# sdc_find_package(<name> <debian-package> [find_package arguments...])
macro(sdc_find_package name package)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    sdc_missing("${name}" ${package})
  endif()
endmacro()

# sdc_find_header(<target> <header> <debian-package>): a header-only dependency that ships no CMake
# package or pkg-config file becomes an INTERFACE target with its directory as a SYSTEM include.
function(sdc_find_header target header package)
  string(MAKE_C_IDENTIFIER "SDC_${target}_INCLUDE_DIR" cache_name)
  find_path(${cache_name} ${header})
  if(NOT ${cache_name})
    sdc_missing("${header}" ${package})
    set(SDC_MISSING_PACKAGES "${SDC_MISSING_PACKAGES}" PARENT_SCOPE)
    return()
  endif()
  add_library(${target} INTERFACE)
  target_include_directories(${target} SYSTEM INTERFACE ${${cache_name}})
endfunction()

# sdc_find_python_module(<module> <debian-package>): a module of Debian's /usr/bin/python3, which
# the tests use (Debian's python modules are not importable from other interpreters on PATH).
function(sdc_find_python_module module package)
  execute_process(COMMAND /usr/bin/python3 -c "import ${module}"
                  RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
  if(NOT status EQUAL 0)
    sdc_missing("python3 module ${module}" ${package})
    set(SDC_MISSING_PACKAGES "${SDC_MISSING_PACKAGES}" PARENT_SCOPE)
  endif()
endfunction()

sdc_find_package(MPI libopenmpi-dev COMPONENTS C CXX)
if(MPI_FOUND AND NOT MPIEXEC_EXECUTABLE)
  sdc_missing("mpirun" openmpi-bin)
endif()

set(HDF5_PREFER_PARALLEL TRUE)
sdc_find_package(HDF5 libhdf5-openmpi-dev COMPONENTS C)
if(HDF5_FOUND AND NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "sdc-engine needs the parallel (MPI) build of HDF5, but the HDF5 found is serial "
    "(HDF5_C_INCLUDE_DIRS=${HDF5_C_INCLUDE_DIRS}). On Debian 12 install libhdf5-openmpi-dev "
    "(scripts/install-deps.sh does), and make sure no serial HDF5 comes first on CMAKE_PREFIX_PATH.")
endif()

sdc_find_package(TBB libtbb-dev)
sdc_find_package(Eigen3 libeigen3-dev 3.3 NO_MODULE)
sdc_find_package(Threads libc6-dev)
sdc_find_package(absl libabsl-dev)
sdc_find_package(yaml-cpp libyaml-cpp-dev)
sdc_find_package(nlohmann_json nlohmann-json3-dev 3.10)
sdc_find_package(fmt libfmt-dev)
sdc_find_package(spdlog libspdlog-dev)
sdc_find_package(CLI11 libcli11-dev 2.1)
sdc_find_package(ZLIB zlib1g-dev)
sdc_find_package(OpenSSL libssl-dev COMPONENTS Crypto)
sdc_find_header(sdc_random123 Random123/philox.h librandom123-dev)
# CHOLMOD (SuiteSparse) ships neither a CMake package nor a pkg-config file on Debian 12.
find_path(SDC_CHOLMOD_INCLUDE_DIR cholmod.h PATH_SUFFIXES suitesparse)
find_library(SDC_CHOLMOD_LIBRARY cholmod)
if(SDC_CHOLMOD_INCLUDE_DIR AND SDC_CHOLMOD_LIBRARY)
  add_library(SuiteSparse::CHOLMOD INTERFACE IMPORTED)
  target_include_directories(SuiteSparse::CHOLMOD SYSTEM INTERFACE ${SDC_CHOLMOD_INCLUDE_DIR})
  target_link_libraries(SuiteSparse::CHOLMOD INTERFACE ${SDC_CHOLMOD_LIBRARY})
else()
  sdc_missing("CHOLMOD" libsuitesparse-dev)
endif()
sdc_find_package(PkgConfig pkg-config)
if(PkgConfig_FOUND)
  pkg_check_modules(LIBDEFLATE QUIET IMPORTED_TARGET libdeflate)
  if(NOT LIBDEFLATE_FOUND)
    sdc_missing("libdeflate" libdeflate-dev)
  endif()
endif()

if(SDC_BUILD_TESTS)
  sdc_find_package(GTest libgtest-dev)
  sdc_find_python_module(jsonschema python3-jsonschema)
  sdc_find_python_module(h5py python3-h5py)
  # the browser test: the HTML report rendered headless and its screenshot counted
  sdc_find_python_module(PIL python3-pil)
  find_program(SDC_CHROMIUM chromium)
  if(NOT SDC_CHROMIUM)
    sdc_missing("chromium" chromium)
  endif()
endif()
if(SDC_BUILD_BENCHMARKS)
  sdc_find_package(benchmark libbenchmark-dev)
endif()

if(SDC_MISSING_PACKAGES)
  list(REMOVE_ITEM SDC_MISSING_PACKAGES "")
  list(JOIN SDC_MISSING_PACKAGES ", " missing)
  # The leading space keeps CMake from wrapping the line.
  message(FATAL_ERROR " sdc-engine: missing Debian packages: ${missing}; install them with scripts/install-deps.sh")
endif()

add_library(sdc_hdf5 INTERFACE)
target_include_directories(sdc_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS})
target_compile_definitions(sdc_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} H5_USE_110_API)
target_link_libraries(sdc_hdf5 INTERFACE ${HDF5_C_LIBRARIES} MPI::MPI_C)
