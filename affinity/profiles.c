/* SPDX-License-Identifier: MIT */
/* Node profiles: built-in Cori Haswell and KNL topologies (hwloc synthetic strings with Cori's
 * OS numbering), this host ("auto"), and user profiles read from a key = value file or an
 * hwloc XML file. */
#include "affinity_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const builtin_names[] = {"auto", "haswell", "knl", NULL};

const char *const *bkm_profile_builtin_names(void) { return builtin_names; }

/* Append "pu:<smt>(indexes=...)" where core c (global, 0-based, of n_cores) has the PUs
 * c, c + n_cores, c + 2*n_cores, ...: the Cori numbering (PU i + 32 / i + 68k are siblings). */
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

/* A Cori node: the synthetic levels above the PUs, then n_cores x smt PUs in Cori numbering. */
typedef struct cori_node {
    const char *name, *description, *levels, *isa, *constraint;
    int n_cores, smt;
    int threads[16], n_threads;
} cori_node_t;

static const cori_node_t cori_nodes[] = {
    {"haswell", "Cori Haswell: 2 x Xeon E5-2698 v3, 2 sockets x 16 cores x 2 HT, PU i+32 is the sibling of i",
     "pack:2 [numa(memory=64GiB)] l3:1(size=40MiB) l2:16(size=256KiB) l1d:1(size=32KiB) core:1 ", "avx2",
     "haswell", 32, 2, {1, 2, 4, 8, 16, 32, 64}, 7},
    {"knl",
     "Cori KNL: Xeon Phi 7250 quad,cache, 68 cores in 34 tiles sharing 1 MiB L2, 4 HT, "
     "PU i+68k are the siblings of core i",
     "pack:1 [numa(memory=96GiB)] l2:34(size=1MiB) l1d:2(size=32KiB) core:1 ", "avx512", "knl,quad,cache", 68, 4,
     {1, 2, 4, 8, 16, 32, 64, 68, 136, 272}, 10},
};

static void profile_cori(const cori_node_t *c, bkm_node_profile_t *p)
{
    static const int bt[] = {0, 1, 200, -1};
    snprintf(p->name, sizeof(p->name), "%s", c->name);
    snprintf(p->description, sizeof(p->description), "%s", c->description);
    snprintf(p->synthetic, sizeof(p->synthetic), "%s", c->levels);
    append_pu_level(p->synthetic, sizeof(p->synthetic), c->n_cores, c->smt);
    snprintf(p->isa, sizeof(p->isa), "%s", c->isa);
    snprintf(p->slurm_constraint, sizeof(p->slurm_constraint), "%s", c->constraint);
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
    p->n_threads = 0;
    for (long t = 1; t < ncpu && p->n_threads < 15; t *= 2)
        p->threads[p->n_threads++] = (int)t;
    p->threads[p->n_threads++] = (int)ncpu;
    set_list(p->blocktime_ms, &p->n_blocktime, 8, bt, (int)(sizeof(bt) / sizeof(bt[0])));
}

int bkm_profile_builtin(const char *name, bkm_node_profile_t *p, bkm_err_t *err)
{
    if (!p)
        return bkm_err_set(err, BKM_EINVAL, "bkm_profile_builtin: profile is NULL");
    memset(p, 0, sizeof(*p));
    if (!name)
        return bkm_err_set(err, BKM_EINVAL, "node profile name is NULL (known: auto, haswell, knl)");
    if (strcmp(name, "auto") == 0) {
        profile_auto(p);
        return BKM_OK;
    }
    for (size_t i = 0; i < sizeof(cori_nodes) / sizeof(cori_nodes[0]); i++)
        if (strcmp(name, cori_nodes[i].name) == 0) {
            profile_cori(&cori_nodes[i], p);
            return BKM_OK;
        }
    return bkm_err_set(err, BKM_EINVAL, "unknown node profile '%.100s' (known: auto, haswell, knl)", name);
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

static int apply_key(bkm_node_profile_t *p, const char *path, const char *key, const char *val,
                     const char *where, bkm_err_t *err)
{
    if (strcmp(key, "name") == 0) {
        if (!valid_name(val) || strlen(val) >= sizeof(p->name))
            return bkm_err_set(err, BKM_EINVAL, "%s: bad name '%.64s' (letters, digits, '-', '_', '.'; < %zu chars)",
                               where, val, sizeof(p->name));
        return copy_value(p->name, sizeof(p->name), val, key, where, err);
    }
    if (strcmp(key, "description") == 0)
        return copy_value(p->description, sizeof(p->description), val, key, where, err);
    if (strcmp(key, "synthetic") == 0)
        return copy_value(p->synthetic, sizeof(p->synthetic), val, key, where, err);
    if (strcmp(key, "xml") == 0) {
        if (!*val)
            return bkm_err_set(err, BKM_EINVAL, "%s: 'xml' is empty", where);
        if (resolve_path(p->xml_path, sizeof(p->xml_path), path, val) < 0)
            return bkm_err_set(err, BKM_EINVAL, "%s: xml path '%.200s' is too long", where, val);
        return BKM_OK;
    }
    if (strcmp(key, "isa") == 0) {
        static const char *const isas[] = {"avx512", "avx2", "generic", NULL};
        for (int i = 0; isas[i]; i++)
            if (strcmp(val, isas[i]) == 0)
                return copy_value(p->isa, sizeof(p->isa), val, key, where, err);
        return bkm_err_set(err, BKM_EINVAL, "%s: unknown isa '%.64s' (known: avx512, avx2, generic)", where, val);
    }
    if (strcmp(key, "slurm_constraint") == 0)
        return copy_value(p->slurm_constraint, sizeof(p->slurm_constraint), val, key, where, err);
    if (strcmp(key, "threads") == 0)
        return parse_int_list(val, p->threads, &p->n_threads, 16, 1, BKM_CPUSET_MAX, 0, key, where, err);
    if (strcmp(key, "blocktime") == 0)
        return parse_int_list(val, p->blocktime_ms, &p->n_blocktime, 8, 0, INT_MAX, 1, key, where, err);
    return bkm_err_set(err, BKM_EINVAL,
                       "%s: unknown key '%.64s' (known: name, description, synthetic, xml, isa, "
                       "slurm_constraint, threads, blocktime)",
                       where, key);
}

/* Format (one "key = value" per line; '#' starts a comment line; blank lines ignored):
 *   name = mynode                      required: letters, digits, '-', '_', '.'
 *   description = free text
 *   synthetic = pack:2 core:8 pu:2     hwloc synthetic description, or
 *   xml = mynode.xml                   hwloc XML (relative to the profile file's folder)
 *   isa = avx512 | avx2 | generic
 *   slurm_constraint = knl,quad,cache
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
    /* the file may be an hwloc XML topology: read it within the XML limit, then hold a
     * key = value file to its own */
    if ((rc = bkm_file_read_regular(path, "node profile", BKM_TOPO_XML_MAX_BYTES, &text, &len, err)) < 0)
        goto out;
    if (looks_like_xml(text)) {
        if ((rc = profile_from_xml(path, p, err)) < 0)
            goto out;
    } else {
        int lineno = 0;
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
            if ((rc = apply_key(p, path, trim(line), trim(eq + 1), where, err)) < 0)
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
