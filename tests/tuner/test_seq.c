/* SPDX-License-Identifier: MIT */
/* Unit tests of the sequential confirmation (stats/seq.c) on simulated per-process values with
 * known answers: the alpha-spending boundaries (published values, and a simulation of the
 * canonical joint distribution), the one-sided exact test at a look (enumerated), Holm's
 * step-down, early stopping with a claim, futility ("not better by more than X%"), exhaustion of
 * the budget (by max and by the caller's final look), a candidate beaten by a claimed one, failed
 * candidates, a fixed reference side, bad input, and the rule's error rate over many looks and
 * candidates (with the naive repeated test as the negative control that it detects). Seeded, a
 * few seconds. */
#include <math.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/stats.h"

/* xorshift64*: uniform in [0, 1) */
static double unif(uint64_t *s)
{
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return (double)((*s * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static double gauss(uint64_t *s)
{
    double u = unif(s), v = unif(s);
    if (u < 1e-300)
        u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* ---- boundaries ---------------------------------------------------------------------- */

START_TEST(bounds_match_published_values)
{
    /* Lan-DeMets O'Brien-Fleming type, one-sided 0.025, 4 equally spaced looks: 4.3326, 2.9631,
     * 2.3590, 2.0141 (the classic example of Reboussin, DeMets, Kim and Lan's programs and of
     * gsDesign's sfLDOF) */
    const double t4[] = {0.25, 0.5, 0.75, 1.0}, want[] = {4.3326, 2.9631, 2.3590, 2.0141};
    double z[4], nom[4], one;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_tune_seq_bounds(BKM_TUNE_SPENDING_OBF, 0.025, t4, 4, z, nom, &err), BKM_OK);
    for (int k = 0; k < 4; k++) {
        ck_assert_msg(fabs(z[k] - want[k]) < 2e-4, "look %d: %.5f, published %.4f", k + 1, z[k], want[k]);
        ck_assert_double_eq_tol(nom[k], 0.5 * erfc(z[k] / sqrt(2.0)), 1e-15);
    }
    /* one look: the fixed test, z_alpha exactly */
    ck_assert_int_eq(bkm_tune_seq_bounds(BKM_TUNE_SPENDING_POCOCK, 0.025, (const double[]){1.0}, 1, &one, NULL, &err),
                     BKM_OK);
    ck_assert_double_eq_tol(one, 1.959963984540054, 1e-12);
    ck_assert_int_eq(bkm_tune_seq_bounds(BKM_TUNE_SPENDING_OBF, 0.01, (const double[]){0.4}, 1, &one, NULL, &err),
                     BKM_OK); /* a last look spends what is left, whatever its t */
    ck_assert_double_eq_tol(one, 2.326347874040841, 1e-12);
    /* the spending functions themselves */
    ck_assert_double_eq_tol(bkm_tune_spending_alpha(BKM_TUNE_SPENDING_OBF, 0.025, 0.25),
                            2.0 - 2.0 * (1.0 - 0.5 * erfc(4.483955 / sqrt(2.0))), 1e-7);
    ck_assert_double_eq_tol(bkm_tune_spending_alpha(BKM_TUNE_SPENDING_POCOCK, 0.05, 0.5), 0.05 * log(1.0 + 0.5 * (2.718281828459045 - 1.0)),
                            1e-15);
    ck_assert_double_eq(bkm_tune_spending_alpha(BKM_TUNE_SPENDING_OBF, 0.05, 1.0), 0.05);
    ck_assert_double_eq(bkm_tune_spending_alpha(BKM_TUNE_SPENDING_OBF, 0.05, 0.0), 0.0);
    /* bad designs */
    ck_assert_int_eq(bkm_tune_seq_bounds(BKM_TUNE_SPENDING_OBF, 0.7, t4, 4, z, NULL, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "0.7"));
    ck_assert_int_eq(bkm_tune_seq_bounds(BKM_TUNE_SPENDING_OBF, 0.05, (const double[]){0.5, 0.5}, 2, z, NULL, &err),
                     BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "look 2"));
}
END_TEST

/* The boundaries hold alpha for the canonical joint distribution (Brownian motion observed at the
 * information fractions), and each look spends its share: 200000 simulated paths. */
static void bounds_simulated(bkm_tune_spending_t f, const double *t, size_t looks)
{
    const double alpha = 0.05;
    const int paths = 200000;
    double z[8], first[8] = {0}, se = sqrt(alpha * (1 - alpha) / paths);
    uint64_t s = 0x5eed0001ULL + (uint64_t)f;
    int cross = 0;
    ck_assert_int_eq(bkm_tune_seq_bounds(f, alpha, t, looks, z, NULL, NULL), BKM_OK);
    for (int p = 0; p < paths; p++) {
        double w = 0.0, tp = 0.0;
        for (size_t k = 0; k < looks; k++) {
            w += sqrt(t[k] - tp) * gauss(&s);
            tp = t[k];
            if (w / sqrt(t[k]) >= z[k]) {
                first[k] += 1.0;
                cross++;
                break;
            }
        }
    }
    ck_assert_msg(fabs((double)cross / paths - alpha) < 4 * se, "%s: crossed %.4f, alpha %.3f",
                  bkm_tune_spending_name(f), (double)cross / paths, alpha);
    for (size_t k = 0; k < looks; k++) {
        double want = bkm_tune_spending_alpha(f, alpha, k + 1 == looks ? 1.0 : t[k]) -
                      (k ? bkm_tune_spending_alpha(f, alpha, t[k - 1]) : 0.0);
        ck_assert_msg(fabs(first[k] / paths - want) < 4 * sqrt(want / paths) + 1e-4, "%s look %zu: %.5f, spent %.5f",
                      bkm_tune_spending_name(f), k + 1, first[k] / paths, want);
    }
}

START_TEST(bounds_hold_alpha_simulated)
{
    const double eq[] = {0.25, 0.5, 0.75, 1.0}, uneq[] = {0.1, 0.3, 0.35, 0.8, 1.0};
    bounds_simulated(BKM_TUNE_SPENDING_OBF, eq, 4);
    bounds_simulated(BKM_TUNE_SPENDING_POCOCK, eq, 4);
    bounds_simulated(BKM_TUNE_SPENDING_OBF, uneq, 5);
    bounds_simulated(BKM_TUNE_SPENDING_POCOCK, uneq, 5);
}
END_TEST

/* ---- one look ----------------------------------------------------------------------------- */

static bkm_tune_seq_t *seq_new(size_t k, size_t max, double alpha)
{
    bkm_tune_seq_rule_t r;
    bkm_tune_seq_t *s = NULL;
    bkm_tune_seq_rule_defaults(&r);
    r.max = max;
    r.alpha = alpha;
    ck_assert_int_eq(bkm_tune_seq_create(&s, &r, k, NULL), BKM_OK);
    return s;
}

START_TEST(single_look_is_the_fixed_one_sided_test)
{
    /* 6 vs 6, completely separated: one-sided exact p = 1 / C(12, 6) = 1/924; a single final look
     * at alpha 0.01 (max = 6) holds it to 0.01 itself: claimed */
    const double base[] = {10, 10.2, 10.1, 10.3, 10.4, 10.05}, cand[] = {8, 8.1, 8.2, 8.3, 8.05, 8.15};
    const double *cv[1] = {cand};
    size_t nc[1] = {6};
    bkm_tune_seq_t *s = seq_new(1, 6, 0.01);
    const bkm_tune_seq_cand_t *c;
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 6, cv, nc, 0, NULL), BKM_OK);
    c = bkm_tune_seq_cand(s, 0);
    ck_assert_int_eq(c->decision, BKM_TUNE_CLAIMED);
    ck_assert_int_eq(c->closed, 1);
    ck_assert_int_eq(c->p_exact, 1);
    ck_assert_double_eq(c->u, 0.0);
    ck_assert_double_eq_tol(c->p, 1.0 / 924.0, 1e-15);
    ck_assert_double_eq_tol(c->nominal, 0.01, 1e-12);
    ck_assert_double_eq(c->t, 1.0);
    ck_assert(c->ratio > 1.2 && c->rci_lo > 1.0 && c->rci_lo <= c->ratio && c->ratio <= c->rci_hi);
    ck_assert_ptr_nonnull(strstr(c->reason, "faster"));
    ck_assert_uint_eq(bkm_tune_seq_open(s), 0);
    ck_assert_uint_eq(bkm_tune_seq_tested(s), 1);
    /* the other way round: never a claim, and the interval says it is slower */
    bkm_tune_seq_reset(s);
    cv[0] = base;
    ck_assert_int_eq(bkm_tune_seq_look(s, cand, 6, cv, nc, 0, NULL), BKM_OK);
    c = bkm_tune_seq_cand(s, 0);
    ck_assert_double_eq_tol(c->p, 1.0, 1e-12);
    ck_assert_int_eq(c->decision, BKM_TUNE_NOT_BETTER);
    ck_assert(c->rci_hi < 1.0);
    ck_assert_ptr_nonnull(strstr(c->reason, "slower"));
    bkm_tune_seq_free(s);
}
END_TEST

/* The one-sided p with ties is the permutation distribution conditional on the ties: enumerated
 * here over every subset. */
static double enumerate_p_less(const double *a, size_t na, const double *b, size_t nb)
{
    double all[16], u_obs = 0.0;
    size_t N = na + nb, hits = 0, total = 0;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            u_obs += a[i] > b[j] ? 1.0 : a[i] == b[j] ? 0.5 : 0.0;
    memcpy(all, a, na * sizeof *a);
    memcpy(all + na, b, nb * sizeof *b);
    for (unsigned mask = 0; mask < (1u << N); mask++) {
        double u = 0.0;
        if ((size_t)__builtin_popcount(mask) != na)
            continue;
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < N; j++)
                if ((mask >> i & 1u) && !(mask >> j & 1u))
                    u += all[i] > all[j] ? 1.0 : all[i] == all[j] ? 0.5 : 0.0;
        total++;
        hits += u <= u_obs + 1e-9;
    }
    return (double)hits / (double)total;
}

START_TEST(one_sided_p_with_ties_is_exact)
{
    const double a[] = {1, 2, 2, 3, 3, 4}, b[] = {2, 3, 4, 5, 5, 6, 7};
    const double *cv[1] = {a};
    size_t nc[1] = {6};
    bkm_tune_seq_t *s = seq_new(1, 7, 0.05);
    const bkm_tune_seq_cand_t *c;
    ck_assert_int_eq(bkm_tune_seq_look(s, b, 7, cv, nc, 0, NULL), BKM_OK);
    c = bkm_tune_seq_cand(s, 0);
    ck_assert_int_eq(c->p_exact, 1);
    ck_assert_double_eq(c->u, 6.5);
    ck_assert_double_eq_tol(c->p, enumerate_p_less(a, 6, b, 7), 1e-12);
    bkm_tune_seq_free(s);
}
END_TEST

START_TEST(holm_steps_down_at_a_look)
{
    /* 7 vs 7, one final look (max 7), alpha 0.01, two candidates: U = 6 gives p = 30/3432 =
     * 0.0087, above alpha/2 = 0.005 but below alpha: claimed only once the other (complete
     * separation, p = 1/3432) is, at alpha / (2 - 1) */
    const double base[] = {10, 11, 12, 13, 14, 15, 16};
    const double strong[] = {1, 2, 3, 4, 5, 6, 7}, weak[] = {1, 2, 3, 4, 5, 6, 15.5};
    const double null_c[] = {10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5};
    const double *cv[2] = {weak, strong};
    size_t nc[2] = {7, 7};
    bkm_tune_seq_t *s = seq_new(2, 7, 0.01);
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 7, cv, nc, 0, NULL), BKM_OK);
    ck_assert_double_eq_tol(bkm_tune_seq_cand(s, 0)->p, 30.0 / 3432.0, 1e-15);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 1)->decision, BKM_TUNE_CLAIMED);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 0)->decision, BKM_TUNE_CLAIMED);
    ck_assert_double_eq_tol(bkm_tune_seq_cand(s, 1)->nominal, 0.005, 1e-12);  /* its share alpha/2 */
    ck_assert_double_eq_tol(bkm_tune_seq_cand(s, 0)->nominal, 0.01, 1e-12);   /* after the step down */
    ck_assert_ptr_nonnull(strstr(bkm_tune_seq_cand(s, 0)->reason, "alpha/1"));
    /* with a null beside it, the weak one stays at alpha/2: not claimed */
    bkm_tune_seq_reset(s);
    cv[1] = null_c;
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 7, cv, nc, 0, NULL), BKM_OK);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 0)->decision, BKM_TUNE_UNDECIDED);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 0)->closed, 1);
    ck_assert_ptr_nonnull(strstr(bkm_tune_seq_cand(s, 0)->reason, "undecided at the budget"));
    ck_assert_int_ne(bkm_tune_seq_cand(s, 1)->decision, BKM_TUNE_CLAIMED);
    /* faster beyond doubt (complete separation) but by 1%, below min_ratio 1.02: not claimed */
    {
        double tight[7], near[7];
        const double *cn[1] = {near};
        bkm_tune_seq_t *s1 = seq_new(1, 7, 0.01);
        for (int i = 0; i < 7; i++)
            tight[i] = 10.0 + 0.01 * i, near[i] = tight[i] / 1.01;
        ck_assert_int_eq(bkm_tune_seq_look(s1, tight, 7, cn, nc, 0, NULL), BKM_OK);
        ck_assert_double_eq_tol(bkm_tune_seq_cand(s1, 0)->p, 1.0 / 3432.0, 1e-15);
        ck_assert(bkm_tune_seq_cand(s1, 0)->ratio < 1.02);
        ck_assert_int_eq(bkm_tune_seq_cand(s1, 0)->decision, BKM_TUNE_NOT_BETTER);
        bkm_tune_seq_free(s1);
    }
    bkm_tune_seq_free(s);
}
END_TEST

/* ---- several looks ------------------------------------------------------------------------ */

/* One simulated confirmation: per side blocks of @p block up to the design's max, values
 * exp(sigma N(0,1)) for the default and exp(sigma N(0,1)) / eff[i] for candidate i; closed
 * candidates are measured no more. Returns the processes per side at the end. */
static size_t simulate(bkm_tune_seq_t *s, size_t k, size_t block, size_t max, double sigma, const double *eff,
                       size_t final_at, uint64_t *rng)
{
    static double base[256], cand[4][256];
    const double *cv[4];
    size_t nc[4], n = 0;
    bkm_tune_seq_reset(s);
    while (n < max) {
        size_t add = n + block > max ? max - n : block;
        for (size_t i = 0; i < add; i++) {
            base[n + i] = exp(sigma * gauss(rng));
            for (size_t c = 0; c < k; c++)
                if (n == 0 || !bkm_tune_seq_cand(s, c)->closed)
                    cand[c][n + i] = exp(sigma * gauss(rng)) / eff[c];
        }
        n += add;
        for (size_t c = 0; c < k; c++)
            cv[c] = cand[c], nc[c] = n;
        ck_assert_int_eq(bkm_tune_seq_look(s, base, n, cv, nc, final_at && n >= final_at, NULL), BKM_OK);
        if (bkm_tune_seq_open(s) == 0)
            break;
    }
    return n;
}

START_TEST(early_stop_with_a_claim)
{
    /* a 2x win with 1% noise: O'Brien-Fleming spends nearly nothing at the first look (6 vs 6:
     * level 2e-8 < 1/924), so it is claimed at the second, after 12 processes, not 24 */
    const double eff[] = {2.0};
    uint64_t rng = 11;
    bkm_tune_seq_t *s = seq_new(1, 24, 0.01);
    size_t n = simulate(s, 1, 6, 24, 0.01, eff, 0, &rng);
    const bkm_tune_seq_cand_t *c = bkm_tune_seq_cand(s, 0);
    ck_assert_uint_eq(n, 12);
    ck_assert_int_eq(c->decision, BKM_TUNE_CLAIMED);
    ck_assert_uint_eq(c->looks, 2);
    ck_assert_uint_eq(c->n_cand, 12);
    ck_assert_double_eq_tol(c->t, 0.5, 1e-15);
    ck_assert(c->ratio > 1.9 && c->ratio < 2.1 && c->rci_lo > 1.5);
    /* the first look could not claim, and said so */
    bkm_tune_seq_reset(s);
    {
        double base[6], cand[6];
        const double *cv[1] = {cand};
        size_t nc[1] = {6};
        for (int i = 0; i < 6; i++)
            base[i] = 10 + 0.1 * i, cand[i] = 5 + 0.1 * i;
        ck_assert_int_eq(bkm_tune_seq_look(s, base, 6, cv, nc, 0, NULL), BKM_OK);
        c = bkm_tune_seq_cand(s, 0);
        ck_assert_int_eq(c->decision, BKM_TUNE_UNDECIDED);
        ck_assert_int_eq(c->closed, 0);
        ck_assert(c->nominal < 1.0 / 924.0);
        ck_assert(c->rci_lo == 0.0 && isinf(c->rci_hi)); /* no bounded interval has that level yet */
        ck_assert_ptr_nonnull(strstr(c->reason, "open after look 1"));
    }
    bkm_tune_seq_free(s);
}
END_TEST

START_TEST(futility_states_the_bound)
{
    /* the same time as the default with 0.3% noise: not better by more than a little, decided
     * before the budget; a setting 1.5x slower: not better, at the second look */
    const double same[] = {1.0}, slower[] = {1.0 / 1.5};
    uint64_t rng = 7;
    bkm_tune_seq_t *s = seq_new(1, 24, 0.01);
    size_t n = simulate(s, 1, 6, 24, 0.003, same, 0, &rng);
    const bkm_tune_seq_cand_t *c = bkm_tune_seq_cand(s, 0);
    ck_assert_int_eq(c->decision, BKM_TUNE_NOT_BETTER);
    ck_assert(n < 24);
    ck_assert(c->rci_hi < 1.02 && c->rci_hi > 1.0);
    ck_assert_ptr_nonnull(strstr(c->reason, "not better by more than"));
    n = simulate(s, 1, 6, 24, 0.01, slower, 0, &rng);
    c = bkm_tune_seq_cand(s, 0);
    ck_assert_int_eq(c->decision, BKM_TUNE_NOT_BETTER);
    ck_assert_uint_eq(n, 12);
    ck_assert(c->rci_hi < 1.0);
    bkm_tune_seq_free(s);
}
END_TEST

START_TEST(budget_exhausted_undecided)
{
    /* 30% noise, no effect: neither a claim nor a bound below 1.02 in 24 processes */
    const double none[] = {1.0};
    uint64_t rng = 5;
    bkm_tune_seq_t *s = seq_new(1, 24, 0.01);
    size_t n = simulate(s, 1, 6, 24, 0.3, none, 0, &rng);
    const bkm_tune_seq_cand_t *c = bkm_tune_seq_cand(s, 0);
    ck_assert_uint_eq(n, 24);
    ck_assert_int_eq(c->decision, BKM_TUNE_UNDECIDED);
    ck_assert_int_eq(c->closed, 1);
    ck_assert_uint_eq(c->looks, 4);
    ck_assert_double_eq(c->t, 1.0);
    ck_assert(c->rci_lo < 1.0 && c->rci_hi > 1.02);
    ck_assert_ptr_nonnull(strstr(c->reason, "undecided at the budget"));
    /* the caller's budget (--time) ends it at 12: that look spends what is left of alpha, so its
     * level is far above the planned second look's */
    {
        double planned;
        n = simulate(s, 1, 6, 24, 0.3, none, 12, &rng);
        c = bkm_tune_seq_cand(s, 0);
        ck_assert_uint_eq(n, 12);
        ck_assert_int_eq(c->closed, 1);
        ck_assert_uint_eq(c->looks, 2);
        {
            double z[2];
            ck_assert_int_eq(bkm_tune_seq_bounds(BKM_TUNE_SPENDING_OBF, 0.01, (const double[]){0.25, 0.5}, 2, z,
                                                 NULL, NULL), BKM_OK);
            planned = 0.5 * erfc(z[1] / sqrt(2.0));   /* the same as a final look at t = 0.5 */
        }
        ck_assert_double_eq_tol(c->nominal, planned, 1e-9);
        ck_assert(c->nominal > 1e-3);   /* the planned look 2 of 4 would be 7e-5 */
    }
    bkm_tune_seq_free(s);
}
END_TEST

START_TEST(beaten_candidate_measured_no_more)
{
    /* one candidate 2x faster, one the default's copy: once the first is claimed (look 2), the
     * copy's interval lies wholly below the winner's, so it is closed, undecided */
    const double eff[] = {2.0, 1.0};
    uint64_t rng = 3;
    bkm_tune_seq_t *s = seq_new(2, 24, 0.01);
    size_t n = simulate(s, 2, 6, 24, 0.05, eff, 0, &rng);
    ck_assert_uint_eq(n, 12);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 0)->decision, BKM_TUNE_CLAIMED);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 1)->decision, BKM_TUNE_UNDECIDED);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 1)->closed, 1);
    ck_assert_uint_eq(bkm_tune_seq_cand(s, 1)->beaten_by, 1);
    ck_assert_ptr_nonnull(strstr(bkm_tune_seq_cand(s, 1)->reason, "cannot beat candidate 1"));
    bkm_tune_seq_free(s);
}
END_TEST

START_TEST(failed_candidates_and_bad_input)
{
    double base[12], a[12], b[12];
    const double *cv[2] = {a, b};
    size_t nc[2] = {6, 0};
    bkm_tune_seq_t *s = seq_new(2, 24, 0.01);
    bkm_tune_seq_rule_t r;
    bkm_err_t err = {0};
    for (int i = 0; i < 12; i++)
        base[i] = 10 + 0.1 * i, a[i] = 10.05 + 0.1 * i, b[i] = 5;
    /* failed before the first look: not tested, not counted in Holm's m */
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 6, cv, nc, 0, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 1)->decision, BKM_TUNE_FAILED);
    ck_assert_uint_eq(bkm_tune_seq_tested(s), 1);
    /* a value that is not a positive time: refused naming it */
    a[7] = 0.0;
    nc[0] = 12;
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 12, cv, nc, 0, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "candidate 1"));
    a[7] = NAN;
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 12, cv, nc, 0, &err), BKM_EINVAL);
    a[7] = 10.75;
    /* more than planned */
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 25, cv, nc, 0, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "25"));
    ck_assert_int_eq(bkm_tune_seq_look(s, NULL, 0, cv, nc, 0, &err), BKM_EINVAL);
    /* failed later: closed as failed, its share of alpha stays where it was */
    nc[0] = 0;
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 12, cv, nc, 0, &err), BKM_OK);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 0)->decision, BKM_TUNE_FAILED);
    ck_assert_ptr_nonnull(strstr(bkm_tune_seq_cand(s, 0)->reason, "after 1 look"));
    ck_assert_uint_eq(bkm_tune_seq_open(s), 0);
    ck_assert_uint_eq(bkm_tune_seq_tested(s), 1);
    bkm_tune_seq_free(s);
    /* bad designs */
    bkm_tune_seq_rule_defaults(&r);
    r.alpha = 0.0;
    ck_assert_int_eq(bkm_tune_seq_create(&s, &r, 1, &err), BKM_EINVAL);
    ck_assert_ptr_null(s);
    bkm_tune_seq_rule_defaults(&r);
    r.min_ratio = 0.5;
    ck_assert_int_eq(bkm_tune_seq_create(&s, &r, 1, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "0.5"));
    ck_assert_int_eq(bkm_tune_seq_create(&s, NULL, 0, &err), BKM_EINVAL);
    ck_assert_str_eq(bkm_tune_decision_name(BKM_TUNE_NOT_BETTER), "not-better");
    ck_assert_str_eq(bkm_tune_decision_name(BKM_TUNE_UNDECIDED), "undecided");
}
END_TEST

START_TEST(fixed_reference_side)
{
    /* a recorded reference of 8 values (its count at the first look), the base growing:
     * information I = n 8 / (n + 8) over I_max = 24 8 / 32 = 6 */
    double base[24], ref[8];
    const double *cv[1] = {ref};
    size_t nc[1] = {8};
    bkm_tune_seq_rule_t r;
    bkm_tune_seq_t *s = NULL;
    bkm_tune_seq_rule_defaults(&r);
    r.max = 24;
    r.fixed_cand = 1;
    ck_assert_int_eq(bkm_tune_seq_create(&s, &r, 1, NULL), BKM_OK);
    for (int i = 0; i < 24; i++)   /* no effect, a wide spread: open after the first look */
        base[i] = 5 + (i * 7) % 11;
    for (int i = 0; i < 8; i++)
        ref[i] = 5.5 + (i * 5) % 11;
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 8, cv, nc, 0, NULL), BKM_OK);
    ck_assert_double_eq_tol(bkm_tune_seq_cand(s, 0)->t, (8.0 * 8 / 16) / 6.0, 1e-15);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 0)->closed, 0);
    ck_assert_int_eq(bkm_tune_seq_look(s, base, 24, cv, nc, 0, NULL), BKM_OK);
    ck_assert_double_eq(bkm_tune_seq_cand(s, 0)->t, 1.0);
    ck_assert_int_eq(bkm_tune_seq_cand(s, 0)->closed, 1);
    bkm_tune_seq_free(s);
}
END_TEST

/* ---- the error rate over many looks -------------------------------------------------------- */

START_TEST(error_rate_over_looks)
{
    /* 10000 simulated A/A confirmations, 4 looks of 6 up to 24, alpha 0.05 (large, so that the
     * rate is measured precisely), min_ratio 1: a claim is any rejection. The rule holds its
     * alpha; testing each look at alpha, as a naive rule would, is caught by the same simulation
     * well above it (the negative control). Three candidates with Holm: family-wise, too. */
    const int reps = 10000;
    const double alpha = 0.05, se = sqrt(alpha * (1 - alpha) / reps);
    const double none[] = {1.0, 1.0, 1.0};
    bkm_tune_seq_rule_t r;
    bkm_tune_seq_t *s = NULL, *naive[4] = {NULL};
    uint64_t rng = 20261201;
    int claims = 0, naive_claims = 0, fw = 0;
    bkm_tune_seq_rule_defaults(&r);
    r.alpha = alpha;
    r.min_ratio = 1.0;
    r.max = 24;
    ck_assert_int_eq(bkm_tune_seq_create(&s, &r, 1, NULL), BKM_OK);
    /* the naive rule: its own fixed test on the first 6, 12, 18, 24 (one design each, one look) */
    for (size_t k = 0; k < 4; k++) {
        bkm_tune_seq_rule_t r1 = r;
        r1.max = 6 * (k + 1);
        ck_assert_int_eq(bkm_tune_seq_create(&naive[k], &r1, 1, NULL), BKM_OK);
    }
    for (int rep = 0; rep < reps; rep++) {
        uint64_t keep = rng;
        double base[24], cand[24];
        int hit = 0;
        simulate(s, 1, 6, 24, 0.1, none, 0, &rng);
        claims += bkm_tune_seq_cand(s, 0)->decision == BKM_TUNE_CLAIMED;
        /* the naive rule on the same values: p <= alpha at any of the 4 looks */
        rng = keep;
        for (int i = 0; i < 24; i++)
            base[i] = exp(0.1 * gauss(&rng)), cand[i] = exp(0.1 * gauss(&rng));
        for (size_t k = 0; k < 4 && !hit; k++) {
            const double *cv[1] = {cand};
            size_t nc[1] = {6 * (k + 1)};
            bkm_tune_seq_reset(naive[k]);
            ck_assert_int_eq(bkm_tune_seq_look(naive[k], base, nc[0], cv, nc, 1, NULL), BKM_OK);
            hit = bkm_tune_seq_cand(naive[k], 0)->decision == BKM_TUNE_CLAIMED;
        }
        naive_claims += hit;
    }
    ck_assert_msg((double)claims / reps <= alpha + 3 * se, "sequential rule: %d false claims in %d (alpha %.2f)",
                  claims, reps, alpha);
    ck_assert_msg((double)claims / reps >= alpha - 6 * se, "sequential rule: only %d false claims in %d: it does not "
                  "spend its alpha", claims, reps);
    ck_assert_msg((double)naive_claims / reps > alpha + 8 * se, "the naive repeated test: %d of %d, not detected as "
                  "inflated", naive_claims, reps);
    bkm_tune_seq_free(s);
    for (size_t k = 0; k < 4; k++)
        bkm_tune_seq_free(naive[k]);
    /* three candidates against one default, Holm over them */
    r.max = 24;
    ck_assert_int_eq(bkm_tune_seq_create(&s, &r, 3, NULL), BKM_OK);
    for (int rep = 0; rep < reps / 2; rep++) {
        int any = 0;
        simulate(s, 3, 6, 24, 0.1, none, 0, &rng);
        for (size_t c = 0; c < 3; c++)
            any |= bkm_tune_seq_cand(s, c)->decision == BKM_TUNE_CLAIMED;
        fw += any;
    }
    ck_assert_msg((double)fw / (reps / 2) <= alpha + 3 * sqrt(alpha * (1 - alpha) / (reps / 2)),
                  "three candidates: family-wise %d of %d", fw, reps / 2);
    bkm_tune_seq_free(s);
}
END_TEST

static Suite *seq_suite(void)
{
    Suite *s = suite_create("seq");
    TCase *tc = tcase_create("seq");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bounds_match_published_values);
    tcase_add_test(tc, bounds_hold_alpha_simulated);
    tcase_add_test(tc, single_look_is_the_fixed_one_sided_test);
    tcase_add_test(tc, one_sided_p_with_ties_is_exact);
    tcase_add_test(tc, holm_steps_down_at_a_look);
    tcase_add_test(tc, early_stop_with_a_claim);
    tcase_add_test(tc, futility_states_the_bound);
    tcase_add_test(tc, budget_exhausted_undecided);
    tcase_add_test(tc, beaten_candidate_measured_no_more);
    tcase_add_test(tc, failed_candidates_and_bad_input);
    tcase_add_test(tc, fixed_reference_side);
    tcase_add_test(tc, error_rate_over_looks);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(seq_suite)
