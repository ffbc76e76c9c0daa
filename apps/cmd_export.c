/* SPDX-License-Identifier: MIT */
/* `tune export`: every stored trial with its status, configuration and statistics, as CSV or JSON. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"
#include "cli_common.h"
#include "cli_opt.h"

const char bkm_cli_export_summary[] = "print every stored trial as CSV or JSON";

typedef struct export_opts {
    const char *db, *format, *node, *workload, *output;
    long long sweep;
} export_opts_t;

static const bkm_cli_opt_t export_table[] = {
    {.name = "format", .kind = BKM_CLI_CHOICE, .metavar = "csv|json", .off = offsetof(export_opts_t, format),
     .choices = "csv|json",
     .help = "csv: a header row, then one row per trial (RFC 4180 quoting; the config\n"
             "column holds the configuration as JSON; a text cell starting with =, +,\n"
             "-, @, tab or CR gets a ' before it, so no spreadsheet runs it). json: a\n"
             "list of objects {id, sweep, node, workload, status, role, round, config,\n"
             "n_samples, median_ms, min_ms, mad_ms, ci95: [lo, hi], gflops, impl, error}\n"
             "(stored JSON parsed and written again; what cannot be is null, and \"notes\"\n"
             "says why)",
     .flags = BKM_CLI_REQUIRED},
    BKM_CLI_DB_OPT(export_opts_t, db),
    {.name = "output", .short_name = 'o', .kind = BKM_CLI_STR, .metavar = "FILE", .off = offsetof(export_opts_t, output),
     .help = "write to FILE (a temporary file, then renamed) instead of the\n"
             "standard output ('-')", .example = "trials.csv"},
    {.name = "sweep", .kind = BKM_CLI_I64, .metavar = "ID", .off = offsetof(export_opts_t, sweep), .lo = 1,
     .hi = 9.2e18, .help = "only the trials of the sweep with this numeric id"},
    {.name = "node", .kind = BKM_CLI_STR, .metavar = "NODE", .off = offsetof(export_opts_t, node),
     .help = "only sweeps for this node (knl, haswell, auto = this host's name, ...)", .example = "knl"},
    {.name = "workload", .kind = BKM_CLI_STR, .metavar = "WL", .off = offsetof(export_opts_t, workload),
     .help = "only sweeps of this workload (gemm, alexnet, ...)", .example = "gemm"},
};

static const bkm_cli_cmd_spec_t export_cmd = {
    .name = "export",
    .usage = "tune export --format csv|json [--db PATH] [-o FILE] [--sweep ID] [--node NODE] [--workload WL]",
    .about = "Prints every trial stored in the results database: its status (ok, crashed, timeout, failed,\n"
             "binding-mismatch), its configuration and its statistics (samples, median, min, MAD, 95% CI of\n"
             "the median, GFLOP/s), for spreadsheets and scripts. The database is opened read-only: nothing\n"
             "is modified or created next to it (it may be a read-only file in a read-only folder).",
    BKM_CLI_TABLE(export_table),
    .more = "example:\n"
            "  tune export --format json --node knl --workload alexnet > alexnet-knl.json\n\n"
            "exit codes: 0 ok, 2 bad usage, 3 the database is missing, not a bkm database or damaged\n",
};

int bkm_cli_export(int argc, char **argv)
{
    export_opts_t o = {0};
    bkm_db_filter_t f = {0};
    bkm_db_export_fmt_t fmt = BKM_DB_EXPORT_CSV;
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_buf_t out;
    const char *db_path;
    char node_name[64];
    int ret;
    if (bkm_cli_opt_parse_cmd(&export_cmd, argc, argv, &o, &ret))
        return ret;
    if (strcmp(o.format, "json") == 0)
        fmt = BKM_DB_EXPORT_JSON;
    f.node = o.node;
    f.workload = o.workload;
    f.sweep_id = o.sweep;
    bkm_buf_init(&out);
    /* auto: this host's name, as the sweep stored it */
    if (f.node != NULL) {
        if ((ret = bkm_tune_node_resolve(f.node, node_name, sizeof node_name, &err)) < 0) {
            fprintf(stderr, "tune export: --node: %s\n", err.msg);
            bkm_buf_free(&out);
            return bkm_status_exit_code(ret);
        }
        f.node = node_name;
    }
    db_path = bkm_cli_db_path(o.db);
    if (!bkm_cli_db_check("export", db_path)) {
        bkm_buf_free(&out);
        return 2;
    }
    if ((ret = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) == BKM_OK)
        ret = bkm_db_export(db, &f, fmt, &out, &err);
    bkm_db_close(db);
    if (ret < 0) {
        fprintf(stderr, "tune export: %s\n", err.msg);
        bkm_buf_free(&out);
        return bkm_status_exit_code(ret);
    }
    ret = bkm_cli_output_write("export", "-o", o.output ? o.output : "-", bkm_buf_str(&out), 0666);
    bkm_buf_free(&out);
    return ret;
}
