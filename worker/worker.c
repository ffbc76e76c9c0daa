/* SPDX-License-Identifier: MIT */
/* The trial worker's library side: plan the binding from the environment before OpenMP starts,
 * verify it with the probe, build the workload, then the measurement protocol (warm-up, adaptive
 * timed samples, PAPI counters) and ONE JSON object. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/stats.h"
#include "bkm/worker.h"
#include "bkm/workloads.h"
#include "worker_int.h"

/* ---------------------------------------------------------------------------------------- */
/* Binding verification                                                                      */

/* Compare every probed thread's kernel mask with the plan; writes the "binding" object.
 * Returns 1 when the binding matches, 0 otherwise (then @p why names the first difference). */
static int worker_binding_check(const bkm_aff_plan_t *plan, const bkm_aff_probe_t *probe, int threads,
                                int perturb, bkm_json_w_t *w, char *why, size_t why_n)
{
    int ok = 1;
    bkm_buf_t b1, b2;
    bkm_err_t rerr = {0};
    bkm_buf_init(&b1);
    bkm_buf_init(&b2);
    why[0] = '\0';
    if (probe->n_threads != threads) {
        ok = 0;
        snprintf(why, why_n, "the runtime ran %d threads, %d were requested", probe->n_threads, threads);
    }
    if (bkm_aff_probe_check_single_runtime(probe, &rerr) < 0 && ok) {
        ok = 0;
        snprintf(why, why_n, "%s", rerr.msg);
    }
    bkm_json_key(w, "binding");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "bound");
    bkm_json_bool(w, bkm_aff_plan_bound(plan));
    bkm_json_key(w, "threads");
    bkm_json_arr_begin(w);
    for (int t = 0; t < probe->n_threads; t++) {
        const bkm_aff_probe_thread_t *pt = &probe->thread[t];
        const bkm_cpuset_t *want = bkm_aff_plan_cpus(plan, t);
        bkm_cpuset_t empty;
        int same;
        bkm_cpuset_zero(&empty);
        if (perturb && t == 0)
            want = &empty;   /* test-only: force a difference */
        same = want != NULL && bkm_cpuset_equal(want, &pt->mask);
        bkm_buf_free(&b1);
        bkm_buf_free(&b2);
        if (want)
            bkm_cpuset_format(want, &b1);
        bkm_cpuset_format(&pt->mask, &b2);
        if (!same && ok) {
            ok = 0;
            snprintf(why, why_n, "OpenMP thread %d is bound to {%s} but the plan says {%s}", t, bkm_buf_str(&b2),
                     want ? bkm_buf_str(&b1) : "(no such thread)");
        }
        bkm_json_obj_begin(w);
        bkm_json_key(w, "thread");
        bkm_json_int(w, t);
        bkm_json_key(w, "tid");
        bkm_json_int(w, pt->tid);
        bkm_json_key(w, "cpu");
        bkm_json_int(w, pt->cpu);
        bkm_json_key(w, "planned");
        bkm_json_str(w, want ? bkm_buf_str(&b1) : NULL);
        bkm_json_key(w, "actual");
        bkm_json_str(w, bkm_buf_str(&b2));
        bkm_json_key(w, "match");
        bkm_json_bool(w, same);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "foreign_threads");
    bkm_json_int(w, probe->n_foreign);
    bkm_json_key(w, "runtimes");
    bkm_json_str(w, probe->runtimes);
    bkm_json_key(w, "ok");
    bkm_json_bool(w, ok);
    if (!ok) {
        bkm_json_key(w, "difference");
        bkm_json_str(w, why);
    }
    bkm_json_obj_end(w);
    bkm_buf_free(&b1);
    bkm_buf_free(&b2);
    return ok;
}

static void worker_env_to_json(const bkm_aff_env_t *e, bkm_json_w_t *w)
{
    const char *names[] = {"KMP_AFFINITY", "KMP_HW_SUBSET", "KMP_PLACE_THREADS", "KMP_BLOCKTIME",
                           "OMP_PLACES", "OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "OMP_WAIT_POLICY"};
    const char *vals[] = {e->kmp_affinity, e->kmp_hw_subset, e->kmp_place_threads, e->kmp_blocktime,
                          e->omp_places, e->omp_proc_bind, e->gomp_cpu_affinity, e->omp_wait_policy};
    bkm_json_key(w, "env");
    bkm_json_obj_begin(w);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (vals[i] != NULL) {
            bkm_json_key(w, names[i]);
            bkm_json_str(w, vals[i]);
        }
    }
    bkm_json_obj_end(w);
}

static void json_double_array(bkm_json_w_t *w, const char *key, const double *v, int n)
{
    bkm_json_key(w, key);
    bkm_json_arr_begin(w);
    for (int i = 0; i < n; i++)
        bkm_json_double(w, v[i]);
    bkm_json_arr_end(w);
}

/* ---------------------------------------------------------------------------------------- */
/* Worker                                                                                    */

/* The timed unit: one workload iteration (test builds: plus the fault injection on sample 3). */
typedef struct worker_iter {
    bkm_wl_t *wl;
    bkm_wl_sample_t sample;
#ifdef BKM_TEST_HOOKS
    const char *inject;
    int calls;
#endif
} worker_iter_t;

static int worker_iter_fn(void *ctx, bkm_err_t *err)
{
    worker_iter_t *it = ctx;
#ifdef BKM_TEST_HOOKS
    if (it->inject[0] && ++it->calls == 3) {
        if (strcmp(it->inject, "segv") == 0)
            raise(SIGSEGV);
        else if (strcmp(it->inject, "abort") == 0)
            raise(SIGABRT);
        else if (strcmp(it->inject, "hang") == 0)
            for (;;)
                pause();
        else if (strcmp(it->inject, "fail") == 0)
            return bkm_err_set(err, BKM_EFAIL, "injected failure (inject=fail) at iteration 3");
    }
#endif
    return bkm_wl_run(it->wl, &it->sample, err);
}

/* The backend the workload ran: the trial's, else the "backend" of its resolved parameters. */
static const char *worker_backend(const bkm_tune_trial_spec_t *spec, const bkm_buf_t *params_json)
{
    static const char *const names[] = {"native", "onednn"};
    bkm_json_t *doc = NULL;
    const char *be = NULL;
    if (spec->backend[0])
        return spec->backend;
    if (bkm_json_parse(bkm_buf_str(params_json), &doc, NULL) == BKM_OK) {
        const char *v = bkm_json_get_str(doc, "backend");
        for (size_t i = 0; v && i < sizeof names / sizeof names[0]; i++)
            if (strcmp(v, names[i]) == 0)
                be = names[i];
    }
    bkm_json_free(doc);
    return be;
}

/* The runner exports OMP_NUM_THREADS as the trial's thread count; anything else is refused. */
static int worker_threads_check(const bkm_tune_worker_cfg_t *cfg, bkm_err_t *err)
{
    if (cfg->omp_num_threads == cfg->spec.threads)
        return BKM_OK;
    if (cfg->omp_num_threads <= 0)
        return bkm_err_set(err, BKM_EINVAL, "OMP_NUM_THREADS is unset or invalid but the trial asks for %d "
                           "threads (the runner exports it)", cfg->spec.threads);
    return bkm_err_set(err, BKM_EINVAL, "OMP_NUM_THREADS is %d but the trial asks for %d threads",
                       cfg->omp_num_threads, cfg->spec.threads);
}

/* The result's head: what ran, under which environment, as the planner reads it. */
static void worker_head_json(bkm_json_w_t *w, const bkm_tune_trial_spec_t *spec, const bkm_aff_env_t *aff_env,
                             const bkm_aff_plan_t *plan)
{
    bkm_json_key(w, "workload");
    bkm_json_str(w, spec->workload);
    bkm_json_key(w, "threads");
    bkm_json_int(w, spec->threads);
    worker_env_to_json(aff_env, w);
    bkm_json_key(w, "effective_affinity");
    bkm_json_str(w, bkm_aff_plan_effective(plan));
    bkm_json_key(w, "blocktime_ms");
    bkm_json_int(w, bkm_aff_plan_blocktime_ms(plan));
}

/* The workload as it ran: backend, implementation, resolved parameters, seed. */
static void worker_workload_json(bkm_json_w_t *w, const bkm_tune_trial_spec_t *spec, const bkm_wl_t *wl,
                                 const bkm_buf_t *params)
{
    char sd[32];
    bkm_json_key(w, "backend");
    bkm_json_str(w, worker_backend(spec, params));
    bkm_json_key(w, "impl");
    bkm_json_str(w, bkm_wl_impl(wl));
    bkm_json_key(w, "params");
    bkm_json_raw(w, bkm_buf_str(params));
    bkm_json_key(w, "seed");
    snprintf(sd, sizeof sd, "%llu", (unsigned long long)spec->seed);
    bkm_json_str(w, sd);
}

/* The samples and their statistics, with the interval's kind and the clock's resolution. */
static void worker_samples_json(bkm_json_w_t *w, const bkm_tune_samples_t *s)
{
    json_double_array(w, "warmup_ms", s->warmup_ms, s->n_warmup);
    bkm_json_key(w, "warmup_stable");
    bkm_json_bool(w, s->warmup_stable);
    json_double_array(w, "samples_ms", s->ms, s->n);
    bkm_json_key(w, "n_samples");
    bkm_json_int(w, s->n);
    bkm_json_key(w, "median_ms");
    bkm_json_double(w, s->median);
    bkm_json_key(w, "min_ms");
    bkm_json_double(w, s->min);
    bkm_json_key(w, "max_ms");
    bkm_json_double(w, s->max);
    bkm_json_key(w, "mad_ms");
    bkm_json_double(w, s->mad);
    bkm_json_key(w, "ci95_ms");
    bkm_json_arr_begin(w);
    bkm_json_double(w, s->ci_lo);
    bkm_json_double(w, s->ci_hi);
    bkm_json_arr_end(w);
    /* which interval "ci95_ms" is: the distribution-free 95% interval of the median of this
     * process's samples (order statistics, bkm_tune_stats_median_ci_ranks) */
    bkm_json_key(w, "ci95_kind");
    bkm_json_str(w, "median, order statistics (binomial, distribution-free), within this process");
    bkm_json_key(w, "stop_reason");
    bkm_json_str(w, s->stop_reason);
    bkm_json_key(w, "timed_s");
    bkm_json_double(w, s->total_s);
    bkm_json_key(w, "timer_resolution_ns");
    bkm_json_int(w, (int64_t)bkm_clock_resolution_ns());
}

/* FLOPs per iteration with their convention, and the rate at the median. */
static void worker_flops_json(bkm_json_w_t *w, double flops, double median_ms)
{
    bkm_json_key(w, "flops_per_iter");
    bkm_json_double(w, flops);
    bkm_json_key(w, "flop_convention");
    bkm_json_str(w, "every multiply-add counted as 2 FLOP over all kernel taps, padding taps included "
                    "(conv: 2 N K C/G R S P Q; benchdnn counts only taps inside the image); gflops from the median");
    bkm_json_key(w, "gflops");
    bkm_json_double(w, median_ms > 0 ? flops / (median_ms * 1e-3) * 1e-9 : NAN);
}

/* Median of v[0..n) (n >= 1) through tmp (n doubles). */
static double median_of(const double *v, int n, double *tmp)
{
    memcpy(tmp, v, (size_t)n * sizeof *tmp);
    return bkm_median(tmp, (size_t)n);
}

/* --compare: a second workload of the compare backend (same parameters, seed and threads), one
 * warm-up step, then min_samples pairs of steps alternating which engine goes first, each step
 * timed by the workload; "compare" in the JSON: both sample lists, medians, the ratio (compare
 * median / backend median: above 1, the trial's backend is faster) and the compare engine's
 * per-layer table (network workloads with layers=1). Runs after the measurement, so the
 * trial's own samples are those of the protocol. */
static int worker_compare(const bkm_tune_trial_spec_t *spec, bkm_wl_t *wl, bkm_wl_config_t *wcfg, bkm_json_w_t *w,
                          bkm_err_t *err)
{
    const int n = spec->min_samples < 3 ? 3 : spec->min_samples;
    bkm_wl_t *wl2 = NULL;
    bkm_wl_sample_t sa, sb;
    double *a = bkm_calloc(3 * (size_t)n, sizeof *a), *b = a ? a + n : NULL, *tmp = a ? a + 2 * n : NULL;
    double ma, mb;
    bkm_buf_t layers;
    int rc;

    bkm_buf_init(&layers);
    if (a == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "compare: out of memory for %d samples", n);
        goto out;
    }
    rc = bkm_tune_trial_wl_config(spec, spec->compare, wcfg, err);
    if (rc < 0 || (rc = bkm_wl_create(&wl2, spec->workload, wcfg, spec->seed, err)) < 0 ||
        (rc = bkm_wl_run(wl2, &sb, err)) < 0)
        goto out;
    for (int i = 0; i < n; i++) {
        if (i % 2 == 0)
            rc = bkm_wl_run(wl, &sa, err) < 0 ? BKM_EFAIL : bkm_wl_run(wl2, &sb, err);
        else
            rc = bkm_wl_run(wl2, &sb, err) < 0 ? BKM_EFAIL : bkm_wl_run(wl, &sa, err);
        if (rc < 0)
            goto out;
        a[i] = sa.ms;
        b[i] = sb.ms;
    }
    ma = median_of(a, n, tmp);
    mb = median_of(b, n, tmp);
    bkm_json_key(w, "compare");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "backend");
    bkm_json_str(w, spec->compare);
    bkm_json_key(w, "pairs");
    bkm_json_int(w, n);
    json_double_array(w, "samples_ms", a, n);
    json_double_array(w, "compare_samples_ms", b, n);
    bkm_json_key(w, "median_ms");
    bkm_json_double(w, ma);
    bkm_json_key(w, "compare_median_ms");
    bkm_json_double(w, mb);
    bkm_json_key(w, "ratio");
    bkm_json_double(w, ma > 0 ? mb / ma : NAN);
    bkm_json_key(w, "ratio_meaning");
    bkm_json_str(w, "compare_median_ms / median_ms of the interleaved pairs: above 1, the trial's backend is faster");
    if (bkm_wl_layers_json(wl2, &layers) > 0 && !layers.oom) {
        bkm_json_key(w, "compare_layers");
        bkm_json_raw(w, bkm_buf_str(&layers));
    }
    bkm_json_obj_end(w);
out:
    if (rc < 0)
        bkm_err_prefix(err, "compare with %s", spec->compare);
    bkm_buf_free(&layers);
    bkm_free(a);
    bkm_wl_destroy(wl2);
    return rc;
}

/* Workloads with a throughput unit (lstm: sentences/s from the median @p median_ms). */
static void worker_throughput_json(bkm_json_w_t *w, const bkm_wl_t *wl, double median_ms)
{
    const char *unit = NULL;
    double items = bkm_wl_items_per_iter(wl, &unit);
    if (items > 0 && unit && median_ms > 0) {
        bkm_json_key(w, "throughput");
        bkm_json_obj_begin(w);
        bkm_json_key(w, "unit");
        bkm_json_str(w, unit);
        bkm_json_key(w, "per_s");
        bkm_json_double(w, items / (median_ms * 1e-3));
        bkm_json_obj_end(w);
    }
}

/* Network workloads with layers=1: the per-layer table. */
static void worker_layers_json(bkm_json_w_t *w, const bkm_wl_t *wl)
{
    bkm_buf_t layers;
    bkm_buf_init(&layers);
    if (bkm_wl_layers_json(wl, &layers) > 0 && !layers.oom) {
        bkm_json_key(w, "layers");
        bkm_json_raw(w, bkm_buf_str(&layers));
    }
    bkm_buf_free(&layers);
}

int bkm_tune_worker_run(const bkm_tune_worker_cfg_t *cfg, bkm_buf_t *out, bkm_err_t *err)
{
    const bkm_tune_trial_spec_t *spec = &cfg->spec;
    bkm_topo_t *topo = NULL;
    bkm_aff_plan_t *plan = NULL;
    bkm_aff_probe_t *probe = NULL;
    bkm_tune_counters_t *ctr = NULL;
    bkm_tune_noise_t *noise = NULL;
    bkm_wl_t *wl = NULL;
    bkm_tune_samples_t s = {0};
    bkm_wl_config_t wcfg;
    bkm_aff_env_t aff_env = {0};
    bkm_buf_t check, params;
    worker_iter_t it = {0};
    bkm_json_w_t w;
    char why[512];
    int rc, binding_ok;
    double flops;

    bkm_buf_init(&check);
    bkm_buf_init(&params);
    rc = bkm_tune_trial_spec_validate(spec, err);
    if (rc < 0 || (rc = worker_threads_check(cfg, err)) < 0)
        goto out;
#ifndef BKM_TEST_HOOKS
    if (spec->inject[0]) {   /* the shipped worker cannot be told to crash, hang or lie */
        rc = bkm_err_set(err, BKM_EINVAL, "trial: fault injection '%s' exists only in the test build "
                         "(tune_testhooks)", spec->inject);
        goto out;
    }
#endif
    if (spec->ranks > 0) {   /* one rank of an MPI training trial: its own protocol */
        rc = bkm__tune_worker_train(cfg, out, err);
        goto out;
    }
    if (cfg->aff_env != NULL)
        aff_env = *cfg->aff_env;
    /* Plan from the environment and start PAPI before the first OpenMP call. */
    rc = bkm_topo_open_host(&topo, err);
    if (rc < 0)
        goto out;
    rc = bkm_aff_plan_create(topo, &aff_env, spec->threads, &plan, err);
    if (rc < 0)
        goto out;
    rc = bkm_tune_counters_open(&ctr, spec->counters, err);
    if (rc < 0)
        goto out;
    rc = bkm_aff_probe_run(spec->threads, &probe, err);
    if (rc < 0)
        goto out;

    bkm_json_w_init(&w, out, 0);
    bkm_json_obj_begin(&w);
    worker_head_json(&w, spec, &aff_env, plan);
#ifdef BKM_TEST_HOOKS
    binding_ok = worker_binding_check(plan, probe, spec->threads, strcmp(spec->inject, "mismatch") == 0, &w, why,
                                      sizeof why);
#else
    binding_ok = worker_binding_check(plan, probe, spec->threads, 0, &w, why, sizeof why);
#endif
    if (!binding_ok) {
        bkm_json_key(&w, "error");
        bkm_json_str(&w, why);
        bkm_json_obj_end(&w);
        rc = bkm_err_set(err, BKM_EVERIFY, "binding mismatch: %s", why);
        goto out;
    }

    rc = bkm_tune_trial_wl_config(spec, spec->backend, &wcfg, err);
    if (rc < 0)
        goto out;
    bkm_topo_cache_sizes(topo, &wcfg.cache_l1d, &wcfg.cache_l2, &wcfg.cache_l3);
    rc = bkm_wl_create(&wl, spec->workload, &wcfg, spec->seed, err);
    if (rc < 0)
        goto out;
    it.wl = wl;
#ifdef BKM_TEST_HOOKS
    it.inject = spec->inject;
#endif
    rc = bkm_tune_noise_open(&noise, spec->threads, NULL, spec->noise_share, err);
    if (rc < 0)
        goto out;
    rc = bkm_tune_measure(spec, worker_iter_fn, &it, ctr, noise, spec->threads, &s, err);
    if (rc < 0)
        goto out;
    bkm_tune_counters_crosscheck(ctr, noise);   /* PAPI against the OS, same threads and region */
    rc = bkm_wl_check(wl, &check, err);
    if (rc < 0)
        goto out;
    bkm_wl_params_json(wl, &params);
    if (check.oom || params.oom) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the workload's check and parameters");
        goto out;
    }
    flops = bkm_wl_flops(wl);

    worker_workload_json(&w, spec, wl, &params);
    worker_samples_json(&w, &s);
    worker_flops_json(&w, flops, s.median);
    if (spec->compare[0] && (rc = worker_compare(spec, wl, &wcfg, &w, err)) < 0)
        goto out;
    worker_throughput_json(&w, wl, s.median);
    bkm_json_key(&w, "check");
    bkm_json_raw(&w, bkm_buf_str(&check));
    worker_layers_json(&w, wl);
    bkm_json_key(&w, "counters");
    bkm_tune_counters_to_json(ctr, &w);
    bkm_json_key(&w, "noise");   /* from the OS, whatever PAPI offers */
    bkm_tune_noise_to_json(noise, &w);
    bkm_json_key(&w, "probe");
    rc = bkm_aff_probe_to_json(probe, &w, err);
    if (rc < 0)
        goto out;
    bkm_json_obj_end(&w);
    if (out->oom) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for the worker's JSON");
        goto out;
    }
#ifdef BKM_TEST_HOOKS
    if (strcmp(spec->inject, "badjson") == 0)
        bkm_buf_puts(out, "}{ not json");
#endif
out:
    bkm_buf_free(&check);
    bkm_buf_free(&params);
    bkm_tune_samples_free(&s);
    bkm_wl_destroy(wl);
    bkm_aff_probe_free(probe);
    bkm_tune_counters_close(ctr);
    bkm_tune_noise_close(noise);
    bkm_aff_plan_free(plan);
    bkm_topo_close(topo);
    return rc;
}
