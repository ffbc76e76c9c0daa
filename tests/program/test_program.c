/* SPDX-License-Identifier: MIT */
/* Unit tests of bkm::program without a real program: the procfs parsers, the team log parser (the
 * shim's records and hostile lines), the LD_PRELOAD value and the log file, the sampler on a fake
 * procfs (mask changes, a reused TID, a missing source, the end of the process), the report from
 * a synthetic log (main team, helper team, nested team, creation-order inference, every class),
 * the check against a plan (match, mismatch, missing, unsampled, no team, unbound) and the JSON. */
#include "bkm_check.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bkm/program.h"

/* ---------------------------------------------------------------------------------------- */
/* Parsers                                                                                   */

static const char status_text[] =
    "Name:\tpython3\nUmask:\t0022\nState:\tR (running)\nTgid:\t100\nPid:\t101\n"
    "Cpus_allowed:\t3\nCpus_allowed_list:\t0-1,4\nMems_allowed_list:\t0\n"
    "voluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t4\n";

START_TEST(parse_status_fields)
{
    bkm_cpuset_t m;
    uint64_t vol, invol;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_prog_parse_status(status_text, &m, &vol, &invol, &err), BKM_OK);
    ck_assert_int_eq(bkm_cpuset_count(&m), 3);
    ck_assert(bkm_cpuset_isset(&m, 4) && !bkm_cpuset_isset(&m, 2));
    ck_assert_uint_eq(vol, 17);
    ck_assert_uint_eq(invol, 4);
    ck_assert_int_eq(bkm_prog_parse_status("Name:\tx\nvoluntary_ctxt_switches:\t1\n", &m, &vol, &invol, &err),
                     BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "Cpus_allowed_list"));
    ck_assert_int_eq(bkm_prog_parse_status("Cpus_allowed_list:\t0-x\nvoluntary_ctxt_switches:\t1\n"
                                           "nonvoluntary_ctxt_switches:\t1\n", &m, &vol, &invol, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_prog_parse_status("Cpus_allowed_list:\t0\nvoluntary_ctxt_switches:\t1x\n"
                                           "nonvoluntary_ctxt_switches:\t1\n", &m, &vol, &invol, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "voluntary"));
}
END_TEST

/* A stat line of a thread as the kernel writes it: state, faults, times, start, processor. */
static void stat_line(char *buf, size_t n, int tid, const char *comm, char state, unsigned long long minflt,
                      unsigned long long utime, unsigned long long stime, unsigned long long start, int cpu)
{
    snprintf(buf, n, "%d (%s) %c 1 1 1 0 -1 4194560 %llu 0 2 0 %llu %llu 0 0 20 0 3 0 %llu 1000 100 "
             "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 %d 0 0 0 0 0\n",
             tid, comm, state, minflt, utime, stime, start, cpu);
}

START_TEST(parse_stat_fields)
{
    char line[512];
    bkm_prog_counters_t c;
    unsigned long long start;
    int cpu;
    char state;
    bkm_err_t err = {0};
    /* a name with spaces and parentheses: only the last ')' ends it */
    stat_line(line, sizeof line, 101, "a) (b c", 'S', 12, 300, 40, 5555, 1);
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(bkm_prog_parse_stat(line, &c, &start, &cpu, &state, &err), BKM_OK);
    ck_assert_int_eq(state, 'S');
    ck_assert_uint_eq(c.minflt, 12);
    ck_assert_uint_eq(c.majflt, 2);
    ck_assert_uint_eq(c.utime, 300);
    ck_assert_uint_eq(c.stime, 40);
    ck_assert_uint_eq(start, 5555);
    ck_assert_int_eq(cpu, 1);
    ck_assert_int_eq(bkm_prog_parse_stat("101 (x) R 1 2 3\n", &c, &start, &cpu, &state, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "39 expected"));
    ck_assert_int_eq(bkm_prog_parse_stat("101 x R 1 2 3\n", &c, &start, &cpu, &state, &err), BKM_EINVAL);
    stat_line(line, sizeof line, 101, "x", 'R', 1, 2, 3, 4, 99999);
    ck_assert_int_eq(bkm_prog_parse_stat(line, &c, &start, &cpu, &state, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "99999"));
}
END_TEST

START_TEST(parse_schedstat_and_sched)
{
    uint64_t run, wait, sl;
    long long mig;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_prog_parse_schedstat("215512431 85141355 2261\n", &run, &wait, &sl, &err), BKM_OK);
    ck_assert_uint_eq(run, 215512431);
    ck_assert_uint_eq(wait, 85141355);
    ck_assert_uint_eq(sl, 2261);
    ck_assert_int_eq(bkm_prog_parse_schedstat("1 2\n", &run, &wait, &sl, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_prog_parse_sched_migrations("python3 (101, #threads: 3)\n----\n"
                                                     "se.exec_start : 1.5\nse.nr_migrations   :   42\n",
                                                     &mig, &err), BKM_OK);
    ck_assert_int_eq(mig, 42);
    ck_assert_int_eq(bkm_prog_parse_sched_migrations("se.exec_start : 1\n", &mig, &err), BKM_ENOTSUP);
    ck_assert_int_eq(bkm_prog_parse_sched_migrations("se.nr_migrations : 4x\n", &mig, &err), BKM_EINVAL);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Team log                                                                                  */

static void parse_text(bkm_prog_log_t *log, const char *text)
{
    bkm_err_t err = {0};
    memset(log, 0, sizeof *log);
    ck_assert_int_eq(bkm_prog_log_parse(log, text, strlen(text), &err), BKM_OK);
}

START_TEST(log_records_parse)
{
    bkm_prog_log_t log;
    parse_text(&log,
               "bkmteam1 start pid=100 tid=100 t=5 ppid=1 prog=omp_busy version=1\n"
               "bkmteam1 thread pid=100 tid=101 t=6 creator=100 seq=1 via=libstdc++.so.6 lib=libc10.so exe=0\n"
               "bkmteam1 team pid=100 tid=101 t=7 api=gomp index=1 size=2 level=1 primary=100 rt=libgomp.so.1\n"
               "bkmteam1 othread pid=100 tid=102 t=8 type=other rt=libomp.so.5\n"
               "bkmteam1 tool pid=100 tid=100 t=9 omp_version=201611 runtime=LLVM_OMP_version__5.0\n"
               "bkmteam1 fork pid=103 tid=103 t=10 ppid=100 parent_tid=101\n"
               "bkmteam1 lost pid=100 tid=101 t=11 what=team-shapes max=16\n"
               "bkmteam1 team pid=100 tid=101 t=12 api=ompt index=0 size=1 level=-1 primary=0 rt=? future=1\n");
    ck_assert_uint_eq(log.n, 8);
    ck_assert_uint_eq(log.malformed, 0);
    ck_assert_int_eq(log.rec[0].kind, BKM_PROG_REC_START);
    ck_assert_str_eq(log.rec[0].lib, "omp_busy");
    ck_assert_int_eq(log.rec[0].version, 1);
    ck_assert_int_eq(log.rec[1].kind, BKM_PROG_REC_THREAD);
    ck_assert_int_eq(log.rec[1].creator, 100);
    ck_assert_str_eq(log.rec[1].lib, "libc10.so");
    ck_assert_str_eq(log.rec[1].via, "libstdc++.so.6");
    ck_assert_int_eq(log.rec[2].api, BKM_PROG_API_GOMP);
    ck_assert_int_eq(log.rec[2].index, 1);
    ck_assert_int_eq(log.rec[2].size, 2);
    ck_assert_int_eq(log.rec[2].primary, 100);
    ck_assert_uint_eq(log.rec[2].t_ns, 7);
    ck_assert_int_eq(log.rec[3].type, BKM_PROG_OMPT_OTHER);
    ck_assert_int_eq(log.rec[4].version, 201611);
    ck_assert_int_eq(log.rec[5].kind, BKM_PROG_REC_FORK);
    ck_assert_int_eq(log.rec[5].creator, 101);
    ck_assert_int_eq(log.rec[6].kind, BKM_PROG_REC_LOST);
    ck_assert_int_eq(log.rec[7].level, -1);   /* an unknown field is ignored */
    bkm_prog_log_free(&log);
}
END_TEST

/* Every line here is data a program could have written into the file: none is a record. */
START_TEST(log_hostile_lines)
{
    static const char *const bad[] = {
        "garbage\n",
        "bkmteam1\n",
        "bkmteam2 start pid=1 tid=1 t=1 ppid=0 prog=x version=1\n",
        "bkmteam1 nosuchkind pid=1 tid=1 t=1\n",
        "bkmteam1 team pid=1 tid=1 t=1 api=gomp index=0 size=2 level=1 rt=x\n",               /* no primary */
        "bkmteam1 team pid=1 tid=1 t=1 api=cilk index=0 size=2 level=1 primary=1 rt=x\n",
        "bkmteam1 team pid=1 tid=1 t=1 api=gomp index=-1 size=2 level=1 primary=1 rt=x\n",
        "bkmteam1 team pid=1 tid=1 t=1 api=gomp index=0 size=0 level=1 primary=1 rt=x\n",
        "bkmteam1 team pid=1 tid=1 t=1 api=gomp index=0 size=2 size=3 level=1 primary=1 rt=x\n", /* repeated */
        "bkmteam1 team pid=0 tid=1 t=1 api=gomp index=0 size=2 level=1 primary=1 rt=x\n",
        "bkmteam1 team pid=1 tid=1 t=1 api=gomp index=0 size=99999999999 level=1 primary=1 rt=x\n",
        "bkmteam1 thread pid=1 tid=2 t=1 creator=1 seq=1 via=a/b lib=x exe=0\n",              /* '/' in a name */
        "bkmteam1 thread pid=1 tid=2 t=1 creator=1 seq=1 via=$(rm) lib=x exe=0\n",
        "bkmteam1 thread pid=1 tid=2 t=1 creator=1 seq=1 via= lib=x exe=0\n",
        "bkmteam1 thread pid=1 tid=2 t=1 creator=1 seq=1 via=a lib=x exe=2\n",
        "bkmteam1 othread pid=1 tid=2 t=1 type=boss\n",
        "bkmteam1 start pid=1 tid=1 t=-5 ppid=0 prog=x version=1\n",
        "bkmteam1 start pid=1 tid=1 t=1 ppid=0 prog=x version=1",                             /* cut */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bkm_prog_log_t log;
        parse_text(&log, bad[i]);
        ck_assert_msg(log.n == 0 && log.malformed == 1, "line %zu '%s' gave %zu records", i, bad[i], log.n);
        bkm_prog_log_free(&log);
    }
    /* an overlong line, a NUL byte, control characters: counted, shown printable */
    {
        char big[2000];
        bkm_prog_log_t log;
        bkm_err_t err = {0};
        memset(big, 'x', sizeof big);
        big[sizeof big - 1] = '\n';
        memset(&log, 0, sizeof log);
        ck_assert_int_eq(bkm_prog_log_parse(&log, big, sizeof big, &err), BKM_OK);
        ck_assert_uint_eq(log.malformed, 1);
        ck_assert_int_eq(bkm_prog_log_parse(&log, "bkm\0team1 x\n\x1b[31m\n", 18, &err), BKM_OK);
        ck_assert_uint_eq(log.malformed, 3);
        ck_assert_uint_eq(log.n, 0);
        for (const char *p = log.first_bad; *p; p++)
            ck_assert(*p >= 0x20 && *p < 0x7f);
        bkm_prog_log_free(&log);
    }
}
END_TEST

static char tmp_dir[64];

static void tmp_setup(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/bkm_prog_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

static void tmp_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(log_file_create_read)
{
    char path[256], link[256];
    bkm_err_t err = {0};
    bkm_prog_log_t log;
    FILE *f;
    snprintf(path, sizeof path, "%s/team.log", tmp_dir);
    ck_assert_int_eq(bkm_prog_log_create(path, &err), BKM_OK);
    ck_assert_int_eq(bkm_prog_log_create(path, &err), BKM_EIO);   /* never over an existing file */
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    snprintf(link, sizeof link, "%s/planted", tmp_dir);
    ck_assert_int_eq(symlink("/tmp/bkm_prog_nowhere", link), 0);
    ck_assert_int_eq(bkm_prog_log_create(link, &err), BKM_EIO);   /* nor through a link */
    ck_assert_int_eq(access("/tmp/bkm_prog_nowhere", F_OK), -1);
    f = fopen(path, "a");
    fputs("bkmteam1 start pid=7 tid=7 t=1 ppid=1 prog=x version=1\nnoise\n", f);
    fputs("bkmteam1 start pid=8 tid=8 t=1 ppid=1 prog=y version=1\n", f);
    fclose(f);
    memset(&log, 0, sizeof log);
    ck_assert_int_eq(bkm_prog_log_read(&log, path, 0, &err), BKM_OK);
    ck_assert_uint_eq(log.n, 2);
    ck_assert_uint_eq(log.malformed, 1);
    ck_assert_int_eq(log.truncated, 0);
    bkm_prog_log_free(&log);
    /* over the limit: the complete lines before it, marked truncated */
    memset(&log, 0, sizeof log);
    ck_assert_int_eq(bkm_prog_log_read(&log, path, 70, &err), BKM_OK);
    ck_assert_uint_eq(log.n, 1);
    ck_assert_int_eq(log.truncated, 1);
    bkm_prog_log_free(&log);
    /* not a regular file */
    memset(&log, 0, sizeof log);
    ck_assert_int_eq(bkm_prog_log_read(&log, tmp_dir, 0, &err), BKM_EINVAL);
    bkm_prog_log_free(&log);
}
END_TEST

START_TEST(preload_value_rules)
{
    char out[256];
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_prog_preload_value("/opt/bkm/libbkm_team.so", NULL, out, sizeof out, &err), BKM_OK);
    ck_assert_str_eq(out, "/opt/bkm/libbkm_team.so");
    ck_assert_int_eq(bkm_prog_preload_value("/opt/bkm/libbkm_team.so", "libjemalloc.so.2", out, sizeof out, &err),
                     BKM_OK);
    ck_assert_str_eq(out, "/opt/bkm/libbkm_team.so:libjemalloc.so.2");
    ck_assert_int_eq(bkm_prog_preload_value("libbkm_team.so", NULL, out, sizeof out, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not absolute"));
    ck_assert_int_eq(bkm_prog_preload_value("/a b/libbkm_team.so", NULL, out, sizeof out, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_prog_preload_value("/a:b/libbkm_team.so", NULL, out, sizeof out, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_prog_preload_value("/opt/bkm/libbkm_team.so", "x", out, 10, &err), BKM_EINVAL);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Fake procfs                                                                               */

static void put(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *rel, const char *fmt, ...)
{
    char path[512], cmd[600];
    va_list ap;
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", tmp_dir, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

typedef struct fake_thread {
    int tid;
    const char *comm;
    unsigned long long start;
    const char *mask;
    int cpu;
    unsigned long long utime, vol, wait_ns, migrations;
} fake_thread_t;

static void fake_write(int pid, const fake_thread_t *t)
{
    char rel[128], line[512];
    snprintf(rel, sizeof rel, "%d/task/%d/stat", pid, t->tid);
    stat_line(line, sizeof line, t->tid, t->comm, 'R', 10, t->utime, 5, t->start, t->cpu);
    put(rel, "%s", line);
    snprintf(rel, sizeof rel, "%d/task/%d/status", pid, t->tid);
    put(rel, "Name:\t%s\nCpus_allowed_list:\t%s\nvoluntary_ctxt_switches:\t%llu\nnonvoluntary_ctxt_switches:\t1\n",
        t->comm, t->mask, t->vol);
    snprintf(rel, sizeof rel, "%d/task/%d/schedstat", pid, t->tid);
    put(rel, "%llu %llu 10\n", t->utime * 10000000ull, t->wait_ns);
    snprintf(rel, sizeof rel, "%d/task/%d/sched", pid, t->tid);
    put(rel, "%s (%d, #threads: 2)\nse.nr_migrations : %llu\n", t->comm, t->tid, t->migrations);
    snprintf(rel, sizeof rel, "%d/task/%d/comm", pid, t->tid);
    put(rel, "%s\n", t->comm);
}

static void fake_remove(int pid, int tid)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%d/task/%d'", tmp_dir, pid, tid);
    ck_assert_int_eq(system(cmd), 0);
}

/* /proc/stat of two CPUs with @p steal0 / @p steal1 steal ticks and @p idle more idle ticks each. */
static void fake_stat(unsigned long long steal0, unsigned long long steal1, unsigned long long idle)
{
    put("stat", "cpu  10 0 10 %llu 0 0 0 %llu 0 0\ncpu0 5 0 5 %llu 0 0 0 %llu 0 0\ncpu1 5 0 5 %llu 0 0 0 %llu 0 0\n"
        "intr 1 2 3\n", 100 + 2 * idle, steal0 + steal1, 50 + idle, steal0, 50 + idle, steal1);
}

static bkm_prog_sampler_t *fake_open_every(int pid, int heavy_every)
{
    bkm_prog_sampler_opts_t o;
    bkm_prog_sampler_t *s = NULL;
    bkm_err_t err = {0};
    bkm_prog_sampler_opts_defaults(&o);
    o.proc_root = tmp_dir;
    o.heavy_every = heavy_every;
    ck_assert_msg(bkm_prog_sampler_open(&s, pid, &o, &err) == BKM_OK, "%s", err.msg);
    return s;
}

static bkm_prog_sampler_t *fake_open(int pid)
{
    return fake_open_every(pid, 1);
}

static void sample(bkm_prog_sampler_t *s)
{
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_prog_sampler_sample(s, &err), BKM_OK);
}

START_TEST(sampler_masks_reuse_gone)
{
    fake_thread_t main_t = {100, "prog", 1000, "0-1", 0, 10, 1, 1000, 0};
    fake_thread_t w = {101, "prog", 1001, "0-1", 1, 1, 0, 0, 0};
    bkm_prog_sampler_t *s;
    const bkm_prog_task_t *t;
    bkm_err_t err = {0};
    fake_stat(0, 0, 0);
    fake_write(100, &main_t);
    fake_write(100, &w);
    s = fake_open(100);
    ck_assert_int_eq(bkm_prog_sampler_samples(s), 1);
    ck_assert_int_eq(bkm_prog_sampler_n_tasks(s), 2);
    /* the worker is bound, later moved, and its counters advance */
    w.mask = "1", w.utime = 50, w.vol = 7, w.migrations = 3;
    fake_write(100, &w);
    sample(s);
    sample(s);
    w.mask = "0";
    fake_write(100, &w);
    sample(s);
    /* a new thread, then a thread that reuses TID 101 with another start time */
    fake_thread_t x = {102, "pt_pool", 1500, "0", 0, 2, 3, 500, 1};
    fake_write(100, &x);
    sample(s);
    fake_thread_t w2 = {101, "again", 1600, "1", 1, 1, 0, 0, 0};
    fake_write(100, &w2);
    sample(s);
    ck_assert_int_eq(bkm_prog_sampler_n_tasks(s), 4);
    t = bkm_prog_sampler_task(s, 1);
    ck_assert_int_eq(t->tid, 101);
    ck_assert_int_eq(t->n_masks, 3);
    ck_assert_int_eq(bkm_cpuset_count(&t->mask[0].cpus), 2);
    ck_assert(bkm_cpuset_isset(&t->mask[1].cpus, 1) && bkm_cpuset_count(&t->mask[1].cpus) == 1);
    ck_assert(bkm_cpuset_isset(&t->mask[2].cpus, 0) && bkm_cpuset_count(&t->mask[2].cpus) == 1);
    ck_assert(t->mask[1].last_ns > t->mask[1].t_ns);   /* seen at two samples */
    ck_assert_int_eq(t->born_sampled, 0);
    ck_assert_uint_eq(t->last.utime - t->first.utime, 49);
    ck_assert_uint_eq(t->last.vol_switches - t->first.vol_switches, 7);
    ck_assert_int_eq(t->last.migrations - t->first.migrations, 3);
    t = bkm_prog_sampler_task(s, 2);
    ck_assert_int_eq(t->tid, 102);
    ck_assert_int_eq(t->born_sampled, 1);   /* counted from its start: first is zero */
    ck_assert_uint_eq(t->first.utime, 0);
    ck_assert_uint_eq(t->last.utime, 2);
    ck_assert_str_eq(t->comm, "pt_pool");
    t = bkm_prog_sampler_task(s, 3);
    ck_assert_int_eq(t->tid, 101);
    ck_assert_str_eq(t->comm, "again");
    ck_assert_uint_eq(t->start_ticks, 1600);
    /* a source that disappears: kept from the last pass that read it */
    char rel[64];
    snprintf(rel, sizeof rel, "%s/100/task/102/schedstat", tmp_dir);
    ck_assert_int_eq(unlink(rel), 0);
    sample(s);
    t = bkm_prog_sampler_task(s, 2);
    ck_assert_int_eq(t->last.schedstat_ok, 1);
    ck_assert_uint_eq(t->last.wait_ns, 500);
    ck_assert_ptr_nonnull(strstr(t->why, "schedstat"));
    ck_assert_int_eq(bkm_prog_sampler_gone(s), 0);
    /* the process ends */
    fake_remove(100, 100);
    fake_remove(100, 101);
    fake_remove(100, 102);
    sample(s);
    ck_assert_int_eq(bkm_prog_sampler_gone(s), 1);
    fake_stat(3, 1, 10);
    ck_assert_int_eq(bkm_prog_sampler_finish(s, &err), BKM_OK);
    bkm_prog_sampler_close(s);
}
END_TEST

/* The costly files are read every heavy_every-th sample and at a thread's first; the mask (from
 * status under a fake root) and stat, schedstat every sample. */
START_TEST(sampler_heavy_cadence)
{
    fake_thread_t t0 = {100, "prog", 1000, "0-1", 0, 10, 1, 1000, 5};
    bkm_prog_sampler_t *s;
    const bkm_prog_task_t *t;
    fake_stat(0, 0, 0);
    fake_write(100, &t0);
    s = fake_open_every(100, 3);   /* sample 0: heavy */
    t0.migrations = 6, t0.utime = 11, t0.mask = "1";
    fake_write(100, &t0);
    sample(s);                     /* sample 1 */
    t = bkm_prog_sampler_task(s, 0);
    ck_assert_int_eq(t->last.migrations, 5);
    ck_assert_uint_eq(t->last.utime, 11);
    ck_assert_int_eq(t->n_masks, 2);
    sample(s);                     /* sample 2 */
    ck_assert_int_eq(t->last.migrations, 5);
    sample(s);                     /* sample 3: heavy */
    ck_assert_int_eq(t->last.migrations, 6);
    ck_assert_uint_eq(t->last.heavy_t_ns, t->last_ns);
    bkm_prog_sampler_close(s);
}
END_TEST

START_TEST(sampler_bad_arguments)
{
    bkm_prog_sampler_opts_t o;
    bkm_prog_sampler_t *s = NULL;
    bkm_err_t err = {0};
    bkm_prog_sampler_opts_defaults(&o);
    o.proc_root = tmp_dir;
    ck_assert_int_eq(bkm_prog_sampler_open(&s, 0, &o, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_prog_sampler_open(&s, 4242, &o, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "4242"));
    o.interval_ms = 0 - 5;
    ck_assert_int_eq(bkm_prog_sampler_open(&s, 1, &o, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "-5"));
    ck_assert_ptr_null(s);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Report and check                                                                          */

/* A libgomp program with a main team of 2 (main + one worker), a nested team, a program pthread,
 * a Python thread, a PyTorch pool thread, and a thread without a record. */
static const char gomp_log[] =
    "bkmteam1 start pid=100 tid=100 t=1000 ppid=1 prog=python3 version=1\n"
    "bkmteam1 thread pid=100 tid=101 t=1100 creator=100 seq=1 via=libgomp.so.1 lib=libgomp.so.1 exe=0\n"
    "bkmteam1 team pid=100 tid=101 t=1200 api=gomp index=1 size=2 level=1 primary=100 rt=libgomp.so.1\n"
    "bkmteam1 team pid=100 tid=100 t=1200 api=gomp index=0 size=2 level=1 primary=100 rt=libgomp.so.1\n"
    "bkmteam1 thread pid=100 tid=102 t=1300 creator=100 seq=2 via=python3 lib=python3 exe=1\n"
    "bkmteam1 thread pid=100 tid=103 t=1300 creator=100 seq=3 via=libstdc++.so.6 lib=libc10.so.1.13 exe=0\n"
    "bkmteam1 thread pid=100 tid=104 t=1300 creator=100 seq=4 via=omp_busy lib=omp_busy exe=1\n"
    "bkmteam1 thread pid=100 tid=106 t=1400 creator=101 seq=5 via=libgomp.so.1 lib=libgomp.so.1 exe=0\n"
    "bkmteam1 team pid=100 tid=106 t=1500 api=gomp index=1 size=2 level=2 primary=101 rt=libgomp.so.1\n"
    "bkmteam1 team pid=100 tid=101 t=1500 api=gomp index=0 size=2 level=2 primary=101 rt=libgomp.so.1\n"
    "bkmteam1 thread pid=300 tid=300 t=1600 creator=100 seq=6 via=x lib=x exe=1\n";

static bkm_prog_report_t *build(const bkm_prog_sampler_t *s, const char *text, int pid)
{
    bkm_prog_log_t log;
    bkm_prog_report_t *r = NULL;
    bkm_err_t err = {0};
    parse_text(&log, text);
    ck_assert_uint_eq(log.malformed, 0);
    ck_assert_int_eq(bkm_prog_report_build(s, &log, pid, &r, &err), BKM_OK);
    bkm_prog_log_free(&log);
    return r;
}

static int cls_of(const bkm_prog_report_t *r, int tid)
{
    const bkm_prog_thread_t *t = bkm_prog_report_find(r, tid);
    ck_assert_msg(t != NULL, "thread %d not in the report", tid);
    return t->cls;
}

START_TEST(report_classes_gomp)
{
    bkm_prog_report_t *r = build(NULL, gomp_log, 100);
    const bkm_prog_team_t *m = bkm_prog_report_main_team(r);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->api, BKM_PROG_API_GOMP);
    ck_assert_int_eq(m->size, 2);
    ck_assert_int_eq(m->level, 1);
    ck_assert_int_eq(m->tid[0], 100);
    ck_assert_int_eq(m->tid[1], 101);
    ck_assert_int_eq(bkm_prog_report_n_teams(r), 2);
    ck_assert_int_eq(cls_of(r, 100), BKM_PROG_CLASS_TEAM);
    ck_assert_int_eq(bkm_prog_report_find(r, 100)->is_main, 1);
    ck_assert_int_eq(bkm_prog_report_find(r, 100)->team_index, 0);
    ck_assert_int_eq(cls_of(r, 101), BKM_PROG_CLASS_TEAM);
    ck_assert_int_eq(bkm_prog_report_find(r, 101)->team_index, 1);
    ck_assert_int_eq(bkm_prog_report_find(r, 101)->n_teams, 2);
    ck_assert_int_eq(cls_of(r, 102), BKM_PROG_CLASS_PYTHON);
    ck_assert_int_eq(cls_of(r, 103), BKM_PROG_CLASS_TORCH);
    ck_assert_int_eq(cls_of(r, 104), BKM_PROG_CLASS_OTHER);
    ck_assert_str_eq(bkm_prog_report_find(r, 104)->lib, "omp_busy");
    ck_assert_int_eq(cls_of(r, 106), BKM_PROG_CLASS_TEAM_OTHER);   /* only in the nested team */
    ck_assert_ptr_null(bkm_prog_report_find(r, 300));               /* another process */
    ck_assert_str_eq(bkm_prog_report_runtimes(r), "libgomp.so.1;");
    bkm_prog_report_free(r);
}
END_TEST

/* LLVM libomp: OMPT types, the hidden-helper team led by a runtime thread, a main thread that is
 * not in the team (the team is led by a program pthread). */
START_TEST(report_classes_ompt_helper)
{
    static const char text[] =
        "bkmteam1 othread pid=200 tid=200 t=1 type=initial rt=libomp.so.5\n"
        "bkmteam1 thread pid=200 tid=201 t=2 creator=200 seq=1 via=prog lib=prog exe=1\n"
        "bkmteam1 team pid=200 tid=201 t=3 api=ompt index=0 size=3 level=1 primary=201 rt=libomp.so.5\n"
        "bkmteam1 thread pid=200 tid=202 t=4 creator=201 seq=2 via=libomp.so.5 lib=libomp.so.5 exe=0\n"
        "bkmteam1 othread pid=200 tid=202 t=4 type=worker rt=libomp.so.5\n"
        "bkmteam1 team pid=200 tid=202 t=5 api=ompt index=2 size=3 level=1 primary=201 rt=libomp.so.5\n"
        "bkmteam1 thread pid=200 tid=210 t=6 creator=201 seq=3 via=libomp.so.5 lib=libomp.so.5 exe=0\n"
        "bkmteam1 thread pid=200 tid=211 t=7 creator=210 seq=4 via=libomp.so.5 lib=libomp.so.5 exe=0\n"
        "bkmteam1 team pid=200 tid=210 t=8 api=ompt index=0 size=8 level=1 primary=210 rt=libomp.so.5\n"
        "bkmteam1 team pid=200 tid=211 t=8 api=ompt index=1 size=8 level=1 primary=210 rt=libomp.so.5\n"
        "bkmteam1 thread pid=200 tid=212 t=9 creator=201 seq=5 via=libomp.so.5 lib=libomp.so.5 exe=0\n"
        "bkmteam1 othread pid=200 tid=212 t=9 type=other rt=libomp.so.5\n";
    bkm_prog_report_t *r = build(NULL, text, 200);
    const bkm_prog_team_t *m = bkm_prog_report_main_team(r);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->size, 3);            /* not the larger helper team */
    ck_assert_int_eq(m->primary, 201);
    ck_assert_int_eq(m->tid[1], -1);         /* index 1 never reported */
    ck_assert_int_eq(m->n_found, 2);
    ck_assert_int_eq(bkm_prog_report_team(r, 1)->helper, 1);
    ck_assert_int_eq(cls_of(r, 200), BKM_PROG_CLASS_MAIN);
    ck_assert_int_eq(cls_of(r, 201), BKM_PROG_CLASS_TEAM);
    ck_assert_int_eq(cls_of(r, 202), BKM_PROG_CLASS_TEAM);
    ck_assert_int_eq(bkm_prog_report_find(r, 202)->team_index, 2);
    ck_assert_int_eq(cls_of(r, 210), BKM_PROG_CLASS_OMP_HELPER);
    ck_assert_int_eq(cls_of(r, 211), BKM_PROG_CLASS_OMP_HELPER);
    ck_assert_int_eq(cls_of(r, 212), BKM_PROG_CLASS_OMP_HELPER);
    ck_assert_int_eq(bkm_prog_report_find(r, 212)->ompt_type, BKM_PROG_OMPT_OTHER);
    bkm_prog_report_free(r);
}
END_TEST

/* No team record (a runtime without GOMP_parallel or OMPT): the team from creation order. */
START_TEST(report_creation_order)
{
    static const char text[] =
        "bkmteam1 thread pid=400 tid=401 t=2 creator=400 seq=1 via=prog lib=prog exe=1\n"
        "bkmteam1 thread pid=400 tid=403 t=3 creator=400 seq=3 via=libgomp.so.1 lib=libgomp.so.1 exe=0\n"
        "bkmteam1 thread pid=400 tid=402 t=3 creator=400 seq=2 via=libgomp.so.1 lib=libgomp.so.1 exe=0\n";
    bkm_prog_report_t *r = build(NULL, text, 400);
    const bkm_prog_team_t *m = bkm_prog_report_main_team(r);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->api, BKM_PROG_API_ORDER);
    ck_assert_int_eq(m->size, 3);
    ck_assert_int_eq(m->tid[0], 400);
    ck_assert_int_eq(m->tid[1], 402);
    ck_assert_int_eq(m->tid[2], 403);
    ck_assert_int_eq(cls_of(r, 401), BKM_PROG_CLASS_OTHER);
    bkm_prog_report_free(r);
    /* and without any log: only what the sampler saw, nothing claimed */
    {
        bkm_prog_report_t *r2 = NULL;
        bkm_err_t err = {0};
        ck_assert_int_eq(bkm_prog_report_build(NULL, NULL, 400, &r2, &err), BKM_OK);
        ck_assert_ptr_null(bkm_prog_report_main_team(r2));
        bkm_prog_report_free(r2);
        ck_assert_int_eq(bkm_prog_report_build(NULL, NULL, 0, &r2, &err), BKM_EINVAL);
    }
}
END_TEST

/* What a hostile log makes the report hold is bounded, and said. */
START_TEST(report_bounds)
{
    bkm_buf_t text, b;
    bkm_prog_log_t log;
    bkm_prog_report_t *r = NULL;
    bkm_err_t err = {0};
    bkm_json_w_t w;
    bkm_json_t *j = NULL;
    bkm_buf_init(&text);
    for (int i = 0; i < 300; i++)
        bkm_buf_printf(&text, "bkmteam1 team pid=9 tid=%d t=1 api=ompt index=0 size=2 level=1 primary=%d rt=x\n",
                       1000 + i, 1000 + i);
    bkm_buf_printf(&text, "bkmteam1 team pid=9 tid=9 t=1 api=ompt index=65535 size=65536 level=1 primary=9 rt=x\n");
    bkm_buf_printf(&text, "bkmteam1 team pid=9 tid=9 t=1 api=ompt index=0 size=65537 level=1 primary=9 rt=x\n");
    memset(&log, 0, sizeof log);
    ck_assert_int_eq(bkm_prog_log_parse(&log, bkm_buf_str(&text), text.len, &err), BKM_OK);
    ck_assert_uint_eq(log.n, 301);
    ck_assert_uint_eq(log.malformed, 1);   /* size above BKM_PROG_TEAM_SIZE_MAX */
    ck_assert_int_eq(bkm_prog_report_build(NULL, &log, 9, &r, &err), BKM_OK);
    ck_assert_int_eq(bkm_prog_report_n_teams(r), 256);
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_prog_report_binding_json(r, NULL, &w);
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &j, &err), BKM_OK);
    ck_assert_int_eq((int)bkm_json_get_num(bkm_json_get(j, "shim"), "teams_lost", 0), 45);
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_prog_report_free(r);
    bkm_prog_log_free(&log);
    bkm_buf_free(&text);
}
END_TEST

static void plan2(bkm_cpuset_t p[2], int cpu0, int cpu1)
{
    bkm_cpuset_zero(&p[0]);
    bkm_cpuset_zero(&p[1]);
    if (cpu0 < 0)
        bkm_cpuset_set(&p[0], 0), bkm_cpuset_set(&p[0], 1);
    else
        bkm_cpuset_set(&p[0], cpu0);
    if (cpu1 < 0)
        bkm_cpuset_set(&p[1], 0), bkm_cpuset_set(&p[1], 1);
    else
        bkm_cpuset_set(&p[1], cpu1);
}

/* The samples with times taken from the records' clock: the main thread unbound before the team
 * started and bound after; the worker bound from its creation. */
START_TEST(check_against_plan)
{
    fake_thread_t main_t = {100, "python3", 1000, "0-1", 0, 10, 1, 0, 0};
    fake_thread_t w = {101, "python3", 1001, "1", 1, 1, 0, 0, 0};
    bkm_cpuset_t plan[2];
    bkm_prog_check_t *c = NULL;
    bkm_err_t err = {0};
    bkm_prog_sampler_t *s;
    bkm_prog_report_t *r;
    char log[2048];
    uint64_t join;
    fake_stat(0, 0, 0);
    fake_write(100, &main_t);
    s = fake_open(100);
    usleep(2000);
    join = bkm_now_ns();
    usleep(2000);
    main_t.mask = "0";
    fake_write(100, &main_t);
    fake_write(100, &w);
    sample(s);
    sample(s);
    snprintf(log, sizeof log,
             "bkmteam1 thread pid=100 tid=101 t=%llu creator=100 seq=1 via=libgomp.so.1 lib=libgomp.so.1 exe=0\n"
             "bkmteam1 team pid=100 tid=101 t=%llu api=gomp index=1 size=2 level=1 primary=100 rt=libgomp.so.1\n"
             "bkmteam1 team pid=100 tid=100 t=%llu api=gomp index=0 size=2 level=1 primary=100 rt=libgomp.so.1\n",
             (unsigned long long)join, (unsigned long long)join, (unsigned long long)join);
    r = build(s, log, 100);
    /* as planned: the mask {0-1} of the main thread before it joined does not count */
    plan2(plan, 0, 1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, NULL, &c, &err), BKM_OK);
    ck_assert_msg(c->verdict == BKM_PROG_MATCH, "%s", c->summary);
    ck_assert_int_eq(c->n_match, 2);
    ck_assert_int_eq(c->member[0].tid, 100);
    ck_assert_int_eq(c->member[0].n_observed, 1);
    ck_assert_int_eq(c->n_unbound, 0);
    ck_assert_ptr_nonnull(strstr(c->summary, "2 of 2"));
    bkm_prog_check_free(c);
    /* negative control: the plan with the team order swapped is a mismatch, naming both threads */
    plan2(plan, 1, 0);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_MISMATCH);
    ck_assert_int_eq(c->n_mismatch, 2);
    ck_assert_ptr_nonnull(strstr(c->summary, "thread 0 (tid 100) on 0, planned 1"));
    ck_assert_ptr_nonnull(strstr(c->summary, "thread 1 (tid 101) on 1, planned 0"));
    bkm_prog_check_free(c);
    /* unbound plan: a mismatch, not unbound (the threads are bound) */
    plan2(plan, -1, -1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_MISMATCH);
    bkm_prog_check_free(c);
    /* no team of 3 threads ran */
    bkm_cpuset_t plan3[3];
    plan2(plan3, 0, 1);
    plan3[2] = plan3[0];
    ck_assert_int_eq(bkm_prog_report_check(r, plan3, 3, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_NO_TEAM);
    ck_assert_int_eq(c->n_missing, 3);
    bkm_prog_check_free(c);
    /* bad plans */
    bkm_cpuset_zero(&plan[1]);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, NULL, &c, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "thread 1"));
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 0, NULL, &c, &err), BKM_EINVAL);
    ck_assert_ptr_null(c);
    bkm_prog_report_free(r);
    /* the team joined after the last sample: unsampled, not a match */
    snprintf(log, sizeof log,
             "bkmteam1 team pid=100 tid=101 t=%llu api=gomp index=1 size=2 level=1 primary=100 rt=libgomp.so.1\n"
             "bkmteam1 team pid=100 tid=100 t=%llu api=gomp index=0 size=2 level=1 primary=100 rt=libgomp.so.1\n",
             (unsigned long long)bkm_now_ns() + 1000000000ull, (unsigned long long)bkm_now_ns() + 1000000000ull);
    r = build(s, log, 100);
    plan2(plan, 0, 1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_UNSAMPLED);
    ck_assert_int_eq(c->n_unsampled, 2);
    bkm_prog_check_free(c);
    bkm_prog_report_free(r);
    bkm_prog_sampler_close(s);
}
END_TEST

/* A team of one records nothing (PyTorch at one thread runs no parallel region): with a runtime seen
 * mapped, the initial thread is judged against planned[0] from that time on (its inherited mask
 * before the runtime placed it does not count); without one, no team. */
START_TEST(check_team_of_one_initial_thread)
{
    fake_thread_t main_t = {100, "python3", 1000, "0-1", 0, 10, 1, 0, 0};
    bkm_cpuset_t plan[1];
    bkm_prog_check_t *c = NULL;
    bkm_err_t err = {0};
    bkm_prog_sampler_t *s;
    bkm_prog_report_t *r;
    uint64_t seen;
    fake_stat(0, 0, 0);
    fake_write(100, &main_t);
    s = fake_open(100);
    usleep(2000);
    main_t.mask = "1";
    fake_write(100, &main_t);
    sample(s);
    seen = bkm_now_ns();
    usleep(2000);
    sample(s);
    r = build(s, "bkmteam1 start pid=100 tid=100 t=1 ppid=1 prog=python3 version=1\n", 100);
    bkm_cpuset_zero(&plan[0]);
    bkm_cpuset_set(&plan[0], 1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 1, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_NO_TEAM);   /* no runtime seen: nothing to judge */
    ck_assert_int_eq(c->initial_only, 0);
    bkm_prog_check_free(c);
    bkm_prog_report_set_runtime_seen(r, seen);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 1, NULL, &c, &err), BKM_OK);
    ck_assert_msg(c->verdict == BKM_PROG_MATCH, "%s", c->summary);
    ck_assert_int_eq(c->initial_only, 1);
    ck_assert_int_eq(c->member[0].tid, 100);
    ck_assert_int_eq(c->member[0].n_observed, 1);
    ck_assert_ptr_nonnull(strstr(c->summary, "the initial thread"));
    bkm_prog_check_free(c);
    /* negative control: planned on CPU 0, the initial thread on 1 */
    bkm_cpuset_zero(&plan[0]);
    bkm_cpuset_set(&plan[0], 0);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 1, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_MISMATCH);
    ck_assert_ptr_nonnull(strstr(c->summary, "thread 0 (tid 100) on 1, planned 0"));
    bkm_prog_check_free(c);
    /* seen from the start: the inherited mask {0-1} counts too, a mismatch for the plan {1} */
    bkm_prog_report_set_runtime_seen(r, 1);
    bkm_cpuset_zero(&plan[0]);
    bkm_cpuset_set(&plan[0], 1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 1, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_MISMATCH);
    bkm_prog_check_free(c);
    bkm_prog_report_free(r);
    bkm_prog_sampler_close(s);
}
END_TEST

START_TEST(check_unbound_team)
{
    fake_thread_t main_t = {100, "prog", 1000, "0-1", 0, 10, 1, 0, 0};
    fake_thread_t w = {101, "prog", 1001, "0-1", 1, 1, 0, 0, 0};
    bkm_cpuset_t plan[2], allowed;
    bkm_prog_check_t *c = NULL;
    bkm_err_t err = {0};
    bkm_prog_sampler_t *s;
    bkm_prog_report_t *r;
    fake_stat(0, 0, 0);
    fake_write(100, &main_t);
    fake_write(100, &w);
    s = fake_open(100);
    r = build(s,
              "bkmteam1 team pid=100 tid=101 t=1 api=gomp index=1 size=2 level=1 primary=100 rt=libgomp.so.1\n"
              "bkmteam1 team pid=100 tid=100 t=1 api=gomp index=0 size=2 level=1 primary=100 rt=libgomp.so.1\n", 100);
    plan2(plan, -1, -1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_MATCH);
    ck_assert_int_eq(c->n_unbound, 2);
    bkm_prog_check_free(c);
    plan2(plan, 0, 1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, NULL, &c, &err), BKM_OK);
    ck_assert_int_eq(c->verdict, BKM_PROG_MISMATCH);
    ck_assert_int_eq(c->n_unbound, 2);
    bkm_prog_check_free(c);
    /* with an allowed set of 0-3 given, {0-1} is bound (to part of it) */
    bkm_cpuset_zero(&allowed);
    for (int i = 0; i < 4; i++)
        bkm_cpuset_set(&allowed, i);
    plan2(plan, -1, -1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, &allowed, &c, &err), BKM_OK);
    ck_assert_int_eq(c->n_unbound, 0);
    bkm_prog_check_free(c);
    bkm_prog_report_free(r);
    bkm_prog_sampler_close(s);
}
END_TEST

START_TEST(json_binding_and_noise)
{
    fake_thread_t main_t = {100, "python3", 1000, "0", 0, 10, 1, 0, 0};
    fake_thread_t w = {101, "python3", 1001, "1", 1, 1, 0, 0, 0};
    bkm_cpuset_t plan[2];
    bkm_prog_check_t *c = NULL;
    bkm_err_t err = {0};
    bkm_prog_sampler_t *s;
    bkm_prog_report_t *r;
    bkm_buf_t b;
    bkm_json_w_t jw;
    bkm_json_t *j = NULL;
    const bkm_json_t *x;
    fake_stat(0, 0, 0);
    fake_write(100, &main_t);
    fake_write(100, &w);
    s = fake_open(100);
    main_t.utime = 110, main_t.wait_ns = 5000000, main_t.migrations = 2, main_t.vol = 9;
    w.utime = 101, w.wait_ns = 20000000;   /* the worker waited 20 ms of its ~50 on a run queue */
    fake_write(100, &main_t);
    fake_write(100, &w);
    usleep(50000);
    sample(s);
    fake_stat(2, 0, 100);
    ck_assert_int_eq(bkm_prog_sampler_finish(s, &err), BKM_OK);
    r = build(s, gomp_log, 100);
    plan2(plan, 0, 1);
    ck_assert_int_eq(bkm_prog_report_check(r, plan, 2, NULL, &c, &err), BKM_OK);
    bkm_buf_init(&b);
    bkm_json_w_init(&jw, &b, 0);
    bkm_prog_report_binding_json(r, c, &jw);
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&b), &j, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq((int)bkm_json_get_num(j, "pid", 0), 100);
    x = bkm_json_get(j, "main_team");
    ck_assert_int_eq((int)bkm_json_get_num(x, "size", 0), 2);
    ck_assert_int_eq((int)bkm_json_get_num(bkm_json_at(bkm_json_get(x, "members"), 1), "tid", 0), 101);
    ck_assert_str_eq(bkm_json_get_str(bkm_json_get(j, "check"), "verdict"), "match");
    x = bkm_json_get(j, "threads");
    ck_assert_uint_eq(x->n_children, 6);
    ck_assert_str_eq(bkm_json_get_str(bkm_json_at(x, 0), "class"), "team");
    ck_assert_str_eq(bkm_json_get_str(bkm_json_get(bkm_json_at(x, 0), "masks")->child, "cpus"), "0");
    ck_assert_int_eq(bkm_json_get(bkm_json_get(j, "shim"), "started")->boolean, 1);
    ck_assert_int_eq((int)bkm_json_get(bkm_json_get(j, "shim"), "other_processes")->n_children, 1);
    bkm_json_free(j);
    bkm_buf_free(&b);
    /* noise: the worker's wait share makes the run disturbed; steal of 2 of 202 ticks */
    bkm_buf_init(&b);
    bkm_json_w_init(&jw, &b, 0);
    bkm_prog_report_noise_json(r, 0, &jw);
    ck_assert_msg(bkm_json_parse(bkm_buf_str(&b), &j, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_json_get(j, "disturbed")->boolean, 1);
    ck_assert_int_eq((int)bkm_json_get_num(j, "worst_tid", 0), 101);
    ck_assert(bkm_json_get_num(j, "steal_share", -1) > 0.009 && bkm_json_get_num(j, "steal_share", -1) < 0.011);
    x = bkm_json_get(bkm_json_get(j, "totals"), "team");
    ck_assert_int_eq((int)bkm_json_get_num(x, "threads", 0), 2);
    ck_assert_int_eq((int)bkm_json_get_num(x, "migrations", -1), 2);
    ck_assert_int_eq((int)bkm_json_get_num(x, "voluntary_switches", -1), 8);
    ck_assert(fabs(bkm_json_get_num(x, "cpu_s", 0) - 2.0) < 1e-9);   /* 200 ticks at 100/s */
    ck_assert_int_eq(bkm_prog_report_disturbed(r, 0.9), 0);
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_prog_check_free(c);
    bkm_prog_report_free(r);
    bkm_prog_sampler_close(s);
}
END_TEST

static Suite *program_suite(void)
{
    Suite *s = suite_create("program");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, parse_status_fields);
    tcase_add_test(tc, parse_stat_fields);
    tcase_add_test(tc, parse_schedstat_and_sched);
    tcase_add_test(tc, log_records_parse);
    tcase_add_test(tc, log_hostile_lines);
    tcase_add_test(tc, preload_value_rules);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, log_file_create_read);
    tcase_add_test(tc, sampler_masks_reuse_gone);
    tcase_add_test(tc, sampler_heavy_cadence);
    tcase_add_test(tc, sampler_bad_arguments);
    suite_add_tcase(s, tc);
    tc = tcase_create("report");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, report_classes_gomp);
    tcase_add_test(tc, report_classes_ompt_helper);
    tcase_add_test(tc, report_creation_order);
    tcase_add_test(tc, report_bounds);
    tcase_add_test(tc, check_against_plan);
    tcase_add_test(tc, check_team_of_one_initial_thread);
    tcase_add_test(tc, check_unbound_team);
    tcase_add_test(tc, json_binding_and_noise);
    suite_add_tcase(s, tc);
    return s;
}

/* debugging: CK_FORK=no CK_RUN_CASE=report ./test_program */
BKM_CHECK_MAIN(program_suite)
