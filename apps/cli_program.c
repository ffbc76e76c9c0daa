/* SPDX-License-Identifier: MIT */
/* The user's program on the command line (`-- CMD ARGS`): split, resolved, hashed, its OpenMP
 * runtime found, described for the tuner. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_home.h"
#include "cli_program.h"

extern char **environ;

int bkm_cli_program_split(int argc, char **argv, int *argc_opts, char ***prog_argv, int *prog_argc, bkm_err_t *err)
{
    *argc_opts = argc;
    *prog_argv = NULL;
    *prog_argc = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            if (i + 1 >= argc)
                return bkm_err_set(err, BKM_EINVAL, "'--' must be followed by the program to run (-- CMD ARGS)");
            *argc_opts = i;
            *prog_argv = argv + i + 1;
            *prog_argc = argc - i - 1;
            return BKM_OK;
        }
    return BKM_OK;
}

/* The runtime an interpreted program loads: start it once and read what it maps. */
static int program_probe(bkm_cli_program_t *p, int argc, double timeout_s, bkm_err_t *err)
{
    bkm_aff_runtime_probe_cfg_t cfg = {0};
    char *argv[BKM_TUNE_PROGRAM_ARGS_MAX + 1];
    int rc;
    for (int i = 0; i < argc; i++)
        argv[i] = (char *)p->argv[i];
    argv[argc] = NULL;
    cfg.timeout_s = timeout_s > 0 ? timeout_s : 20.0;
    cfg.envp = environ;
    fprintf(stderr, "tune: %s is run by an interpreter, so the OpenMP runtime it loads cannot be read from its "
                    "files: starting it once (up to %g s) to see what it maps\n", p->exe, cfg.timeout_s);
    bkm_aff_runtime_result_free(&p->detected);
    bkm_aff_runtime_result_init(&p->detected);
    if ((rc = bkm_aff_runtime_probe_run(p->exe, argv, &cfg, &p->detected, err)) < 0)
        return rc;
    p->probed = 1;
    return BKM_OK;
}

static void program_how(bkm_cli_program_t *p)
{
    const bkm_aff_runtime_result_t *r = &p->detected;
    bkm_buf_t b;
    bkm_buf_init(&b);
    if (p->probed)
        bkm_buf_printf(&b, "probe run (%d maps read, %.1f s%s): ", r->samples, r->ran_s,
                       r->exited ? ", it exited by itself" : "");
    else
        bkm_buf_puts(&b, "ELF closure: ");
    if (r->n_runtimes > 0)
        bkm_aff_runtime_result_chain(r, r->runtime[0], &b);
    else
        bkm_buf_puts(&b, r->reason ? r->reason : "no OpenMP runtime");
    snprintf(p->how, sizeof p->how, "%s", bkm_buf_str(&b));
    bkm_buf_free(&b);
}

int bkm_cli_program_open(bkm_cli_program_t *p, int argc, char **argv, const char *name, const char *metric,
                         const char *unit, int higher, const char *runtime, double probe_timeout_s, const char *self,
                         const struct bkm_topo *topo, bkm_err_t *err)
{
    bkm_aff_runtime_kind_t forced = BKM_AFF_RUNTIME_UNKNOWN;
    bkm_aff_runtime_cfg_t cfg;
    char *resolved = NULL;
    bkm_cli_home_t home;
    int rc;
    memset(p, 0, sizeof *p);
    bkm_aff_runtime_result_init(&p->detected);
    if (runtime != NULL && (rc = bkm_aff_runtime_kind_parse(runtime, &forced, err)) < 0)
        return bkm_err_prefix(err, "--runtime");
    if (argc < 1 || argc > BKM_TUNE_PROGRAM_ARGS_MAX)
        return bkm_err_set(err, BKM_EINVAL, "-- CMD: %d words, 1..%d allowed", argc, BKM_TUNE_PROGRAM_ARGS_MAX);
    bkm_aff_runtime_cfg_init(&cfg);
    cfg.path = getenv("PATH");
    cfg.ld_library_path = getenv("LD_LIBRARY_PATH");
    cfg.ld_preload = getenv("LD_PRELOAD");
    if ((rc = bkm_aff_runtime_which(argv[0], &cfg, &resolved, err)) < 0)
        return rc;
    if (realpath(resolved, p->exe) == NULL) {
        rc = bkm_err_set(err, BKM_EINVAL, "-- CMD: cannot resolve '%s': %s", resolved, strerror(errno));
        bkm_free(resolved);
        return rc;
    }
    bkm_free(resolved);
    p->argv[0] = p->exe;
    for (int i = 1; i < argc; i++)
        p->argv[i] = argv[i];
    p->argv[argc] = NULL;
    if ((rc = bkm_sha256_file(p->exe, p->sha256, err)) < 0)
        return rc;
    if (name != NULL)
        snprintf(p->name, sizeof p->name, "%s", name);
    else
        bkm_tune_program_default_name(p->argv, argc, p->name, sizeof p->name);
    if ((rc = bkm_aff_runtime_detect_static(p->exe, &cfg, &p->detected, err)) < 0)
        return rc;
    if (runtime == NULL && p->detected.kind == BKM_AFF_RUNTIME_UNKNOWN && p->detected.interpreter != NULL &&
        (rc = program_probe(p, argc, probe_timeout_s, err)) < 0)
        return rc;
    program_how(p);
    p->forced = runtime != NULL ? (int)forced : -1;
    if (runtime != NULL)
        snprintf(p->how, sizeof p->how, "--runtime %s", bkm_aff_runtime_kind_name(forced));
    /* the team shim: PREFIX/lib/bkm when tune is installed, beside it in the build tree */
    if ((rc = bkm_cli_home_exe(self, &home, err)) < 0)
        return rc;
    snprintf(p->shim, sizeof p->shim, "%s", home.shim);
    p->pg.argv = p->argv;
    p->pg.argc = argc;
    p->pg.name = p->name;
    p->pg.exe_sha256 = p->sha256;
    p->pg.metric = metric;
    p->pg.metric_unit = unit;
    p->pg.metric_higher = higher;
    p->pg.runtime = bkm_cli_program_runtime(p);
    p->pg.runtime_how = p->how;
    p->pg.topo = topo;
    p->pg.team_shim = access(p->shim, R_OK) == 0 ? p->shim : NULL;
    if (p->pg.team_shim == NULL)
        fprintf(stderr, "tune: warning: the team shim %s is missing: the OpenMP team is inferred from /proc only\n",
                p->shim);
    return bkm_tune_program_check(&p->pg, err);
}

int bkm_cli_program_runtime(const bkm_cli_program_t *p)
{
    const bkm_aff_runtime_result_t *r = &p->detected;
    if (p->forced >= 0)
        return p->forced;
    if (r->n_runtimes > 0)
        return (int)r->obj[r->runtime[0]].kind;
    return r->kind == BKM_AFF_RUNTIME_UNKNOWN && !p->probed ? BKM_AFF_RUNTIME_UNKNOWN : BKM_AFF_RUNTIME_NONE;
}

void bkm_cli_program_close(bkm_cli_program_t *p)
{
    if (p != NULL)
        bkm_aff_runtime_result_free(&p->detected);
}
