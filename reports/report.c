/* SPDX-License-Identifier: MIT */
/* The report: the document of bkm_db_report_json grouped by (node, workload) and by
 * configuration (one value per worker process: the median of its samples), rendered as one
 * HTML page with inline CSS and SVG. Every text from the document goes through bkm_rep_escape. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/reports.h"
#include "reports_int.h"

const char *const bkm_rep_sections[] = {"host",     "summary",  "heatmap", "blocktime", "scaling", "boxplots",
                                        "noise",    "layers",   "counters", "binding", "failed",    "history", NULL};

static const char *const section_titles[] = {"Host and topology",
                                             "Summary per workload",
                                             "Threads \xc3\x97 affinity",
                                             "Blocktime effect",
                                             "Scaling",
                                             "Per-process values",
                                             "Noise evidence",
                                             "Per-layer times",
                                             "Hardware counters (PAPI)",
                                             "Binding verification",
                                             "Failed trials",
                                             "Regression history"};

void bkm_rep_cfg_defaults(bkm_rep_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < BKM_REP_PEAK_MAX; i++)
        cfg->peak_gflops[i] = NAN;
}

/* ---- the model: configurations of a (node, workload) ------------------------------------- */

typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec_t;

static int dvec_push(dvec_t *d, double x)
{
    if (d->n == d->cap) {
        size_t nc = d->cap ? 2 * d->cap : 8;
        double *nv = realloc(d->v, nc * sizeof *nv);
        if (nv == NULL)
            return -1;
        d->v = nv;
        d->cap = nc;
    }
    d->v[d->n++] = x;
    return 0;
}

static double dvec_median(const dvec_t *d)
{
    double f[5];
    return bkm__rep_five(d->v, d->n, f) == 0 ? f[2] : NAN;
}

typedef struct cfg_agg {
    char *key;                  /* the configuration as canonical JSON text (owned) */
    const bkm_json_t *config;   /* borrowed from the document */
    char label[512], affinity[256], blocktime[64];
    int threads, is_default;
    dvec_t ms, gflops;          /* one value per ok trial (= per worker process) */
    dvec_t dist, share;         /* per ok trial too: its noise mark (1, 0, -1 unknown) and share */
    size_t n_trials, n_failed;
    const bkm_json_t *binding;  /* of the first trial that has one */
    const bkm_json_t *layers;   /* of the first trial that has them */
    const bkm_json_t *counters; /* of the first ok trial */
    double median, gflops_median;
} cfg_agg_t;

typedef struct group {
    const char *node, *workload;
    const bkm_json_t *host;     /* host object of the newest sweep */
    const bkm_json_t *best;     /* the best-known setting stored, or NULL */
    cfg_agg_t *cfgs;
    size_t n, cap;
} group_t;

typedef struct model {
    bkm_json_t *doc;
    const bkm_json_t *sweeps, *trials, *best, *gates;
    group_t *groups;
    size_t n;
} model_t;

static void model_free(model_t *m)
{
    for (size_t g = 0; g < m->n; g++) {
        for (size_t c = 0; c < m->groups[g].n; c++) {
            free(m->groups[g].cfgs[c].key);
            free(m->groups[g].cfgs[c].ms.v);
            free(m->groups[g].cfgs[c].gflops.v);
            free(m->groups[g].cfgs[c].dist.v);
            free(m->groups[g].cfgs[c].share.v);
        }
        free(m->groups[g].cfgs);
    }
    free(m->groups);
    bkm_json_free(m->doc);
}

static const char *jstr(const bkm_json_t *j, const char *key)
{
    const char *s = j ? bkm_json_get_str(j, key) : NULL;
    return s;
}

static char *json_text(const bkm_json_t *j)
{
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    bkm_json_write_tree(&w, j);
    return bkm_buf_take(&b);
}

/* "threads=2 KMP_AFFINITY=compact m=64" and its parts. */
static void cfg_describe(cfg_agg_t *c)
{
    const bkm_json_t *env = bkm_json_get(c->config, "env"), *params = bkm_json_get(c->config, "params");
    size_t o = 0, a = 0;
    c->threads = (int)bkm_json_get_num(c->config, "threads", 0);
    c->is_default = bkm_json_get(c->config, "default") && bkm_json_get(c->config, "default")->boolean;
    snprintf(c->blocktime, sizeof c->blocktime, "unset");
    o += (size_t)snprintf(c->label, sizeof c->label, "threads=%d", c->threads);
    c->affinity[0] = '\0';
    for (const bkm_json_t *e = env ? env->child : NULL; e; e = e->next) {
        const char *v = e->type == BKM_JSON_STR ? e->str : "?";
        if (o < sizeof c->label)
            o += (size_t)snprintf(c->label + o, sizeof c->label - o, " %s=%s", e->key, v);
        if (strcmp(e->key, "KMP_BLOCKTIME") == 0)
            snprintf(c->blocktime, sizeof c->blocktime, "%s", v);
        else if (a < sizeof c->affinity)
            a += (size_t)snprintf(c->affinity + a, sizeof c->affinity - a, "%s%s=%s", a ? " " : "", e->key, v);
    }
    for (const bkm_json_t *p = params ? params->child : NULL; p; p = p->next)
        if (o < sizeof c->label)
            o += (size_t)snprintf(c->label + o, sizeof c->label - o, " %s=%s", p->key,
                                  p->type == BKM_JSON_STR ? p->str : "?");
    if (a == 0)
        snprintf(c->affinity, sizeof c->affinity, "unbound (nothing set)");
    if (c->is_default && o < sizeof c->label)
        snprintf(c->label + o, sizeof c->label - o, " (default)");
}

static group_t *group_find(model_t *m, const char *node, const char *workload, int create)
{
    group_t *ng;
    for (size_t g = 0; g < m->n; g++)
        if (strcmp(m->groups[g].node, node) == 0 && strcmp(m->groups[g].workload, workload) == 0)
            return &m->groups[g];
    if (!create || (ng = realloc(m->groups, (m->n + 1) * sizeof *ng)) == NULL)
        return NULL;
    m->groups = ng;
    ng = &m->groups[m->n++];
    memset(ng, 0, sizeof *ng);
    ng->node = node;
    ng->workload = workload;
    return ng;
}

static cfg_agg_t *cfg_find(group_t *g, const bkm_json_t *config)
{
    char *key = json_text(config);
    cfg_agg_t *c;
    if (key == NULL)
        return NULL;
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->cfgs[i].key, key) == 0) {
            free(key);
            return &g->cfgs[i];
        }
    if (g->n == g->cap) {
        size_t nc = g->cap ? 2 * g->cap : 16;
        cfg_agg_t *n = realloc(g->cfgs, nc * sizeof *n);
        if (n == NULL) {
            free(key);
            return NULL;
        }
        g->cfgs = n;
        g->cap = nc;
    }
    c = &g->cfgs[g->n++];
    memset(c, 0, sizeof *c);
    c->key = key;
    c->config = config;
    cfg_describe(c);
    return c;
}

static const bkm_json_t *sweep_by_id(const model_t *m, double id)
{
    for (const bkm_json_t *s = m->sweeps->child; s; s = s->next)
        if (bkm_json_get_num(s, "id", -1) == id)
            return s;
    return NULL;
}

/* A trial's noise mark: 1 disturbed, 0 not, -1 unknown (no evidence: an older database or worker). */
static double trial_disturbed(const bkm_json_t *t)
{
    const bkm_json_t *d = bkm_json_get(t, "disturbed");
    return d && d->type == BKM_JSON_BOOL ? (d->boolean ? 1 : 0) : -1;
}

static int model_build(model_t *m, const char *json, bkm_err_t *err)
{
    int ret;
    memset(m, 0, sizeof *m);
    if ((ret = bkm_json_parse(json, &m->doc, err)) < 0)
        return bkm_err_prefix(err, "report document");
    m->sweeps = bkm_json_get(m->doc, "sweeps");
    m->trials = bkm_json_get(m->doc, "trials");
    m->best = bkm_json_get(m->doc, "best");
    m->gates = bkm_json_get(m->doc, "gates");
    if (!m->sweeps || m->sweeps->type != BKM_JSON_ARR || !m->trials || m->trials->type != BKM_JSON_ARR ||
        !m->best || m->best->type != BKM_JSON_ARR || !m->gates || m->gates->type != BKM_JSON_ARR)
        return bkm_err_set(err, BKM_EINVAL, "report document: sweeps, trials, best and gates must be arrays");
    for (const bkm_json_t *s = m->sweeps->child; s; s = s->next) {
        const char *node = jstr(s, "node"), *wl = jstr(s, "workload");
        group_t *g;
        if (!node || !wl)
            continue;
        if ((g = group_find(m, node, wl, 1)) == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "report: out of memory");
        g->host = bkm_json_get(s, "host");
    }
    for (const bkm_json_t *t = m->trials->child; t; t = t->next) {
        const bkm_json_t *s = sweep_by_id(m, bkm_json_get_num(t, "sweep", -1)), *cfg = bkm_json_get(t, "config");
        const char *status = jstr(t, "status");
        group_t *g;
        cfg_agg_t *c;
        double med = bkm_json_get_num(t, "median_ms", NAN), gf = bkm_json_get_num(t, "gflops", NAN);
        if (!s || !cfg || cfg->type != BKM_JSON_OBJ || !jstr(s, "node") || !jstr(s, "workload"))
            continue;
        if ((g = group_find(m, jstr(s, "node"), jstr(s, "workload"), 0)) == NULL || (c = cfg_find(g, cfg)) == NULL)
            return bkm_err_set(err, BKM_ENOMEM, "report: out of memory");
        c->n_trials++;
        if (!c->binding && bkm_json_get(t, "binding") && bkm_json_get(t, "binding")->type == BKM_JSON_OBJ)
            c->binding = bkm_json_get(t, "binding");
        if (!c->layers && bkm_json_get(t, "layers") && bkm_json_get(t, "layers")->type == BKM_JSON_ARR)
            c->layers = bkm_json_get(t, "layers");
        if (!status || strcmp(status, "ok") != 0 || !isfinite(med)) {
            c->n_failed++;
            continue;
        }
        if (!c->counters && bkm_json_get(t, "counters") && bkm_json_get(t, "counters")->n_children)
            c->counters = bkm_json_get(t, "counters");
        if (dvec_push(&c->ms, med) < 0 || (isfinite(gf) && dvec_push(&c->gflops, gf) < 0) ||
            dvec_push(&c->dist, trial_disturbed(t)) < 0 || dvec_push(&c->share, bkm_json_get_num(t, "noise_share", NAN)) < 0)
            return bkm_err_set(err, BKM_ENOMEM, "report: out of memory");
    }
    for (size_t i = 0; i < m->n; i++)
        for (size_t c = 0; c < m->groups[i].n; c++) {
            m->groups[i].cfgs[c].median = dvec_median(&m->groups[i].cfgs[c].ms);
            m->groups[i].cfgs[c].gflops_median = dvec_median(&m->groups[i].cfgs[c].gflops);
        }
    for (const bkm_json_t *b = m->best->child; b; b = b->next) {
        group_t *g = jstr(b, "node") && jstr(b, "workload") ? group_find(m, jstr(b, "node"), jstr(b, "workload"), 0)
                                                            : NULL;
        if (g)
            g->best = b;
    }
    return BKM_OK;
}

/* The best configuration of a group: the stored best-known setting's, else the lowest median. */
static cfg_agg_t *group_best(group_t *g)
{
    cfg_agg_t *best = NULL;
    if (g->best && bkm_json_get(g->best, "config")) {
        char *key = json_text(bkm_json_get(g->best, "config"));
        for (size_t i = 0; key && i < g->n; i++)
            if (strcmp(g->cfgs[i].key, key) == 0)
                best = &g->cfgs[i];
        free(key);
        if (best)
            return best;
    }
    for (size_t i = 0; i < g->n; i++)
        if (isfinite(g->cfgs[i].median) && (!best || g->cfgs[i].median < best->median))
            best = &g->cfgs[i];
    return best;
}

static cfg_agg_t *group_default(group_t *g)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->cfgs[i].is_default)
            return &g->cfgs[i];
    return NULL;
}

/* ---- page pieces ---------------------------------------------------------------------- */

#define P(...) bkm_buf_printf(out, __VA_ARGS__)
#define E(s) bkm_rep_escape(out, (s))

static void section_begin(bkm_buf_t *out, int i)
{
    P("<section id=\"sec-%s\" data-bkm-section=\"%s\">\n<h2>%s</h2>\n", bkm_rep_sections[i], bkm_rep_sections[i],
      section_titles[i]);
}

static void section_end(bkm_buf_t *out)
{
    P("</section>\n");
}

static void empty(bkm_buf_t *out, const char *why)
{
    P("<p class=\"empty\">%s</p>\n", why);
}

static void group_title(bkm_buf_t *out, const group_t *g)
{
    P("<h3>");
    E(g->workload);
    P(" on ");
    E(g->node);
    P("</h3>\n");
}

static double peak_at(const bkm_rep_cfg_t *cfg, const group_t *g, int threads)
{
    const char *host = g->host ? jstr(g->host, "hostname") : NULL;
    if (!cfg->peak_host || !host || strcmp(host, cfg->peak_host) != 0 || threads < 1 || threads > cfg->n_peak)
        return NAN;
    return cfg->peak_gflops[threads - 1] > 0 ? cfg->peak_gflops[threads - 1] : NAN;
}

/* A CPU list "0-3,8" into a set of flags (PU os index < cap). */
static void cpulist_mark(const char *s, unsigned char *set, size_t cap)
{
    while (s && *s) {
        char *end;
        long a = strtol(s, &end, 10), b;
        if (end == s)
            return;
        b = a;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long i = a; i <= b && i >= 0 && (size_t)i < cap; i++)
            set[i] = 1;
        s = *end == ',' ? end + 1 : NULL;
    }
}

#define PU_CAP 4096
/* What one topology drawing shows at most, whatever the stored topology says: a larger one is
 * drawn in part, and the caption says so (a stored topology is data; 200000 packages would make
 * a page of tens of megabytes). */
#define TOPO_DRAW_PACKAGES 64
#define TOPO_DRAW_CORES 2048
#define TOPO_DRAW_PUS_PER_CORE 16

/* The topology drawing: packages, cores, PUs; the PUs in @p used filled. */
static void topo_svg(bkm_buf_t *out, const bkm_json_t *topo, const unsigned char *used, const char *caption)
{
    const bkm_json_t *cores = topo ? bkm_json_get(topo, "cores_list") : NULL;
    const bkm_json_t *sel[TOPO_DRAW_CORES];
    double stored_pkg = topo ? bkm_json_get_num(topo, "packages", 1) : 1;
    int npkg = TOPO_DRAW_PACKAGES, maxpus = 1, per_row = 8, y = 0, cut = 0, nsel = 0;
    int selpkg[TOPO_DRAW_CORES], per_pkg[TOPO_DRAW_PACKAGES] = {0};
    int cw, ch = 24, width;
    if (!cores || cores->type != BKM_JSON_ARR || cores->n_children == 0) {
        empty(out, "No topology stored with this host.");
        return;
    }
    /* the packages drawn: as many as stored, at most the limit */
    if (stored_pkg >= 1 && stored_pkg < TOPO_DRAW_PACKAGES)
        npkg = (int)stored_pkg;
    else if (stored_pkg > TOPO_DRAW_PACKAGES)
        cut = 1;
    /* one pass over the stored cores: those of a drawn package, up to the limit */
    for (const bkm_json_t *c = cores->child; c; c = c->next) {
        const bkm_json_t *pus = bkm_json_get(c, "pus");
        double pk = bkm_json_get_num(c, "pkg", 0);
        if (!(pk >= 0 && pk < npkg) || nsel == TOPO_DRAW_CORES) {
            cut = 1;
            continue;
        }
        if (pus && pus->n_children > TOPO_DRAW_PUS_PER_CORE)
            cut = 1;
        if (pus && (int)(pus->n_children > TOPO_DRAW_PUS_PER_CORE ? TOPO_DRAW_PUS_PER_CORE : pus->n_children) > maxpus)
            maxpus = pus->n_children > TOPO_DRAW_PUS_PER_CORE ? TOPO_DRAW_PUS_PER_CORE : (int)pus->n_children;
        selpkg[nsel] = (int)pk;
        sel[nsel++] = c;
        per_pkg[(int)pk]++;
    }
    cw = maxpus * 14 + 8;
    width = per_row * (cw + 6) + 16;
    bkm_buf_t body;
    bkm_buf_init(&body);
    for (int p = 0; p < npkg; p++) {
        int k = per_pkg[p], rows;
        if (k == 0)
            continue;
        rows = (k + per_row - 1) / per_row;
        bkm_buf_printf(&body, "<rect x=\"2\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"pkg\"/>"
                              "<text x=\"8\" y=\"%d\" class=\"small\">package %d</text>\n",
                       y + 2, width - 4, rows * (ch + 6) + 22, y + 15, p);
        k = 0;
        for (int s = 0; s < nsel; s++) {
            const bkm_json_t *c = sel[s], *pus;
            int cx, cy, i = 0;
            if (selpkg[s] != p)
                continue;
            pus = bkm_json_get(c, "pus");
            cx = 8 + (k % per_row) * (cw + 6);
            cy = y + 20 + (k / per_row) * (ch + 6);
            bkm_buf_printf(&body, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"core\"><title>core %d"
                                  "</title></rect>\n",
                           cx, cy, cw, ch, (int)bkm_json_get_num(c, "core", 0));
            for (const bkm_json_t *u = pus ? pus->child : NULL; u && i < TOPO_DRAW_PUS_PER_CORE; u = u->next, i++) {
                int os = (int)u->num;
                int on = os >= 0 && os < PU_CAP && used[os];
                bkm_buf_printf(&body, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" class=\"%s\"><title>PU %d%s"
                                      "</title></rect>\n",
                               cx + 4 + i * 14, cy + 6, on ? "pu on" : "pu", os, on ? " (used)" : "");
            }
            k++;
        }
        y += rows * (ch + 6) + 28;
    }
    P("<figure class=\"topo\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\">\n",
      width, y + 2);
    bkm_buf_puts(out, bkm_buf_str(&body));
    P("</svg><figcaption>");
    E(caption);
    if (cut)
        P(" (drawn in part: at most %d packages, %d cores and %d PUs per core; the stored topology has %.0f "
          "package(s) and %zu core(s))", TOPO_DRAW_PACKAGES, TOPO_DRAW_CORES, TOPO_DRAW_PUS_PER_CORE, stored_pkg,
          cores->n_children);
    P("</figcaption></figure>\n");
    bkm_buf_free(&body);
}

/* A program trial's binding evidence (docs/programs.md, "Binding evidence"): the members of its
 * team's check; NULL for a worker's evidence. */
static const bkm_json_t *program_members(const bkm_json_t *b)
{
    const bkm_json_t *team = b ? bkm_json_get(b, "team") : NULL, *chk = team ? bkm_json_get(team, "check") : NULL;
    const bkm_json_t *m = chk && chk->type == BKM_JSON_OBJ ? bkm_json_get(chk, "members") : NULL;
    return b && bkm_json_get(b, "program") && m && m->type == BKM_JSON_ARR ? m : NULL;
}

/* Whether the stored evidence says the threads were bound as planned: a worker's "ok", a
 * program's "verified". */
static int binding_ok(const bkm_json_t *b)
{
    const bkm_json_t *v = b ? bkm_json_get(b, "ok") : NULL;
    if (v == NULL && b != NULL)
        v = bkm_json_get(b, "verified");
    return v && v->type == BKM_JSON_BOOL && v->boolean;
}

static void pus_of(const cfg_agg_t *c, unsigned char *used, char *how, size_t n)
{
    const bkm_json_t *th = c && c->binding ? bkm_json_get(c->binding, "threads") : NULL;
    const bkm_json_t *pm = c ? program_members(c->binding) : NULL;
    int bound = c && c->binding && bkm_json_get(c->binding, "bound") && bkm_json_get(c->binding, "bound")->boolean;
    memset(used, 0, PU_CAP);
    if (pm != NULL)   /* a program's team: the masks each member was seen with */
        th = pm;
    for (const bkm_json_t *t = th ? th->child : NULL; t; t = t->next) {
        const bkm_json_t *ob = pm ? bkm_json_get(t, "observed") : NULL;
        if (pm == NULL)
            cpulist_mark(jstr(t, "actual"), used, PU_CAP);
        for (const bkm_json_t *o = ob && ob->type == BKM_JSON_ARR ? ob->child : NULL; o; o = o->next)
            if (o->type == BKM_JSON_STR)
                cpulist_mark(o->str, used, PU_CAP);
    }
    snprintf(how, n, "%s", !c ? "not measured" : !th ? "no binding evidence stored"
                           : bound ? "threads bound: PUs of their masks" : "unbound: any PU of the process mask");
}

static void sec_host(bkm_buf_t *out, model_t *m)
{
    unsigned char *used = malloc(PU_CAP);
    section_begin(out, 0);
    if (m->sweeps->n_children == 0)
        empty(out, "The database holds no sweep for this selection.");
    else {
        P("<table><tr><th>sweep</th><th>label</th><th>node</th><th>workload</th><th>host</th><th>CPU</th>"
          "<th>fingerprint</th><th>revision</th><th>started</th><th>status</th></tr>\n");
        for (const bkm_json_t *s = m->sweeps->child; s; s = s->next) {
            const bkm_json_t *h = bkm_json_get(s, "host");
            static const char *const k1[] = {"label", "node", "workload"};
            static const char *const k2[] = {"hostname", "cpu_model", "fingerprint"};
            static const char *const k3[] = {"git_revision", "started_at", "status"};
            P("<tr><td>%g</td>", bkm_json_get_num(s, "id", 0));
            for (int i = 0; i < 3; i++)
                P("<td%s>", i == 0 ? " class=\"label\"" : ""), E(jstr(s, k1[i])), P("</td>");
            for (int i = 0; i < 3; i++)
                P("<td>"), E(jstr(h, k2[i])), P("</td>");
            for (int i = 0; i < 3; i++)
                P("<td>"), E(jstr(s, k3[i])), P("</td>");
            P("</tr>\n");
        }
        P("</table>\n");
    }
    for (size_t i = 0; used && i < m->n; i++) {
        group_t *g = &m->groups[i];
        cfg_agg_t *b = group_best(g), *d = group_default(g);
        char how[96], cap[800];
        const bkm_json_t *topo = g->host ? bkm_json_get(g->host, "topology") : NULL;
        group_title(out, g);
        if (topo && topo->type == BKM_JSON_OBJ)
            P("<p>"), E(jstr(topo, "cpu_model")), P(", %g package(s), %g core(s), %g PU(s), ISA ",
                                                       bkm_json_get_num(topo, "packages", NAN),
                                                       bkm_json_get_num(topo, "cores", NAN),
                                                       bkm_json_get_num(topo, "pus", NAN)),
                E(jstr(topo, "isa")), P("</p>\n");
        P("<div class=\"pair\">\n");
        pus_of(b, used, how, sizeof how);
        snprintf(cap, sizeof cap, "best: %s (%s)", b ? b->label : "none", how);
        topo_svg(out, topo, used, cap);
        pus_of(d, used, how, sizeof how);
        snprintf(cap, sizeof cap, "default: %s (%s)", d ? d->label : "not measured", how);
        topo_svg(out, topo, used, cap);
        P("</div>\n");
    }
    free(used);
    section_end(out);
}

static const bkm_json_t *evidence_winner(const bkm_json_t *best)
{
    const bkm_json_t *ev = best ? bkm_json_get(best, "evidence") : NULL;
    const bkm_json_t *cands = ev ? bkm_json_get(ev, "candidates") : NULL, *win = ev ? bkm_json_get(ev, "winner") : NULL;
    for (const bkm_json_t *c = cands ? cands->child : NULL; c && win; c = c->next)
        if (bkm_json_get_num(c, "arm", -1) == win->num)
            return c;
    return NULL;
}

/* What the sequential confirmation decided (docs/report-and-gate.md, "tune report"): the sweep's
 * decision, the winner's test, what it cost, and each candidate's statement. */
static void summary_decision(bkm_buf_t *out, const bkm_json_t *best, const bkm_json_t *ev, const bkm_json_t *w)
{
    const char *d = jstr(best, "decision");
    const bkm_json_t *design = bkm_json_get(ev, "design"), *cands = bkm_json_get(ev, "candidates");
    double nbt = bkm_json_get_num(best, "not_better_than", NAN);
    if (strcmp(d, "claimed") == 0)
        P("<b>claimed</b>: beats the default beyond the noise");
    else if (strcmp(d, "not-better") == 0 && nbt > 1.0)
        P("<b>not better</b>: the default stands; no setting tested is better by more than %.1f%%", 100.0 * (nbt - 1.0));
    else if (strcmp(d, "not-better") == 0)
        P("<b>not better</b>: the default stands; every setting tested is slower or equal");
    else
        P("<b>undecided at the budget</b>: the default stands, nothing was shown better or not better");
    if (w)
        P("; one-sided Mann-Whitney p %.2g &le; %.2g at look %g", bkm_json_get_num(w, "p", NAN),
          bkm_json_get_num(w, "nominal_level", NAN), bkm_json_get_num(w, "looks", NAN));
    P(". %g confirmation processes, %g look(s), %g per side (blocks of %g, at most %g), order ",
      bkm_json_get_num(ev, "confirm_processes", NAN), bkm_json_get_num(design, "looks", NAN),
      bkm_json_get_num(ev, "processes_per_side", NAN), bkm_json_get_num(ev, "replicates", NAN),
      bkm_json_get_num(ev, "replicates_max", NAN));
    E(jstr(ev, "order")), P(", "), E(jstr(design, "spending")), P(" spending, family-wise &alpha; ");
    bkm__rep_num(out, bkm_json_get_num(ev, "alpha_familywise", NAN), "%g");
    P(".");
    for (const bkm_json_t *c = cands ? cands->child : NULL; c; c = c->next) {
        P("<br>candidate %g (", bkm_json_get_num(c, "arm", NAN)), E(jstr(c, "decision")), P("): ");
        E(jstr(c, "statement"));
    }
}

static void sec_summary(bkm_buf_t *out, model_t *m, const bkm_rep_cfg_t *cfg)
{
    section_begin(out, 1);
    if (m->n == 0)
        empty(out, "No workload measured.");
    else
        P("<table><tr><th>node / workload</th><th>best setting</th><th>median ms [95%% interval]</th>"
          "<th>default ms</th><th>speedup over default</th><th>evidence</th><th>GFLOP/s</th>"
          "<th>%% of measured peak</th></tr>\n");
    for (size_t i = 0; i < m->n; i++) {
        group_t *g = &m->groups[i];
        cfg_agg_t *b = group_best(g), *d = group_default(g);
        const bkm_json_t *w = evidence_winner(g->best), *ev = g->best ? bkm_json_get(g->best, "evidence") : NULL;
        double pk = b ? peak_at(cfg, g, b->threads) : NAN;
        P("<tr><td>"), E(g->node), P(" / "), E(g->workload), P("</td><td>"), E(b ? b->label : "none"), P("</td><td>");
        if (g->best) {
            const bkm_json_t *ci = bkm_json_get(g->best, "ci95");
            bkm__rep_num(out, bkm_json_get_num(g->best, "median_ms", NAN), "%.4g");
            P(" [");
            bkm__rep_num(out, ci && bkm_json_at(ci, 0) ? bkm_json_at(ci, 0)->num : NAN, "%.4g");
            P(", ");
            bkm__rep_num(out, ci && bkm_json_at(ci, 1) ? bkm_json_at(ci, 1)->num : NAN, "%.4g");
            P("]");
        } else
            bkm__rep_num(out, b ? b->median : NAN, "%.4g");
        P("</td><td>");
        bkm__rep_num(out, d ? d->median : NAN, "%.4g");
        P("</td><td>");
        if (g->best) {
            bkm__rep_num(out, bkm_json_get_num(g->best, "speedup", NAN), "%.3fx");
            if (w) {
                /* the repeated interval of a sequential confirmation; a fixed round's exact rank one */
                const bkm_json_t *ci = bkm_json_get(w, "ratio_rci") ? bkm_json_get(w, "ratio_rci")
                                                                      : bkm_json_get(w, "ratio_ci95_exact_rank");
                P(" [");
                bkm__rep_num(out, ci && bkm_json_at(ci, 0) ? bkm_json_at(ci, 0)->num : NAN, "%.3g");
                P(", ");
                bkm__rep_num(out, ci && bkm_json_at(ci, 1) ? bkm_json_at(ci, 1)->num : NAN, "%.3g");
                P("]");
            }
        } else if (b && d && b->median > 0)
            bkm__rep_num(out, d->median / b->median, "%.3fx (search only)");
        P("</td><td>");
        if (g->best && jstr(g->best, "decision") && ev && bkm_json_get(ev, "design"))
            summary_decision(out, g->best, ev, w);
        else if (g->best) {   /* a fixed confirmation round, stored before the sequential design */
            P("<b>%s</b> ", bkm_json_get(g->best, "significant") && bkm_json_get(g->best, "significant")->boolean
                                ? "significant"
                                : "not significant: the default stands");
            if (w)
                P("Mann-Whitney p %.2g, Holm %.2g; ", bkm_json_get_num(w, "p", NAN), bkm_json_get_num(w, "p_holm", NAN));
            if (ev)
                P("%g processes per side, order ", bkm_json_get_num(ev, "replicates", NAN)), E(jstr(ev, "order")),
                    P(". "), E(jstr(ev, "verdict"));
        } else
            P("no confirmation round: no claim");
        P("</td><td>");
        bkm__rep_num(out, b ? b->gflops_median : NAN, "%.4g");
        P("</td><td>");
        if (b && isfinite(pk) && isfinite(b->gflops_median))
            P("%.1f%% of %.4g", 100.0 * b->gflops_median / pk, pk);
        else
            P("peak not measured for this host");
        P("</td></tr>\n");
    }
    if (m->n)
        P("</table>\n");
    section_end(out);
}

/* Distinct values, in order of first appearance. */
static int idx_of(const char **v, int *n, int cap, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(v[i], s) == 0)
            return i;
    if (*n == cap)
        return -1;
    v[*n] = s;
    return (*n)++;
}

#define AXIS_MAX 64

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static void sec_heatmap(bkm_buf_t *out, model_t *m)
{
    int any = 0;
    section_begin(out, 2);
    P("<p>Each cell: the lowest median (ms, over the per-process values) of the configurations with that thread count "
      "and affinity, whatever their blocktime and parameters; green is fast, red slow (log scale).</p>\n");
    for (size_t i = 0; i < m->n; i++) {
        group_t *g = &m->groups[i];
        const char *aff[AXIS_MAX];
        int thr[AXIS_MAX], na = 0, nt = 0;
        double cell[AXIS_MAX][AXIS_MAX], lo = INFINITY, hi = 0;
        for (size_t c = 0; c < g->n; c++) {
            int seen = 0;
            idx_of(aff, &na, AXIS_MAX, g->cfgs[c].affinity);
            for (int t = 0; t < nt; t++)
                seen |= thr[t] == g->cfgs[c].threads;
            if (!seen && nt < AXIS_MAX)
                thr[nt++] = g->cfgs[c].threads;
        }
        qsort(thr, (size_t)nt, sizeof *thr, cmp_int);
        for (int t = 0; t < nt; t++)
            for (int a = 0; a < na; a++)
                cell[t][a] = NAN;
        for (size_t c = 0; c < g->n; c++) {
            int a = idx_of(aff, &na, AXIS_MAX, g->cfgs[c].affinity), t = 0;
            double v = g->cfgs[c].median;
            while (t < nt && thr[t] != g->cfgs[c].threads)
                t++;
            if (a < 0 || t == nt || !isfinite(v))
                continue;
            if (!isfinite(cell[t][a]) || v < cell[t][a])
                cell[t][a] = v;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        if (!isfinite(lo))
            continue;
        any = 1;
        group_title(out, g);
        P("<table class=\"heat\"><tr><th>threads \\ affinity</th>");
        for (int a = 0; a < na; a++)
            P("<th>"), E(aff[a]), P("</th>");
        P("</tr>\n");
        for (int t = 0; t < nt; t++) {
            P("<tr><th>%d</th>", thr[t]);
            for (int a = 0; a < na; a++) {
                char rgb[8];
                if (!isfinite(cell[t][a])) {
                    P("<td class=\"na\">not measured</td>");
                    continue;
                }
                bkm__rep_colour(hi > lo ? log(cell[t][a] / lo) / log(hi / lo) : 0, rgb);
                P("<td style=\"background:%s\">%.4g</td>", rgb, cell[t][a]);
            }
            P("</tr>\n");
        }
        P("</table>\n");
    }
    if (!any)
        empty(out, "No successful trial to place.");
    section_end(out);
}

static void sec_blocktime(bkm_buf_t *out, model_t *m)
{
    int any = 0;
    section_begin(out, 3);
    P("<p>Per KMP_BLOCKTIME value: the lowest median of the configurations with it, and how much slower that is than "
      "the best of all.</p>\n");
    for (size_t i = 0; i < m->n; i++) {
        group_t *g = &m->groups[i];
        const char *bt[AXIS_MAX];
        double best[AXIS_MAX], lo = INFINITY, hi = 0;
        int nb = 0;
        for (int k = 0; k < AXIS_MAX; k++)
            best[k] = NAN;
        for (size_t c = 0; c < g->n; c++) {
            int k = idx_of(bt, &nb, AXIS_MAX, g->cfgs[c].blocktime);
            double v = g->cfgs[c].median;
            if (k >= 0 && isfinite(v) && (!isfinite(best[k]) || v < best[k]))
                best[k] = v;
        }
        for (int k = 0; k < nb; k++)
            if (isfinite(best[k]))
                lo = fmin(lo, best[k]), hi = fmax(hi, best[k]);
        if (!isfinite(lo))
            continue;
        any = 1;
        group_title(out, g);
        P("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"%d\" role=\"img\">\n", nb * 26 + 10);
        for (int k = 0; k < nb; k++) {
            double wd = isfinite(best[k]) ? 380.0 * best[k] / hi : 0;
            P("<text x=\"4\" y=\"%d\" class=\"small\">KMP_BLOCKTIME=", k * 26 + 20), E(bt[k]), P("</text>");
            P("<rect x=\"170\" y=\"%d\" width=\"%.1f\" height=\"18\" class=\"bar\"/>", k * 26 + 6, wd);
            P("<text x=\"%.1f\" y=\"%d\" class=\"small\">", 176 + wd, k * 26 + 20);
            bkm__rep_num(out, best[k], "%.4g ms");
            P(" (");
            bkm__rep_num(out, best[k] / lo, "%.3fx");
            P(")</text>\n");
        }
        P("</svg>\n");
    }
    if (!any)
        empty(out, "No successful trial.");
    section_end(out);
}

static void sec_scaling(bkm_buf_t *out, model_t *m, const bkm_rep_cfg_t *cfg)
{
    int any = 0;
    section_begin(out, 4);
    P("<p>GFLOP/s of the fastest configuration at each thread count (median over its processes); the dashed line is "
      "the FP32 FMA peak measured on this host with that many threads, when it was measured.</p>\n");
    for (size_t i = 0; i < m->n; i++) {
        group_t *g = &m->groups[i];
        int thr[AXIS_MAX], nt = 0, tmax = 1, npk = 0;
        double gf[AXIS_MAX], ymax = 0;
        const double W = 560, H = 260, X0 = 60, Y0 = 230;
        for (size_t c = 0; c < g->n; c++) {
            int t = 0;
            if (!isfinite(g->cfgs[c].gflops_median))
                continue;
            while (t < nt && thr[t] != g->cfgs[c].threads)
                t++;
            if (t == nt) {
                if (nt == AXIS_MAX)
                    continue;
                thr[nt] = g->cfgs[c].threads, gf[nt++] = 0;
            }
            gf[t] = fmax(gf[t], g->cfgs[c].gflops_median);
        }
        if (nt == 0)
            continue;
        any = 1;
        /* sort by threads (insertion sort of the pairs) */
        for (int a = 1; a < nt; a++)
            for (int b = a; b > 0 && thr[b] < thr[b - 1]; b--) {
                int ti = thr[b];
                double gi = gf[b];
                thr[b] = thr[b - 1], gf[b] = gf[b - 1];
                thr[b - 1] = ti, gf[b - 1] = gi;
            }
        for (int t = 0; t < nt; t++) {
            double pk = peak_at(cfg, g, thr[t]);
            tmax = thr[t] > tmax ? thr[t] : tmax;
            ymax = fmax(ymax, gf[t]);
            if (isfinite(pk))
                ymax = fmax(ymax, pk), npk++;
        }
        ymax *= 1.1;
        group_title(out, g);
        P("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W + 80, H + 20);
        P("<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" class=\"axis\"/><line x1=\"%g\" y1=\"%g\" x2=\"%g\" "
          "y2=\"20\" class=\"axis\"/>\n",
          X0, Y0, X0 + W, Y0, X0, Y0, X0);
        P("<text x=\"%g\" y=\"%g\" class=\"small\">threads</text><text x=\"4\" y=\"14\" class=\"small\">GFLOP/s "
          "(max %.4g)</text>\n",
          X0 + W / 2, Y0 + 24, ymax / 1.1);
#define SX(t) (X0 + W * (double)(t) / (double)tmax)
#define SY(v) (Y0 - (Y0 - 20) * (v) / ymax)
        for (int t = 0; t < nt; t++)
            P("<text x=\"%.1f\" y=\"%g\" class=\"small\">%d</text>", SX(thr[t]) - 4, Y0 + 12, thr[t]);
        if (npk) {
            P("<polyline class=\"peak\" points=\"");
            for (int t = 0; t < nt; t++) {
                double pk = peak_at(cfg, g, thr[t]);
                if (isfinite(pk))
                    P("%.1f,%.1f ", SX(thr[t]), SY(pk));
            }
            P("\"/><text x=\"%g\" y=\"30\" class=\"small peaklabel\">measured peak</text>\n", X0 + 8);
        } else
            P("<text x=\"%g\" y=\"30\" class=\"small\">peak not measured for this host</text>\n", X0 + 8);
        P("<polyline class=\"curve\" points=\"");
        for (int t = 0; t < nt; t++)
            P("%.1f,%.1f ", SX(thr[t]), SY(gf[t]));
        P("\"/>\n");
        for (int t = 0; t < nt; t++)
            P("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" class=\"dot\"><title>%d threads: %.4g GFLOP/s</title></circle>\n",
              SX(thr[t]), SY(gf[t]), thr[t], gf[t]);
#undef SX
#undef SY
        P("</svg>\n");
    }
    if (!any)
        empty(out, "No trial reported GFLOP/s.");
    section_end(out);
}

static int cmp_cfg_median(const void *a, const void *b)
{
    const cfg_agg_t *x = *(const cfg_agg_t *const *)a, *y = *(const cfg_agg_t *const *)b;
    double u = isfinite(x->median) ? x->median : INFINITY, v = isfinite(y->median) ? y->median : INFINITY;
    return (u > v) - (u < v);
}

/* The top @p k configurations by median, then the default if not among them. */
static size_t top_cfgs(group_t *g, cfg_agg_t **sel, size_t k)
{
    cfg_agg_t **all = malloc((g->n ? g->n : 1) * sizeof *all), *d = group_default(g);
    size_t n = 0, have_d = 0;
    if (all == NULL)
        return 0;
    for (size_t i = 0; i < g->n; i++)
        all[i] = &g->cfgs[i];
    qsort(all, g->n, sizeof *all, cmp_cfg_median);
    for (size_t i = 0; i < g->n && n < k; i++)
        if (all[i]->ms.n) {
            sel[n++] = all[i];
            have_d |= all[i] == d;
        }
    if (d && !have_d && d->ms.n)
        sel[n++] = d;
    free(all);
    return n;
}

static void sec_boxplots(bkm_buf_t *out, model_t *m)
{
    int any = 0;
    section_begin(out, 5);
    P("<p>One dot per worker process (the median of its samples): the unit of evidence. Boxes: quartiles; whiskers: "
      "min and max. The three fastest configurations and the default. A red ringed dot is a process its noise "
      "evidence marked disturbed (see Noise evidence).</p>\n");
    for (size_t i = 0; i < m->n; i++) {
        group_t *g = &m->groups[i];
        cfg_agg_t *sel[4];
        size_t n = top_cfgs(g, sel, 3);
        double lo = INFINITY, hi = 0;
        const double X0 = 300, W = 420;
        if (n == 0)
            continue;
        any = 1;
        for (size_t s = 0; s < n; s++)
            for (size_t j = 0; j < sel[s]->ms.n; j++)
                lo = fmin(lo, sel[s]->ms.v[j]), hi = fmax(hi, sel[s]->ms.v[j]);
        if (!(hi > lo))
            hi = lo * 1.01 + 1e-9;
        group_title(out, g);
        P("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"%zu\" role=\"img\">\n", n * 40 + 30);
#define BX(v) (X0 + W * ((v) - lo) / (hi - lo))
        for (size_t s = 0; s < n; s++) {
            double f[5], y = (double)s * 40 + 10;
            char lab[80];
            size_t nd;
            if (bkm__rep_five(sel[s]->ms.v, sel[s]->ms.n, f) < 0)
                continue;
            snprintf(lab, sizeof lab, "%.44s%s", sel[s]->label, strlen(sel[s]->label) > 44 ? "..." : "");
            nd = 0;
            for (size_t j = 0; j < sel[s]->dist.n; j++)
                nd += sel[s]->dist.v[j] > 0;
            P("<text x=\"4\" y=\"%.0f\" class=\"small\">", y + 18), E(lab), P(" (%zu", sel[s]->ms.n);
            if (nd)
                P(", %zu disturbed", nd);
            P(")</text>\n");
            P("<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" class=\"whisker\"/>", BX(f[0]), y + 14, BX(f[4]),
              y + 14);
            P("<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"20\" class=\"%s\"/>", BX(f[1]), y + 4,
              fmax(1, BX(f[3]) - BX(f[1])), sel[s]->is_default ? "box dflt" : "box");
            P("<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" class=\"med\"/>\n", BX(f[2]), y + 2, BX(f[2]),
              y + 26);
            for (size_t j = 0; j < sel[s]->ms.n; j++) {
                int dis = j < sel[s]->dist.n && sel[s]->dist.v[j] > 0;
                P("<circle cx=\"%.1f\" cy=\"%.0f\" r=\"%s\" class=\"%s\"><title>%.4g ms", BX(sel[s]->ms.v[j]),
                  y + 14, dis ? "3.5" : "2.5", dis ? "pt dist" : "pt", sel[s]->ms.v[j]);
                if (dis)
                    P(", disturbed (noise share %.3g)", sel[s]->share.v[j]);
                P("</title></circle>");
            }
            P("\n");
        }
        P("<text x=\"%.0f\" y=\"%zu\" class=\"small\">%.4g ms</text><text x=\"%.0f\" y=\"%zu\" class=\"small\">%.4g "
          "ms</text>\n",
          X0, n * 40 + 24, lo, X0 + W - 40, n * 40 + 24, hi);
#undef BX
        P("</svg>\n");
    }
    if (!any)
        empty(out, "No per-process values.");
    section_end(out);
}

/* Why a source of a trial's noise evidence gave nothing: the reason it stored ("unavailable"),
 * per process (rusage, proc-stat) or of the first thread that has one (thread sources). */
static const char *noise_why(const bkm_json_t *noise, const char *src, int process)
{
    const bkm_json_t *th = bkm_json_get(noise, "threads");
    if (jstr(noise, "unavailable"))
        return jstr(noise, "unavailable");
    if (process)
        return jstr(bkm_json_get(bkm_json_get(noise, "process"), src), "unavailable");
    for (const bkm_json_t *t = th && th->type == BKM_JSON_ARR ? th->child : NULL; t; t = t->next)
        if (jstr(bkm_json_get(t, src), "unavailable"))
            return jstr(bkm_json_get(t, src), "unavailable");
    return NULL;
}

/* One value of a trial's noise evidence, or why its source gave none. */
static void noise_cell(bkm_buf_t *out, const bkm_json_t *noise, double v, const char *fmt, const char *src,
                       int process)
{
    const char *why = noise_why(noise, src, process);
    P("<td>");
    if (isfinite(v))
        bkm__rep_num(out, v, fmt);
    else if (why)
        P("<span class=\"na\">unavailable: "), E(why), P("</span>");
    else
        P("<span class=\"na\">not recorded</span>");
    P("</td>");
}

static int cmp_share_desc(const void *a, const void *b)
{
    double u = bkm_json_get_num(*(const bkm_json_t *const *)a, "noise_share", NAN),
           v = bkm_json_get_num(*(const bkm_json_t *const *)b, "noise_share", NAN);
    u = isfinite(u) ? u : -INFINITY, v = isfinite(v) ? v : -INFINITY;
    return (u < v) - (u > v);
}

#define NOISE_TOP 10

static void noise_trials(bkm_buf_t *out, model_t *m)
{
    const bkm_json_t **v = malloc((m->trials->n_children ? m->trials->n_children : 1) * sizeof *v);
    size_t n = 0;
    if (v == NULL)
        return;
    for (const bkm_json_t *t = m->trials->child; t; t = t->next)
        if (isfinite(bkm_json_get_num(t, "noise_share", NAN)))
            v[n++] = t;
    qsort(v, n, sizeof *v, cmp_share_desc);
    P("<h3>The most disturbed trials</h3>\n<p>The %zu trial(s) with the largest share (of %zu with one); each "
      "value under the source it came from, over the timed region.</p>\n",
      n < NOISE_TOP ? n : (size_t)NOISE_TOP, n);
    P("<table><tr><th>trial</th><th>sweep</th><th>role</th><th>configuration</th><th>share</th><th>disturbed</th>"
      "<th>run-queue wait / wall, worst thread (proc-schedstat)</th><th>steal share of the team's CPUs "
      "(proc-stat)</th><th>involuntary switches, all threads (rusage)</th><th>migrations, all threads "
      "(proc-sched)</th><th>CPU time / wall, process (rusage)</th></tr>\n");
    for (size_t i = 0; i < n && i < NOISE_TOP; i++) {
        const bkm_json_t *t = v[i], *noise = bkm_json_get(t, "noise"), *cfg = bkm_json_get(t, "config");
        const bkm_json_t *totals = bkm_json_get(noise, "totals"), *proc = bkm_json_get(noise, "process");
        double d = trial_disturbed(t);
        cfg_agg_t c;
        memset(&c, 0, sizeof c);
        c.config = cfg;
        if (cfg && cfg->type == BKM_JSON_OBJ)
            cfg_describe(&c);
        P("<tr><td>%g</td><td>%g</td><td>", bkm_json_get_num(t, "id", 0), bkm_json_get_num(t, "sweep", 0));
        E(jstr(t, "role")), P("</td><td>"), E(c.label), P("</td><td>");
        bkm__rep_num(out, bkm_json_get_num(t, "noise_share", NAN), "%.3g");
        P("</td><td class=\"%s\">%s</td>", d > 0 ? "bad" : d == 0 ? "ok" : "na", d > 0 ? "yes" : d == 0 ? "no" : "unknown");
        noise_cell(out, noise, bkm_json_get_num(noise, "wait_share", NAN), "%.3g", "proc-schedstat", 0);
        noise_cell(out, noise, bkm_json_get_num(bkm_json_get(proc, "proc-stat"), "steal_share", NAN), "%.3g",
                   "proc-stat", 1);
        noise_cell(out, noise, bkm_json_get_num(totals, "involuntary_switches", NAN), "%.0f", "rusage", 0);
        noise_cell(out, noise, bkm_json_get_num(totals, "migrations", NAN), "%.0f", "proc-sched", 0);
        noise_cell(out, noise, bkm_json_get_num(bkm_json_get(proc, "rusage"), "cpu_per_wall", NAN), "%.3g", "rusage",
                   1);
        P("</tr>\n");
    }
    P("</table>\n");
    free(v);
}

static void sec_noise(bkm_buf_t *out, model_t *m)
{
    size_t with = 0;
    section_begin(out, 6);
    for (const bkm_json_t *t = m->trials->child; t; t = t->next)
        with += trial_disturbed(t) >= 0 || isfinite(bkm_json_get_num(t, "noise_share", NAN));
    if (with == 0) {
        empty(out, "No trial stored noise evidence: the database predates it (schema 4) or its workers did not "
                   "record it; a sweep run with this bkm stores it for every trial.");
        section_end(out);
        return;
    }
    P("<p>Every worker records what disturbed its timed region from the operating system (with or without PAPI): per "
      "thread rusage, /proc schedstat and sched, per process rusage and the steal time of /proc/stat. Its share is the "
      "run-queue wait of the worst thread / its wall time plus the steal share of the team's CPUs; a process whose "
      "share exceeds the threshold is marked disturbed, one with no source for the share has no mark "
      "(unknown).</p>\n");
    P("<table><tr><th>sweep</th><th>label</th><th>workload on node</th><th>ok processes</th><th>disturbed</th>"
      "<th>not disturbed</th><th>no mark</th><th>largest share</th><th>threshold</th></tr>\n");
    for (const bkm_json_t *s = m->sweeps->child; s; s = s->next) {
        double id = bkm_json_get_num(s, "id", -1), mx = NAN, thr = NAN;
        size_t ok = 0, dis = 0, quiet = 0;
        for (const bkm_json_t *t = m->trials->child; t; t = t->next) {
            double d = trial_disturbed(t), sh = bkm_json_get_num(t, "noise_share", NAN);
            if (bkm_json_get_num(t, "sweep", -2) != id || !jstr(t, "status") || strcmp(jstr(t, "status"), "ok"))
                continue;
            ok++;
            dis += d > 0;
            quiet += d == 0;
            if (isfinite(sh) && !(sh <= mx))
                mx = sh;
            if (!isfinite(thr))
                thr = bkm_json_get_num(bkm_json_get(t, "noise"), "threshold", NAN);
        }
        P("<tr><td>%g</td><td>", id), E(jstr(s, "label")), P("</td><td>"), E(jstr(s, "workload")), P(" on "),
            E(jstr(s, "node"));
        P("</td><td>%zu</td><td class=\"%s\">%zu</td><td>%zu</td><td>%zu</td><td>", ok, dis ? "bad" : "ok", dis, quiet,
          ok - dis - quiet);
        bkm__rep_num(out, mx, "%.3g");
        P("</td><td>");
        bkm__rep_num(out, thr, "%.3g");
        P("</td></tr>\n");
    }
    P("</table>\n");
    noise_trials(out, m);
    section_end(out);
}

static void sec_layers(bkm_buf_t *out, model_t *m)
{
    int any = 0;
    section_begin(out, 7);
    for (size_t i = 0; i < m->n; i++) {
        group_t *g = &m->groups[i];
        cfg_agg_t *b = group_best(g), *c = b && b->layers ? b : NULL;
        double mx = 0;
        for (size_t k = 0; !c && k < g->n; k++)
            if (g->cfgs[k].layers)
                c = &g->cfgs[k];
        if (!c)
            continue;
        any = 1;
        for (const bkm_json_t *l = c->layers->child; l; l = l->next)
            mx = fmax(mx, bkm_json_get_num(l, "ms", 0));
        group_title(out, g);
        P("<p>Configuration "), E(c->label), P(" (one process; mean ms per iteration after the first).</p>\n");
        P("<table><tr><th>layer</th><th>kind</th><th>direction</th><th>ms</th><th>GFLOP/s</th><th></th></tr>\n");
        for (const bkm_json_t *l = c->layers->child; l; l = l->next) {
            double ms = bkm_json_get_num(l, "ms", NAN);
            P("<tr><td>"), E(jstr(l, "layer")), P("</td><td>"), E(jstr(l, "kind")), P("</td><td>"),
                E(jstr(l, "direction")), P("</td><td>");
            bkm__rep_num(out, ms, "%.4g");
            P("</td><td>");
            bkm__rep_num(out, bkm_json_get_num(l, "gflops", NAN), "%.4g");
            P("</td><td><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"204\" height=\"12\"><rect x=\"0\" y=\"1\" "
              "width=\"%.1f\" height=\"10\" class=\"bar\"/></svg></td></tr>\n",
              isfinite(ms) && mx > 0 ? 200 * ms / mx : 0);
        }
        P("</table>\n");
    }
    if (!any)
        empty(out, "No trial stored per-layer times (network workloads run with --param layers=1 store them).");
    section_end(out);
}

static void counter_cell(bkm_buf_t *out, const cfg_agg_t *c, const char *name)
{
    const bkm_json_t *hit = NULL;
    for (const bkm_json_t *k = c && c->counters ? c->counters->child : NULL; k; k = k->next)
        if (jstr(k, "name") && strcmp(jstr(k, "name"), name) == 0)
            hit = k;
    P("<td>");
    if (!hit)
        P("<span class=\"na\">not recorded</span>");
    else if (jstr(hit, "state") && strcmp(jstr(hit, "state"), "unavailable") == 0)
        P("<span class=\"na\">unavailable: "), E(jstr(hit, "reason") ? jstr(hit, "reason") : "?"), P("</span>");
    else if (jstr(hit, "state") && strcmp(jstr(hit, "state"), "disagrees") == 0)   /* both figures, no value */
        P("<span class=\"na\">disagrees with the OS: "), E(jstr(hit, "reason") ? jstr(hit, "reason") : "?"),
            P("</span>");
    else {
        bkm__rep_num(out, bkm_json_get_num(hit, "value", NAN), "%.6g");
        if (jstr(hit, "domain"))
            P(" <span class=\"na\">("), E(jstr(hit, "domain")), P(")</span>");
    }
    P("</td>");
}

static void sec_counters(bkm_buf_t *out, model_t *m)
{
    int any = 0;
    section_begin(out, 8);
    for (size_t i = 0; i < m->n; i++) {
        group_t *g = &m->groups[i];
        cfg_agg_t *b = group_best(g), *d = group_default(g);
        const bkm_json_t *names = b && b->counters ? b->counters : d ? d->counters : NULL;
        if (!names)
            continue;
        any = 1;
        group_title(out, g);
        P("<table><tr><th>event</th><th>best: "), E(b ? b->label : "none"), P("</th><th>default: "),
            E(d ? d->label : "not measured"), P("</th></tr>\n");
        for (const bkm_json_t *k = names->child; k; k = k->next) {
            P("<tr><td>"), E(jstr(k, "name")), P("</td>");
            counter_cell(out, b, jstr(k, "name") ? jstr(k, "name") : "");
            counter_cell(out, d, jstr(k, "name") ? jstr(k, "name") : "");
            P("</tr>\n");
        }
        P("</table>\n");
    }
    if (!any)
        empty(out, "No counters stored (sweeps run with --counters none store none).");
    section_end(out);
}

/* A program trial's evidence: the program, its runtime, and its team member by member. */
static void binding_detail_program(bkm_buf_t *out, const cfg_agg_t *c, const bkm_json_t *members, const char *what)
{
    const bkm_json_t *pg = bkm_json_get(c->binding, "program"), *rt = bkm_json_get(c->binding, "runtime");
    const bkm_json_t *av = pg ? bkm_json_get(pg, "argv") : NULL, *tr = rt ? bkm_json_get(rt, "two_runtimes") : NULL;
    P("<p>%s: ", what), E(c->label), P(" &mdash; program <code>");
    for (const bkm_json_t *a = av && av->type == BKM_JSON_ARR ? av->child : NULL; a; a = a->next)
        if (a->type == BKM_JSON_STR)
            E(a->str), P("%s", a->next ? " " : "");
    P("</code> (sha256 "), E(jstr(pg, "sha256")), P("); runtime planned for: "), E(jstr(rt, "planned_for"));
    P(" (found by "), E(jstr(rt, "how")), P(")%s; ", tr && tr->type == BKM_JSON_BOOL && tr->boolean
                                                      ? " <b class=\"bad\">two OpenMP runtimes in one process</b>" : "");
    E(jstr(c->binding, "summary")), P("</p>\n");
    P("<table><tr><th>team thread</th><th>tid</th><th>planned mask</th><th>masks seen</th><th>verdict</th></tr>\n");
    for (const bkm_json_t *t = members->child; t; t = t->next) {
        const bkm_json_t *ob = bkm_json_get(t, "observed");
        const char *v = jstr(t, "verdict");
        P("<tr><td>%g</td><td>%g</td><td>", bkm_json_get_num(t, "index", NAN), bkm_json_get_num(t, "tid", NAN));
        E(jstr(t, "planned")), P("</td><td>");
        for (const bkm_json_t *o = ob && ob->type == BKM_JSON_ARR ? ob->child : NULL; o; o = o->next)
            if (o->type == BKM_JSON_STR)
                E(o->str), P("%s", o->next ? "; " : "");
        P("</td><td class=\"%s\">", v && strcmp(v, "match") == 0 ? "ok" : "bad"), E(v), P("</td></tr>\n");
    }
    P("</table>\n");
}

static void binding_detail(bkm_buf_t *out, const cfg_agg_t *c, const char *what)
{
    const bkm_json_t *th = c && c->binding ? bkm_json_get(c->binding, "threads") : NULL;
    const bkm_json_t *pm = c ? program_members(c->binding) : NULL;
    if (pm) {
        binding_detail_program(out, c, pm, what);
        return;
    }
    if (!th)
        return;
    P("<p>%s: ", what), E(c->label), P(" &mdash; runtimes: "), E(jstr(c->binding, "runtimes")),
        P(", foreign threads: %g</p>\n", bkm_json_get_num(c->binding, "foreign_threads", NAN));
    P("<table><tr><th>thread</th><th>tid</th><th>on CPU</th><th>planned mask</th><th>actual mask</th><th>match</th>"
      "</tr>\n");
    for (const bkm_json_t *t = th->child; t; t = t->next) {
        const bkm_json_t *mt = bkm_json_get(t, "match");
        int ok = mt && mt->boolean;
        P("<tr><td>%g</td><td>%g</td><td>%g</td><td>", bkm_json_get_num(t, "thread", NAN), bkm_json_get_num(t, "tid", NAN),
          bkm_json_get_num(t, "cpu", NAN));
        E(jstr(t, "planned")), P("</td><td>"), E(jstr(t, "actual"));
        P("</td><td class=\"%s\">%s</td></tr>\n", ok ? "ok" : "bad", ok ? "yes" : "NO");
    }
    P("</table>\n");
}

static void sec_binding(bkm_buf_t *out, model_t *m)
{
    int any = 0;
    section_begin(out, 9);
    P("<p>Every worker reads back the mask of each of its threads and compares it with the plan; for a user's program "
      "the parent samples each thread's mask from /proc while it runs and compares the OpenMP team's with the plan "
      "of the runtime it loaded. A mismatch fails the trial (status binding-mismatch).</p>\n");
    for (size_t i = 0; i < m->n; i++) {
        group_t *g = &m->groups[i];
        size_t ok = 0, bad = 0, none = 0;
        for (const bkm_json_t *t = m->trials->child; t; t = t->next) {
            const bkm_json_t *s = sweep_by_id(m, bkm_json_get_num(t, "sweep", -1)), *b = bkm_json_get(t, "binding");
            const char *st = jstr(t, "status");
            if (!s || !jstr(s, "node") || !jstr(s, "workload") || strcmp(jstr(s, "node"), g->node) ||
                strcmp(jstr(s, "workload"), g->workload))
                continue;
            if (st && strcmp(st, "binding-mismatch") == 0)
                bad++;
            else if (binding_ok(b))
                ok++;
            else
                none++;
        }
        if (ok + bad + none == 0)
            continue;
        any = 1;
        group_title(out, g);
        P("<p><b>%zu</b> trial(s) bound as planned, <b class=\"%s\">%zu</b> mismatch(es), %zu without binding evidence "
          "(failed before the check).</p>\n",
          ok, bad ? "bad" : "ok", bad, none);
        binding_detail(out, group_best(g), "best");
        if (group_default(g) != group_best(g))
            binding_detail(out, group_default(g), "default");
    }
    if (!any)
        empty(out, "No trial.");
    section_end(out);
}

static void sec_failed(bkm_buf_t *out, model_t *m)
{
    size_t n = 0;
    section_begin(out, 10);
    for (const bkm_json_t *t = m->trials->child; t; t = t->next) {
        const char *st = jstr(t, "status");
        const bkm_json_t *s = sweep_by_id(m, bkm_json_get_num(t, "sweep", -1));
        char *cfg;
        if (!st || strcmp(st, "ok") == 0)
            continue;
        if (n++ == 0)
            P("<table><tr><th>trial</th><th>workload</th><th>configuration</th><th>status</th><th>exit</th>"
              "<th>error</th><th>stderr (tail)</th></tr>\n");
        cfg = bkm_json_get(t, "config") ? json_text(bkm_json_get(t, "config")) : NULL;
        P("<tr><td>%g</td><td>", bkm_json_get_num(t, "id", 0)), E(jstr(s, "workload")), P("</td><td><code>"), E(cfg),
            P("</code></td><td class=\"bad\">"), E(st), P("</td><td>"), E(jstr(t, "exit_info")), P("</td><td>"),
            E(jstr(t, "error")), P("</td><td><pre>"), E(jstr(t, "stderr_tail")), P("</pre></td></tr>\n");
        free(cfg);
    }
    if (n)
        P("</table>\n");
    else
        empty(out, "No trial failed.");
    section_end(out);
}

static void sec_history(bkm_buf_t *out, model_t *m)
{
    section_begin(out, 11);
    if (m->gates->n_children == 0) {
        empty(out, "No regression gate run is stored in this database (`tune regress --baseline FILE` stores one).");
        section_end(out);
        return;
    }
    P("<table><tr><th>run</th><th>when</th><th>mode</th><th>revision</th><th>against</th><th>host</th>"
      "<th>threshold</th><th>verdict</th><th>per workload: current / reference [interval], decision, p, "
      "disturbed processes of this build</th></tr>\n");
    for (const bkm_json_t *g = m->gates->child; g; g = g->next) {
        const bkm_json_t *res = bkm_json_get(g, "results");
        const char *v = jstr(g, "verdict");
        P("<tr><td>%g</td><td>", bkm_json_get_num(g, "id", 0)), E(jstr(g, "created_at")), P("</td><td>"),
            E(jstr(g, "mode")), P("</td><td>"), E(jstr(g, "git_revision")), P("</td><td>"), E(jstr(g, "reference")),
            P("</td><td>"), E(jstr(g, "hostname")), P("</td><td>");
        bkm__rep_num(out, 100 * bkm_json_get_num(g, "threshold", NAN), "%.0f%%");
        P("</td><td class=\"%s\">", v && strcmp(v, "pass") == 0 ? "ok" : "bad"), E(v),
            P(" (%g)</td><td>", bkm_json_get_num(g, "regressions", 0));
        for (const bkm_json_t *r = res && res->type == BKM_JSON_ARR ? res->child : NULL; r; r = r->next) {
            /* a run of the sequential gate: its repeated interval, decision, one-sided p and level;
             * one stored before: the 95% interval and Holm-adjusted p */
            int seq = jstr(r, "decision") != NULL;
            const bkm_json_t *ci = bkm_json_get(r, seq ? "ratio_rci" : "ratio_ci95");
            const bkm_json_t *rg = bkm_json_get(r, "regression");
            P("<span class=\"%s\">", rg && rg->boolean ? "bad" : "ok"), E(jstr(r, "workload")), P(" ");
            bkm__rep_num(out, bkm_json_get_num(r, "ratio", NAN), "%.3fx");
            P(" [");
            bkm__rep_num(out, ci && bkm_json_at(ci, 0) ? bkm_json_at(ci, 0)->num : NAN, "%.3g");
            P(", ");
            bkm__rep_num(out, ci && bkm_json_at(ci, 1) ? bkm_json_at(ci, 1)->num : NAN, "%.3g");
            if (seq) {
                P("], "), E(jstr(r, "decision")), P(", p ");
                bkm__rep_num(out, bkm_json_get_num(r, "p", NAN), "%.2g");
                P(" / level ");
                bkm__rep_num(out, bkm_json_get_num(r, "nominal_level", NAN), "%.2g");
                P(" after %g block(s)", bkm_json_get_num(r, "looks", NAN));
            } else {
                P("], p ");
                bkm__rep_num(out, bkm_json_get_num(r, "p_holm", NAN), "%.2g");
            }
            if (isfinite(bkm_json_get_num(r, "disturbed", NAN)))
                P(", disturbed %g of %g", bkm_json_get_num(r, "disturbed", 0), bkm_json_get_num(r, "n", 0));
            P("</span><br>");
        }
        P("</td></tr>\n");
    }
    P("</table>\n");
    section_end(out);
}

static const char css[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em auto;max-width:1200px;color:#222;"
    "padding:0 1em}h1{font-size:1.6em}h2{border-bottom:2px solid #446;padding-bottom:.2em;margin-top:1.6em}"
    "h3{margin:.8em 0 .3em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:3px 6px;"
    "vertical-align:top;text-align:left}th{background:#eef}pre{white-space:pre-wrap;margin:0;max-height:12em;"
    "overflow:auto;font-size:12px}code{font-size:12px}.empty{color:#666;font-style:italic}.na{color:#888;"
    "font-style:italic}.ok{color:#176d2c}.bad{color:#b3141b;font-weight:bold}.pair{display:flex;gap:1.5em;"
    "flex-wrap:wrap}figure{margin:0}figcaption{font-size:12px;max-width:480px}.pkg{fill:#f4f4fa;stroke:#446}"
    ".core{fill:#fff;stroke:#889}.pu{fill:#fff;stroke:#555}.pu.on{fill:#2f7fd1}.small{font-size:11px;fill:#333}"
    ".bar{fill:#6a8fd0}.axis{stroke:#333}.curve{fill:none;stroke:#2f7fd1;stroke-width:2}.dot{fill:#2f7fd1}"
    ".peak{fill:none;stroke:#c33;stroke-dasharray:6 4;stroke-width:1.5}.peaklabel{fill:#c33}.whisker{stroke:#444}"
    ".box{fill:#cfe0f7;stroke:#2f5f9f}.box.dflt{fill:#f7e3cf;stroke:#9f5f2f}.med{stroke:#000;stroke-width:2}"
    ".pt{fill:#222;fill-opacity:.6}.pt.dist{fill:#b3141b;stroke:#b3141b;stroke-width:1.5;fill-opacity:.5}.heat td{text-align:right;min-width:5em}.label{font-weight:bold}"
    "header p{margin:.2em 0;color:#444}";

int bkm_rep_html_render(const char *report_json, const bkm_rep_cfg_t *cfg, bkm_buf_t *out, bkm_err_t *err)
{
    model_t m;
    bkm_rep_cfg_t def;
    int ret;
    if (report_json == NULL || out == NULL)
        return bkm_err_set(err, BKM_EINVAL, "report: NULL argument");
    if (cfg == NULL) {
        bkm_rep_cfg_defaults(&def);
        cfg = &def;
    }
    if ((ret = model_build(&m, report_json, err)) < 0)
        goto out;
    P("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:\">\n<title>");
    E(cfg->title ? cfg->title : "bkm report");
    P("</title>\n<style>%s</style>\n</head>\n<body>\n<header>\n<h1>", css);
    E(cfg->title ? cfg->title : "bkm report");
    P("</h1>\n<p>From ");
    E(cfg->source ? cfg->source : "a results database");
    if (cfg->generated_at)
        P(", generated "), E(cfg->generated_at);
    P(". %zu sweep(s), %zu trial(s), %zu workload(s).</p>\n", m.sweeps->n_children, m.trials->n_children, m.n);
    {   /* what the database holds that the report had to leave out */
        const bkm_json_t *notes = bkm_json_get(m.doc, "notes");
        if (notes && notes->type == BKM_JSON_ARR && notes->n_children > 0) {
            size_t k = 0;
            P("<p>%zu stored value(s) left out:</p>\n<ul>\n", notes->n_children);
            for (const bkm_json_t *n = notes->child; n && k < 20; n = n->next, k++)
                if (n->type == BKM_JSON_STR)
                    P("<li>"), E(n->str), P("</li>\n");
            if (notes->n_children > k)
                P("<li>and %zu more</li>\n", notes->n_children - k);
            P("</ul>\n");
        }
    }
    if (cfg->command)
        P("<p><code>"), E(cfg->command), P("</code></p>\n");
    P("<p>Sections: ");
    for (int i = 0; bkm_rep_sections[i]; i++)
        P("%s<a href=\"#sec-%s\">%s</a>", i ? " &middot; " : "", bkm_rep_sections[i], section_titles[i]);
    P("</p>\n</header>\n<main>\n");
    sec_host(out, &m);
    sec_summary(out, &m, cfg);
    sec_heatmap(out, &m);
    sec_blocktime(out, &m);
    sec_scaling(out, &m, cfg);
    sec_boxplots(out, &m);
    sec_noise(out, &m);
    sec_layers(out, &m);
    sec_counters(out, &m);
    sec_binding(out, &m);
    sec_failed(out, &m);
    sec_history(out, &m);
    P("</main>\n<footer><p>Made by bkm. Times are medians over worker processes (one value per process: the median "
      "of its samples).</p></footer>\n</body>\n</html>\n");
    if (out->oom)
        ret = bkm_err_set(err, BKM_ENOMEM, "report: out of memory");
out:
    model_free(&m);
    return ret;
}
