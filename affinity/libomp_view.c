/* SPDX-License-Identifier: MIT */
/* The topology libomp itself sees (its KMP_AFFINITY=verbose map, read from a child process),
 * compared with hwloc's; and the correction that makes libomp read hwloc's view (a cpuinfo file
 * for KMP_TOPOLOGY_METHOD=cpuinfo) when they differ (docs/affinity.md §3.3). */
#include "affinity_int.h"

#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* CPUID.1:ECX[31], the hypervisor bit: 1 on a VM guest. */
static int cpu_is_vm_guest(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d))
        return (int)((c >> 31) & 1u);
#endif
    return 0;
}

/* ---- Parsing the verbose output -------------------------------------------------------- */

/* Copy the text after "KMP_AFFINITY: " on @p line (up to the newline, without a final '.'). */
static void info_text(const char *line, char *dst, size_t n)
{
    const char *p = strstr(line, "KMP_AFFINITY: ");
    size_t len;
    p = p ? p + strlen("KMP_AFFINITY: ") : line;
    len = strcspn(p, "\r\n");
    while (len > 0 && (p[len - 1] == '.' || p[len - 1] == ' '))
        len--;
    if (len >= n)
        len = n - 1;
    memcpy(dst, p, len);
    dst[len] = '\0';
}

/* "OS proc N maps to socket S [die D] core C [L2 cache X] thread T": the socket, core and thread
 * ids (libomp prints -1 for an id it never set); other layers are skipped. Returns 0, or -1 when
 * one of the three is missing. */
static int parse_map_line(const char *line, bkm_aff_libomp_proc_t *p)
{
    const char *s = strstr(line, "OS proc ");
    char *end;
    long v;
    int have = 0;
    p->os = p->socket = p->core = p->thread = -1;
    if (!s)
        return -1;
    s += strlen("OS proc ");
    v = strtol(s, &end, 10);
    if (end == s || v < 0 || v >= BKM_CPUSET_MAX || strncmp(end, " maps to ", 9) != 0)
        return -1;
    p->os = (int)v;
    s = end + 9;
    while (*s && *s != '\n') {
        const char *w = s;
        size_t wl;
        while (*s && *s != ' ' && *s != '\n')
            s++;
        wl = (size_t)(s - w);
        while (*s == ' ')
            s++;
        if (!isdigit((unsigned char)*s) && !(*s == '-' && isdigit((unsigned char)s[1])))
            continue;
        v = strtol(s, &end, 10);
        s = end;
        while (*s == ' ')
            s++;
        if (wl == 6 && strncmp(w, "socket", 6) == 0)
            p->socket = (int)v, have |= 1;
        else if (wl == 4 && strncmp(w, "core", 4) == 0)
            p->core = (int)v, have |= 2;
        else if (wl == 6 && strncmp(w, "thread", 6) == 0)
            p->thread = (int)v, have |= 4; /* -1 (unset) with the cpuinfo method and 1 thread/core */
    }
    return have == 7 ? 0 : -1;
}

void bkm_aff_libomp_view_free(bkm_aff_libomp_view_t *view)
{
    if (!view)
        return;
    bkm_free(view->proc);
    memset(view, 0, sizeof(*view));
}

int bkm_aff_libomp_view_parse(const char *text, bkm_aff_libomp_view_t *view, bkm_err_t *err)
{
    int rc = BKM_OK, cap = 0;
    const char *line;
    if (!text || !view)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_libomp_view_parse: NULL argument");
    memset(view, 0, sizeof(*view));
    for (const char *next = text; *next;) {
        char buf[1024];
        size_t len = strcspn(next, "\n");
        snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) ? len : sizeof(buf) - 1), next);
        next += len + (next[len] == '\n');
        line = buf;
        if (strstr(line, "KMP_AFFINITY: ") == NULL)
            continue;
        if (strstr(line, " maps to ")) {
            bkm_aff_libomp_proc_t p;
            if (parse_map_line(line, &p) < 0) {
                rc = bkm_err_set(err, BKM_EINVAL, "libomp map line not understood: '%.*s'",
                                 (int)(len > 200 ? 200 : len), line);
                goto out;
            }
            for (int i = 0; i < view->n; i++)
                if (view->proc[i].os == p.os) {
                    rc = bkm_err_set(err, BKM_EINVAL, "libomp maps OS proc %d twice", p.os);
                    goto out;
                }
            if (view->n == cap) {
                int nc = cap ? 2 * cap : 64;
                bkm_aff_libomp_proc_t *np = bkm_realloc(view->proc, (size_t)nc * sizeof(*np));
                if (!np) {
                    rc = bkm_err_set(err, BKM_ENOMEM, "out of memory for libomp's map");
                    goto out;
                }
                view->proc = np;
                cap = nc;
            }
            view->proc[view->n++] = p;
        } else if ((strstr(line, ": decoding ") || strstr(line, ": parsing ") || strstr(line, "hwloc") ||
                    strstr(line, "flat")) &&
                   !view->method[0]) {
            info_text(line, view->method, sizeof(view->method));
        } else if (strstr(line, "Info #191")) {
            info_text(line, view->shape, sizeof(view->shape));
        }
    }
    if (view->n == 0)
        rc = bkm_err_set(err, BKM_EINVAL, "no \"OS proc N maps to ...\" line in libomp's verbose output");
out:
    if (rc < 0)
        bkm_aff_libomp_view_free(view);
    return rc;
}

/* ---- Running libomp in a child ---------------------------------------------------------- */

int bkm_aff_libomp_view_spawn(const char *exe, char *const argv[], char *const *environment, char *const *extra,
                              bkm_aff_libomp_view_t *view, bkm_err_t *err)
{
    static char verbose[] = "KMP_AFFINITY=verbose", one[] = "OMP_NUM_THREADS=1";
    char **envp = NULL;
    size_t n = 0, k = 0;
    int rc = BKM_OK, status = 0;
    bkm_buf_t b;
    bkm_buf_init(&b);
    if (!exe || !argv || !environment || !view)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_libomp_view_spawn: NULL argument");
    memset(view, 0, sizeof(*view));
    while (environment[n])
        n++;
    for (size_t i = 0; extra && extra[i]; i++)
        n++;
    envp = bkm_calloc(n + 3, sizeof(char *));
    if (!envp)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    for (size_t i = 0; environment[i]; i++)
        if (!bkm__aff_is_runtime_var(environment[i]))
            envp[k++] = environment[i];
    envp[k++] = verbose;
    envp[k++] = one;
    for (size_t i = 0; extra && extra[i]; i++)
        envp[k++] = extra[i];
    envp[k] = NULL;
    if ((rc = bkm__aff_child_capture("libomp topology probe", exe, argv, envp, STDERR_FILENO, (size_t)16 << 20, &b,
                                     &status, err)) < 0)
        goto out;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char last[240] = "";
        const char *t = bkm_buf_str(&b);
        size_t len = strlen(t);
        while (len > 0 && t[len - 1] == '\n')
            len--;
        size_t start = len;
        while (start > 0 && t[start - 1] != '\n')
            start--;
        snprintf(last, sizeof(last), "%.*s", (int)(len - start), t + start);
        rc = bkm_err_set(err, BKM_EDEP, "libomp topology probe '%s' failed (%s %d)%s%s", argv[0],
                         WIFEXITED(status) ? "exit status" : "signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), last[0] ? ": " : "", last);
        goto out;
    }
    rc = bkm_aff_libomp_view_parse(bkm_buf_str(&b), view, err);
    if (rc == BKM_OK)
        view->vm_guest = cpu_is_vm_guest();
    if (rc < 0) {
        rc = BKM_EDEP;
        bkm_err_prefix(err, "libomp topology probe '%s'", argv[0]);
    }
out:
    bkm_free(envp);
    bkm_buf_free(&b);
    return rc;
}

/* ---- Comparing with hwloc --------------------------------------------------------------- */

typedef struct hw_pu {
    int os, pkg_id, core_id, core, pkg;
} hw_pu_t;

static int hw_pu_cmp(const void *a, const void *b)
{
    const hw_pu_t *x = a, *y = b;
    if (x->pkg_id != y->pkg_id)
        return x->pkg_id < y->pkg_id ? -1 : 1;
    if (x->core_id != y->core_id)
        return x->core_id < y->core_id ? -1 : 1;
    return (x->os > y->os) - (x->os < y->os);
}

/* "1 package x 2 cores x 1 thread (2 cores)" (largest counts) from a sequence in topology order
 * where @p new_pkg[i] / @p new_core[i] say whether element i starts a package / core. */
static void shape_text(bkm_buf_t *b, int n, const int *new_pkg, const int *new_core)
{
    int pkgs = 0, cores = 0, max_c = 0, max_t = 0, c_in_p = 0, t_in_c = 0;
    for (int i = 0; i < n; i++) {
        if (new_pkg[i]) {
            pkgs++;
            c_in_p = 0;
        }
        if (new_core[i]) {
            cores++;
            c_in_p++;
            t_in_c = 0;
        }
        t_in_c++;
        if (c_in_p > max_c)
            max_c = c_in_p;
        if (t_in_c > max_t)
            max_t = t_in_c;
    }
    bkm_buf_printf(b, "%d package%s x %d core%s x %d thread%s (%d cores)", pkgs, pkgs == 1 ? "" : "s", max_c,
                   max_c == 1 ? "" : "s", max_t, max_t == 1 ? "" : "s", cores);
}

int bkm_aff_libomp_view_compare(const bkm_topo_t *topo, const bkm_aff_libomp_view_t *view, bkm_buf_t *why,
                                bkm_err_t *err)
{
    int n_pu = 0, n = 0, rc = BKM_OK, same = 1;
    const bkm_topo_pu_t *pu = bkm_topo_pus(topo, &n_pu);
    hw_pu_t *hw = NULL;
    int *flags = NULL;
    bkm_cpuset_t a, b;
    if (!topo || !view || !pu)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_libomp_view_compare: NULL argument");
    hw = bkm_calloc((size_t)n_pu + 1, sizeof(*hw));
    flags = bkm_calloc(4 * ((size_t)n_pu + (size_t)view->n) + 4, sizeof(*flags));
    if (!hw || !flags) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
        goto out;
    }
    bkm_cpuset_zero(&a);
    bkm_cpuset_zero(&b);
    for (int i = 0; i < n_pu; i++)
        if (pu[i].allowed) {
            hw[n++] = (hw_pu_t){pu[i].os, pu[i].pkg_id, pu[i].core_id, pu[i].core, pu[i].pkg};
            bkm_cpuset_set(&a, pu[i].os);
        }
    qsort(hw, (size_t)n, sizeof(*hw), hw_pu_cmp);
    for (int i = 0; i < view->n; i++)
        bkm_cpuset_set(&b, view->proc[i].os);
    if (!bkm_cpuset_equal(&a, &b) || n != view->n)
        same = 0;
    for (int i = 0; same && i < n; i++) {
        const bkm_aff_libomp_proc_t *p = &view->proc[i], *q = i ? &view->proc[i - 1] : NULL;
        int l_pkg = !q || p->socket != q->socket, l_core = l_pkg || p->core != q->core;
        int h_pkg = !i || hw[i].pkg != hw[i - 1].pkg, h_core = h_pkg || hw[i].core != hw[i - 1].core;
        if (p->os != hw[i].os || l_pkg != h_pkg || l_core != h_core)
            same = 0;
    }
    if (same)
        goto out;
    rc = BKM_EVERIFY;
    if (!why)
        goto out;
    {
        int *lp = flags, *lc = flags + view->n + 1, *hp = flags + 2 * (view->n + 1), *hc = hp + n + 1;
        for (int i = 0; i < view->n; i++) {
            const bkm_aff_libomp_proc_t *p = &view->proc[i], *q = i ? &view->proc[i - 1] : NULL;
            lp[i] = !q || p->socket != q->socket;
            lc[i] = lp[i] || p->core != q->core;
        }
        for (int i = 0; i < n; i++) {
            hp[i] = !i || hw[i].pkg != hw[i - 1].pkg;
            hc[i] = hp[i] || hw[i].core != hw[i - 1].core;
        }
        bkm_buf_printf(why, "libomp%s%s%s: ", view->method[0] ? " (" : "", view->method, view->method[0] ? ")" : "");
        shape_text(why, view->n, lp, lc);
        bkm_buf_puts(why, ", procs in the order ");
        for (int i = 0; i < view->n; i++)
            bkm_buf_printf(why, "%s%d", i ? "," : "", view->proc[i].os);
        bkm_buf_puts(why, "; hwloc: ");
        shape_text(why, n, hp, hc);
        bkm_buf_puts(why, ", order ");
        for (int i = 0; i < n; i++)
            bkm_buf_printf(why, "%s%d", i ? "," : "", hw[i].os);
        if (why->oom)
            rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
    }
out:
    bkm_free(hw);
    bkm_free(flags);
    return rc;
}

int bkm_aff_libomp_view_to_json(const bkm_aff_libomp_view_t *view, bkm_json_w_t *w, bkm_err_t *err)
{
    if (!view || !w)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_libomp_view_to_json: NULL argument");
    bkm_json_obj_begin(w);
    bkm_json_key(w, "method"), bkm_json_str(w, view->method);
    bkm_json_key(w, "shape"), bkm_json_str(w, view->shape);
    bkm_json_key(w, "map");
    bkm_json_arr_begin(w);
    for (int i = 0; i < view->n; i++) {
        bkm_json_obj_begin(w);
        bkm_json_key(w, "os"), bkm_json_int(w, view->proc[i].os);
        bkm_json_key(w, "socket"), bkm_json_int(w, view->proc[i].socket);
        bkm_json_key(w, "core"), bkm_json_int(w, view->proc[i].core);
        bkm_json_key(w, "thread"), bkm_json_int(w, view->proc[i].thread);
        bkm_json_obj_end(w);
    }
    bkm_json_arr_end(w);
    bkm_json_obj_end(w);
    if (w->out && w->out->oom)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory writing libomp's view");
    return BKM_OK;
}

/* ---- The correction --------------------------------------------------------------------- */

int bkm_aff_topo_fix_wanted(const char *kmp_affinity)
{
    bkm_aff_kmp_t k;
    if (!kmp_affinity || bkm_aff_kmp_parse(kmp_affinity, &k, NULL) < 0)
        return 1;
    return k.type != BKM_AFF_TYPE_DISABLED;
}

const char *bkm_aff_topo_fix_mode_name(bkm_aff_topo_fix_mode_t mode)
{
    switch (mode) {
    case BKM_AFF_TOPO_FIX_NEVER: return "never";
    case BKM_AFF_TOPO_FIX_ALWAYS: return "always";
    default: return "auto";
    }
}

int bkm_aff_topo_fix_mode_parse(const char *s, bkm_aff_topo_fix_mode_t *mode, bkm_err_t *err)
{
    if (s && strcmp(s, "auto") == 0)
        *mode = BKM_AFF_TOPO_FIX_AUTO;
    else if (s && strcmp(s, "never") == 0)
        *mode = BKM_AFF_TOPO_FIX_NEVER;
    else if (s && strcmp(s, "always") == 0)
        *mode = BKM_AFF_TOPO_FIX_ALWAYS;
    else
        return bkm_err_set(err, BKM_EINVAL, "libomp topology correction '%s' is not auto, never or always",
                           s ? s : "(null)");
    return BKM_OK;
}

void bkm_aff_topo_fix_release(bkm_aff_topo_fix_t *fix)
{
    if (!fix)
        return;
    if (fix->path[0])
        unlink(fix->path);
    fix->path[0] = '\0';
    fix->applied = 0;
    fix->env_method[0] = '\0';
    fix->env_file[0] = '\0';
}

int bkm_aff_topo_fix_prepare(const bkm_topo_t *topo, const bkm_aff_libomp_view_t *view,
                             bkm_aff_topo_fix_mode_t mode, const char *dir, bkm_aff_topo_fix_t *fix,
                             bkm_err_t *err)
{
    bkm_buf_t why, text;
    int rc = BKM_OK;
    bkm_buf_init(&why);
    bkm_buf_init(&text);
    if (!topo || !fix || !dir || !*dir || (mode == BKM_AFF_TOPO_FIX_AUTO && !view))
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_topo_fix_prepare: missing argument");
    memset(fix, 0, sizeof(*fix));
    if (view) {
        snprintf(fix->method, sizeof(fix->method), "%s", view->method);
        rc = bkm_aff_libomp_view_compare(topo, view, &why, err);
        if (rc == BKM_EVERIFY) {
            fix->disagreed = 1;
            snprintf(fix->why, sizeof(fix->why), "%s", bkm_buf_str(&why));
            rc = BKM_OK;
        }
        if (rc < 0)
            goto out;
        if (!fix->disagreed && view->vm_guest && strstr(view->method, "legacy APIC")) {
            fix->unstable = 1;
            snprintf(fix->why, sizeof(fix->why),
                     "libomp decodes legacy APIC ids on a VM guest: they are the host's and follow the physical "
                     "cores the vCPUs run on, so its view (which agrees now) can change at any time");
        }
    }
    if (mode == BKM_AFF_TOPO_FIX_NEVER || (mode == BKM_AFF_TOPO_FIX_AUTO && !fix->disagreed && !fix->unstable))
        goto out;
    if ((rc = bkm_topo_cpuinfo_write(topo, &text, err)) < 0)
        goto out;
    {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "bkm-cpuinfo-%ld-", (long)getpid());
        if ((rc = bkm_file_write_new(dir, prefix, text.data ? text.data : "", text.len, 0600, fix->path,
                                     sizeof(fix->path), err)) < 0) {
            bkm_err_prefix(err, "the cpuinfo file");
            goto out;
        }
    }
    fix->applied = 1;
    snprintf(fix->env_method, sizeof(fix->env_method), "KMP_TOPOLOGY_METHOD=cpuinfo");
    snprintf(fix->env_file, sizeof(fix->env_file), "KMP_CPUINFO_FILE=%s", fix->path);
out:
    if (rc < 0)
        bkm_aff_topo_fix_release(fix);
    bkm_buf_free(&why);
    bkm_buf_free(&text);
    return rc;
}

int bkm_aff_topo_fix_collect(const char *dir)
{
    int removed = 0;
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid;
        char path[4096];
        struct stat st;
        if (strncmp(e->d_name, "bkm-cpuinfo-", 12) != 0)
            continue;
        pid = strtol(e->d_name + 12, &end, 10);
        if (end == e->d_name + 12 || *end != '-' || strlen(end) != 7 || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* its creator lives (or is someone else's) */
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
            continue;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

void bkm_aff_topo_fix_to_json(const bkm_aff_topo_fix_t *fix, bkm_json_w_t *w)
{
    bkm_json_obj_begin(w);
    bkm_json_key(w, "applied"), bkm_json_bool(w, fix->applied);
    bkm_json_key(w, "disagreed"), bkm_json_bool(w, fix->disagreed);
    bkm_json_key(w, "unstable"), bkm_json_bool(w, fix->unstable);
    bkm_json_key(w, "why"), bkm_json_str(w, fix->why);
    bkm_json_key(w, "libomp_method"), bkm_json_str(w, fix->method);
    if (fix->applied) {
        bkm_json_key(w, "KMP_TOPOLOGY_METHOD"), bkm_json_str(w, "cpuinfo");
        bkm_json_key(w, "KMP_CPUINFO_FILE"), bkm_json_str(w, fix->path);
    }
    bkm_json_obj_end(w);
}
