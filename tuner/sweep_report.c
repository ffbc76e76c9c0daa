/* SPDX-License-Identifier: MIT */
/* What `tune sweep` shows: the planned sweep (--dry-run, or a host that is not the node) and
 * the final summary, as text or pretty JSON, rendered into a buffer (the CLI prints it). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bkm/affinity.h"
#include "bkm/tuner.h"

static void plan_json(const bkm_tune_space_t *sp, const bkm_node_profile_t *prof, const char *workload,
                      int host_match, const char *strat, size_t budget, int replicates, size_t rmax,
                      size_t merged, size_t dropped, const char *run_cmd, bkm_buf_t *out)
{
    bkm_json_w_t w;
    size_t n = bkm_tune_space_size(sp);
    bkm_json_w_init(&w, out, 1);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "node"), bkm_json_str(&w, prof->name);
    bkm_json_key(&w, "workload"), bkm_json_str(&w, workload);
    bkm_json_key(&w, "host_matches_node"), bkm_json_bool(&w, host_match);
    bkm_json_key(&w, "will_run"), bkm_json_bool(&w, 0);
    bkm_json_key(&w, "strategy"), bkm_json_str(&w, strat);
    bkm_json_key(&w, "budget"), bkm_json_int(&w, (int64_t)budget);
    bkm_json_key(&w, "replicates"), bkm_json_int(&w, replicates);
    bkm_json_key(&w, "replicates_max"), bkm_json_int(&w, (int64_t)rmax);
    bkm_json_key(&w, "merged"), bkm_json_int(&w, (int64_t)merged);
    bkm_json_key(&w, "dropped"), bkm_json_int(&w, (int64_t)dropped);
    bkm_json_key(&w, "causes");
    bkm_json_arr_begin(&w);
    for (size_t i = 0; i < bkm_tune_space_n_causes(sp); i++) {
        const bkm_tune_space_cause_t *c = bkm_tune_space_cause(sp, i);
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "kind"), bkm_json_str(&w, c->merged ? "merged" : "dropped");
        bkm_json_key(&w, "count"), bkm_json_int(&w, (int64_t)c->count);
        bkm_json_key(&w, "text"), bkm_json_str(&w, c->text);
        bkm_json_obj_end(&w);
    }
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "notes");
    bkm_json_arr_begin(&w);
    for (size_t i = 0; i < bkm_tune_space_n_notes(sp); i++)
        bkm_json_str(&w, bkm_tune_space_note(sp, i));
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "configs");
    bkm_json_arr_begin(&w);
    for (size_t i = 0; i < n; i++)
        bkm_tune_config_to_json(bkm_tune_space_config(sp, i), &w);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "run_there"), bkm_json_str(&w, run_cmd);
    bkm_json_obj_end(&w);
    bkm_buf_puts(out, "\n");
}

/* The drops and merges by cause, then (verbose) every note. */
static void plan_causes(const bkm_tune_space_t *sp, int verbose, bkm_buf_t *out)
{
    size_t n = bkm_tune_space_n_causes(sp), shown = verbose || n <= BKM_TUNE_PLAN_CAUSES_SHOWN ? n
                                                   : BKM_TUNE_PLAN_CAUSES_SHOWN - 1;
    for (size_t i = 0; i < shown; i++)
        bkm_buf_printf(out, "  %s\n", bkm_tune_space_cause(sp, i)->text);
    if (shown < n) {
        size_t rest = 0;
        for (size_t i = shown; i < n; i++)
            rest += bkm_tune_space_cause(sp, i)->count;
        bkm_buf_printf(out, "  %zu more dropped or merged for %zu other causes (--verbose lists them)\n", rest,
                       n - shown);
    }
    for (size_t i = 0; verbose && i < bkm_tune_space_n_notes(sp); i++)
        bkm_buf_printf(out, "  note: %s\n", bkm_tune_space_note(sp, i));
}

/* Distinct values of one dimension of the plan, in order of first appearance (the first 24). */
typedef struct dim_vals {
    char v[24][64];
    int n, more;
} dim_vals_t;

static void dim_add(dim_vals_t *d, const char *v)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->v[i], v) == 0)
            return;
    if (d->n < (int)(sizeof d->v / sizeof d->v[0]))
        snprintf(d->v[d->n++], sizeof d->v[0], "%s", v);
    else
        d->more = 1;
}

static void dim_print(bkm_buf_t *out, const char *name, const dim_vals_t *d)
{
    bkm_buf_printf(out, "    %s (%d%s):", name, d->n, d->more ? "+" : "");
    for (int i = 0; i < d->n; i++)
        bkm_buf_printf(out, "%s%s", i ? " | " : " ", d->v[i]);
    bkm_buf_puts(out, d->more ? " | ...\n" : "\n");
}

/* What the configurations vary: the values of each setting, as they appear in the plan. */
static void plan_dims(const bkm_tune_space_t *sp, bkm_buf_t *out)
{
    dim_vals_t *d = bkm_calloc(5, sizeof *d);
    int thr[BKM_TUNE_SPACE_MAX_THREADS + 1], n_thr = 0;
    if (d == NULL)
        return;
    for (size_t i = 0; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        char b[64];
        int k;
        for (k = 0; k < n_thr && thr[k] != c->threads; k++)
            ;
        if (k == n_thr && n_thr < (int)(sizeof thr / sizeof thr[0]))
            thr[n_thr++] = c->threads;
        dim_add(&d[0], c->affinity[0] ? c->affinity : "default");
        if (c->blocktime_ms == BKM_TUNE_BLOCKTIME_UNSET)
            snprintf(b, sizeof b, "default");
        else if (c->blocktime_ms == BKM_TUNE_BLOCKTIME_INFINITE)
            snprintf(b, sizeof b, "infinite");
        else
            snprintf(b, sizeof b, "%d", c->blocktime_ms);
        dim_add(&d[1], b);
        dim_add(&d[2], c->kmp_hw_subset[0] ? c->kmp_hw_subset : "unset");
        for (k = 0; k < c->n_params; k++) {
            snprintf(b, sizeof b, "%s=%s", c->params[k].key, c->params[k].value);
            dim_add(&d[3], b);
        }
    }
    for (int i = 1; i < n_thr; i++)
        for (int j = i; j > 0 && thr[j] < thr[j - 1]; j--) {
            int t = thr[j];
            thr[j] = thr[j - 1], thr[j - 1] = t;
        }
    bkm_buf_printf(out, "  the configurations combine:\n    threads (%d):", n_thr);
    for (int i = 0; i < n_thr; i++)
        bkm_buf_printf(out, " %d", thr[i]);
    bkm_buf_puts(out, "\n");
    dim_print(out, "affinity", &d[0]);
    dim_print(out, "KMP_BLOCKTIME", &d[1]);
    dim_print(out, "KMP_HW_SUBSET", &d[2]);
    if (d[3].n > 0)
        dim_print(out, "parameters other than the default", &d[3]);
    bkm_free(d);
}

/* Every configuration (verbose), else the default and a few spread over the plan. */
static void plan_configs(const bkm_tune_space_t *sp, int verbose, bkm_buf_t *out)
{
    size_t n = bkm_tune_space_size(sp), shown = BKM_TUNE_PLAN_CONFIGS_SHOWN, next = 0, k = 0;
    char label[512];
    int all = verbose || n <= shown;
    if (!all) {
        plan_dims(sp, out);
        bkm_buf_printf(out, "  %zu of the %zu configurations (--verbose or --dry-run lists them all):\n", shown, n);
    }
    for (size_t i = 0; i < n; i++) {
        if (!all && i != next)
            continue;
        k++;
        next = k * (n - 1) / (shown - 1);   /* evenly spread, the default [0] and the last included */
        bkm_tune_config_label(bkm_tune_space_config(sp, i), label, sizeof label);
        bkm_buf_printf(out, "  [%zu] %s\n", i, label);
    }
}

void bkm_tune_sweep_plan_render(const bkm_tune_space_t *sp, const struct bkm_node_profile *prof,
                                const bkm_tune_sweep_cfg_t *cfg, const char *workload, int host_match,
                                const char *run_cmd, bkm_buf_t *out, int json, int verbose)
{
    size_t n = bkm_tune_space_size(sp), merged = 0, dropped = 0;
    const char *strat = cfg->strategy ? cfg->strategy : BKM_TUNE_STRATEGY_DEFAULT;
    size_t budget = bkm_tune_sweep_budget(strat, cfg->budget, n);
    bkm_tune_space_counts(sp, &merged, &dropped);
    if (json) {
        plan_json(sp, prof, workload, host_match, strat, budget, cfg->replicates, bkm_tune_sweep_replicates_max(cfg),
                  merged, dropped, run_cmd, out);
        return;
    }
    if (!host_match)
        bkm_buf_printf(out, "This host is not a %s node (%s).\ntune will not run these trials here, and never records "
                       "this host's timings under '%s'.\n\n", prof->name, prof->description, prof->name);
    bkm_buf_printf(out, "Planned sweep of %s on node %s: %zu configurations (%zu settings merged as identical, %zu "
                   "dropped); strategy %s measures up to %zu of them, then re-measures the top %d and the default "
                   "in blocks of %d fresh processes each, up to %zu each while undecided.\n", workload, prof->name,
                   n, merged, dropped, strat, budget, cfg->confirm_top, cfg->replicates,
                   bkm_tune_sweep_replicates_max(cfg));
    if (cfg->aa)
        bkm_buf_printf(out, "A/A run: no search; the default is confirmed against %d cop%s of itself, %d to %zu "
                       "processes each, through the same code; nothing is stored as best-known.\n",
                       cfg->confirm_top > 0 ? cfg->confirm_top : 1, cfg->confirm_top > 1 ? "ies" : "y",
                       cfg->replicates, bkm_tune_sweep_replicates_max(cfg));
    plan_causes(sp, verbose, out);
    plan_configs(sp, verbose, out);
    if (!host_match)
        bkm_buf_printf(out, "\nTo run it on a %s node, run there (e.g. inside `salloc -N 1%s%s`):\n  %s\n"
                       "or let tune write the batch job: add --sbatch FILE [--submit] to this command (a job array "
                       "of K shards and a merge job: --slurm-array K)\n",
                       prof->name, prof->slurm_constraint[0] ? " -C " : "", prof->slurm_constraint, run_cmd);
    else
        bkm_buf_printf(out, "\nTo run it: %s\n", run_cmd);
}

/* Opens member @p key: {"config": ..., "median_ms": m, "median_ci95_order_stat": [lo, hi]; the
 * caller closes it. The median is the median of the per-process medians of the confirmation
 * round, the interval its distribution-free order-statistic 95% interval. */
static void config_json(bkm_json_w_t *w, const char *key, const bkm_tune_config_t *c, double median_ms, double lo,
                        double hi)
{
    bkm_json_key(w, key);
    bkm_json_obj_begin(w);
    bkm_json_key(w, "config"), bkm_tune_config_to_json(c, w);
    bkm_json_key(w, "median_ms"), bkm_json_double(w, median_ms);
    bkm_json_key(w, "median_ci95_order_stat");
    bkm_json_arr_begin(w);
    bkm_json_double(w, lo), bkm_json_double(w, hi);
    bkm_json_arr_end(w);
}

static void summary_json(const bkm_tune_sweep_result_t *r, const char *db, bkm_buf_t *out)
{
    bkm_json_w_t w;
    bkm_json_w_init(&w, out, 1);
    bkm_json_obj_begin(&w);
    config_json(&w, "best", &r->best, r->best_median_ms, r->best_ci_lo_ms, r->best_ci_hi_ms);
    bkm_json_key(&w, "speedup_vs_default"), bkm_json_double(&w, r->speedup);
    bkm_json_key(&w, "speedup_ci95_exact_rank");
    bkm_json_arr_begin(&w);
    bkm_json_double(&w, r->speedup_lo), bkm_json_double(&w, r->speedup_hi);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "speedup_rci");
    bkm_json_arr_begin(&w);
    bkm_json_double(&w, r->speedup_rci_lo), bkm_json_double(&w, r->speedup_rci_hi);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "significant"), bkm_json_bool(&w, r->significant);
    bkm_json_key(&w, "verdict"), bkm_json_str(&w, r->verdict);
    bkm_json_obj_end(&w);
    config_json(&w, "default", &r->dflt, r->default_median_ms, r->default_ci_lo_ms, r->default_ci_hi_ms);
    bkm_json_obj_end(&w);
    bkm_json_key(&w, "aa"), bkm_json_bool(&w, r->aa);
    bkm_json_key(&w, "claim"), bkm_json_bool(&w, r->significant);
    bkm_json_key(&w, "best_stored"), bkm_json_bool(&w, r->has_best && !r->aa);
    bkm_json_key(&w, "replicates"), bkm_json_int(&w, r->replicates);
    /* the sequential confirmation: what was decided, and what it cost */
    bkm_json_key(&w, "decision");
    bkm_json_str(&w, r->has_best ? bkm_tune_decision_name(r->decision) : NULL);
    bkm_json_key(&w, "decisions"), bkm_json_str(&w, r->decisions[0] ? r->decisions : NULL);
    bkm_json_key(&w, "not_better_than"), bkm_json_double(&w, r->not_better_than);
    bkm_json_key(&w, "replicates_max"), bkm_json_int(&w, r->replicates_max);
    bkm_json_key(&w, "processes_per_side"), bkm_json_int(&w, (int64_t)r->per_side);
    bkm_json_key(&w, "confirm_processes"), bkm_json_int(&w, (int64_t)r->confirm_processes);
    bkm_json_key(&w, "looks"), bkm_json_int(&w, (int64_t)r->looks);
    bkm_json_key(&w, "ended"), bkm_json_str(&w, r->ended[0] ? r->ended : NULL);
    bkm_json_key(&w, "evidence");
    if (r->evidence_json)
        bkm_json_raw(&w, r->evidence_json);
    else
        bkm_json_null(&w);
    bkm_json_key(&w, "trials"), bkm_json_int(&w, (int64_t)r->trials);
    bkm_json_key(&w, "failed"), bkm_json_int(&w, (int64_t)r->failed);
    bkm_json_key(&w, "resumed"), bkm_json_int(&w, (int64_t)r->resumed_trials);
    /* noise evidence from the OS: processes marked disturbed (tune run --help, --disturbed-share) */
    bkm_json_key(&w, "disturbed_processes"), bkm_json_int(&w, (int64_t)r->disturbed);
    bkm_json_key(&w, "noise_unknown"), bkm_json_int(&w, (int64_t)r->noise_unknown);
    bkm_json_key(&w, "confirm_disturbed_counted"), bkm_json_int(&w, (int64_t)r->confirm_disturbed);
    bkm_json_key(&w, "confirm_reruns"), bkm_json_int(&w, (int64_t)r->reruns);
    bkm_json_key(&w, "interrupted"), bkm_json_bool(&w, r->interrupted);
    bkm_json_key(&w, "sweep_id"), bkm_json_int(&w, r->sweep_id);
    bkm_json_key(&w, "node"), bkm_json_str(&w, r->node);
    bkm_json_key(&w, "db"), bkm_json_str(&w, db);
    bkm_json_obj_end(&w);
    bkm_buf_puts(out, "\n");
}

void bkm_tune_sweep_summary_render(const bkm_tune_sweep_result_t *r, const char *db, bkm_buf_t *out, int json)
{
    char label[512];
    if (json) {
        summary_json(r, db, out);
        return;
    }
    if (r->interrupted) {
        bkm_buf_printf(out, "sweep interrupted after %zu trials; every completed trial is stored in %s: run the same "
                       "command again to resume\n", r->trials, db);
        return;
    }
    bkm_buf_printf(out, "%s done: %zu trials on node %s (%zu resumed from %s, %zu failed)\n", r->aa ? "A/A run" : "sweep",
                   r->trials, r->node, r->resumed_trials, db, r->failed);
    bkm_buf_printf(out, "noise:      %zu of %zu processes disturbed (run-queue wait + steal over the threshold)%s; "
                   "confirmation: %zu disturbed counted, %zu re-run\n", r->disturbed, r->trials,
                   r->noise_unknown ? " (some without evidence)" : "", r->confirm_disturbed, r->reruns);
    bkm_tune_config_label(&r->dflt, label, sizeof label);
    if (!r->has_best || !isfinite(r->default_median_ms)) {
        /* no confirmation round counted: say what is stored and what is not, not a median of nothing */
        bkm_buf_printf(out, "default:    %s: not confirmed (no median over processes)\n", label);
        bkm_buf_printf(out, "best-known: none stored: %s\n", r->verdict);
        return;
    }
    bkm_buf_printf(out, "default:    %s: median %.4g ms over %zu processes (median of each process's samples), 95%% "
                   "CI [%.4g, %.4g] (order statistics)\n", label, r->default_median_ms, r->per_side,
                   r->default_ci_lo_ms, r->default_ci_hi_ms);
    bkm_buf_printf(out, "confirm:    %zu look(s), %zu processes per side (blocks of %d, at most %d; ended: %s), %zu "
                   "processes in all\n", r->looks, r->per_side, r->replicates, r->replicates_max,
                   r->ended[0] ? r->ended : "?", r->confirm_processes);
    if (r->decisions[0])
        bkm_buf_printf(out, "decided:    %s\n", r->decisions);
    if (r->aa) {
        bkm_buf_printf(out, "%s\n", r->verdict); /* "A/A: ..." */
    } else if (r->significant) {
        bkm_tune_config_label(&r->best, label, sizeof label);
        bkm_buf_printf(out, "best-known: %s: median %.4g ms, 95%% CI [%.4g, %.4g] (order statistics); %s\n", label,
                       r->best_median_ms, r->best_ci_lo_ms, r->best_ci_hi_ms, r->verdict);
    } else {
        bkm_buf_printf(out, "best-known: the default: %s\n", r->verdict);
    }
}
