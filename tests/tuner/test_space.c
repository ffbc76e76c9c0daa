/* SPDX-License-Identifier: MIT */
/* Search space: generation and deduplication on synthetic topologies (a 2-core host like the CI
 * machines, Cori Haswell, Cori KNL) and on this host; narrowing options; bad input named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/affinity.h"
#include "bkm/kernels.h"
#include "bkm/tuner.h"

static bkm_topo_t *topo;
static bkm_node_profile_t prof;

static void small_profile(void)
{
    memset(&prof, 0, sizeof prof);
    snprintf(prof.name, sizeof prof.name, "small");
    prof.threads[0] = 1, prof.threads[1] = 2, prof.n_threads = 2;
    prof.blocktime_ms[0] = 0, prof.blocktime_ms[1] = 1, prof.blocktime_ms[2] = 200, prof.blocktime_ms[3] = -1;
    prof.n_blocktime = 4;
}

static void setup_small(void)
{
    bkm_err_t err = {0};
    small_profile();
    ck_assert_int_eq(bkm_topo_open_synthetic(&topo, "pack:1 core:2 pu:1", &err), BKM_OK);
}

static void setup_profile(const char *name)
{
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_profile_builtin(name, &prof, &err), BKM_OK);
    ck_assert_msg(bkm_topo_open_profile(&topo, &prof, &err) == BKM_OK, "%s", err.msg);
}
static void setup_knl(void) { setup_profile("knl"); }
static void setup_haswell(void) { setup_profile("haswell"); }
static void setup_perlmutter(void) { setup_profile("perlmutter-cpu"); }

static void teardown(void)
{
    bkm_topo_close(topo);
    topo = NULL;
}

static void opts_init(bkm_tune_space_opts_t *o, const char *wl)
{
    memset(o, 0, sizeof *o);
    o->workload = wl;
}

static int has_note(const bkm_tune_space_t *sp, const char *a, const char *b)
{
    for (size_t i = 0; i < bkm_tune_space_n_notes(sp); i++) {
        const char *n = bkm_tune_space_note(sp, i);
        if (strstr(n, a) && (b == NULL || strstr(n, b)))
            return 1;
    }
    return 0;
}

START_TEST(small_default_first_and_dedup)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    const bkm_tune_config_t *d;
    size_t merged = 0, dropped = 0;
    opts_init(&o, "gemm");
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    d = bkm_tune_space_config(sp, 0);
    ck_assert_int_eq(d->is_default, 1);
    ck_assert_int_eq(d->threads, 2);          /* one per core */
    ck_assert_str_eq(d->kmp_affinity, "");
    ck_assert_int_eq(d->blocktime_ms, BKM_TUNE_BLOCKTIME_UNSET);
    /* 1 package, 1 thread/core: every bound setting pins thread i to core i, so all of them are one
     * configuration; none is unbound like the default; 200 ms is the default blocktime.
     * threads {1,2} x {default, bound} x blocktime {unset, 0, 1, infinite} = 16. */
    ck_assert_uint_eq(bkm_tune_space_size(sp), 16);
    ck_assert(has_note(sp, "KMP_AFFINITY=granularity=fine,scatter \u2261 granularity=fine,compact", "1 package"));
    ck_assert(has_note(sp, "KMP_AFFINITY=none \u2261 default", NULL));
    ck_assert(has_note(sp, "KMP_BLOCKTIME=200", NULL));
    bkm_tune_space_counts(sp, &merged, &dropped);
    ck_assert_uint_gt(merged, 0);
    for (size_t i = 1; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        ck_assert_int_eq(c->is_default, 0);
        ck_assert(strstr(c->kmp_affinity, "scatter") == NULL);
        ck_assert(c->blocktime_ms != 200);
    }
    bkm_tune_space_free(sp);
}
END_TEST

START_TEST(config_keys_are_canonical_and_distinct)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    char *k0 = NULL, *k0b = NULL;
    opts_init(&o, "gemm");
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_config_key(bkm_tune_space_config(sp, 0), &k0, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_config_key(bkm_tune_space_config(sp, 0), &k0b, &err), BKM_OK);
    ck_assert_str_eq(k0, k0b);
    ck_assert_ptr_nonnull(strstr(k0, "\"default\":true"));
    for (size_t i = 1; i < bkm_tune_space_size(sp); i++) {
        char *ki = NULL;
        ck_assert_int_eq(bkm_tune_config_key(bkm_tune_space_config(sp, i), &ki, &err), BKM_OK);
        for (size_t j = i + 1; j < bkm_tune_space_size(sp); j++) {
            char *kj = NULL;
            ck_assert_int_eq(bkm_tune_config_key(bkm_tune_space_config(sp, j), &kj, &err), BKM_OK);
            ck_assert_str_ne(ki, kj);
            bkm_free(kj);
        }
        ck_assert_str_ne(ki, k0);
        bkm_free(ki);
    }
    bkm_free(k0);
    bkm_free(k0b);
    bkm_tune_space_free(sp);
}
END_TEST

START_TEST(spec_from_config)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    bkm_tune_trial_spec_t spec;
    const char *aff[] = {"granularity=fine,compact"};
    int found = 0;
    opts_init(&o, "gemm");
    o.affinity[0] = aff[0], o.n_affinity = 1;
    o.blocktime_ms[0] = 0, o.n_blocktime = 1;
    o.threads[0] = 1, o.n_threads = 1;
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_OK);
    /* narrowed: the default + threads=1 compact blocktime=0 */
    ck_assert_uint_eq(bkm_tune_space_size(sp), 2);
    bkm_tune_trial_spec_defaults(&spec);
    ck_assert_int_eq(bkm_tune_config_to_spec(bkm_tune_space_config(sp, 1), "gemm", &spec, &err), BKM_OK);
    ck_assert_int_eq(spec.threads, 1);
    for (int i = 0; i < spec.n_env; i++) {
        if (strcmp(spec.env[i].key, "KMP_AFFINITY") == 0) {
            found |= 1;
            ck_assert_str_eq(spec.env[i].value, "granularity=fine,compact");
        }
        if (strcmp(spec.env[i].key, "KMP_BLOCKTIME") == 0) {
            found |= 2;
            ck_assert_str_eq(spec.env[i].value, "0");
        }
    }
    ck_assert_int_eq(found, 3);
    ck_assert_int_eq(bkm_tune_config_to_spec(bkm_tune_space_config(sp, 0), "gemm", &spec, &err), BKM_OK);
    ck_assert_int_eq(spec.n_env, 0);
    ck_assert_int_eq(spec.threads, 2);
    bkm_tune_space_free(sp);
}
END_TEST

/* fmnist-sgd (MPI): ranks x threads x --param; ranks x threads beyond the cores dropped; the
 * default 1 rank x one thread per core; specs carry the rank count, not a "ranks" parameter. */
START_TEST(mpi_ranks_dimension)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    bkm_tune_trial_spec_t spec;
    size_t merged = 9, dropped = 9;
    int dims[BKM_TUNE_MAX_DIMS], n_dims, twos = 0;
    opts_init(&o, "fmnist-sgd");
    o.ranks[0] = 1, o.ranks[1] = 2, o.n_ranks = 2;
    o.threads[0] = 1, o.threads[1] = 2, o.n_threads = 2;
    o.params[0] = "allreduce=mpi,ring", o.n_params = 1;
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    /* grid 2 threads x 2 ranks x 2 algorithms = 8, minus 2 (2 x 2 on 2 cores); the default
     * (threads=2 ranks=1 allreduce=mpi) is one of them, listed first */
    ck_assert_uint_eq(bkm_tune_space_size(sp), 6);
    bkm_tune_space_counts(sp, &merged, &dropped);
    ck_assert_uint_eq(dropped, 2);
    ck_assert(has_note(sp, "2 ranks x 2 threads need 4 cores", "the node has 2"));
    n_dims = bkm_tune_space_dims(sp, dims);
    ck_assert_int_eq(n_dims, BKM_TUNE_DIM_PARAM0 + 2);
    ck_assert_int_eq(dims[BKM_TUNE_DIM_PARAM0], 2);   /* ranks 1, 2 */
    ck_assert(bkm_tune_space_config(sp, 0)->is_default);
    ck_assert_int_eq(bkm_tune_space_config(sp, 0)->threads, 2);
    for (size_t i = 0; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        bkm_tune_trial_spec_defaults(&spec);
        ck_assert_int_eq(bkm_tune_config_to_spec(c, "fmnist-sgd", &spec, &err), BKM_OK);
        ck_assert_int_eq(bkm_tune_trial_spec_validate(&spec, &err), BKM_OK);
        ck_assert_int_ge(spec.ranks, 1);
        ck_assert_int_le(spec.ranks * spec.threads, 2);
        for (int k = 0; k < spec.n_params; k++)
            ck_assert_str_ne(spec.params[k].key, "ranks");
        twos += spec.ranks == 2;
        ck_assert_int_eq(spec.n_env, 0);
    }
    ck_assert_int_eq(twos, 2);   /* 2 ranks x 1 thread x {mpi, ring} */
    bkm_tune_space_free(sp);

    /* bad input, named */
    opts_init(&o, "fmnist-sgd");
    o.ranks[0] = 3, o.n_ranks = 1;
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--ranks 3"));
    opts_init(&o, "fmnist-sgd");
    o.params[0] = "allreduce=tree", o.n_params = 1;
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "tree"));
    opts_init(&o, "fmnist-sgd");
    o.params[0] = "ranks=2", o.n_params = 1;
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--ranks"));
    opts_init(&o, "gemm");
    o.ranks[0] = 2, o.n_ranks = 1;
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--ranks"));
    ck_assert_ptr_null(sp);
}
END_TEST

START_TEST(narrowed_setting_equal_to_default_is_kept)
{
    /* 'none' plans like the default (unbound), but at 1 thread it is another configuration */
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    opts_init(&o, "gemm");
    o.threads[0] = 1, o.threads[1] = 2, o.n_threads = 2;
    o.affinity[0] = "none", o.n_affinity = 1;
    o.blocktime_ms[0] = 200, o.n_blocktime = 1;
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_OK);
    /* the default (2 threads, nothing set) and 'none' at 1 thread; 'none' at 2 threads is the
     * default itself */
    ck_assert_uint_eq(bkm_tune_space_size(sp), 2);
    ck_assert_int_eq(bkm_tune_space_config(sp, 1)->threads, 1);
    ck_assert_str_eq(bkm_tune_space_config(sp, 1)->kmp_affinity, "none");
    bkm_tune_space_free(sp);
}
END_TEST

START_TEST(narrowing_params)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    int dims[BKM_TUNE_MAX_DIMS], nd;
    opts_init(&o, "gemm");
    o.threads[0] = 2, o.n_threads = 1;
    o.affinity[0] = "default", o.n_affinity = 1;
    o.blocktime_ms[0] = 200, o.n_blocktime = 1;
    o.params[0] = "m=64", o.params[1] = "kc=64,128", o.n_params = 2;
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    /* the default (kc at its default) + kc=64 + kc=128, all at m=64 */
    ck_assert_uint_eq(bkm_tune_space_size(sp), 3);
    nd = bkm_tune_space_dims(sp, dims);
    ck_assert_int_eq(nd, BKM_TUNE_DIM_PARAM0 + 2);
    for (size_t i = 0; i < 3; i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        int has_m = 0;
        for (int k = 0; k < c->n_params; k++)
            has_m |= strcmp(c->params[k].key, "m") == 0 && strcmp(c->params[k].value, "64") == 0;
        ck_assert(has_m);
    }
    bkm_tune_space_free(sp);
}
END_TEST

/* Creating the space with @p o fails with BKM_EINVAL naming @p needle, and creates nothing. */
static void expect_einval(const bkm_tune_space_opts_t *o, const char *needle)
{
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, o, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' is not named in: %s", needle, err.msg);
    ck_assert_ptr_null(sp);
}

START_TEST(bad_inputs_named)
{
    bkm_tune_space_opts_t o;
    opts_init(&o, "gemm");
    o.threads[0] = 5, o.n_threads = 1;
    expect_einval(&o, "--threads 5");
    opts_init(&o, "gemm");
    o.affinity[0] = "granularity=fine,sideways", o.n_affinity = 1;
    expect_einval(&o, "sideways");
    opts_init(&o, "gemm");
    o.affinity[0] = "OMP_PLACES=cores FOO=1", o.n_affinity = 1;
    expect_einval(&o, "FOO");
    opts_init(&o, "gemm");
    o.params[0] = "nosuch=1", o.n_params = 1;
    expect_einval(&o, "nosuch");
    opts_init(&o, "gemm");
    o.params[0] = "kc=banana", o.n_params = 1;
    expect_einval(&o, "banana");
    opts_init(&o, "nosuchworkload");
    expect_einval(&o, "nosuchworkload");
    opts_init(&o, "gemm");
    o.hw_subset[0] = "2x", o.n_hw_subset = 1;
    expect_einval(&o, "2x");
    {   /* one key=value limit (bkm_kv_t): a 255-character value reaches the workload's own check
         * (refused for what it says), a 256-character one is refused for its length */
        char v255[BKM_KV_VALUE_MAX + 8], v256[BKM_KV_VALUE_MAX + 8];
        snprintf(v255, sizeof v255, "shape=%0*d", BKM_KV_VALUE_MAX - 1, 7);
        snprintf(v256, sizeof v256, "shape=%0*d", BKM_KV_VALUE_MAX, 7);
        opts_init(&o, "conv2d");
        o.params[0] = v255, o.n_params = 1;
        expect_einval(&o, "cannot parse");
        opts_init(&o, "conv2d");
        o.params[0] = v256, o.n_params = 1;
        expect_einval(&o, "longer than 255 characters");
    }
}
END_TEST

/* --affinity "VAR=value VAR=value": a value may hold blanks; every bad one is named (issue 7:
 * a word without '=' crashed the splitter). Node: 1 package x 2 cores x 1 thread. */
START_TEST(affinity_values_with_blanks)
{
    static const char *const bad[][2] = {
        {"OMP_PLACES=cores close", "close"},
        {"OMP_PROC_BIND=close spread", "spread"},
        {"OMP_PLACES={0:2}, {2:2}", "OS proc 2"},          /* valid syntax, PUs 2-3 do not exist */
        {"OMP_PLACES=cores close OMP_PROC_BIND=spread", "close"},
        {"OMP_PLACES=cores OMP_PROC_BIND=close spread", "spread"},
        {"OMP_PROC_BIND=close  spread", "spread"},
        {"KMP_AFFINITY=compact granularity=fine", "granularity=fine"},
        {"OMP_PLACES=cores OMP_PLACES=threads", "OMP_PLACES is given twice"},
        {"OMP_PLACES=", "OMP_PLACES needs a value"},
        {"OMP_PLACES= cores", "OMP_PLACES needs a value"},
        {"OMP_PLACES=cores OMP_PROC_BIND=", "OMP_PROC_BIND needs a value"},
        {"OMP_PLACES=cores KMP_HW_SUBSET=1c", "'KMP_HW_SUBSET'"},
        {"OMP_PROC_BIND=close x=1", "x=1"},
    };
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    int found = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        opts_init(&o, "gemm");
        o.affinity[0] = bad[i][0], o.n_affinity = 1;
        expect_einval(&o, bad[i][1]);
        expect_einval(&o, bad[i][0]);   /* the whole setting is named too */
    }
    /* blanks inside a valid value are kept: the worker's libomp skips them */
    opts_init(&o, "gemm");
    o.affinity[0] = "OMP_PLACES={0:1}, {1:1}  OMP_PROC_BIND=close, close ", o.n_affinity = 1;
    o.threads[0] = 2, o.n_threads = 1;
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    for (size_t i = 0; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        if (c->omp_places[0]) {
            ck_assert_str_eq(c->omp_places, "{0:1}, {1:1}");
            ck_assert_str_eq(c->omp_proc_bind, "close, close");
            found = 1;
        }
    }
    bkm_tune_space_free(sp);
    ck_assert(found);   /* not merged: unlike the default, it binds */
}
END_TEST

/* Every configuration becomes a valid trial with the sweep's protocol, unscaled and at any rung,
 * or the check names what is wrong, before a sweep writes anything. */
START_TEST(specs_checked_up_front)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_tune_trial_spec_t base;
    bkm_err_t err = {0};
    opts_init(&o, "gemm");
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    bkm_tune_trial_spec_defaults(&base);
    ck_assert_msg(bkm_tune_space_specs_check(sp, "gemm", &base, &err) == BKM_OK, "%s", err.msg);
    base.min_samples = base.max_samples = BKM_TUNE_SAMPLES_MAX;   /* at the limit: clamped at every rung */
    ck_assert_msg(bkm_tune_space_specs_check(sp, "gemm", &base, &err) == BKM_OK, "%s", err.msg);
    base.max_samples = BKM_TUNE_SAMPLES_MAX + 1;
    ck_assert_int_eq(bkm_tune_space_specs_check(sp, "gemm", &base, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "100001"));
    ck_assert_ptr_nonnull(strstr(err.msg, "configuration 0"));
    bkm_tune_trial_spec_defaults(&base);
    base.timeout_s = 0;
    ck_assert_int_eq(bkm_tune_space_specs_check(sp, "gemm", &base, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "timeout"));
    bkm_tune_space_free(sp);
}
END_TEST

START_TEST(tunables_swept_on_request)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    int dims[BKM_TUNE_MAX_DIMS], nd;
    opts_init(&o, "gemm");
    o.threads[0] = 2, o.n_threads = 1;
    o.affinity[0] = "default", o.n_affinity = 1;
    o.blocktime_ms[0] = 200, o.n_blocktime = 1;
    o.sweep_tunables = 1;
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    nd = bkm_tune_space_dims(sp, dims);
    ck_assert_int_ge(nd, BKM_TUNE_DIM_PARAM0 + 2);   /* mc, kc, nc at least */
    ck_assert_uint_gt(bkm_tune_space_size(sp), 8);
    bkm_tune_space_free(sp);
}
END_TEST

/* The kernels' rules are part of the space: gemm with isa=avx2 cannot use mc values that are not
 * multiples of its 6-row micro-tile (the worker would refuse them), so those combinations are
 * dropped with a note naming the rule, and counted under their cause. */
START_TEST(kernel_rules_drop_parameter_combinations)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    size_t merged = 0, dropped = 0, dropped_by_cause = 0;
    opts_init(&o, "gemm");
    o.threads[0] = 2, o.n_threads = 1;
    o.affinity[0] = "default", o.n_affinity = 1;
    o.blocktime_ms[0] = 200, o.n_blocktime = 1;
    o.params[0] = "isa=avx2,avx512", o.params[1] = "mc=14,28,56", o.n_params = 2;
    if (bkm_kern_isa_detect() < BKM_ISA_AVX512) {
        /* an ISA this CPU lacks is refused by name */
        ck_assert_int_ne(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_OK);
        ck_assert_msg(strstr(err.msg, "avx512") != NULL, "%s", err.msg);
        return;
    }
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    /* the default, then avx512 x {14, 28, 56}; avx2 x {14, 28, 56} dropped */
    ck_assert_uint_eq(bkm_tune_space_size(sp), 4);
    for (size_t i = 1; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        ck_assert_int_eq(c->n_params, 2);
        ck_assert_str_eq(c->params[0].key, "isa");
        ck_assert_str_eq(c->params[0].value, "avx512");
    }
    bkm_tune_space_counts(sp, &merged, &dropped);
    ck_assert_uint_eq(dropped, 3);
    ck_assert(has_note(sp, "dropped parameters", "isa=avx2: parameter mc=56 is not a multiple of 6"));
    ck_assert(has_note(sp, "dropped parameters", "mc=14 is not a multiple of 6"));
    for (size_t i = 0; i < bkm_tune_space_n_causes(sp); i++) {
        const bkm_tune_space_cause_t *c = bkm_tune_space_cause(sp, i);
        if (!c->merged)
            dropped_by_cause += c->count;
    }
    ck_assert_uint_eq(dropped_by_cause, dropped);
    bkm_tune_space_free(sp);

    /* each ISA its own micro-tile: mc=12 is avx2's (6 rows), not avx512's (14, at least 14) */
    o.params[1] = "mc=12,14";
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    ck_assert_uint_eq(bkm_tune_space_size(sp), 3);
    bkm_tune_space_counts(sp, &merged, &dropped);
    ck_assert_uint_eq(dropped, 2);
    for (size_t i = 1; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        ck_assert_str_eq(c->params[1].value, strcmp(c->params[0].value, "avx2") == 0 ? "12" : "14");
    }
    ck_assert(has_note(sp, "dropped parameters", "isa=avx512: parameter mc=12 is out of range"));
    bkm_tune_space_free(sp);

    /* no combination of the values given can run: bad input naming the rule, not an empty sweep */
    o.params[0] = "isa=avx2", o.params[1] = "mc=56";
    ck_assert_int_eq(bkm_tune_space_create(&sp, topo, &prof, &o, &err), BKM_EINVAL);
    ck_assert_ptr_null(sp);
    ck_assert_msg(strstr(err.msg, "mc=56 is not a multiple of 6") != NULL, "%s", err.msg);
}
END_TEST

/* Rules that depend on the thread count (nt_jc divides the threads) drop only where they fail. */
START_TEST(kernel_rules_per_thread_count)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    size_t merged = 0, dropped = 0;
    int with_jc[3] = {0, 0, 0};
    opts_init(&o, "gemm");
    o.threads[0] = 1, o.threads[1] = 2, o.n_threads = 2;
    o.affinity[0] = "default", o.n_affinity = 1;
    o.blocktime_ms[0] = 200, o.n_blocktime = 1;
    o.params[0] = "nt_jc=2", o.n_params = 1;
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    for (size_t i = 0; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        if (c->n_params == 1 && strcmp(c->params[0].value, "2") == 0)
            with_jc[c->threads]++;
    }
    ck_assert_int_eq(with_jc[1], 0);
    ck_assert_int_eq(with_jc[2], 1);
    bkm_tune_space_counts(sp, &merged, &dropped);
    ck_assert_uint_eq(dropped, 1);
    ck_assert(has_note(sp, "dropped parameters at 1 thread:", "nt_jc=2 does not divide nt=1"));
    bkm_tune_space_free(sp);
}
END_TEST

START_TEST(knl_profile)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    size_t merged = 0, dropped = 0;
    int fine_vs_core = 0;
    opts_init(&o, "gemm");
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_tune_space_config(sp, 0)->threads, 68);
    bkm_tune_space_counts(sp, &merged, &dropped);
    /* KMP_HW_SUBSET=68c,1t allows 68 PUs: 136 and 272 threads are dropped as oversubscribed */
    ck_assert_uint_gt(dropped, 0);
    ck_assert(has_note(sp, "dropped", "68c,1t at 136 threads"));
    /* with 4 threads per core, fine and core granularity differ at 272 threads */
    for (size_t i = 0; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        if (c->threads == 272 && c->kmp_hw_subset[0] == 0 && c->blocktime_ms == BKM_TUNE_BLOCKTIME_UNSET &&
            (strcmp(c->kmp_affinity, "granularity=fine,compact") == 0 ||
             strcmp(c->kmp_affinity, "granularity=core,compact") == 0))
            fine_vs_core++;
    }
    ck_assert_int_eq(fine_vs_core, 2);
    bkm_tune_space_free(sp);
}
END_TEST

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The main job's plan for KNL (tune --node knl --workload alexnet) in a screenful: drops and merges
 * counted by cause, the dimensions, a few configurations; --verbose (and --dry-run, --json) keep
 * every note and every configuration. */
START_TEST(knl_plan_summary_fits_a_screen)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_tune_sweep_cfg_t cfg;
    bkm_err_t err = {0};
    bkm_buf_t brief, full, json;
    size_t merged = 0, dropped = 0, by_cause[2] = {0, 0}, n;
    char line[600];
    opts_init(&o, "alexnet");
    bkm_tune_sweep_cfg_defaults(&cfg);
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    n = bkm_tune_space_size(sp);
    bkm_tune_space_counts(sp, &merged, &dropped);
    for (size_t i = 0; i < bkm_tune_space_n_causes(sp); i++)
        by_cause[bkm_tune_space_cause(sp, i)->merged] += bkm_tune_space_cause(sp, i)->count;
    ck_assert_uint_eq(by_cause[0], dropped);
    ck_assert_uint_eq(by_cause[1], merged);
    ck_assert_uint_gt(n, 500);
    ck_assert_uint_gt(bkm_tune_space_n_notes(sp), 200);
    bkm_buf_init(&brief), bkm_buf_init(&full), bkm_buf_init(&json);
    bkm_tune_sweep_plan_render(sp, &prof, &cfg, "alexnet", 0, "tune sweep --node knl --workload alexnet", &brief, 0, 0);
    bkm_tune_sweep_plan_render(sp, &prof, &cfg, "alexnet", 0, "tune sweep --node knl --workload alexnet", &full, 0, 1);
    bkm_tune_sweep_plan_render(sp, &prof, &cfg, "alexnet", 0, "tune sweep --node knl --workload alexnet", &json, 1, 0);
    ck_assert_msg(count_lines(bkm_buf_str(&brief)) <= 30, "%s", bkm_buf_str(&brief));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&brief), "\n  48 dropped: KMP_HW_SUBSET=68c,1t with 136/272 threads "
                                                       "oversubscribes its 68 PUs\n"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&brief), "merged: settings that place every thread as an earlier"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&brief), "  [0] threads=68 (default)\n"));
    snprintf(line, sizeof line, "  [%zu] ", n - 1);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&brief), line));
    ck_assert_ptr_null(strstr(bkm_buf_str(&brief), "note: "));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&brief), "tune sweep --node knl --workload alexnet"));
    /* verbose: every cause, every note, every configuration */
    ck_assert_uint_ge(count_lines(bkm_buf_str(&full)), n + bkm_tune_space_n_notes(sp) + bkm_tune_space_n_causes(sp));
    for (size_t i = 0; i < bkm_tune_space_n_notes(sp); i++) {
        snprintf(line, sizeof line, "  note: %s\n", bkm_tune_space_note(sp, i));
        ck_assert_msg(strstr(bkm_buf_str(&full), line) != NULL, "missing %s", line);
    }
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&full), line));
    snprintf(line, sizeof line, "  [%zu] ", n / 2);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&full), line));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&json), "\"causes\": ["));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&json), "\"count\": 48"));
    bkm_buf_free(&brief), bkm_buf_free(&full), bkm_buf_free(&json);
    bkm_tune_space_free(sp);
}
END_TEST

/* KNL: libomp starts with its "mic" defaults (scatter, granularity=fine), so there the default
 * configuration plans as granularity=fine,scatter and the two merge; a profile of the same
 * topology that is not a KNL plans the default unbound and keeps both. */
static size_t knl_fine_scatter_space(const bkm_node_profile_t *p, int *fine_scatter_kept, int *merge_noted)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    size_t n;
    opts_init(&o, "gemm");
    o.threads[0] = 68, o.n_threads = 1;
    o.affinity[0] = "default", o.affinity[1] = "granularity=fine,scatter", o.n_affinity = 2;
    o.blocktime_ms[0] = 200, o.n_blocktime = 1;
    o.hw_subset[0] = "none", o.n_hw_subset = 1;
    ck_assert_msg(bkm_tune_space_create(&sp, topo, p, &o, &err) == BKM_OK, "%s", err.msg);
    n = bkm_tune_space_size(sp);
    *fine_scatter_kept = 0;
    for (size_t i = 0; i < n; i++)
        *fine_scatter_kept += strcmp(bkm_tune_space_config(sp, i)->kmp_affinity, "granularity=fine,scatter") == 0;
    *merge_noted = has_note(sp, "granularity=fine,scatter \u2261 default", "68 threads");
    bkm_tune_space_free(sp);
    return n;
}

START_TEST(knl_default_plans_as_mic)
{
    bkm_node_profile_t not_knl = prof;
    int kept, noted;
    knl_fine_scatter_space(&prof, &kept, &noted);
    ck_assert_int_eq(kept, 0);
    ck_assert_msg(noted, "granularity=fine,scatter was not merged with the default on knl");
    snprintf(not_knl.name, sizeof not_knl.name, "phi-lookalike");
    not_knl.slurm_constraint[0] = '\0';
    knl_fine_scatter_space(&not_knl, &kept, &noted);
    ck_assert_int_eq(kept, 1);
    ck_assert(!noted);
}
END_TEST

START_TEST(haswell_scatter_differs_from_compact)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    int scatter = 0, compact = 0;
    opts_init(&o, "gemm");
    o.threads[0] = 2, o.n_threads = 1;
    o.affinity[0] = "compact", o.affinity[1] = "scatter", o.n_affinity = 2;
    o.blocktime_ms[0] = 0, o.n_blocktime = 1;
    o.hw_subset[0] = "none", o.n_hw_subset = 1;
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    for (size_t i = 0; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        scatter += strcmp(c->kmp_affinity, "scatter") == 0;
        compact += strcmp(c->kmp_affinity, "compact") == 0;
    }
    /* 2 packages: compact puts 2 threads on one core's siblings, scatter on two packages */
    ck_assert_int_eq(scatter, 1);
    ck_assert_int_eq(compact, 1);
    ck_assert_uint_eq(bkm_tune_space_size(sp), 3);
    bkm_tune_space_free(sp);
}
END_TEST

/* Perlmutter CPU (16 L3 and 8 NUMA nodes on 2 sockets): the generated space holds OMP_PLACES=
 * ll_caches and numa_domains and the explicit L3 and NUMA lists; libomp 14 makes numa_domains the
 * cores, so those settings merge into OMP_PLACES=cores (dedup by plan), while the explicit L3 list
 * places one thread per L3 and stays. */
START_TEST(perlmutter_chiplet_places)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_err_t err = {0};
    int ll = 0, numa = 0, l3_list = 0, numa_list = 0;
    opts_init(&o, "gemm");
    o.threads[0] = 16, o.n_threads = 1;
    o.blocktime_ms[0] = 0, o.n_blocktime = 1;
    o.hw_subset[0] = "none", o.n_hw_subset = 1;
    ck_assert_msg(bkm_tune_space_create(&sp, topo, &prof, &o, &err) == BKM_OK, "%s", err.msg);
    for (size_t i = 0; i < bkm_tune_space_size(sp); i++) {
        const bkm_tune_config_t *c = bkm_tune_space_config(sp, i);
        ll += strcmp(c->omp_places, "ll_caches") == 0;
        numa += strcmp(c->omp_places, "numa_domains") == 0;
        l3_list += strcmp(c->omp_places, "{0:8,128:8}:16:8") == 0;
        numa_list += strcmp(c->omp_places, "{0:16,128:16}:8:16") == 0;
    }
    ck_assert_int_gt(ll, 0);
    ck_assert_int_eq(numa, 0);
    ck_assert_int_gt(l3_list, 0);
    ck_assert_int_gt(numa_list, 0);
    ck_assert_msg(has_note(sp, "OMP_PLACES=numa_domains", NULL), "numa_domains not noted as merged");
    bkm_tune_space_free(sp);
}
END_TEST

START_TEST(this_host)
{
    bkm_tune_space_opts_t o;
    bkm_tune_space_t *sp = NULL;
    bkm_topo_t *host = NULL;
    bkm_node_profile_t p;
    bkm_err_t err = {0};
    bkm_topo_summary_t s;
    ck_assert_int_eq(bkm_topo_open_host(&host, &err), BKM_OK);
    ck_assert_int_eq(bkm_profile_builtin("auto", &p, &err), BKM_OK);
    bkm_topo_summary(host, &s);
    opts_init(&o, "gemm");
    ck_assert_msg(bkm_tune_space_create(&sp, host, &p, &o, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_tune_space_config(sp, 0)->threads, s.cores);
    ck_assert_uint_ge(bkm_tune_space_size(sp), 2);
    bkm_tune_space_free(sp);
    bkm_topo_close(host);
}
END_TEST

/* Node names: auto resolves to the built-in profile the host matches, else to a fingerprint. */
static void resolve_synthetic(const char *synthetic, const char *want)
{
    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    char out[64];
    ck_assert_int_eq(bkm_topo_open_synthetic(&t, synthetic, &err), BKM_OK);
    ck_assert_msg(bkm_tune_node_resolve_topo("auto", t, out, sizeof out, &err) == BKM_OK, "%s", err.msg);
    ck_assert_str_eq(out, want);
    bkm_topo_close(t);
}

START_TEST(node_auto_resolves)
{
    static const char *const builtin[] = {"knl", "haswell"};
    bkm_err_t err = {0};
    char out[64], again[64], tiny[4];
    bkm_topo_t *host = NULL;
    /* a topology that is a built-in profile's node resolves to that profile */
    for (int i = 0; i < 2; i++) {
        bkm_node_profile_t p;
        bkm_topo_t *t = NULL;
        ck_assert_int_eq(bkm_profile_builtin(builtin[i], &p, &err), BKM_OK);
        ck_assert_int_eq(bkm_topo_open_profile(&t, &p, &err), BKM_OK);
        ck_assert_msg(bkm_tune_node_resolve_topo("auto", t, out, sizeof out, &err) == BKM_OK, "%s", err.msg);
        ck_assert_str_eq(out, builtin[i]);
        bkm_topo_close(t);
    }
    /* anything else: packages x cores per package x threads per core - ISA */
    resolve_synthetic("pack:1 core:2 pu:1", "host-1x2x1-unknown");
    resolve_synthetic("pack:2 core:8 pu:2", "host-2x8x2-unknown");
    /* other names pass through; bad ones are named */
    ck_assert_int_eq(bkm_tune_node_resolve("knl", out, sizeof out, &err), BKM_OK);
    ck_assert_str_eq(out, "knl");
    ck_assert_int_eq(bkm_tune_node_resolve("haswell", tiny, sizeof tiny, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'haswell'"));
    ck_assert_int_eq(bkm_tune_node_resolve("", out, sizeof out, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_tune_node_resolve(NULL, out, sizeof out, &err), BKM_EINVAL);
    /* this host: stable, and the same as resolving its topology */
    ck_assert_msg(bkm_tune_node_resolve("auto", out, sizeof out, &err) == BKM_OK, "%s", err.msg);
    ck_assert_msg(bkm_tune_node_resolve("auto", again, sizeof again, &err) == BKM_OK, "%s", err.msg);
    ck_assert_str_eq(out, again);
    ck_assert_str_ne(out, "auto");
    ck_assert_int_eq(bkm_topo_open_host(&host, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_node_resolve_topo("auto", host, again, sizeof again, &err), BKM_OK);
    ck_assert_str_eq(out, again);
    bkm_topo_close(host);
}
END_TEST

static Suite *space_suite(void)
{
    Suite *s = suite_create("space");
    TCase *tc = tcase_create("small");
    tcase_add_checked_fixture(tc, setup_small, teardown);
    tcase_add_test(tc, small_default_first_and_dedup);
    tcase_add_test(tc, config_keys_are_canonical_and_distinct);
    tcase_add_test(tc, spec_from_config);
    tcase_add_test(tc, mpi_ranks_dimension);
    tcase_add_test(tc, narrowing_params);
    tcase_add_test(tc, narrowed_setting_equal_to_default_is_kept);
    tcase_add_test(tc, bad_inputs_named);
    tcase_add_test(tc, affinity_values_with_blanks);
    tcase_add_test(tc, specs_checked_up_front);
    tcase_add_test(tc, tunables_swept_on_request);
    tcase_add_test(tc, kernel_rules_drop_parameter_combinations);
    tcase_add_test(tc, kernel_rules_per_thread_count);
    suite_add_tcase(s, tc);
    tc = tcase_create("knl");
    tcase_add_checked_fixture(tc, setup_knl, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, knl_profile);
    tcase_add_test(tc, knl_plan_summary_fits_a_screen);
    tcase_add_test(tc, knl_default_plans_as_mic);
    suite_add_tcase(s, tc);
    tc = tcase_create("haswell");
    tcase_add_checked_fixture(tc, setup_haswell, teardown);
    tcase_add_test(tc, haswell_scatter_differs_from_compact);
    suite_add_tcase(s, tc);
    tc = tcase_create("perlmutter");
    tcase_add_checked_fixture(tc, setup_perlmutter, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, perlmutter_chiplet_places);
    suite_add_tcase(s, tc);
    tc = tcase_create("host");
    tcase_add_test(tc, this_host);
    tcase_add_test(tc, node_auto_resolves);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(space_suite)
