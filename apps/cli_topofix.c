/* SPDX-License-Identifier: MIT */
/* The libomp topology correction of the processes a `tune` command starts (see cli_topofix.h).
 *
 * Where the cpuinfo file lives: a new file (bkm_file_write_new, mode 0600, named after the command's pid) in
 * $TMPDIR, created by the command that starts the OpenMP processes and removed by it when they have
 * all ended; one left by a command killed with SIGKILL is removed by the next command's collection. The workers of a
 * sweep or a run are that command's children and never outlive it (the runner waits for each), so
 * the file exists for their whole lifetime; libomp reads it once, when it initialises. A file
 * (rather than an inherited descriptor such as a memfd under /proc/self/fd) keeps working whatever
 * descriptors the spawner closes or moves, and the same text can be put into a batch script. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_topofix.h"

extern char **environ;

int bkm_cli_libomp_view(char *const *extra, bkm_aff_libomp_view_t *view, bkm_err_t *err)
{
    char *argv[] = {"tune", "affinity", "probe", "--threads", "1", NULL};
    return bkm_aff_libomp_view_spawn("/proc/self/exe", argv, environ, extra, view, err);
}

int bkm_cli_topo_fix_env(bkm_aff_topo_fix_mode_t *mode, const char **tmpdir, bkm_err_t *err)
{
    const char *m = getenv("BKM_LIBOMP_TOPOLOGY");
    const char *tmp = getenv("TMPDIR");
    int rc;
    *mode = BKM_AFF_TOPO_FIX_AUTO;
    *tmpdir = tmp && *tmp ? tmp : "/tmp";
    if (m && *m && (rc = bkm_aff_topo_fix_mode_parse(m, mode, err)) < 0) {
        bkm_err_prefix(err, "BKM_LIBOMP_TOPOLOGY");
        return rc;
    }
    return BKM_OK;
}

int bkm_cli_topo_fix_open(bkm_aff_topo_fix_t *fix, bkm_aff_libomp_view_t *view, bkm_err_t *err)
{
    bkm_aff_topo_fix_mode_t mode = BKM_AFF_TOPO_FIX_AUTO;
    bkm_aff_libomp_view_t own = {0};
    bkm_aff_libomp_view_t *v = view ? view : &own;
    bkm_topo_t *host = NULL;
    const char *tmp;
    int rc;
    memset(fix, 0, sizeof(*fix));
    if (view)
        memset(view, 0, sizeof(*view));
    if ((rc = bkm_cli_topo_fix_env(&mode, &tmp, err)) < 0)
        return rc;
    if ((rc = bkm_topo_open_host(&host, err)) < 0)
        goto out;
    if (mode != BKM_AFF_TOPO_FIX_NEVER && (rc = bkm_cli_libomp_view(NULL, v, err)) < 0)
        goto out;
    /* Files of bkm commands that were killed (SIGKILL) before removing theirs. */
    bkm_aff_topo_fix_collect(tmp);
    rc = bkm_aff_topo_fix_prepare(host, mode == BKM_AFF_TOPO_FIX_NEVER ? NULL : v, mode, tmp, fix, err);
out:
    bkm_aff_libomp_view_free(&own);
    bkm_topo_close(host);
    return rc;
}

void bkm_cli_topo_fix_close(bkm_aff_topo_fix_t *fix)
{
    bkm_aff_topo_fix_release(fix);
}

void bkm_cli_topo_fix_envv(const bkm_aff_topo_fix_t *fix, char *out[3])
{
    out[0] = out[1] = out[2] = NULL;
    if (!fix || !fix->applied)
        return;
    out[0] = (char *)fix->env_method;
    out[1] = (char *)fix->env_file;
}

int bkm_cli_topo_fix_spec(const bkm_aff_topo_fix_t *fix, bkm_tune_trial_spec_t *spec, bkm_err_t *err)
{
    int rc;
    for (int i = 0; i < spec->n_env; i++)
        if (strcmp(spec->env[i].key, "KMP_AFFINITY") == 0 && !bkm_aff_topo_fix_wanted(spec->env[i].value))
            return BKM_OK;
    if (!fix->applied)
        return BKM_OK;
    if ((rc = bkm_tune_trial_spec_setenv(spec, "KMP_TOPOLOGY_METHOD", "cpuinfo", err)) < 0 ||
        (rc = bkm_tune_trial_spec_setenv(spec, "KMP_CPUINFO_FILE", fix->path, err)) < 0)
        return bkm_err_prefix(err, "libomp topology correction");
    return BKM_OK;
}

const char *bkm_cli_topo_fix_describe(const bkm_aff_topo_fix_t *fix, char *buf, size_t n)
{
    if (!fix->applied && !fix->disagreed && !fix->unstable)
        snprintf(buf, n, "%s", "");
    else if (fix->applied && fix->unstable)
        snprintf(buf, n, "libomp topology given from hwloc: %s; every OpenMP process gets %s %s", fix->why,
                 fix->env_method, fix->env_file);
    else if (fix->applied && fix->disagreed)
        snprintf(buf, n, "libomp topology corrected: %s; every OpenMP process gets %s %s", fix->why,
                 fix->env_method, fix->env_file);
    else if (fix->applied)
        snprintf(buf, n,
                 "libomp topology: hwloc's view given although libomp agrees (BKM_LIBOMP_TOPOLOGY=always): %s %s",
                 fix->env_method, fix->env_file);
    else
        snprintf(buf, n, "libomp topology NOT corrected (BKM_LIBOMP_TOPOLOGY=never): %s", fix->why);
    return buf;
}
