/* SPDX-License-Identifier: MIT */
/* Every GOMP_parallel* entry point of GNU libgomp that libbkm_team.so interposes, each with a team
 * size of its own (2..13 threads), so that the team log shows that each one ran its team; each
 * prints a result that must not depend on the shim. GCC 12 emits all of them but
 * GOMP_parallel_loop_static (it expands static schedules inline), which is called here directly
 * with a body that takes its chunks from libgomp.  gcc -fopenmp only. */
#include <omp.h>
#include <stdio.h>

/* libgomp's ABI (libgomp_g.h) for the call GCC no longer emits */
void GOMP_parallel_loop_static(void (*fn)(void *), void *data, unsigned num_threads, long start, long end,
                               long incr, long chunk_size, unsigned flags);
_Bool GOMP_loop_static_next(long *istart, long *iend);
void GOMP_loop_end_nowait(void);

#define N 1000

static long a[N];

static long total(void)
{
    long s = 0;
    for (int i = 0; i < N; i++)
        s += a[i], a[i] = 0;
    return s;
}

/* The outlined body of "parallel for schedule(static, 7)" with its chunks from libgomp. */
static void static_body(void *data)
{
    long *v = data, start, end;
    while (GOMP_loop_static_next(&start, &end))
        for (long i = start; i < end; i++)
            v[i] = i;
    GOMP_loop_end_nowait();
}

static void check(const char *name, long sum)
{
    printf("%s %ld\n", name, sum);
}

int main(void)
{
    long s;
    omp_set_dynamic(0);
    s = 0;
#pragma omp parallel num_threads(2) reduction(+ : s)
    s += omp_get_thread_num() + 1;
    check("parallel", s);
#pragma omp parallel for num_threads(3) schedule(static, 7)
    for (int i = 0; i < N; i++)
        a[i] = i;
    check("static", total());
#pragma omp parallel for num_threads(4) schedule(monotonic : dynamic, 5)
    for (int i = 0; i < N; i++)
        a[i] = i;
    check("dynamic", total());
#pragma omp parallel for num_threads(5) schedule(monotonic : guided, 3)
    for (int i = 0; i < N; i++)
        a[i] = i;
    check("guided", total());
#pragma omp parallel for num_threads(6) schedule(dynamic, 5)
    for (int i = 0; i < N; i++)
        a[i] = i;
    check("nonmonotonic_dynamic", total());
#pragma omp parallel for num_threads(7) schedule(guided, 3)
    for (int i = 0; i < N; i++)
        a[i] = i;
    check("nonmonotonic_guided", total());
#pragma omp parallel for num_threads(8) schedule(monotonic : runtime)
    for (int i = 0; i < N; i++)
        a[i] = i;
    check("runtime", total());
#pragma omp parallel for num_threads(9) schedule(runtime)
    for (int i = 0; i < N; i++)
        a[i] = i;
    check("maybe_nonmonotonic_runtime", total());
#pragma omp parallel for num_threads(11) schedule(nonmonotonic : runtime)
    for (int i = 0; i < N; i++)
        a[i] = i;
    check("nonmonotonic_runtime", total());
    s = 0;
#pragma omp parallel num_threads(12) reduction(task, + : s)
    {
#pragma omp single
        for (int i = 0; i < 10; i++) {
#pragma omp task in_reduction(+ : s)
            s += i;
        }
    }
    check("task_reduction", s);
#pragma omp parallel sections num_threads(10)
    {
#pragma omp section
        a[0] = 1;
#pragma omp section
        a[1] = 10;
#pragma omp section
        a[2] = 100;
    }
    check("sections", total());
    GOMP_parallel_loop_static(static_body, a, 13, 0, N, 1, 7, 0);
    check("loop_static", total());
    return 0;
}
