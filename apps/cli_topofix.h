/* SPDX-License-Identifier: MIT */
/* The libomp topology correction of the processes a `tune` command starts (issue 8): libomp's own
 * view of this host is taken from a child, compared with hwloc's, and when they differ every
 * OpenMP process bkm starts gets KMP_TOPOLOGY_METHOD=cpuinfo and a KMP_CPUINFO_FILE written from
 * hwloc. */
#ifndef BKM_CLI_TOPOFIX_H
#define BKM_CLI_TOPOFIX_H

#include "bkm/affinity.h"
#include "bkm/tuner.h"

/** The correction's settings from the environment, read here only: BKM_LIBOMP_TOPOLOGY into
 *  @p mode (auto when unset or empty; BKM_EINVAL naming a bad value) and TMPDIR into @p tmpdir
 *  ("/tmp" when unset or empty). */
int bkm_cli_topo_fix_env(bkm_aff_topo_fix_mode_t *mode, const char **tmpdir, bkm_err_t *err);

/** Decide the correction for this command. Reads BKM_LIBOMP_TOPOLOGY (auto, the default: correct
 *  when libomp disagrees with hwloc; never; always) and TMPDIR (where the cpuinfo file goes; /tmp
 *  when unset). Opens this host's topology, and unless the mode is never runs `<this executable>
 *  affinity probe --threads 1` with KMP_AFFINITY=verbose to read libomp's view (into @p view when
 *  not NULL; the caller frees it). The file lives until bkm_cli_topo_fix_close, which the command
 *  calls after every process it started has ended. Returns BKM_OK or a status with @p err set. */
int bkm_cli_topo_fix_open(bkm_aff_topo_fix_t *fix, bkm_aff_libomp_view_t *view, bkm_err_t *err);
/** libomp's own view of this host: `<this executable> affinity probe --threads 1` with
 *  KMP_AFFINITY=verbose, this environment (minus the runtime's affinity variables) and @p extra
 *  ("NAME=value", NULL-terminated, may be NULL). */
int bkm_cli_libomp_view(char *const *extra, bkm_aff_libomp_view_t *view, bkm_err_t *err);
/** Remove the cpuinfo file. */
void bkm_cli_topo_fix_close(bkm_aff_topo_fix_t *fix);
/** The correction as "NAME=value" strings for a child's environment: {KMP_TOPOLOGY_METHOD=..,
 *  KMP_CPUINFO_FILE=.., NULL} when applied, else {NULL}. The strings point into @p fix. */
void bkm_cli_topo_fix_envv(const bkm_aff_topo_fix_t *fix, char *out[3]);
/** Add the correction's two variables to @p spec's environment (nothing when not applied, or when
 *  the spec's KMP_AFFINITY is "disabled": bkm_aff_topo_fix_wanted), so the worker gets them and the
 *  stored trial records them. Call it after the spec's KMP_AFFINITY is set. */
int bkm_cli_topo_fix_spec(const bkm_aff_topo_fix_t *fix, bkm_tune_trial_spec_t *spec, bkm_err_t *err);
/** One line for people, e.g. "libomp topology: corrected (libomp decoding legacy APIC ids: ...;
 *  hwloc: ...): KMP_TOPOLOGY_METHOD=cpuinfo KMP_CPUINFO_FILE=/tmp/bkm-cpuinfo-Ab12Cd", or ""
 *  when nothing was corrected and nothing disagreed. */
const char *bkm_cli_topo_fix_describe(const bkm_aff_topo_fix_t *fix, char *buf, size_t n);

#endif
