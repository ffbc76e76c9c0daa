/* SPDX-License-Identifier: MIT */
/* `tune sbatch`: a batch script from the stored best-known setting (or the profile's default, or
 * the seed's published one), written and optionally submitted. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/slurm.h"
#include "bkm/tuner.h"
#include "bkm_revision.h"
#include "cli_common.h"
#include "cli_opt.h"
#include "cli_slurm.h"

const char bkm_cli_sbatch_summary[] = "write (and submit) a Slurm batch script from the best-known setting";

typedef struct sbatch_opts {
    const char *node, *workload, *db, *out, *account, *qos, *partition, *time, *job_name, *command, *job_output, *mpi;
    int submit, test_only, dflt, seed, site_prior, nodes, rpn, threads, check_binding;
    const char *params[BKM_SLURM_MAX_PARAMS];
    int n_params;
} sbatch_opts_t;

static int sbatch_param(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    sbatch_opts_t *o = cfg;
    (void)opt;
    if (strchr(v, '=') == NULL || v[0] == '=')
        return bkm_err_set(err, BKM_EINVAL, "is not key=value");
    if (o->n_params >= BKM_SLURM_MAX_PARAMS)
        return bkm_err_set(err, BKM_EINVAL, "at most %d are allowed", BKM_SLURM_MAX_PARAMS);
    o->params[o->n_params++] = v;
    return BKM_OK;
}

/* --param k=v: replaces the setting's k, or adds it */
static int params_apply(const sbatch_opts_t *o, bkm_slurm_setting_t *s, bkm_err_t *err)
{
    for (int i = 0; i < o->n_params; i++) {
        size_t kl = (size_t)(strchr(o->params[i], '=') - o->params[i]);
        int k;
        if (strlen(o->params[i]) >= sizeof s->params[0])
            return bkm_err_set(err, BKM_EINVAL, "--param '%.40s...' is too long", o->params[i]);
        for (k = 0; k < s->n_params; k++)
            if (strncmp(s->params[k], o->params[i], kl + 1) == 0)
                break;
        if (k == s->n_params && s->n_params >= BKM_SLURM_MAX_PARAMS)
            return bkm_err_set(err, BKM_EINVAL, "--param '%s': too many parameters", o->params[i]);
        snprintf(s->params[k], sizeof s->params[k], "%s", o->params[i]);
        if (k == s->n_params)
            s->n_params++;
    }
    return BKM_OK;
}

static const bkm_cli_opt_t sbatch_table[] = {
    {.name = "node", .kind = BKM_CLI_STR, .metavar = "NODE", .off = offsetof(sbatch_opts_t, node),
     .help = "node profile (knl, haswell, perlmutter-cpu, auto, or a profile file)", .example = "knl", .flags = BKM_CLI_REQUIRED},
    {.name = "workload", .kind = BKM_CLI_STR, .metavar = "WL", .off = offsetof(sbatch_opts_t, workload),
     .help = "workload the job runs (gemm, conv2d, alexnet, ...)", .example = "gemm", .flags = BKM_CLI_REQUIRED},
    BKM_CLI_DB_OPT(sbatch_opts_t, db),
    {.name = "output", .short_name = 'o', .kind = BKM_CLI_STR, .metavar = "FILE", .off = offsetof(sbatch_opts_t, out),
     .help = "write the script to FILE (default: stdout; with --submit\n"
             "bkm-NODE-WL.sbatch)", .example = "job.sbatch"},
    {.name = "submit", .kind = BKM_CLI_FLAG, .off = offsetof(sbatch_opts_t, submit),
     .help = "submit it with sbatch (inherited SBATCH_*/SLURM_* variables cleared)"},
    {.name = "test-only", .kind = BKM_CLI_FLAG, .off = offsetof(sbatch_opts_t, test_only),
     .help = "with --submit: sbatch --test-only (Slurm validates, runs nothing)"},
    {.name = "default", .kind = BKM_CLI_FLAG, .off = offsetof(sbatch_opts_t, dflt),
     .help = "use the profile's default setting (not measured) instead of the best"},
    {.name = "seed-bkm", .kind = BKM_CLI_FLAG, .off = offsetof(sbatch_opts_t, seed),
     .help = "use the setting the seed published for Cori haswell/knl\n"
             "(granularity=fine,compact,1,0, 32/68 threads, blocktime 1; not measured)"},
    {.name = "site-prior", .kind = BKM_CLI_FLAG, .off = offsetof(sbatch_opts_t, site_prior),
     .help = "use the setting the node's site recommends (the profile's prior,\n"
             "e.g. NERSC's OMP_PLACES=threads OMP_PROC_BIND=spread; not measured)"},
    {.name = "threads", .kind = BKM_CLI_INT, .metavar = "T", .off = offsetof(sbatch_opts_t, threads), .lo = 1,
     .hi = BKM_CPUSET_MAX, .help = "OpenMP threads per rank (replaces the setting's own)"},
    {.name = "check-binding", .kind = BKM_CLI_FLAG, .off = offsetof(sbatch_opts_t, check_binding),
     .help = "before the run, every rank prints its CPU mask and each thread's CPUs\n"
             "against the plan (tune affinity verify); a mismatch stops the job"},
    {.name = "account", .short_name = 'A', .kind = BKM_CLI_STR, .metavar = "A", .off = offsetof(sbatch_opts_t, account),
     .help = "#SBATCH -A (default: the profile's, none for Cori/Perlmutter)", .example = "m1234"},
    {.name = "qos", .short_name = 'q', .kind = BKM_CLI_STR, .metavar = "Q", .off = offsetof(sbatch_opts_t, qos),
     .help = "#SBATCH -q (default: the profile's; regular for Cori/Perlmutter,\nnone for auto)", .example = "debug"},
    {.name = "partition", .short_name = 'p', .kind = BKM_CLI_STR, .metavar = "P", .off = offsetof(sbatch_opts_t, partition),
     .help = "#SBATCH -p (default: the profile's, else the cluster's default)", .example = "debug"},
    {.name = "time", .short_name = 't', .kind = BKM_CLI_STR, .metavar = "T", .off = offsetof(sbatch_opts_t, time),
     .help = "#SBATCH -t, a Slurm time: MM, HH:MM:SS, D-HH:MM (default 00:30:00)", .example = "00:10:00"},
    {.name = "nodes", .short_name = 'N', .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(sbatch_opts_t, nodes),
     .lo = 1, .hi = 100000, .help = "#SBATCH -N (default 1)"},
    {.name = "ranks-per-node", .kind = BKM_CLI_INT, .metavar = "R", .off = offsetof(sbatch_opts_t, rpn), .lo = 1,
     .hi = BKM_CPUSET_MAX, .help = "MPI ranks per node; srun -c and --cpu-bind follow the profile's\n"
                                   "batch rules (NERSC's for Cori and Perlmutter) (default 1)"},
    {.name = "job-name", .short_name = 'J', .kind = BKM_CLI_STR, .metavar = "J", .off = offsetof(sbatch_opts_t, job_name),
     .help = "#SBATCH -J (default bkm-WL)", .example = "bkm"},
    {.name = "job-output", .kind = BKM_CLI_STR, .metavar = "PATTERN", .off = offsetof(sbatch_opts_t, job_output),
     .help = "#SBATCH -o (default J-%j.out)", .example = "x-%j.out"},
    {.name = "mpi", .kind = BKM_CLI_STR, .metavar = "TYPE", .off = offsetof(sbatch_opts_t, mpi),
     .help = "srun --mpi=TYPE (default: the profile's: pmi2, what MPICH needs, or\n"
             "cray_shasta on Perlmutter; 'none' omits it)", .example = "pmi2"},
    {.name = "param", .kind = BKM_CLI_CALL, .metavar = "K=V", .call = sbatch_param, .flags = BKM_CLI_REPEAT,
     .help = "a workload parameter for `tune run` (replaces the setting's own)", .example = "batch=16"},
    {.name = "command", .kind = BKM_CLI_STR, .metavar = "CMD", .off = offsetof(sbatch_opts_t, command),
     .help = "run CMD (your program, one line) under srun instead of `tune run`", .example = "./a.out"},
};

static const bkm_cli_cmd_spec_t sbatch_cmd = {
    .name = "sbatch",
    .usage = "tune sbatch --node NODE --workload WL [--db PATH] [-o FILE] [--submit [--test-only]]\n"
             "            [--default | --seed-bkm | --site-prior] [--account A] [--qos Q] [--partition P]\n"
             "            [--time T] [--nodes N] [--ranks-per-node R] [--threads T] [--job-name J] [--job-output P]\n"
             "            [--mpi TYPE] [--param K=V] [--command CMD] [--check-binding]",
    .about = "Writes a Slurm batch script that runs WL on NODE with the best-known setting stored for them:\n"
             "#SBATCH lines (-N, -C, -p, -q, -A from the node profile's batch rules unless given, -t, -J,\n"
             "-o), the exported setting (OMP_NUM_THREADS, KMP_AFFINITY, KMP_BLOCKTIME, or OMP_PLACES/\n"
             "OMP_PROC_BIND when that won; never two rivals that cancel each other), the planned world\n"
             "size, and one launcher line by the profile's rules: srun with -n, -c (always given: since\n"
             "Slurm 22.05 srun does not take the job's -c), --cpu-bind and --mpi, or mpiexec -n -ppn\n"
             "-bind-to; every rank prints the settings it sees, then `tune run` prints the result line\n"
             "(median time, GFLOP/s). A comment records the provenance: sweep, median and interval,\n"
             "speedup vs the default, host, date, revision. --default, --seed-bkm and --site-prior write\n"
             "a setting that bkm did not measure, and say so. --check-binding adds a step in which every\n"
             "rank prints its CPU mask and each OpenMP thread's CPUs against bkm's plan.\n"
             "For a sweep of your own program (tune ... -- CMD ARGS) the srun line runs that program, each\n"
             "word quoted, with only the variables of the OpenMP runtime it loads (GNU libgomp: OMP_* and\n"
             "GOMP_*, never KMP_*).",
    BKM_CLI_TABLE(sbatch_table),
    .more = "examples:\n"
            "  tune sbatch --node knl --workload alexnet -o alexnet-knl.sbatch\n"
            "  tune sbatch --node haswell --workload alexnet --seed-bkm --account m1234 --submit\n"
            "  tune sbatch --node knl --workload gemm --default --ranks-per-node 4 --command ./my_app\n"
            "  tune sbatch --node perlmutter-cpu --workload alexnet --site-prior --nodes 2 --ranks-per-node 8 \\\n"
            "      --threads 16 --check-binding -o pm.sbatch\n"
            "  tune sbatch --node site.prof --workload gemm --default   (a site's own rules: docs/slurm.md)\n"
            "  tune sbatch --node auto --workload torch-cnn   (after tune --workload torch-cnn -- python3 train.py)\n\n"
            "exit codes: 0 written (and submitted), 2 bad usage or no best-known setting for NODE/WL\n"
            "            (use --default or --seed-bkm), 3 environment: the database is unreadable, no\n"
            "            sbatch on PATH, or Slurm refused the job (its message is shown verbatim)\n",
};

/* The profile's default setting: configuration 0 of the space the sweep would build. */
static int default_setting(const sbatch_opts_t *o, bkm_topo_t *topo, const bkm_node_profile_t *prof,
                           bkm_slurm_setting_t *s, bkm_err_t *err)
{
    bkm_tune_space_opts_t so;
    bkm_tune_space_t *sp = NULL;
    bkm_buf_t b;
    bkm_json_w_t w;
    int rc;
    memset(&so, 0, sizeof so);
    so.workload = o->workload;
    if ((rc = bkm_tune_space_create(&sp, topo, prof, &so, err)) < 0)
        return rc;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_tune_config_to_json(bkm_tune_space_config(sp, 0), &w);
    rc = bkm_slurm_setting_from_config(bkm_buf_str(&b), s, err);
    bkm_buf_free(&b);
    bkm_tune_space_free(sp);
    return rc;
}

/* The site's recommended setting (the profile's prior), one thread per core of the node. */
static int prior_setting(const bkm_node_profile_t *prof, const bkm_topo_summary_t *sum, bkm_slurm_setting_t *s,
                         bkm_err_t *err)
{
    bkm_aff_env_t env;
    char store[sizeof prof->batch.prior];
    int rc;
    memset(s, 0, sizeof *s);
    if ((rc = bkm_profile_prior_env(prof, &env, store, sizeof store, err)) < 0)
        return bkm_err_prefix(err, "--site-prior");
    s->threads = sum->cores > 0 ? sum->cores : 1;
    snprintf(s->kmp_affinity, sizeof s->kmp_affinity, "%s", env.kmp_affinity ? env.kmp_affinity : "");
    snprintf(s->kmp_blocktime, sizeof s->kmp_blocktime, "%s", env.kmp_blocktime ? env.kmp_blocktime : "");
    snprintf(s->omp_places, sizeof s->omp_places, "%s", env.omp_places ? env.omp_places : "");
    snprintf(s->omp_proc_bind, sizeof s->omp_proc_bind, "%s", env.omp_proc_bind ? env.omp_proc_bind : "");
    return BKM_OK;
}

/* A sweep of the user's program (`tune ... -- CMD`) stored the program and the OpenMP runtime it
 * loaded with each trial's binding: the job runs that program (each word quoted), exporting the
 * variables of that runtime. Read from a database: data, checked like any stored value.
 * @p doc keeps the strings the job points into. 0, or 2 (printed) for a malformed record. */
static int program_from_binding(const char *binding, bkm_slurm_job_t *job, bkm_json_t **doc,
                                const char **argv, int cap)
{
    const bkm_json_t *pg, *av, *rt;
    const char *kind;
    bkm_err_t err = {0};
    bkm_aff_runtime_kind_t k;
    int n = 0;
    if (binding == NULL || bkm_json_parse(binding, doc, NULL) < 0 || (pg = bkm_json_get(*doc, "program")) == NULL)
        return 0;   /* one of bkm's own workloads */
    av = bkm_json_get(pg, "argv");
    if (av == NULL || av->type != BKM_JSON_ARR || av->n_children == 0 || av->n_children >= (size_t)cap) {
        fprintf(stderr, "tune sbatch: the stored program has no usable argv\n");
        return 2;
    }
    for (const bkm_json_t *x = av->child; x; x = x->next) {
        if (x->type != BKM_JSON_STR) {
            fprintf(stderr, "tune sbatch: the stored program's word %d is not a string\n", n);
            return 2;
        }
        argv[n++] = x->str;
    }
    argv[n] = NULL;
    rt = bkm_json_get(binding ? *doc : NULL, "runtime");
    kind = rt ? bkm_json_get_str(rt, "planned_for") : NULL;
    if (kind == NULL || bkm_aff_runtime_kind_parse(kind, &k, &err) < 0) {
        fprintf(stderr, "tune sbatch: the stored program's runtime is unknown: %s\n", kind ? err.msg : "none");
        return 2;
    }
    job->program_argv = argv;
    job->program_argc = n;
    job->setting.runtime = (int)k;
    return 0;
}

/* The stored best-known setting; 2 (printed) when there is none. */
static int best_setting(const sbatch_opts_t *o, const char *db_path, bkm_slurm_job_t *job, bkm_db_best_t *b,
                        char **binding)
{
    char node[64];
    int found = 0, rc;
    bkm_db_t *db = NULL;
    bkm_err_t err = {0};
    struct stat sb;
    if ((rc = bkm_tune_node_resolve(o->node, node, sizeof node, &err)) < 0) {
        fprintf(stderr, "tune sbatch: --node: %s\n", err.msg);
        return bkm_status_exit_code(rc);
    }
    if (stat(db_path, &sb) != 0) {
        fprintf(stderr, "tune sbatch: no best-known setting for node '%s', workload '%s': the database %s does not "
                "exist (run the sweep first, or use --default or --seed-bkm)\n", node, o->workload, db_path);
        return 2;
    }
    if ((rc = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) == BKM_OK)
        rc = bkm_db_best_get(db, node, o->workload, b, &found, &err);
    if (rc == BKM_OK && found)   /* a program's trials carry the program and its runtime */
        rc = bkm_db_config_binding(db, b->sweep_id, b->config_json, binding, &err);
    bkm_db_close(db);
    if (rc < 0) {
        fprintf(stderr, "tune sbatch: %s\n", err.msg);
        return bkm_status_exit_code(rc);
    }
    if (!found) {
        fprintf(stderr, "tune sbatch: no best-known setting stored for node '%s', workload '%s' in %s (run `tune "
                "--node %s --workload %s` on that node first, or use --default or --seed-bkm)\n", node, o->workload,
                db_path, o->node, o->workload);
        return 2;
    }
    if ((rc = bkm_slurm_setting_from_config(b->config_json, &job->setting, &err)) < 0) {
        fprintf(stderr, "tune sbatch: %s (in %s)\n", err.msg, db_path);
        return 2;
    }
    job->origin = BKM_SLURM_FROM_BEST;
    job->prov.sweep = b->sweep_uuid;
    job->prov.median_ms = b->median_ms;
    job->prov.ci_lo_ms = b->ci_lo_ms;
    job->prov.ci_hi_ms = b->ci_hi_ms;
    job->prov.default_median_ms = b->default_median_ms;
    job->prov.speedup = b->speedup;
    job->prov.significant = b->significant;
    job->prov.host = b->hostname;
    job->prov.measured_at = b->created_at;
    job->prov.git_revision = b->git_revision;
    job->prov.db = db_path;
    return 0;
}

/* The threads of a setting that fills the node (the default or the site prior): with several
 * ranks, what one rank gets by the profile's -c rule. */
static int job_threads_cap(const bkm_slurm_job_t *job)
{
    bkm_slurm_layout_t l;
    if (job->rules->c_rule == BKM_BATCH_C_THREADS)
        return job->pus / job->ranks_per_node;
    if (job->rules->c_rule == BKM_BATCH_C_CORES)
        return job->cores / job->ranks_per_node;
    if (bkm_slurm_layout(job->pus, job->cores, job->ranks_per_node, &l, NULL) == BKM_OK)
        return l.cpus_per_task;
    return job->setting.threads;
}

/* The job's shape from the options, the profile and the node: nodes, ranks per node (an MPI
 * training setting's own ranks unless --ranks-per-node says otherwise), the batch rules and the
 * #SBATCH values they default, the binding check, and the threads: --threads, else a node-filling
 * setting's cut to one rank's share. */
static void job_shape(const sbatch_opts_t *o, const bkm_node_profile_t *prof, const bkm_topo_summary_t *sum,
                      char *jname, size_t jname_n, bkm_slurm_job_t *job)
{
    snprintf(jname, jname_n, "bkm-%.80s", o->workload);
    job->node = prof->name;
    job->rules = &prof->batch;
    job->constraint = prof->slurm_constraint;
    job->pus = sum->pus;
    job->cores = sum->cores;
    job->workload = o->workload;
    job->nodes = o->nodes ? o->nodes : 1;
    job->ranks_per_node = o->rpn ? o->rpn : 1;
    if (bkm_tune_workload_is_mpi(o->workload)) {
        /* the MPI training run: its setting's ranks (a parameter of the stored configuration)
         * become the ranks per node unless --ranks-per-node says otherwise */
        job->train = 1;
        for (int i = 0; i < job->setting.n_params; i++)
            if (strncmp(job->setting.params[i], "ranks=", 6) == 0) {
                long long p = 1;
                if (!o->rpn && bkm_parse_int(job->setting.params[i] + 6, 1, BKM_TUNE_RANKS_MAX, &p) == BKM_OK)
                    job->ranks_per_node = (int)p;
                memmove(&job->setting.params[i], &job->setting.params[i + 1],
                        (size_t)(job->setting.n_params - i - 1) * sizeof job->setting.params[0]);
                job->setting.n_params--;
                i--;
            }
    }
    bkm_cli_slurm_rules_apply(prof, o->account, o->qos, o->partition, o->mpi, job);
    if (o->time)
        job->time = o->time;
    job->job_name = o->job_name ? o->job_name : jname;
    job->output = o->job_output;
    job->command = o->command;
    job->check_binding = o->check_binding;
    if (o->threads)
        job->setting.threads = o->threads;
    else if (job->origin == BKM_SLURM_FROM_DEFAULT || job->origin == BKM_SLURM_FROM_SITE) {
        int cap = job_threads_cap(job);
        if (job->setting.threads > cap)
            job->setting.threads = cap > 0 ? cap : 1;
    }
}

int bkm_cli_sbatch(int argc, char **argv)
{
    sbatch_opts_t o;
    bkm_slurm_job_t job;
    bkm_node_profile_t prof;
    bkm_topo_t *topo = NULL;
    bkm_topo_summary_t sum;
    bkm_db_best_t best;
    bkm_err_t err = {0};
    bkm_buf_t cmd, script;
    char self[PATH_MAX], host[256], when[32], tune_note[BKM_CLI_TUNE_NOTE_MAX], jname[96], out_default[256];
    const char *out, *pargv[258];
    char *binding = NULL;
    bkm_json_t *pdoc = NULL;
    int ret, rc = 0;
    long long id;

    memset(&o, 0, sizeof o);
    memset(&best, 0, sizeof best);
    bkm_buf_init(&cmd);
    bkm_buf_init(&script);
    if (bkm_cli_opt_parse_cmd(&sbatch_cmd, argc, argv, &o, &ret))
        return ret;
    if (o.dflt + o.seed + o.site_prior > 1) {
        fprintf(stderr, "tune sbatch: --default, --seed-bkm and --site-prior exclude each other\n");
        return 2;
    }
    if (o.test_only && !o.submit) {
        fprintf(stderr, "tune sbatch: --test-only goes with --submit\n");
        return 2;
    }
    bkm_slurm_job_defaults(&job);
    if ((rc = bkm_profile_resolve(o.node, &prof, &err)) < 0 || (rc = bkm_topo_open_profile(&topo, &prof, &err)) < 0) {
        fprintf(stderr, "tune sbatch: --node: %s\n", err.msg);
        ret = bkm_status_exit_code(rc);
        goto done;
    }
    bkm_topo_summary(topo, &sum);
    if (o.seed)
        rc = bkm_slurm_setting_seed(prof.name, &job.setting, &err), job.origin = BKM_SLURM_FROM_SEED;
    else if (o.dflt)
        rc = default_setting(&o, topo, &prof, &job.setting, &err), job.origin = BKM_SLURM_FROM_DEFAULT;
    else if (o.site_prior)
        rc = prior_setting(&prof, &sum, &job.setting, &err), job.origin = BKM_SLURM_FROM_SITE;
    else if ((ret = best_setting(&o, bkm_cli_db_path(o.db), &job, &best, &binding)) != 0 ||
             (ret = program_from_binding(binding, &job, &pdoc, pargv, (int)(sizeof pargv / sizeof pargv[0]))) != 0)
        goto done;
    if (rc >= 0)
        rc = params_apply(&o, &job.setting, &err);
    if (rc < 0) {
        fprintf(stderr, "tune sbatch: %s\n", err.msg);
        ret = bkm_status_exit_code(rc);
        goto done;
    }
    if ((ret = bkm_cli_slurm_job_fill(&job, BKM_BUILD_REVISION, argc, argv, self, sizeof self, host, when, tune_note,
                                      &cmd)) != 0)
        goto done;
    job_shape(&o, &prof, &sum, jname, sizeof jname, &job);
    if ((rc = bkm_slurm_script_write(&job, &script, &err)) < 0) {
        fprintf(stderr, "tune sbatch: %s\n", err.msg);
        ret = bkm_status_exit_code(rc);
        goto done;
    }
    snprintf(out_default, sizeof out_default, "bkm-%.60s-%.60s.sbatch", prof.name, o.workload);
    out = o.out ? o.out : o.submit ? out_default : "-";
    if ((ret = bkm_cli_output_write("sbatch", "-o", out, bkm_buf_str(&script), 0777)) != 0)
        goto done;
    if (strcmp(out, "-") != 0)
        fprintf(stderr, "tune sbatch: wrote %s (%s setting of %s on %s)\n", out,
                job.origin == BKM_SLURM_FROM_BEST   ? "best-known"
                : job.origin == BKM_SLURM_FROM_SEED ? "the seed's"
                : job.origin == BKM_SLURM_FROM_SITE ? "the site's recommended"
                                                    : "the default",
                o.workload, prof.name);
    if (o.submit) {
        if (strcmp(out, "-") == 0) {
            fprintf(stderr, "tune sbatch: --submit needs a file (-o FILE), not stdout\n");
            ret = 2;
            goto done;
        }
        ret = bkm_cli_slurm_submit("sbatch", out, NULL, o.test_only, &id);
    }
done:
    bkm_db_best_clear(&best);
    bkm_free(binding);
    bkm_json_free(pdoc);
    bkm_topo_close(topo);
    bkm_buf_free(&cmd);
    bkm_buf_free(&script);
    return ret;
}
