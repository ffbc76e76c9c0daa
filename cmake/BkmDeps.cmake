# SPDX-License-Identifier: MIT
# Finds every dependency. A missing one stops the configure step and names the Debian package.
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config")
endif()

macro(bkm_require_pkg prefix module debpkg)
  pkg_check_modules(${prefix} IMPORTED_TARGET ${module})
  if(NOT ${prefix}_FOUND)
    message(FATAL_ERROR "${module} not found (pkg-config): apt-get install ${debpkg}")
  endif()
endmacro()

find_package(OpenMP COMPONENTS C)
if(NOT OpenMP_C_FOUND)
  message(FATAL_ERROR "OpenMP for C not found: apt-get install clang libomp-dev")
endif()
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(WARNING "bkm expects clang + LLVM libomp; ${CMAKE_C_COMPILER_ID} may link libgomp, "
                  "which ignores KMP_AFFINITY/KMP_BLOCKTIME/KMP_HW_SUBSET")
endif()

bkm_require_pkg(HWLOC hwloc libhwloc-dev)
bkm_require_pkg(PAPI papi libpapi-dev)

find_package(SQLite3)
if(NOT SQLite3_FOUND)
  message(FATAL_ERROR "SQLite3 not found: apt-get install libsqlite3-dev")
endif()

# oneDNN is found by its header and library, not by Debian's dnnl-config.cmake: that file
# find_package()s OpenCL as REQUIRED although libdnnl-dev only Recommends ocl-icd-opencl-dev, so
# on a machine installed with --no-install-recommends the config fails for a piece bkm never uses.
find_path(BKM_DNNL_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.h)
find_library(BKM_DNNL_LIBRARY NAMES dnnl)
if(NOT BKM_DNNL_INCLUDE_DIR OR NOT BKM_DNNL_LIBRARY)
  message(FATAL_ERROR "oneDNN (oneapi/dnnl/dnnl.h, libdnnl.so) not found: apt-get install libdnnl-dev")
endif()
if(NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION "${BKM_DNNL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${BKM_DNNL_INCLUDE_DIR}")
endif()

find_package(MPI COMPONENTS C QUIET)
if(NOT MPI_C_FOUND)
  message(FATAL_ERROR "MPI (MPICH) not found: apt-get install mpich libmpich-dev")
endif()
find_program(BKM_MPIEXEC NAMES mpiexec.hydra mpiexec HINTS ${MPIEXEC_EXECUTABLE})

find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  message(FATAL_ERROR "zlib not found (IDX data files): apt-get install zlib1g-dev")
endif()

find_library(BKM_LIBOMP NAMES omp.so.5 libomp.so.5 omp
             HINTS /usr/lib/llvm-14/lib /usr/lib/x86_64-linux-gnu)
if(NOT BKM_LIBOMP)
  message(FATAL_ERROR "LLVM libomp not found: apt-get install libomp-dev")
endif()
get_filename_component(BKM_LIBOMP_REAL "${BKM_LIBOMP}" REALPATH)

if(BUILD_TESTING OR NOT DEFINED BUILD_TESTING)
  pkg_check_modules(CHECK IMPORTED_TARGET check)
  if(NOT CHECK_FOUND)
    message(FATAL_ERROR "check (unit-test framework) not found (pkg-config): apt-get install check")
  endif()
  find_program(BKM_PYTHON3 python3)
  if(NOT BKM_PYTHON3)
    message(FATAL_ERROR "python3 not found (the CLI tests read JSON with it): apt-get install python3")
  endif()
endif()

if(BKM_SANITIZE)
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=address,undefined")
  set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=address,undefined")
  check_c_source_compiles("int main(void) { return 0; }" BKM_HAVE_SANITIZERS)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT BKM_HAVE_SANITIZERS)
    message(FATAL_ERROR "BKM_SANITIZE=ON: ${CMAKE_C_COMPILER} cannot link -fsanitize=address,undefined: "
                        "apt-get install libclang-rt-14-dev")
  endif()
endif()
