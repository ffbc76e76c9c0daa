/* SPDX-License-Identifier: MIT */
/* Unit tests of bkm/affinity/runtime.h on real programs (built by build_fixtures.sh with gcc and
 * clang) and real libraries: the variable table against the runtimes' own binaries, the ELF reader
 * against readelf, the loader cache against ldconfig, the closure against the real dynamic loader
 * (in ldd's tracing mode, which maps a program's libraries without running it), RPATH/RUNPATH/$ORIGIN/$LIB/
 * $PLATFORM, bkm's libgomp.so.1 -> libomp link, scripts and interpreters, a deterministic fuzz of
 * mutated ELF files, /proc/PID/maps of running programs, and the brief start of a program.
 *   test_runtime          the suite
 *   test_runtime --torch  Debian's PyTorch (python3-torch): its static closure lists libgomp */
#define _GNU_SOURCE
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bkm/affinity.h"

#define FIX BKM_RT_FIX
#define LIBGOMP_PATH "/usr/lib/x86_64-linux-gnu/libgomp.so.1"
#define TORCH_CPU "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so"

/* ---------------------------------------------------------------------------------------- */
/* files, folders, commands                                                                  */

static char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    size_t n = 0;
    bkm_err_t err = {0};
    ck_assert_msg(bkm_file_read_regular(path, "test file", (size_t)1 << 30, &data, &n, &err) == BKM_OK, "%s",
                  err.msg);
    if (len)
        *len = n;
    return data;
}

static void spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static void copy_file(const char *from, const char *to, int mode)
{
    size_t n;
    char *d = slurp(from, &n);
    spit(to, d, n);
    chmod(to, (mode_t)mode);
    bkm_free(d);
}

static char tmpdir[PATH_MAX];

static void tmp_setup(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/bkm-rt-XXXXXX", t && t[0] ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
}

static const char *tmp(const char *name)
{
    static char buf[4][PATH_MAX];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, PATH_MAX, "%s/%s", tmpdir, name);
    return b;
}

static const char *fix(const char *name)
{
    static char buf[4][PATH_MAX];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, PATH_MAX, "%s/%s", FIX, name);
    return b;
}

/* Run a shell command line of the test's own making and return its stdout (bkm_free). */
static char *capture(const char *cmd)
{
    bkm_buf_t b;
    char chunk[4096];
    size_t k;
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "popen %s", cmd);
    bkm_buf_init(&b);
    while ((k = fread(chunk, 1, sizeof chunk, p)) > 0)
        bkm_buf_append(&b, chunk, k);
    pclose(p);
    return bkm_buf_take(&b);
}

static void cfg_default(bkm_aff_runtime_cfg_t *cfg)
{
    bkm_aff_runtime_cfg_init(cfg);
    cfg->path = getenv("PATH");
}

static bkm_aff_runtime_result_t detect(const char *program, const bkm_aff_runtime_cfg_t *cfg)
{
    bkm_aff_runtime_result_t r;
    bkm_aff_runtime_cfg_t dflt;
    bkm_err_t err = {0};
    if (cfg == NULL) {
        cfg_default(&dflt);
        cfg = &dflt;
    }
    bkm_aff_runtime_result_init(&r);
    ck_assert_msg(bkm_aff_runtime_detect_static(program, cfg, &r, &err) == BKM_OK, "%s: %s", program, err.msg);
    return r;
}

static const bkm_aff_runtime_obj_t *obj_named(const bkm_aff_runtime_result_t *r, const char *name)
{
    for (int i = 0; i < r->n_obj; i++)
        if (strcmp(r->obj[i].name, name) == 0)
            return &r->obj[i];
    return NULL;
}

static int has_warning(const bkm_aff_runtime_result_t *r, const char *needle)
{
    for (int i = 0; i < r->n_warnings; i++)
        if (strstr(r->warning[i], needle))
            return 1;
    return 0;
}

static bkm_aff_runtime_kind_t runtime_kind(const bkm_aff_runtime_result_t *r, int k)
{
    return k < r->n_runtimes ? r->obj[r->runtime[k]].kind : BKM_AFF_RUNTIME_NONE;
}

/* ---------------------------------------------------------------------------------------- */
/* kinds and variables                                                                       */

START_TEST(kind_names)
{
    bkm_aff_runtime_kind_t k;
    bkm_err_t err = {0};
    ck_assert_str_eq(bkm_aff_runtime_kind_name(BKM_AFF_RUNTIME_LIBGOMP), "libgomp");
    ck_assert_str_eq(bkm_aff_runtime_kind_title(BKM_AFF_RUNTIME_LIBOMP), "LLVM OpenMP");
    ck_assert_str_eq(bkm_aff_runtime_kind_title(BKM_AFF_RUNTIME_LIBIOMP5), "Intel OpenMP");
    ck_assert_str_eq(bkm_aff_runtime_kind_name((bkm_aff_runtime_kind_t)99), "unknown");
    ck_assert_int_eq(bkm_aff_runtime_kind_parse("gomp", &k, &err), BKM_OK);
    ck_assert_int_eq(k, BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert_int_eq(bkm_aff_runtime_kind_parse("libiomp5", &k, &err), BKM_OK);
    ck_assert_int_eq(k, BKM_AFF_RUNTIME_LIBIOMP5);
    ck_assert_int_eq(bkm_aff_runtime_kind_parse("gnuomp", &k, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'gnuomp'"));
}
END_TEST

START_TEST(var_table_ignored)
{
    size_t n;
    const bkm_aff_runtime_var_t *v = bkm_aff_runtime_vars(&n);
    bkm_buf_t b;
    ck_assert(n > 100);
    ck_assert(bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBGOMP, "KMP_AFFINITY"));
    ck_assert(bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBGOMP, "KMP_BLOCKTIME"));
    ck_assert(bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBGOMP, "KMP_NO_SUCH"));
    ck_assert(!bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBGOMP, "OMP_PLACES"));
    ck_assert(!bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBGOMP, "GOMP_CPU_AFFINITY"));
    ck_assert(!bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBGOMP, "GOMP_SPINCOUNT"));
    ck_assert(bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBGOMP, "OMP_TOOL_LIBRARIES"));   /* no OMPT in GCC 12 */
    ck_assert(!bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBOMP, "GOMP_CPU_AFFINITY"));    /* libomp converts it */
    ck_assert(bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBOMP, "GOMP_SPINCOUNT"));
    ck_assert(!bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBIOMP5, "KMP_BLOCKTIME"));
    ck_assert(bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_NONE, "OMP_NUM_THREADS"));
    ck_assert(!bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_UNKNOWN, "KMP_AFFINITY"));
    for (size_t i = 0; i < n; i++) {
        if (strncmp(v[i].name, "KMP_", 4) == 0)
            ck_assert_msg(bkm_aff_runtime_var_ignored(BKM_AFF_RUNTIME_LIBGOMP, v[i].name), "%s", v[i].name);
        ck_assert_msg(bkm_aff_runtime_var_find(v[i].name) == &v[i], "%s listed twice", v[i].name);
    }
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_aff_runtime_var_explain(BKM_AFF_RUNTIME_LIBGOMP, "KMP_AFFINITY", "./app", "libgomp.so.1", &b),
                     1);
    ck_assert_str_eq(bkm_buf_str(&b), "KMP_AFFINITY is ignored: ./app loads libgomp.so.1 (GNU OpenMP); its placement "
                                      "variables are OMP_PLACES/OMP_PROC_BIND/GOMP_CPU_AFFINITY");
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_aff_runtime_var_explain(BKM_AFF_RUNTIME_LIBOMP, "GOMP_SPINCOUNT", "app", "libomp.so.5", &b),
                     1);
    ck_assert_ptr_nonnull(strstr(bkm_buf_str(&b), "its wait variables are KMP_BLOCKTIME/KMP_LIBRARY/OMP_WAIT_POLICY"));
    bkm_buf_free(&b);
    bkm_buf_init(&b);
    ck_assert_int_eq(bkm_aff_runtime_var_explain(BKM_AFF_RUNTIME_LIBOMP, "KMP_AFFINITY", "app", "libomp.so.5", &b), 0);
    ck_assert_uint_eq(b.len, 0);
    bkm_buf_free(&b);
}
END_TEST

/* Does @p name occur in @p bin as a whole NUL-terminated string (or as the tail of one: compilers
 * share the tail "OMP_STACKSIZE" of "GOMP_STACKSIZE")? */
static int bin_has(const char *bin, size_t n, const char *name)
{
    size_t l = strlen(name) + 1;
    return memmem(bin, n, name, l) != NULL;
}

/* Every [A-Z_] string with one of the runtime prefixes that stands alone (NUL before and after)
 * in @p bin must be in the table, read by @p bit. */
static void bin_names_listed(const char *what, const char *bin, size_t n, unsigned bit)
{
    static const char *const prefixes[] = {"OMP_", "KMP_", "GOMP_", "LIBOMP_", NULL};
    for (size_t i = 1; i < n; i++) {
        size_t e = i;
        const bkm_aff_runtime_var_t *v;
        char name[96];
        int pre = 0;
        if (bin[i - 1] != '\0')
            continue;
        while (e < n && e - i < sizeof name - 1 && ((bin[e] >= 'A' && bin[e] <= 'Z') || bin[e] == '_'))
            e++;
        if (e >= n || bin[e] != '\0' || e - i < 6)
            continue;
        memcpy(name, bin + i, e - i);
        name[e - i] = '\0';
        for (int k = 0; prefixes[k]; k++)
            pre |= strncmp(name, prefixes[k], strlen(prefixes[k])) == 0;
        if (!pre || name[e - i - 1] == '_')
            continue;
        v = bkm_aff_runtime_var_find(name);
        ck_assert_msg(v != NULL, "%s holds the variable name %s, which the table lacks", what, name);
        ck_assert_msg(v->readers & bit, "%s reads %s, but the table says it does not", what, name);
        i = e;
    }
}

START_TEST(var_table_matches_the_runtimes)
{
    size_t n_g, n_o, n;
    char *gomp = slurp(LIBGOMP_PATH, &n_g), *omp = slurp(BKM_LIBOMP_REAL, &n_o);
    const bkm_aff_runtime_var_t *v = bkm_aff_runtime_vars(&n);
    for (size_t i = 0; i < n; i++) {
        unsigned g = v[i].readers & (1u << BKM_AFF_RUNTIME_LIBGOMP), k = v[i].readers & (1u << BKM_AFF_RUNTIME_LIBOMP);
        if (g && strcmp(v[i].name, "GOMP_RTEMS_THREAD_POOLS") != 0)   /* read on RTEMS only */
            ck_assert_msg(bin_has(gomp, n_g, v[i].name), "the table says libgomp reads %s; its binary lacks it",
                          v[i].name);
        if (k)
            ck_assert_msg(bin_has(omp, n_o, v[i].name), "the table says libomp reads %s; its binary lacks it",
                          v[i].name);
        ck_assert_msg(((v[i].readers >> BKM_AFF_RUNTIME_LIBOMP) & 1) ==
                          ((v[i].readers >> BKM_AFF_RUNTIME_LIBIOMP5) & 1),
                      "%s: libomp and libiomp5 disagree", v[i].name);
    }
    bin_names_listed("libgomp", gomp, n_g, 1u << BKM_AFF_RUNTIME_LIBGOMP);
    bin_names_listed("libomp", omp, n_o, 1u << BKM_AFF_RUNTIME_LIBOMP);
    bkm_free(gomp);
    bkm_free(omp);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* ELF reader                                                                                */

/* readelf's view of the dynamic section: "NEEDED a;NEEDED b;SONAME c;RPATH d;..." */
static void readelf_view(const char *path, bkm_buf_t *out)
{
    static const char *const tags[] = {"NEEDED", "SONAME", "RPATH", "RUNPATH", NULL};
    char cmd[PATH_MAX + 64], *text, *line, *save = NULL;
    snprintf(cmd, sizeof cmd, "LC_ALL=C readelf -dW '%s'", path);
    text = capture(cmd);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        for (int t = 0; tags[t]; t++) {
            char pat[16], *p, *l, *rb;
            snprintf(pat, sizeof pat, "(%s)", tags[t]);
            if ((p = strstr(line, pat)) == NULL || (l = strchr(p, '[')) == NULL || (rb = strrchr(l, ']')) == NULL)
                continue;
            bkm_buf_printf(out, "%s %.*s;", tags[t], (int)(rb - l - 1), l + 1);
        }
    bkm_free(text);
}

static void our_view(const bkm_aff_elf_info_t *in, bkm_buf_t *out)
{
    for (int i = 0; i < in->n_needed; i++)
        bkm_buf_printf(out, "NEEDED %s;", in->needed[i]);
    if (in->soname)
        bkm_buf_printf(out, "SONAME %s;", in->soname);
    if (in->rpath)
        bkm_buf_printf(out, "RPATH %s;", in->rpath);
    if (in->runpath)
        bkm_buf_printf(out, "RUNPATH %s;", in->runpath);
}

START_TEST(elf_read_matches_readelf)
{
    const char *files[] = {fix("prog/omp_gcc"), fix("prog/omp_clang"), fix("prog/two_linked"), fix("prog/gomp_rt"),
                           fix("ld/exe_rpath"), fix("ld/exe_runpath_mid"), fix("ld/origin/bin/exe_origin"),
                           fix("ld/dst/bin/exe_lib"), LIBGOMP_PATH, BKM_LIBOMP_REAL, "/lib/x86_64-linux-gnu/libc.so.6",
                           "/usr/lib/x86_64-linux-gnu/libdnnl.so.2", NULL};
    for (int i = 0; files[i]; i++) {
        char p[PATH_MAX];
        bkm_aff_elf_info_t in;
        bkm_err_t err = {0};
        bkm_buf_t want, got;
        snprintf(p, sizeof p, "%s", files[i]);
        if (access(p, F_OK) != 0) {
            ck_assert_msg(strstr(p, "libdnnl") != NULL, "fixture %s missing", p);
            continue;
        }
        ck_assert_msg(bkm_aff_elf_read(p, &in, &err) == BKM_OK, "%s: %s", p, err.msg);
        bkm_buf_init(&want);
        bkm_buf_init(&got);
        readelf_view(p, &want);
        our_view(&in, &got);
        ck_assert_msg(want.len > 0, "readelf shows no dynamic section for %s", p);
        ck_assert_msg(strcmp(bkm_buf_str(&want), bkm_buf_str(&got)) == 0, "%s:\n readelf: %s\n bkm:     %s", p,
                      bkm_buf_str(&want), bkm_buf_str(&got));
        ck_assert(in.has_dynamic);
        if (i == 0)
            ck_assert_str_eq(in.interp, "/lib64/ld-linux-x86-64.so.2");
        bkm_buf_free(&want);
        bkm_buf_free(&got);
        bkm_aff_elf_info_free(&in);
    }
}
END_TEST

/* A copy of omp_gcc with byte @p off set to @p v. */
static const char *patched(const char *name, size_t off, const void *v, size_t vn)
{
    size_t n;
    char *d = slurp(fix("prog/omp_gcc"), &n);
    const char *path = tmp(name);
    ck_assert(off + vn <= n);
    memcpy(d + off, v, vn);
    spit(path, d, n);
    bkm_free(d);
    return path;
}

static void refused(const char *path, const char *needle)
{
    bkm_aff_elf_info_t in;
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_aff_elf_read(path, &in, &err), BKM_EINVAL);
    ck_assert_msg(strstr(err.msg, path) != NULL, "message does not name %s: %s", path, err.msg);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message lacks '%s': %s", needle, err.msg);
    bkm_aff_elf_info_free(&in);
}

START_TEST(elf_refuses_what_it_does_not_read)
{
    unsigned char one = ELFCLASS32, be = ELFDATA2MSB;
    uint16_t aarch64 = 183, many = 0xfff0;
    bkm_aff_runtime_result_t r;
    bkm_aff_runtime_cfg_t cfg;
    bkm_err_t err = {0};
    size_t n;
    char *d;
    refused(patched("c32", EI_CLASS, &one, 1), "32-bit");
    refused(patched("be", EI_DATA, &be, 1), "big-endian");
    refused(patched("arm", offsetof(Elf64_Ehdr, e_machine), &aarch64, 2), "machine 183");
    refused(patched("phnum", offsetof(Elf64_Ehdr, e_phnum), &many, 2), "program headers");
    spit(tmp("text"), "hello\n", 6);
    refused(tmp("text"), "not an ELF file");
    d = slurp(fix("prog/omp_gcc"), &n);
    spit(tmp("short"), d, 40);
    refused(tmp("short"), "truncated");
    spit(tmp("half"), d, 900);
    refused(tmp("half"), "truncated");
    bkm_free(d);
    /* the whole detection refuses them too, naming the file */
    cfg_default(&cfg);
    bkm_aff_runtime_result_init(&r);
    ck_assert_int_eq(bkm_aff_runtime_detect_static(tmp("c32"), &cfg, &r, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "32-bit"));
    ck_assert_int_eq(r.n_obj, 0);
    /* a file that is neither ELF nor a script: unknown, with the reason */
    chmod(tmp("text"), 0755);
    r = detect(tmp("text"), &cfg);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_UNKNOWN);
    ck_assert_ptr_nonnull(strstr(r.reason, "neither an ELF program nor a #! script"));
    bkm_aff_runtime_result_free(&r);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* Deterministic fuzz: mutated headers, program headers, dynamic sections, string and hash tables
 * of real files. Every call ends with BKM_OK or BKM_EINVAL naming the file (ASan/UBSan builds
 * catch any out-of-bounds read). */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

typedef struct region {
    size_t off, len;
} region_t;

/* The regions of @p d worth mutating: ELF header, program headers, dynamic section, and what the
 * dynamic section points at (string table, GNU hash table), located through the program headers. */
static int regions_of(const char *d, size_t n, region_t *rg)
{
    const Elf64_Ehdr *eh = (const void *)d;
    const Elf64_Phdr *ph = (const void *)(d + eh->e_phoff);
    int k = 0;
    rg[k++] = (region_t){0, sizeof *eh};
    rg[k++] = (region_t){eh->e_phoff, (size_t)eh->e_phnum * sizeof *ph};
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_DYNAMIC)
            continue;
        rg[k++] = (region_t){ph[i].p_offset, ph[i].p_filesz};
        for (const Elf64_Dyn *dy = (const void *)(d + ph[i].p_offset); dy->d_tag != DT_NULL; dy++) {
            if (dy->d_tag != DT_STRTAB && dy->d_tag != DT_GNU_HASH && dy->d_tag != DT_SYMTAB)
                continue;
            for (int j = 0; j < eh->e_phnum; j++)
                if (ph[j].p_type == PT_LOAD && dy->d_un.d_ptr >= ph[j].p_vaddr &&
                    dy->d_un.d_ptr < ph[j].p_vaddr + ph[j].p_filesz) {
                    size_t off = ph[j].p_offset + (dy->d_un.d_ptr - ph[j].p_vaddr);
                    rg[k++] = (region_t){off, off + 4096 <= n ? 4096 : n - off};
                    break;
                }
        }
    }
    return k;
}

static int fuzz_refused, fuzz_read;

static void fuzz_one(const char *path, int dynamic_too)
{
    bkm_aff_elf_info_t in;
    bkm_aff_runtime_kind_t kind;
    bkm_aff_runtime_result_t r;
    bkm_aff_runtime_cfg_t cfg;
    bkm_err_t err = {0};
    char how[96];
    int rc;
    rc = bkm_aff_elf_read(path, &in, &err);
    ck_assert_msg(rc == BKM_OK || rc == BKM_EINVAL, "elf_read %d: %s", rc, err.msg);
    fuzz_refused += rc < 0;
    fuzz_read += rc == BKM_OK;
    if (rc < 0)
        ck_assert_msg(strstr(err.msg, path) != NULL, "message does not name the file: %s", err.msg);
    bkm_aff_elf_info_free(&in);
    memset(&err, 0, sizeof err);
    rc = bkm_aff_runtime_classify_file(path, &kind, how, sizeof how, &err);
    ck_assert_msg(rc == BKM_OK || rc == BKM_EINVAL, "classify %d: %s", rc, err.msg);
    if (rc < 0)
        ck_assert_msg(strstr(err.msg, path) != NULL, "message does not name the file: %s", err.msg);
    if (!dynamic_too)
        return;
    cfg_default(&cfg);
    bkm_aff_runtime_result_init(&r);
    memset(&err, 0, sizeof err);
    rc = bkm_aff_runtime_detect_static(path, &cfg, &r, &err);
    ck_assert_msg(rc == BKM_OK || rc == BKM_EINVAL, "detect %d: %s", rc, err.msg);
    if (rc < 0)
        ck_assert_msg(err.msg[0] != '\0', "an empty message");
    bkm_aff_runtime_result_free(&r);
}

static void fuzz_file(const char *src, const char *name, int rounds, int dynamic_too)
{
    size_t n;
    char *orig = slurp(src, &n), *d = bkm_malloc(n);
    region_t rg[16];
    int nr = regions_of(orig, n, rg);
    const char *path = tmp(name);
    static const uint64_t specials[] = {0, 1, 0x7f, 0xff, 0xffff, 0x7fffffff, 0xffffffff, 0x8000000000000000ull,
                                        ~0ull};
    for (int round = 0; round < rounds; round++) {
        size_t len = n;
        int muts = 1 + (int)(next_rand() % 4);
        memcpy(d, orig, n);
        for (int m = 0; m < muts; m++) {
            const region_t *g = &rg[next_rand() % (uint64_t)nr];
            size_t off = g->off + (g->len ? (size_t)(next_rand() % g->len) : 0);
            uint64_t kind = next_rand() % 4, v;
            if (off >= n)
                continue;
            if (kind == 0) {                          /* a random byte */
                d[off] = (char)next_rand();
            } else if (kind <= 2) {                   /* an 8-byte field (aligned) with a special or size-like value */
                off &= ~(size_t)7;
                v = kind == 1 ? specials[next_rand() % (sizeof specials / sizeof specials[0])]
                              : (uint64_t)n + (next_rand() % 64) - 32;
                if (off + 8 <= n)
                    memcpy(d + off, &v, 8);
            } else {                                  /* truncate */
                len = (size_t)(next_rand() % n);
            }
        }
        spit(path, d, len);
        chmod(path, 0755);
        fuzz_one(path, dynamic_too);
    }
    bkm_free(orig);
    bkm_free(d);
}

START_TEST(fuzz_mutated_elf)
{
    /* the name mentions omp, so the symbol lookups (GNU hash, symbols, names) run on every copy */
    fuzz_file(fix("prog/omp_gcc"), "omp_fuzz", 600, 1);
    fuzz_file(LIBGOMP_PATH, "libgomp.so.1", 600, 0);
    fuzz_file(fix("ld/exe_rpath_mid"), "mid_fuzz", 300, 1);
    /* the mutations reach both outcomes: refused files and files still read */
    fprintf(stderr, "fuzz: %d mutated files refused, %d read\n", fuzz_refused, fuzz_read);
    ck_assert_int_gt(fuzz_refused, 300);
    ck_assert_int_gt(fuzz_read, 300);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* ld.so.cache                                                                               */

START_TEST(ldcache_matches_ldconfig)
{
    bkm_aff_ldcache_t *c = NULL;
    bkm_err_t err = {0};
    char *text, *line, *save = NULL, seen[512][128];
    int n_seen = 0, checked = 0, total = -1;
    if (access("/etc/ld.so.cache", R_OK) != 0) {
        fprintf(stderr, "no /etc/ld.so.cache here: the synthetic caches below stand in\n");
        return;
    }
    ck_assert_msg(bkm_aff_ldcache_open("/etc/ld.so.cache", &c, &err) == BKM_OK, "%s", err.msg);
    text = capture("LC_ALL=C /sbin/ldconfig -p");
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[128], flags[128], path[PATH_MAX];
        int dup = 0;
        if (sscanf(line, "%d libs found in cache", &total) == 1)
            continue;
        if (sscanf(line, " %127s (%127[^)]) => %4095s", name, flags, path) != 3 || strcmp(flags, "libc6,x86-64") != 0)
            continue;
        for (int i = 0; i < n_seen && !dup; i++)
            dup = strcmp(seen[i], name) == 0;
        if (dup)
            continue;   /* ldconfig lists every entry; the loader takes the first */
        if (n_seen < 512)
            snprintf(seen[n_seen++], sizeof seen[0], "%s", name);
        ck_assert_msg(bkm_aff_ldcache_lookup(c, name) != NULL, "%s missing", name);
        ck_assert_str_eq(bkm_aff_ldcache_lookup(c, name), path);
        checked++;
    }
    ck_assert_int_gt(checked, 10);
    ck_assert_int_eq(bkm_aff_ldcache_count(c), total);
    ck_assert_ptr_null(bkm_aff_ldcache_lookup(c, "libno-such-library.so.9"));
    bkm_free(text);
    bkm_aff_ldcache_close(c);
}
END_TEST

/* A new-format cache: entries (flags, key, value, hwcap) and their strings. */
typedef struct centry {
    uint32_t flags;
    const char *key, *value;
    uint64_t hwcap;
} centry_t;

static size_t cache_build(char *out, size_t cap, const centry_t *e, int n, uint32_t nlibs_claimed, int endian)
{
    size_t str = 48 + (size_t)n * 24, k = str;
    memset(out, 0, cap);
    memcpy(out, "glibc-ld.so.cache1.1", 20);
    memcpy(out + 20, &nlibs_claimed, 4);
    out[28] = (char)endian;
    for (int i = 0; i < n; i++) {
        uint32_t kk, vv;
        char *en = out + 48 + (size_t)i * 24;
        kk = (uint32_t)k;
        k += (size_t)snprintf(out + k, cap - k, "%s", e[i].key) + 1;
        vv = (uint32_t)k;
        k += (size_t)snprintf(out + k, cap - k, "%s", e[i].value) + 1;
        memcpy(en, &e[i].flags, 4);
        memcpy(en + 4, &kk, 4);
        memcpy(en + 8, &vv, 4);
        memcpy(en + 16, &e[i].hwcap, 8);
    }
    {
        uint32_t len_strings = (uint32_t)(k - str);
        memcpy(out + 24, &len_strings, 4);
    }
    return k;
}

static int cache_open_bytes(const char *name, const char *d, size_t n, bkm_aff_ldcache_t **c, bkm_err_t *err)
{
    spit(tmp(name), d, n);
    return bkm_aff_ldcache_open(tmp(name), c, err);
}

START_TEST(ldcache_synthetic)
{
    static const centry_t good[] = {
        {0x0303, "libfoo.so.1", "/opt/hw/libfoo.so.1", 1ull << 62},   /* a glibc-hwcaps entry: skipped */
        {0x0303, "libfoo.so.1", "/opt/a/libfoo.so.1", 0},
        {0x0003, "libbar.so", "/opt/i386/libbar.so", 0},                /* not x86-64 */
    };
    char d[4096], comb[4096];
    size_t n;
    bkm_aff_ldcache_t *c = NULL;
    bkm_err_t err = {0};
    uint32_t v;

    n = cache_build(d, sizeof d, good, 3, 3, 2);
    ck_assert_msg(cache_open_bytes("good", d, n, &c, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_aff_ldcache_count(c), 3);
    ck_assert_str_eq(bkm_aff_ldcache_lookup(c, "libfoo.so.1"), "/opt/a/libfoo.so.1");
    ck_assert_ptr_null(bkm_aff_ldcache_lookup(c, "libbar.so"));
    bkm_aff_ldcache_close(c);

    /* the old format's table before the new one: string offsets count from the new header */
    memset(comb, 0, sizeof comb);
    memcpy(comb, "ld.so-1.7.0", 11);
    v = 1;
    memcpy(comb + 12, &v, 4);
    n = cache_build(d, sizeof d, good, 3, 3, 2);
    memcpy(comb + 32, d, n);   /* 16 + 1 x 12 = 28, aligned to 32 */
    ck_assert_msg(cache_open_bytes("combined", comb, 32 + n, &c, &err) == BKM_OK, "%s", err.msg);
    ck_assert_str_eq(bkm_aff_ldcache_lookup(c, "libfoo.so.1"), "/opt/a/libfoo.so.1");
    bkm_aff_ldcache_close(c);
    c = NULL;

    n = cache_build(d, sizeof d, good, 3, 1000, 2);           /* more entries announced than present */
    ck_assert_int_eq(cache_open_bytes("trunc", d, n, &c, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "truncated"));
    ck_assert_ptr_nonnull(strstr(err.msg, tmp("trunc")));
    n = cache_build(d, sizeof d, good, 3, 3, 3);
    ck_assert_int_eq(cache_open_bytes("big", d, n, &c, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "big-endian"));
    n = cache_build(d, sizeof d, good, 3, 3, 2);
    v = 4000;
    memcpy(d + 48 + 24 + 8, &v, 4);                            /* entry 1's value outside the file */
    ck_assert_int_eq(cache_open_bytes("offset", d, n, &c, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "entry 1"));
    n = cache_build(d, sizeof d, good, 3, 3, 2);
    ck_assert_int_eq(cache_open_bytes("unterminated", d, n - 1, &c, &err), BKM_EINVAL);   /* last string cut */
    ck_assert_ptr_nonnull(strstr(err.msg, "entry 2"));
    ck_assert_int_eq(cache_open_bytes("old", comb, 32, &c, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "old"));
    ck_assert_int_eq(cache_open_bytes("garbage", "hello world, not a cache at all, no sir.........", 48, &c, &err),
                     BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a loader cache"));
    ck_assert_int_eq(cache_open_bytes("empty", "", 0, &c, &err), BKM_EINVAL);
    ck_assert_int_eq(bkm_aff_ldcache_open(tmp("absent"), &c, &err), BKM_EIO);
    ck_assert_ptr_null(c);
}
END_TEST

START_TEST(ldcache_absent_or_bad_falls_back)
{
    bkm_aff_runtime_cfg_t cfg;
    bkm_aff_runtime_result_t r;
    const bkm_aff_runtime_obj_t *o;
    cfg_default(&cfg);
    cfg.ld_so_cache = tmp("no-cache");
    r = detect(fix("prog/omp_gcc"), &cfg);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert_ptr_nonnull(o = obj_named(&r, "libgomp.so.1"));
    ck_assert_str_eq(o->via, "default directory");
    ck_assert_int_eq(r.n_warnings, 0);
    bkm_aff_runtime_result_free(&r);
    spit(tmp("bad-cache"), "glibc-ld.so.cache1.1 but nothing after it....", 46);
    cfg.ld_so_cache = tmp("bad-cache");
    r = detect(fix("prog/omp_gcc"), &cfg);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert(has_warning(&r, tmp("bad-cache")));
    bkm_aff_runtime_result_free(&r);
    cfg.ld_so_cache = NULL;
    r = detect(fix("prog/omp_gcc"), &cfg);
    ck_assert_str_eq(obj_named(&r, "libgomp.so.1")->via, "ld.so.cache");
    bkm_aff_runtime_result_free(&r);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* The closure                                                                               */

START_TEST(closure_of_real_programs)
{
    bkm_aff_runtime_result_t r;
    bkm_buf_t b;
    r = detect(fix("prog/omp_gcc"), NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert_int_eq(r.n_runtimes, 1);
    ck_assert_str_eq(r.obj[r.runtime[0]].how, "SONAME libgomp.so.1");
    bkm_buf_init(&b);
    bkm_aff_runtime_result_chain(&r, r.runtime[0], &b);
    ck_assert_str_eq(bkm_buf_str(&b), "omp_gcc -> libgomp.so.1");
    bkm_buf_free(&b);
    ck_assert_ptr_null(r.interpreter);
    ck_assert_int_eq(r.n_warnings, 0);
    bkm_aff_runtime_result_free(&r);

    r = detect(fix("prog/omp_clang"), NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    ck_assert_int_eq(r.n_runtimes, 1);
    bkm_aff_runtime_result_free(&r);

    r = detect(fix("prog/noomp"), NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_NONE);
    ck_assert_int_eq(r.n_runtimes, 0);
    ck_assert_int_gt(r.n_obj, 1);   /* libc at least */
    bkm_aff_runtime_result_free(&r);

    r = detect(fix("prog/two_linked"), NULL);   /* DT_NEEDED: libomp.so.5, then gcc's libgomp.so.1 */
    ck_assert_int_eq(r.n_runtimes, 2);
    ck_assert_int_eq(runtime_kind(&r, 0), BKM_AFF_RUNTIME_LIBOMP);
    ck_assert_int_eq(runtime_kind(&r, 1), BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    ck_assert(has_warning(&r, "2 OpenMP runtimes in one process"));
    bkm_aff_runtime_result_free(&r);

    r = detect(fix("prog/two_dlopen"), NULL);   /* the dlopened libomp is not in its dependencies */
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert_int_eq(r.n_runtimes, 1);
    bkm_aff_runtime_result_free(&r);

    r = detect(fix("prog/noomp_static"), NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_UNKNOWN);
    ck_assert_ptr_nonnull(strstr(r.reason, "statically linked"));
    bkm_aff_runtime_result_free(&r);
}
END_TEST

/* The real loader's answer: "name => path" for each library (the loader in tracing mode, as ldd
 * runs it, maps them without running the program), realpaths joined by ';' in load order,
 * "name=>not found" for a missing one. */
static void loader_view(const char *prog, const char *ld_library_path, bkm_buf_t *out)
{
    char cmd[3 * PATH_MAX], *text, *line, *save = NULL;
    snprintf(cmd, sizeof cmd, "env -i %s%s LD_TRACE_LOADED_OBJECTS=1 /lib64/ld-linux-x86-64.so.2 '%s' 2>&1",
             ld_library_path ? "LD_LIBRARY_PATH=" : "", ld_library_path ? ld_library_path : "", prog);
    text = capture(cmd);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[256], path[PATH_MAX], real[PATH_MAX];
        if (strstr(line, "linux-vdso") || strstr(line, "ld-linux-x86-64"))
            continue;
        if (sscanf(line, " %255s => not found", name) == 1 && strstr(line, "not found")) {
            bkm_buf_printf(out, "%s=>not found;", name);
            continue;
        }
        ck_assert_msg(sscanf(line, " %255s => %4095s", name, path) == 2, "the loader says: %s", line);
        bkm_buf_printf(out, "%s;", realpath(path, real) ? real : path);
    }
    bkm_free(text);
}

static void closure_view(const bkm_aff_runtime_result_t *r, bkm_buf_t *out)
{
    for (int i = 1; i < r->n_obj; i++)
        if (strstr(r->obj[i].name, "ld-linux-x86-64") == NULL)
            bkm_buf_printf(out, "%s;", r->obj[i].real);
    for (int i = 0; i < r->n_warnings; i++) {
        char name[256];
        if (sscanf(r->warning[i], "%255s (needed by", name) == 1 && strstr(r->warning[i], "not found"))
            bkm_buf_printf(out, "%s=>not found;", name);
    }
}

/* Our closure of @p prog (with LD_LIBRARY_PATH @p llp) is the real loader's, object for object in
 * the same order. */
static bkm_aff_runtime_result_t same_as_loader(const char *prog, const char *llp)
{
    bkm_aff_runtime_cfg_t cfg;
    bkm_aff_runtime_result_t r;
    bkm_buf_t want, got;
    cfg_default(&cfg);
    cfg.ld_library_path = llp;
    r = detect(prog, &cfg);
    bkm_buf_init(&want);
    bkm_buf_init(&got);
    loader_view(prog, llp, &want);
    closure_view(&r, &got);
    ck_assert_msg(strcmp(bkm_buf_str(&want), bkm_buf_str(&got)) == 0,
                  "%s (LD_LIBRARY_PATH=%s):\n ld.so: %s\n bkm:   %s", prog, llp ? llp : "", bkm_buf_str(&want),
                  bkm_buf_str(&got));
    bkm_buf_free(&want);
    bkm_buf_free(&got);
    return r;
}

static const char *real_of(const bkm_aff_runtime_result_t *r, const char *name)
{
    const bkm_aff_runtime_obj_t *o = obj_named(r, name);
    ck_assert_msg(o != NULL, "%s not in the closure", name);
    return o->real;
}

START_TEST(closure_matches_the_loader)
{
    const char *progs[] = {"prog/omp_gcc", "prog/omp_clang", "prog/noomp", "prog/two_linked", "prog/two_dlopen",
                           "prog/gomp_rt", "ld/exe_rpath", "ld/exe_runpath", "ld/exe_rpath_mid", "ld/exe_runpath_mid",
                           "ld/origin/bin/exe_origin", "ld/dst/bin/exe_lib", "ld/dst/bin/exe_platform", NULL};
    char dirB[PATH_MAX];
    snprintf(dirB, sizeof dirB, "%s", fix("ld/dirB"));
    for (int i = 0; progs[i]; i++) {
        bkm_aff_runtime_result_t r = same_as_loader(fix(progs[i]), NULL);
        bkm_aff_runtime_result_free(&r);
        r = same_as_loader(fix(progs[i]), dirB);
        bkm_aff_runtime_result_free(&r);
    }
}
END_TEST

START_TEST(rpath_runpath_precedence)
{
    char dirA[PATH_MAX], dirB[PATH_MAX];
    bkm_aff_runtime_result_t r;
    snprintf(dirA, sizeof dirA, "%s/libdep.so", fix("ld/dirA"));
    snprintf(dirB, sizeof dirB, "%s/libdep.so", fix("ld/dirB"));
    /* DT_RPATH comes before LD_LIBRARY_PATH */
    r = same_as_loader(fix("ld/exe_rpath"), fix("ld/dirB"));
    ck_assert_str_eq(real_of(&r, "libdep.so"), dirA);
    ck_assert_str_eq(obj_named(&r, "libdep.so")->via, "RPATH");
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    bkm_aff_runtime_result_free(&r);
    /* DT_RUNPATH after it */
    r = same_as_loader(fix("ld/exe_runpath"), fix("ld/dirB"));
    ck_assert_str_eq(real_of(&r, "libdep.so"), dirB);
    ck_assert_str_eq(obj_named(&r, "libdep.so")->via, "LD_LIBRARY_PATH");
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    bkm_aff_runtime_result_free(&r);
    r = same_as_loader(fix("ld/exe_runpath"), NULL);
    ck_assert_str_eq(obj_named(&r, "libdep.so")->via, "RUNPATH");
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    bkm_aff_runtime_result_free(&r);
    /* the program's DT_RPATH serves its dependencies' dependencies; its DT_RUNPATH does not */
    r = same_as_loader(fix("ld/exe_rpath_mid"), NULL);
    ck_assert_str_eq(real_of(&r, "libdep.so"), dirA);
    ck_assert_int_eq(obj_named(&r, "libdep.so")->depth, 2);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    bkm_aff_runtime_result_free(&r);
    r = same_as_loader(fix("ld/exe_runpath_mid"), NULL);
    ck_assert_ptr_null(obj_named(&r, "libdep.so"));
    ck_assert(has_warning(&r, "libdep.so (needed by"));
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_NONE);
    bkm_aff_runtime_result_free(&r);
}
END_TEST

START_TEST(origin_lib_platform)
{
    bkm_aff_runtime_result_t r;
    bkm_aff_runtime_cfg_t cfg;
    r = same_as_loader(fix("ld/origin/bin/exe_origin"), NULL);
    ck_assert_str_eq(obj_named(&r, "libdep.so")->via, "RUNPATH");
    ck_assert_ptr_nonnull(strstr(obj_named(&r, "libdep.so")->path, "/origin/bin/../lib/libdep.so"));
    bkm_aff_runtime_result_free(&r);
    r = same_as_loader(fix("ld/dst/bin/exe_lib"), NULL);
    ck_assert_ptr_nonnull(strstr(obj_named(&r, "libdep.so")->path, "/dst/bin/../lib/x86_64-linux-gnu/libdep.so"));
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    bkm_aff_runtime_result_free(&r);
    r = same_as_loader(fix("ld/dst/bin/exe_platform"), NULL);   /* the CPU's $PLATFORM, as glibc makes it */
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    bkm_aff_runtime_result_free(&r);
    /* the expansion decides: another $PLATFORM finds the fallback directory's copy */
    cfg_default(&cfg);
    cfg.dst_platform = "no-such-platform";
    r = detect(fix("ld/dst/bin/exe_platform"), &cfg);
    ck_assert_ptr_nonnull(strstr(obj_named(&r, "libdep.so")->path, "/dst/bin/../alt/libdep.so"));
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    bkm_aff_runtime_result_free(&r);
    cfg.dst_platform = NULL;
    cfg.dst_lib = "lib64";
    r = detect(fix("ld/dst/bin/exe_lib"), &cfg);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    bkm_aff_runtime_result_free(&r);
}
END_TEST

START_TEST(bkm_libgomp_link_is_libomp)
{
    bkm_aff_runtime_kind_t k;
    bkm_aff_runtime_result_t r;
    const bkm_aff_runtime_obj_t *o;
    const char *tune = getenv("BKM_TUNE");
    char how[96], real[PATH_MAX];
    bkm_err_t err = {0};
    /* bkm's private folder: libgomp.so.1 -> libomp.so.5 */
    ck_assert_int_eq(bkm_aff_runtime_classify_file(BKM_RT_DIR "/libgomp.so.1", &k, how, sizeof how, &err), BKM_OK);
    ck_assert_int_eq(k, BKM_AFF_RUNTIME_LIBOMP);
    ck_assert_str_eq(how, "SONAME libomp.so.5");
    /* copies, not links: the file decides, not its name */
    copy_file(BKM_LIBOMP_REAL, tmp("libgomp.so.1"), 0644);
    ck_assert_int_eq(bkm_aff_runtime_classify_file(tmp("libgomp.so.1"), &k, how, sizeof how, &err), BKM_OK);
    ck_assert_int_eq(k, BKM_AFF_RUNTIME_LIBOMP);
    copy_file(LIBGOMP_PATH, tmp("libomp.so.5"), 0644);
    ck_assert_int_eq(bkm_aff_runtime_classify_file(tmp("libomp.so.5"), &k, how, sizeof how, &err), BKM_OK);
    ck_assert_int_eq(k, BKM_AFF_RUNTIME_LIBGOMP);
    copy_file(BKM_LIBOMP_REAL, tmp("libfoo.so"), 0644);
    ck_assert_int_eq(bkm_aff_runtime_classify_file(tmp("libfoo.so"), &k, how, sizeof how, &err), BKM_OK);
    ck_assert_int_eq(k, BKM_AFF_RUNTIME_LIBOMP);
    ck_assert_int_eq(bkm_aff_runtime_classify_file("/lib/x86_64-linux-gnu/libc.so.6", &k, how, sizeof how, &err),
                     BKM_OK);
    ck_assert_int_eq(k, BKM_AFF_RUNTIME_NONE);
    /* a gcc program whose libgomp.so.1 resolves through bkm's folder runs on libomp */
    r = same_as_loader(fix("prog/gomp_rt"), NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    ck_assert_int_eq(r.n_runtimes, 1);
    ck_assert_ptr_nonnull(o = obj_named(&r, "libgomp.so.1"));
    ck_assert_str_eq(o->path, BKM_RT_DIR "/libgomp.so.1");
    ck_assert_str_eq(o->real, realpath(BKM_LIBOMP_REAL, real));
    bkm_aff_runtime_result_free(&r);
    /* and so does bkm itself, oneDNN's libgomp.so.1 included */
    ck_assert_ptr_nonnull(tune);
    r = same_as_loader(tune, NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    ck_assert_int_eq(r.n_runtimes, 1);
    for (int i = 0; i < r.n_obj; i++)
        ck_assert_msg(r.obj[i].kind != BKM_AFF_RUNTIME_LIBGOMP, "tune loads %s", r.obj[i].path);
    bkm_aff_runtime_result_free(&r);
}
END_TEST

START_TEST(preload)
{
    bkm_aff_runtime_cfg_t cfg;
    bkm_aff_runtime_result_t r;
    const bkm_aff_runtime_obj_t *o;
    cfg_default(&cfg);
    cfg.ld_preload = LIBGOMP_PATH;
    r = detect(fix("prog/noomp"), &cfg);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert_ptr_nonnull(o = obj_named(&r, LIBGOMP_PATH));
    ck_assert_str_eq(o->via, "LD_PRELOAD");
    ck_assert_int_eq(o->depth, 0);
    ck_assert_int_eq(o->parent, -1);
    bkm_aff_runtime_result_free(&r);
    /* bare names are searched; a preload comes before the program's own dependencies */
    cfg.ld_preload = "libomp.so.5 nosuch-preload.so";
    r = detect(fix("prog/omp_gcc"), &cfg);
    ck_assert_int_eq(r.n_runtimes, 2);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    ck_assert(has_warning(&r, "LD_PRELOAD entry 'nosuch-preload.so' not found"));
    bkm_aff_runtime_result_free(&r);
}
END_TEST

static void write_script(const char *path, const char *text)
{
    spit(path, text, strlen(text));
    chmod(path, 0755);
}

START_TEST(scripts_and_interpreters)
{
    bkm_aff_runtime_result_t r;
    bkm_aff_runtime_cfg_t cfg;
    bkm_err_t err = {0};
    char line[PATH_MAX + 16];
    r = detect(fix("prog/omp_script.sh"), NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_UNKNOWN);
    ck_assert_ptr_nonnull(r.interpreter);
    ck_assert_str_eq(r.interpreter, "/bin/sh");
    ck_assert_ptr_nonnull(strstr(r.reason, "cannot be told"));
    ck_assert_ptr_nonnull(strstr(r.reason, "the interpreter itself links none"));
    ck_assert_int_eq(r.n_runtimes, 0);
    ck_assert_int_gt(r.n_obj, 1);   /* the interpreter's own closure */
    bkm_aff_runtime_result_free(&r);
    /* #!/usr/bin/env python3: the python3 of PATH */
    r = detect(fix("prog/omp_ctypes.py"), NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_UNKNOWN);
    ck_assert_ptr_nonnull(r.interpreter);
    ck_assert_ptr_nonnull(strstr(r.reason, "an interpreter"));
    bkm_aff_runtime_result_free(&r);
    /* an ELF interpreter by name */
    r = detect("/usr/bin/python3", NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_UNKNOWN);
    ck_assert_str_eq(r.interpreter, "/usr/bin/python3");
    bkm_aff_runtime_result_free(&r);
    /* an interpreter that links a runtime itself says so */
    snprintf(line, sizeof line, "#!%s\n", fix("prog/omp_gcc"));
    write_script(tmp("on_gomp.sh"), line);
    r = detect(tmp("on_gomp.sh"), NULL);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_UNKNOWN);
    ck_assert_int_eq(r.n_runtimes, 1);
    ck_assert_ptr_nonnull(strstr(r.reason, "links libgomp.so.1 (GNU OpenMP)"));
    bkm_aff_runtime_result_free(&r);
    /* nested #!, followed; a loop is refused */
    snprintf(line, sizeof line, "#!%s\n", tmp("on_gomp.sh"));
    write_script(tmp("nested.sh"), line);
    r = detect(tmp("nested.sh"), NULL);
    ck_assert_int_eq(r.n_runtimes, 1);
    bkm_aff_runtime_result_free(&r);
    snprintf(line, sizeof line, "#!%s\n", tmp("loop.sh"));
    write_script(tmp("loop.sh"), line);
    cfg_default(&cfg);
    bkm_aff_runtime_result_init(&r);
    ck_assert_int_eq(bkm_aff_runtime_detect_static(tmp("loop.sh"), &cfg, &r, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "nested"));
    write_script(tmp("empty.sh"), "#!   \n");
    ck_assert_int_eq(bkm_aff_runtime_detect_static(tmp("empty.sh"), &cfg, &r, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "names no interpreter"));
    write_script(tmp("noenv.sh"), "#!/usr/bin/env -i\n");
    ck_assert_int_eq(bkm_aff_runtime_detect_static(tmp("noenv.sh"), &cfg, &r, &err), BKM_EINVAL);
    ck_assert(bkm_aff_runtime_is_interpreter("python3.11"));
    ck_assert(bkm_aff_runtime_is_interpreter("/usr/bin/perl5.36.0"));
    ck_assert(bkm_aff_runtime_is_interpreter("bash"));
    ck_assert(!bkm_aff_runtime_is_interpreter("./app"));
    ck_assert(!bkm_aff_runtime_is_interpreter("pythonista"));
}
END_TEST

START_TEST(which_and_limits)
{
    bkm_aff_runtime_cfg_t cfg;
    bkm_aff_runtime_result_t r;
    bkm_err_t err = {0};
    char *p = NULL, dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", fix("prog"));
    bkm_aff_runtime_cfg_init(&cfg);
    cfg.cwd = dir;
    cfg.path = "/nonexistent::/also-not";   /* the empty entry is the working directory */
    ck_assert_msg(bkm_aff_runtime_which("omp_gcc", &cfg, &p, &err) == BKM_OK, "%s", err.msg);
    ck_assert_str_eq(p, fix("prog/omp_gcc"));
    bkm_free(p);
    ck_assert_int_eq(bkm_aff_runtime_which("./omp_clang", &cfg, &p, &err), BKM_OK);
    ck_assert_ptr_nonnull(strstr(p, "/prog/./omp_clang"));
    bkm_free(p);
    cfg.path = "/nonexistent";
    ck_assert_int_eq(bkm_aff_runtime_which("omp_gcc", &cfg, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not found in PATH (/nonexistent)"));
    cfg.path = NULL;
    ck_assert_int_eq(bkm_aff_runtime_which("omp_gcc", &cfg, &p, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no PATH"));
    /* bounded */
    cfg_default(&cfg);
    cfg.max_objects = 2;
    bkm_aff_runtime_result_init(&r);
    ck_assert_int_eq(bkm_aff_runtime_detect_static(fix("prog/omp_gcc"), &cfg, &r, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than 2 objects"));
    cfg.max_objects = 0;
    cfg.max_depth = 1;
    r = detect(fix("ld/exe_rpath_mid"), &cfg);
    ck_assert(has_warning(&r, "deeper than 1"));
    ck_assert_ptr_null(obj_named(&r, "libdep.so"));
    bkm_aff_runtime_result_free(&r);
}
END_TEST

START_TEST(result_json)
{
    bkm_aff_runtime_result_t r = detect(fix("prog/omp_gcc"), NULL);
    bkm_buf_t b;
    bkm_json_w_t w;
    bkm_json_t *j = NULL;
    const bkm_json_t *rt, *chain;
    bkm_buf_init(&b);
    bkm_json_w_init(&w, &b, 0);
    ck_assert_int_eq(bkm_aff_runtime_result_to_json(&r, &w, NULL), BKM_OK);
    ck_assert_int_eq(bkm_json_parse(bkm_buf_str(&b), &j, NULL), BKM_OK);
    ck_assert_str_eq(bkm_json_get_str(j, "kind"), "libgomp");
    ck_assert_str_eq(bkm_json_get_str(j, "title"), "GNU OpenMP");
    rt = bkm_json_at(bkm_json_get(j, "runtimes"), 0);
    ck_assert_ptr_nonnull(rt);
    ck_assert_str_eq(bkm_json_get_str(rt, "soname"), "libgomp.so.1");
    chain = bkm_json_get(rt, "chain");
    ck_assert_uint_eq(chain->n_children, 2);
    ck_assert_str_eq(bkm_json_at(chain, 0)->str, "omp_gcc");
    ck_assert_str_eq(bkm_json_at(chain, 1)->str, "libgomp.so.1");
    bkm_json_free(j);
    bkm_buf_free(&b);
    bkm_aff_runtime_result_free(&r);
}
END_TEST

/* ---------------------------------------------------------------------------------------- */
/* From a running process                                                                    */

START_TEST(maps_parser)
{
    char real_gomp[PATH_MAX], line[3 * PATH_MAX], big[9000];
    bkm_aff_maps_file_t *f = NULL;
    bkm_aff_runtime_result_t r;
    bkm_aff_runtime_cfg_t cfg;
    bkm_err_t err = {0};
    struct stat st;
    FILE *m;
    int n = 0;
    ck_assert_ptr_nonnull(realpath(LIBGOMP_PATH, real_gomp));
    ck_assert_int_eq(stat(BKM_LIBOMP_REAL, &st), 0);
    ck_assert_int_eq(mkdir(tmp("4242"), 0755), 0);
    m = fopen(tmp("4242/maps"), "w");
    fprintf(m, "55d0c0000000-55d0c0001000 r--p 00000000 08:01 1234                       /usr/bin/foo\n");
    fprintf(m, "55d0c0001000-55d0c0002000 r-xp 00001000 08:01 1234                       /usr/bin/foo\n");
    fprintf(m, "7f0000000000-7f0000001000 r-xp 00000000 08:01 99 %s (deleted)\n", real_gomp);
    fprintf(m, "7f0000002000-7f0000003000 rw-p 00000000 00:00 0 \n");
    fprintf(m, "7f0000004000-7f0000005000 rw-p 00000000 00:00 0                          [heap]\n");
    fprintf(m, "7f0000006000-7f0000007000 r--p 00000000 08:01 77 /path with spaces/lib x.so\n");
    fprintf(m, "7f0000008000-7f0000009000 r-xp 00000000 fd:02 %llu %s\n", (unsigned long long)st.st_ino,
            BKM_LIBOMP_REAL);
    fclose(m);
    ck_assert_msg(bkm_aff_maps_read(tmpdir, 4242, &f, &n, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(f[0].path, "/usr/bin/foo");
    ck_assert_uint_eq(f[0].inode, 1234);
    ck_assert_str_eq(f[1].path, real_gomp);
    ck_assert(f[1].deleted);
    ck_assert_str_eq(f[2].path, "/path with spaces/lib x.so");
    ck_assert_uint_eq(f[3].dev_major, 0xfd);
    bkm_aff_maps_free(f, n);
    /* the runtimes: libgomp by its name (the file is gone), libomp by its SONAME: two */
    bkm_aff_runtime_cfg_init(&cfg);
    cfg.proc_root = tmpdir;
    bkm_aff_runtime_result_init(&r);
    ck_assert_int_eq(bkm_aff_runtime_detect_pid(4242, &cfg, &r, &err), BKM_OK);
    ck_assert(r.dynamic);
    ck_assert_int_eq(r.n_runtimes, 2);
    ck_assert_int_eq(runtime_kind(&r, 0), BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert_ptr_nonnull(strstr(r.obj[r.runtime[0]].how, "deleted"));
    ck_assert_int_eq(runtime_kind(&r, 1), BKM_AFF_RUNTIME_LIBOMP);
    ck_assert(has_warning(&r, "2 OpenMP runtimes"));
    bkm_aff_runtime_result_free(&r);
    /* malformed and over-long lines, a missing process */
    m = fopen(tmp("4242/maps"), "w");
    fprintf(m, "55d0c0000000-55d0c0001000 r--p 00000000 08:01 1234 /usr/bin/foo\ngarbage here\n");
    fclose(m);
    ck_assert_int_eq(bkm_aff_maps_read(tmpdir, 4242, &f, &n, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "line 2"));
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(line, sizeof line, "%s/4242/maps", tmpdir);
    m = fopen(line, "w");
    fprintf(m, "7f0000000000-7f0000001000 r-xp 00000000 08:01 99 /%s\n", big);
    fclose(m);
    ck_assert_int_eq(bkm_aff_maps_read(tmpdir, 4242, &f, &n, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "longer than"));
    ck_assert_int_eq(bkm_aff_maps_read(tmpdir, 4343, &f, &n, &err), BKM_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "4343/maps"));
    /* this process: libomp (bkm's test binaries run on it) */
    ck_assert_int_eq(bkm_aff_runtime_detect_pid(0, NULL, &r, &err), BKM_OK);
    ck_assert_int_ge(r.n_obj, 3);
    bkm_aff_runtime_result_free(&r);
}
END_TEST

/* Start @p argv with stdout on a pipe and wait for its "ready" line. */
static pid_t start_ready(char *const argv[])
{
    int pfd[2];
    pid_t pid;
    char buf[256];
    size_t got = 0;
    ck_assert_int_eq(pipe(pfd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        setpgid(0, 0);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    for (;;) {
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        ssize_t k;
        ck_assert_msg(poll(&p, 1, 30000) == 1, "%s printed no ready line within 30 s", argv[0]);
        k = read(pfd[0], buf + got, sizeof buf - 1 - got);
        ck_assert_msg(k > 0, "%s ended before it was ready", argv[0]);
        got += (size_t)k;
        buf[got] = '\0';
        if (strstr(buf, "ready\n"))
            break;
        ck_assert(got < sizeof buf - 1);
    }
    close(pfd[0]);
    return pid;
}

static void stop(pid_t pid)
{
    int st;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

static void dynamic_case(const char *prog, const char *interp, int n_runtimes, bkm_aff_runtime_kind_t k0,
                         bkm_aff_runtime_kind_t k1)
{
    char p[PATH_MAX], ip[PATH_MAX];
    char *argv[4];
    int a = 0;
    bkm_aff_runtime_result_t r;
    bkm_err_t err = {0};
    pid_t pid;
    snprintf(p, sizeof p, "%s", fix(prog));
    if (interp) {
        snprintf(ip, sizeof ip, "%s", interp);
        argv[a++] = ip;
    }
    argv[a++] = p;
    argv[a++] = (char *)"wait";
    argv[a] = NULL;
    pid = start_ready(argv);
    bkm_aff_runtime_result_init(&r);
    ck_assert_msg(bkm_aff_runtime_detect_pid((int)pid, NULL, &r, &err) == BKM_OK, "%s: %s", prog, err.msg);
    stop(pid);
    ck_assert_msg(r.n_runtimes == n_runtimes, "%s maps %d runtimes, want %d", prog, r.n_runtimes, n_runtimes);
    /* the maps list files by address, not in load order: compare as a set */
    if (n_runtimes == 1)
        ck_assert_msg(runtime_kind(&r, 0) == k0, "%s: runtime %s", prog,
                      bkm_aff_runtime_kind_name(runtime_kind(&r, 0)));
    if (n_runtimes == 2) {
        ck_assert_msg((runtime_kind(&r, 0) == k0 && runtime_kind(&r, 1) == k1) ||
                      (runtime_kind(&r, 0) == k1 && runtime_kind(&r, 1) == k0), "%s: runtimes %s, %s", prog,
                      bkm_aff_runtime_kind_name(runtime_kind(&r, 0)), bkm_aff_runtime_kind_name(runtime_kind(&r, 1)));
        ck_assert(has_warning(&r, "OpenMP runtimes in one process"));
    }
    ck_assert_ptr_nonnull(r.program);
    bkm_aff_runtime_result_free(&r);
}

START_TEST(dynamic_running_programs)
{
    dynamic_case("prog/omp_gcc", NULL, 1, BKM_AFF_RUNTIME_LIBGOMP, 0);
    dynamic_case("prog/omp_clang", NULL, 1, BKM_AFF_RUNTIME_LIBOMP, 0);
    dynamic_case("prog/noomp", NULL, 0, 0, 0);
    dynamic_case("prog/two_linked", NULL, 2, BKM_AFF_RUNTIME_LIBGOMP, BKM_AFF_RUNTIME_LIBOMP);
    dynamic_case("prog/two_dlopen", NULL, 2, BKM_AFF_RUNTIME_LIBGOMP, BKM_AFF_RUNTIME_LIBOMP);
    dynamic_case("prog/gomp_rt", NULL, 1, BKM_AFF_RUNTIME_LIBOMP, 0);   /* the link maps libomp */
    dynamic_case("prog/omp_script.sh", NULL, 1, BKM_AFF_RUNTIME_LIBGOMP, 0);
    dynamic_case("prog/omp_ctypes.py", "/usr/bin/python3", 1, BKM_AFF_RUNTIME_LIBGOMP, 0);
}
END_TEST

START_TEST(probe_starts_and_kills)
{
    bkm_aff_runtime_probe_cfg_t pc;
    bkm_aff_runtime_result_t r;
    bkm_err_t err = {0};
    char *argv[4], pidfile[PATH_MAX], *text;
    char *const envp[] = {(char *)"OMP_NUM_THREADS=2", NULL};
    long child;
    memset(&pc, 0, sizeof pc);
    pc.timeout_s = 0.5;
    pc.envp = envp;
    argv[0] = (char *)fix("prog/omp_gcc");
    argv[1] = (char *)"wait";
    argv[2] = NULL;
    bkm_aff_runtime_result_init(&r);
    ck_assert_msg(bkm_aff_runtime_probe_run(argv[0], argv, &pc, &r, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBGOMP);
    ck_assert_int_ge(r.samples, 2);
    ck_assert(!r.exited);
    ck_assert(r.ran_s >= 0.45 && r.ran_s < 5);
    bkm_aff_runtime_result_free(&r);
    /* a program that ends at once: it exited by itself, with its status */
    argv[0] = (char *)fix("prog/noomp");
    argv[1] = NULL;
    ck_assert_int_eq(bkm_aff_runtime_probe_run(argv[0], argv, &pc, &r, &err), BKM_OK);
    ck_assert(r.exited);
    ck_assert(WIFEXITED(r.exit_status) && WEXITSTATUS(r.exit_status) == 0);
    bkm_aff_runtime_result_free(&r);
    /* relative to its working directory */
    pc.cwd = FIX "/prog";
    argv[0] = (char *)"./omp_clang";
    argv[1] = (char *)"wait";
    argv[2] = NULL;
    ck_assert_msg(bkm_aff_runtime_probe_run(argv[0], argv, &pc, &r, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(r.kind, BKM_AFF_RUNTIME_LIBOMP);
    bkm_aff_runtime_result_free(&r);
    pc.cwd = NULL;
    /* the whole process group is killed: the program's child too */
    snprintf(pidfile, sizeof pidfile, "%s", tmp("child.pid"));
    argv[0] = (char *)fix("prog/omp_gcc");
    argv[1] = (char *)"fork";
    argv[2] = pidfile;
    argv[3] = NULL;
    ck_assert_int_eq(bkm_aff_runtime_probe_run(argv[0], argv, &pc, &r, &err), BKM_OK);
    bkm_aff_runtime_result_free(&r);
    text = slurp(pidfile, NULL);
    child = strtol(text, NULL, 10);
    bkm_free(text);
    ck_assert_int_gt(child, 1);
    for (int i = 0; i < 200; i++) {   /* gone, or a zombie waiting for its new parent */
        char stat_path[64];
        snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", child);
        if (access(stat_path, F_OK) != 0)
            break;
        usleep(10000);
        {
            char buf[512] = "";
            FILE *f = fopen(stat_path, "r");
            if (f) {
                if (fgets(buf, sizeof buf, f) == NULL)
                    buf[0] = '\0';
                fclose(f);
            }
            if (strstr(buf, ") Z ") || strstr(buf, ") X "))
                break;
            ck_assert_msg(i < 199, "the program's child %ld still runs after the probe: %s", child, buf);
        }
    }
    /* a short program behind a script (it execs a binary whose runtime is mapped for about 8 ms):
     * the first 200 ms are read every 2 ms, so the runtime is seen every time */
    pc.timeout_s = 5;
    argv[0] = (char *)fix("prog/omp_script.sh");
    argv[1] = (char *)"sleep";
    argv[2] = (char *)"8";
    argv[3] = NULL;
    for (int i = 0; i < 10; i++) {
        ck_assert_msg(bkm_aff_runtime_probe_run(argv[0], argv, &pc, &r, &err) == BKM_OK, "%s", err.msg);
        ck_assert_msg(r.exited && r.kind == BKM_AFF_RUNTIME_LIBGOMP, "probe %d of a short program: kind %d, %d maps "
                      "read, exited %d", i, (int)r.kind, r.samples, r.exited);
        bkm_aff_runtime_result_free(&r);
    }
    /* cannot start: named */
    argv[0] = (char *)tmp("no-such-program");
    argv[1] = NULL;
    ck_assert_int_eq(bkm_aff_runtime_probe_run(argv[0], argv, &pc, &r, &err), BKM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no-such-program"));
}
END_TEST

/* ---------------------------------------------------------------------------------------- */

static int torch_main(void)
{
    bkm_aff_runtime_result_t r;
    bkm_aff_runtime_cfg_t cfg;
    bkm_err_t err = {0};
    int gomp = -1;
    if (access(TORCH_CPU, F_OK) != 0) {
        printf("SKIP: Debian's python3-torch is not installed (%s absent): apt-get install python3-torch\n",
               TORCH_CPU);
        return 77;
    }
    bkm_aff_runtime_cfg_init(&cfg);
    bkm_aff_runtime_result_init(&r);
    if (bkm_aff_runtime_detect_static(TORCH_CPU, &cfg, &r, &err) < 0) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    for (int k = 0; k < r.n_runtimes; k++)
        if (r.obj[r.runtime[k]].kind == BKM_AFF_RUNTIME_LIBGOMP &&
            strcmp(r.obj[r.runtime[k]].name, "libgomp.so.1") == 0)
            gomp = r.runtime[k];
    if (gomp < 0 || r.kind != BKM_AFF_RUNTIME_LIBGOMP || r.obj[gomp].parent != 0) {
        printf("FAIL: the static closure of %s does not list libgomp.so.1 as its own dependency (%d runtimes, "
               "kind %s)\n", TORCH_CPU, r.n_runtimes, bkm_aff_runtime_kind_name(r.kind));
        return 1;
    }
    printf("ok: %s -> libgomp.so.1 (%s), %d objects, %d runtime(s)\n", TORCH_CPU, r.obj[gomp].real, r.n_obj,
           r.n_runtimes);
    bkm_aff_runtime_result_free(&r);
    return 0;
}

static Suite *runtime_suite(void)
{
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("variables");
    tcase_add_test(tc, kind_names);
    tcase_add_test(tc, var_table_ignored);
    tcase_add_test(tc, var_table_matches_the_runtimes);
    suite_add_tcase(s, tc);

    tc = tcase_create("elf");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, elf_read_matches_readelf);
    tcase_add_test(tc, elf_refuses_what_it_does_not_read);
    tcase_add_test(tc, fuzz_mutated_elf);
    tcase_add_test(tc, ldcache_matches_ldconfig);
    tcase_add_test(tc, ldcache_synthetic);
    tcase_add_test(tc, ldcache_absent_or_bad_falls_back);
    suite_add_tcase(s, tc);

    tc = tcase_create("closure");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, closure_of_real_programs);
    tcase_add_test(tc, closure_matches_the_loader);
    tcase_add_test(tc, rpath_runpath_precedence);
    tcase_add_test(tc, origin_lib_platform);
    tcase_add_test(tc, bkm_libgomp_link_is_libomp);
    tcase_add_test(tc, preload);
    tcase_add_test(tc, scripts_and_interpreters);
    tcase_add_test(tc, which_and_limits);
    tcase_add_test(tc, result_json);
    suite_add_tcase(s, tc);

    tc = tcase_create("dynamic");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, maps_parser);
    tcase_add_test(tc, dynamic_running_programs);
    tcase_add_test(tc, probe_starts_and_kills);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    SRunner *sr;
    int failed;
    if (argc > 1 && strcmp(argv[1], "--torch") == 0)
        return torch_main();
    sr = srunner_create(runtime_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
