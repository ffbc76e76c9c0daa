#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the real programs and libraries of the runtime detection tests (run by CMake at build time):
#   build_fixtures.sh OUT SRC GCC CLANG RT_DIR LIBOMP
# OUT/prog: omp_gcc (libgomp), omp_clang (libomp), noomp, noomp_static, two_linked (libgomp and
#           libomp both in DT_NEEDED), two_dlopen (libgomp linked, libomp dlopened), gomp_rt (gcc's
#           libgomp.so.1 found through bkm's private folder RT_DIR, where it is a link to libomp),
#           omp_script.sh (a #!/bin/sh script that execs omp_gcc), omp_ctypes.py
# OUT/ld:   dirA/libdep.so (gcc: libgomp) and dirB/libdep.so (clang: libomp), both SONAME libdep.so;
#           mid/libmid.so (needs libdep.so, no search path); programs that find libdep.so through
#           DT_RPATH, DT_RUNPATH, $ORIGIN, $LIB, $PLATFORM and through libmid.
# The fixtures are the subjects of the tests, built like user programs: no sanitizer, no bkm flags.
set -euo pipefail
out=$1 src=$2 gcc=$3 clang=$4 rt=$5 libomp=$6
rm -rf "$out/prog" "$out/ld"
mkdir -p "$out/prog" "$out/ld"/{dirA,dirB,mid,origin/bin,origin/lib,dst/bin}
p=$out/prog
"$gcc" -O1 -fopenmp "$src/omp_prog.c" -o "$p/omp_gcc"
"$clang" -O1 -fopenmp "$src/omp_prog.c" -o "$p/omp_clang"
"$gcc" -O1 -Wno-unknown-pragmas "$src/omp_prog.c" -o "$p/noomp"
"$gcc" -O1 -static -Wno-unknown-pragmas "$src/omp_prog.c" -o "$p/noomp_static"
"$gcc" -O1 -fopenmp "$src/omp_prog.c" -Wl,--no-as-needed "$libomp" -o "$p/two_linked"
"$gcc" -O1 -fopenmp -DLOAD_LIBOMP "$src/omp_prog.c" -ldl -o "$p/two_dlopen"
"$gcc" -O1 -fopenmp "$src/omp_prog.c" -Wl,--disable-new-dtags,-rpath,"$rt" -o "$p/gomp_rt"
printf '#!/bin/sh\nexec "$(dirname "$0")/omp_gcc" "$@"\n' >"$p/omp_script.sh"
chmod +x "$p/omp_script.sh"
cp "$src/omp_ctypes.py" "$p/omp_ctypes.py"
chmod +x "$p/omp_ctypes.py"

l=$out/ld
"$gcc" -O1 -fopenmp -shared -fPIC "$src/dep.c" -Wl,-soname,libdep.so -o "$l/dirA/libdep.so"
"$clang" -O1 -fopenmp -shared -fPIC "$src/dep.c" -Wl,-soname,libdep.so -o "$l/dirB/libdep.so"
"$gcc" -O1 -shared -fPIC "$src/mid.c" -L"$l/dirA" -ldep -Wl,-soname,libmid.so -o "$l/mid/libmid.so"
cc_dep() { "$gcc" -O1 "$src/main_dep.c" "$@"; }
cc_dep -L"$l/dirA" -ldep -Wl,--disable-new-dtags,-rpath,"$l/dirA" -o "$l/exe_rpath"
cc_dep -L"$l/dirA" -ldep -Wl,--enable-new-dtags,-rpath,"$l/dirA" -o "$l/exe_runpath"
cc_dep -DVIA_MID -L"$l/mid" -lmid -Wl,-rpath-link,"$l/dirA" -Wl,--disable-new-dtags,-rpath,"$l/mid:$l/dirA" \
  -o "$l/exe_rpath_mid"
cc_dep -DVIA_MID -L"$l/mid" -lmid -Wl,-rpath-link,"$l/dirA" -Wl,--enable-new-dtags,-rpath,"$l/mid:$l/dirA" \
  -o "$l/exe_runpath_mid"
cp "$l/dirA/libdep.so" "$l/origin/lib/libdep.so"
cc_dep -L"$l/dirA" -ldep -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../lib' -o "$l/origin/bin/exe_origin"
# $LIB and $PLATFORM: the expansions pick dst/<$LIB> or dst/<$PLATFORM> (dirB's copy: libomp)
# before dst/alt (dirA's: libgomp)
mkdir -p "$l/dst/lib/x86_64-linux-gnu" "$l/dst/alt"
cp "$l/dirB/libdep.so" "$l/dst/lib/x86_64-linux-gnu/libdep.so"
cp "$l/dirA/libdep.so" "$l/dst/alt/libdep.so"
cc_dep -L"$l/dirA" -ldep -Wl,--disable-new-dtags,-rpath,'${ORIGIN}/../$LIB:$ORIGIN/../alt' -o "$l/dst/bin/exe_lib"
# $PLATFORM is the CPU's: glibc makes it haswell or xeon_phi on some Intel CPUs, else x86_64; a
# copy under each name, so the path the loader takes names the value it used
for platform in x86_64 haswell xeon_phi; do
  mkdir -p "$l/dst/$platform"
  cp "$l/dirB/libdep.so" "$l/dst/$platform/libdep.so"
done
cc_dep -L"$l/dirA" -ldep -Wl,--disable-new-dtags,-rpath,'$ORIGIN/../$PLATFORM:$ORIGIN/../alt' \
  -o "$l/dst/bin/exe_platform"
