# SPDX-License-Identifier: MIT
# One OpenMP runtime per process (docs/affinity.md §3.2).
#
# Debian's libdnnl links libgomp.so.1. Our binaries are built by clang -fopenmp, so libomp is a
# direct dependency and oneDNN's GOMP_* calls bind to libomp. But libgomp.so.1 would still be
# loaded, and its constructor pins the main thread when OMP_PLACES/OMP_PROC_BIND is set. So every
# executable gets a DT_RPATH (which, unlike DT_RUNPATH, also applies to the dependencies of its
# dependencies) to a private folder where libgomp.so.1 is a link to libomp.so.5: the real libgomp
# is never loaded.
set(BKM_RT_DIR "${CMAKE_BINARY_DIR}/rt")
file(MAKE_DIRECTORY "${BKM_RT_DIR}")
file(CREATE_LINK "${BKM_LIBOMP_REAL}" "${BKM_RT_DIR}/libgomp.so.1" SYMBOLIC)

# bkm_executable(<target>): applies the single-runtime link rules to an executable.
function(bkm_executable tgt)
  target_link_options(${tgt} PRIVATE "LINKER:--disable-new-dtags" "LINKER:-rpath,${BKM_RT_DIR}")
  target_link_libraries(${tgt} PRIVATE OpenMP::OpenMP_C)
endfunction()
