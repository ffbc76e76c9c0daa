/* SPDX-License-Identifier: MIT */
/* A stand-in for `tune worker` in the runner's tests: reads the spec like the worker does and
 * behaves as its parameter mode=... says (crash, hang, fail, bad JSON, binding mismatch, a NaN or
 * infinite sample, stderr that is not UTF-8, or a small valid result that echoes its environment). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/tuner.h"

extern char **environ;

static void print_ok(const bkm_tune_trial_spec_t *spec)
{
    const char *aff = getenv("KMP_AFFINITY"), *nt = getenv("OMP_NUM_THREADS");
    const char *places = getenv("OMP_PLACES"), *keep = getenv("BKM_TEST_KEEP");
    printf("{\"workload\":\"%s\",\"samples_ms\":[1.5,1.25,1.75,1.5,1.5],\"median_ms\":1.5,\"min_ms\":1.25,"
           "\"mad_ms\":0,\"ci95_ms\":[1.25,1.75],\"flops_per_iter\":2e6,\"gflops\":1.333,"
           "\"check\":{\"checksum\":42.5},\"impl\":\"fake\",",
           spec->workload);
    printf("\"counters\":{\"threads_counted\":1,\"values\":{\"perf::TASK-CLOCK\":1000},"
           "\"unavailable\":{\"PAPI_TOT_CYC\":\"Event does not exist\"}},");
    /* the order of the OpenMP variables in the environment (libomp reads them in that order) */
    printf("\"env_order\":\"");
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "OMP_", 4) == 0 || strncmp(*e, "KMP_", 4) == 0 || strncmp(*e, "GOMP_", 5) == 0)
            printf("%.*s;", (int)strcspn(*e, "="), *e);
    printf("\",");
    printf("\"env\":{\"KMP_AFFINITY\":\"%s\",\"OMP_NUM_THREADS\":\"%s\",\"OMP_PLACES\":\"%s\",\"BKM_TEST_KEEP\":\"%s\"}}\n",
           aff ? aff : "(unset)", nt ? nt : "(unset)", places ? places : "(unset)", keep ? keep : "(unset)");
}

int main(int argc, char **argv)
{
    bkm_tune_trial_spec_t spec;
    bkm_err_t err = {0};
    const char *inj;
    if ((argc != 4 && !(argc == 6 && strcmp(argv[4], "--parent") == 0 && atol(argv[5]) == (long)getppid())) ||
        strcmp(argv[1], "worker") != 0 || strcmp(argv[2], "--spec") != 0) {
        fprintf(stderr, "fake_worker: usage: fake_worker worker --spec JSON [--parent PPID]\n");
        return 2;
    }
    if (bkm_tune_trial_spec_from_json(argv[3], &spec, &err) < 0) {
        fprintf(stderr, "fake_worker: %s\n", err.msg);
        return 2;
    }
    inj = "";
    for (int i = 0; i < spec.n_params; i++)
        if (strcmp(spec.params[i].key, "mode") == 0)
            inj = spec.params[i].value;
    if (strcmp(inj, "segv") == 0) {
        fprintf(stderr, "about to crash\n");
        fflush(stderr);
        raise(SIGSEGV);
    } else if (strcmp(inj, "sigkill") == 0) {
        raise(SIGKILL);
    } else if (strcmp(inj, "hang") == 0) {
        /* A child in the same process group hangs too: the runner must kill the group. */
        if (fork() == 0)
            for (;;)
                pause();
        for (;;)
            pause();
    } else if (strcmp(inj, "exit3") == 0) {
        for (int i = 0; i < 500; i++)
            fprintf(stderr, "noise line %03d ..........\n", i);   /* > 4 KiB: only the tail is kept */
        fprintf(stderr, "fake_worker: workload exploded\n");
        return 3;
    } else if (strcmp(inj, "badbytes") == 0) {
        /* stderr as a broken locale or a binary dump leaves it: not UTF-8 */
        fprintf(stderr, "fake_worker: bytes \xff\xfe \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \x01\x1b[0m \xe2\x82\n");
        return 3;
    } else if (strcmp(inj, "badjson") == 0) {
        printf("{\"samples_ms\":[1,2,\n");
        return 0;
    } else if (strcmp(inj, "nan") == 0 || strcmp(inj, "inf") == 0 || strcmp(inj, "nullsample") == 0) {
        /* a non-finite sample: NaN as Python's json writes it, 1e999 (beyond a double), null as
         * bkm's JSON writer spells a NaN */
        const char *bad = strcmp(inj, "nan") == 0 ? "NaN" : strcmp(inj, "inf") == 0 ? "1e999" : "null";
        printf("{\"samples_ms\":[1.5,1.25,%s,1.5],\"median_ms\":1.5}\n", bad);
        return 0;
    } else if (strcmp(inj, "nosamples") == 0) {
        printf("{\"median_ms\":1}\n");
        return 0;
    } else if (strcmp(inj, "mismatch") == 0) {
        printf("{\"error\":\"thread 1 bound to 0 but planned 1\",\"binding\":{\"ok\":false}}\n");
        return BKM_WORKER_EXIT_BINDING;
    }
    print_ok(&spec);
    return 0;
}
