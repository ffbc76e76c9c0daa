/* SPDX-License-Identifier: MIT */
/* A plain OpenMP program for the binding-proof tests, built with gcc -fopenmp (GNU libgomp) and
 * with clang -fopenmp (LLVM libomp); it knows nothing of bkm. It runs three parallel regions of
 * busy work for about SECONDS in all, with one extra pthread of its own that lives through them,
 * and prints a checksum that depends on neither the thread count nor the timing.
 *   omp_busy [SECONDS [FLAGS [STATUS]]]
 * FLAGS (a word of letters, "-" for none): n a nested region (2 x 2 threads); h a deferred target
 * task (target nowait: LLVM libomp runs it on its hidden helper threads); f a forked child that
 * starts and joins one pthread and exits (no OpenMP: GNU libgomp's pool does not survive fork). The
 * program exits with STATUS (default 0). LLVM libomp 14 fails an internal assertion
 * (kmp_tasking.cpp, KMP_HIDDEN_HELPER_THREAD) in most runs that have both n and h. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void busy_until(double end)
{
    volatile unsigned long long spin = 0;
    while (now_s() < end)
        for (int i = 0; i < 10000; i++)
            spin += (unsigned long long)i;
}

static volatile int stop_extra;

/* The program's own thread: wakes up every millisecond until told to stop. */
static void *extra(void *arg)
{
    (void)arg;
    while (!stop_extra)
        usleep(1000);
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    const char *flags = argc > 2 ? argv[2] : "-";
    int status = argc > 3 ? atoi(argv[3]) : 0;
    unsigned long long sum = 0;
    pthread_t th;
    if (pthread_create(&th, NULL, extra, NULL) != 0)
        return 3;
    for (int region = 0; region < 3; region++) {
        double end = now_s() + seconds / 3;
        unsigned long long part = 0;
#pragma omp parallel reduction(+ : part)
        {
            busy_until(end);
#pragma omp for schedule(static)
            for (int i = 0; i < 1000; i++)
                part += (unsigned long long)i * (unsigned long long)(region + 1);
        }
        sum += part;
    }
    if (strchr(flags, 'n')) {
        omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
        {
#pragma omp parallel num_threads(2)
            busy_until(now_s() + 0.1);
        }
    }
    if (strchr(flags, 'h')) {
        int x = 0;
#pragma omp parallel
#pragma omp single
        {
#pragma omp target nowait map(tofrom : x)
            x = 1;
#pragma omp taskwait
        }
        sum += (unsigned long long)x - 1;
        busy_until(now_s() + 0.1);   /* the helpers are sampled alive */
    }
    if (strchr(flags, 'f')) {
        pid_t child = fork();
        if (child == 0) {
            pthread_t t;
            stop_extra = 1;
            if (pthread_create(&t, NULL, extra, NULL) == 0)
                pthread_join(t, NULL);
            _exit(0);
        }
        if (child > 0)
            waitpid(child, NULL, 0);
    }
    stop_extra = 1;
    pthread_join(th, NULL);
    printf("checksum %llu\n", sum);
    return status;
}
