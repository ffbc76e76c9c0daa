/* SPDX-License-Identifier: MIT */
/* The sequential confirmation's operating characteristics on simulated processes (no process is
 * run): for each most-processes-per-side M, process-to-process spread s (log values normal with
 * standard deviation s) and effect E (the first candidate's time is the default's / E; the others
 * are copies of the default), over REPS seeded confirmations of K candidates in blocks of R:
 * how often the first candidate is claimed, how often any copy is (a false claim), how often it
 * is found not better, and the processes a confirmation takes (mean over all arms, and the first
 * candidate's per side). Deterministic for a seed; prints a table, asserts nothing.
 *   bench_seq [--reps N] [--candidates K] [--block R] [--max LIST] [--spread LIST] [--effect LIST]
 *             [--alpha A] [--min-ratio X] [--spending obf|pocock] [--seed S] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/stats.h"

#define LIST_MAX 16
#define SIDE_MAX 1000

typedef struct {
    double v[LIST_MAX];
    int n;
} list_t;

static int parse_list(const char *s, list_t *l, double lo, double hi)
{
    char *end;
    l->n = 0;
    while (*s) {
        double x = strtod(s, &end);
        if (end == s || !(x >= lo && x <= hi) || l->n == LIST_MAX)
            return -1;
        l->v[l->n++] = x;
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return l->n > 0 ? 0 : -1;
}

static double unif(uint64_t *s)
{
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return (double)((*s * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static double gauss(uint64_t *s)
{
    double u = unif(s), v = unif(s);
    return sqrt(-2.0 * log(u > 1e-300 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_seq [--reps N] [--candidates K] [--block R] [--max LIST] [--spread LIST] "
                    "[--effect LIST] [--alpha A] [--min-ratio X] [--spending obf|pocock] [--seed S]\n");
}

int main(int argc, char **argv)
{
    long reps = 2000, k = 3, block = 6;
    unsigned long long seed = 1;
    list_t maxes, spreads, effects;
    bkm_tune_seq_rule_t rule;
    static double base[SIDE_MAX], cand[BKM_TUNE_CONFIRM_TOP_MAX][SIDE_MAX];
    bkm_tune_seq_rule_defaults(&rule);
    parse_list("6,12,18,24,30", &maxes, 1, SIDE_MAX);
    parse_list("0.02,0.05,0.10", &spreads, 0, 5);
    parse_list("1.0,1.02,1.05,1.10,1.5", &effects, 1, 100);
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = v == NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (!bad && strcmp(a, "--reps") == 0)
            bad = (reps = strtol(v, NULL, 10)) < 1;
        else if (!bad && strcmp(a, "--candidates") == 0)
            bad = (k = strtol(v, NULL, 10)) < 1 || k > BKM_TUNE_CONFIRM_TOP_MAX;
        else if (!bad && strcmp(a, "--block") == 0)
            bad = (block = strtol(v, NULL, 10)) < 1 || block > SIDE_MAX;
        else if (!bad && strcmp(a, "--max") == 0)
            bad = parse_list(v, &maxes, 1, SIDE_MAX) < 0;
        else if (!bad && strcmp(a, "--spread") == 0)
            bad = parse_list(v, &spreads, 0, 5) < 0;
        else if (!bad && strcmp(a, "--effect") == 0)
            bad = parse_list(v, &effects, 1, 100) < 0;
        else if (!bad && strcmp(a, "--alpha") == 0)
            bad = !((rule.alpha = strtod(v, NULL)) > 0 && rule.alpha <= 0.5);
        else if (!bad && strcmp(a, "--min-ratio") == 0)
            bad = !((rule.min_ratio = strtod(v, NULL)) >= 1);
        else if (!bad && strcmp(a, "--spending") == 0)
            bad = strcmp(v, "obf") == 0 ? (rule.spending = BKM_TUNE_SPENDING_OBF, 0)
                  : strcmp(v, "pocock") == 0 ? (rule.spending = BKM_TUNE_SPENDING_POCOCK, 0) : 1;
        else if (!bad && strcmp(a, "--seed") == 0)
            seed = strtoull(v, NULL, 10);
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "bench_seq: bad option '%s'%s%s\n", a, v ? " " : "", v ? v : "");
            usage(stderr);
            return 2;
        }
    }
    printf("# bench_seq: %ld simulated confirmations per row, %ld candidate(s) (the first with the effect, the "
           "others copies of the default), blocks of %ld, alpha %g, min ratio %g, %s, seed %llu\n",
           reps, k, block, rule.alpha, rule.min_ratio, bkm_tune_spending_name(rule.spending), seed);
    printf("| max per side | spread | effect | claimed | false claim | not better | processes, mean | first's per side |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int mi = 0; mi < maxes.n; mi++) {
        bkm_tune_seq_t *s = NULL;
        rule.max = (size_t)maxes.v[mi];
        if (rule.max < (size_t)block || bkm_tune_seq_create(&s, &rule, (size_t)k, NULL) < 0) {
            fprintf(stderr, "bench_seq: max %zu is below the block %ld\n", rule.max, block);
            return 2;
        }
        for (int si = 0; si < spreads.n; si++)
            for (int ei = 0; ei < effects.n; ei++) {
                double sd = spreads.v[si], eff = effects.v[ei], procs = 0, side = 0;
                long claimed = 0, false_claims = 0, not_better = 0;
                uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)(mi * 1000 + si * 100 + ei) + 1;
                for (long rep = 0; rep < reps; rep++) {
                    const double *cv[BKM_TUNE_CONFIRM_TOP_MAX];
                    size_t nc[BKM_TUNE_CONFIRM_TOP_MAX], n = 0;
                    int any_false = 0;
                    bkm_tune_seq_reset(s);
                    while (n < rule.max) {
                        size_t add = n + (size_t)block > rule.max ? rule.max - n : (size_t)block;
                        for (size_t i = 0; i < add; i++) {
                            base[n + i] = exp(sd * gauss(&rng));
                            procs += 1;
                            for (long c = 0; c < k; c++)
                                if (n == 0 || !bkm_tune_seq_cand(s, (size_t)c)->closed) {
                                    cand[c][n + i] = exp(sd * gauss(&rng)) / (c == 0 ? eff : 1.0);
                                    procs += 1;
                                }
                        }
                        n += add;
                        for (long c = 0; c < k; c++)
                            cv[c] = cand[c], nc[c] = n;
                        if (bkm_tune_seq_look(s, base, n, cv, nc, n >= rule.max, NULL) < 0)
                            return 3;
                        if (bkm_tune_seq_open(s) == 0)
                            break;
                    }
                    claimed += bkm_tune_seq_cand(s, 0)->decision == BKM_TUNE_CLAIMED && eff > 1.0;
                    not_better += bkm_tune_seq_cand(s, 0)->decision == BKM_TUNE_NOT_BETTER;
                    side += (double)bkm_tune_seq_cand(s, 0)->n_cand;
                    for (long c = eff > 1.0 ? 1 : 0; c < k; c++)
                        any_false |= bkm_tune_seq_cand(s, (size_t)c)->decision == BKM_TUNE_CLAIMED;
                    false_claims += any_false;
                }
                printf("| %zu | %.2f | %.2f | %.1f%% | %.2f%% | %.1f%% | %.1f | %.1f |\n", rule.max, sd, eff,
                       100.0 * (double)claimed / (double)reps, 100.0 * (double)false_claims / (double)reps,
                       100.0 * (double)not_better / (double)reps, procs / (double)reps, side / (double)reps);
            }
        bkm_tune_seq_free(s);
    }
    return 0;
}
