/* SPDX-License-Identifier: MIT */
/* Proof that a bkm binary runs on exactly one OpenMP runtime, LLVM libomp, for its own code and
 * for oneDNN's (docs/affinity.md §3.2).
 *
 * Debian's libdnnl links libgomp.so.1. bkm_executable() links libomp directly and adds a
 * DT_RPATH folder where libgomp.so.1 is a link to libomp.so.5, so the real libgomp is never
 * loaded. This test re-executes itself with a controlled environment, calls dnnl_sgemm (512^3)
 * with 2 threads, then probes the same libomp pool and checks:
 *   A  KMP_AFFINITY=granularity=fine,compact: only libomp mapped (no real libgomp), the team is
 *      bound to the first two allowed PUs in compact order, one each, and the process has no
 *      other thread (oneDNN used libomp's pool, not a second one).
 *   B  OMP_PLACES=threads OMP_PROC_BIND=close (the libgomp-constructor trap, §3.2 conclusion 2):
 *      the main thread is not pinned before main(), and the two threads are not stacked on one
 *      CPU.
 *   C  negative control: the real libgomp preloaded with the settings of B; the same checks must
 *      report it (two runtimes, a foreign libgomp worker, both threads stacked on one CPU).
 * Exits 77 (skipped) on a host with fewer than 2 allowed CPUs. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "bkm/affinity.h"
#include "child.h"

#define N 512

static int failures;

#define EXPECT(cond, ...)                                                                                    \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                             \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
            failures++;                                                                                      \
        }                                                                                                    \
    } while (0)

static void mask_string(const cpu_set_t *cs, bkm_buf_t *b)
{
    bkm_cpuset_t s;
    bkm_cpuset_zero(&s);
    for (int c = 0; c < CPU_SETSIZE && c < BKM_CPUSET_MAX; c++)
        if (CPU_ISSET(c, cs))
            bkm_cpuset_set(&s, c);
    bkm_cpuset_format(&s, b);
}

/* Child: main-thread mask at entry, dnnl_sgemm with its result checked, then the probe. Prints
 * {"main_mask_at_start":"..","sgemm":"ok"|"<why>","probe":{...}}. */
static int child(void)
{
    cpu_set_t cs;
    bkm_buf_t out, m;
    bkm_json_w_t w;
    bkm_err_t err = {0};
    bkm_aff_probe_t *p = NULL;
    float *a = NULL, *b = NULL, *c = NULL;
    const char *sgemm = "ok";
    char why[128];
    int rc = 1;
    bkm_buf_init(&out);
    bkm_buf_init(&m);
    CPU_ZERO(&cs);
    sched_getaffinity(0, sizeof(cs), &cs);
    mask_string(&cs, &m);

    a = bkm_aligned_alloc(64, sizeof(float) * N * N);
    b = bkm_aligned_alloc(64, sizeof(float) * N * N);
    c = bkm_aligned_alloc(64, sizeof(float) * N * N);
    if (!a || !b || !c)
        goto out;
    for (int i = 0; i < N * N; i++) {
        a[i] = (float)(i % 7) - 3.0f;
        b[i] = (float)(i % 5) - 2.0f;
        c[i] = 0.0f;
    }
    dnnl_status_t st = dnnl_sgemm('N', 'N', N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
    if (st != dnnl_success) {
        snprintf(why, sizeof(why), "dnnl_sgemm status %d", (int)st);
        sgemm = why;
    } else {
        /* Spot-check entries against a plain dot product (small integers: exact in float). */
        for (int k = 0; k < 16; k++) {
            int i = (k * 131) % N, j = (k * 277) % N;
            double ref = 0;
            for (int l = 0; l < N; l++)
                ref += (double)a[i * N + l] * (double)b[l * N + j];
            if ((double)c[i * N + j] != ref) {
                snprintf(why, sizeof(why), "C[%d][%d] = %g, expected %g", i, j, (double)c[i * N + j], ref);
                sgemm = why;
                break;
            }
        }
    }
    if (bkm_aff_probe_run(2, &p, &err) < 0) {
        fprintf(stderr, "probe: %s\n", err.msg);
        goto out;
    }
    bkm_json_w_init(&w, &out, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "main_mask_at_start"), bkm_json_str(&w, bkm_buf_str(&m));
    bkm_json_key(&w, "sgemm"), bkm_json_str(&w, sgemm);
    bkm_json_key(&w, "probe");
    bkm_aff_probe_to_json(p, &w, &err);
    bkm_json_obj_end(&w);
    printf("%s\n", bkm_buf_str(&out));
    rc = 0;
out:
    bkm_aff_probe_free(p);
    bkm_free(a);
    bkm_free(b);
    bkm_free(c);
    bkm_buf_free(&out);
    bkm_buf_free(&m);
    return rc;
}

static bkm_json_t *run_variant(const char *name, const char *const *env)
{
    const char *const args[] = {"test_single_runtime", "--child", NULL};
    bkm_buf_t b;
    bkm_json_t *j = NULL;
    bkm_err_t err = {0};
    bkm_buf_init(&b);
    int st = bkm_test_run_child(env, args, &b);
    EXPECT(st == 0, "%s: child exited with status %d", name, st);
    if (st == 0 && bkm_json_parse(bkm_buf_str(&b), &j, &err) != BKM_OK)
        EXPECT(0, "%s: bad child output (%s): %s", name, err.msg, bkm_buf_str(&b));
    else
        printf("%s: %s", name, bkm_buf_str(&b));
    bkm_buf_free(&b);
    return j;
}

static const char *team_mask(const bkm_json_t *probe, size_t i)
{
    const char *s = bkm_json_get_str(bkm_json_at(bkm_json_get(probe, "team"), i), "mask");
    return s ? s : "?";
}

/* Checks common to both variants: sgemm right, only libomp mapped, 2 threads, no other task. */
static void check_common(const char *name, const bkm_json_t *j)
{
    const bkm_json_t *p = bkm_json_get(j, "probe");
    const char *sg = bkm_json_get_str(j, "sgemm");
    EXPECT(sg && strcmp(sg, "ok") == 0, "%s: sgemm: %s", name, sg ? sg : "missing");
    EXPECT(p != NULL, "%s: no probe", name);
    if (!p)
        return;
    const bkm_json_t *rt = bkm_json_get(p, "runtimes");
    EXPECT(bkm_json_get(p, "libomp")->boolean, "%s: libomp is not mapped", name);
    EXPECT(!bkm_json_get(p, "libgomp")->boolean, "%s: the real libgomp is mapped (%s)", name,
           rt && rt->n_children > 1 ? bkm_json_at(rt, 1)->str : "see runtimes");
    EXPECT(rt && rt->n_children == 1, "%s: %zu OpenMP runtimes mapped, want 1", name, rt ? rt->n_children : 0);
    EXPECT((int)bkm_json_get_num(p, "threads", -1) == 2, "%s: team of %g threads", name,
           bkm_json_get_num(p, "threads", -1));
    /* oneDNN ran on the same libomp pool: no thread besides the probe's team exists. */
    const bkm_json_t *f = bkm_json_get(p, "foreign");
    EXPECT(f && f->n_children == 0, "%s: %zu foreign threads (first: tid %g '%s' on %s)", name, f ? f->n_children : 0,
           f && f->child ? bkm_json_get_num(f->child, "tid", -1) : -1.0,
           f && f->child ? bkm_json_get_str(f->child, "name") : "",
           f && f->child ? bkm_json_get_str(f->child, "mask") : "");
    EXPECT((int)bkm_json_get_num(p, "tasks", -1) == 2, "%s: %g tasks in /proc/self/task, want 2", name,
           bkm_json_get_num(p, "tasks", -1));
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--child") == 0)
        return child();

    bkm_topo_t *t = NULL;
    bkm_err_t err = {0};
    if (bkm_topo_open_host(&t, &err) < 0) {
        fprintf(stderr, "SKIP: cannot read this host's topology: %s\n", err.msg);
        return 77;
    }
    /* The first two PUs in libomp's order (packages and cores by hardware id; the children see
     * hwloc's topology, see child.h), as the planner gives them to granularity=fine,compact. */
    int first[2] = {-1, -1}, k = 0;
    bkm_aff_plan_t *plan = NULL;
    bkm_aff_env_t fine = {.kmp_affinity = "granularity=fine,compact"};
    bkm_topo_summary_t sum;
    bkm_topo_summary(t, &sum);
    if (sum.allowed_pus >= 2 && bkm_aff_plan_create(t, &fine, 2, &plan, &err) == BKM_OK)
        for (; k < 2; k++)
            first[k] = bkm_cpuset_first(bkm_aff_plan_cpus(plan, k));
    bkm_aff_plan_free(plan);
    bkm_cpuset_t allowed;
    bkm_topo_allowed(t, &allowed);
    bkm_buf_t all;
    bkm_buf_init(&all);
    bkm_cpuset_format(&allowed, &all);
    bkm_topo_close(t);
    if (k < 2) {
        fprintf(stderr, "SKIP: this host allows %d CPU(s); the binding checks need 2\n", k);
        bkm_buf_free(&all);
        return 77;
    }

    /* A: KMP_AFFINITY drives libomp; oneDNN's parallel regions run on the same bound pool. */
    static const char *const env_a[] = {"KMP_AFFINITY=granularity=fine,compact", "OMP_NUM_THREADS=2", NULL};
    bkm_json_t *a = run_variant("A KMP_AFFINITY=granularity=fine,compact", env_a);
    if (a) {
        check_common("A", a);
        const bkm_json_t *p = bkm_json_get(a, "probe");
        char want[2][16];
        for (int i = 0; i < 2; i++) {
            snprintf(want[i], sizeof(want[i]), "%d", first[i]);
            EXPECT(p && strcmp(team_mask(p, (size_t)i), want[i]) == 0, "A: thread %d bound to {%s}, want {%s}", i,
                   p ? team_mask(p, (size_t)i) : "?", want[i]);
        }
    }

    /* B: OMP_PLACES/OMP_PROC_BIND; with the real libgomp loaded, its constructor would pin the
     * main thread to CPU 0 before main() and libomp would stack both threads there. */
    static const char *const env_b[] = {"OMP_PLACES=threads", "OMP_PROC_BIND=close", "OMP_NUM_THREADS=2", NULL};
    bkm_json_t *b = run_variant("B OMP_PLACES=threads OMP_PROC_BIND=close", env_b);
    if (b) {
        check_common("B", b);
        const bkm_json_t *p = bkm_json_get(b, "probe");
        const char *m0 = bkm_json_get_str(b, "main_mask_at_start");
        EXPECT(m0 && strcmp(m0, bkm_buf_str(&all)) == 0, "B: main thread mask at main() is {%s}, want {%s}",
               m0 ? m0 : "?", bkm_buf_str(&all));
        EXPECT(p && strcmp(team_mask(p, 0), team_mask(p, 1)) != 0, "B: both threads on {%s}",
               p ? team_mask(p, 0) : "?");
        char want[2][16];
        for (int i = 0; i < 2; i++) {
            snprintf(want[i], sizeof(want[i]), "%d", first[i]);
            EXPECT(p && strcmp(team_mask(p, (size_t)i), want[i]) == 0, "B: thread %d bound to {%s}, want {%s}", i,
                   p ? team_mask(p, (size_t)i) : "?", want[i]);
        }
    }

    /* C, negative control: with the real libgomp preloaded the same checks must see it (two
     * runtimes, a libgomp worker outside libomp's team, threads stacked on one CPU). */
#ifdef BKM_REAL_LIBGOMP
    static const char *const env_c[] = {"LD_PRELOAD=" BKM_REAL_LIBGOMP, "OMP_PLACES=threads", "OMP_PROC_BIND=close",
                                        "OMP_NUM_THREADS=2", NULL};
    bkm_json_t *c = run_variant("C (control) LD_PRELOAD=libgomp OMP_PLACES=threads OMP_PROC_BIND=close", env_c);
    const bkm_json_t *pc = c ? bkm_json_get(c, "probe") : NULL;
    if (pc) {
        const bkm_json_t *rt = bkm_json_get(pc, "runtimes"), *f = bkm_json_get(pc, "foreign");
        EXPECT(bkm_json_get(pc, "libgomp")->boolean, "C: preloaded libgomp not detected");
        EXPECT(rt && rt->n_children == 2, "C: %zu runtimes detected, want 2", rt ? rt->n_children : 0);
        EXPECT(f && f->n_children >= 1, "C: the libgomp worker was not reported as foreign");
        EXPECT(strcmp(team_mask(pc, 0), team_mask(pc, 1)) == 0, "C: threads on {%s} and {%s}, the trap stacks them",
               team_mask(pc, 0), team_mask(pc, 1));
    }
    bkm_json_free(c);
#else
    printf("C (control): skipped, the real libgomp.so.1 was not found at configure time\n");
#endif
    bkm_json_free(a);
    bkm_json_free(b);
    bkm_buf_free(&all);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("single runtime: ok (libomp only; KMP_AFFINITY and OMP_PLACES/OMP_PROC_BIND bind oneDNN's pool)\n");
    return 0;
}
