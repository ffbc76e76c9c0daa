/* SPDX-License-Identifier: MIT */
/* A real OpenMP program for the runtime detection tests, built as users build theirs: gcc -fopenmp
 * (GNU libgomp), clang -fopenmp (LLVM libomp), without -fopenmp (no runtime), and with
 * -DLOAD_LIBOMP, which dlopens LLVM's libomp.so.5 (RTLD_GLOBAL) beside gcc's libgomp: two runtimes
 * in one process, as PyTorch with MKL's libiomp5 has.
 *   omp_prog              one parallel region, prints the team size, exits 0
 *   omp_prog wait         the same, then prints "ready" and waits to be killed
 *   omp_prog fork FILE    as wait, after starting a child (same process group) that waits too;
 *                         the child's pid is written to FILE first
 *   omp_prog sleep MS     the region, then MS milliseconds of sleep, then exits 0: a program
 *                         whose runtime is mapped for only about that long */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef LOAD_LIBOMP
#include <dlfcn.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

static void wait_forever(void)
{
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    int team = 1;
#ifdef LOAD_LIBOMP
    if (dlopen("libomp.so.5", RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "omp_prog: %s\n", dlerror());
        return 3;
    }
#endif
#ifdef _OPENMP
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
    }
#endif
    if (argc > 2 && strcmp(argv[1], "fork") == 0) {
        FILE *f;
        pid_t child = fork();
        if (child < 0)
            return 4;
        if (child == 0)
            wait_forever();
        if ((f = fopen(argv[2], "w")) == NULL)
            return 5;
        fprintf(f, "%ld\n", (long)child);
        fclose(f);
    }
    printf("team %d\n", team);
    if (argc > 2 && strcmp(argv[1], "sleep") == 0) {
        long ms = strtol(argv[2], NULL, 10);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return 0;
    }
    if (argc > 1 && (strcmp(argv[1], "wait") == 0 || strcmp(argv[1], "fork") == 0)) {
        printf("ready\n");
        fflush(stdout);
        wait_forever();
    }
    return 0;
}
