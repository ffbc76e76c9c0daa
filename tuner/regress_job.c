/* SPDX-License-Identifier: MIT */
/* The `tune regress` workflow (bkm/tuner/regress.h): the mode rules, the suite planned and
 * checked against this host, the MPI launcher, the measurement, the comparison, the texts the
 * command prints and writes, and the gate's history. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bkm/affinity.h"
#include "bkm/results.h"
#include "bkm/tuner.h"

int bkm_tune_regress_job_check(const bkm_tune_regress_job_t *job, bkm_err_t *err)
{
    if (!!job->record + !!job->baseline_path + !!job->against != 1)
        return bkm_err_set(err, BKM_EINVAL, "give exactly one of --record, --baseline FILE, --against TUNE");
    if (job->record && job->output == NULL)
        return bkm_err_set(err, BKM_EINVAL, "--record needs -o FILE");
    if (job->record && (job->junit || job->json || job->processes_max))
        return bkm_err_set(err, BKM_EINVAL, "--%s is for a check (--baseline or --against), not --record",
                           job->junit ? "junit" : job->json ? "json" : "processes-max");
    if (!job->record && job->output)
        return bkm_err_set(err, BKM_EINVAL, "-o '%s' is only for --record (--junit OUT writes the comparison)",
                           job->output);
    if (job->against && access(job->against, X_OK) != 0)
        return bkm_err_set(err, BKM_EDEP, "--against '%s': not an executable (%s)", job->against, strerror(errno));
    return BKM_OK;
}

const char *bkm_tune_regress_verdict_name(bkm_tune_regress_verdict_t v)
{
    switch (v) {
    case BKM_TUNE_REGRESS_RECORDED: return "recorded";
    case BKM_TUNE_REGRESS_PASS: return "pass";
    case BKM_TUNE_REGRESS_REGRESSION: return "regression";
    case BKM_TUNE_REGRESS_INCOMPLETE: return "incomplete";
    }
    return "?";
}

void bkm_tune_regress_outcome_free(bkm_tune_regress_outcome_t *out)
{
    if (out == NULL)
        return;
    bkm_buf_free(&out->report);
    bkm_buf_free(&out->baseline);
    bkm_buf_free(&out->junit);
    bkm_buf_free(&out->notes);
    if (out->run)
        bkm_tune_regress_free(out->run);
    bkm_free(out->run);
    out->run = NULL;
}

/* What the run knows of this host: its topology, summary, fingerprint and JSON. */
typedef struct job_host {
    bkm_topo_t *topo;
    bkm_topo_summary_t ts;
    char fp[192];
    bkm_buf_t json;             /* {hostname, cpu_model, fingerprint, isa, topology} */
} job_host_t;

static int host_open(const bkm_tune_regress_job_t *job, job_host_t *h, bkm_err_t *err)
{
    bkm_json_w_t w;
    int rc;
    if ((rc = bkm_topo_open_host(&h->topo, err)) < 0)
        return rc;
    bkm_topo_summary(h->topo, &h->ts);
    snprintf(h->fp, sizeof h->fp, "%dp/%dn/%dc/%dt/%s", h->ts.packages, h->ts.numa_nodes, h->ts.cores, h->ts.pus,
             h->ts.isa);
    bkm_json_w_init(&w, &h->json, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "hostname"), bkm_json_str(&w, job->hostname ? job->hostname : "unknown");
    bkm_json_key(&w, "cpu_model"), bkm_json_str(&w, h->ts.cpu_model);
    bkm_json_key(&w, "fingerprint"), bkm_json_str(&w, h->fp);
    bkm_json_key(&w, "isa"), bkm_json_str(&w, h->ts.isa);
    bkm_json_key(&w, "topology");
    if (bkm_topo_to_json(h->topo, &w, NULL) < 0)
        bkm_json_null(&w);
    bkm_json_obj_end(&w);
    return h->json.oom ? bkm_err_set(err, BKM_ENOMEM, "out of memory") : BKM_OK;
}

/* The suite (bkm_tune_regress_plan) of @p job on this host; a baseline of another machine is
 * refused: its timings are not comparable here. */
static int job_plan(const bkm_tune_regress_job_t *job, const job_host_t *h, bkm_tune_regress_cfg_t *cfg,
                    bkm_tune_regress_t *r, bkm_err_t *err)
{
    cfg->pus = h->ts.allowed_pus;
    cfg->threads = job->threads;
    cfg->params = job->params;
    cfg->n_params = job->n_params;
    cfg->workloads = job->workloads;
    cfg->processes = job->processes;
    cfg->processes_max = job->processes_max;
    cfg->threshold = job->threshold;
    cfg->alpha = job->alpha;
    cfg->seed = job->seed;
    cfg->base = job->base;
    cfg->stop = job->stop;
    cfg->progress = job->progress;
    cfg->progress_ud = job->progress_ud;
    if (bkm_tune_regress_plan(r, cfg, job->baseline_text, err) < 0) {   /* refused, whatever the status */
        if (job->baseline_path)
            bkm_err_prefix(err, "%s", job->baseline_path);
        if (err)
            err->code = BKM_EINVAL;
        return BKM_EINVAL;
    }
    if (job->baseline_path && strcmp(r->ref_fingerprint, h->fp) != 0)
        return bkm_err_set(err, BKM_ENOTSUP, "baseline %s was recorded on %s (%s, topology/ISA %s); this host is %s "
                           "(topology/ISA %s): its timings are not comparable here. Record a baseline on this kind "
                           "of machine (tune regress --record -o FILE), or use --against OTHER_TUNE",
                           job->baseline_path, r->ref_host, r->ref_cpu, r->ref_fingerprint, h->ts.cpu_model, h->fp);
    return BKM_OK;
}

/* An MPI workload (fmnist-sgd) in the suite: both builds' MPI trials get the launcher. */
static int job_launcher(const bkm_tune_regress_job_t *job, const bkm_tune_regress_t *r, bkm_tune_runner_t *runner,
                        bkm_tune_runner_t *ref, char *launcher, size_t n, bkm_err_t *err)
{
    for (size_t i = 0; i < r->n_wl; i++)
        if (r->wl[i].spec.ranks > 0) {
            int rc = bkm_tune_launcher_choose(runner, job->path, job->slurm_job_id, launcher, n, err);
            if (rc < 0) {
                bkm_err_prefix(err, "workload %s runs as an MPI job and needs an MPI launcher (or leave %s out of "
                               "--workloads)", r->wl[i].name, r->wl[i].name);
                return rc;
            }
            ref->launcher = runner->launcher;
            ref->slurm_job_id = runner->slurm_job_id;
            return BKM_OK;
        }
    return BKM_OK;
}

/* Every workload's spec against this host, before any process starts. */
static int job_specs_check(const bkm_tune_regress_job_t *job, const bkm_tune_regress_t *r, const job_host_t *h,
                           bkm_err_t *err)
{
    for (size_t i = 0; i < r->n_wl; i++) {
        const bkm_tune_trial_spec_t *sp = &r->wl[i].spec;
        int rc = BKM_OK;
        /* an MPI job's workload is no registered kernel: its worker checks the training
         * parameters; here the spec, and a core of its own per rank and thread */
        if (sp->ranks > 0 && (rc = bkm_tune_trial_spec_validate(sp, err)) == BKM_OK &&
            (long)sp->ranks * sp->threads > h->ts.allowed_pus)
            rc = bkm_err_set(err, BKM_EINVAL, "%d ranks x %d threads need more than the %d PUs this process may use",
                             sp->ranks, sp->threads, h->ts.allowed_pus);
        if (sp->ranks == 0 && r->wl[i].program)
            rc = job->program ? bkm_tune_program_trial_check(job->program, sp, h->topo, NULL, err)
                              : bkm_err_set(err, BKM_EINVAL, "no program given");
        else if (sp->ranks == 0)
            rc = bkm_tune_trial_check(sp, h->topo, err);
        if (rc < 0) {   /* whatever the check's status: the workload is refused (exit 2) */
            bkm_err_prefix(err, "workload %s", r->wl[i].name);
            if (err)
                err->code = BKM_EINVAL;
            return BKM_EINVAL;
        }
    }
    return BKM_OK;
}

/* --record: the baseline, unless a workload has fewer than 3 process values. */
static int record_finish(const bkm_tune_regress_job_t *job, const job_host_t *h, bkm_tune_regress_outcome_t *out,
                         bkm_err_t *err)
{
    const bkm_tune_regress_t *r = out->run;
    size_t bad = 0;
    for (size_t i = 0; i < r->n_wl; i++)
        if (r->wl[i].n < 3) {
            bkm_buf_printf(&out->notes, "%s: only %zu process values: %s\n", r->wl[i].name, r->wl[i].n,
                           r->wl[i].error);
            bad++;
        }
    if (bad)
        return bkm_err_set(err, BKM_EDEP, "baseline not written");
    bkm_tune_regress_baseline_json(r, job->program, bkm_buf_str(&h->json), job->revision, job->when, &out->baseline);
    if (job->program)
        snprintf(out->summary, sizeof out->summary, "program %s (%s) x %d runs, host %s, revision %s",
                 r->wl[0].name, r->runtime, r->processes, h->fp, job->revision);
    else
        snprintf(out->summary, sizeof out->summary, "%zu workloads x %d processes, host %s, revision %s", r->n_wl,
                 r->processes, h->fp, job->revision);
    out->verdict = BKM_TUNE_REGRESS_RECORDED;
    return out->baseline.oom ? bkm_err_set(err, BKM_ENOMEM, "out of memory") : BKM_OK;
}

/* The gate's history, for `tune report`; a run that cannot be stored is a warning in the notes. */
static void gate_store(const bkm_tune_regress_job_t *job, const job_host_t *h, const char *reference,
                       const char *results, bkm_tune_regress_outcome_t *out)
{
    bkm_db_t *db = NULL;
    bkm_db_gate_run_t g = {.mode = job->against ? "ab" : "baseline", .fingerprint = h->fp,
                           .hostname = job->hostname ? job->hostname : "unknown", .git_revision = job->revision,
                           .reference = reference, .threshold = job->threshold, .alpha = job->alpha,
                           .regressions = out->regressions, .verdict = bkm_tune_regress_verdict_name(out->verdict),
                           .results_json = results};
    bkm_err_t e2 = {0};
    if (bkm_file_check_regular_or_absent(job->db_path, "results database", &e2) < 0 ||
        bkm_db_open(&db, job->db_path, BKM_DB_CREATE, &e2) < 0 || bkm_db_gate_store(db, &g, &e2) < 0)
        bkm_buf_printf(&out->notes, "warning: the run was not stored in %s: %s\n", job->db_path, e2.msg);
    bkm_db_close(db);
}

/* A check's report: the JSON document, or the table between its head and verdict lines. */
static void check_report(const bkm_tune_regress_job_t *job, const job_host_t *h, const char *reference,
                         const char *results, bkm_tune_regress_outcome_t *out)
{
    const char *verdict = bkm_tune_regress_verdict_name(out->verdict);
    if (job->json) {
        bkm_json_w_t w;
        bkm_json_w_init(&w, &out->report, 1);
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "verdict"), bkm_json_str(&w, verdict);
        bkm_json_key(&w, "regressions"), bkm_json_int(&w, out->regressions);
        bkm_json_key(&w, "mode"), bkm_json_str(&w, job->against ? "ab" : "baseline");
        bkm_json_key(&w, "reference"), bkm_json_str(&w, reference);
        bkm_json_key(&w, "revision"), bkm_json_str(&w, job->revision);
        bkm_json_key(&w, "host"), bkm_json_raw(&w, bkm_buf_str(&h->json));
        bkm_json_key(&w, "threshold"), bkm_json_double(&w, job->threshold);
        bkm_json_key(&w, "alpha"), bkm_json_double(&w, job->alpha);
        bkm_json_key(&w, "results"), bkm_json_raw(&w, results);
        bkm_json_obj_end(&w);
        bkm_buf_puts(&out->report, "\n");
        return;
    }
    bkm_buf_printf(&out->report, "tune regress: %s vs %s on %s (%s)\n", job->revision, reference, h->fp,
                   h->ts.cpu_model);
    if (job->program)
        bkm_buf_printf(&out->report, "program: %s (%s), executable sha256 %.16s..., %s\n", job->program->argv[0],
                       out->run->runtime, out->run->exe_sha256,
                       strcmp(out->run->exe_sha256, out->run->ref_exe_sha256) == 0
                           ? "the one the baseline ran"
                           : "not the one the baseline ran (a new build of it: that is what this checks)");
    bkm_tune_regress_table(out->run, &out->report);
    bkm_buf_printf(&out->report, "verdict: %s (%d regression(s))\n", verdict, out->regressions);
}

/* A check: the comparison, its verdict, the JUnit XML, the gate's history and the report. */
static int check_finish(const bkm_tune_regress_job_t *job, const job_host_t *h, bkm_tune_regress_outcome_t *out,
                        bkm_err_t *err)
{
    bkm_tune_regress_t *r = out->run;
    bkm_json_w_t w;
    bkm_buf_t res;
    size_t untested = 0;
    char reference[PATH_MAX + 160];
    int rc;
    if ((rc = bkm_tune_regress_compare(r, job->threshold, job->alpha, err)) < 0)
        return rc;
    for (size_t i = 0; i < r->n_wl; i++)
        untested += !r->wl[i].tested;
    out->regressions = r->regressions;
    out->verdict = r->regressions ? BKM_TUNE_REGRESS_REGRESSION
                   : untested     ? BKM_TUNE_REGRESS_INCOMPLETE
                                  : BKM_TUNE_REGRESS_PASS;
    if (job->baseline_path)
        snprintf(reference, sizeof reference, "%s (revision %s, %s)", job->baseline_path, r->ref_revision,
                 r->ref_created);
    else
        snprintf(reference, sizeof reference, "%s", job->against);
    bkm_buf_init(&res);
    bkm_json_w_init(&w, &res, 0);
    bkm_tune_regress_results_json(r, &w);
    if (job->junit)
        bkm_tune_regress_junit(r, &out->junit);
    gate_store(job, h, reference, bkm_buf_str(&res), out);
    check_report(job, h, reference, bkm_buf_str(&res), out);
    rc = res.oom || out->report.oom || out->junit.oom ? bkm_err_set(err, BKM_ENOMEM, "out of memory") : BKM_OK;
    bkm_buf_free(&res);
    return rc;
}

int bkm_tune_regress_job_run(const bkm_tune_regress_job_t *job, bkm_tune_regress_outcome_t *out, bkm_err_t *err)
{
    bkm_tune_regress_cfg_t cfg;
    bkm_tune_runner_t runner, ref, prog;
    job_host_t h;
    char launcher[PATH_MAX];
    int rc;
    memset(out, 0, sizeof *out);
    memset(&h, 0, sizeof h);
    memset(&cfg, 0, sizeof cfg);
    bkm_buf_init(&out->report), bkm_buf_init(&out->baseline), bkm_buf_init(&out->junit), bkm_buf_init(&out->notes);
    bkm_buf_init(&h.json);
    if (job->runner == NULL)
        return bkm_err_set(err, BKM_EINVAL, "regress: no runner");
    runner = *job->runner;
    runner.stop = job->stop;
    ref = runner;
    ref.worker_path = job->against;
    prog = runner;
    prog.program = job->program;
    runner.program = NULL;
    cfg.runner = &runner;
    cfg.reference = job->against ? &ref : NULL;
    cfg.program = job->program ? &prog : NULL;
    if ((rc = bkm_tune_regress_job_check(job, err)) < 0 || (rc = bkm_tune_env_check(job->environ, err)) < 0 ||
        (rc = host_open(job, &h, err)) < 0)
        goto out;
    if ((out->run = bkm_calloc(1, sizeof *out->run)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = job_plan(job, &h, &cfg, out->run, err)) < 0 ||
        (rc = job_launcher(job, out->run, &runner, &ref, launcher, sizeof launcher, err)) < 0 ||
        (rc = job_specs_check(job, out->run, &h, err)) < 0 || (rc = bkm_tune_regress_measure(out->run, &cfg, err)) < 0)
        goto out;
    rc = job->record ? record_finish(job, &h, out, err) : check_finish(job, &h, out, err);
out:
    bkm_topo_close(h.topo);
    bkm_buf_free(&h.json);
    return rc;
}
