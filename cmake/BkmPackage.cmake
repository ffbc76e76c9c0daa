# SPDX-License-Identifier: MIT
# `cpack -G DEB` in the build folder: bkm_VERSION_ARCH.deb, the install of cmake/BkmInstall.cmake
# under /usr (docs/install.md). Depends is derived by dpkg-shlibdeps from the libraries tune and
# the team shim link (oneDNN, PAPI, hwloc, MPICH, LLVM libomp, SQLite, zlib, libc), so it follows
# the system the package is built on; the programs tune starts but does not link are Recommends
# (mpiexec for `tune train` and MPI sweeps) and Suggests (Slurm's sbatch, Lmod, the data set).
set(BKM_PACKAGE_MAINTAINER "bkm maintainers" CACHE STRING "Maintainer field of the .deb (Name <address>)")

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "bkm")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "best-known OpenMP runtime settings for deep-learning kernels on HPC nodes")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")           # bkm_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${BKM_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
# the first line of Description is CPACK_PACKAGE_DESCRIPTION_SUMMARY; this is the rest
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "The tune command sweeps OpenMP runtime settings (threads, KMP_AFFINITY,
OMP_PLACES/OMP_PROC_BIND, KMP_BLOCKTIME, kernel blocking, MPI ranks x threads)
over deep-learning kernels (native C and oneDNN) and over the user's own
program, stores every sample in SQLite, derives best-known settings with their
statistics, and writes Slurm batch scripts, HTML reports and a regression gate.
Includes the man page tune(1) and an Lmod module file.")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "mpich")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-client, lmod, man-db, dataset-fashion-mnist")
# CPack's DEB generator runs file(1) and dpkg-shlibdeps on the ELF files to derive Depends.
find_program(BKM_FILE_PROGRAM file)
find_program(BKM_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NOT BKM_FILE_PROGRAM OR NOT BKM_DPKG_SHLIBDEPS)
  message(STATUS "cpack -G DEB needs file and dpkg-shlibdeps: apt-get install file dpkg-dev")
endif()
include(CPack)
