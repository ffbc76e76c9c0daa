# SPDX-License-Identifier: MIT
# One OpenMP runtime per process (docs/affinity.md §3.2).
#
# Debian's libdnnl links libgomp.so.1. Our binaries are built by clang -fopenmp, so libomp is a
# direct dependency and oneDNN's GOMP_* calls bind to libomp. But libgomp.so.1 would still be
# loaded, and its constructor pins the main thread when OMP_PLACES/OMP_PROC_BIND is set. So every
# executable gets a DT_RPATH (which, unlike DT_RUNPATH, also applies to the dependencies of its
# dependencies) to a private folder where libgomp.so.1 is a link to libomp.so.5: the real libgomp
# is never loaded.
#
# In the build tree that folder is BUILD/rt. The installed tune is its own link of the same
# objects (apps/CMakeLists.txt: tune_installed) whose DT_RPATH is $ORIGIN/../LIBDIR/bkm/rt: no path
# into the build tree, and an installed tree that can be moved as a whole (docs/install.md). It is
# not the build tree's tune with its DT_RPATH rewritten at install time: for that CMake pads the
# build tree's entry with a trailing ':', an empty entry that the loader reads as the current folder.
set(BKM_RT_DIR "${CMAKE_BINARY_DIR}/rt")
file(MAKE_DIRECTORY "${BKM_RT_DIR}")
file(CREATE_LINK "${BKM_LIBOMP_REAL}" "${BKM_RT_DIR}/libgomp.so.1" SYMBOLIC)

# The install layout (GNUInstallDirs, relative to the prefix): tune in BKM_INSTALL_BINDIR, the
# team shim and the runtime folder in BKM_INSTALL_PKGLIBDIR. Both must be relative: the installed
# tune finds its files from its own location, never from a path fixed at configure time.
foreach(d BINDIR LIBDIR DATAROOTDIR MANDIR DOCDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    message(FATAL_ERROR "CMAKE_INSTALL_${d}='${CMAKE_INSTALL_${d}}' is absolute: bkm installs relative to the "
                        "prefix (give the prefix with CMAKE_INSTALL_PREFIX or cmake --install --prefix)")
  endif()
endforeach()
set(BKM_INSTALL_BINDIR "${CMAKE_INSTALL_BINDIR}")
set(BKM_INSTALL_PKGLIBDIR "${CMAKE_INSTALL_LIBDIR}/bkm")
set(BKM_INSTALL_RT_DIR "${BKM_INSTALL_PKGLIBDIR}/rt")
set(BKM_MODULE_DIR_PARENT "${CMAKE_INSTALL_DATAROOTDIR}/modulefiles")   # module use PREFIX/this
set(BKM_MODULE_DIR "${BKM_MODULE_DIR_PARENT}/bkm")
file(RELATIVE_PATH BKM_RT_FROM_BINDIR "/${BKM_INSTALL_BINDIR}" "/${BKM_INSTALL_RT_DIR}")

# bkm_executable(<target> [INSTALLED]): applies the single-runtime link rules to an executable;
# INSTALLED: the DT_RPATH of the install tree ($ORIGIN/BINDIR-to-rt), for a target that is installed
# and never run from the build tree.
function(bkm_executable tgt)
  cmake_parse_arguments(E "INSTALLED" "" "" ${ARGN})
  target_link_options(${tgt} PRIVATE "LINKER:--disable-new-dtags")
  if(E_INSTALLED)
    set_target_properties(${tgt} PROPERTIES BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "$ORIGIN/${BKM_RT_FROM_BINDIR}"
                                            INSTALL_RPATH_USE_LINK_PATH ON)
  else()
    target_link_options(${tgt} PRIVATE "LINKER:-rpath,${BKM_RT_DIR}")
  endif()
  target_link_libraries(${tgt} PRIVATE OpenMP::OpenMP_C)
endfunction()
