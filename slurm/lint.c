/* SPDX-License-Identifier: MIT */
/* `tune lint`: what a batch script (or any shell script) really asks of the OpenMP runtime and of
 * srun, checked against the variables libomp 14 and libgomp read, the strict parsers, the node of
 * its -C constraint and NERSC's srun rules, and the OpenMP runtime the program of each srun line
 * loads; then the placement it produces, explained. */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bkm/slurm.h"

int bkm_slurm_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int d[64][64];
    if (la > 62 || lb > 62)
        return 99;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1], v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

/* The variables: every one libomp 14 or libgomp reads (bkm_aff_runtime_vars). */
const char *bkm_slurm_var_suggest(const char *name, int *known)
{
    size_t n;
    const bkm_aff_runtime_var_t *vars = bkm_aff_runtime_vars(&n);
    const char *best = NULL;
    int bd = 3;
    *known = 0;
    for (size_t i = 0; i < n; i++) {
        int dist;
        if (strcmp(name, vars[i].name) == 0) {
            *known = 1;
            return NULL;
        }
        if ((dist = bkm_slurm_edit_distance(name, vars[i].name)) < bd)
            bd = dist, best = vars[i].name;
    }
    return best;
}

/* ---------------------------------------------------------------------------------------- */

static void add(bkm_slurm_lint_t *r, int line, bkm_slurm_sev_t sev, const char *code, const char *fmt, ...)
    BKM_PRINTF(5, 6);
static void add(bkm_slurm_lint_t *r, int line, bkm_slurm_sev_t sev, const char *code, const char *fmt, ...)
{
    va_list ap;
    bkm_slurm_finding_t *f;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        bkm_slurm_finding_t *nf = bkm_realloc(r->f, cap * sizeof *nf);
        if (nf == NULL)
            return;
        r->f = nf, r->cap = cap;
    }
    f = &r->f[r->n++];
    f->line = line;
    f->sev = sev;
    snprintf(f->code, sizeof f->code, "%s", code);
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
    r->errors += sev == BKM_SLURM_ERROR;
    r->warnings += sev == BKM_SLURM_WARNING;
}

void bkm_slurm_lint_free(bkm_slurm_lint_t *r)
{
    if (r == NULL)
        return;
    bkm_free(r->f);
    bkm_free(r->plan_text);
    bkm_free(r->plan_json);
    for (int i = 0; i < r->n_programs; i++) {
        bkm_free(r->programs[i].path);
        bkm_aff_runtime_result_free(&r->programs[i].rt);
        bkm_aff_runtime_result_free(&r->programs[i].probe);
    }
    bkm_free(r->programs);
    memset(r, 0, sizeof *r);
}

/* Shell words of one logical line: quotes removed, $ / ` noted (the value is then dynamic). */
#define MAXW 64
typedef struct words {
    char w[MAXW][256];
    int dyn[MAXW];
    int n;
} words_t;

static void split(const char *s, words_t *ws)
{
    ws->n = 0;
    while (*s && ws->n < MAXW) {
        char *o = ws->w[ws->n];
        size_t k = 0;
        int dyn = 0;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '#')
            break;
        if (strchr(";&|", *s)) {   /* a command separator is a word of its own */
            o[0] = *s, o[1] = '\0';
            while (*s && strchr(";&|", *s))
                s++;
            ws->dyn[ws->n++] = 0;
            continue;
        }
        while (*s && *s != ' ' && *s != '\t' && !strchr(";&|", *s)) {
            if (*s == '\'') {
                for (s++; *s && *s != '\''; s++)
                    if (k < 255)
                        o[k++] = *s;
                if (*s)
                    s++;
            } else if (*s == '"') {
                for (s++; *s && *s != '"'; s++) {
                    if (*s == '\\' && s[1])
                        s++;
                    else if (*s == '$' || *s == '`')
                        dyn = 1;
                    if (k < 255)
                        o[k++] = *s;
                }
                if (*s)
                    s++;
            } else {
                if (*s == '\\' && s[1])
                    s++;
                else if (*s == '$' || *s == '`')
                    dyn = 1;
                if (k < 255)
                    o[k++] = *s;
                s++;
            }
        }
        o[k] = '\0';
        ws->dyn[ws->n++] = dyn;
    }
}

static int is_name(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return 0;
    return 1;
}

/* The variables the script sets (the last assignment of each counts) */
#define MAXV 128
typedef struct var {
    char name[64];
    char value[256];
    int line, dyn;
} var_t;

/* The program of an srun line, with its arguments */
#define MAXP 16
#define MAXARGS 32
typedef struct prog {
    int line, dyn;                /* dyn: the program or an argument depends on the shell ($, `) */
    char word[256];
    char chdir[256];              /* srun -D / --chdir */
    char args[MAXARGS][256];
    int n_args;
} prog_t;

typedef struct state {
    var_t v[MAXV];
    int n;
    int sb_nodes, sb_ntasks, sb_tpn, sb_c;   /* #SBATCH -N, -n, --ntasks-per-node, -c */
    char sb_chdir[256];                      /* #SBATCH -D / --chdir */
    int srun_line, srun_n, srun_N, srun_tpn, srun_c, srun_bind;
    int srun_no_c_line, sb_c_line;           /* the first srun line without -c; the #SBATCH -c line */
    char srun_bind_val[64];
    prog_t prog[MAXP];
    int n_prog;
} state_t;

static var_t *var_find(state_t *st, const char *name)
{
    for (int i = 0; i < st->n; i++)
        if (strcmp(st->v[i].name, name) == 0)
            return &st->v[i];
    return NULL;
}

static void var_check_name(bkm_slurm_lint_t *r, const char *name, int line)
{
    int known;
    const char *sug = bkm_slurm_var_suggest(name, &known);
    int prefixed = strncmp(name, "OMP_", 4) == 0 || strncmp(name, "KMP_", 4) == 0 || strncmp(name, "GOMP_", 5) == 0;
    if (known)
        return;
    if (sug && (prefixed || bkm_slurm_edit_distance(name, sug) <= 1 || strlen(name) >= 8))
        add(r, line, BKM_SLURM_ERROR, "unknown-variable",
            "%s is read by no OpenMP runtime (libomp, libgomp): did you mean %s? As written it silently does nothing",
            name, sug);
    else if (prefixed)
        add(r, line, BKM_SLURM_WARNING, "unknown-variable", "%s is read by neither libomp 14 nor libgomp", name);
}

static void var_set(bkm_slurm_lint_t *r, state_t *st, const char *name, size_t nlen, const char *value, int dyn,
                    int line)
{
    char nm[64];
    var_t *v;
    snprintf(nm, sizeof nm, "%.*s", (int)(nlen < 63 ? nlen : 63), name);
    var_check_name(r, nm, line);
    if ((v = var_find(st, nm)) == NULL) {
        if (st->n >= MAXV)
            return;
        v = &st->v[st->n++];
        snprintf(v->name, sizeof v->name, "%s", nm);
    }
    snprintf(v->value, sizeof v->value, "%s", value);
    v->line = line;
    v->dyn = dyn;
}

static void var_unset(state_t *st, const char *name)
{
    var_t *v = var_find(st, name);
    if (v)
        *v = st->v[--st->n];
}

/* A count of an #SBATCH or srun option: a whole number in 1..1000000 into *out. A value the
 * script computes ($N, $(...)) is not judged; any other is an error naming it (Slurm refuses it,
 * or a wrapped number means another job than the one written). -N also takes Slurm's MIN-MAX. */
static int num_arg(bkm_slurm_lint_t *r, int line, const char *opt, const char *s, int *out)
{
    long long v, hi;
    const char *dash;
    if (strpbrk(s, "$`") != NULL)
        return 0;
    if (strcmp(opt, "-N") == 0 && (dash = strchr(s, '-')) != NULL && dash != s) {
        char lo[32];
        snprintf(lo, sizeof lo, "%.*s", (int)(dash - s < 31 ? dash - s : 31), s);
        if (bkm_parse_int(lo, 1, 1000000, &v) == BKM_OK && bkm_parse_int(dash + 1, v, 1000000, &hi) == BKM_OK) {
            *out = (int)v;
            return 1;
        }
    } else if (bkm_parse_int(s, 1, 1000000, &v) == BKM_OK) {
        *out = (int)v;
        return 1;
    }
    add(r, line, BKM_SLURM_ERROR, "bad-value", "%s '%.40s' is not a whole number in 1..1000000%s", opt, s,
        strcmp(opt, "-N") == 0 ? " (or MIN-MAX)" : "");
    return 0;
}

/* option value: "--name=V", "--name V", "-xV", "-x V"; returns the value and advances *i */
static const char *opt_val(const words_t *ws, int *i, const char *sh, const char *lg)
{
    const char *w = ws->w[*i];
    size_t ll = lg ? strlen(lg) : 0;
    if (lg && strncmp(w, lg, ll) == 0 && w[ll] == '=')
        return w + ll + 1;
    if ((lg && strcmp(w, lg) == 0) || (sh && strcmp(w, sh) == 0))
        return *i + 1 < ws->n ? ws->w[++*i] : "";
    if (sh && strncmp(w, sh, 2) == 0 && w[2])
        return w + 2;
    return NULL;
}

static void sbatch_line(bkm_slurm_lint_t *r, state_t *st, const char *rest, int line)
{
    words_t ws;
    split(rest, &ws);
    for (int i = 0; i < ws.n; i++) {
        const char *v;
        if ((v = opt_val(&ws, &i, "-C", "--constraint")) != NULL)
            snprintf(r->constraint, sizeof r->constraint, "%s", v);
        else if ((v = opt_val(&ws, &i, "-N", "--nodes")) != NULL)
            num_arg(r, line, "-N", v, &st->sb_nodes);
        else if ((v = opt_val(&ws, &i, "-n", "--ntasks")) != NULL)
            num_arg(r, line, "-n", v, &st->sb_ntasks);
        else if ((v = opt_val(&ws, &i, NULL, "--ntasks-per-node")) != NULL)
            num_arg(r, line, "--ntasks-per-node", v, &st->sb_tpn);
        else if ((v = opt_val(&ws, &i, "-c", "--cpus-per-task")) != NULL) {
            num_arg(r, line, "-c", v, &st->sb_c);
            st->sb_c_line = line;
        }
        else if ((v = opt_val(&ws, &i, "-D", "--chdir")) != NULL)
            snprintf(st->sb_chdir, sizeof st->sb_chdir, "%s", v);
    }
}

/* srun's options that take their value as the next word when not written --name=value or -xvalue
 * (Slurm 22.05); the others take none or only an attached one. */
static const char *const srun_long_val[] = {
    "--account", "--acctg-freq", "--bb", "--bbf", "--begin", "--chdir", "--cluster-constraint", "--clusters",
    "--comment", "--constraint", "--container", "--core-spec", "--cores-per-socket", "--cpu-bind", "--cpu_bind",
    "--cpu-freq", "--cpus-per-gpu", "--cpus-per-task", "--deadline", "--delay-boot", "--dependency",
    "--distribution", "--epilog", "--error", "--exclude", "--export", "--extra-node-info", "--gid", "--gpu-bind",
    "--gpu-freq", "--gpus", "--gpus-per-node", "--gpus-per-socket", "--gpus-per-task", "--gres", "--gres-flags",
    "--het-group", "--hint", "--input", "--job-name", "--jobid", "--licenses", "--mail-type", "--mail-user",
    "--mcs-label", "--mem", "--mem-bind", "--mem_bind", "--mem-per-cpu", "--mem-per-gpu", "--mincpus", "--mpi",
    "--network", "--nodefile", "--nodelist", "--nodes", "--ntasks", "--ntasks-per-core", "--ntasks-per-gpu",
    "--ntasks-per-node", "--ntasks-per-socket", "--open-mode", "--output", "--partition", "--power", "--priority",
    "--profile", "--prolog", "--qos", "--relative", "--reservation", "--signal", "--slurmd-debug",
    "--sockets-per-node", "--switches", "--task-epilog", "--task-prolog", "--thread-spec", "--threads",
    "--threads-per-core", "--time", "--time-min", "--tmp", "--tres-per-task", "--uid", "--wait", "--wckey", NULL,
};
static const char srun_short_val[] = "ABcCdDeGiJLmMnNopqrStTwWx";

static int in_list(const char *const *list, const char *w)
{
    for (int i = 0; list && list[i]; i++)
        if (strcmp(list[i], w) == 0)
            return 1;
    return 0;
}

/* Commands that run another one: the program is after their options (and, for taskset, the mask). */
typedef struct wrapper {
    const char *name;
    const char *short_val;        /* -x options with a value as the next word */
    const char *const *long_val;  /* --name options with a value as the next word */
    int positional;               /* words before the command (taskset's mask) */
    int assignments;              /* NAME=VALUE words before the command (env) */
} wrapper_t;
static const char *const env_long[] = {"--unset", "--chdir", NULL};
static const char *const numactl_long[] = {"--interleave", "--preferred", "--cpunodebind", "--physcpubind",
                                           "--membind", NULL};
static const char *const nice_long[] = {"--adjustment", NULL};
static const char *const time_long[] = {"--format", "--output", NULL};
static const char *const stdbuf_long[] = {"--input", "--output", "--error", NULL};
static const wrapper_t wrappers[] = {
    {"env", "uC", env_long, 0, 1},     {"numactl", "ipNCm", numactl_long, 0, 0}, {"taskset", "", NULL, 1, 0},
    {"nice", "n", nice_long, 0, 0},    {"time", "fo", time_long, 0, 0},          {"stdbuf", "ioe", stdbuf_long, 0, 0},
    {"nohup", "", NULL, 0, 0},
};

static int is_separator(const char *w)
{
    return strchr(";&|", w[0]) && w[1] == '\0';
}

/* A redirection word (>, >>, <, 2>, 2>&1, &>...): the program's arguments end before it. */
static int is_redirection(const char *w)
{
    while (*w >= '0' && *w <= '9')
        w++;
    return *w == '>' || *w == '<';
}

/* Skip wrappers from word @p i on; returns the index of the program (>= ws->n: none). */
static int skip_wrappers(const words_t *ws, int i)
{
    for (int depth = 0; depth < 8 && i < ws->n; depth++) {
        const char *base = strrchr(ws->w[i], '/');
        const wrapper_t *wr = NULL;
        int pos;
        base = base ? base + 1 : ws->w[i];
        for (size_t k = 0; k < sizeof wrappers / sizeof wrappers[0] && wr == NULL; k++)
            if (strcmp(base, wrappers[k].name) == 0)
                wr = &wrappers[k];
        if (wr == NULL)
            return i;
        pos = wr->positional;
        for (i++; i < ws->n && !is_separator(ws->w[i]); i++) {
            const char *w = ws->w[i];
            if (strcmp(w, "--") == 0) {
                i++;
                break;
            }
            if (w[0] == '-' && w[1]) {
                if ((w[1] != '-' && w[2] == '\0' && strchr(wr->short_val, w[1])) ||
                    (w[1] == '-' && in_list(wr->long_val, w)))
                    i++;
                continue;
            }
            if (wr->assignments && strchr(w, '=') && is_name(w, (size_t)(strchr(w, '=') - w)))
                continue;
            if (pos > 0) {
                pos--;
                continue;
            }
            break;
        }
    }
    return i;
}

static void srun_words(bkm_slurm_lint_t *r, state_t *st, const words_t *ws, int i, int line)
{
    char chdir_to[256] = "";
    int has_c = 0;
    st->srun_line = line;
    for (i++; i < ws->n && ws->w[i][0] == '-'; i++) {
        const char *v;
        int k = i;
        if (strcmp(ws->w[i], "--") == 0) {
            i++;
            break;
        }
        if ((v = opt_val(ws, &k, "-D", "--chdir")) != NULL) {
            snprintf(chdir_to, sizeof chdir_to, "%s", v);
        } else if ((v = opt_val(ws, &k, NULL, "--cpu-bind")) != NULL ||
                   (v = opt_val(ws, &k, NULL, "--cpu_bind")) != NULL) {
            st->srun_bind = 1;
            snprintf(st->srun_bind_val, sizeof st->srun_bind_val, "%s", v);
        } else if ((v = opt_val(ws, &k, "-n", "--ntasks")) != NULL) {
            num_arg(r, line, "srun -n", v, &st->srun_n);
        } else if ((v = opt_val(ws, &k, "-N", "--nodes")) != NULL) {
            num_arg(r, line, "-N", v, &st->srun_N);
        } else if ((v = opt_val(ws, &k, NULL, "--ntasks-per-node")) != NULL) {
            num_arg(r, line, "srun --ntasks-per-node", v, &st->srun_tpn);
        } else if ((v = opt_val(ws, &k, "-c", "--cpus-per-task")) != NULL) {
            num_arg(r, line, "srun -c", v, &st->srun_c);
            has_c = 1;
        } else if (ws->w[i][1] != '-' && strlen(ws->w[i]) == 2 && strchr(srun_short_val, ws->w[i][1]) &&
                   i + 1 < ws->n) {
            k = i + 1;   /* another short option with a value: skip the value */
        } else if (ws->w[i][1] == '-' && in_list(srun_long_val, ws->w[i]) && i + 1 < ws->n) {
            k = i + 1;
        }
        i = k;
    }
    if (!has_c && st->srun_no_c_line == 0)
        st->srun_no_c_line = line;
    i = skip_wrappers(ws, i);
    if (i < ws->n && !is_separator(ws->w[i]) && !is_redirection(ws->w[i]) && st->n_prog < MAXP) {
        prog_t *p = &st->prog[st->n_prog++];
        memset(p, 0, sizeof *p);
        p->line = line;
        p->dyn = ws->dyn[i];
        snprintf(p->word, sizeof p->word, "%s", ws->w[i]);
        snprintf(p->chdir, sizeof p->chdir, "%s", chdir_to);
        for (i++; i < ws->n && !is_separator(ws->w[i]) && !is_redirection(ws->w[i]) && p->n_args < MAXARGS; i++) {
            snprintf(p->args[p->n_args++], sizeof p->args[0], "%s", ws->w[i]);
            p->dyn |= ws->dyn[i];
        }
    }
}

/* One logical line of shell: assignments, export/setenv/unset, srun. */
static void shell_line(bkm_slurm_lint_t *r, state_t *st, const char *text, int line)
{
    words_t ws;
    int i = 0, cmd = 1;
    split(text, &ws);
    while (i < ws.n) {
        const char *w = ws.w[i];
        const char *eq = strchr(w, '=');
        if (strchr(";&|", w[0]) && w[1] == '\0') {
            cmd = 1, i++;
            continue;
        }
        if (cmd && eq && is_name(w, (size_t)(eq - w))) {   /* NAME=VALUE before a command */
            var_set(r, st, w, (size_t)(eq - w), eq + 1, ws.dyn[i], line);
            i++;
            continue;
        }
        if (cmd && (strcmp(w, "export") == 0 || strcmp(w, "declare") == 0 || strcmp(w, "typeset") == 0 ||
                    strcmp(w, "readonly") == 0 || strcmp(w, "local") == 0)) {
            for (i++; i < ws.n && !(strchr(";&|", ws.w[i][0]) && ws.w[i][1] == '\0'); i++) {
                const char *a = ws.w[i], *e = strchr(a, '=');
                if (a[0] == '-')
                    continue;
                if (e && is_name(a, (size_t)(e - a)))
                    var_set(r, st, a, (size_t)(e - a), e + 1, ws.dyn[i], line);
                else if (is_name(a, strlen(a)))
                    var_check_name(r, a, line);
            }
            continue;
        }
        if (cmd && strcmp(w, "setenv") == 0 && i + 1 < ws.n) {   /* csh */
            const char *val = i + 2 < ws.n ? ws.w[i + 2] : "";
            if (is_name(ws.w[i + 1], strlen(ws.w[i + 1])))
                var_set(r, st, ws.w[i + 1], strlen(ws.w[i + 1]), val, i + 2 < ws.n && ws.dyn[i + 2], line);
            i += 3;
            continue;
        }
        if (cmd && (strcmp(w, "unset") == 0 || strcmp(w, "unsetenv") == 0)) {
            for (i++; i < ws.n && !(strchr(";&|", ws.w[i][0]) && ws.w[i][1] == '\0'); i++)
                var_unset(st, ws.w[i]);
            continue;
        }
        if (cmd && (strcmp(w, "time") == 0 || strcmp(w, "exec") == 0 || strcmp(w, "command") == 0 ||
                    strcmp(w, "then") == 0 || strcmp(w, "do") == 0 || strcmp(w, "else") == 0)) {
            i++;
            continue;
        }
        if (cmd && strcmp(w, "srun") == 0)
            srun_words(r, st, &ws, i, line);
        cmd = 0;
        i++;
    }
}

/* ---------------------------------------------------------------------------------------- */

static void check_values(bkm_slurm_lint_t *r, state_t *st)
{
    for (int i = 0; i < st->n; i++) {
        var_t *v = &st->v[i];
        bkm_err_t e = {0};
        int rc = BKM_OK, ms;
        if (v->dyn) {
            if (strstr(v->name, "MP_") || strncmp(v->name, "GOMP_", 5) == 0)
                add(r, v->line, BKM_SLURM_NOTE, "dynamic", "%s='%s' depends on the shell at run time: not checked",
                    v->name, v->value);
            continue;
        }
        if (strcmp(v->name, "KMP_AFFINITY") == 0) {
            bkm_aff_kmp_t k;
            rc = bkm_aff_kmp_parse(v->value, &k, &e);
        } else if (strcmp(v->name, "KMP_BLOCKTIME") == 0) {
            rc = bkm_aff_blocktime_parse(v->value, &ms, &e);
        } else if (strcmp(v->name, "KMP_HW_SUBSET") == 0 || strcmp(v->name, "KMP_PLACE_THREADS") == 0) {
            bkm_aff_hw_subset_t h;
            rc = bkm_aff_hw_subset_parse(v->value, &h, &e);
        } else if (strcmp(v->name, "OMP_PLACES") == 0) {
            bkm_aff_places_t p;
            rc = bkm_aff_places_parse(v->value, &p, &e);
        } else if (strcmp(v->name, "OMP_PROC_BIND") == 0) {
            bkm_aff_proc_bind_t p;
            rc = bkm_aff_proc_bind_parse(v->value, &p, &e);
        } else if (strcmp(v->name, "GOMP_CPU_AFFINITY") == 0) {
            char pl[BKM_AFF_PROCLIST_MAX];
            rc = bkm_aff_gomp_parse(v->value, pl, sizeof pl, &e);
        } else if (strcmp(v->name, "OMP_WAIT_POLICY") == 0) {
            if (strcasecmp(v->value, "active") != 0 && strcasecmp(v->value, "passive") != 0)
                rc = bkm_err_set(&e, BKM_EINVAL, "'%s' is neither active nor passive", v->value);
        } else if (strcmp(v->name, "OMP_NUM_THREADS") == 0) {
            char buf[256], *save = NULL, *tok;
            int first = 1;
            snprintf(buf, sizeof buf, "%s", v->value);
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                long long n;
                if (bkm_parse_int(tok, 1, 1000000, &n) < 0) {
                    rc = bkm_err_set(&e, BKM_EINVAL, "'%s' is not a positive thread count", tok);
                    break;
                }
                if (first)
                    r->threads = (int)n, first = 0;
            }
            if (first && rc == BKM_OK)
                rc = bkm_err_set(&e, BKM_EINVAL, "empty");
        }
        if (rc < 0) {
            add(r, v->line, BKM_SLURM_ERROR, "bad-value", "%s='%s': %s", v->name, v->value, e.msg);
            v->dyn = 1;   /* not planned with */
        }
    }
}

static const char *val_of(state_t *st, const char *name)
{
    var_t *v = var_find(st, name);
    return v && !v->dyn ? v->value : NULL;
}

static int line_of(state_t *st, const char *name)
{
    var_t *v = var_find(st, name);
    return v ? v->line : 0;
}

static void env_from(state_t *st, bkm_aff_env_t *env)
{
    memset(env, 0, sizeof *env);
    env->kmp_affinity = val_of(st, "KMP_AFFINITY");
    env->kmp_hw_subset = val_of(st, "KMP_HW_SUBSET");
    env->kmp_place_threads = val_of(st, "KMP_PLACE_THREADS");
    env->kmp_blocktime = val_of(st, "KMP_BLOCKTIME");
    env->omp_places = val_of(st, "OMP_PLACES");
    env->omp_proc_bind = val_of(st, "OMP_PROC_BIND");
    env->gomp_cpu_affinity = val_of(st, "GOMP_CPU_AFFINITY");
    env->omp_wait_policy = val_of(st, "OMP_WAIT_POLICY");
}

/* ---------------------------------------------------------------------------------------- */
/* The programs of the srun lines and their OpenMP runtime                                   */

/* The value of @p name the script sets for good (a static value), else @p fallback; *dyn = 1
 * when the script sets it from the shell. */
static const char *script_or(state_t *st, const char *name, const char *fallback, int *dyn)
{
    var_t *v = var_find(st, name);
    if (v && v->dyn)
        *dyn = 1;
    return v && !v->dyn ? v->value : fallback;
}

/* The working directory of program @p p: srun --chdir, else #SBATCH --chdir, else the script's
 * directory; a relative one is taken from the script's directory. */
static void workdir_of(const state_t *st, const prog_t *p, const char *script_dir, char *out, size_t n)
{
    const char *d = p->chdir[0] ? p->chdir : st->sb_chdir;
    if (d[0] == '\0')
        snprintf(out, n, "%s", script_dir);
    else if (d[0] == '/')
        snprintf(out, n, "%s", d);
    else
        snprintf(out, n, "%s/%s", script_dir, d);
}

/* The runtimes a detection names, as a kind per runtime file. */
static int kinds_of(const bkm_aff_runtime_result_t *rt, bkm_aff_runtime_kind_t *k, int cap)
{
    int n = 0;
    for (int i = 0; i < rt->n_runtimes && n < cap; i++)
        k[n++] = rt->obj[rt->runtime[i]].kind;
    return n;
}

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Flag every variable the script sets that all of the program's runtimes ignore. */
static void flag_ignored(bkm_slurm_lint_t *r, state_t *st, const prog_t *p, const bkm_aff_runtime_result_t *rt)
{
    bkm_aff_runtime_kind_t k[8];
    int nk = kinds_of(rt, k, 8);
    const bkm_aff_runtime_obj_t *first;
    if (nk == 0)
        return;
    first = &rt->obj[rt->runtime[0]];
    for (int i = 0; i < st->n; i++) {
        const var_t *v = &st->v[i];
        const bkm_aff_runtime_var_t *rv = bkm_aff_runtime_var_find(v->name);
        int ignored = rv != NULL;
        bkm_buf_t b;
        for (int j = 0; j < nk && ignored; j++)
            ignored = bkm_aff_runtime_var_ignored(k[j], v->name);
        if (!ignored)
            continue;
        bkm_buf_init(&b);
        bkm_aff_runtime_var_explain(first->kind, v->name, p->word,
                                    !rt->dynamic ? first->name : first->soname ? first->soname : base_of(first->path),
                                    &b);
        if (nk > 1)
            bkm_buf_printf(&b, " (and so does every other runtime it loads)");
        add(r, v->line, rv->role == BKM_AFF_ROLE_OTHER ? BKM_SLURM_WARNING : BKM_SLURM_ERROR, "ignored-variable",
            "%s (srun line %d)", bkm_buf_str(&b), p->line);
        bkm_buf_free(&b);
    }
}

/* "libgomp.so.1 (GNU OpenMP, app -> libgomp.so.1)" for each runtime of @p rt. */
static void runtimes_text(const bkm_aff_runtime_result_t *rt, bkm_buf_t *b)
{
    for (int i = 0; i < rt->n_runtimes; i++) {
        const bkm_aff_runtime_obj_t *o = &rt->obj[rt->runtime[i]];
        bkm_buf_printf(b, "%s%s (%s", i ? " and " : "", rt->dynamic ? o->path : o->name,
                       bkm_aff_runtime_kind_title(o->kind));
        if (!rt->dynamic) {
            bkm_buf_puts(b, ": ");
            bkm_aff_runtime_result_chain(rt, rt->runtime[i], b);
        }
        bkm_buf_puts(b, ")");
    }
}

/* Start the program briefly (--probe) and note what it mapped. */
static void probe_program(bkm_slurm_lint_t *r, state_t *st, const prog_t *p, bkm_slurm_lint_program_t *lp,
                          const bkm_slurm_lint_cfg_t *cfg, const char *workdir)
{
    char *argv[MAXARGS + 2];
    char **envp = NULL;
    size_t n_env = 0, k = 0, own;
    bkm_aff_runtime_probe_cfg_t pc;
    bkm_err_t e = {0};
    bkm_buf_t b;
    if (p->dyn) {
        add(r, p->line, BKM_SLURM_NOTE, "probe", "%s is not started: its command line depends on the shell ($ or `)",
            p->word);
        return;
    }
    while (cfg->probe_envp && cfg->probe_envp[n_env])
        n_env++;
    if ((envp = bkm_calloc(n_env + (size_t)st->n + 1, sizeof *envp)) == NULL) {
        add(r, p->line, BKM_SLURM_NOTE, "probe", "%s is not started: out of memory", p->word);
        return;
    }
    /* the environment: the caller's, with the script's static exports in place of the same names */
    for (size_t i = 0; i < n_env; i++) {
        const char *eq = strchr(cfg->probe_envp[i], '=');
        int replaced = 0;
        for (int j = 0; eq && j < st->n && !replaced; j++)
            replaced = !st->v[j].dyn && strlen(st->v[j].name) == (size_t)(eq - cfg->probe_envp[i]) &&
                       strncmp(st->v[j].name, cfg->probe_envp[i], (size_t)(eq - cfg->probe_envp[i])) == 0;
        if (!replaced)
            envp[k++] = cfg->probe_envp[i];
    }
    own = k;
    for (int j = 0; j < st->n; j++) {
        bkm_buf_t kv;
        if (st->v[j].dyn)
            continue;
        bkm_buf_init(&kv);
        bkm_buf_printf(&kv, "%s=%s", st->v[j].name, st->v[j].value);
        if ((envp[k] = kv.oom ? NULL : bkm_buf_take(&kv)) != NULL)
            k++;
        bkm_buf_free(&kv);
    }
    envp[k] = NULL;
    argv[0] = lp->path;
    for (int i = 0; i < p->n_args; i++)
        argv[i + 1] = (char *)p->args[i];
    argv[p->n_args + 1] = NULL;
    memset(&pc, 0, sizeof pc);
    pc.timeout_s = cfg->probe_timeout_s;
    pc.cwd = workdir;
    pc.envp = envp;
    pc.proc_root = cfg->runtime.proc_root;
    if (bkm_aff_runtime_probe_run(lp->path, argv, &pc, &lp->probe, &e) < 0) {
        add(r, p->line, BKM_SLURM_NOTE, "probe", "%s could not be started: %s", p->word, e.msg);
    } else {
        lp->probed = 1;
        bkm_buf_init(&b);
        if (lp->probe.n_runtimes > 0)
            runtimes_text(&lp->probe, &b);
        else
            bkm_buf_puts(&b, "no OpenMP runtime");
        add(r, p->line, BKM_SLURM_NOTE, "probe", "started under --probe, %s mapped %s (%d samples in %.1f s%s)",
            p->word, bkm_buf_str(&b), lp->probe.samples, lp->probe.ran_s,
            lp->probe.exited ? "; it ended by itself, and what it loads later is not seen" : "");
        bkm_buf_free(&b);
        for (int i = 0; i < lp->probe.n_warnings; i++)
            add(r, p->line, BKM_SLURM_WARNING, "runtime", "%s: %s", p->word, lp->probe.warning[i]);
    }
    for (size_t i = own; i < k; i++)   /* the caller's strings are borrowed */
        bkm_free(envp[i]);
    bkm_free(envp);
}

/* Check the program of every srun line; returns 1 when every program checked loads GNU libgomp
 * only (the libomp checks and explanation do not apply then). */
static int check_programs(bkm_slurm_lint_t *r, state_t *st, const bkm_slurm_lint_cfg_t *cfg)
{
    int all_gomp = 0, any = 0, lpath_dyn = 0;
    bkm_aff_runtime_cfg_t rc = cfg->runtime;
    rc.path = script_or(st, "PATH", cfg->runtime.path, &lpath_dyn);
    rc.ld_library_path = script_or(st, "LD_LIBRARY_PATH", cfg->runtime.ld_library_path, &lpath_dyn);
    rc.ld_preload = script_or(st, "LD_PRELOAD", cfg->runtime.ld_preload, &lpath_dyn);
    if (st->n_prog == 0)
        return 0;
    if ((r->programs = bkm_calloc((size_t)st->n_prog, sizeof *r->programs)) == NULL) {
        add(r, 0, BKM_SLURM_NOTE, "program", "the programs of the srun lines are not checked: out of memory");
        return 0;
    }
    if (lpath_dyn)
        add(r, 0, BKM_SLURM_NOTE, "program", "the script sets PATH, LD_LIBRARY_PATH or LD_PRELOAD from the shell: "
            "programs and libraries are looked up with the values tune lint runs under");
    all_gomp = 1;
    for (int i = 0; i < st->n_prog; i++) {
        const prog_t *p = &st->prog[i];
        bkm_slurm_lint_program_t *lp = &r->programs[r->n_programs++];
        bkm_aff_runtime_result_t *rt = &lp->rt;
        const bkm_aff_runtime_result_t *used;
        char workdir[PATH_MAX];
        bkm_err_t e = {0};
        bkm_buf_t b;
        int rcode;
        lp->line = p->line;
        lp->kind = BKM_AFF_RUNTIME_UNKNOWN;
        snprintf(lp->word, sizeof lp->word, "%s", p->word);
        bkm_aff_runtime_result_init(&lp->rt);
        bkm_aff_runtime_result_init(&lp->probe);
        if (p->dyn && strpbrk(p->word, "$`")) {
            add(r, p->line, BKM_SLURM_NOTE, "program",
                "srun runs '%s', which depends on the shell: its OpenMP runtime is not checked", p->word);
            all_gomp = 0;
            continue;
        }
        workdir_of(st, p, cfg->script_dir, workdir, sizeof workdir);
        rc.cwd = workdir;
        rcode = bkm_aff_runtime_detect_static(p->word, &rc, rt, &e);
        if (rcode == BKM_EINVAL && strchr(p->word, '/') == NULL) {
            /* srun looks for a bare name in PATH, then in the working directory */
            char here[sizeof p->word + 2];
            bkm_err_t e2 = {0};
            snprintf(here, sizeof here, "./%s", p->word);
            if (access(workdir, F_OK) == 0 && bkm_aff_runtime_detect_static(here, &rc, rt, &e2) == BKM_OK)
                rcode = BKM_OK;
        }
        if (rcode < 0) {
            all_gomp = 0;
            if (bkm_aff_runtime_is_interpreter(p->word))
                add(r, p->line, BKM_SLURM_NOTE, "runtime",
                    "%s is an interpreter (not found here: %s): which OpenMP runtime the code it runs loads cannot "
                    "be told statically", p->word, e.msg);
            else
                add(r, p->line, BKM_SLURM_NOTE, "program", "srun runs '%s': %s; its OpenMP runtime is not checked",
                    p->word, e.msg);
            continue;
        }
        lp->checked = 1;
        lp->path = bkm_strdup(rt->program);
        if (access(rt->program, X_OK) != 0)
            add(r, p->line, BKM_SLURM_NOTE, "program", "%s (%s) is not executable here: srun would refuse it",
                p->word, rt->program);
        bkm_buf_init(&b);
        if (rt->kind == BKM_AFF_RUNTIME_UNKNOWN)
            add(r, p->line, BKM_SLURM_NOTE, "runtime", "%s%s", rt->reason ? rt->reason : "cannot be told",
                rt->interpreter ? "; tune lint --probe starts it briefly to see which runtime it maps" : "");
        else if (rt->kind == BKM_AFF_RUNTIME_NONE)
            add(r, p->line, BKM_SLURM_NOTE, "runtime",
                "%s loads no OpenMP runtime (its ELF dependencies name none): the script's OpenMP variables act only "
                "if it loads one at run time (dlopen; tune lint --probe would see it)", p->word);
        else {
            runtimes_text(rt, &b);
            add(r, p->line, BKM_SLURM_NOTE, "runtime", "%s loads %s, from its ELF dependencies", p->word,
                bkm_buf_str(&b));
        }
        bkm_buf_free(&b);
        for (int w = 0; w < rt->n_warnings; w++)
            add(r, p->line, strstr(rt->warning[w], "OpenMP runtimes in one process") ? BKM_SLURM_WARNING
                                                                                     : BKM_SLURM_NOTE,
                "runtime", "%s: %s", p->word, rt->warning[w]);
        if (cfg->probe && lp->path)
            probe_program(r, st, p, lp, cfg, workdir);
        used = lp->probed && lp->probe.n_runtimes > 0 ? &lp->probe : rt;
        if (used->kind != BKM_AFF_RUNTIME_UNKNOWN)
            lp->kind = used->kind;
        flag_ignored(r, st, p, used);
        any = 1;
        {
            bkm_aff_runtime_kind_t k[8];
            int nk = kinds_of(used, k, 8);
            for (int j = 0; j < nk; j++)
                all_gomp &= k[j] == BKM_AFF_RUNTIME_LIBGOMP;
            all_gomp &= nk > 0;
        }
    }
    return any && all_gomp;
}

static void check_cancelling(bkm_slurm_lint_t *r, state_t *st, const bkm_aff_env_t *env)
{
    bkm_aff_setting_t s;
    bkm_aff_kmp_t k;
    if (env->kmp_affinity && (env->omp_proc_bind || env->omp_places) &&
        bkm_aff_kmp_parse(env->kmp_affinity, &k, NULL) == BKM_OK && k.type != BKM_AFF_TYPE_UNSET) {
        const char *o = env->omp_proc_bind ? "OMP_PROC_BIND" : "OMP_PLACES";
        add(r, line_of(st, o), BKM_SLURM_ERROR, "cancelling",
            "KMP_AFFINITY (line %d) and %s (line %d) cancel each other: libomp 14 applies them in the order they "
            "appear in the environment, which the shell does not promise, and the last one wins (KMP_AFFINITY's "
            "type over OMP_PROC_BIND); keep one of the two",
            line_of(st, "KMP_AFFINITY"), o, line_of(st, o));
        return;
    }
    if (bkm_aff_setting_resolve(env, &s, NULL) == BKM_OK)
        for (int i = 0; i < s.n_ignored; i++)
            add(r, line_of(st, s.ignored[i]), BKM_SLURM_ERROR, "cancelling",
                "%s is ignored: another placement variable the script sets takes precedence over it", s.ignored[i]);
}

/* Is @p feature one of the features of the constraint expression @p c ("knl&quad", "[cpu|gpu]")? */
static int has_feature(const char *c, const char *feature)
{
    size_t n = strlen(feature);
    for (const char *p = c; *p;) {
        size_t k = strcspn(p, ",&|[]*: ");
        if (k == n && strncmp(p, feature, n) == 0)
            return 1;
        p += k + (p[k] != '\0');
    }
    return 0;
}

/* The node: --node, else the built-in profile whose constraint's first feature the script's -C
 * asks for (knl, haswell, cpu: perlmutter-cpu). */
static int node_pick(bkm_slurm_lint_t *r, const char *node, bkm_node_profile_t *prof, bkm_err_t *err)
{
    const char *name = node;
    const char *const *names = bkm_profile_builtin_names();
    for (int i = 0; name == NULL && names[i]; i++) {
        char first[64];
        if (strcmp(names[i], "auto") == 0 || bkm_profile_builtin(names[i], prof, NULL) < 0)
            continue;
        snprintf(first, sizeof first, "%.*s", (int)strcspn(prof->slurm_constraint, ",&|"), prof->slurm_constraint);
        if (first[0] && has_feature(r->constraint, first))
            name = names[i];
    }
    if (name == NULL)
        return 0;
    if (bkm_profile_resolve(name, prof, err) < 0)
        return BKM_EINVAL;
    snprintf(r->node, sizeof r->node, "%s", prof->name);
    return 1;
}

/* A script that leaves srun's -c to the job's #SBATCH -c: Slurm 22.05 and later do not pass it. */
static void check_inheritance(bkm_slurm_lint_t *r, state_t *st, const bkm_node_profile_t *prof)
{
    var_t *v = var_find(st, "SRUN_CPUS_PER_TASK");
    if (st->sb_c == 0 || st->srun_no_c_line == 0 || v != NULL)
        return;
    add(r, st->srun_no_c_line, BKM_SLURM_WARNING, "cpus-per-task",
        "srun without -c relies on inheriting #SBATCH -c %d (line %d): since Slurm 22.05 srun does not take the job's "
        "--cpus-per-task, so each rank gets 1 CPU and its threads share it%s; write srun -c %d (or export "
        "SRUN_CPUS_PER_TASK=%d)", st->sb_c, st->sb_c_line,
        prof == NULL ? ""
        : prof->batch.srun_inherits_c ? " (the Slurm of this node still passes it; a newer one will not)"
                                      : " (as on this node's Slurm)",
        st->sb_c, st->sb_c);
}

static void check_node(bkm_slurm_lint_t *r, state_t *st, const bkm_topo_t *topo, const bkm_node_profile_t *prof)
{
    bkm_topo_summary_t s;
    char owner[96];
    int nodes, tpn = 0, c, pus_per_core;
    if (strcmp(prof->batch.site, "NERSC") == 0 || (!prof->batch.site[0] && strcmp(prof->name, "auto") == 0))
        snprintf(owner, sizeof owner, "NERSC's rules");
    else if (prof->batch.site[0])
        snprintf(owner, sizeof owner, "%s's rules", prof->batch.site);
    else
        snprintf(owner, sizeof owner, "the rules of node profile %s", prof->name);
    bkm_topo_summary(topo, &s);
    pus_per_core = s.cores > 0 ? s.pus / s.cores : 1;
    nodes = st->srun_N ? st->srun_N : st->sb_nodes ? st->sb_nodes : 1;
    if (st->srun_tpn)
        tpn = st->srun_tpn;
    else if (st->srun_n)
        tpn = (st->srun_n + nodes - 1) / nodes;
    else if (st->sb_tpn)
        tpn = st->sb_tpn;
    else if (st->sb_ntasks)
        tpn = (st->sb_ntasks + nodes - 1) / nodes;
    r->ranks_per_node = tpn;
    c = st->srun_c ? st->srun_c : st->sb_c;
    r->srun_c = c;
    if (r->threads > s.pus)
        add(r, line_of(st, "OMP_NUM_THREADS"), BKM_SLURM_ERROR, "threads",
            "OMP_NUM_THREADS=%d exceeds the %d logical CPUs of a %s node", r->threads, s.pus, r->node);
    if (c && r->threads > c)
        add(r, line_of(st, "OMP_NUM_THREADS"), BKM_SLURM_ERROR, "threads",
            "OMP_NUM_THREADS=%d does not fit the %d CPUs srun -c gives each rank (line %d): threads share CPUs",
            r->threads, c, st->srun_line);
    if (tpn && c && tpn * c > s.pus)
        add(r, st->srun_line, BKM_SLURM_ERROR, "threads",
            "%d ranks per node x -c %d = %d CPUs exceed the %d of a %s node", tpn, c, tpn * c, s.pus, r->node);
    if (st->srun_line && tpn) {
        bkm_slurm_layout_t l;
        if (bkm_slurm_layout_rules(&prof->batch, s.pus, s.cores, tpn, r->threads, &l, NULL) == BKM_OK) {
            int cores_used = c ? tpn * (c / pus_per_core > 0 ? c / pus_per_core : 1) : s.cores;
            int need = tpn > s.cores || cores_used < s.cores;
            if (!c && tpn > 1)
                add(r, st->srun_line, BKM_SLURM_WARNING, "cpus-per-task",
                    "srun without -c: %d ranks per node get Slurm's default CPUs; %s for %s: -c %d (%s)",
                    tpn, owner, r->node, l.cpus_per_task, l.why);
            else if (c && c != l.cpus_per_task)
                add(r, st->srun_line, BKM_SLURM_NOTE, "cpus-per-task",
                    "srun -c %d; %s for %d ranks per node of %s give -c %d (%s)", c, owner, tpn, r->node,
                    l.cpus_per_task, l.why);
            if (need && !st->srun_bind && strcmp(l.cpu_bind, "none") != 0)
                add(r, st->srun_line, BKM_SLURM_ERROR, "cpu-bind",
                    "srun without --cpu-bind: %s, so %s need --cpu-bind=%s (else ranks float over the node)",
                    tpn > s.cores ? "more ranks than cores" : "the node is not fully packed", owner, l.cpu_bind);
        }
    }
}

static void explain(bkm_slurm_lint_t *r, const bkm_node_profile_t *prof, bkm_topo_t *topo, const bkm_aff_env_t *env)
{
    bkm_aff_plan_t *plan = NULL;
    bkm_aff_plan_opts_t po;
    bkm_topo_summary_t s;
    bkm_err_t e = {0};
    bkm_buf_t b;
    bkm_json_w_t w;
    int threads, per_core;
    bkm_topo_summary(topo, &s);
    per_core = s.cores > 0 ? s.pus / s.cores : 1;
    /* the first rank's CPUs when ranks share the node: whole cores from the first (srun -c) */
    if (r->srun_c && r->ranks_per_node > 1 && r->srun_c < s.pus) {
        bkm_cpuset_t m;
        int n_pus, ncores = r->srun_c / per_core > 0 ? r->srun_c / per_core : 1;
        const bkm_topo_pu_t *pu = bkm_topo_pus(topo, &n_pus);
        bkm_cpuset_zero(&m);
        for (int i = 0; i < n_pus; i++)
            if (pu[i].core < ncores)
                bkm_cpuset_set(&m, pu[i].os);
        bkm_topo_restrict(topo, &m, NULL);
    }
    bkm_topo_summary(topo, &s);
    threads = r->threads ? r->threads : r->srun_c ? r->srun_c : s.allowed_pus;
    memset(&po, 0, sizeof po);
    po.mic = strcmp(prof->name, "knl") == 0;
    if (bkm_aff_plan_create_ex(topo, env, threads, &po, &plan, &e) < 0) {
        add(r, 0, BKM_SLURM_ERROR, "placement", "the planner refuses this setting on %s with %d threads: %s", r->node,
            threads, e.msg);
        return;
    }
    bkm_buf_init(&b);
    bkm_buf_printf(&b, "placement of rank 0 on %s (%d allowed CPUs, %d threads%s):\n", r->node, s.allowed_pus,
                   threads, r->threads ? "" : ", OMP_NUM_THREADS unset: one per allowed CPU");
    bkm_aff_plan_explain(plan, topo, &b, NULL);
    r->plan_text = bkm_buf_take(&b);
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_aff_plan_to_json(plan, topo, &w, NULL);
    r->plan_json = bkm_buf_take(&b);
    for (int i = 0; i < bkm_aff_plan_n_warnings(plan); i++)
        add(r, 0, BKM_SLURM_WARNING, "placement", "%s", bkm_aff_plan_warning(plan, i));
    bkm_aff_plan_free(plan);
}

int bkm_slurm_lint_run(const char *text, const char *node, bkm_slurm_lint_t *r, bkm_err_t *err)
{
    bkm_slurm_lint_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.node = node;
    return bkm_slurm_lint_run_cfg(text, &cfg, r, err);
}

int bkm_slurm_lint_run_cfg(const char *text, const bkm_slurm_lint_cfg_t *cfg, bkm_slurm_lint_t *r, bkm_err_t *err)
{
    state_t *st;
    bkm_buf_t logical;
    bkm_node_profile_t prof;
    bkm_topo_t *topo = NULL;
    bkm_aff_env_t env;
    int line = 0, start = 0, rc = BKM_OK, have_node, gomp_only = 0;
    const char *p = text, *node;
    if (r == NULL || text == NULL || cfg == NULL)
        return bkm_err_set(err, BKM_EINVAL, "lint: NULL argument");
    memset(r, 0, sizeof *r);
    node = cfg->node;
    if ((st = bkm_calloc(1, sizeof *st)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "lint: out of memory");
    bkm_buf_init(&logical);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        line++;
        if (n > 0 && p[n - 1] == '\r')
            n--;
        if (logical.len == 0)
            start = line;
        if (logical.len == 0 && strncmp(p, "#SBATCH", 7) == 0) {
            char tmp[1024];
            snprintf(tmp, sizeof tmp, "%.*s", (int)(n - 7 < sizeof tmp ? n - 7 : sizeof tmp - 1), p + 7);
            sbatch_line(r, st, tmp, line);
        } else if (n > 0 && p[n - 1] == '\\') {
            bkm_buf_append(&logical, p, n - 1);
            bkm_buf_puts(&logical, " ");
        } else {
            bkm_buf_append(&logical, p, n);
            shell_line(r, st, bkm_buf_str(&logical), start);
            bkm_buf_free(&logical);
            bkm_buf_init(&logical);
        }
        p = nl ? nl + 1 : p + n;
    }
    if (logical.len)
        shell_line(r, st, bkm_buf_str(&logical), start);
    bkm_buf_free(&logical);

    check_values(r, st);
    if ((have_node = node_pick(r, node, &prof, err)) < 0) {
        rc = have_node;
        goto out;
    }
    check_inheritance(r, st, have_node ? &prof : NULL);
    if (cfg->script_dir)
        gomp_only = check_programs(r, st, cfg);
    env_from(st, &env);
    if (!gomp_only)
        check_cancelling(r, st, &env);
    if (!have_node) {
        add(r, 0, BKM_SLURM_NOTE, "node",
            "no node to check against: no -C knl/haswell/cpu constraint and no --node; thread counts and the "
            "placement are not checked");
        goto out;
    }
    if ((rc = bkm_topo_open_profile(&topo, &prof, err)) < 0)
        goto out;
    check_node(r, st, topo, &prof);
    if (gomp_only)
        add(r, 0, BKM_SLURM_NOTE, "placement",
            "the placement is not explained: the program loads GNU libgomp only, and bkm's placement planner models "
            "LLVM libomp (libgomp reads OMP_PLACES, OMP_PROC_BIND and GOMP_CPU_AFFINITY its own way)");
    else
        explain(r, &prof, topo, &env);
out:
    bkm_topo_close(topo);
    bkm_free(st);
    if (rc < 0)
        bkm_slurm_lint_free(r);
    return rc;
}

int bkm_slurm_lint_to_json(const bkm_slurm_lint_t *r, const char *script, bkm_buf_t *out)
{
    static const char *const sev[] = {"note", "warning", "error"};
    bkm_json_w_t w;
    bkm_json_w_init(&w, out, 0);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "script"), bkm_json_str(&w, script);
    bkm_json_key(&w, "node"), bkm_json_str(&w, r->node[0] ? r->node : NULL);
    bkm_json_key(&w, "constraint"), bkm_json_str(&w, r->constraint[0] ? r->constraint : NULL);
    bkm_json_key(&w, "threads"), bkm_json_int(&w, r->threads);
    bkm_json_key(&w, "srun_c"), bkm_json_int(&w, r->srun_c);
    bkm_json_key(&w, "ranks_per_node"), bkm_json_int(&w, r->ranks_per_node);
    bkm_json_key(&w, "errors"), bkm_json_int(&w, r->errors);
    bkm_json_key(&w, "warnings"), bkm_json_int(&w, r->warnings);
    bkm_json_key(&w, "findings");
    bkm_json_arr_begin(&w);
    for (size_t i = 0; i < r->n; i++) {
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "line"), bkm_json_int(&w, r->f[i].line);
        bkm_json_key(&w, "severity"), bkm_json_str(&w, sev[r->f[i].sev]);
        bkm_json_key(&w, "code"), bkm_json_str(&w, r->f[i].code);
        bkm_json_key(&w, "message"), bkm_json_str(&w, r->f[i].msg);
        bkm_json_obj_end(&w);
    }
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "placement");
    if (r->plan_json)
        bkm_json_raw(&w, r->plan_json);
    else
        bkm_json_null(&w);
    bkm_json_key(&w, "explanation"), bkm_json_str(&w, r->plan_text);
    bkm_json_key(&w, "programs");
    bkm_json_arr_begin(&w);
    for (int i = 0; i < r->n_programs; i++) {
        const bkm_slurm_lint_program_t *p = &r->programs[i];
        bkm_json_obj_begin(&w);
        bkm_json_key(&w, "line"), bkm_json_int(&w, p->line);
        bkm_json_key(&w, "program"), bkm_json_str(&w, p->word);
        bkm_json_key(&w, "path"), bkm_json_str(&w, p->path);
        bkm_json_key(&w, "kind"), bkm_json_str(&w, bkm_aff_runtime_kind_name(p->kind));
        bkm_json_key(&w, "static");
        if (p->checked)
            bkm_aff_runtime_result_to_json(&p->rt, &w, NULL);
        else
            bkm_json_null(&w);
        bkm_json_key(&w, "probe");
        if (p->probed)
            bkm_aff_runtime_result_to_json(&p->probe, &w, NULL);
        else
            bkm_json_null(&w);
        bkm_json_obj_end(&w);
    }
    bkm_json_arr_end(&w);
    bkm_json_obj_end(&w);
    return out->oom ? BKM_ENOMEM : BKM_OK;
}
