/* SPDX-License-Identifier: MIT */
/* OpenMP runtime kinds, the variables each runtime reads, and detection results (their objects,
 * warnings, chains and JSON). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime_int.h"

static const char *const kind_names[BKM_AFF_RUNTIME_KINDS] = {"none", "libgomp", "libomp", "libiomp5", "unknown"};
static const char *const kind_titles[BKM_AFF_RUNTIME_KINDS] = {"no OpenMP runtime", "GNU OpenMP", "LLVM OpenMP",
                                                               "Intel OpenMP", "unknown runtime"};

const char *bkm_aff_runtime_kind_name(bkm_aff_runtime_kind_t kind)
{
    return (unsigned)kind < BKM_AFF_RUNTIME_KINDS ? kind_names[kind] : "unknown";
}

const char *bkm_aff_runtime_kind_title(bkm_aff_runtime_kind_t kind)
{
    return (unsigned)kind < BKM_AFF_RUNTIME_KINDS ? kind_titles[kind] : "unknown runtime";
}

int bkm_aff_runtime_kind_parse(const char *s, bkm_aff_runtime_kind_t *kind, bkm_err_t *err)
{
    static const struct {
        const char *name;
        bkm_aff_runtime_kind_t kind;
    } alias[] = {{"gomp", BKM_AFF_RUNTIME_LIBGOMP}, {"gnu", BKM_AFF_RUNTIME_LIBGOMP},
                 {"omp", BKM_AFF_RUNTIME_LIBOMP},   {"llvm", BKM_AFF_RUNTIME_LIBOMP},
                 {"iomp5", BKM_AFF_RUNTIME_LIBIOMP5}, {"intel", BKM_AFF_RUNTIME_LIBIOMP5}};
    if (s == NULL || kind == NULL)
        return bkm_err_set(err, BKM_EINVAL, "runtime kind: NULL argument");
    for (int k = 0; k < BKM_AFF_RUNTIME_KINDS; k++)
        if (strcmp(s, kind_names[k]) == 0) {
            *kind = (bkm_aff_runtime_kind_t)k;
            return BKM_OK;
        }
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strcmp(s, alias[i].name) == 0) {
            *kind = alias[i].kind;
            return BKM_OK;
        }
    return bkm_err_set(err, BKM_EINVAL,
                       "unknown OpenMP runtime '%s' (libgomp or gomp, libomp or llvm, libiomp5 or intel, none)", s);
}

/* ---------------------------------------------------------------------------------------- */
/* The variables. Sources: GNU libgomp of GCC 12 (env.c: the names its binary holds) and LLVM
 * libomp 14 (kmp_settings.cpp's table). Intel's libiomp5 shares libomp's settings code. */

#define G (1u << BKM_AFF_RUNTIME_LIBGOMP)
#define K ((1u << BKM_AFF_RUNTIME_LIBOMP) | (1u << BKM_AFF_RUNTIME_LIBIOMP5))
#define PL BKM_AFF_ROLE_PLACEMENT
#define WT BKM_AFF_ROLE_WAIT
#define TH BKM_AFF_ROLE_THREADS
#define ST BKM_AFF_ROLE_STACK
#define OT BKM_AFF_ROLE_OTHER

static const bkm_aff_runtime_var_t vars[] = {
    /* OpenMP standard */
    {"OMP_AFFINITY_FORMAT", G | K, OT}, {"OMP_ALLOCATOR", G | K, OT}, {"OMP_CANCELLATION", G | K, OT},
    {"OMP_DEBUG", K, OT}, {"OMP_DEFAULT_DEVICE", G | K, OT}, {"OMP_DISPLAY_AFFINITY", G | K, OT},
    {"OMP_DISPLAY_ENV", G | K, OT}, {"OMP_DYNAMIC", G | K, TH}, {"OMP_MAX_ACTIVE_LEVELS", G | K, TH},
    {"OMP_MAX_TASK_PRIORITY", G | K, OT}, {"OMP_NESTED", G | K, TH}, {"OMP_NUM_TEAMS", G | K, TH},
    {"OMP_NUM_THREADS", G | K, TH}, {"OMP_PLACES", G | K, PL}, {"OMP_PROC_BIND", G | K, PL},
    {"OMP_SCHEDULE", G | K, OT}, {"OMP_STACKSIZE", G | K, ST}, {"OMP_TARGET_OFFLOAD", G | K, OT},
    {"OMP_TEAMS_THREAD_LIMIT", G | K, TH}, {"OMP_THREAD_LIMIT", G | K, TH}, {"OMP_TOOL", K, OT},
    {"OMP_TOOL_LIBRARIES", K, OT}, {"OMP_TOOL_VERBOSE_INIT", K, OT}, {"OMP_WAIT_POLICY", G | K, WT},
    /* GNU names (libomp converts GOMP_CPU_AFFINITY and reads GOMP_STACKSIZE) */
    {"GOMP_CPU_AFFINITY", G | K, PL}, {"GOMP_DEBUG", G, OT}, {"GOMP_STACKSIZE", G | K, ST},
    {"GOMP_SPINCOUNT", G, WT}, {"GOMP_RTEMS_THREAD_POOLS", G, TH},
    /* libomp */
    {"KMP_ADAPTIVE_LOCK_PROPS", K, OT}, {"KMP_AFFINITY", K, PL}, {"KMP_ALIGN_ALLOC", K, OT},
    {"KMP_ALL_THREADS", K, TH}, {"KMP_ALL_THREADPRIVATE", K, OT}, {"KMP_ATOMIC_MODE", K, OT},
    {"KMP_BLOCKTIME", K, WT}, {"KMP_CONSISTENCY_CHECK", K, OT}, {"KMP_CPUINFO_FILE", K, PL},
    {"KMP_DETERMINISTIC_REDUCTION", K, OT}, {"KMP_DEVICE_THREAD_LIMIT", K, TH}, {"KMP_DISP_NUM_BUFFERS", K, OT},
    {"KMP_DUPLICATE_LIB_OK", K, OT}, {"KMP_DYNAMIC_MODE", K, TH}, {"KMP_ENABLE_TASK_THROTTLING", K, OT},
    {"KMP_FORCE_MONOTONIC_DYNAMIC_SCHEDULE", K, OT}, {"KMP_FORCE_REDUCTION", K, OT},
    {"KMP_FORKJOIN_BARRIER", K, OT}, {"KMP_FORKJOIN_BARRIER_PATTERN", K, OT}, {"KMP_FORKJOIN_FRAMES", K, OT},
    {"KMP_FORKJOIN_FRAMES_MODE", K, OT}, {"KMP_GTID_MODE", K, OT}, {"KMP_HANDLE_SIGNALS", K, OT},
    {"KMP_HOT_TEAMS_MAX_LEVEL", K, TH}, {"KMP_HOT_TEAMS_MODE", K, TH},
    {"KMP_HW_SUBSET", K, PL}, {"KMP_INIT_AT_FORK", K, OT}, {"KMP_ITT_PREPARE_DELAY", K, OT},
    {"KMP_LIBRARY", K, WT}, {"KMP_LOCK_KIND", K, OT}, {"KMP_MALLOC_POOL_INCR", K, OT},
    {"KMP_MWAIT_HINTS", K, WT}, {"KMP_NESTING_MODE", K, TH},
    {"KMP_NUM_LOCKS_IN_BLOCK", K, OT}, {"KMP_PLACE_THREADS", K, PL}, {"KMP_PLAIN_BARRIER", K, OT},
    {"KMP_PLAIN_BARRIER_PATTERN", K, OT}, {"KMP_REDUCTION_BARRIER", K, OT}, {"KMP_REDUCTION_BARRIER_PATTERN", K, OT},
    {"KMP_SCHEDULE", K, OT}, {"KMP_SETTINGS", K, OT}, {"KMP_SPIN_BACKOFF_PARAMS", K, WT},
    {"KMP_STACKOFFSET", K, ST}, {"KMP_STACKPAD", K, ST}, {"KMP_STACKSIZE", K, ST}, {"KMP_STORAGE_MAP", K, OT},
    {"KMP_TASKING", K, OT}, {"KMP_TASKLOOP_MIN_TASKS", K, OT}, {"KMP_TASK_STEALING_CONSTRAINT", K, OT},
    {"KMP_TEAMS_THREAD_LIMIT", K, TH}, {"KMP_TOPOLOGY_METHOD", K, PL}, {"KMP_USER_LEVEL_MWAIT", K, WT},
    {"KMP_USE_YIELD", K, WT}, {"KMP_VERSION", K, OT}, {"KMP_WARNINGS", K, OT},
    {"LIBOMP_NUM_HIDDEN_HELPER_THREADS", K, TH}, {"LIBOMP_USE_HIDDEN_HELPER_TASK", K, OT},
    /* further names of the same two tables */
    {"GOMP_OPENACC_DIM", G, OT}, {"KMP_ABORT_DELAY", K, OT}, {"KMP_DUMP_CATALOG", K, OT},
    {"KMP_FOREIGN_THREADS_THREADPRIVATE", K, OT}, {"KMP_INHERIT_FP_CONTROL", K, OT},
    {"KMP_INITIAL_THREAD_BIND", K, PL}, {"KMP_LOAD_BALANCE_INTERVAL", K, TH}, {"KMP_TEAMS_PROC_BIND", K, PL},
    {"KMP_TPAUSE", K, WT}, {"KMP_IGNORE_MPPBEG", K, OT}, {"KMP_IGNORE_MPPEND", K, OT},
    /* libomp's debugging settings (they act in a debug build of the runtime) */
    {"KMP_A_DEBUG", K, OT}, {"KMP_B_DEBUG", K, OT}, {"KMP_C_DEBUG", K, OT}, {"KMP_D_DEBUG", K, OT},
    {"KMP_E_DEBUG", K, OT}, {"KMP_F_DEBUG", K, OT}, {"KMP_DEBUG", K, OT}, {"KMP_DEBUG_BUF", K, OT},
    {"KMP_DEBUG_BUF_ATOMIC", K, OT}, {"KMP_DEBUG_BUF_CHARS", K, OT}, {"KMP_DEBUG_BUF_LINES", K, OT},
    {"KMP_DIAG", K, OT}, {"KMP_PAR_RANGE", K, OT}, {"KMP_FOR_TCHECK", K, OT}, {"KMP_FOR_TPROFILE", K, OT},
};

#undef G
#undef K
#undef PL
#undef WT
#undef TH
#undef ST
#undef OT

const bkm_aff_runtime_var_t *bkm_aff_runtime_vars(size_t *n)
{
    if (n)
        *n = sizeof vars / sizeof vars[0];
    return vars;
}

const bkm_aff_runtime_var_t *bkm_aff_runtime_var_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (strcmp(vars[i].name, name) == 0)
            return &vars[i];
    return NULL;
}

int bkm_aff_runtime_var_ignored(bkm_aff_runtime_kind_t kind, const char *name)
{
    const bkm_aff_runtime_var_t *v;
    if (kind == BKM_AFF_RUNTIME_UNKNOWN || (unsigned)kind >= BKM_AFF_RUNTIME_KINDS)
        return 0;
    if (kind == BKM_AFF_RUNTIME_NONE)
        return 1;
    v = bkm_aff_runtime_var_find(name);
    return v == NULL || (v->readers & (1u << kind)) == 0;
}

const char *bkm_aff_runtime_role_vars(bkm_aff_runtime_kind_t kind, bkm_aff_runtime_role_t role)
{
    static const char *const gomp[] = {
        [BKM_AFF_ROLE_PLACEMENT] = "OMP_PLACES/OMP_PROC_BIND/GOMP_CPU_AFFINITY",
        [BKM_AFF_ROLE_WAIT] = "OMP_WAIT_POLICY/GOMP_SPINCOUNT",
        [BKM_AFF_ROLE_THREADS] = "OMP_NUM_THREADS/OMP_THREAD_LIMIT/OMP_DYNAMIC/OMP_MAX_ACTIVE_LEVELS",
        [BKM_AFF_ROLE_STACK] = "OMP_STACKSIZE/GOMP_STACKSIZE",
        [BKM_AFF_ROLE_OTHER] = "OMP_* and GOMP_*",
    };
    static const char *const kmp[] = {
        [BKM_AFF_ROLE_PLACEMENT] = "KMP_AFFINITY/KMP_HW_SUBSET/OMP_PLACES/OMP_PROC_BIND/GOMP_CPU_AFFINITY",
        [BKM_AFF_ROLE_WAIT] = "KMP_BLOCKTIME/KMP_LIBRARY/OMP_WAIT_POLICY",
        [BKM_AFF_ROLE_THREADS] = "OMP_NUM_THREADS/OMP_THREAD_LIMIT/OMP_DYNAMIC/OMP_MAX_ACTIVE_LEVELS",
        [BKM_AFF_ROLE_STACK] = "OMP_STACKSIZE/KMP_STACKSIZE/GOMP_STACKSIZE",
        [BKM_AFF_ROLE_OTHER] = "KMP_* and OMP_*",
    };
    if ((unsigned)role > BKM_AFF_ROLE_OTHER)
        return "";
    if (kind == BKM_AFF_RUNTIME_LIBGOMP)
        return gomp[role];
    if (kind == BKM_AFF_RUNTIME_LIBOMP || kind == BKM_AFF_RUNTIME_LIBIOMP5)
        return kmp[role];
    return "";
}

int bkm_aff_runtime_var_explain(bkm_aff_runtime_kind_t kind, const char *name, const char *program,
                                const char *lib, bkm_buf_t *out)
{
    static const char *const role_words[] = {"placement", "wait", "thread-count", "stack-size", ""};
    const bkm_aff_runtime_var_t *v;
    bkm_aff_runtime_role_t role;
    if (name == NULL || out == NULL || !bkm_aff_runtime_var_ignored(kind, name))
        return 0;
    if (program == NULL)
        program = "the program";
    if (kind == BKM_AFF_RUNTIME_NONE) {
        bkm_buf_printf(out, "%s is ignored: %s loads no OpenMP runtime", name, program);
        return 1;
    }
    v = bkm_aff_runtime_var_find(name);
    role = v ? v->role : BKM_AFF_ROLE_OTHER;
    bkm_buf_printf(out, "%s is ignored: %s loads %s (%s); ", name, program, lib ? lib : bkm_aff_runtime_kind_name(kind),
                   bkm_aff_runtime_kind_title(kind));
    if (role == BKM_AFF_ROLE_OTHER)
        bkm_buf_printf(out, "it reads %s variables only", bkm_aff_runtime_role_vars(kind, role));
    else
        bkm_buf_printf(out, "its %s variables are %s", role_words[role], bkm_aff_runtime_role_vars(kind, role));
    return 1;
}

/* ---------------------------------------------------------------------------------------- */

void bkm_aff_runtime_cfg_init(bkm_aff_runtime_cfg_t *cfg)
{
    if (cfg)
        memset(cfg, 0, sizeof *cfg);
}

bkm_aff_runtime_kind_t bkm__rt_kind_from_name(const char *name)
{
    const char *base;
    if (name == NULL)
        return BKM_AFF_RUNTIME_NONE;
    base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libgomp-plugin", 14) == 0 || strncmp(base, "libgompd", 8) == 0 ||
        strncmp(base, "libompd", 7) == 0 || strncmp(base, "libomptarget", 12) == 0)
        return BKM_AFF_RUNTIME_NONE;
    if (strncmp(base, "libgomp.so", 10) == 0 || strncmp(base, "libgomp-", 8) == 0)
        return BKM_AFF_RUNTIME_LIBGOMP;
    if (strncmp(base, "libomp.so", 9) == 0 || strncmp(base, "libomp-", 7) == 0)
        return BKM_AFF_RUNTIME_LIBOMP;
    if (strncmp(base, "libiomp5", 8) == 0)
        return BKM_AFF_RUNTIME_LIBIOMP5;
    return BKM_AFF_RUNTIME_NONE;
}

void bkm_aff_runtime_result_init(bkm_aff_runtime_result_t *r)
{
    if (r)
        memset(r, 0, sizeof *r);
}

void bkm_aff_runtime_result_free(bkm_aff_runtime_result_t *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < r->n_obj; i++) {
        bkm_free(r->obj[i].name);
        bkm_free(r->obj[i].path);
        bkm_free(r->obj[i].real);
        bkm_free(r->obj[i].soname);
    }
    for (int i = 0; i < r->n_warnings; i++)
        bkm_free(r->warning[i]);
    bkm_free(r->obj);
    bkm_free(r->warning);
    bkm_free(r->runtime);
    bkm_free(r->program);
    bkm_free(r->interpreter);
    bkm_free(r->reason);
    memset(r, 0, sizeof *r);
}

static char *dup_or_null(const char *s, int *oom)
{
    char *d;
    if (s == NULL)
        return NULL;
    if ((d = bkm_strdup(s)) == NULL)
        *oom = 1;
    return d;
}

int bkm__rt_result_add(bkm_aff_runtime_result_t *r, const char *name, const char *path, const char *real,
                       const char *soname, int parent, int depth, const char *via, bkm_aff_runtime_kind_t kind,
                       const char *how)
{
    bkm_aff_runtime_obj_t *o;
    int oom = 0;
    /* capacity 8, then doubling: the array is full when n_obj is 0, or a power of two from 8 on */
    if (r->n_obj == 0 || (r->n_obj >= 8 && (r->n_obj & (r->n_obj - 1)) == 0)) {
        size_t cap = r->n_obj ? 2 * (size_t)r->n_obj : 8;
        void *p = bkm_realloc(r->obj, cap * sizeof *r->obj);
        if (p == NULL)
            return BKM_ENOMEM;
        r->obj = p;
    }
    o = &r->obj[r->n_obj];
    memset(o, 0, sizeof *o);
    o->name = dup_or_null(name ? name : "", &oom);
    o->path = dup_or_null(path ? path : "", &oom);
    o->real = dup_or_null(real ? real : path ? path : "", &oom);
    o->soname = dup_or_null(soname, &oom);
    o->parent = parent;
    o->depth = depth;
    o->via = via;
    o->kind = kind;
    snprintf(o->how, sizeof o->how, "%s", how ? how : "");
    if (oom) {
        bkm_free(o->name);
        bkm_free(o->path);
        bkm_free(o->real);
        bkm_free(o->soname);
        return BKM_ENOMEM;
    }
    return r->n_obj++;
}

int bkm__rt_result_warn(bkm_aff_runtime_result_t *r, const char *fmt, ...)
{
    bkm_buf_t b;
    va_list ap;
    void *p;
    if (r->n_warnings >= 256)   /* a hostile closure cannot grow the report without bound */
        return BKM_OK;
    bkm_buf_init(&b);
    va_start(ap, fmt);
    bkm_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    p = bkm_realloc(r->warning, ((size_t)r->n_warnings + 1) * sizeof *r->warning);
    if (b.oom || p == NULL) {
        bkm_buf_free(&b);
        if (p)
            r->warning = p;
        return BKM_ENOMEM;
    }
    r->warning = p;
    r->warning[r->n_warnings++] = bkm_buf_take(&b);
    return BKM_OK;
}

static const char *base_of(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path ? path : "";
}

void bkm_aff_runtime_result_chain(const bkm_aff_runtime_result_t *r, int i, bkm_buf_t *out)
{
    int idx[64], n = 0;
    if (r == NULL || out == NULL || i < 0 || i >= r->n_obj)
        return;
    /* parents always come earlier in the table, so the walk ends; the bound is for safety */
    for (int k = i; k >= 0 && k < r->n_obj && n < 64; k = r->obj[k].parent)
        idx[n++] = k;
    for (int k = n - 1; k >= 0; k--) {
        const bkm_aff_runtime_obj_t *o = &r->obj[idx[k]];
        bkm_buf_printf(out, "%s%s", k == n - 1 ? "" : " -> ", o->depth == 0 ? base_of(o->name) : o->name);
    }
}

int bkm__rt_result_finish(bkm_aff_runtime_result_t *r)
{
    int n = 0;
    bkm_buf_t b;
    bkm_free(r->runtime);
    r->runtime = NULL;
    r->n_runtimes = 0;
    for (int i = 0; i < r->n_obj; i++)
        n += r->obj[i].kind != BKM_AFF_RUNTIME_NONE && r->obj[i].kind != BKM_AFF_RUNTIME_UNKNOWN;
    if (n > 0 && (r->runtime = bkm_calloc((size_t)n, sizeof *r->runtime)) == NULL)
        return BKM_ENOMEM;
    for (int i = 0; i < r->n_obj; i++)
        if (r->obj[i].kind != BKM_AFF_RUNTIME_NONE && r->obj[i].kind != BKM_AFF_RUNTIME_UNKNOWN)
            r->runtime[r->n_runtimes++] = i;
    if (r->kind != BKM_AFF_RUNTIME_UNKNOWN)
        r->kind = n > 0 ? r->obj[r->runtime[0]].kind : BKM_AFF_RUNTIME_NONE;
    if (n < 2)
        return BKM_OK;
    bkm_buf_init(&b);
    bkm_buf_printf(&b, "%d OpenMP runtimes in one process:", n);
    for (int k = 0; k < n; k++) {
        const bkm_aff_runtime_obj_t *o = &r->obj[r->runtime[k]];
        bkm_buf_printf(&b, "%s %s (%s", k ? ";" : "", r->dynamic ? o->path : o->name,
                       bkm_aff_runtime_kind_title(o->kind));
        if (!r->dynamic) {
            bkm_buf_puts(&b, ", via ");
            bkm_aff_runtime_result_chain(r, r->runtime[k], &b);
        }
        bkm_buf_puts(&b, ")");
    }
    bkm_buf_puts(&b, ": each keeps its own thread pool and reads its own variables, so their threads compete for "
                     "the same CPUs");
    if (b.oom || bkm__rt_result_warn(r, "%s", bkm_buf_str(&b)) < 0) {
        bkm_buf_free(&b);
        return BKM_ENOMEM;
    }
    bkm_buf_free(&b);
    return BKM_OK;
}

int bkm_aff_runtime_result_to_json(const bkm_aff_runtime_result_t *r, bkm_json_w_t *w, bkm_err_t *err)
{
    if (r == NULL || w == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_runtime_result_to_json: NULL argument");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "program"), bkm_json_str(w, r->program);
    bkm_json_key(w, "kind"), bkm_json_str(w, bkm_aff_runtime_kind_name(r->kind));
    bkm_json_key(w, "title"), bkm_json_str(w, bkm_aff_runtime_kind_title(r->kind));
    bkm_json_key(w, "dynamic"), bkm_json_bool(w, r->dynamic);
    bkm_json_key(w, "interpreter"), bkm_json_str(w, r->interpreter);
    bkm_json_key(w, "reason"), bkm_json_str(w, r->reason);
    bkm_json_key(w, "runtimes");
    bkm_json_arr_begin(w);
    for (int k = 0; k < r->n_runtimes; k++) {
        const bkm_aff_runtime_obj_t *o = &r->obj[r->runtime[k]];
        int idx[64], n = 0;
        bkm_json_obj_begin(w);
        bkm_json_key(w, "kind"), bkm_json_str(w, bkm_aff_runtime_kind_name(o->kind));
        bkm_json_key(w, "title"), bkm_json_str(w, bkm_aff_runtime_kind_title(o->kind));
        bkm_json_key(w, "name"), bkm_json_str(w, o->name);
        bkm_json_key(w, "path"), bkm_json_str(w, o->path);
        bkm_json_key(w, "real"), bkm_json_str(w, o->real);
        bkm_json_key(w, "soname"), bkm_json_str(w, o->soname);
        bkm_json_key(w, "how"), bkm_json_str(w, o->how);
        bkm_json_key(w, "via"), bkm_json_str(w, o->via);
        bkm_json_key(w, "chain");
        bkm_json_arr_begin(w);
        for (int i = r->runtime[k]; i >= 0 && i < r->n_obj && n < 64; i = r->obj[i].parent)
            idx[n++] = i;
        for (int i = n - 1; i >= 0; i--)
            bkm_json_str(w, r->obj[idx[i]].depth == 0 ? base_of(r->obj[idx[i]].name) : r->obj[idx[i]].name);
        bkm_json_arr_end(w);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_key(w, "objects"), bkm_json_int(w, r->n_obj);
    bkm_json_key(w, "warnings");
    bkm_json_arr_begin(w);
    for (int i = 0; i < r->n_warnings; i++)
        bkm_json_str(w, r->warning[i]);
    bkm_json_arr_end(w);
    if (r->dynamic && (r->samples > 0 || r->ran_s > 0)) {
        bkm_json_key(w, "samples"), bkm_json_int(w, r->samples);
        bkm_json_key(w, "exited"), bkm_json_bool(w, r->exited);
        bkm_json_key(w, "exit_status"), bkm_json_int(w, r->exit_status);
        bkm_json_key(w, "ran_s"), bkm_json_double(w, r->ran_s);
    }
    bkm_json_obj_end(w);
    if (w->out && w->out->oom)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory writing the runtime detection as JSON");
    return BKM_OK;
}
