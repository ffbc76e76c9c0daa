/* SPDX-License-Identifier: MIT */
/* Unit tests of slurm/: NERSC's srun layout and a site's own (node profiles' batch rules), edit
 * distance against the runtimes' variables, settings, golden batch scripts (Cori, and Perlmutter
 * with the binding check), a site's launcher, the job array and merge job, a sweep's jobs and
 * their submission, submission environment, lint (-c inheritance, Perlmutter's -C cpu). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bkm_check.h"
#include "bkm/slurm.h"

static char *slurp(const char *rel)
{
    char path[1024];
    char *data = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/tests/slurm/data/%s", BKM_SOURCE_DIR, rel);
    ck_assert_msg(bkm_file_read_regular(path, "test data", 1 << 20, &data, &len, NULL) == BKM_OK, "read %s", path);
    return data;
}

START_TEST(layout_follows_nersc_rules)
{
    bkm_slurm_layout_t l;
    /* Haswell: 64 CPUs, 32 cores */
    ck_assert_int_eq(bkm_slurm_layout(64, 32, 1, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 64);
    ck_assert_str_eq(l.cpu_bind, "cores");
    ck_assert_int_eq(l.packed, 1);
    ck_assert_int_eq(bkm_slurm_layout(64, 32, 12, &l, NULL), BKM_OK);   /* 12 does not divide 64: 4 */
    ck_assert_int_eq(l.cpus_per_task, 4);
    ck_assert_int_eq(l.packed, 0);
    ck_assert_int_eq(bkm_slurm_layout(64, 32, 16, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 4);
    ck_assert_int_eq(bkm_slurm_layout(64, 32, 64, &l, NULL), BKM_OK);   /* more ranks than cores */
    ck_assert_int_eq(l.cpus_per_task, 1);
    ck_assert_str_eq(l.cpu_bind, "threads");
    /* KNL: 272 CPUs, 68 cores */
    ck_assert_int_eq(bkm_slurm_layout(272, 68, 1, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 272);
    ck_assert_int_eq(bkm_slurm_layout(272, 68, 4, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 68);
    ck_assert_int_eq(bkm_slurm_layout(272, 68, 8, &l, NULL), BKM_OK);   /* 64 of 68 cores */
    ck_assert_int_eq(l.cpus_per_task, 32);
    ck_assert_int_eq(l.packed, 0);
    ck_assert_str_eq(l.cpu_bind, "cores");
    ck_assert_int_eq(bkm_slurm_layout(272, 68, 68, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 4);
    ck_assert_int_eq(bkm_slurm_layout(272, 68, 136, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 2);
    ck_assert_str_eq(l.cpu_bind, "threads");
    ck_assert_int_eq(bkm_slurm_layout(272, 68, 0, &l, NULL), BKM_EINVAL);
    ck_assert_int_eq(bkm_slurm_layout(272, 68, 273, &l, NULL), BKM_EINVAL);
    ck_assert_int_eq(bkm_slurm_layout(10, 4, 1, &l, NULL), BKM_EINVAL);
}
END_TEST

/* A site's -c rule and binding (a node profile's batch rules). */
START_TEST(layout_by_site_rules)
{
    bkm_slurm_layout_t l;
    bkm_node_profile_t p;
    bkm_batch_rules_t r;
    bkm_err_t err = {0};
    /* Perlmutter: NERSC's node rule, as bkm_slurm_layout */
    ck_assert_int_eq(bkm_profile_builtin("perlmutter-cpu", &p, NULL), BKM_OK);
    ck_assert_int_eq(bkm_slurm_layout_rules(&p.batch, 256, 128, 8, 16, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 32);
    ck_assert_str_eq(l.cpu_bind, "cores");
    ck_assert_int_eq(bkm_slurm_layout_rules(&p.batch, 256, 128, 3, 1, &l, NULL), BKM_OK);   /* 2 x floor(128/3) */
    ck_assert_int_eq(l.cpus_per_task, 84);
    ck_assert_int_eq(bkm_slurm_layout_rules(&p.batch, 256, 128, 256, 1, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 1);
    ck_assert_str_eq(l.cpu_bind, "threads");
    ck_assert_int_eq(bkm_slurm_layout_rules(NULL, 256, 128, 8, 16, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 32);
    /* a site's: -c = threads, or a core per thread; a fixed binding */
    memset(&r, 0, sizeof r);
    r.c_rule = BKM_BATCH_C_THREADS;
    snprintf(r.cpu_bind, sizeof r.cpu_bind, "sockets");
    ck_assert_int_eq(bkm_slurm_layout_rules(&r, 64, 32, 4, 6, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 6);
    ck_assert_str_eq(l.cpu_bind, "sockets");
    ck_assert_int_eq(l.packed, 0);
    r.c_rule = BKM_BATCH_C_CORES;
    snprintf(r.cpu_bind, sizeof r.cpu_bind, "auto");
    ck_assert_int_eq(bkm_slurm_layout_rules(&r, 64, 32, 4, 8, &l, NULL), BKM_OK);
    ck_assert_int_eq(l.cpus_per_task, 16);
    ck_assert_str_eq(l.cpu_bind, "cores");
    ck_assert_int_eq(l.packed, 1);
    ck_assert_int_eq(bkm_slurm_layout_rules(&r, 64, 32, 4, 9, &l, &err), BKM_EINVAL);   /* 4 x 18 > 64 */
    ck_assert_ptr_nonnull(strstr(err.msg, "72 CPUs exceed the 64"));
}
END_TEST

START_TEST(edit_distance_finds_near_misses)
{
    int known;
    ck_assert_int_eq(bkm_slurm_edit_distance("KMP_BLOCKTIM", "KMP_BLOCKTIME"), 1);
    ck_assert_int_eq(bkm_slurm_edit_distance("OPM_NUM_THREADS", "OMP_NUM_THREADS"), 1);   /* transposition */
    ck_assert_int_eq(bkm_slurm_edit_distance("abc", "abc"), 0);
    ck_assert_str_eq(bkm_slurm_var_suggest("KMP_BLOCKTIM", &known), "KMP_BLOCKTIME");
    ck_assert_int_eq(known, 0);
    ck_assert_str_eq(bkm_slurm_var_suggest("OMP_NUM_THREAD", &known), "OMP_NUM_THREADS");
    ck_assert_str_eq(bkm_slurm_var_suggest("KMP_AFINITY", &known), "KMP_AFFINITY");
    ck_assert_ptr_null(bkm_slurm_var_suggest("OMP_PLACES", &known));
    ck_assert_int_eq(known, 1);
    ck_assert_ptr_null(bkm_slurm_var_suggest("GOMP_CPU_AFFINITY", &known));
    ck_assert_int_eq(known, 1);
    ck_assert_ptr_null(bkm_slurm_var_suggest("HOME", &known));
    ck_assert_int_eq(known, 0);
}
END_TEST

START_TEST(settings_checked_and_seeded)
{
    bkm_slurm_setting_t s;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_slurm_setting_seed("knl", &s, NULL), BKM_OK);
    ck_assert_int_eq(s.threads, 68);
    ck_assert_str_eq(s.kmp_affinity, "granularity=fine,compact,1,0");
    ck_assert_str_eq(s.kmp_blocktime, "1");
    ck_assert_int_eq(bkm_slurm_setting_seed("haswell", &s, NULL), BKM_OK);
    ck_assert_int_eq(s.threads, 32);
    ck_assert_int_eq(bkm_slurm_setting_seed("auto", &s, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'auto'"));
    ck_assert_int_eq(bkm_slurm_setting_check(&s, NULL), BKM_EINVAL);   /* seed of auto left zero threads */

    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":4,\"env\":{\"OMP_PLACES\":\"cores\","
                                                   "\"OMP_PROC_BIND\":\"spread\"},\"params\":{\"batch\":\"16\"},"
                                                   "\"backend\":\"native\"}",
                                                   &s, NULL),
                     BKM_OK);
    ck_assert_int_eq(s.threads, 4);
    ck_assert_str_eq(s.omp_places, "cores");
    ck_assert_str_eq(s.omp_proc_bind, "spread");
    ck_assert_int_eq(s.n_params, 1);
    ck_assert_str_eq(s.params[0], "batch=16");
    ck_assert_str_eq(s.backend, "native");
    ck_assert_int_eq(bkm_slurm_setting_check(&s, NULL), BKM_OK);
    /* rivals that cancel each other are refused */
    snprintf(s.kmp_affinity, sizeof s.kmp_affinity, "compact");
    ck_assert_int_eq(bkm_slurm_setting_check(&s, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "cancel"));
    /* strict parsers */
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":2,\"env\":{\"KMP_BLOCKTIME\":\"1ms\"}}", &s, NULL),
                     BKM_OK);
    ck_assert_int_eq(bkm_slurm_setting_check(&s, NULL), BKM_EINVAL);
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":2,\"env\":{\"LD_PRELOAD\":\"x\"}}", &s, &err),
                     BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "LD_PRELOAD"));
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"env\":{}}", &s, NULL), BKM_EINVAL);
    ck_assert_int_eq(bkm_slurm_setting_from_config("[1]", &s, NULL), BKM_EINVAL);
}
END_TEST

static void job_fixed(bkm_slurm_job_t *job)
{
    bkm_slurm_job_defaults(job);
    job->node = "knl";
    job->constraint = "knl,quad,cache";
    job->pus = 272;
    job->cores = 68;
    job->workload = "alexnet";
    job->account = "m1234";
    job->job_name = "bkm-alexnet";
    job->tune = "/opt/bkm/bin/tune";
    job->generated_by = "tune sbatch --node knl --workload alexnet";
    job->generated_at = "2026-12-01T12:00:00Z";
    job->generator_revision = "abc1234";
    job->generator_host = "login01";
}

/* BKM_GOLDEN_UPDATE=1 rewrites the golden file (review the diff before committing it). */
static void golden(const char *name, const char *got)
{
    char *want;
    if (getenv("BKM_GOLDEN_UPDATE")) {
        char path[1024];
        FILE *f;
        snprintf(path, sizeof path, "%s/tests/slurm/data/%s", BKM_SOURCE_DIR, name);
        ck_assert_ptr_nonnull(f = fopen(path, "w"));
        fputs(got, f);
        fclose(f);
    }
    want = slurp(name);
    ck_assert_msg(strcmp(want, got) == 0, "%s differs; got:\n%s", name, got);
    bkm_free(want);
}

START_TEST(script_golden_best_knl)
{
    bkm_slurm_job_t job;
    bkm_buf_t b;
    job_fixed(&job);
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":68,\"env\":{\"KMP_AFFINITY\":"
                                                   "\"granularity=fine,compact,1,0\",\"KMP_BLOCKTIME\":\"0\"},"
                                                   "\"params\":{\"batch\":\"16\"}}",
                                                   &job.setting, NULL),
                     BKM_OK);
    job.prov.sweep = "8c1f0e2a";
    job.prov.median_ms = 812.5, job.prov.ci_lo_ms = 805.1, job.prov.ci_hi_ms = 820.9;
    job.prov.default_median_ms = 1020.0, job.prov.speedup = 1.255, job.prov.significant = 1;
    job.prov.host = "nid00042";
    job.prov.measured_at = "2026-11-30T08:00:00Z";
    job.prov.git_revision = "abc1234";
    job.prov.db = "/global/cscratch1/bkm.sqlite";
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_script_write(&job, &b, NULL), BKM_OK);
    golden("golden_knl_best.sbatch", bkm_buf_str(&b));
    bkm_buf_free(&b);
}
END_TEST

START_TEST(script_golden_places_ranks)
{
    bkm_slurm_job_t job;
    bkm_buf_t b;
    job_fixed(&job);
    job.origin = BKM_SLURM_FROM_DEFAULT;
    job.ranks_per_node = 8;   /* 64 of 68 cores: -c 32, --cpu-bind=cores needed */
    job.nodes = 2;
    job.qos = "debug";
    job.time = "00:10:00";
    job.command = "./train.py --epochs 1";
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":8,\"env\":{\"OMP_PLACES\":\"cores\","
                                                   "\"OMP_PROC_BIND\":\"spread\"}}",
                                                   &job.setting, NULL),
                     BKM_OK);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_script_write(&job, &b, NULL), BKM_OK);
    golden("golden_knl_places.sbatch", bkm_buf_str(&b));
    ck_assert_ptr_null(strstr(bkm_buf_str(&b), "export KMP_AFFINITY"));
    bkm_buf_free(&b);
}
END_TEST

/* Perlmutter, 2 nodes x 8 ranks x 16 threads, NERSC's recommended setting, with the binding check:
 * -C cpu, srun -c 32 given explicitly (Slurm 22.05+ does not pass the job's -c), --cpu-bind=cores,
 * srun's plugin cray_shasta, and every rank's verify before the run. */
START_TEST(script_golden_perlmutter_hybrid)
{
    bkm_slurm_job_t job;
    bkm_node_profile_t prof;
    bkm_buf_t b;
    const char *t;
    job_fixed(&job);
    ck_assert_int_eq(bkm_profile_builtin("perlmutter-cpu", &prof, NULL), BKM_OK);
    job.node = prof.name;
    job.rules = &prof.batch;
    job.constraint = prof.slurm_constraint;
    job.qos = prof.batch.qos;
    job.mpi = prof.batch.mpi;
    job.account = NULL;
    job.pus = 256;
    job.cores = 128;
    job.nodes = 2;
    job.ranks_per_node = 8;
    job.origin = BKM_SLURM_FROM_SITE;
    job.check_binding = 1;
    job.generated_by = "tune sbatch --node perlmutter-cpu --workload alexnet --site-prior --nodes 2 --ranks-per-node 8 "
                       "--threads 16 --check-binding";
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":16,\"env\":{\"OMP_PLACES\":\"threads\","
                                                   "\"OMP_PROC_BIND\":\"spread\"}}",
                                                   &job.setting, NULL),
                     BKM_OK);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_script_write(&job, &b, NULL), BKM_OK);
    golden("golden_perlmutter_hybrid.sbatch", bkm_buf_str(&b));
    t = bkm_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(t, "\n#SBATCH -C cpu\n#SBATCH -q regular\n"));
    ck_assert_ptr_nonnull(strstr(t, "\nsrun -n 16 --ntasks-per-node=8 -c 32 --cpu-bind=cores --mpi=cray_shasta \\\n"
                                    "  bash -c 'r=${SLURM_PROCID}"));
    ck_assert_ptr_nonnull(strstr(t, "affinity verify --env --threads \"$OMP_NUM_THREADS\""));
    ck_assert_ptr_nonnull(strstr(t, "RECOMMENDED for node perlmutter-cpu by NERSC"));
    bkm_buf_free(&b);
    /* a libgomp program: bkm's verify checks libomp only */
    job.setting.runtime = BKM_AFF_RUNTIME_LIBGOMP;
    ck_assert_int_eq(bkm_slurm_job_check(&job, NULL), BKM_EINVAL);
}
END_TEST

/* An invented cluster's rules: its constraint, QOS, account, partition, a core per thread, and
 * MPICH's mpiexec instead of srun. */
START_TEST(script_site_rules_mpiexec)
{
    bkm_slurm_job_t job;
    bkm_batch_rules_t r;
    bkm_buf_t b;
    const char *t;
    job_fixed(&job);
    memset(&r, 0, sizeof r);
    snprintf(r.site, sizeof r.site, "Tundra");
    r.c_rule = BKM_BATCH_C_CORES;
    snprintf(r.cpu_bind, sizeof r.cpu_bind, "cores");
    r.launcher = BKM_BATCH_LAUNCH_MPIEXEC;
    job.node = "tundra-cpu";
    job.rules = &r;
    job.constraint = "milan&ib";
    job.qos = "normal";
    job.account = "proj01";
    job.partition = "batch";
    job.mpi = NULL;
    job.pus = 16;
    job.cores = 8;
    job.nodes = 2;
    job.ranks_per_node = 2;
    job.origin = BKM_SLURM_FROM_DEFAULT;
    job.check_binding = 1;
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":2,\"env\":{\"KMP_AFFINITY\":\"granularity=fine,"
                                                   "compact,1,0\"}}",
                                                   &job.setting, NULL),
                     BKM_OK);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_script_write(&job, &b, NULL), BKM_OK);
    t = bkm_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(t, "\n#SBATCH -C milan&ib\n#SBATCH -p batch\n#SBATCH -q normal\n"));
    ck_assert_ptr_nonnull(strstr(t, "\n#SBATCH -A proj01\n"));
    ck_assert_ptr_nonnull(strstr(t, "# mpiexec (MPICH Hydra) by Tundra's rules on tundra-cpu (16 CPUs, 8 cores): -c = 2 "
                                    "thread(s) x 2 hardware thread(s) per core = 4"));
    ck_assert_ptr_nonnull(strstr(t, "\nmpiexec -n 4 -ppn 2 -bind-to core:2 \\\n  bash -c 'r=${PMI_RANK-}"));
    ck_assert_ptr_null(strstr(t, "srun"));
    ck_assert_ptr_null(strstr(t, "--mpi"));
    bkm_buf_free(&b);
    /* the threads do not fit: the rule's counts named */
    job.setting.threads = 5;
    ck_assert_int_eq(bkm_slurm_job_check(&job, NULL), BKM_EINVAL);
}
END_TEST

START_TEST(job_values_checked)
{
    bkm_slurm_job_t job;
    bkm_buf_t b;
    bkm_err_t err = {0};
    job_fixed(&job);
    bkm_slurm_setting_seed("knl", &job.setting, NULL);
    ck_assert_int_eq(bkm_slurm_job_check(&job, NULL), BKM_OK);
    job.time = "1:2:3:4";
    ck_assert_int_eq(bkm_slurm_job_check(&job, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "1:2:3:4"));
    job.time = "2-12:00";
    ck_assert_int_eq(bkm_slurm_job_check(&job, NULL), BKM_OK);
    job.account = "m1234; rm -rf /";
    ck_assert_int_eq(bkm_slurm_job_check(&job, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--account"));
    job.account = NULL;
    job.partition = "debug regular";
    ck_assert_int_eq(bkm_slurm_job_check(&job, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--partition"));
    job.partition = "knl,regular";   /* Slurm takes a list of partitions */
    ck_assert_int_eq(bkm_slurm_job_check(&job, NULL), BKM_OK);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_script_write(&job, &b, NULL), BKM_OK);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "\n#SBATCH -p knl,regular\n"));
    bkm_buf_free(&b);
    job.partition = NULL;
    job.command = "a\nb";
    ck_assert_int_eq(bkm_slurm_job_check(&job, NULL), BKM_EINVAL);
    job.command = NULL;
    job.ranks_per_node = 4;   /* 68 threads in -c 68: fits */
    ck_assert_int_eq(bkm_slurm_job_check(&job, NULL), BKM_OK);
    job.ranks_per_node = 8;   /* 68 threads in -c 32: does not */
    ck_assert_int_eq(bkm_slurm_job_check(&job, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "68 threads"));
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_script_write(&job, &b, NULL), BKM_EINVAL);
    ck_assert_int_eq((int)b.len, 0);   /* nothing written */
    bkm_buf_free(&b);
}
END_TEST

START_TEST(array_and_merge_scripts)
{
    bkm_slurm_job_t job;
    static const char *const args[] = {"--node", "knl", "--workload", "alexnet", "--strategy", "grid"};
    bkm_slurm_array_t a = {2, args, 6, "/scratch/u/bkm.sqlite", "/scratch/u/bkm.sqlite.shards", "0123456789abcdef"};
    bkm_buf_t b;
    const char *s;
    job_fixed(&job);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_array_script_write(&job, &a, &b, NULL), BKM_OK);
    s = bkm_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --array=0-1\n"));
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH -C knl,quad,cache\n"));
    ck_assert_ptr_nonnull(strstr(s, "--shard \"$I/$K\" --shard-group \"${BKM_SHARD_GROUP:-0123456789abcdef}\""));
    /* node-local SQLite, in a new folder of its own (never a name another user can take first) */
    ck_assert_ptr_nonnull(strstr(s, "LOCALDIR=$(mktemp -d \"${TMPDIR:-/tmp}/bkm-shard-"));
    ck_assert_ptr_nonnull(strstr(s, "LOCAL=$LOCALDIR/shard.sqlite\n"));
    ck_assert_ptr_nonnull(strstr(s, "SHARDS='/scratch/u/bkm.sqlite.shards'"));
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_merge_script_write(&job, &a, &b, NULL), BKM_OK);
    s = bkm_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(s, "missing"));
    ck_assert_ptr_nonnull(strstr(s, "exit 4"));
    ck_assert_ptr_nonnull(strstr(s, "--dependency=afterany"));   /* the comment: it runs after a failed shard */
    ck_assert_ptr_nonnull(strstr(s, "merge \"$LOCAL\" \"${have[@]}\""));
    ck_assert_ptr_nonnull(strstr(s, "sweep --node knl --workload alexnet --strategy grid --db \"$LOCAL\""));
    ck_assert_ptr_null(strstr(s, "--array"));
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    a.group = NULL;
    ck_assert_int_eq(bkm_slurm_array_script_write(&job, &a, &b, NULL), BKM_EINVAL);
    a.group = "x y";
    ck_assert_int_eq(bkm_slurm_array_script_write(&job, &a, &b, NULL), BKM_EINVAL);
    a.group = "g";
    a.db = "scratch/bkm.sqlite";   /* relative: the job does not run where it was written */
    ck_assert_int_eq(bkm_slurm_merge_script_write(&job, &a, &b, NULL), BKM_EINVAL);
    a.db = "/scratch/a\nb.sqlite";
    ck_assert_int_eq(bkm_slurm_merge_script_write(&job, &a, &b, NULL), BKM_EINVAL);
    bkm_buf_free(&b);
}
END_TEST

/* A sweep's jobs from its config: the defaults, the file names, the absolute database, the grid
 * added to an array's line, the refusals; submission of the job and its merge job with a fake
 * sbatch that records its arguments. */
START_TEST(sweep_jobs_built_and_submitted)
{
    static const char *const args[] = {"--workload", "alexnet", "--min-time", "5m"};
    bkm_slurm_job_t job;
    bkm_slurm_sweep_jobs_cfg_t cfg;
    bkm_slurm_sweep_jobs_t j;
    bkm_slurm_submit_t how;
    bkm_err_t err = {0};
    char dir[] = "/tmp/bkm-test-sweepjobs-XXXXXX", path[256], log[256], *text;
    char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
    long long ids[2];
    size_t len;
    FILE *f;
    job_fixed(&job);
    job.job_name = NULL;
    job.time = NULL;
    memset(&cfg, 0, sizeof cfg);
    cfg.job = &job;
    cfg.sweep_argv = args;
    cfg.sweep_argc = 4;
    cfg.db = "res/bkm.sqlite";
    cfg.cwd = "/scratch/u";
    cfg.group = "0123456789abcdef";
    /* one job: the default name and time, the database made absolute */
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_OK);
    ck_assert_int_eq(j.array, 0);
    ck_assert_str_eq(j.script, "bkm-knl-alexnet.sbatch");
    ck_assert_str_eq(bkm_buf_str(&j.db), "/scratch/u/res/bkm.sqlite");
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&j.script_text), "#SBATCH -t 02:00:00\n"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&j.script_text), "#SBATCH -J bkm-alexnet\n"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&j.script_text), "sweep --workload alexnet --min-time 5m --db"));
    ck_assert_ptr_null(strstr(bkm_buf_str(&j.script_text), "--strategy"));
    ck_assert_str_eq(bkm_buf_str(&j.how), "sbatch bkm-knl-alexnet.sbatch");
    bkm_slurm_sweep_jobs_free(&j);
    /* an array: --strategy grid added, the merge job's name before the extension */
    cfg.shards = 3;
    cfg.script = "-x.job";
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_OK);
    ck_assert_int_eq(j.array, 1);
    ck_assert_str_eq(j.script, "-x.job");
    ck_assert_str_eq(j.merge, "-x-merge.job");
    ck_assert_str_eq(bkm_buf_str(&j.shard_dir), "/scratch/u/res/bkm.sqlite.shards");
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&j.script_text), "#SBATCH --array=0-2\n"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&j.script_text), "--min-time 5m --strategy grid --db"));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&j.merge_text), "--strategy grid --db \"$LOCAL\""));
    ck_assert_str_eq(bkm_buf_str(&j.how), "sbatch ./-x.job; then sbatch --dependency=afterany:<id> ./-x-merge.job");
    bkm_slurm_sweep_jobs_free(&j);
    cfg.script = "jobs.d/sweep";   /* a dot in a folder is no extension */
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_OK);
    ck_assert_str_eq(j.merge, "jobs.d/sweep-merge");
    bkm_slurm_sweep_jobs_free(&j);
    cfg.script = NULL;
    cfg.group = NULL;   /* a random group, 16 hex digits */
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_OK);
    ck_assert_str_eq(j.script, "bkm-knl-alexnet-array.sbatch");
    ck_assert_uint_eq(strspn(j.group, "0123456789abcdef"), 16);
    bkm_slurm_sweep_jobs_free(&j);
    /* a given grid is not repeated; another strategy cannot be split; --shard is the array's own */
    cfg.strategy = "grid";
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_OK);
    ck_assert_ptr_null(strstr(bkm_buf_str(&j.script_text), "--strategy"));
    bkm_slurm_sweep_jobs_free(&j);
    cfg.strategy = "random";
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_EINVAL);
    ck_assert_str_eq(err.msg, "--slurm-array splits the grid: --strategy random cannot be sharded (use grid)");
    bkm_slurm_sweep_jobs_free(&j);
    cfg.shards = 0;   /* one job runs any strategy */
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_OK);
    bkm_slurm_sweep_jobs_free(&j);
    cfg.shard_count = 2;
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--shard"));
    bkm_slurm_sweep_jobs_free(&j);
    cfg.shard_count = 0;
    cfg.cwd = NULL;   /* a relative database needs the folder */
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_EINVAL);
    bkm_slurm_sweep_jobs_free(&j);

    /* submission: the array job, then the merge job after it */
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/sbatch", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fprintf(f, "#!/bin/sh\necho \"$*\" >> '%s'\nn=$(wc -l < '%s')\necho $((100 + n))\n", log, log);
    fclose(f);
    ck_assert_int_eq(chmod(path, 0700), 0);
    cfg.cwd = "/scratch/u";
    cfg.strategy = NULL;
    cfg.shards = 2;
    cfg.group = "g";
    ck_assert_int_eq(bkm_slurm_sweep_jobs_build(&cfg, &j, &err), BKM_OK);
    memset(&how, 0, sizeof how);
    how.sbatch = path;
    how.envp = envp;
    ck_assert_int_eq(bkm_slurm_sweep_jobs_submit(&j, &how, ids, &err), BKM_OK);
    ck_assert_int_eq(ids[0], 101);
    ck_assert_int_eq(ids[1], 102);
    ck_assert_int_eq(bkm_file_read_regular(log, "log", 4096, &text, &len, &err), BKM_OK);
    ck_assert_str_eq(text, "--parsable bkm-knl-alexnet-array.sbatch\n"
                           "--parsable --dependency=afterany:101 bkm-knl-alexnet-array-merge.sbatch\n");
    bkm_free(text);
    /* sbatch refuses: nothing submitted, Slurm's message */
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fprintf(f, "#!/bin/sh\necho 'sbatch: error: invalid partition' >&2\nexit 1\n");
    fclose(f);
    ck_assert_int_eq(bkm_slurm_sweep_jobs_submit(&j, &how, ids, &err), BKM_EDEP);
    ck_assert_int_eq(ids[0], 0);
    ck_assert_int_eq(ids[1], 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "invalid partition"));
    bkm_slurm_sweep_jobs_free(&j);
    unlink(path);
    unlink(log);
    rmdir(dir);
}
END_TEST

/* The one quoting function and the one comment escape: whatever the text, the shell reads back
 * exactly one word with that text, and a comment line never ends early. */
START_TEST(quote_and_comment)
{
    static const char *const words[] = {"plain", "m=16", "a b", "it's", "$(touch x)", "`id`", "a\nb", "", "-n",
                                        "'", "\\", "x;y", "~root", "*", "$HOME", "\t", "\xff\xfe"};
    bkm_buf_t b, c;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char got[256];
        FILE *f;
        size_t n;
        /* printf %s WORD, through bash (itself quoted for popen's sh) */
        bkm_buf_init(&b);
        bkm_buf_puts(&b, "printf %s ");
        bkm_slurm_sh_quote(&b, words[i], 0);
        bkm_buf_init(&c);
        bkm_buf_puts(&c, "bash -c ");
        bkm_slurm_sh_quote(&c, bkm_buf_str(&b), 1);
        ck_assert_ptr_nonnull(f = popen(bkm_buf_str(&c), "r"));
        n = fread(got, 1, sizeof got - 1, f);
        got[n] = '\0';
        ck_assert_int_eq(pclose(f), 0);
        ck_assert_msg(strcmp(got, words[i]) == 0, "'%s' came back as '%s' (%s)", words[i], got, bkm_buf_str(&b));
        bkm_buf_free(&b);
        bkm_buf_free(&c);
    }
    bkm_buf_init(&b);
    bkm_slurm_sh_quote(&b, "granularity=fine,compact,1,0", 0);
    ck_assert_str_eq(bkm_buf_str(&b), "granularity=fine,compact,1,0");   /* plain stays readable */
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    bkm_slurm_sh_comment(&b, "a\nb\rc\td\x1b[2J\xff");
    ck_assert_str_eq(bkm_buf_str(&b), "a\\nb\\rc\\td\\x1b[2J\xef\xbf\xbd");
    bkm_buf_free(&b);
}
END_TEST

/* Values from a stored setting that no run line can carry are refused by name; the script's
 * paths are absolute; every word of a sweep's line is one quoted word. */
START_TEST(foreign_values_refused_or_quoted)
{
    static const char *const args[] = {"--node", "/p/my node.xml", "--label", "x'; touch y; '", "--label", "a\nb"};
    bkm_slurm_array_t a = {2, args, 6, "/scratch/u/it's.sqlite", "/scratch/u/it's.sqlite.shards", "0123456789abcdef"};
    bkm_slurm_setting_t st;
    bkm_slurm_job_t job;
    bkm_err_t err = {0};
    bkm_buf_t b;
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":2,\"backend\":\"x;id\"}", &st, NULL), BKM_OK);
    ck_assert_int_eq(bkm_slurm_setting_check(&st, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "backend 'x;id'"));
    ck_assert_int_eq(bkm_slurm_setting_from_config("{\"threads\":2,\"params\":{\"m\":\"1 2\"}}", &st, NULL), BKM_OK);
    ck_assert_int_eq(bkm_slurm_setting_check(&st, &err), BKM_EINVAL);
    job_fixed(&job);
    bkm_slurm_setting_seed("knl", &job.setting, NULL);
    job.tune = "tune";   /* relative: the job runs elsewhere */
    ck_assert_int_eq(bkm_slurm_job_check(&job, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not absolute"));
    job_fixed(&job);
    bkm_slurm_setting_seed("knl", &job.setting, NULL);
    job.command = "./a.out\x1b[2J";
    ck_assert_int_eq(bkm_slurm_job_check(&job, &err), BKM_EINVAL);
    job.command = NULL;
    job.generated_by = "tune sbatch -o 'a\ntouch x #'";
    job.prov.host = "nid\ntouch y";
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_script_write(&job, &b, NULL), BKM_OK);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "(`tune sbatch -o 'a\\ntouch x #'`)"));
    ck_assert_ptr_null(strstr(bkm_buf_str(&b), "\ntouch"));
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_merge_script_write(&job, &a, &b, NULL), BKM_OK);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "\"$TUNE\" sweep --node '/p/my node.xml' --label 'x'\\''; touch y; "
                                                  "'\\''' --label 'a\nb' --db \"$LOCAL\""));
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "DB='/scratch/u/it'\\''s.sqlite'\n"));
    bkm_buf_free(&b);
}
END_TEST

START_TEST(submit_env_clears_slurm_variables)
{
    char *env[] = {"PATH=/usr/bin", "SBATCH_PARTITION=x", "SLURM_JOB_ID=5", "SLURM_CONF=/etc/slurm/slurm.conf",
                   "SBATCH_ACCOUNT=y", "SLURMX=keep", NULL};
    char **out = NULL, found[256];
    int n = -1;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_slurm_submit_env(env, &out, &n, NULL), BKM_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(out[0], "PATH=/usr/bin");
    ck_assert_str_eq(out[1], "SLURM_CONF=/etc/slurm/slurm.conf");
    ck_assert_str_eq(out[2], "SLURMX=keep");
    ck_assert_ptr_null(out[3]);
    bkm_free(out);
    ck_assert_int_eq(bkm_slurm_find_program("sbatch", "/nonexistent:/also-not", found, sizeof found, &err), BKM_EDEP);
    ck_assert_ptr_nonnull(strstr(err.msg, "slurm-client"));
    ck_assert_int_eq(bkm_slurm_find_program("sh", "/nonexistent:/bin", found, sizeof found, NULL), BKM_OK);
    ck_assert_str_eq(found, "/bin/sh");
}
END_TEST

static const bkm_slurm_finding_t *finding(const bkm_slurm_lint_t *r, const char *code, int line)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->f[i].code, code) == 0 && (line < 0 || r->f[i].line == line))
            return &r->f[i];
    return NULL;
}

START_TEST(lint_seed_scripts)
{
    bkm_slurm_lint_t r;
    char *text = slurp("seed_haswell.sbatch");
    const bkm_slurm_finding_t *f;
    ck_assert_int_eq(bkm_slurm_lint_run(text, NULL, &r, NULL), BKM_OK);
    ck_assert_str_eq(r.node, "haswell");
    ck_assert_int_eq(r.threads, 32);
    f = finding(&r, "unknown-variable", 13);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->sev, BKM_SLURM_ERROR);
    ck_assert_ptr_nonnull(strstr(f->msg, "KMP_BLOCKTIM "));
    ck_assert_ptr_nonnull(strstr(f->msg, "KMP_BLOCKTIME"));
    ck_assert_int_eq(r.errors, 1);
    ck_assert_ptr_nonnull(r.plan_text);
    ck_assert_ptr_nonnull(strstr(r.plan_text, "blocktime:      200 ms"));   /* the typo's effect */
    bkm_slurm_lint_free(&r);
    bkm_free(text);

    text = slurp("seed_knl.sbatch");
    ck_assert_int_eq(bkm_slurm_lint_run(text, NULL, &r, NULL), BKM_OK);
    ck_assert_str_eq(r.node, "knl");
    ck_assert_str_eq(r.constraint, "knl,quad,cache");
    ck_assert_int_eq(r.errors, 0);
    ck_assert_int_eq(r.srun_c, 272);
    ck_assert_ptr_nonnull(strstr(r.plan_text, "blocktime:      1 ms"));
    ck_assert_ptr_nonnull(r.plan_json);
    bkm_slurm_lint_free(&r);
    bkm_free(text);
}
END_TEST

START_TEST(lint_finds_each_kind)
{
    bkm_slurm_lint_t r;
    bkm_err_t err = {0};
    const char *cancel = "#!/bin/bash\n#SBATCH -C knl\nexport OMP_PROC_BIND=spread\nexport KMP_AFFINITY=compact\n"
                         "export OMP_NUM_THREADS=68\nsrun -n 1 -c 272 --cpu-bind=cores ./a.out\n";
    const char *bad = "#SBATCH --constraint=haswell\nexport KMP_AFFINITY='granularity=fine,compactt'\n"
                      "OMP_NUM_THREAD=4 ./a.out\nsetenv OPM_NUM_THREADS 8\n";
    const char *threads = "#!/bin/bash\n#SBATCH -N 1 -C knl,quad,cache\nexport OMP_NUM_THREADS=64\n"
                          "srun -n 8 \\\n  -c 32 ./a.out\n";
    const char *big = "#SBATCH -C knl\nexport OMP_NUM_THREADS=300\n";
    const char *dyn = "#SBATCH -C knl\nexport KMP_AFFINITY=$AFF\nexport OMP_NUM_THREADS=4\n";
    ck_assert_int_eq(bkm_slurm_lint_run(cancel, NULL, &r, NULL), BKM_OK);
    ck_assert_ptr_nonnull(finding(&r, "cancelling", 3));
    bkm_slurm_lint_free(&r);

    ck_assert_int_eq(bkm_slurm_lint_run(bad, NULL, &r, NULL), BKM_OK);
    ck_assert_str_eq(r.node, "haswell");
    ck_assert_ptr_nonnull(finding(&r, "bad-value", 2));
    ck_assert_ptr_nonnull(strstr(finding(&r, "bad-value", 2)->msg, "compactt"));
    ck_assert_ptr_nonnull(finding(&r, "unknown-variable", 3));   /* prefix assignment */
    ck_assert_ptr_nonnull(finding(&r, "unknown-variable", 4));   /* csh setenv, transposed */
    ck_assert_ptr_nonnull(strstr(finding(&r, "unknown-variable", 4)->msg, "OMP_NUM_THREADS"));
    bkm_slurm_lint_free(&r);

    ck_assert_int_eq(bkm_slurm_lint_run(threads, NULL, &r, NULL), BKM_OK);
    ck_assert_int_eq(r.ranks_per_node, 8);
    ck_assert_int_eq(r.srun_c, 32);
    ck_assert_ptr_nonnull(finding(&r, "threads", 3));            /* 64 threads in -c 32 */
    ck_assert_ptr_nonnull(finding(&r, "cpu-bind", 4));           /* 64 of 68 cores, no --cpu-bind */
    ck_assert_ptr_nonnull(r.plan_text);                          /* rank 0's 8 cores */
    ck_assert_ptr_nonnull(strstr(r.plan_text, "32 allowed CPUs"));
    bkm_slurm_lint_free(&r);

    ck_assert_int_eq(bkm_slurm_lint_run(big, NULL, &r, NULL), BKM_OK);
    ck_assert_ptr_nonnull(finding(&r, "threads", 2));
    bkm_slurm_lint_free(&r);

    ck_assert_int_eq(bkm_slurm_lint_run(dyn, NULL, &r, NULL), BKM_OK);
    ck_assert_int_eq(r.errors, 0);
    ck_assert_ptr_nonnull(finding(&r, "dynamic", 2));
    bkm_slurm_lint_free(&r);

    ck_assert_int_eq(bkm_slurm_lint_run("echo hi\n", NULL, &r, NULL), BKM_OK);   /* no node: a note */
    ck_assert_int_eq(r.errors, 0);
    ck_assert_ptr_nonnull(finding(&r, "node", 0));
    ck_assert_ptr_null(r.plan_text);
    bkm_slurm_lint_free(&r);

    /* counts out of range are errors naming them, not skipped; a computed one is not judged */
    ck_assert_int_eq(bkm_slurm_lint_run("#SBATCH -N 99999999999\n#SBATCH -c -5\n#SBATCH -N 2-4\n"
                                        "srun -n 2147483648 -c 0 ./a.out\nsrun -n $N ./b.out\n",
                                        "knl", &r, NULL), BKM_OK);
    ck_assert_int_eq(r.errors, 4);
    ck_assert_ptr_nonnull(strstr(finding(&r, "bad-value", 1)->msg, "-N '99999999999'"));
    ck_assert_ptr_nonnull(strstr(finding(&r, "bad-value", 2)->msg, "-c '-5'"));
    ck_assert_ptr_null(finding(&r, "bad-value", 3));
    ck_assert_ptr_null(finding(&r, "bad-value", 5));
    bkm_slurm_lint_free(&r);

    ck_assert_int_eq(bkm_slurm_lint_run("echo hi\n", "no-such-node", &r, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no-such-node"));
}
END_TEST

/* A script that relies on srun inheriting #SBATCH -c (gone since Slurm 22.05) is warned about; one
 * that sets srun -c or SRUN_CPUS_PER_TASK is not. -C cpu is Perlmutter's node. */
START_TEST(lint_cpus_per_task_inheritance)
{
    bkm_slurm_lint_t r;
    const bkm_slurm_finding_t *f;
    const char *inherit = "#!/bin/bash\n#SBATCH -N 1 -C cpu\n#SBATCH --ntasks-per-node=8\n#SBATCH -c 32\n"
                          "export OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread\n"
                          "srun -n 8 --cpu-bind=cores ./a.out\n";
    const char *fixed = "#!/bin/bash\n#SBATCH -N 1 -C cpu\n#SBATCH --ntasks-per-node=8\n#SBATCH -c 32\n"
                        "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\nexport OMP_NUM_THREADS=16\n"
                        "srun -n 8 --cpu-bind=cores ./a.out\n";
    ck_assert_int_eq(bkm_slurm_lint_run(inherit, NULL, &r, NULL), BKM_OK);
    ck_assert_str_eq(r.node, "perlmutter-cpu");
    ck_assert_ptr_nonnull(f = finding(&r, "cpus-per-task", 6));
    ck_assert_int_eq(f->sev, BKM_SLURM_WARNING);
    ck_assert_ptr_nonnull(strstr(f->msg, "inheriting #SBATCH -c 32 (line 4)"));
    ck_assert_ptr_nonnull(strstr(f->msg, "as on this node's Slurm"));
    bkm_slurm_lint_free(&r);
    ck_assert_int_eq(bkm_slurm_lint_run(fixed, NULL, &r, NULL), BKM_OK);
    ck_assert_ptr_null(finding(&r, "cpus-per-task", 7));
    bkm_slurm_lint_free(&r);
    /* Cori's Slurm still passed it: the warning says a newer one will not */
    ck_assert_int_eq(bkm_slurm_lint_run(inherit, "haswell", &r, NULL), BKM_OK);
    ck_assert_ptr_nonnull(f = finding(&r, "cpus-per-task", 6));
    ck_assert_ptr_nonnull(strstr(f->msg, "a newer one will not"));
    bkm_slurm_lint_free(&r);
}
END_TEST

START_TEST(lint_json)
{
    bkm_slurm_lint_t r;
    bkm_buf_t b;
    bkm_json_t *j = NULL;
    char *text = slurp("seed_haswell.sbatch");
    ck_assert_int_eq(bkm_slurm_lint_run(text, NULL, &r, NULL), BKM_OK);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_slurm_lint_to_json(&r, "seed_haswell.sbatch", &b), BKM_OK);
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &j, NULL), BKM_OK);
    ck_assert_double_eq(bkm_json_get_num(j, "errors", -1), 1);
    ck_assert_str_eq(bkm_json_get_str(j, "node"), "haswell");
    ck_assert_ptr_nonnull(bkm_json_get(j, "placement"));
    ck_assert_int_eq(bkm_json_get(j, "placement")->type, BKM_JSON_OBJ);
    ck_assert_double_eq(bkm_json_get_num(bkm_json_at(bkm_json_get(j, "findings"), 0), "line", -1), 13);
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_slurm_lint_free(&r);
    bkm_free(text);
}
END_TEST

static Suite *slurm_suite(void)
{
    Suite *s = suite_create("slurm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, layout_follows_nersc_rules);
    tcase_add_test(tc, layout_by_site_rules);
    tcase_add_test(tc, edit_distance_finds_near_misses);
    tcase_add_test(tc, settings_checked_and_seeded);
    tcase_add_test(tc, script_golden_best_knl);
    tcase_add_test(tc, script_golden_places_ranks);
    tcase_add_test(tc, script_golden_perlmutter_hybrid);
    tcase_add_test(tc, script_site_rules_mpiexec);
    tcase_add_test(tc, job_values_checked);
    tcase_add_test(tc, array_and_merge_scripts);
    tcase_add_test(tc, sweep_jobs_built_and_submitted);
    tcase_add_test(tc, quote_and_comment);
    tcase_add_test(tc, foreign_values_refused_or_quoted);
    tcase_add_test(tc, submit_env_clears_slurm_variables);
    tcase_add_test(tc, lint_seed_scripts);
    tcase_add_test(tc, lint_finds_each_kind);
    tcase_add_test(tc, lint_cpus_per_task_inheritance);
    tcase_add_test(tc, lint_json);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(slurm_suite)
