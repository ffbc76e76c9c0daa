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
# In the build tree that folder is BUILD/rt. An installed executable (cmake --install, the .deb)
# gets $ORIGIN/../LIBDIR/bkm/rt instead, rewritten in place by the install step (CMake reserves
# room in the build tree's DT_RPATH for it), so the installed tree holds no path into the build
# tree and can be moved as a whole (docs/install.md).
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

# bkm_executable(<target>): applies the single-runtime link rules to an executable.
function(bkm_executable tgt)
  target_link_options(${tgt} PRIVATE "LINKER:--disable-new-dtags")
  set_property(TARGET ${tgt} APPEND PROPERTY BUILD_RPATH "${BKM_RT_DIR}")
  set_target_properties(${tgt} PROPERTIES INSTALL_RPATH "$ORIGIN/${BKM_RT_FROM_BINDIR}"
                                          INSTALL_RPATH_USE_LINK_PATH TRUE)
  target_link_libraries(${tgt} PRIVATE OpenMP::OpenMP_C)
endfunction()
