/* SPDX-License-Identifier: MIT */
/* A stand-in for `tune worker` in the runner's tests: reads the spec like the worker does and
 * behaves as its parameter mode=... says (crash, hang, fail, bad JSON, binding mismatch, noise on
 * stdout, endless stderr, a grandchild holding the pipes, an over-long result, death by SIGTERM, a
 * NaN or infinite sample, stderr that is not UTF-8, or a small valid result that echoes its
 * environment). The JSON goes to --result-fd N like the worker's. */
#define _GNU_SOURCE   /* fdopen, pid_t */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "bkm/trial.h"

extern char **environ;

static void print_ok(FILE *f, const bkm_tune_trial_spec_t *spec, long grandchild)
{
    const char *aff = getenv("KMP_AFFINITY"), *nt = getenv("OMP_NUM_THREADS");
    const char *places = getenv("OMP_PLACES"), *keep = getenv("BKM_TEST_KEEP");
    const char *hwloc = getenv("HWLOC_XMLFILE"), *dnn = getenv("ONEDNN_VERBOSE");
    fprintf(f, "{\"workload\":\"%s\",\"samples_ms\":[1.5,1.25,1.75,1.5,1.5],\"median_ms\":1.5,\"min_ms\":1.25,"
            "\"mad_ms\":0,\"ci95_ms\":[1.25,1.75],\"flops_per_iter\":2e6,\"gflops\":1.333,"
            "\"check\":{\"checksum\":42.5},\"impl\":\"fake\",\"grandchild\":%ld,",
            spec->workload, grandchild);
    fprintf(f, "\"counters\":{\"threads_counted\":1,\"values\":{\"perf::TASK-CLOCK\":1000},"
            "\"unavailable\":{\"PAPI_TOT_CYC\":\"Event does not exist\"}},");
    /* the order of the OpenMP variables in the environment (libomp reads them in that order) */
    fprintf(f, "\"env_order\":\"");
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "OMP_", 4) == 0 || strncmp(*e, "KMP_", 4) == 0 || strncmp(*e, "GOMP_", 5) == 0)
            fprintf(f, "%.*s;", (int)strcspn(*e, "="), *e);
    fprintf(f, "\",");
    fprintf(f, "\"env\":{\"KMP_AFFINITY\":\"%s\",\"OMP_NUM_THREADS\":\"%s\",\"OMP_PLACES\":\"%s\","
            "\"BKM_TEST_KEEP\":\"%s\",\"HWLOC_XMLFILE\":\"%s\",\"ONEDNN_VERBOSE\":\"%s\"}}\n",
            aff ? aff : "(unset)", nt ? nt : "(unset)", places ? places : "(unset)", keep ? keep : "(unset)",
            hwloc ? hwloc : "(unset)", dnn ? dnn : "(unset)");
    fflush(f);
}

int main(int argc, char **argv)
{
    bkm_tune_trial_spec_t spec;
    bkm_err_t err = {0};
    const char *inj = "";
    FILE *res = stdout;
    int fd = 1;
    if (argc < 4 || strcmp(argv[1], "worker") != 0 || strcmp(argv[2], "--spec") != 0) {
        fprintf(stderr, "fake_worker: usage: fake_worker worker --spec JSON [--parent PPID] [--result-fd N]\n");
        return 2;
    }
    for (int i = 4; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "fake_worker: option %s without a value\n", argv[i]);
            return 2;
        } else if (strcmp(argv[i], "--parent") == 0 && atol(argv[i + 1]) != (long)getppid()) {
            fprintf(stderr, "fake_worker: --parent %s is not my parent\n", argv[i + 1]);
            return 2;
        } else if (strcmp(argv[i], "--result-fd") == 0) {
            fd = atoi(argv[i + 1]);
            if ((res = fdopen(fd, "w")) == NULL) {
                fprintf(stderr, "fake_worker: --result-fd %d: %s\n", fd, strerror(errno));
                return 2;
            }
        } else if (strcmp(argv[i], "--parent") != 0) {
            fprintf(stderr, "fake_worker: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (bkm_tune_trial_spec_from_json(argv[3], &spec, &err) < 0) {
        fprintf(stderr, "fake_worker: %s\n", err.msg);
        return 2;
    }
    for (int i = 0; i < spec.n_params; i++)
        if (strcmp(spec.params[i].key, "mode") == 0)
            inj = spec.params[i].value;
    if (strcmp(inj, "segv") == 0) {
        fprintf(stderr, "about to crash\n");
        fflush(stderr);
        raise(SIGSEGV);
    } else if (strcmp(inj, "sigkill") == 0) {
        raise(SIGKILL);
    } else if (strcmp(inj, "sigterm") == 0) {
        /* as Slurm's time limit or scancel: SIGTERM to every process of the job */
        raise(SIGTERM);
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
        fprintf(res, "{\"samples_ms\":[1,2,\n");
        return 0;
    } else if (strcmp(inj, "nan") == 0 || strcmp(inj, "inf") == 0 || strcmp(inj, "nullsample") == 0) {
        /* a non-finite sample: NaN as Python's json writes it, 1e999 (beyond a double), null as
         * bkm's JSON writer spells a NaN */
        const char *bad = strcmp(inj, "nan") == 0 ? "NaN" : strcmp(inj, "inf") == 0 ? "1e999" : "null";
        fprintf(res, "{\"samples_ms\":[1.5,1.25,%s,1.5],\"median_ms\":1.5}\n", bad);
        return 0;
    } else if (strcmp(inj, "nosamples") == 0) {
        fprintf(res, "{\"median_ms\":1}\n");
        return 0;
    } else if (strcmp(inj, "mismatch") == 0) {
        fprintf(res, "{\"error\":\"thread 1 bound to 0 but planned 1\",\"binding\":{\"ok\":false}}\n");
        return BKM_WORKER_EXIT_BINDING;
    } else if (strcmp(inj, "stdout-noise") == 0) {
        /* what ONEDNN_VERBOSE=1 does: lines on stdout around the result */
        for (int i = 0; i < 200; i++)
            printf("onednn_verbose,exec,cpu,gemm,noise line %d\n", i);
        fflush(stdout);
        print_ok(res, &spec, 0);
        printf("onednn_verbose,info,the last word on stdout\n");
        return 0;
    } else if (strcmp(inj, "grandchild") == 0) {
        /* A grandchild (same process group) keeps every pipe open for a minute after the
         * worker has answered and exited: the runner must go by the worker's exit. */
        pid_t g = fork();
        if (g == 0) {
            sleep(60);
            _exit(0);
        }
        print_ok(res, &spec, (long)g);
        return 0;
    } else if (strcmp(inj, "spew") == 0) {
        /* stderr without a pause, forever: the watch must still see the timeout. Lines shorter
         * than the kept tail, so that the tail holds a line end wherever the kill cuts the stream */
        static char line[1 << 10];
        memset(line, 's', sizeof line - 1);
        line[sizeof line - 2] = '\n';
        for (;;)
            if (write(2, line, sizeof line - 1) < 0)
                return 1;
    } else if (strcmp(inj, "bigout") == 0) {
        /* 4 MiB of JSON (a string of 'x'), then hang: the cap must end it, not the timeout */
        static char blob[1 << 16];
        memset(blob, 'x', sizeof blob);
        fputs("{\"blob\":\"", res);
        for (int i = 0; i < 64; i++)
            fwrite(blob, 1, sizeof blob, res);
        fputs("\"}\n", res);
        fflush(res);
        for (;;)
            pause();
    }
    print_ok(res, &spec, 0);
    return 0;
}
