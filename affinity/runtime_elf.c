/* SPDX-License-Identifier: MIT */
/* Static runtime detection: a bounded ELF reader (64-bit little-endian x86-64), the dynamic
 * loader's cache, and the dependency closure of a program resolved as glibc's ld.so resolves it
 * (elf/dl-load.c: _dl_map_object, open_path; elf/dl-deps.c: breadth-first DT_NEEDED; elf/dl-cache.c). */
#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime_int.h"

#define ELF_MAX_PHNUM 1024
#define ELF_MAX_DYN 65536
#define ELF_MAX_NEEDED 4096
#define ELF_MAX_STR 4096
#define ELF_MAX_HASH_STEPS (1u << 20)
#define ELF_MAX_BYTES ((size_t)1 << 40)   /* nothing is read whole: only offsets are checked */
#define SEARCH_MAX_DIRS 256
#define CLOSURE_MAX_NEEDED 65536          /* DT_NEEDED entries followed in one closure */
#define CLOSURE_MAX_LOOKUPS (1 << 18)     /* candidate files tried in one closure */
#define SCRIPT_MAX_NEST 4                 /* the kernel's limit on nested #! interpreters */

/* ---------------------------------------------------------------------------------------- */
/* ELF reader                                                                                */

typedef struct elf {
    const char *path;
    int fd;
    uint64_t size;
    dev_t dev;
    ino_t ino;
    int not_elf;              /* the file is not ELF at all (no magic) */
    int foreign;              /* ELF, but another class, byte order or machine: the loader skips it */
    Elf64_Ehdr eh;
    Elf64_Phdr *ph;
    int phnum;
    uint64_t strtab_off, strsz;
    uint64_t symtab_va, hash_va, gnu_hash_va;
    int have_strtab, have_symtab, have_hash, have_gnu_hash;
    uint64_t flags_1;
    bkm_aff_elf_info_t info;
} elf_t;

static int elf_rd(elf_t *e, uint64_t off, void *buf, size_t n, const char *what, bkm_err_t *err)
{
    size_t got = 0;
    if (off > e->size || n > e->size - off)
        return bkm_err_set(err, BKM_EINVAL, "'%s': %s (%zu bytes at offset %llu) lies outside the file (%llu bytes)",
                           e->path, what, n, (unsigned long long)off, (unsigned long long)e->size);
    while (got < n) {
        ssize_t k = pread(e->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return bkm_err_set(err, k < 0 ? BKM_EIO : BKM_EINVAL, "'%s': cannot read %s: %s", e->path, what,
                               k < 0 ? strerror(errno) : "the file shrank while it was read");
        got += (size_t)k;
    }
    return BKM_OK;
}

/* File offset of the @p len bytes at virtual address @p va, from the PT_LOAD that holds them. */
static int elf_va(const elf_t *e, uint64_t va, uint64_t len, uint64_t *off)
{
    for (int i = 0; i < e->phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type != PT_LOAD || va < p->p_vaddr)
            continue;
        if (va - p->p_vaddr <= p->p_filesz && len <= p->p_filesz - (va - p->p_vaddr)) {
            *off = p->p_offset + (va - p->p_vaddr);
            return 1;
        }
    }
    return 0;
}

/* The NUL-terminated string at offset @p o of the dynamic string table, copied. */
static int elf_str(elf_t *e, uint64_t o, const char *what, char **out, bkm_err_t *err)
{
    char buf[ELF_MAX_STR];
    size_t n;
    char *nul;
    int rc;
    *out = NULL;
    if (!e->have_strtab)
        return bkm_err_set(err, BKM_EINVAL, "'%s': %s refers to a string table the file does not have", e->path, what);
    if (o >= e->strsz)
        return bkm_err_set(err, BKM_EINVAL, "'%s': %s at string offset %llu is outside the string table (%llu bytes)",
                           e->path, what, (unsigned long long)o, (unsigned long long)e->strsz);
    n = e->strsz - o < sizeof buf ? (size_t)(e->strsz - o) : sizeof buf;
    if ((rc = elf_rd(e, e->strtab_off + o, buf, n, what, err)) < 0)
        return rc;
    if ((nul = memchr(buf, '\0', n)) == NULL)
        return bkm_err_set(err, BKM_EINVAL, "'%s': %s at string offset %llu does not end within %zu bytes", e->path,
                           what, (unsigned long long)o, n);
    if ((*out = bkm_strdup(buf)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory reading '%s'", e->path);
    return BKM_OK;
}

void bkm_aff_elf_info_free(bkm_aff_elf_info_t *info)
{
    if (info == NULL)
        return;
    bkm_free(info->interp);
    bkm_free(info->soname);
    bkm_free(info->rpath);
    bkm_free(info->runpath);
    for (int i = 0; i < info->n_needed; i++)
        bkm_free(info->needed[i]);
    bkm_free(info->needed);
    memset(info, 0, sizeof *info);
}

static void elf_close(elf_t *e)
{
    if (e->fd >= 0)
        close(e->fd);
    e->fd = -1;
    bkm_free(e->ph);
    e->ph = NULL;
    bkm_aff_elf_info_free(&e->info);
}

static int elf_headers(elf_t *e, bkm_err_t *err)
{
    const unsigned char *id = e->eh.e_ident;
    int rc;
    if (e->size >= EI_NIDENT &&
        (rc = elf_rd(e, 0, &e->eh, e->size < sizeof e->eh ? EI_NIDENT : sizeof e->eh, "the ELF header", err)) < 0)
        return rc;
    if (e->size < EI_NIDENT || memcmp(id, ELFMAG, SELFMAG) != 0) {
        e->not_elf = 1;
        return bkm_err_set(err, BKM_EINVAL, "'%s' is not an ELF file", e->path);
    }
    e->foreign = 1;
    if (id[EI_CLASS] != ELFCLASS64)
        return bkm_err_set(err, BKM_EINVAL, "'%s' is a %s ELF file: bkm reads 64-bit little-endian x86-64 ELF only",
                           e->path, id[EI_CLASS] == ELFCLASS32 ? "32-bit" : "malformed (unknown class)");
    if (id[EI_DATA] != ELFDATA2LSB)
        return bkm_err_set(err, BKM_EINVAL, "'%s' is a big-endian ELF file: bkm reads 64-bit little-endian x86-64 "
                           "ELF only", e->path);
    if (e->size < sizeof e->eh)
        return bkm_err_set(err, BKM_EINVAL, "'%s' is truncated: %llu bytes, shorter than an ELF header", e->path,
                           (unsigned long long)e->size);
    if (e->eh.e_machine != EM_X86_64)
        return bkm_err_set(err, BKM_EINVAL, "'%s' is an ELF file for machine %u, not x86-64 (62): bkm reads x86-64 "
                           "ELF only", e->path, (unsigned)e->eh.e_machine);
    e->foreign = 0;
    if (id[EI_VERSION] != EV_CURRENT)
        return bkm_err_set(err, BKM_EINVAL, "'%s': unknown ELF version %u", e->path, (unsigned)id[EI_VERSION]);
    if (e->eh.e_type != ET_EXEC && e->eh.e_type != ET_DYN)
        return bkm_err_set(err, BKM_EINVAL, "'%s' is neither an executable nor a shared object (ELF type %u)", e->path,
                           (unsigned)e->eh.e_type);
    if (e->eh.e_phnum == PN_XNUM || e->eh.e_phnum > ELF_MAX_PHNUM)
        return bkm_err_set(err, BKM_EINVAL, "'%s': %u program headers (bkm reads at most %d)", e->path,
                           (unsigned)e->eh.e_phnum, ELF_MAX_PHNUM);
    if (e->eh.e_phnum > 0 && e->eh.e_phentsize != sizeof(Elf64_Phdr))
        return bkm_err_set(err, BKM_EINVAL, "'%s': program header entries of %u bytes (an ELF64 one has %zu)", e->path,
                           (unsigned)e->eh.e_phentsize, sizeof(Elf64_Phdr));
    e->phnum = e->eh.e_phnum;
    if (e->phnum == 0)
        return BKM_OK;
    if ((e->ph = bkm_calloc((size_t)e->phnum, sizeof *e->ph)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory reading '%s'", e->path);
    return elf_rd(e, e->eh.e_phoff, e->ph, (size_t)e->phnum * sizeof *e->ph, "the program headers", err);
}

static int elf_dynamic(elf_t *e, const Elf64_Phdr *dp, bkm_err_t *err)
{
    Elf64_Dyn *dyn = NULL;
    size_t n = dp->p_filesz / sizeof *dyn, i;
    uint64_t soname = 0, rpath = 0, runpath = 0, strtab_va = 0;
    int has_soname = 0, has_rpath = 0, has_runpath = 0, rc = BKM_OK, n_needed = 0;
    uint64_t *needed = NULL;
    char what[64];
    if (n > ELF_MAX_DYN)
        return bkm_err_set(err, BKM_EINVAL, "'%s': the dynamic section has %zu entries (bkm reads at most %d)", e->path,
                           n, ELF_MAX_DYN);
    if (n == 0)
        return BKM_OK;
    if ((dyn = bkm_calloc(n, sizeof *dyn)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory reading '%s'", e->path);
    if ((rc = elf_rd(e, dp->p_offset, dyn, n * sizeof *dyn, "the dynamic section", err)) < 0)
        goto out;
    for (i = 0; i < n && dyn[i].d_tag != DT_NULL; i++)
        n_needed += dyn[i].d_tag == DT_NEEDED;
    if (n_needed > ELF_MAX_NEEDED) {
        rc = bkm_err_set(err, BKM_EINVAL, "'%s': %d DT_NEEDED entries (bkm reads at most %d)", e->path, n_needed,
                         ELF_MAX_NEEDED);
        goto out;
    }
    if (n_needed && ((needed = bkm_calloc((size_t)n_needed, sizeof *needed)) == NULL ||
                     (e->info.needed = bkm_calloc((size_t)n_needed, sizeof *e->info.needed)) == NULL)) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory reading '%s'", e->path);
        goto out;
    }
    n_needed = 0;
    for (i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
        uint64_t v = dyn[i].d_un.d_val;
        switch (dyn[i].d_tag) {
        case DT_NEEDED: needed[n_needed++] = v; break;
        case DT_SONAME: soname = v, has_soname = 1; break;
        case DT_RPATH: rpath = v, has_rpath = 1; break;
        case DT_RUNPATH: runpath = v, has_runpath = 1; break;
        case DT_STRTAB: strtab_va = v, e->have_strtab = 1; break;
        case DT_STRSZ: e->strsz = v; break;
        case DT_SYMTAB: e->symtab_va = v, e->have_symtab = 1; break;
        case DT_SYMENT:
            if (v != sizeof(Elf64_Sym)) {
                rc = bkm_err_set(err, BKM_EINVAL, "'%s': symbol entries of %llu bytes (an ELF64 one has %zu)", e->path,
                                 (unsigned long long)v, sizeof(Elf64_Sym));
                goto out;
            }
            break;
        case DT_HASH: e->hash_va = v, e->have_hash = 1; break;
        case DT_GNU_HASH: e->gnu_hash_va = v, e->have_gnu_hash = 1; break;
        case DT_FLAGS_1: e->flags_1 = v; break;
        default: break;
        }
    }
    if (e->have_strtab) {
        if (e->strsz == 0 || !elf_va(e, strtab_va, e->strsz, &e->strtab_off)) {
            rc = bkm_err_set(err, BKM_EINVAL, "'%s': the dynamic string table (address 0x%llx, %llu bytes) is not "
                             "inside a loaded segment of the file", e->path, (unsigned long long)strtab_va,
                             (unsigned long long)e->strsz);
            goto out;
        }
    }
    for (int k = 0; k < n_needed; k++) {
        snprintf(what, sizeof what, "DT_NEEDED entry %d", k + 1);
        if ((rc = elf_str(e, needed[k], what, &e->info.needed[k], err)) < 0)
            goto out;
        e->info.n_needed = k + 1;
    }
    if ((has_soname && (rc = elf_str(e, soname, "DT_SONAME", &e->info.soname, err)) < 0) ||
        (has_rpath && (rc = elf_str(e, rpath, "DT_RPATH", &e->info.rpath, err)) < 0) ||
        (has_runpath && (rc = elf_str(e, runpath, "DT_RUNPATH", &e->info.runpath, err)) < 0))
        goto out;
    e->info.nodeflib = (e->flags_1 & DF_1_NODEFLIB) != 0;
    e->info.has_dynamic = 1;
out:
    bkm_free(dyn);
    bkm_free(needed);
    return rc;
}

/* Open and read @p path; on success the descriptor stays open for symbol lookups (elf_close). */
static int elf_open(elf_t *e, const char *path, bkm_err_t *err)
{
    struct stat st;
    const Elf64_Phdr *dp = NULL;
    int rc;
    memset(e, 0, sizeof *e);
    e->fd = -1;
    e->path = path;
    if ((rc = bkm_file_open_regular(path, "ELF file", ELF_MAX_BYTES, &e->fd, err)) < 0)
        return rc;
    if (fstat(e->fd, &st) != 0)
        return bkm_err_set(err, BKM_EIO, "'%s': fstat: %s", path, strerror(errno));
    e->size = (uint64_t)st.st_size;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    if ((rc = elf_headers(e, err)) < 0)
        return rc;
    e->info.type = e->eh.e_type;
    for (int i = 0; i < e->phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type == PT_LOAD || p->p_type == PT_DYNAMIC || p->p_type == PT_INTERP) {
            if (p->p_offset > e->size || p->p_filesz > e->size - p->p_offset)
                return bkm_err_set(err, BKM_EINVAL, "'%s' is truncated or malformed: program header %d (type %u) "
                                   "spans bytes %llu..%llu of a %llu-byte file", path, i, (unsigned)p->p_type,
                                   (unsigned long long)p->p_offset, (unsigned long long)p->p_offset + p->p_filesz,
                                   (unsigned long long)e->size);
        }
        if (p->p_type == PT_DYNAMIC && dp == NULL)
            dp = p;
        if (p->p_type == PT_INTERP && e->info.interp == NULL) {
            char buf[PATH_MAX];
            size_t n = p->p_filesz < sizeof buf ? (size_t)p->p_filesz : sizeof buf;
            if ((rc = elf_rd(e, p->p_offset, buf, n, "the PT_INTERP segment", err)) < 0)
                return rc;
            if (n == 0 || memchr(buf, '\0', n) == NULL)
                return bkm_err_set(err, BKM_EINVAL, "'%s': the program interpreter (PT_INTERP) is not a terminated "
                                   "path", path);
            if ((e->info.interp = bkm_strdup(buf)) == NULL)
                return bkm_err_set(err, BKM_ENOMEM, "out of memory reading '%s'", path);
        }
    }
    return dp ? elf_dynamic(e, dp, err) : BKM_OK;
}

int bkm_aff_elf_read(const char *path, bkm_aff_elf_info_t *info, bkm_err_t *err)
{
    elf_t e;
    int rc;
    if (path == NULL || info == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_elf_read: NULL argument");
    memset(info, 0, sizeof *info);
    rc = elf_open(&e, path, err);
    if (rc == BKM_OK) {
        *info = e.info;
        memset(&e.info, 0, sizeof e.info);
    }
    elf_close(&e);
    return rc;
}

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

static uint32_t sysv_hash(const char *s)
{
    uint32_t h = 0, g;
    for (; *s; s++) {
        h = (h << 4) + (unsigned char)*s;
        if ((g = h & 0xf0000000u) != 0)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

/* Is symbol @p idx named @p name and defined here? */
static int sym_is(elf_t *e, uint64_t symtab_off, uint32_t idx, const char *name, int *found, bkm_err_t *err)
{
    Elf64_Sym sym;
    char *s = NULL;
    int rc;
    if ((rc = elf_rd(e, symtab_off + (uint64_t)idx * sizeof sym, &sym, sizeof sym, "a dynamic symbol", err)) < 0)
        return rc;
    if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0)
        return BKM_OK;
    if ((rc = elf_str(e, sym.st_name, "a symbol name", &s, err)) < 0)
        return rc;
    *found = strcmp(s, name) == 0;
    bkm_free(s);
    return BKM_OK;
}

/* *found = 1 when the file defines (not merely imports) the dynamic symbol @p name. */
static int elf_defines(elf_t *e, const char *name, int *found, bkm_err_t *err)
{
    uint64_t symtab_off, off;
    uint32_t hdr[4];
    int rc;
    *found = 0;
    if (!e->have_symtab || !e->have_strtab || !elf_va(e, e->symtab_va, sizeof(Elf64_Sym), &symtab_off))
        return BKM_OK;
    if (e->have_gnu_hash && elf_va(e, e->gnu_hash_va, sizeof hdr, &off)) {
        uint32_t h = gnu_hash(name), nbuckets, symoffset, bloom_size, idx, cv;
        uint64_t buckets_off, chain_off;
        if ((rc = elf_rd(e, off, hdr, sizeof hdr, "the GNU hash table", err)) < 0)
            return rc;
        nbuckets = hdr[0], symoffset = hdr[1], bloom_size = hdr[2];
        if (nbuckets == 0)
            return BKM_OK;
        buckets_off = off + 16 + (uint64_t)bloom_size * 8;
        chain_off = buckets_off + (uint64_t)nbuckets * 4;
        if ((rc = elf_rd(e, buckets_off + (uint64_t)(h % nbuckets) * 4, &idx, 4, "a GNU hash bucket", err)) < 0)
            return rc;
        if (idx == 0)
            return BKM_OK;
        if (idx < symoffset)
            return bkm_err_set(err, BKM_EINVAL, "'%s': a GNU hash bucket names symbol %u, below the table's first "
                               "hashed symbol %u", e->path, idx, symoffset);
        for (uint32_t step = 0; step < ELF_MAX_HASH_STEPS; step++, idx++) {
            if ((rc = elf_rd(e, chain_off + (uint64_t)(idx - symoffset) * 4, &cv, 4, "a GNU hash chain", err)) < 0)
                return rc;
            if ((cv | 1) == (h | 1) && ((rc = sym_is(e, symtab_off, idx, name, found, err)) < 0 || *found))
                return rc;
            if (cv & 1)
                return BKM_OK;
        }
        return bkm_err_set(err, BKM_EINVAL, "'%s': a GNU hash chain does not end within %u entries", e->path,
                           ELF_MAX_HASH_STEPS);
    }
    if (e->have_hash && elf_va(e, e->hash_va, 8, &off)) {
        uint32_t nb[2], idx;
        if ((rc = elf_rd(e, off, nb, sizeof nb, "the ELF hash table", err)) < 0)
            return rc;
        if (nb[0] == 0)
            return BKM_OK;
        if ((rc = elf_rd(e, off + 8 + (uint64_t)(sysv_hash(name) % nb[0]) * 4, &idx, 4, "an ELF hash bucket", err)) < 0)
            return rc;
        for (uint32_t step = 0; idx != STN_UNDEF; step++) {
            if (step > nb[1] || idx >= nb[1])
                return bkm_err_set(err, BKM_EINVAL, "'%s': an ELF hash chain loops or leaves its %u entries", e->path,
                                   nb[1]);
            if ((rc = sym_is(e, symtab_off, idx, name, found, err)) < 0 || *found)
                return rc;
            if ((rc = elf_rd(e, off + 8 + ((uint64_t)nb[0] + idx) * 4, &idx, 4, "an ELF hash chain", err)) < 0)
                return rc;
        }
    }
    return BKM_OK;
}

static int contains_omp(const char *s)
{
    return s && strstr(s, "omp") != NULL;
}

/* What runtime the open file @p e is; @p name is the name it was asked for (may be NULL). */
static int elf_classify(elf_t *e, const char *name, bkm_aff_runtime_kind_t *kind, char *how, size_t how_n,
                        bkm_err_t *err)
{
    const char *base = strrchr(e->path, '/');
    bkm_aff_runtime_kind_t k = bkm__rt_kind_from_name(e->info.soname);
    int kmpc = 0, gomp = 0, rc;
    base = base ? base + 1 : e->path;
    *kind = BKM_AFF_RUNTIME_NONE;
    if (how_n)
        how[0] = '\0';
    if (k == BKM_AFF_RUNTIME_NONE && !contains_omp(e->info.soname) && !contains_omp(base) && !contains_omp(name))
        return BKM_OK;
    if (!e->info.has_dynamic)
        return BKM_OK;
    if ((rc = elf_defines(e, "__kmpc_fork_call", &kmpc, err)) < 0)
        return rc;
    if (!kmpc && (rc = elf_defines(e, "GOMP_parallel", &gomp, err)) < 0)
        return rc;
    if (kmpc && k != BKM_AFF_RUNTIME_LIBOMP && k != BKM_AFF_RUNTIME_LIBIOMP5) {
        /* a KMP runtime whatever it is called (a libgomp.so.1 that is libomp) */
        int intel = (e->info.soname && strstr(e->info.soname, "iomp")) || strstr(base, "iomp");
        *kind = intel ? BKM_AFF_RUNTIME_LIBIOMP5 : BKM_AFF_RUNTIME_LIBOMP;
        if (how_n)
            snprintf(how, how_n, "defines __kmpc_fork_call%s%s%s", e->info.soname ? " (SONAME " : "",
                     e->info.soname ? e->info.soname : "", e->info.soname ? ")" : "");
        return BKM_OK;
    }
    if (k != BKM_AFF_RUNTIME_NONE) {
        *kind = k;
        if (how_n)
            snprintf(how, how_n, "SONAME %s", e->info.soname);
        return BKM_OK;
    }
    if (gomp) {
        *kind = BKM_AFF_RUNTIME_LIBGOMP;
        if (how_n)
            snprintf(how, how_n, "defines GOMP_parallel but not __kmpc_fork_call");
    }
    return BKM_OK;
}

int bkm__rt_classify_path(const char *path, bkm_aff_runtime_kind_t *kind, char *how, size_t how_size, char **soname,
                          bkm_err_t *err)
{
    elf_t e;
    int rc;
    if (path == NULL || kind == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_runtime_classify_file: NULL argument");
    *kind = BKM_AFF_RUNTIME_NONE;
    if (soname)
        *soname = NULL;
    if ((rc = elf_open(&e, path, err)) == BKM_OK)
        rc = elf_classify(&e, NULL, kind, how, how ? how_size : 0, err);
    if (rc == BKM_OK && soname && e.info.soname && (*soname = bkm_strdup(e.info.soname)) == NULL)
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
    elf_close(&e);
    return rc;
}

int bkm_aff_runtime_classify_file(const char *path, bkm_aff_runtime_kind_t *kind, char *how, size_t how_size,
                                  bkm_err_t *err)
{
    return bkm__rt_classify_path(path, kind, how, how_size, NULL, err);
}

/* ---------------------------------------------------------------------------------------- */
/* ld.so.cache                                                                               */

#define CACHE_MAGIC_OLD "ld.so-1.7.0"
#define CACHE_MAGIC_NEW "glibc-ld.so.cache1.1"
#define CACHE_NEW_HDR 48          /* magic[17] version[3] nlibs len_strings flags pad[3] ext unused[3] */
#define CACHE_NEW_ENTRY 24        /* flags key value osversion hwcap(8) */
#define CACHE_OLD_ENTRY 12        /* flags key value */
#define CACHE_FLAGS_X86_64 0x0303 /* FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 */
#define CACHE_HWCAP_EXTENSION (1ull << 62)

struct bkm_aff_ldcache {
    char *data;
    size_t len;
    size_t base;                  /* offset of the new-format header: string offsets count from it */
    uint32_t nlibs;
};

static uint32_t le32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static uint64_t le64(const char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Is the string at @p off (relative to the new header) inside the file and terminated? */
static int cache_str_ok(const bkm_aff_ldcache_t *c, uint32_t off)
{
    size_t at = c->base + off;
    return off < c->len - c->base && memchr(c->data + at, '\0', c->len - at) != NULL;
}

void bkm_aff_ldcache_close(bkm_aff_ldcache_t *c)
{
    if (c == NULL)
        return;
    bkm_free(c->data);
    bkm_free(c);
}

int bkm_aff_ldcache_open(const char *path, bkm_aff_ldcache_t **cache, bkm_err_t *err)
{
    bkm_aff_ldcache_t *c = NULL;
    int rc;
    if (path == NULL || cache == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_ldcache_open: NULL argument");
    *cache = NULL;
    if (access(path, F_OK) != 0)
        return bkm_err_set(err, BKM_EIO, "cannot open the loader cache '%s': %s", path, strerror(errno));
    if ((c = bkm_calloc(1, sizeof *c)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory reading '%s'", path);
    if ((rc = bkm_file_read_regular(path, "loader cache", BKM_AFF_LDCACHE_MAX_BYTES, &c->data, &c->len, err)) < 0)
        goto out;
    if (c->len >= sizeof CACHE_MAGIC_OLD - 1 && memcmp(c->data, CACHE_MAGIC_OLD, sizeof CACHE_MAGIC_OLD - 1) == 0) {
        uint64_t end;
        if (c->len < sizeof CACHE_MAGIC_OLD - 1 + 1 + 4) {
            rc = bkm_err_set(err, BKM_EINVAL, "loader cache '%s' is truncated in its old-format header", path);
            goto out;
        }
        /* struct cache_file: magic[11] (the 12th byte pads), nlibs; then the new format, 8-aligned */
        end = 16 + (uint64_t)le32(c->data + 12) * CACHE_OLD_ENTRY;
        c->base = (size_t)((end + 7) & ~(uint64_t)7);
        if (end > c->len || c->len - c->base < CACHE_NEW_HDR ||
            memcmp(c->data + c->base, CACHE_MAGIC_NEW, sizeof CACHE_MAGIC_NEW - 1) != 0) {
            rc = bkm_err_set(err, BKM_EINVAL, "loader cache '%s' has only the old \"ld.so-1.7.0\" format (bkm reads "
                             "\"glibc-ld.so.cache1.1\")", path);
            goto out;
        }
    } else if (c->len < CACHE_NEW_HDR || memcmp(c->data, CACHE_MAGIC_NEW, sizeof CACHE_MAGIC_NEW - 1) != 0) {
        rc = bkm_err_set(err, BKM_EINVAL, "'%s' is not a loader cache (no \"glibc-ld.so.cache1.1\" header)", path);
        goto out;
    }
    {
        const char *h = c->data + c->base;
        unsigned endian = (unsigned char)h[28] & 3u;   /* 0 unset, 1 invalid, 2 little, 3 big */
        c->nlibs = le32(h + 20);
        if (endian == 1 || endian == 3) {
            rc = bkm_err_set(err, BKM_EINVAL, "loader cache '%s' is %s (flags %u)", path,
                             endian == 3 ? "big-endian" : "marked of invalid byte order", (unsigned char)h[28]);
            goto out;
        }
        if ((uint64_t)c->nlibs * CACHE_NEW_ENTRY > c->len - c->base - CACHE_NEW_HDR) {
            rc = bkm_err_set(err, BKM_EINVAL, "loader cache '%s' is truncated: %u entries announced, room for %zu",
                             path, c->nlibs, (c->len - c->base - CACHE_NEW_HDR) / CACHE_NEW_ENTRY);
            goto out;
        }
        for (uint32_t i = 0; i < c->nlibs; i++) {
            const char *en = h + CACHE_NEW_HDR + (size_t)i * CACHE_NEW_ENTRY;
            if (!cache_str_ok(c, le32(en + 4)) || !cache_str_ok(c, le32(en + 8))) {
                rc = bkm_err_set(err, BKM_EINVAL, "loader cache '%s': entry %u names a string outside the file or "
                                 "not terminated (offsets %u, %u)", path, i, le32(en + 4), le32(en + 8));
                goto out;
            }
        }
    }
    *cache = c;
    c = NULL;
    rc = BKM_OK;
out:
    bkm_aff_ldcache_close(c);
    return rc;
}

const char *bkm_aff_ldcache_lookup(const bkm_aff_ldcache_t *c, const char *soname)
{
    if (c == NULL || soname == NULL)
        return NULL;
    for (uint32_t i = 0; i < c->nlibs; i++) {
        const char *en = c->data + c->base + CACHE_NEW_HDR + (size_t)i * CACHE_NEW_ENTRY;
        if (le32(en) != CACHE_FLAGS_X86_64 || (le64(en + 16) & CACHE_HWCAP_EXTENSION))
            continue;
        if (strcmp(c->data + c->base + le32(en + 4), soname) == 0)
            return c->data + c->base + le32(en + 8);
    }
    return NULL;
}

int bkm_aff_ldcache_count(const bkm_aff_ldcache_t *c)
{
    return c ? (int)c->nlibs : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* PATH lookup                                                                               */

static int join(char *out, size_t n, const char *dir, const char *name)
{
    int k;
    if (dir == NULL || dir[0] == '\0')
        k = snprintf(out, n, "%s", name);
    else
        k = snprintf(out, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    return k >= 0 && (size_t)k < n;
}

/* @p name made absolute against cfg->cwd (or our directory). */
static int absolute(const bkm_aff_runtime_cfg_t *cfg, const char *name, char *out, size_t n)
{
    char here[PATH_MAX];
    if (name[0] == '/')
        return snprintf(out, n, "%s", name) < (int)n;
    if (cfg && cfg->cwd && cfg->cwd[0])
        return join(out, n, cfg->cwd, name);
    if (getcwd(here, sizeof here) == NULL)
        return 0;
    return join(out, n, here, name);
}

static int is_exec_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int bkm_aff_runtime_which(const char *program, const bkm_aff_runtime_cfg_t *cfg, char **resolved, bkm_err_t *err)
{
    char buf[PATH_MAX];
    const char *p;
    if (program == NULL || resolved == NULL || program[0] == '\0')
        return bkm_err_set(err, BKM_EINVAL, "no program given");
    *resolved = NULL;
    if (strchr(program, '/')) {
        if (!absolute(cfg, program, buf, sizeof buf))
            return bkm_err_set(err, BKM_EINVAL, "program path '%s' is too long", program);
        if (!is_exec_file(buf))
            return bkm_err_set(err, BKM_EINVAL, "program '%s' (%s) is not an executable file: %s", program, buf,
                               access(buf, F_OK) != 0 ? strerror(errno) : "not a regular file with execute permission");
    } else {
        int found = 0;
        p = cfg ? cfg->path : NULL;
        if (p == NULL)
            return bkm_err_set(err, BKM_EINVAL, "program '%s' has no '/' and no PATH is given to look it up", program);
        while (!found) {
            const char *colon = strchr(p, ':');
            size_t n = colon ? (size_t)(colon - p) : strlen(p);
            char dir[PATH_MAX], cand[PATH_MAX];
            if (n < sizeof dir) {
                memcpy(dir, p, n);
                dir[n] = '\0';
                if (join(cand, sizeof cand, dir, program) && absolute(cfg, cand, buf, sizeof buf) && is_exec_file(buf))
                    found = 1;
            }
            if (!colon)
                break;
            p = colon + 1;
        }
        if (!found)
            return bkm_err_set(err, BKM_EINVAL, "program '%s' not found in PATH (%s)", program, cfg->path);
    }
    if ((*resolved = bkm_strdup(buf)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    return BKM_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* The closure                                                                               */

/* What the loader keeps per object besides the public fields. */
typedef struct objx {
    dev_t dev;
    ino_t ino;
    char *origin;             /* $ORIGIN: the directory it was opened from */
    bkm_aff_elf_info_t info;  /* rpath is cleared when a runpath exists (the loader ignores it) */
    char **alias;             /* other names it was asked for */
    int n_alias;
} objx_t;

typedef struct closure {
    const bkm_aff_runtime_cfg_t *cfg;
    bkm_aff_runtime_result_t *r;
    objx_t *x;
    int cap;
    bkm_aff_ldcache_t *cache;
    int cache_tried;
    int max_objects, max_depth;
    long needed_seen, lookups;   /* work done, against CLOSURE_MAX_NEEDED and CLOSURE_MAX_LOOKUPS */
} closure_t;

static const char *const default_dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib",
                                           "/usr/lib", NULL};

static void closure_free(closure_t *c)
{
    for (int i = 0; i < c->r->n_obj && i < c->cap; i++) {
        bkm_free(c->x[i].origin);
        bkm_aff_elf_info_free(&c->x[i].info);
        for (int k = 0; k < c->x[i].n_alias; k++)
            bkm_free(c->x[i].alias[k]);
        bkm_free(c->x[i].alias);
    }
    bkm_free(c->x);
    bkm_aff_ldcache_close(c->cache);
}

/* What glibc 2.26+ expands $PLATFORM to on this CPU (sysdeps/x86/cpu-features.c): on Intel,
 * "xeon_phi" with AVX512ER+PF, else "haswell" with AVX2, FMA, BMI1, BMI2, LZCNT, MOVBE and
 * POPCNT usable; otherwise the kernel's AT_PLATFORM, "x86_64". */
static const char *host_platform(void)
{
    unsigned a, b, c, d, max, c1, b7 = 0, lzcnt = 0, xcr0 = 0;
    char vendor[13];
    int avx, avx512;
    if (!__get_cpuid(0, &max, &b, &c, &d))
        return "x86_64";
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = '\0';
    if (strcmp(vendor, "GenuineIntel") != 0)
        return "x86_64";
    __cpuid(1, a, b, c1, d);
    if (c1 & bit_OSXSAVE) {
        unsigned hi;
        __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
        (void)hi;
    }
    avx = (c1 & bit_AVX) && (xcr0 & 6u) == 6u;
    avx512 = avx && (xcr0 & 0xe0u) == 0xe0u;
    if (max >= 7)
        __cpuid_count(7, 0, a, b7, c, d);
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d))
        lzcnt = c & bit_ABM;
    if (avx512 && (b7 & bit_AVX512CD) && (b7 & bit_AVX512ER) && (b7 & bit_AVX512PF))
        return "xeon_phi";
    if (avx && (b7 & bit_AVX2) && (c1 & bit_FMA) && (b7 & bit_BMI) && (b7 & bit_BMI2) && lzcnt &&
        (c1 & bit_MOVBE) && (c1 & bit_POPCNT))
        return "haswell";
    return "x86_64";
}

static int isalnum_ascii(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* Expand $ORIGIN, $LIB, $PLATFORM (also in braces) in @p in for an object whose origin is @p origin. */
static int expand_dst(const closure_t *c, const char *in, const char *origin, char *out, size_t n)
{
    static const char *const names[] = {"ORIGIN", "LIB", "PLATFORM"};
    const char *vals[3];
    size_t k = 0;
    vals[0] = origin ? origin : "";
    vals[1] = c->cfg->dst_lib ? c->cfg->dst_lib : "lib/x86_64-linux-gnu";
    vals[2] = c->cfg->dst_platform ? c->cfg->dst_platform : host_platform();
    while (*in) {
        int done = 0;
        if (*in == '$') {
            for (int i = 0; i < 3 && !done; i++) {
                size_t l = strlen(names[i]);
                const char *v = vals[i];
                if (strncmp(in + 1, names[i], l) == 0 && !(isalnum_ascii(in[1 + l]) || in[1 + l] == '_')) {
                    in += 1 + l;
                    done = 1;
                } else if (in[1] == '{' && strncmp(in + 2, names[i], l) == 0 && in[2 + l] == '}') {
                    in += 3 + l;
                    done = 1;
                }
                if (done) {
                    size_t vl = strlen(v);
                    if (k + vl >= n)
                        return 0;
                    memcpy(out + k, v, vl);
                    k += vl;
                }
            }
        }
        if (!done) {
            if (k + 1 >= n)
                return 0;
            out[k++] = *in++;
        }
    }
    out[k] = '\0';
    return 1;
}

static int chain_parent(const closure_t *c, int i)
{
    const bkm_aff_runtime_obj_t *o = &c->r->obj[i];
    if (o->parent >= 0)
        return o->parent;
    return i == 0 ? -1 : 0;   /* a preload is loaded on behalf of the program */
}

static int name_is(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* The object already loaded under @p name (the name it was asked for, its path, SONAME or an
 * alias), or -1: the loader maps a name once. */
static int loaded_by_name(const closure_t *c, const char *name)
{
    for (int i = 0; i < c->r->n_obj; i++) {
        const bkm_aff_runtime_obj_t *o = &c->r->obj[i];
        if ((o->depth > 0 || i > 0) && (name_is(o->name, name) || name_is(o->path, name)))
            return i;
        if (name_is(o->soname, name))
            return i;
        for (int k = 0; k < c->x[i].n_alias; k++)
            if (name_is(c->x[i].alias[k], name))
                return i;
    }
    return -1;
}

static int add_alias(closure_t *c, int i, const char *name)
{
    objx_t *x = &c->x[i];
    void *p;
    if (x->n_alias >= 64)
        return BKM_OK;
    if ((p = bkm_realloc(x->alias, ((size_t)x->n_alias + 1) * sizeof *x->alias)) == NULL)
        return BKM_ENOMEM;
    x->alias = p;
    if ((x->alias[x->n_alias] = bkm_strdup(name)) == NULL)
        return BKM_ENOMEM;
    x->n_alias++;
    return BKM_OK;
}

/* Open candidate @p path: *ok = 1 (and @p e open) when it is a loadable object; a file the loader
 * would skip (another class or machine, malformed) is a warning and *ok = 0. */
static int try_candidate(closure_t *c, const char *path, elf_t *e, int *ok, bkm_err_t *err)
{
    bkm_err_t why = {0};
    int rc;
    *ok = 0;
    if (++c->lookups > CLOSURE_MAX_LOOKUPS)
        return bkm_err_set(err, BKM_EINVAL, "the dependency closure of '%s' needs more than %d file lookups",
                           c->r->program, CLOSURE_MAX_LOOKUPS);
    if (access(path, F_OK) != 0)
        return BKM_OK;
    rc = elf_open(e, path, &why);
    if (rc == BKM_OK) {
        *ok = 1;
        return BKM_OK;
    }
    elf_close(e);
    if (rc == BKM_ENOMEM)
        return bkm_err_set(err, rc, "%s", why.msg);
    if (bkm__rt_result_warn(c->r, "skipped %s", why.msg) < 0)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    return BKM_OK;
}

/* Look for @p name in each directory of @p list (entries split at any of @p seps; an empty one is
 * the working directory; DSTs expanded against @p origin). */
static int search_list(closure_t *c, const char *list, const char *seps, const char *origin, const char *name,
                       elf_t *e, char *found, size_t found_n, int *ok, bkm_err_t *err)
{
    const char *p = list;
    int rc;
    for (int dirs = 0; !*ok && dirs < SEARCH_MAX_DIRS; dirs++) {
        size_t n = strcspn(p, seps);
        char dir[PATH_MAX], exp[PATH_MAX], cand[PATH_MAX], abs[PATH_MAX];
        if (n < sizeof dir) {
            memcpy(dir, p, n);
            dir[n] = '\0';
            if (expand_dst(c, dir, origin, exp, sizeof exp) && join(cand, sizeof cand, exp, name) &&
                absolute(c->cfg, cand, abs, sizeof abs)) {
                if ((rc = try_candidate(c, abs, e, ok, err)) < 0)
                    return rc;
                if (*ok)
                    snprintf(found, found_n, "%s", abs);
            }
        }
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    return BKM_OK;
}

/* Where the loader finds @p name needed by object @p loader (glibc's _dl_map_object order). */
static int resolve(closure_t *c, int loader, const char *name, elf_t *e, char *found, size_t found_n,
                   const char **via, int *ok, bkm_err_t *err)
{
    const objx_t *lx = &c->x[loader];
    int rc = BKM_OK;
    *ok = 0;
    if (strchr(name, '/')) {
        char exp[PATH_MAX], abs[PATH_MAX];
        *via = "path";
        if (expand_dst(c, name, lx->origin, exp, sizeof exp) && absolute(c->cfg, exp, abs, sizeof abs) &&
            (rc = try_candidate(c, abs, e, ok, err)) == BKM_OK && *ok)
            snprintf(found, found_n, "%s", abs);
        return rc;
    }
    /* DT_RPATH of the loader, of its loader, ... up to the program: only when the needing object
     * has no DT_RUNPATH (an object's DT_RPATH is dropped when it has a DT_RUNPATH). */
    if (lx->info.runpath == NULL) {
        *via = "RPATH";
        for (int l = loader, steps = 0; l >= 0 && !*ok && steps <= c->max_depth + 1; l = chain_parent(c, l), steps++)
            if (c->x[l].info.rpath &&
                (rc = search_list(c, c->x[l].info.rpath, ":", c->x[l].origin, name, e, found, found_n, ok, err)) < 0)
                return rc;
    }
    if (!*ok && c->cfg->ld_library_path && c->cfg->ld_library_path[0]) {
        *via = "LD_LIBRARY_PATH";
        if ((rc = search_list(c, c->cfg->ld_library_path, ":;", c->x[0].origin, name, e, found, found_n, ok, err)) < 0)
            return rc;
    }
    if (!*ok && lx->info.runpath) {
        *via = "RUNPATH";
        if ((rc = search_list(c, lx->info.runpath, ":", lx->origin, name, e, found, found_n, ok, err)) < 0)
            return rc;
    }
    if (*ok || lx->info.nodeflib)
        return BKM_OK;
    if (!c->cache_tried) {
        const char *cp = c->cfg->ld_so_cache ? c->cfg->ld_so_cache : "/etc/ld.so.cache";
        bkm_err_t why = {0};
        c->cache_tried = 1;
        if (cp[0]) {
            rc = bkm_aff_ldcache_open(cp, &c->cache, &why);
            if (rc == BKM_ENOMEM)
                return bkm_err_set(err, rc, "%s", why.msg);
            if (rc == BKM_EINVAL && bkm__rt_result_warn(c->r, "%s: the default directories are searched instead",
                                                        why.msg) < 0)
                return bkm_err_set(err, BKM_ENOMEM, "out of memory");
        }
    }
    if (c->cache) {
        const char *p = bkm_aff_ldcache_lookup(c->cache, name);
        *via = "ld.so.cache";
        if (p && (rc = try_candidate(c, p, e, ok, err)) == BKM_OK && *ok)
            snprintf(found, found_n, "%s", p);
        if (rc < 0 || *ok)
            return rc;
    }
    *via = "default directory";
    for (const char *const *d = c->cfg->default_dirs ? c->cfg->default_dirs : default_dirs; *d && !*ok; d++) {
        char cand[PATH_MAX];
        if (join(cand, sizeof cand, *d, name) && (rc = try_candidate(c, cand, e, ok, err)) == BKM_OK && *ok)
            snprintf(found, found_n, "%s", cand);
        if (rc < 0)
            return rc;
    }
    return BKM_OK;
}

static char *dir_of(const char *path)
{
    const char *s = strrchr(path, '/');
    char *d;
    size_t n = s == NULL ? 1 : s == path ? 1 : (size_t)(s - path);
    if ((d = bkm_malloc(n + 1)) == NULL)
        return NULL;
    if (s == NULL)
        memcpy(d, ".", 1);
    else
        memcpy(d, s == path ? "/" : path, n);
    d[n] = '\0';
    return d;
}

/* Add the open object @p e (found at @p path, asked for as @p name). Closes @p e. Returns its
 * index (an existing one when the same file is already loaded) or a negative status. */
static int add_object(closure_t *c, elf_t *e, const char *name, const char *path, int parent, int depth,
                      const char *via, bkm_err_t *err)
{
    bkm_aff_runtime_kind_t kind = BKM_AFF_RUNTIME_NONE;
    char how[96] = "", real[PATH_MAX];
    const char *rp;
    int i, rc;
    for (i = 0; i < c->r->n_obj; i++)
        if (c->x[i].dev == e->dev && c->x[i].ino == e->ino) {
            elf_close(e);
            return add_alias(c, i, name) < 0 ? bkm_err_set(err, BKM_ENOMEM, "out of memory") : i;
        }
    if (c->r->n_obj >= c->max_objects) {
        elf_close(e);
        return bkm_err_set(err, BKM_EINVAL, "the dependency closure of '%s' has more than %d objects (at %s)",
                           c->r->program, c->max_objects, path);
    }
    if (c->r->n_obj >= c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        void *p = bkm_realloc(c->x, (size_t)cap * sizeof *c->x);
        if (p == NULL) {
            elf_close(e);
            return bkm_err_set(err, BKM_ENOMEM, "out of memory");
        }
        c->x = p;
        memset(c->x + c->cap, 0, (size_t)(cap - c->cap) * sizeof *c->x);
        c->cap = cap;
    }
    if ((rc = elf_classify(e, name, &kind, how, sizeof how, err)) < 0) {
        elf_close(e);
        return rc;
    }
    rp = realpath(path, real) ? real : path;
    i = bkm__rt_result_add(c->r, name, path, rp, e->info.soname, parent, depth, via, kind, how);
    if (i < 0) {
        elf_close(e);
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    }
    c->x[i].dev = e->dev;
    c->x[i].ino = e->ino;
    c->x[i].info = e->info;
    memset(&e->info, 0, sizeof e->info);
    elf_close(e);
    if (c->x[i].info.runpath) {   /* the loader ignores DT_RPATH beside DT_RUNPATH */
        bkm_free(c->x[i].info.rpath);
        c->x[i].info.rpath = NULL;
    }
    /* $ORIGIN: the program's real directory (the loader reads /proc/self/exe); a library's, the
     * directory it was opened from */
    if ((c->x[i].origin = dir_of(i == 0 ? rp : path)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "out of memory");
    return i;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* python3.11, perl5.36, lua5.4, ... name an interpreter that loads code (and libraries) at run
 * time: strip a trailing version, compare with the list. */
static int is_interpreter_name(const char *path)
{
    static const char *const names[] = {"python", "pypy", "perl", "ruby", "node", "nodejs", "Rscript", "R",
                                        "julia", "lua", "luajit", "tclsh", "wish", "bash", "sh", "dash", "zsh",
                                        "ksh", "mksh", "csh", "tcsh", "fish", "java", "octave", "php", NULL};
    char b[64];
    const char *base = base_name(path);
    size_t n = strlen(base);
    if (n == 0 || n >= sizeof b)
        return 0;
    memcpy(b, base, n + 1);
    while (n > 0 && ((b[n - 1] >= '0' && b[n - 1] <= '9') || b[n - 1] == '.' || b[n - 1] == 'm' || b[n - 1] == 'd'))
        b[--n] = '\0';   /* python3.11, python3.11d, python3.7m */
    for (int i = 0; names[i]; i++)
        if (strcmp(b, names[i]) == 0 || strcmp(base, names[i]) == 0)
            return 1;
    return 0;
}

int bkm_aff_runtime_is_interpreter(const char *name)
{
    return name != NULL && is_interpreter_name(name);
}

/* The #! line of @p path, if it has one: *interp and *arg (may be ""); 0 when it is no script. */
static int read_shebang(const char *path, char *interp, size_t in, char *arg, size_t an, bkm_err_t *err)
{
    char buf[257];
    int fd = -1, rc;
    ssize_t k;
    char *s, *e;
    if ((rc = bkm_file_open_regular(path, "program", ELF_MAX_BYTES, &fd, err)) < 0)
        return rc;
    k = pread(fd, buf, 256, 0);   /* what the kernel reads (BINPRM_BUF_SIZE) */
    close(fd);
    if (k < 2 || buf[0] != '#' || buf[1] != '!')
        return 0;
    buf[k] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    for (s = buf + 2; *s == ' ' || *s == '\t'; s++)
        ;
    for (e = s; *e && *e != ' ' && *e != '\t'; e++)
        ;
    if (e == s)
        return bkm_err_set(err, BKM_EINVAL, "'%s' starts with #! but names no interpreter", path);
    snprintf(interp, in, "%.*s", (int)(e - s), s);
    for (; *e == ' ' || *e == '\t'; e++)
        ;
    for (s = e + strlen(e); s > e && (s[-1] == ' ' || s[-1] == '\t' || s[-1] == '\r'); s--)
        ;
    snprintf(arg, an, "%.*s", (int)(s - e), e);
    return 1;
}

/* `#!/usr/bin/env [-S] [-i] [-u NAME] [NAME=VALUE]... CMD`: the command env runs. */
static int env_command(const char *arg, char *cmd, size_t n)
{
    const char *p = arg;
    int skip_next = 0;
    while (*p) {
        size_t l;
        while (*p == ' ' || *p == '\t')
            p++;
        l = strcspn(p, " \t");
        if (l == 0)
            break;
        if (skip_next)
            skip_next = 0;
        else if ((l == 2 && (strncmp(p, "-u", 2) == 0 || strncmp(p, "-C", 2) == 0)))
            skip_next = 1;
        else if (p[0] != '-' && memchr(p, '=', l) == NULL) {
            snprintf(cmd, n, "%.*s", (int)l, p);
            return 1;
        }
        p += l;
    }
    return 0;
}

static int warn_oom(closure_t *c, int rc, bkm_err_t *err)
{
    (void)c;
    return rc == BKM_ENOMEM ? bkm_err_set(err, BKM_ENOMEM, "out of memory") : rc;
}

/* The LD_PRELOAD entries (split at spaces and colons), loaded after the program, before its
 * dependencies. A missing one is a warning: the loader ignores it. */
static int add_preloads(closure_t *c, bkm_err_t *err)
{
    const char *p = c->cfg->ld_preload;
    int rc;
    for (int k = 0; p && *p && k < SEARCH_MAX_DIRS; k++) {
        size_t n = strcspn(p, " :");
        char name[PATH_MAX], found[PATH_MAX];
        const char *via = "LD_PRELOAD";
        elf_t e;
        int ok = 0;
        if (n > 0 && n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            if (loaded_by_name(c, name) < 0) {
                if ((rc = resolve(c, 0, name, &e, found, sizeof found, &via, &ok, err)) < 0)
                    return rc;
                if (!ok) {
                    if ((rc = bkm__rt_result_warn(c->r, "LD_PRELOAD entry '%s' not found: the loader ignores it",
                                                  name)) < 0)
                        return warn_oom(c, rc, err);
                } else if ((rc = add_object(c, &e, name, found, -1, 0, "LD_PRELOAD", err)) < 0) {
                    return rc;
                }
            }
        }
        p += n;
        while (*p == ' ' || *p == ':')
            p++;
    }
    return BKM_OK;
}

static int closure_walk(closure_t *c, bkm_err_t *err)
{
    int rc, warned_depth = 0;
    for (int i = 0; i < c->r->n_obj; i++) {
        int depth = c->r->obj[i].depth;
        if (c->x[i].info.n_needed > 0 && depth >= c->max_depth) {
            if (!warned_depth && (rc = bkm__rt_result_warn(c->r, "dependencies deeper than %d levels are not "
                                                           "followed (at %s)", c->max_depth, c->r->obj[i].path)) < 0)
                return warn_oom(c, rc, err);
            warned_depth = 1;
            continue;
        }
        for (int k = 0; k < c->x[i].info.n_needed; k++) {
            const char *name = c->x[i].info.needed[k];
            char found[PATH_MAX];
            const char *via = "";
            elf_t e;
            int ok = 0;
            if (++c->needed_seen > CLOSURE_MAX_NEEDED)
                return bkm_err_set(err, BKM_EINVAL, "the dependency closure of '%s' has more than %d DT_NEEDED "
                                   "entries", c->r->program, CLOSURE_MAX_NEEDED);
            if (loaded_by_name(c, name) >= 0)
                continue;
            if ((rc = resolve(c, i, name, &e, found, sizeof found, &via, &ok, err)) < 0)
                return rc;
            if (!ok) {
                if ((rc = bkm__rt_result_warn(c->r, "%s (needed by %s) not found", name, c->r->obj[i].path)) < 0)
                    return warn_oom(c, rc, err);
                continue;
            }
            if ((rc = add_object(c, &e, name, found, i, depth + 1, via, err)) < 0)
                return rc;
        }
    }
    return BKM_OK;
}

static int set_reason(bkm_aff_runtime_result_t *r, bkm_err_t *err, const char *fmt, ...) BKM_PRINTF(3, 4);
static int set_reason(bkm_aff_runtime_result_t *r, bkm_err_t *err, const char *fmt, ...)
{
    bkm_buf_t b;
    va_list ap;
    bkm_buf_init(&b);
    va_start(ap, fmt);
    bkm_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    bkm_free(r->reason);
    r->reason = b.oom ? NULL : bkm_buf_take(&b);
    bkm_buf_free(&b);
    r->kind = BKM_AFF_RUNTIME_UNKNOWN;
    return r->reason ? BKM_OK : bkm_err_set(err, BKM_ENOMEM, "out of memory");
}

int bkm_aff_runtime_detect_static(const char *program, const bkm_aff_runtime_cfg_t *cfg,
                                  bkm_aff_runtime_result_t *r, bkm_err_t *err)
{
    bkm_aff_runtime_cfg_t dflt;
    closure_t c;
    char *path = NULL, interp[PATH_MAX], arg[PATH_MAX];
    elf_t e;
    int rc, nest;
    if (program == NULL || r == NULL)
        return bkm_err_set(err, BKM_EINVAL, "bkm_aff_runtime_detect_static: NULL argument");
    if (cfg == NULL) {
        bkm_aff_runtime_cfg_init(&dflt);
        cfg = &dflt;
    }
    bkm_aff_runtime_result_free(r);
    memset(&c, 0, sizeof c);
    memset(&e, 0, sizeof e);
    e.fd = -1;
    c.cfg = cfg;
    c.r = r;
    c.max_objects = cfg->max_objects > 0 ? cfg->max_objects : 1024;
    c.max_depth = cfg->max_depth > 0 ? cfg->max_depth : 32;
    if (strchr(program, '/')) {
        /* a path: any regular file (a shared library has no execute permission) */
        char abs[PATH_MAX];
        struct stat st;
        if (!absolute(cfg, program, abs, sizeof abs)) {
            rc = bkm_err_set(err, BKM_EINVAL, "program path '%s' is too long", program);
            goto out;
        }
        if (stat(abs, &st) != 0) {
            rc = bkm_err_set(err, BKM_EINVAL, "program '%s' (%s): %s", program, abs, strerror(errno));
            goto out;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = bkm_err_set(err, BKM_EINVAL, "program '%s' (%s) is not a regular file", program, abs);
            goto out;
        }
        path = bkm_strdup(abs);
    } else if ((rc = bkm_aff_runtime_which(program, cfg, &path, err)) < 0) {
        goto out;
    }
    if (path == NULL || (r->program = bkm_strdup(path)) == NULL) {
        rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
        goto out;
    }
    /* #! scripts, nested as the kernel allows, through env */
    for (nest = 0;; nest++) {
        char *next = NULL, cmd[PATH_MAX];
        if ((rc = read_shebang(path, interp, sizeof interp, arg, sizeof arg, err)) < 0)
            goto out;
        if (rc == 0)
            break;
        if (nest >= SCRIPT_MAX_NEST) {
            rc = bkm_err_set(err, BKM_EINVAL, "'%s': more than %d nested #! interpreters", program, SCRIPT_MAX_NEST);
            goto out;
        }
        if (strcmp(base_name(interp), "env") == 0) {
            if (!env_command(arg, cmd, sizeof cmd)) {
                rc = bkm_err_set(err, BKM_EINVAL, "'%s': '#!%s %s' names no command for env", path, interp, arg);
                goto out;
            }
            rc = bkm_aff_runtime_which(cmd, cfg, &next, err);
        } else {
            rc = bkm_aff_runtime_which(interp, cfg, &next, err);
        }
        if (rc < 0) {
            bkm_err_prefix(err, "the interpreter of '%s': ", path);
            goto out;
        }
        bkm_free(path);
        path = next;
        bkm_free(r->interpreter);
        if ((r->interpreter = bkm_strdup(path)) == NULL) {
            rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
            goto out;
        }
    }
    if ((rc = elf_open(&e, path, err)) < 0) {
        if (e.not_elf && r->interpreter == NULL) {
            elf_close(&e);
            rc = set_reason(r, err, "'%s' is neither an ELF program nor a #! script: which OpenMP runtime it loads "
                            "cannot be told", path);
        }
        goto out;
    }
    if (r->interpreter == NULL) {
        char real[PATH_MAX];
        if (is_interpreter_name(program) || is_interpreter_name(path) ||
            (realpath(path, real) && is_interpreter_name(real))) {
            if ((r->interpreter = bkm_strdup(path)) == NULL) {
                elf_close(&e);
                rc = bkm_err_set(err, BKM_ENOMEM, "out of memory");
                goto out;
            }
        }
    }
    if (!e.info.has_dynamic || (e.info.interp == NULL && (e.eh.e_type == ET_EXEC || (e.flags_1 & DF_1_PIE)))) {
        elf_close(&e);
        rc = set_reason(r, err, "'%s' is statically linked: an OpenMP runtime linked into it cannot be told from "
                        "dependencies", path);
        goto out;
    }
    if ((rc = add_object(&c, &e, r->interpreter ? path : program, path, -1, 0, "program", err)) < 0 ||
        (rc = add_preloads(&c, err)) < 0 || (rc = closure_walk(&c, err)) < 0)
        goto out;
    if ((rc = bkm__rt_result_finish(r)) < 0) {
        rc = bkm_err_set(err, rc, "out of memory");
        goto out;
    }
    if (r->interpreter) {
        bkm_buf_t links;
        bkm_buf_init(&links);
        for (int k = 0; k < r->n_runtimes; k++)
            bkm_buf_printf(&links, "%s%s (%s)", k ? " and " : "", r->obj[r->runtime[k]].name,
                           bkm_aff_runtime_kind_title(r->obj[r->runtime[k]].kind));
        if (strcmp(r->program, r->interpreter) == 0)
            rc = set_reason(r, err, "%s is an interpreter: which OpenMP runtime the code it runs loads cannot be told "
                            "from ELF dependencies (an interpreter loads modules with dlopen, as python3 loads "
                            "torch); the interpreter itself links %s", r->program,
                            links.len ? bkm_buf_str(&links) : "none");
        else
            rc = set_reason(r, err, "%s is run by %s, an interpreter: which OpenMP runtime it loads cannot be told "
                            "from ELF dependencies (an interpreter loads modules with dlopen, as python3 loads "
                            "torch); the interpreter itself links %s", r->program, r->interpreter,
                            links.len ? bkm_buf_str(&links) : "none");
        bkm_buf_free(&links);
    }
out:
    elf_close(&e);   /* a no-op once add_object has taken it */
    closure_free(&c);
    bkm_free(path);
    if (rc < 0)
        bkm_aff_runtime_result_free(r);
    return rc;
}
