/* SPDX-License-Identifier: MIT */
/* `tune export`: every stored trial with its status, configuration and statistics, as CSV or JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"
#include "cli_common.h"

const char bkm_cli_export_summary[] = "print every stored trial as CSV or JSON";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tune export --format csv|json [--db PATH] [--sweep ID] [--node NODE] [--workload WL]\n\n"
            "Prints every trial stored in the results database: its status (ok, crashed, timeout, failed,\n"
            "binding-mismatch), its configuration and its statistics (samples, median, min, MAD, 95%% CI of\n"
            "the median, GFLOP/s), for spreadsheets and scripts. The database is opened read-only: nothing\n"
            "is modified or created next to it (it may be a read-only file in a read-only folder).\n\n"
            "options:\n"
            "  --format csv|json  csv: a header row, then one row per trial (RFC 4180 quoting; the config\n"
            "                     column holds the configuration as JSON). json: a list of objects\n"
            "                     {id, sweep, node, workload, status, role, round, config, n_samples,\n"
            "                     median_ms, min_ms, mad_ms, ci95: [lo, hi], gflops, impl, error}\n"
            "  --db PATH          results database (default: $BKM_DB, else %s)\n"
            "  --sweep ID         only the trials of the sweep with this numeric id\n"
            "  --node NODE        only sweeps for this node (knl, haswell, auto = this host's name, ...)\n"
            "  --workload WL      only sweeps of this workload (gemm, alexnet, ...)\n"
            "  -h, --help         this help\n\n"
            "example:\n"
            "  tune export --format json --node knl --workload alexnet > alexnet-knl.json\n\n"
            "exit codes: 0 ok, 2 bad usage, 3 the database is missing, not a bkm database or damaged\n",
            BKM_DB_DEFAULT_PATH);
}

/* "--name VALUE" or "--name=VALUE" at argv[*i]: the value (advancing *i), or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

int bkm_cli_export(int argc, char **argv)
{
    const char *db_path = NULL, *format = NULL, *v;
    bkm_db_filter_t f = {0};
    bkm_db_export_fmt_t fmt = BKM_DB_EXPORT_CSV;
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_buf_t out;
    char node_name[64];
    long long id;
    int ret;
    bkm_buf_init(&out);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if ((v = opt_value(argc, argv, &i, "--db")) != NULL) {
            db_path = v;
        } else if ((v = opt_value(argc, argv, &i, "--format")) != NULL) {
            format = v;
        } else if ((v = opt_value(argc, argv, &i, "--node")) != NULL) {
            f.node = v;
        } else if ((v = opt_value(argc, argv, &i, "--workload")) != NULL) {
            f.workload = v;
        } else if ((v = opt_value(argc, argv, &i, "--sweep")) != NULL) {
            if (bkm_parse_int(v, 1, INT64_MAX, &id) != 0) {
                fprintf(stderr, "tune export: --sweep '%s' is not a sweep id (a positive integer)\n", v);
                return 2;
            }
            f.sweep_id = id;
        } else {
            fprintf(stderr, "tune export: unknown or incomplete option '%s' (see tune export --help)\n", argv[i]);
            return 2;
        }
    }
    if (format == NULL) {
        fprintf(stderr, "tune export: --format csv|json is required (see tune export --help)\n");
        return 2;
    }
    if (strcmp(format, "json") == 0)
        fmt = BKM_DB_EXPORT_JSON;
    else if (strcmp(format, "csv") != 0) {
        fprintf(stderr, "tune export: --format '%s' is not csv or json\n", format);
        return 2;
    }
    /* auto: this host's name, as the sweep stored it */
    if (f.node != NULL) {
        if ((ret = bkm_tune_node_resolve(f.node, node_name, sizeof node_name, &err)) < 0) {
            fprintf(stderr, "tune export: --node: %s\n", err.msg);
            return bkm_status_exit_code(ret);
        }
        f.node = node_name;
    }
    db_path = bkm_cli_db_path(db_path);
    if (!bkm_cli_db_check("export", db_path))
        return 2;
    if ((ret = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) == BKM_OK)
        ret = bkm_db_export(db, &f, fmt, &out, &err);
    bkm_db_close(db);
    if (ret < 0) {
        fprintf(stderr, "tune export: %s\n", err.msg);
        bkm_buf_free(&out);
        return bkm_status_exit_code(ret);
    }
    fputs(bkm_buf_str(&out), stdout);
    bkm_buf_free(&out);
    return fflush(stdout) == 0 ? 0 : 3;
}
