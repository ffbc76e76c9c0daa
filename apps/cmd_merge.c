/* SPDX-License-Identifier: MIT */
/* `tune merge OUT IN...`: merge results databases (one per array job) into one, with provenance. */
#include <stdio.h>
#include <string.h>

#include "bkm/results.h"
#include "cli_common.h"

const char bkm_cli_merge_summary[] = "merge results databases (e.g. from a job array) into one";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tune merge OUT IN [IN...]\n\n"
            "Copies every host, sweep, trial (with its samples and counters) and best-known setting of each\n"
            "IN database into OUT, creating OUT (and its folder) when missing. Each sweep keeps its uuid and\n"
            "records the file it came from. Merging is idempotent: a sweep already in OUT (same uuid) only\n"
            "gets the trials it lacks, so the same IN can be merged again safely. Every IN is checked first\n"
            "and read read-only: it stays byte-identical (a leftover IN-wal is read, never checkpointed into\n"
            "IN). If one is not a bkm database, is damaged, is missing, or is OUT itself under another name\n"
            "(a symlink, a hard link), nothing is merged and OUT is left untouched. Each IN is merged in one\n"
            "transaction. Sweeps refuse to write a database on a file system shared between hosts (NFS,\n"
            "Lustre, GPFS, ...): each job writes node-local disk, and one merge afterwards may write OUT\n"
            "there (with a warning: never let two hosts write it at once).\n\n"
            "options:\n"
            "  -h, --help   this help\n\n"
            "example (after `sbatch --array=0-15` wrote results/job-<n>.sqlite):\n"
            "  tune merge results/bkm.sqlite results/job-*.sqlite\n\n"
            "exit codes: 0 ok, 2 bad usage (or IN is OUT), 3 an input or OUT is missing, not a bkm database or\n"
            "            damaged\n");
}

int bkm_cli_merge(int argc, char **argv)
{
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    int ret = BKM_OK;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "tune merge: unknown option '%s' (see tune merge --help)\n", argv[i]);
            return 2;
        }
    }
    if (argc < 3) {
        fprintf(stderr, "tune merge: need OUT and at least one IN (see tune merge --help)\n");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (!bkm_cli_db_check("merge", argv[i]))
            return 2;
    for (int i = 2; i < argc; i++) {
        int same = strcmp(argv[i], argv[1]) == 0;
        if (!same)
            bkm_db_same_file(argv[i], argv[1], &same);   /* a symlink, a hard link, ./x/../a */
        if (same) {
            fprintf(stderr, "tune merge: input '%s' is the output '%s' (the same file); nothing merged\n", argv[i],
                    argv[1]);
            return 2;
        }
        if ((ret = bkm_db_validate(argv[i], &err)) < 0) {
            fprintf(stderr, "tune merge: %s; nothing merged\n", err.msg);
            return bkm_status_exit_code(ret);
        }
    }
    if ((ret = bkm_db_open(&db, argv[1], BKM_DB_CREATE | BKM_DB_SHARED_FS_OK, &err)) < 0) {
        fprintf(stderr, "tune merge: %s\n", err.msg);
        return bkm_status_exit_code(ret);
    }
    if (bkm_db_warning(db))
        fprintf(stderr, "tune merge: warning: %s\n", bkm_db_warning(db));
    for (int i = 2; i < argc && ret == BKM_OK; i++) {
        bkm_db_merge_stats_t st = {0};
        if ((ret = bkm_db_merge(db, argv[i], &st, &err)) < 0)
            break;
        printf("%s: %lld new sweeps (%lld already in %s), %lld new trials (%lld already there), %lld samples, "
               "%lld counters, %lld best-known settings\n",
               argv[i], (long long)st.sweeps_new, (long long)st.sweeps_known, argv[1], (long long)st.trials_new,
               (long long)st.trials_known, (long long)st.samples, (long long)st.counters, (long long)st.best);
    }
    bkm_db_close(db);
    if (ret < 0) {
        fprintf(stderr, "tune merge: %s\n", err.msg);
        return bkm_status_exit_code(ret);
    }
    return 0;
}
