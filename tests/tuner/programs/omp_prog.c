/* SPDX-License-Identifier: MIT */
/* A user's OpenMP program for the program-trial tests; it knows nothing of bkm. Built with
 * gcc -fopenmp (GNU libgomp), with clang -fopenmp (LLVM libomp), and without -fopenmp (no OpenMP
 * runtime: the pragmas are ignored). It runs REGIONS parallel regions of busy work of about MS
 * milliseconds each and prints, like the NERSC seed's benchmark, one line per region:
 *   avg time 12.345 millisecond
 *   omp_prog [MODE [REGIONS [MS]]]
 * MODE: ok (default), crash (SIGSEGV after the first region), hang (sleeps forever after the first
 * region), nometric (prints nothing), exit3 (exits with status 3), noisy (prints 1 MiB of text
 * per region), dlopen (also loads LLVM libomp with dlopen: two runtimes in one process), rebind
 * (thread 0 of each team moves itself to the machine's last CPU: not where a runtime that binds
 * the team close from CPU 0 put it), work (a fixed amount of arithmetic per region, about MS
 * milliseconds on one 3 GHz core, split over the team: its time grows when it is slowed down),
 * ratio (the arithmetic of work, multiplied by RATIO, a fourth argument, unless OMP_NUM_THREADS
 * is 1: built without OpenMP, two settings whose work differs by exactly that ratio).
 *   omp_prog ratio REGIONS MS RATIO */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    int regions = argc > 2 ? atoi(argv[2]) : 4;
    double ms = argc > 3 ? atof(argv[3]) : 30.0;
    const char *threads = getenv("OMP_NUM_THREADS");
    volatile double sink = 0;
    if (strcmp(mode, "ratio") == 0) {
        /* the setting OMP_NUM_THREADS=1 does the work of MS, every other setting RATIO times it */
        double ratio = argc > 4 ? atof(argv[4]) : 1.0;
        if (!(ratio > 0.0)) {
            fprintf(stderr, "omp_prog: ratio '%s' is not a positive number\n", argc > 4 ? argv[4] : "");
            return 2;
        }
        if (threads == NULL || strcmp(threads, "1") != 0)
            ms *= ratio;
        mode = "work";
    }
    if (strcmp(mode, "dlopen") == 0 && dlopen("libomp.so.5", RTLD_NOW | RTLD_LOCAL) == NULL)
        fprintf(stderr, "omp_prog: dlopen libomp.so.5: %s\n", dlerror());
    for (int r = 0; r < regions; r++) {
        double t0 = now_ms();
        double part = 0;
        if (strcmp(mode, "work") == 0) {
            long n = (long)(ms * 600000.0);
#pragma omp parallel for reduction(+ : part) schedule(static)
            for (long i = 0; i < n; i++)
                part += (double)(i & 1023) * 1e-9;
        } else
#pragma omp parallel reduction(+ : part)
        {
            double end = t0 + ms;
#ifdef _OPENMP
            if (strcmp(mode, "rebind") == 0 && omp_get_thread_num() == 0) {
                cpu_set_t set;
                long last = sysconf(_SC_NPROCESSORS_ONLN) - 1;
                CPU_ZERO(&set);
                CPU_SET(last > 0 ? (int)last : 0, &set);
                sched_setaffinity(0, sizeof set, &set);
            }
#endif
            while (now_ms() < end)
                for (int i = 0; i < 1000; i++)
                    part += (double)i * 1e-9;
        }
        sink += part;
        if (strcmp(mode, "nometric") != 0)
            printf("avg time %.3f millisecond\n", now_ms() - t0);
        if (strcmp(mode, "noisy") == 0)
            for (int k = 0; k < 16384; k++)
                puts("...............................................................");
        fflush(stdout);
        if (strcmp(mode, "crash") == 0)
            raise(SIGSEGV);
        if (strcmp(mode, "hang") == 0)
            for (;;)
                pause();
    }
    if (strcmp(mode, "exit3") == 0) {
        fprintf(stderr, "omp_prog: giving up with status 3\n");
        return 3;
    }
    return sink < 0;
}
