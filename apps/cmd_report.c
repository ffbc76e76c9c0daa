/* SPDX-License-Identifier: MIT */
/* `tune report`: one self-contained HTML file (inline CSS and SVG, no script, no network) from
 * the results database. */
#define _GNU_SOURCE /* gethostname */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bkm/kernels.h"
#include "bkm/reports.h"
#include "bkm/results.h"
#include "bkm/tuner.h"
#include "cli_common.h"
#include "cli_opt.h"

const char bkm_cli_report_summary[] = "write a self-contained HTML report of the results database";

#define REPORT_DEFAULT_PATH "reports/index.html"
/* Most thread counts whose FMA peak `--peak auto` measures (about 0.5 s each). */
#define REPORT_PEAK_COUNTS 8

typedef struct report_opts {
    const char *db, *output, *node, *workload, *peak, *title;
    long long sweep;
} report_opts_t;

static const bkm_cli_opt_t report_table[] = {
    {.name = "output", .short_name = 'o', .kind = BKM_CLI_STR, .metavar = "FILE", .off = offsetof(report_opts_t, output),
     .help = "the HTML file to write (default " REPORT_DEFAULT_PATH "; its folder is\n"
             "created when missing; written to a temporary file, then renamed;\n"
             "'-' is the standard output)",
     .example = "r.html"},
    BKM_CLI_DB_OPT(report_opts_t, db),
    {.name = "sweep", .kind = BKM_CLI_I64, .metavar = "ID", .off = offsetof(report_opts_t, sweep), .lo = 1,
     .hi = 9.2e18, .help = "only the sweep with this numeric id (tune export shows ids)"},
    {.name = "node", .kind = BKM_CLI_STR, .metavar = "NODE", .off = offsetof(report_opts_t, node),
     .help = "only sweeps for this node (knl, haswell, auto = this host's name, ...)", .example = "knl"},
    {.name = "workload", .kind = BKM_CLI_STR, .metavar = "WL", .off = offsetof(report_opts_t, workload),
     .help = "only sweeps of this workload (gemm, alexnet, ...)", .example = "gemm"},
    {.name = "peak", .kind = BKM_CLI_CHOICE, .metavar = "auto|none", .off = offsetof(report_opts_t, peak),
     .choices = "auto|none",
     .help = "auto (default): measure the FP32 FMA peak of this host at the thread\n"
             "counts of its trials (~0.5 s each, at most 8) for \"% of peak\" and the\n"
             "scaling curve's peak line; none: do not (other hosts' trials never get one)"},
    {.name = "title", .kind = BKM_CLI_STR, .metavar = "TEXT", .off = offsetof(report_opts_t, title),
     .help = "the page title (default \"bkm report\")", .example = "knl study"},
};

static const bkm_cli_cmd_spec_t report_cmd = {
    .name = "report",
    .usage = "tune report [--db PATH] [-o FILE] [--node NODE --workload WL | --sweep ID] [--peak auto|none]\n"
             "            [--title TEXT]",
    .about = "Writes ONE self-contained HTML file (inline CSS and SVG; no script, font or link to fetch: it\n"
             "opens from disk with no network, and can be mailed) with: the host and its topology drawn with\n"
             "the PUs the best setting and the default use; a summary per workload (best setting, median and\n"
             "95% interval, speedup over the default with its evidence, GFLOP/s, % of the measured peak); a\n"
             "threads x affinity heatmap; the blocktime effect; the scaling curve with the peak line; box\n"
             "plots of the per-process values of the top configurations and the default; per-layer times;\n"
             "PAPI counters (unavailable events marked with the reason); binding verification; failed\n"
             "trials with their errors; the regression gate's history. Every text from the database (sweep\n"
             "labels, parameters, host names, error tails) is escaped. The database is opened read-only.",
    BKM_CLI_TABLE(report_table),
    .more = "examples:\n"
            "  tune --node auto --workload gemm --label 'first look' && tune report\n"
            "  tune report --node knl --workload alexnet -o knl-alexnet.html --peak none\n\n"
            "exit codes: 0 written, 2 bad usage (or the selection matches no sweep), 3 the database is\n"
            "            missing, not a bkm database or damaged, or FILE cannot be written\n",
};

/* The distinct thread counts of the trials stored from this host (hostname match). */
static int host_threads(const char *doc_json, const char *hostname, int *thr, int cap)
{
    bkm_json_t *doc = NULL;
    const bkm_json_t *sweeps, *trials;
    int n = 0;
    if (bkm_json_parse(doc_json, &doc, NULL) < 0)
        return 0;
    sweeps = bkm_json_get(doc, "sweeps");
    trials = bkm_json_get(doc, "trials");
    for (const bkm_json_t *t = trials ? trials->child : NULL; t; t = t->next) {
        const bkm_json_t *cfg = bkm_json_get(t, "config");
        double sid = bkm_json_get_num(t, "sweep", -1);
        int th = cfg ? (int)bkm_json_get_num(cfg, "threads", 0) : 0, mine = 0, seen = 0;
        for (const bkm_json_t *s = sweeps ? sweeps->child : NULL; s; s = s->next) {
            const char *h = bkm_json_get(s, "host") ? bkm_json_get_str(bkm_json_get(s, "host"), "hostname") : NULL;
            if (bkm_json_get_num(s, "id", -2) == sid && h && strcmp(h, hostname) == 0)
                mine = 1;
        }
        for (int i = 0; i < n; i++)
            seen |= thr[i] == th;
        if (mine && !seen && th >= 1 && th <= BKM_REP_PEAK_MAX && n < cap)
            thr[n++] = th;
    }
    bkm_json_free(doc);
    return n;
}

/* Create the folder of @p path when it is missing (the default results/report.html). */
static int make_folder(const char *path, bkm_err_t *err)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (slash && slash != path) {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        if (mkdir(dir, 0777) < 0 && errno != EEXIST)
            return bkm_err_set(err, BKM_EIO, "cannot create folder '%s' for -o: %s", dir, strerror(errno));
    }
    return BKM_OK;
}

int bkm_cli_report(int argc, char **argv)
{
    report_opts_t o = {0};
    bkm_db_filter_t f = {0};
    bkm_rep_cfg_t rc;
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    bkm_buf_t doc, html, cmd;
    const char *db_path, *out_path;
    char node_name[64], when[32], hostname[256] = "";
    struct stat sb;
    time_t now = time(NULL);
    int ret, thr[REPORT_PEAK_COUNTS], nthr = 0;
    if (bkm_cli_opt_parse_cmd(&report_cmd, argc, argv, &o, &ret))
        return ret;
    out_path = o.output ? o.output : REPORT_DEFAULT_PATH;
    if (stat(out_path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "tune report: -o '%s' is a directory, not a file\n", out_path);
        return 2;
    }
    bkm_buf_init(&doc);
    bkm_buf_init(&html);
    bkm_buf_init(&cmd);
    f.workload = o.workload;
    f.sweep_id = o.sweep;
    if (o.node != NULL) {
        if ((ret = bkm_tune_node_resolve(o.node, node_name, sizeof node_name, &err)) < 0) {
            fprintf(stderr, "tune report: --node: %s\n", err.msg);
            ret = bkm_status_exit_code(ret);
            goto out;
        }
        f.node = node_name;
    }
    db_path = bkm_cli_db_path(o.db);
    if (!bkm_cli_db_check("report", db_path)) {
        ret = 2;
        goto out;
    }
    if ((ret = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) == BKM_OK)
        ret = bkm_db_report_json(db, &f, &doc, &err);
    bkm_db_close(db);
    if (ret < 0) {
        fprintf(stderr, "tune report: %s\n", err.msg);
        ret = bkm_status_exit_code(ret);
        goto out;
    }
    if ((o.sweep || o.node || o.workload) && strstr(bkm_buf_str(&doc), "\"sweeps\":[]") != NULL) {
        fprintf(stderr, "tune report: no sweep in %s matches", db_path);
        if (o.sweep)
            fprintf(stderr, " --sweep %lld", o.sweep);
        if (o.node)
            fprintf(stderr, " --node %s", f.node);
        if (o.workload)
            fprintf(stderr, " --workload %s", o.workload);
        fprintf(stderr, " (tune export --format csv lists what is stored)\n");
        ret = 2;
        goto out;
    }
    bkm_rep_cfg_defaults(&rc);
    gethostname(hostname, sizeof hostname - 1);
    if (o.peak == NULL || strcmp(o.peak, "auto") == 0)
        nthr = host_threads(bkm_buf_str(&doc), hostname, thr, REPORT_PEAK_COUNTS);
    for (int i = 0; i < nthr; i++) {
        rc.peak_gflops[thr[i] - 1] = bkm_kern_peak_gflops(BKM_ISA_AUTO, thr[i]);
        if (thr[i] > rc.n_peak)
            rc.n_peak = thr[i];
    }
    rc.peak_host = nthr ? hostname : NULL;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    for (int i = 0; i < argc; i++)
        bkm_buf_printf(&cmd, "%s%s", i ? " " : "tune ", argv[i]);
    rc.title = o.title;
    rc.source = db_path;
    rc.generated_at = when;
    rc.command = bkm_buf_str(&cmd);
    if ((ret = bkm_rep_html_render(bkm_buf_str(&doc), &rc, &html, &err)) < 0 ||
        (strcmp(out_path, "-") != 0 && (ret = make_folder(out_path, &err)) < 0)) {
        fprintf(stderr, "tune report: %s\n", err.msg);
        ret = bkm_status_exit_code(ret);
        goto out;
    }
    if ((ret = bkm_cli_output_write("report", "-o", out_path, bkm_buf_str(&html), 0666)) != 0)
        goto out;
    fprintf(stderr, "tune report: wrote %s (%zu bytes)\n", strcmp(out_path, "-") ? out_path : "the standard output",
            html.len);
    ret = 0;
out:
    bkm_buf_free(&doc);
    bkm_buf_free(&html);
    bkm_buf_free(&cmd);
    return ret;
}
