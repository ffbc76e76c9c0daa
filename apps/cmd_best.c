/* SPDX-License-Identifier: MIT */
/* `tune best`: the stored best-known setting of a node and workload, with its evidence. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"
#include "cli_common.h"
#include "cli_opt.h"

const char bkm_cli_best_summary[] = "show the best-known setting of a node and workload, with its evidence";

typedef struct best_opts {
    const char *db, *node, *workload;
    int json;
} best_opts_t;

static const bkm_cli_opt_t best_table[] = {
    {.name = "node", .kind = BKM_CLI_STR, .metavar = "NODE", .off = offsetof(best_opts_t, node),
     .help = "node profile (knl, haswell, auto, ...)", .example = "knl",
     .flags = BKM_CLI_REQUIRED},
    {.name = "workload", .kind = BKM_CLI_STR, .metavar = "WL", .off = offsetof(best_opts_t, workload),
     .help = "workload (gemm, conv2d, alexnet, ...)", .example = "gemm",
     .flags = BKM_CLI_REQUIRED},
    BKM_CLI_DB_OPT(best_opts_t, db),
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(best_opts_t, json),
     .help = "print {\"config\": {...}, \"median_ms\": ..., \"median_ci95_order_stat\":\n"
             "[lo, hi], \"speedup_vs_default\": ..., \"significant\": true|false,\n"
             "\"decision\": \"claimed\"|\"not-better\"|\"undecided\", \"speedup_rci\": [lo, hi],\n"
             "\"not_better_than\": ..., \"confirm_processes\": ..., \"looks\": ...,\n"
             "\"evidence\": {per-process medians of every arm, order, design, looks,\n"
             "candidates: [{decision, statement, p, nominal_level, ratio, ratio_rci,\n"
             "...}], ...}, ...}"},
};

static const bkm_cli_cmd_spec_t best_cmd = {
    .name = "best",
    .usage = "tune best --node NODE --workload WL [--db PATH] [--json]",
    .about = "Shows the newest best-known setting stored for NODE and WL by a sweep, with its evidence.\n"
             "The unit of evidence is the worker process: the confirmation ran the default and each\n"
             "candidate in blocks of fresh processes (each block in a drift-cancelling order) until each\n"
             "candidate was decided or the budget spent, and every figure below is over one value per\n"
             "process (the median of its samples): the median of those values with its order-statistic\n"
             "95% interval, the speedup over the default (Hodges-Lehmann ratio) with its repeated\n"
             "confidence interval, the one-sided Mann-Whitney p and the level it was held to (alpha spent\n"
             "over the looks, Holm over the candidates), and what was decided: claimed, not better by more\n"
             "than X%, or undecided at the budget. When nothing is claimed, keep the default.\n"
             "The database is opened read-only: nothing is modified or created next to it.",
    BKM_CLI_TABLE(best_table),
    .more = "example:\n"
            "  tune best --node knl --workload alexnet --json\n\n"
            "exit codes: 0 found, 1 no best-known setting stored for NODE/WL, 2 bad usage,\n"
            "            3 the database is missing, not a bkm database or damaged\n",
};

/* The counters of the best setting's own processes: a value only where it was counted and not
 * contradicted by the OS; otherwise how many processes found it unavailable or disagreeing, why. */
static void json_counters(bkm_json_w_t *w, const bkm_db_counter_summary_t *c, size_t n)
{
    bkm_json_arr_begin(w);
    for (size_t i = 0; i < n; i++) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "name"), bkm_json_str(w, c[i].name);
        bkm_json_key(w, "state");
        bkm_json_str(w, c[i].counted ? "counted" : c[i].disagrees ? "disagrees" : "unavailable");
        bkm_json_key(w, "median"), bkm_json_double(w, c[i].median);
        bkm_json_key(w, "domain"), bkm_json_str(w, c[i].domain[0] ? c[i].domain : NULL);
        bkm_json_key(w, "processes_counted"), bkm_json_int(w, c[i].counted);
        bkm_json_key(w, "processes_unavailable"), bkm_json_int(w, c[i].unavailable);
        bkm_json_key(w, "processes_disagreeing"), bkm_json_int(w, c[i].disagrees);
        bkm_json_key(w, "reason"), bkm_json_str(w, c[i].reason[0] ? c[i].reason : NULL);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
}

static void print_counters(const bkm_db_counter_summary_t *c, size_t n)
{
    if (n > 0)
        printf("  counters over the best setting's processes:\n");
    for (size_t i = 0; i < n; i++) {
        int all = c[i].counted + c[i].unavailable + c[i].disagrees;
        if (c[i].counted)
            printf("    %-26s median %.6g over %d process(es)%s%s%s", c[i].name, c[i].median, c[i].counted,
                   c[i].domain[0] ? " (" : "", c[i].domain, c[i].domain[0] ? " domain)" : "");
        else
            printf("    %-26s %s in %d of %d process(es)", c[i].name,
                   c[i].disagrees ? "disagrees with the OS" : "unavailable", c[i].disagrees ? c[i].disagrees
                                                                                           : c[i].unavailable, all);
        if (c[i].counted && (c[i].unavailable || c[i].disagrees))
            printf("; %d unavailable, %d disagreeing with the OS", c[i].unavailable, c[i].disagrees);
        if (c[i].reason[0])
            printf(": %s", c[i].reason);
        printf("\n");
    }
}

/* A stored JSON text parsed and written again (a database bkm did not write may hold anything):
 * null when it is missing, does not parse or nests too deep. */
static void stored_json(bkm_json_w_t *w, const char *text)
{
    bkm_json_t *doc = NULL;
    if (text == NULL || bkm_json_parse(text, &doc, NULL) < 0)
        bkm_json_null(w);
    else
        bkm_json_write_tree(w, doc);
    bkm_json_free(doc);
}

static void print_json(const bkm_db_best_t *b, const bkm_db_counter_summary_t *ctr, size_t n_ctr)
{
    bkm_buf_t out;
    bkm_json_w_t w;
    bkm_buf_init(&out);
    bkm_json_w_init(&w, &out, 1);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "node");
    bkm_json_str(&w, b->node);
    bkm_json_key(&w, "workload");
    bkm_json_str(&w, b->workload);
    bkm_json_key(&w, "config");
    stored_json(&w, b->config_json);
    bkm_json_key(&w, "median_ms");
    bkm_json_double(&w, b->median_ms);
    bkm_json_key(&w, "median_ci95_order_stat");
    bkm_json_arr_begin(&w);
    bkm_json_double(&w, b->ci_lo_ms);
    bkm_json_double(&w, b->ci_hi_ms);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "default_median_ms");
    bkm_json_double(&w, b->default_median_ms);
    bkm_json_key(&w, "speedup_vs_default");
    bkm_json_double(&w, b->speedup);
    bkm_json_key(&w, "significant");
    bkm_json_bool(&w, b->significant);
    /* what the sequential confirmation decided (null for a setting stored before it) */
    bkm_json_key(&w, "decision");
    bkm_json_str(&w, b->decision);
    bkm_json_key(&w, "speedup_rci");
    bkm_json_arr_begin(&w);
    bkm_json_double(&w, b->speedup_rci_lo);
    bkm_json_double(&w, b->speedup_rci_hi);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "not_better_than");
    bkm_json_double(&w, b->not_better_than);
    bkm_json_key(&w, "confirm_processes");
    if (b->confirm_processes >= 0)
        bkm_json_int(&w, b->confirm_processes);
    else
        bkm_json_null(&w);
    bkm_json_key(&w, "looks");
    if (b->looks >= 0)
        bkm_json_int(&w, b->looks);
    else
        bkm_json_null(&w);
    bkm_json_key(&w, "sweep");
    bkm_json_str(&w, b->sweep_uuid);
    bkm_json_key(&w, "created_at");
    bkm_json_str(&w, b->created_at);
    bkm_json_key(&w, "evidence");
    stored_json(&w, b->evidence_json);
    bkm_json_key(&w, "counters");
    json_counters(&w, ctr, n_ctr);
    bkm_json_obj_end(&w);
    printf("%s\n", bkm_buf_str(&out));
    bkm_buf_free(&out);
}

static double num_at(const bkm_json_t *arr, size_t i)
{
    const bkm_json_t *x = arr ? bkm_json_at(arr, i) : NULL;
    return x && x->type == BKM_JSON_NUM ? x->num : NAN;
}

static void print_doubles(const char *what, const bkm_json_t *arm)
{
    const bkm_json_t *v = arm ? bkm_json_get(arm, "process_median_ms") : NULL;
    if (v == NULL || v->type != BKM_JSON_ARR)
        return;
    printf("  %s:", what);
    for (const bkm_json_t *x = v->child; x; x = x->next)
        if (x->type == BKM_JSON_NUM)
            printf(" %.4g", x->num);
    printf(" ms\n");
}

/* The claim's evidence as stored by the sweep (older sweeps stored less: shown when present). */
static void print_evidence(const char *evidence)
{
    bkm_json_t *ev = NULL;
    const bkm_json_t *cands, *win, *w = NULL;
    if (evidence == NULL || bkm_json_parse(evidence, &ev, NULL) < 0 || ev->type != BKM_JSON_OBJ)
        goto out;
    cands = bkm_json_get(ev, "candidates");
    win = bkm_json_get(ev, "winner");
    if (cands && win && win->type == BKM_JSON_NUM)
        for (const bkm_json_t *c = cands->child; c; c = c->next)
            if (bkm_json_get_num(c, "arm", -1) == win->num)
                w = c;
    if (bkm_json_get(ev, "design")) {
        const bkm_json_t *d = bkm_json_get(ev, "design");
        printf("  evidence: sequential, blocks of %g processes per side, %g look(s), %g per side at the last "
               "(at most %g), %g confirmation processes; order %s (seed %g), %g candidate(s) tested, %s, "
               "family-wise alpha %g\n",
               bkm_json_get_num(ev, "replicates", NAN), bkm_json_get_num(d, "looks", NAN),
               bkm_json_get_num(ev, "processes_per_side", NAN), bkm_json_get_num(ev, "replicates_max", NAN),
               bkm_json_get_num(ev, "confirm_processes", NAN),
               bkm_json_get_str(ev, "order") ? bkm_json_get_str(ev, "order") : "?",
               bkm_json_get_num(ev, "order_seed", NAN), bkm_json_get_num(ev, "candidates_tested", NAN),
               bkm_json_get_str(d, "spending") ? bkm_json_get_str(d, "spending") : "?",
               bkm_json_get_num(ev, "alpha_familywise", NAN));
    } else if (bkm_json_get(ev, "replicates")) {   /* a fixed round, stored before the sequential design */
        printf("  evidence: %g processes per side, order %s (seed %g), %g candidate(s) tested, %s correction, "
               "family-wise alpha %g\n",
               bkm_json_get_num(ev, "replicates", NAN),
               bkm_json_get_str(ev, "order") ? bkm_json_get_str(ev, "order") : "?",
               bkm_json_get_num(ev, "order_seed", NAN), bkm_json_get_num(ev, "candidates_tested", NAN),
               bkm_json_get_str(ev, "correction") ? bkm_json_get_str(ev, "correction") : "no",
               bkm_json_get_num(ev, "alpha_familywise", NAN));
    }
    if (w && bkm_json_get(w, "ratio_rci")) {
        const bkm_json_t *ci = bkm_json_get(w, "ratio_rci");
        printf("  claim: %.3gx, repeated interval [%.3g, %.3g], one-sided Mann-Whitney p %.2g <= %.2g after %g "
               "look(s)\n", bkm_json_get_num(w, "ratio", NAN), num_at(ci, 0), num_at(ci, 1),
               bkm_json_get_num(w, "p", NAN), bkm_json_get_num(w, "nominal_level", NAN),
               bkm_json_get_num(w, "looks", NAN));
        print_doubles("best, per process", w);
    } else if (w) {
        const bkm_json_t *ci = bkm_json_get(w, "ratio_ci95_exact_rank");
        printf("  claim: %.3gx, 95%% interval [%.3g, %.3g] (exact rank), Mann-Whitney p %.2g, Holm-adjusted %.2g\n",
               bkm_json_get_num(w, "ratio", NAN), num_at(ci, 0), num_at(ci, 1), bkm_json_get_num(w, "p", NAN),
               bkm_json_get_num(w, "p_holm", NAN));
        print_doubles("best, per process", w);
    }
    for (const bkm_json_t *c = cands ? cands->child : NULL; c; c = c->next)
        if (bkm_json_get_str(c, "statement"))
            printf("  candidate %g: %s\n", bkm_json_get_num(c, "arm", NAN), bkm_json_get_str(c, "statement"));
    print_doubles("default, per process", bkm_json_get(ev, "default"));
    if (bkm_json_get(ev, "noise")) {
        const bkm_json_t *nz = bkm_json_get(ev, "noise");
        double arms = 0;
        arms += bkm_json_get_num(bkm_json_get(ev, "default"), "disturbed_processes", 0);
        for (const bkm_json_t *c = cands ? cands->child : NULL; c; c = c->next)
            arms += bkm_json_get_num(c, "disturbed_processes", 0);
        printf("  noise: %g counted process(es) disturbed (run-queue wait + steal > %g of the timed region), "
               "%g re-run (--rerun-disturbed %g)\n", arms, bkm_json_get_num(nz, "disturbed_share", NAN),
               bkm_json_get_num(nz, "reruns", 0), bkm_json_get_num(nz, "rerun_disturbed", 0));
    }
    if (bkm_json_get_str(ev, "verdict"))
        printf("  verdict: %s\n", bkm_json_get_str(ev, "verdict"));
out:
    bkm_json_free(ev);
}

static void print_text(const bkm_db_best_t *b, const bkm_db_counter_summary_t *ctr, size_t n_ctr)
{
    printf("best-known setting for node %s, workload %s (stored %s, sweep %s)\n", b->node, b->workload,
           b->created_at ? b->created_at : "?", b->sweep_uuid ? b->sweep_uuid : "?");
    printf("  config:  %s\n", b->config_json);
    printf("  median:  %.4g ms, 95%% CI [%.4g, %.4g] ms (order statistics)\n", b->median_ms, b->ci_lo_ms, b->ci_hi_ms);
    if (isfinite(b->default_median_ms))
        printf("  default: %.4g ms, speedup %.3fx\n", b->default_median_ms, b->speedup);
    printf("  %s\n", b->significant ? "significant: beats the default beyond the noise"
                                    : "not significant: the default setting stands");
    if (b->decision == NULL)
        printf("  decision: not recorded (a fixed confirmation round, stored before the sequential design)\n");
    else if (strcmp(b->decision, "claimed") == 0)
        printf("  decision: claimed, %.3fx, repeated interval [%.3f, %.3f]\n", b->speedup, b->speedup_rci_lo,
               b->speedup_rci_hi);
    else if (strcmp(b->decision, "not-better") == 0 && b->not_better_than > 1.0)
        printf("  decision: not better: no setting tested is better than the default by more than %.1f%%\n",
               100.0 * (b->not_better_than - 1.0));
    else if (strcmp(b->decision, "not-better") == 0)
        printf("  decision: not better: every setting tested is slower than the default or equal\n");
    else
        printf("  decision: undecided at the budget (%lld confirmation processes, %lld look(s))\n",
               (long long)b->confirm_processes, (long long)b->looks);
    print_evidence(b->evidence_json);
    print_counters(ctr, n_ctr);
}

int bkm_cli_best(int argc, char **argv)
{
    best_opts_t o = {0};
    const char *db_path, *node;
    char node_name[64];
    int found = 0, ret;
    bkm_db_t *db = NULL;
    bkm_db_best_t b = {0};
    bkm_db_counter_summary_t *ctr = NULL;
    size_t n_ctr = 0;
    bkm_err_t err = {0};
    if (bkm_cli_opt_parse_cmd(&best_cmd, argc, argv, &o, &ret))
        return ret;
    /* auto: this host's name, as the sweep stored it */
    if ((ret = bkm_tune_node_resolve(o.node, node_name, sizeof node_name, &err)) < 0) {
        fprintf(stderr, "tune best: --node: %s\n", err.msg);
        return bkm_status_exit_code(ret);
    }
    node = node_name;
    db_path = bkm_cli_db_path(o.db);
    if (!bkm_cli_db_check("best", db_path))
        return 2;
    if ((ret = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) == BKM_OK)
        ret = bkm_db_best_get(db, node, o.workload, &b, &found, &err);
    if (ret == BKM_OK && found)
        ret = bkm_db_config_counters(db, b.sweep_id, b.config_json, &ctr, &n_ctr, &err);
    bkm_db_close(db);
    if (ret < 0) {
        fprintf(stderr, "tune best: %s\n", err.msg);
        bkm_db_best_clear(&b);
        return bkm_status_exit_code(ret);
    }
    if (!found) {
        fprintf(stderr, "tune best: no best-known setting stored for node '%s', workload '%s' in %s "
                "(run `tune --node %s --workload %s` first)\n", node, o.workload, db_path, node, o.workload);
        return 1;
    }
    if (o.json)
        print_json(&b, ctr, n_ctr);
    else
        print_text(&b, ctr, n_ctr);
    bkm_free(ctr);
    bkm_db_best_clear(&b);
    return 0;
}
