/* SPDX-License-Identifier: MIT */
/* Test helper: re-execute this test binary with a controlled OpenMP environment. */
#ifndef BKM_TEST_AFFINITY_CHILD_H
#define BKM_TEST_AFFINITY_CHILD_H

#include "bkm/common.h"

/** Run /proc/self/exe with @p args (NULL-terminated, args[0] = program name) after removing
 *  every OpenMP/KMP affinity variable from the environment and adding @p env ("NAME=value",
 *  NULL-terminated). The child's libomp reads this host's hwloc topology (KMP_TOPOLOGY_METHOD=
 *  cpuinfo and a KMP_CPUINFO_FILE from bkm_topo_cpuinfo_write, removed afterwards), as in every
 *  process bkm starts on a host whose CPUID disagrees with hwloc: the binding a test expects from
 *  the planner then holds whatever this host's CPUID says (issue 8); not with KMP_AFFINITY=disabled
 *  (bkm_aff_topo_fix_wanted). The child's stdout is appended
 *  to @p out. Returns the child's exit status (0..255), or -1 when it could not be started or was
 *  killed by a signal. */
int bkm_test_run_child(const char *const *env, const char *const *args, bkm_buf_t *out);

#endif
