/* SPDX-License-Identifier: MIT */
/* Node profiles: built-in Cori Haswell and KNL and NERSC Perlmutter CPU topologies (hwloc synthetic
 * strings with the sites' OS numbering) with their sites' batch rules, this host ("auto"), and
 * user profiles read from a key = value file or an hwloc XML file. */
#include "affinity_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const builtin_names[] = {"auto", "haswell", "knl", "perlmutter-cpu", NULL};

const char *const *bkm_profile_builtin_names(void) { return builtin_names; }

const char *bkm_batch_c_rule_name(int rule)
{
    switch (rule) {
    case BKM_BATCH_C_THREADS: return "threads";
    case BKM_BATCH_C_CORES: return "cores";
    default: return "node";
    }
}

const char *bkm_batch_launcher_name(int launcher)
{
    return launcher == BKM_BATCH_LAUNCH_MPIEXEC ? "mpiexec" : "srun";
}

/* Append "pu:<smt>(indexes=...)" where core c (global, 0-based, of n_cores) has the PUs
 * c, c + n_cores, c + 2*n_cores, ...: the numbering of Cori (PU i + 32 / i + 68k are siblings)
 * and of Perlmutter (PU N + 128 is the sibling of N). */
static int append_pu_level(char *dst, size_t cap, int n_cores, int smt)
{
    size_t len = strlen(dst);
    int n = snprintf(dst + len, cap - len, "pu:%d(indexes=", smt);
    if (n < 0 || (size_t)n >= cap - len)
        return BKM_EINVAL;
    len += (size_t)n;
    for (int c = 0; c < n_cores; c++)
        for (int k = 0; k < smt; k++) {
            n = snprintf(dst + len, cap - len, "%s%d", (c == 0 && k == 0) ? "" : ",", c + k * n_cores);
            if (n < 0 || (size_t)n >= cap - len)
                return BKM_EINVAL;
            len += (size_t)n;
        }
    n = snprintf(dst + len, cap - len, ")");
    return (n < 0 || (size_t)n >= cap - len) ? BKM_EINVAL : BKM_OK;
}

static void set_list(int *dst, int *n, int cap, const int *src, int n_src)
{
    *n = n_src < cap ? n_src : cap;
    memcpy(dst, src, (size_t)*n * sizeof(*dst));
}

/* The batch rules of a profile that names none: no site, no -q/-A/-p, NERSC's -c rule and
 * --cpu-bind (whole cores per rank), srun with --mpi=pmi2 (what MPICH needs under srun), and a
 * Slurm that does not pass the job's -c to srun (22.05 and later). */
static void rules_default(bkm_batch_rules_t *r)
{
    memset(r, 0, sizeof(*r));
    r->c_rule = BKM_BATCH_C_NODE;
    snprintf(r->cpu_bind, sizeof(r->cpu_bind), "auto");
    r->launcher = BKM_BATCH_LAUNCH_SRUN;
    snprintf(r->mpi, sizeof(r->mpi), "pmi2");
    r->srun_inherits_c = 0;
}

/* NERSC's published rules (docs.nersc.gov, jobs/affinity): -q regular, -c = the node's CPUs
 * shared evenly in whole cores, --cpu-bind=cores (threads when the ranks outnumber the cores),
 * OMP_PLACES=threads OMP_PROC_BIND=spread. */
static void rules_nersc(bkm_batch_rules_t *r, const char *mpi, int srun_inherits_c)
{
    rules_default(r);
    snprintf(r->site, sizeof(r->site), "NERSC");
    snprintf(r->qos, sizeof(r->qos), "regular");
    snprintf(r->mpi, sizeof(r->mpi), "%s", mpi);
    r->srun_inherits_c = srun_inherits_c;
    snprintf(r->prior, sizeof(r->prior), "OMP_PLACES=threads OMP_PROC_BIND=spread");
    snprintf(r->prior_source, sizeof(r->prior_source), "NERSC, https://docs.nersc.gov/jobs/affinity/");
}

/* A built-in node: the synthetic levels above the PUs, then n_cores x smt PUs numbered as the
 * site's Linux numbers them (core c has PUs c, c + n_cores, ...). */
typedef struct builtin_node {
    const char *name, *description, *levels, *isa, *constraint;
    int n_cores, smt;
    int threads[16], n_threads;
    const char *mpi;       /* srun --mpi ("" = the site's default) */
    int srun_inherits_c;   /* the site's Slurm passes the job's -c to srun */
} builtin_node_t;

static const builtin_node_t builtin_nodes[] = {
    /* Cori (retired 2023): Slurm before 22.05, so srun inherited -c; bkm's scripts set it anyway */
    {"haswell", "Cori Haswell: 2 x Xeon E5-2698 v3, 2 sockets x 16 cores x 2 HT, PU i+32 is the sibling of i",
     "pack:2 [numa(memory=64GiB)] l3:1(size=40MiB) l2:16(size=256KiB) l1d:1(size=32KiB) core:1 ", "avx2",
     "haswell", 32, 2, {1, 2, 4, 8, 16, 32, 64}, 7, "pmi2", 1},
    {"knl",
     "Cori KNL: Xeon Phi 7250 quad,cache, 68 cores in 34 tiles sharing 1 MiB L2, 4 HT, "
     "PU i+68k are the siblings of core i",
     "pack:1 [numa(memory=96GiB)] l2:34(size=1MiB) l1d:2(size=32KiB) core:1 ", "avx512", "knl,quad,cache", 68, 4,
     {1, 2, 4, 8, 16, 32, 64, 68, 136, 272}, 10, "pmi2", 1},
    /* Perlmutter: 4 NUMA nodes (NPS4) of 2 L3 groups (CCX) of 8 cores per socket; Slurm 22.05+;
     * srun's default MPI plugin there is cray_shasta (Cray MPICH) */
    {"perlmutter-cpu",
     "NERSC Perlmutter CPU node: 2 x AMD EPYC 7763 (Zen 3), 2 sockets x 64 cores x 2 HT, PU N+128 is the "
     "sibling of N, 8 NUMA nodes (4 per socket), 16 L3 of 32 MiB (8 cores each), 512 GB; "
     "docs.nersc.gov/systems/perlmutter/architecture/ and docs.nersc.gov/jobs/affinity/",
     "pack:2 group:4 [numa(memory=64GiB)] l3:2(size=32MiB) l2:8(size=512KiB) l1d:1(size=32KiB) core:1 ", "avx2",
     "cpu", 128, 2, {1, 2, 4, 8, 16, 32, 64, 128, 256}, 9, "cray_shasta", 0},
};

static void profile_builtin_node(const builtin_node_t *c, bkm_node_profile_t *p)
{
    static const int bt[] = {0, 1, 200, -1};
    snprintf(p->name, sizeof(p->name), "%s", c->name);
    snprintf(p->description, sizeof(p->description), "%s", c->description);
    snprintf(p->synthetic, sizeof(p->synthetic), "%s", c->levels);
    append_pu_level(p->synthetic, sizeof(p->synthetic), c->n_cores, c->smt);
    snprintf(p->isa, sizeof(p->isa), "%s", c->isa);
    snprintf(p->slurm_constraint, sizeof(p->slurm_constraint), "%s", c->constraint);
    rules_nersc(&p->batch, c->mpi, c->srun_inherits_c);
    set_list(p->threads, &p->n_threads, 16, c->threads, c->n_threads);
    set_list(p->blocktime_ms, &p->n_blocktime, 8, bt, (int)(sizeof(bt) / sizeof(bt[0])));
}

/* "auto": this host. Thread counts are the powers of two below the online CPU count, then it. */
static void profile_auto(bkm_node_profile_t *p)
{
    static const int bt[] = {0, 1, 200, -1};
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    snprintf(p->name, sizeof(p->name), "auto");
    snprintf(p->description, sizeof(p->description), "this host, discovered by hwloc");
    rules_default(&p->batch);
    p->n_threads = 0;
    for (long t = 1; t < ncpu && p->n_threads < 15; t *= 2)
        p->threads[p->n_threads++] = (int)t;
    p->threads[p->n_threads++] = (int)ncpu;
    set_list(p->blocktime_ms, &p->n_blocktime, 8, bt, (int)(sizeof(bt) / sizeof(bt[0])));
}

/* "auto, haswell, knl, perlmutter-cpu" */
static void builtin_list(char *dst, size_t cap)
{
    size_t len = 0;
    dst[0] = '\0';
    for (int i = 0; builtin_names[i] && len < cap; i++)
        len += (size_t)snprintf(dst + len, cap - len, "%s%s", i ? ", " : "", builtin_names[i]);
}

int bkm_profile_builtin(const char *name, bkm_node_profile_t *p, bkm_err_t *err)
{
    char known[128];
    if (!p)
        return bkm_err_set(err, BKM_EINVAL, "bkm_profile_builtin: profile is NULL");
    memset(p, 0, sizeof(*p));
    builtin_list(known, sizeof(known));
    if (!name)
        return bkm_err_set(err, BKM_EINVAL, "node profile name is NULL (known: %s)", known);
    if (strcmp(name, "auto") == 0) {
        profile_auto(p);
        return BKM_OK;
    }
    for (size_t i = 0; i < sizeof(builtin_nodes) / sizeof(builtin_nodes[0]); i++)
        if (strcmp(name, builtin_nodes[i].name) == 0) {
            profile_builtin_node(&builtin_nodes[i], p);
            return BKM_OK;
        }
    return bkm_err_set(err, BKM_EINVAL, "unknown node profile '%.100s' (known: %s)", name, known);
}

/* ---------------------------------------------------------------------------------------- */
/* Profile files                                                                             */

#define PROFILE_LINE_MAX 8192 /* bytes in one key = value line */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Copy @p s for an error message: at most cap-1 bytes, non-printable bytes as '?'. */
static void printable(char *dst, size_t cap, const char *s)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        dst[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
    dst[i] = '\0';
}

/* Parse "1,2,4" (or with "infinite" = -1 when @p allow_inf) into @p out (at most @p cap). */
static int parse_int_list(const char *val, int *out, int *n, int cap, long long min, long long max,
                          int allow_inf, const char *key, const char *where, bkm_err_t *err)
{
    char buf[512];
    if (snprintf(buf, sizeof(buf), "%s", val) >= (int)sizeof(buf))
        return bkm_err_set(err, BKM_EINVAL, "%s: value of '%s' is too long", where, key);
    *n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        tok = trim(tok);
        long long v;
        if (allow_inf && strcmp(tok, "infinite") == 0)
            v = -1;
        else if (bkm_parse_int(tok, min, max, &v) != BKM_OK)
            return bkm_err_set(err, BKM_EINVAL, "%s: bad %s value '%s' (expected an integer in %lld..%lld%s)",
                               where, key, tok, min, max, allow_inf ? " or 'infinite'" : "");
        if (*n >= cap)
            return bkm_err_set(err, BKM_EINVAL, "%s: too many %s values (at most %d)", where, key, cap);
        out[(*n)++] = (int)v;
    }
    if (*n == 0)
        return bkm_err_set(err, BKM_EINVAL, "%s: '%s' has no values", where, key);
    return BKM_OK;
}

static int copy_value(char *dst, size_t cap, const char *val, const char *key, const char *where, bkm_err_t *err)
{
    if (!*val)
        return bkm_err_set(err, BKM_EINVAL, "%s: '%s' is empty", where, key);
    if (snprintf(dst, cap, "%s", val) >= (int)cap)
        return bkm_err_set(err, BKM_EINVAL, "%s: value of '%s' is too long (at most %zu bytes)", where, key,
                           cap - 1);
    return BKM_OK;
}

static int valid_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
            return 0;
    return 1;
}

/* Is the text an hwloc XML document? (first non-blank character is '<') */
static int looks_like_xml(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '<';
}

static int profile_from_xml(const char *path, bkm_node_profile_t *p, bkm_err_t *err)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char name[sizeof(p->name)];
    snprintf(name, sizeof(name), "%s", base);
    char *dot = strstr(name, ".xml");
    if (dot && dot != name)
        *dot = '\0';
    /* the name a profile file would be refused for is refused here too: it is stored with every
     * sweep and written into batch scripts */
    if (!valid_name(name) || strlen(base) >= sizeof(p->name))
        return bkm_err_set(err, BKM_EINVAL, "hwloc XML '%.300s': its file name '%.100s' is not a node name "
                           "(letters, digits, '-', '_', '.'; < %zu chars): rename it, or name it in a profile "
                           "file (name = ..., xml = ...)", path, base, sizeof(p->name));
    snprintf(p->name, sizeof(p->name), "%s", name);
    snprintf(p->description, sizeof(p->description), "hwloc XML %.140s", base);
    if (snprintf(p->xml_path, sizeof(p->xml_path), "%s", path) >= (int)sizeof(p->xml_path))
        return bkm_err_set(err, BKM_EINVAL, "hwloc XML path '%.200s...' is too long", path);
    return BKM_OK;
}

/* Resolve @p rel against the directory of @p file into @p dst. */
static int resolve_path(char *dst, size_t cap, const char *file, const char *rel)
{
    const char *slash = strrchr(file, '/');
    int n;
    if (rel[0] == '/' || !slash)
        n = snprintf(dst, cap, "%s", rel);
    else
        n = snprintf(dst, cap, "%.*s/%s", (int)(slash - file), file, rel);
    return (n < 0 || (size_t)n >= cap) ? BKM_EINVAL : BKM_OK;
}

/* A Slurm option value written unquoted into a script ("#SBATCH -q VALUE"): letters, digits and
 * _.,:+-@, and for a constraint also &|[]* (Slurm's feature operators). */
static int slurm_word_ok(const char *v, int constraint)
{
    if (!*v || strlen(v) > 63)
        return 0;
    for (const char *c = v; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("_.,:+-@", *c) && !(constraint && strchr("&|[]*", *c)))
            return 0;
    return 1;
}

/* Free text of a profile (description, site, source): printable, no control character. */
static int text_ok(const char *v)
{
    for (const unsigned char *c = (const unsigned char *)v; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return 0;
    return 1;
}

static int choice(const char *val, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(val, names[i]) == 0) {
            *out = i;
            return 1;
        }
    return 0;
}

/* Split the prior text "NAME=value NAME=value" into @p env (pointers into @p store). */
static int prior_split(const char *text, bkm_aff_env_t *env, char *store, size_t cap, const char *where,
                       bkm_err_t *err)
{
    char *save = NULL;
    memset(env, 0, sizeof(*env));
    if (snprintf(store, cap, "%s", text) >= (int)cap)
        return bkm_err_set(err, BKM_EINVAL, "%s: prior '%.60s...' is too long", where, text);
    for (char *w = strtok_r(store, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(w, '=');
        const char **slot = NULL;
        if (eq == NULL || eq == w || eq[1] == '\0')
            return bkm_err_set(err, BKM_EINVAL, "%s: prior: '%.60s' is not NAME=value", where, w);
        *eq = '\0';
        if (strcmp(w, "OMP_PROC_BIND") == 0)
            slot = &env->omp_proc_bind;
        else if (strcmp(w, "OMP_PLACES") == 0)
            slot = &env->omp_places;
        else if (strcmp(w, "KMP_AFFINITY") == 0)
            slot = &env->kmp_affinity;
        else if (strcmp(w, "KMP_BLOCKTIME") == 0)
            slot = &env->kmp_blocktime;
        if (slot == NULL)
            return bkm_err_set(err, BKM_EINVAL, "%s: prior: variable '%.40s' is not one a prior may set "
                               "(OMP_PROC_BIND, OMP_PLACES, KMP_AFFINITY, KMP_BLOCKTIME)", where, w);
        if (*slot != NULL)
            return bkm_err_set(err, BKM_EINVAL, "%s: prior: %s is given twice", where, w);
        *slot = eq + 1;
    }
    if (!env->omp_proc_bind && !env->omp_places && !env->kmp_affinity && !env->kmp_blocktime)
        return bkm_err_set(err, BKM_EINVAL, "%s: prior is empty", where);
    return BKM_OK;
}

/* A prior as the strict parsers see it: every value valid, none cancelling another (KMP_AFFINITY
 * with a type beside OMP_PLACES/OMP_PROC_BIND: libomp applies them in environment order); then
 * stored as "NAME=value ...". */
static int prior_set(bkm_batch_rules_t *r, const char *val, const char *where, bkm_err_t *err)
{
    char store[sizeof(r->prior)];
    bkm_aff_env_t env;
    bkm_aff_setting_t st;
    bkm_aff_kmp_t kmp;
    bkm_err_t e = {0};
    size_t len = 0;
    int rc;
    if ((rc = prior_split(val, &env, store, sizeof(store), where, err)) < 0)
        return rc;
    if (bkm_aff_setting_resolve(&env, &st, &e) < 0)
        return bkm_err_set(err, BKM_EINVAL, "%s: prior: %s", where, e.msg);
    if (st.n_ignored > 0 || (env.kmp_affinity && (env.omp_places || env.omp_proc_bind) &&
                             bkm_aff_kmp_parse(env.kmp_affinity, &kmp, NULL) == BKM_OK &&
                             kmp.type != BKM_AFF_TYPE_UNSET))
        return bkm_err_set(err, BKM_EINVAL, "%s: prior: KMP_AFFINITY with a type and OMP_PLACES/OMP_PROC_BIND "
                           "cancel each other: give one of the two", where);
    /* kept in the site's order, one blank between the words */
    r->prior[0] = '\0';
    for (const char *w = val; *w;) {
        size_t n;
        while (*w == ' ' || *w == '\t')
            w++;
        n = strcspn(w, " \t");
        if (n > 0)
            len += (size_t)snprintf(r->prior + len, sizeof(r->prior) - len, "%s%.*s", len ? " " : "", (int)n, w);
        w += n;
    }
    return BKM_OK;
}

int bkm_profile_prior_env(const bkm_node_profile_t *p, bkm_aff_env_t *env, char *store, size_t cap, bkm_err_t *err)
{
    if (!p || !env || !store)
        return bkm_err_set(err, BKM_EINVAL, "bkm_profile_prior_env: NULL argument");
    if (!p->batch.prior[0])
        return bkm_err_set(err, BKM_EINVAL, "node profile '%s' names no site-recommended setting (no 'prior')",
                           p->name);
    return prior_split(p->batch.prior, env, store, cap, p->name, err);
}

/* The keys of a key = value profile, in the order the documentation lists them. */
enum {
    K_NAME, K_DESCRIPTION, K_SYNTHETIC, K_XML, K_ISA, K_CONSTRAINT, K_SITE, K_QOS, K_ACCOUNT, K_PARTITION,
    K_CPUS_PER_TASK, K_CPU_BIND, K_LAUNCHER, K_MPI, K_SRUN_INHERITS, K_PRIOR, K_PRIOR_SOURCE, K_THREADS,
    K_BLOCKTIME, K_COUNT
};
static const char *const key_names[] = {
    "name", "description", "synthetic", "xml", "isa", "constraint", "site", "qos", "account", "partition",
    "cpus_per_task", "cpu_bind", "launcher", "mpi", "srun_inherits_c", "prior", "prior_source", "threads",
    "blocktime", NULL};

/* Which key @p key is (slurm_constraint is constraint's former name); -1 when unknown. */
static int key_index(const char *key)
{
    int k;
    if (strcmp(key, "slurm_constraint") == 0)
        return K_CONSTRAINT;
    return choice(key, key_names, &k) ? k : -1;
}

static int apply_key(bkm_node_profile_t *p, const char *path, int key, const char *val, const char *where,
                     bkm_err_t *err)
{
    static const char *const isas[] = {"avx512", "avx2", "generic", NULL};
    static const char *const c_rules[] = {"node", "threads", "cores", NULL};
    static const char *const binds[] = {"auto", "cores", "threads", "sockets", "ldoms", "none", NULL};
    static const char *const launchers[] = {"srun", "mpiexec", NULL};
    static const char *const yes_no[] = {"no", "yes", NULL};
    bkm_batch_rules_t *r = &p->batch;
    const char *kn = key_names[key];
    int v;
    switch (key) {
    case K_NAME:
        if (!valid_name(val) || strlen(val) >= sizeof(p->name))
            return bkm_err_set(err, BKM_EINVAL, "%s: bad name '%.64s' (letters, digits, '-', '_', '.'; < %zu chars)",
                               where, val, sizeof(p->name));
        return copy_value(p->name, sizeof(p->name), val, kn, where, err);
    case K_DESCRIPTION:
        return copy_value(p->description, sizeof(p->description), val, kn, where, err);
    case K_SYNTHETIC:
        return copy_value(p->synthetic, sizeof(p->synthetic), val, kn, where, err);
    case K_XML:
        if (!*val)
            return bkm_err_set(err, BKM_EINVAL, "%s: 'xml' is empty", where);
        if (resolve_path(p->xml_path, sizeof(p->xml_path), path, val) < 0)
            return bkm_err_set(err, BKM_EINVAL, "%s: xml path '%.200s' is too long", where, val);
        return BKM_OK;
    case K_ISA:
        if (choice(val, isas, &v))
            return copy_value(p->isa, sizeof(p->isa), val, kn, where, err);
        return bkm_err_set(err, BKM_EINVAL, "%s: unknown isa '%.64s' (known: avx512, avx2, generic)", where, val);
    case K_CONSTRAINT:
        if (!slurm_word_ok(val, 1))
            return bkm_err_set(err, BKM_EINVAL, "%s: bad constraint '%.64s' (a Slurm feature expression of "
                               "letters, digits, _.,:+-@ and &|[]*, at most 63 characters)", where, val);
        return copy_value(p->slurm_constraint, sizeof(p->slurm_constraint), val, kn, where, err);
    case K_QOS:
    case K_ACCOUNT:
    case K_PARTITION: {
        char *dst = key == K_QOS ? r->qos : key == K_ACCOUNT ? r->account : r->partition;
        size_t cap = key == K_QOS ? sizeof(r->qos) : key == K_ACCOUNT ? sizeof(r->account) : sizeof(r->partition);
        if (!slurm_word_ok(val, 0) || strlen(val) >= cap)
            return bkm_err_set(err, BKM_EINVAL, "%s: bad %s '%.64s' (a Slurm name: letters, digits and _.,:+-@, "
                               "at most %zu characters)", where, kn, val, cap - 1);
        return copy_value(dst, cap, val, kn, where, err);
    }
    case K_MPI:
        if (strcmp(val, "default") == 0) { /* the site's own default plugin: no --mpi */
            r->mpi[0] = '\0';
            return BKM_OK;
        }
        if (!slurm_word_ok(val, 0) || strlen(val) >= sizeof(r->mpi))
            return bkm_err_set(err, BKM_EINVAL, "%s: bad mpi '%.64s' (an srun --mpi plugin such as pmi2, pmix, "
                               "cray_shasta, none, or 'default' for the site's own)", where, val);
        return copy_value(r->mpi, sizeof(r->mpi), val, kn, where, err);
    case K_SITE:
    case K_PRIOR_SOURCE:
        if (!text_ok(val))
            return bkm_err_set(err, BKM_EINVAL, "%s: %s holds a control character", where, kn);
        return copy_value(key == K_SITE ? r->site : r->prior_source, key == K_SITE ? sizeof(r->site)
                          : sizeof(r->prior_source), val, kn, where, err);
    case K_CPUS_PER_TASK:
        if (!choice(val, c_rules, &r->c_rule))
            return bkm_err_set(err, BKM_EINVAL, "%s: bad cpus_per_task '%.64s' (node: the node's CPUs shared "
                               "evenly in whole cores; threads: one CPU per OpenMP thread; cores: one core per "
                               "thread)", where, val);
        return BKM_OK;
    case K_CPU_BIND:
        if (!choice(val, binds, &v))
            return bkm_err_set(err, BKM_EINVAL, "%s: bad cpu_bind '%.64s' (auto, cores, threads, sockets, ldoms, "
                               "none)", where, val);
        return copy_value(r->cpu_bind, sizeof(r->cpu_bind), val, kn, where, err);
    case K_LAUNCHER:
        if (!choice(val, launchers, &r->launcher))
            return bkm_err_set(err, BKM_EINVAL, "%s: bad launcher '%.64s' (srun, mpiexec)", where, val);
        return BKM_OK;
    case K_SRUN_INHERITS:
        if (!choice(val, yes_no, &r->srun_inherits_c))
            return bkm_err_set(err, BKM_EINVAL, "%s: bad srun_inherits_c '%.64s' (yes: Slurm before 22.05, srun "
                               "takes the job's --cpus-per-task; no: 22.05 and later)", where, val);
        return BKM_OK;
    case K_PRIOR:
        return prior_set(r, val, where, err);
    case K_THREADS:
        return parse_int_list(val, p->threads, &p->n_threads, 16, 1, BKM_CPUSET_MAX, 0, kn, where, err);
    case K_BLOCKTIME:
        return parse_int_list(val, p->blocktime_ms, &p->n_blocktime, 8, 0, INT_MAX, 1, kn, where, err);
    default:
        return bkm_err_set(err, BKM_EINVAL, "%s: unknown key", where);
    }
}

/* Format (one "key = value" per line; '#' starts a comment line; blank lines ignored; each key at
 * most once; docs/slurm.md "Node profile files" documents them):
 *   name = mynode                      required: letters, digits, '-', '_', '.'
 *   description = free text
 *   synthetic = pack:2 core:8 pu:2     hwloc synthetic description, or
 *   xml = mynode.xml                   hwloc XML (relative to the profile file's folder)
 *   isa = avx512 | avx2 | generic
 *   constraint = knl,quad,cache        #SBATCH -C (slurm_constraint: its former name)
 *   site = NERSC                       whose batch rules these are
 *   qos = regular, account = m1234, partition = debug    #SBATCH -q / -A / -p defaults
 *   cpus_per_task = node | threads | cores               the srun -c rule
 *   cpu_bind = auto | cores | threads | sockets | ldoms | none
 *   launcher = srun | mpiexec
 *   mpi = pmi2 | pmix | cray_shasta | ... | default      srun --mpi
 *   srun_inherits_c = yes | no         does the site's srun take the job's -c (Slurm < 22.05)
 *   prior = OMP_PLACES=threads OMP_PROC_BIND=spread      the site's recommended setting
 *   prior_source = where the site publishes it
 *   threads = 1,2,4,8                  at most 16 values
 *   blocktime = 0,200,infinite         KMP_BLOCKTIME in ms, at most 8 values
 * Exactly one of synthetic / xml. The topology is loaded once to check it. A file whose first
 * non-blank character is '<' is taken as an hwloc XML topology (`lstopo --of xml`). */
int bkm_profile_load_file(const char *path, bkm_node_profile_t *p, bkm_err_t *err)
{
    char *text = NULL, *s, *nl;
    size_t len = 0;
    bkm_topo_t *t = NULL;
    int rc = BKM_OK;
    char where[600];
    if (!path || !p)
        return bkm_err_set(err, BKM_EINVAL, "bkm_profile_load_file: NULL argument");
    memset(p, 0, sizeof(*p));
    rules_default(&p->batch);
    /* the file may be an hwloc XML topology: read it within the XML limit, then hold a
     * key = value file to its own */
    if ((rc = bkm_file_read_regular(path, "node profile", BKM_TOPO_XML_MAX_BYTES, &text, &len, err)) < 0)
        goto out;
    if (looks_like_xml(text)) {
        if ((rc = profile_from_xml(path, p, err)) < 0)
            goto out;
    } else {
        int lineno = 0, seen[K_COUNT] = {0};
        if (len > BKM_PROFILE_MAX_BYTES) {
            rc = bkm_err_set(err, BKM_EINVAL, "node profile '%.400s' is %zu bytes, more than the limit of %zu KiB for "
                             "a key = value profile", path, len, BKM_PROFILE_MAX_BYTES >> 10);
            goto out;
        }
        if (strlen(text) != len) {
            rc = bkm_err_set(err, BKM_EINVAL, "node profile '%.400s' holds a NUL byte (at offset %zu): not a text file",
                             path, strlen(text));
            goto out;
        }
        for (s = text; *s; s = nl ? nl + 1 : s + strlen(s)) {
            nl = strchr(s, '\n');
            if (nl)
                *nl = '\0';
            lineno++;
            snprintf(where, sizeof(where), "profile '%.400s' line %d", path, lineno);
            if (strlen(s) > PROFILE_LINE_MAX) {
                rc = bkm_err_set(err, BKM_EINVAL, "%s: line too long (at most %d bytes)", where, PROFILE_LINE_MAX);
                goto out;
            }
            char *line = trim(s);
            if (!*line || *line == '#')
                continue;
            char *eq = strchr(line, '=');
            if (!eq) {
                char shown[64];
                printable(shown, sizeof(shown), line);
                rc = bkm_err_set(err, BKM_EINVAL, "%s: expected 'key = value', got '%s'", where, shown);
                goto out;
            }
            *eq = '\0';
            const char *key = trim(line);
            int k = key_index(key);
            if (k < 0) {
                char shown[64];
                printable(shown, sizeof(shown), key);
                rc = bkm_err_set(err, BKM_EINVAL, "%s: unknown key '%s' (known: name, description, synthetic, xml, "
                                 "isa, constraint, site, qos, account, partition, cpus_per_task, cpu_bind, "
                                 "launcher, mpi, srun_inherits_c, prior, prior_source, threads, blocktime)",
                                 where, shown);
                goto out;
            }
            if (seen[k]) {
                rc = bkm_err_set(err, BKM_EINVAL, "%s: key '%s' is given twice (first on line %d)", where,
                                 key_names[k], seen[k]);
                goto out;
            }
            seen[k] = lineno;
            if ((rc = apply_key(p, path, k, trim(eq + 1), where, err)) < 0)
                goto out;
        }
        if (!p->name[0]) {
            rc = bkm_err_set(err, BKM_EINVAL, "profile '%.400s': missing 'name'", path);
            goto out;
        }
        if (!p->synthetic[0] == !p->xml_path[0]) {
            rc = bkm_err_set(err, BKM_EINVAL, "profile '%.400s': give exactly one of 'synthetic' or 'xml'", path);
            goto out;
        }
    }
    if ((rc = bkm_topo_open_profile(&t, p, err)) < 0) {
        bkm_err_prefix(err, "profile '%.400s'", path);
        goto out;
    }
    if (p->n_threads == 0) {
        /* Default sweep: powers of two up to the profile's PU count, then the PU count. */
        int n_pu = 0;
        bkm_topo_pus(t, &n_pu);
        for (int v = 1; v < n_pu && p->n_threads < 15; v *= 2)
            p->threads[p->n_threads++] = v;
        p->threads[p->n_threads++] = n_pu;
    }
    if (p->n_blocktime == 0) {
        static const int bt[] = {0, 1, 200, -1};
        set_list(p->blocktime_ms, &p->n_blocktime, 8, bt, 4);
    }
out:
    bkm_topo_close(t);
    bkm_free(text);
    return rc;
}

int bkm_topo_open_profile(bkm_topo_t **topo, const bkm_node_profile_t *p, bkm_err_t *err)
{
    int rc;
    if (!topo || !p)
        return bkm_err_set(err, BKM_EINVAL, "bkm_topo_open_profile: NULL argument");
    if (p->synthetic[0])
        rc = bkm_topo_open_synthetic(topo, p->synthetic, err);
    else if (p->xml_path[0])
        rc = bkm_topo_open_xml(topo, p->xml_path, err);
    else
        return bkm_topo_open_host(topo, err); /* "auto" */
    if (rc < 0)
        return rc;
    bkm__topo_set_origin(*topo, "profile", p->isa);
    return BKM_OK;
}

int bkm_profile_matches_host(const bkm_node_profile_t *p, const bkm_topo_t *host)
{
    if (!p || !host)
        return 0;
    if (!p->synthetic[0] && !p->xml_path[0])
        return 1; /* auto */
    bkm_topo_t *t = NULL;
    if (bkm_topo_open_profile(&t, p, NULL) < 0)
        return 0;
    bkm_topo_summary_t a, b;
    bkm_topo_summary(t, &a);
    bkm_topo_summary(host, &b);
    bkm_topo_close(t);
    if (a.packages != b.packages || a.cores != b.cores || a.pus != b.pus)
        return 0;
    return !p->isa[0] || strcmp(p->isa, b.isa) == 0;
}

int bkm_profile_resolve(const char *name_or_file, bkm_node_profile_t *p, bkm_err_t *err)
{
    bkm_err_t builtin_err = {0};
    if (!name_or_file || !p)
        return bkm_err_set(err, BKM_EINVAL, "bkm_profile_resolve: NULL argument");
    if (bkm_profile_builtin(name_or_file, p, &builtin_err) == BKM_OK)
        return BKM_OK;
    if (access(name_or_file, F_OK) != 0) {
        if (err)
            *err = builtin_err;
        return BKM_EINVAL;
    }
    return bkm_profile_load_file(name_or_file, p, err);
}

int bkm_topo_open_source(bkm_topo_t **topo, const bkm_topo_source_t *src, bkm_node_profile_t *p, bkm_err_t *err)
{
    bkm_node_profile_t *prof = p;
    int rc;
    if (!topo || !src)
        return bkm_err_set(err, BKM_EINVAL, "bkm_topo_open_source: NULL argument");
    *topo = NULL;
    if (!!src->node + !!src->profile + !!src->xml + !!src->synthetic > 1)
        return bkm_err_set(err, BKM_EINVAL,
                           "more than one topology source given (node, profile, xml, synthetic): give at most one");
    if (p)
        p->name[0] = '\0';
    if (src->xml)
        return bkm_topo_open_xml(topo, src->xml, err);
    if (src->synthetic)
        return bkm_topo_open_synthetic(topo, src->synthetic, err);
    if (prof == NULL && (prof = bkm_calloc(1, sizeof *prof)) == NULL)   /* ~9 KiB: not on the stack */
        return bkm_err_set(err, BKM_ENOMEM, "out of memory for a node profile");
    if (src->profile)
        rc = bkm_profile_load_file(src->profile, prof, err);
    else
        rc = bkm_profile_resolve(src->node ? src->node : "auto", prof, err);
    if (rc == BKM_OK)
        rc = bkm_topo_open_profile(topo, prof, err);
    if (prof != p)
        bkm_free(prof);
    return rc;
}
