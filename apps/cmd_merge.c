/* SPDX-License-Identifier: MIT */
/* `tune merge OUT IN...`: merge results databases (one per array job) into one, with provenance. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "cli_common.h"
#include "cli_opt.h"

const char bkm_cli_merge_summary[] = "merge results databases (e.g. from a job array) into one";

static int merge_run(const char **argv, int argc);

/* OUT then the INs, in the order given. */
typedef struct merge_opts {
    const char **paths;
    int n, cap;
} merge_opts_t;

static int merge_path(void *cfg, const char *arg, bkm_err_t *err)
{
    merge_opts_t *m = cfg;
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        const char **p = realloc(m->paths, (size_t)cap * sizeof *p);
        if (p == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "out of memory for %d paths", cap);
        m->paths = p;
        m->cap = cap;
    }
    m->paths[m->n++] = arg;
    return BKM_OK;
}

static const bkm_cli_cmd_spec_t merge_cmd = {
    .name = "merge",
    .usage = "tune merge OUT IN [IN...]",
    .about = "Copies every host, sweep, trial (with its samples and counters) and best-known setting of each\n"
             "IN database into OUT, creating OUT (and its folder) when missing. Each sweep keeps its uuid and\n"
             "records the file it came from. Merging is idempotent: a sweep already in OUT (same uuid) only\n"
             "gets the trials it lacks, so the same IN can be merged again safely. Every IN is checked first\n"
             "and read read-only: it stays byte-identical (a leftover IN-wal is read, never checkpointed into\n"
             "IN). If one is not a bkm database, is damaged, is missing, or is OUT itself under another name\n"
             "(a symlink, a hard link), nothing is merged and OUT is left untouched. An IN is data bkm may not\n"
             "have written: it must hold bkm's schema of its version exactly (plain tables, bkm's columns and\n"
             "indexes, no view or trigger) and only rows bkm would store (one-line names, finite numbers,\n"
             "canonical configurations, ...), read within a time limit; else it is refused naming the table,\n"
             "the row and the reason (exit 3), and OUT stays untouched and unlocked. Each IN is merged in one\n"
             "transaction. Sweeps refuse to write a database on a file system shared between hosts (NFS,\n"
             "Lustre, GPFS, ...): each job writes node-local disk, and one merge afterwards may write OUT\n"
             "there (with a warning: never let two hosts write it at once).",
    .positional = "arguments:\n"
                  "  OUT    the database to merge into (created when missing)\n"
                  "  IN     a database to merge from (read-only); use -- before a name that starts with '-'",
    .positional_fn = merge_path,
    .more = "example (after `sbatch --array=0-15` wrote results/job-<n>.sqlite):\n"
            "  tune merge results/bkm.sqlite results/job-*.sqlite\n\n"
            "exit codes: 0 ok, 2 bad usage (or IN is OUT), 3 an input or OUT is missing, not a bkm database or\n"
            "            damaged\n",
};

int bkm_cli_merge(int argc, char **argv)
{
    merge_opts_t m = {0};
    bkm_err_t err = {0};
    int ret = bkm_cli_opt_parse(&merge_cmd, argc, argv, &m, &err);
    if (ret != 0) {
        if (ret < 0)
            fprintf(stderr, "%s\n", err.msg);
        free(m.paths);
        return ret > 0 ? 0 : bkm_status_exit_code(ret);
    }
    ret = merge_run(m.paths, m.n);
    free(m.paths);
    return ret;
}

/* tune merge on paths[0] = OUT, paths[1..n) = IN; the exit code. */
static int merge_run(const char **argv, int argc)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    int ret = BKM_OK;
    if (argc < 2) {
        fprintf(stderr, "tune merge: need OUT and at least one IN (see tune merge --help)\n");
        return 2;
    }
    for (int i = 0; i < argc; i++)
        if (!bkm_cli_db_check("merge", argv[i]))
            return 2;
    for (int i = 1; i < argc; i++) {
        int same = strcmp(argv[i], argv[0]) == 0;
        if (!same)
            bkm_db_same_file(argv[i], argv[0], &same);   /* a symlink, a hard link, ./x/../a */
        if (same) {
            fprintf(stderr, "tune merge: input '%s' is the output '%s' (the same file); nothing merged\n", argv[i],
                    argv[0]);
            return 2;
        }
        if ((ret = bkm_db_validate(argv[i], &err)) < 0) {
            fprintf(stderr, "tune merge: %s; nothing merged\n", err.msg);
            return bkm_status_exit_code(ret);
        }
    }
    if ((ret = bkm_db_open(&db, argv[0], BKM_DB_CREATE | BKM_DB_SHARED_FS_OK, &err)) < 0) {
        fprintf(stderr, "tune merge: %s\n", err.msg);
        return bkm_status_exit_code(ret);
    }
    if (bkm_db_warning(db))
        fprintf(stderr, "tune merge: warning: %s\n", bkm_db_warning(db));
    for (int i = 1; i < argc && ret == BKM_OK; i++) {
        bkm_db_merge_stats_t st = {0};
        if ((ret = bkm_db_merge(db, argv[i], &st, &err)) < 0)
            break;
        printf("%s: %lld new sweeps (%lld already in %s), %lld new trials (%lld already there), %lld samples, "
               "%lld counters, %lld best-known settings\n",
               argv[i], (long long)st.sweeps_new, (long long)st.sweeps_known, argv[0], (long long)st.trials_new,
               (long long)st.trials_known, (long long)st.samples, (long long)st.counters, (long long)st.best);
    }
    bkm_db_close(db);
    if (ret < 0) {
        fprintf(stderr, "tune merge: %s\n", err.msg);
        return bkm_status_exit_code(ret);
    }
    return 0;
}
