/* SPDX-License-Identifier: MIT */
/** @file bkm/affinity/runtime.h
 * Which OpenMP runtime a program loads, and which variables that runtime reads.
 *
 * GNU libgomp reads OMP_* and GOMP_* and ignores every KMP_*; LLVM libomp and Intel libiomp5 read
 * KMP_* and OMP_* (and GOMP_CPU_AFFINITY, which libomp converts). A runtime is told by what the
 * file is, never by its name alone: bkm's own binaries resolve libgomp.so.1 to a link to
 * libomp.so.5, and that file counts as libomp. A file is classified by its ELF SONAME
 * (libgomp*, libomp*, libiomp5*), else, when its name or SONAME mentions "omp", by the symbols
 * it defines (__kmpc_fork_call: the KMP runtimes; GOMP_parallel without it: libgomp).
 *
 * Two ways to know it:
 *  - statically, from the ELF dependency closure of a program as the dynamic loader would
 *    resolve it (DT_NEEDED breadth first; DT_RPATH of the loader chain unless the needing object
 *    has a DT_RUNPATH; LD_LIBRARY_PATH; DT_RUNPATH of the needing object; /etc/ld.so.cache; the
 *    default directories; LD_PRELOAD first; $ORIGIN, $LIB and $PLATFORM expanded; a library
 *    already loaded under that name, SONAME or file is not loaded twice). The program is never
 *    executed. A `#!` script or an interpreter (python3, perl, bash, ...) cannot be told this
 *    way: it may dlopen a runtime (python3 + torch); the result says so and lists what the
 *    interpreter itself links.
 *  - from a running process: the files mapped in /proc/PID/maps.
 *
 * Not modelled by the static closure (the running process shows them): libraries loaded with
 * dlopen; the glibc-hwcaps/ and legacy hwcap subdirectories the loader tries inside each search
 * directory; /etc/ld.so.preload; the restrictions of a setuid program; a runtime linked statically.
 *
 * Only 64-bit little-endian x86-64 ELF files are read; others are refused with a message. Every
 * read is bounded by the file's size and by the limits below; a malformed or hostile file is
 * refused with a message naming it and what is wrong.
 *
 * Nothing here reads the environment: the caller passes LD_LIBRARY_PATH, LD_PRELOAD and PATH in
 * bkm_aff_runtime_cfg_t. Error convention: see bkm/common.h.
 */
#ifndef BKM_AFFINITY_RUNTIME_H
#define BKM_AFFINITY_RUNTIME_H

#include "bkm/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------- */
/* Runtime kinds                                                                             */

typedef enum bkm_aff_runtime_kind {
    BKM_AFF_RUNTIME_NONE = 0,      /**< no OpenMP runtime */
    BKM_AFF_RUNTIME_LIBGOMP = 1,   /**< GNU libgomp (GCC) */
    BKM_AFF_RUNTIME_LIBOMP = 2,    /**< LLVM libomp (clang) */
    BKM_AFF_RUNTIME_LIBIOMP5 = 3,  /**< Intel libiomp5 (icc/icx, MKL, conda's PyTorch) */
    BKM_AFF_RUNTIME_UNKNOWN = 4,   /**< cannot be told: an interpreter, a file that is not ELF, a static program */
} bkm_aff_runtime_kind_t;
#define BKM_AFF_RUNTIME_KINDS 5

/** "none", "libgomp", "libomp", "libiomp5", "unknown" (static strings). */
const char *bkm_aff_runtime_kind_name(bkm_aff_runtime_kind_t kind);
/** "no OpenMP runtime", "GNU OpenMP", "LLVM OpenMP", "Intel OpenMP", "unknown runtime". */
const char *bkm_aff_runtime_kind_title(bkm_aff_runtime_kind_t kind);
/** Parse a kind: its name, or "gomp"/"gnu", "omp"/"llvm", "iomp5"/"intel"; BKM_EINVAL naming
 *  @p s otherwise. */
int bkm_aff_runtime_kind_parse(const char *s, bkm_aff_runtime_kind_t *kind, bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/* What each runtime reads                                                                   */

/** What a variable steers (decides how serious ignoring it is, and the runtime's equivalents). */
typedef enum bkm_aff_runtime_role {
    BKM_AFF_ROLE_PLACEMENT = 0,    /**< thread binding and topology */
    BKM_AFF_ROLE_WAIT,             /**< what idle threads do (spin, yield, sleep) */
    BKM_AFF_ROLE_THREADS,          /**< how many threads, nesting */
    BKM_AFF_ROLE_STACK,            /**< worker thread stack size */
    BKM_AFF_ROLE_OTHER,            /**< schedules, diagnostics, tools, locks, ... */
} bkm_aff_runtime_role_t;

/** One variable an OpenMP runtime reads. */
typedef struct bkm_aff_runtime_var {
    const char *name;
    unsigned readers;              /**< bit (1u << kind) per runtime kind that reads it */
    bkm_aff_runtime_role_t role;
} bkm_aff_runtime_var_t;

/** Every variable GNU libgomp (GCC 12, env.c) or LLVM libomp 14 (kmp_settings.cpp) reads; Intel
 *  libiomp5 is taken to read what libomp reads. Static table of *n entries. */
const bkm_aff_runtime_var_t *bkm_aff_runtime_vars(size_t *n);
/** The entry of @p name, or NULL when no runtime reads it. */
const bkm_aff_runtime_var_t *bkm_aff_runtime_var_find(const char *name);
/** 1 when runtime @p kind does not read @p name (any KMP_* for libgomp, GOMP_SPINCOUNT for
 *  libomp, every variable for NONE), 0 when it reads it, and 0 for UNKNOWN (cannot tell). */
int bkm_aff_runtime_var_ignored(bkm_aff_runtime_kind_t kind, const char *name);
/** The variables of @p kind with @p role, "/"-separated: libgomp placement =
 *  "OMP_PLACES/OMP_PROC_BIND/GOMP_CPU_AFFINITY" (static string; "" for NONE and UNKNOWN). */
const char *bkm_aff_runtime_role_vars(bkm_aff_runtime_kind_t kind, bkm_aff_runtime_role_t role);
/** Append why @p name does nothing for @p program, which loads @p lib (a file name, e.g.
 *  "libgomp.so.1"; NULL: none named) of kind @p kind: "KMP_AFFINITY is ignored: ./app loads
 *  libgomp.so.1 (GNU OpenMP); its placement variables are OMP_PLACES/OMP_PROC_BIND/
 *  GOMP_CPU_AFFINITY". Appends nothing and returns 0 when @p kind reads @p name; returns 1 when
 *  it appended. */
int bkm_aff_runtime_var_explain(bkm_aff_runtime_kind_t kind, const char *name, const char *program,
                                const char *lib, bkm_buf_t *out);

/* ---------------------------------------------------------------------------------------- */
/* Configuration                                                                             */

/** Where the loader looks; what the program's environment would say. Zero it (or call
 *  bkm_aff_runtime_cfg_init), then set what applies; NULL members take the documented default. */
typedef struct bkm_aff_runtime_cfg {
    const char *ld_library_path;    /**< LD_LIBRARY_PATH (':' or ';' separated); NULL: unset */
    const char *ld_preload;         /**< LD_PRELOAD (' ' or ':' separated); NULL: unset */
    const char *path;               /**< PATH, for a command name without '/'; NULL: such a name is not found */
    const char *cwd;                /**< directory of relative names (program, "" PATH entries); NULL: ours */
    const char *ld_so_cache;        /**< NULL: "/etc/ld.so.cache"; "": no cache (default directories only) */
    const char *const *default_dirs;/**< NULL-terminated; NULL: /lib/x86_64-linux-gnu,
                                         /usr/lib/x86_64-linux-gnu, /lib64, /lib, /usr/lib */
    const char *dst_lib;            /**< what $LIB expands to; NULL: "lib/x86_64-linux-gnu" (Debian) */
    const char *dst_platform;       /**< what $PLATFORM expands to; NULL: what glibc makes of this CPU
                                         ("haswell" on an Intel CPU with AVX2, "xeon_phi" on KNL,
                                         else "x86_64") */
    int max_depth;                  /**< deepest DT_NEEDED chain followed; 0: 32 */
    int max_objects;                /**< most objects in a closure; 0: 1024 */
    const char *proc_root;          /**< the /proc to read processes from; NULL: "/proc" */
} bkm_aff_runtime_cfg_t;
void bkm_aff_runtime_cfg_init(bkm_aff_runtime_cfg_t *cfg);

/* ---------------------------------------------------------------------------------------- */
/* Detection result                                                                          */

/** One object of a closure (static) or one file mapped in a process (dynamic). */
typedef struct bkm_aff_runtime_obj {
    char *name;                     /**< how it was asked for: the DT_NEEDED string, the LD_PRELOAD entry,
                                         the program as given; the mapped path (dynamic) */
    char *path;                     /**< the path the loader opens (dynamic: the mapped path) */
    char *real;                     /**< its real path (symbolic links resolved) */
    char *soname;                   /**< DT_SONAME, or NULL */
    int parent;                     /**< index of the object whose DT_NEEDED brought it in; -1: the
                                         program, a preload, or dynamic */
    int depth;                      /**< 0 for the program and the preloads */
    const char *via;                /**< static string: "program", "LD_PRELOAD", "RPATH", "RUNPATH",
                                         "LD_LIBRARY_PATH", "ld.so.cache", "default directory", "path",
                                         "mapped" */
    bkm_aff_runtime_kind_t kind;    /**< NONE when it is no OpenMP runtime */
    char how[96];                   /**< why it is that runtime: "SONAME libgomp.so.1", "defines __kmpc_fork_call" */
} bkm_aff_runtime_obj_t;

/** What a detection found. Initialise with bkm_aff_runtime_result_init; free with
 *  bkm_aff_runtime_result_free. */
typedef struct bkm_aff_runtime_result {
    bkm_aff_runtime_kind_t kind;    /**< NONE; the runtime (when there are several: the first in load
                                         order, static; the first in the maps, by address, dynamic);
                                         UNKNOWN (see reason) */
    int n_runtimes;                 /**< distinct runtime files; more than one is a finding */
    int *runtime;                   /**< [n_runtimes] indexes into obj (static: in load order) */
    char *program;                  /**< the program's resolved path (static), or /proc/PID/exe's target */
    char *interpreter;              /**< an interpreter: its resolved path (obj is its closure), else NULL */
    char *reason;                   /**< why kind is UNKNOWN, else NULL */
    int dynamic;                    /**< 1: from a running process (obj = mapped files) */
    int n_obj;
    bkm_aff_runtime_obj_t *obj;     /**< [n_obj]; static: obj[0] is the program (or the interpreter) */
    int n_warnings;
    char **warning;                 /**< [n_warnings]: a library not found, a candidate skipped
                                         (wrong class, malformed), two runtimes, ... */
    /* bkm_aff_runtime_probe_run only: */
    int samples;                    /**< maps reads that succeeded */
    int exited;                     /**< 1: the program ended by itself before the timeout */
    int exit_status;                /**< its wait status when it exited */
    double ran_s;                   /**< how long it ran under the probe */
} bkm_aff_runtime_result_t;

void bkm_aff_runtime_result_init(bkm_aff_runtime_result_t *r);
void bkm_aff_runtime_result_free(bkm_aff_runtime_result_t *r);
/** Append "app -> libdnnl.so.2 -> libgomp.so.1" (file names) for object @p i of @p r. */
void bkm_aff_runtime_result_chain(const bkm_aff_runtime_result_t *r, int i, bkm_buf_t *out);
/** {"program","kind","title","dynamic","interpreter","reason",
 *   "runtimes":[{"kind","title","path","real","soname","how","chain":["app","libdnnl.so.2","libgomp.so.1"]}],
 *   "objects":N,"warnings":[...]} plus "samples","exited","exit_status","ran_s" for a probe. */
int bkm_aff_runtime_result_to_json(const bkm_aff_runtime_result_t *r, bkm_json_w_t *w, bkm_err_t *err);

/* ---------------------------------------------------------------------------------------- */
/* Static detection                                                                          */

/** Resolve @p program as execvp would: a name with '/' relative to cfg->cwd, a bare name through
 *  cfg->path (an empty entry is cfg->cwd); the first regular file with execute permission.
 *  *resolved is the caller's (bkm_free). BKM_EINVAL naming the program and where it was looked for. */
int bkm_aff_runtime_which(const char *program, const bkm_aff_runtime_cfg_t *cfg, char **resolved, bkm_err_t *err);
/** 1 when @p name (a command name or path) names an interpreter that loads code, and with it
 *  libraries, at run time: python*, pypy*, perl*, ruby*, node, Rscript, R, julia, lua*, tclsh,
 *  bash, sh, dash, zsh, ksh, csh, java, ... (a trailing version such as 3.11 is ignored). */
int bkm_aff_runtime_is_interpreter(const char *name);
/** The runtime(s) @p program (a path or a command name: bkm_aff_runtime_which) loads, from its
 *  ELF dependency closure, without executing it. A `#!` script (followed through `env` and up to
 *  four nested interpreters, as the kernel does) or an ELF interpreter (python*, perl, ruby,
 *  node, Rscript, julia, lua, tclsh, bash, sh, dash, zsh, ksh, java) is UNKNOWN with the
 *  interpreter's closure listed; a file that is neither ELF nor a script, or a statically linked
 *  program, is UNKNOWN with the reason. A dependency that cannot be found is a warning, as is a
 *  candidate the loader would skip (another ELF class or machine, malformed).
 *  @return BKM_OK; BKM_EINVAL when the program is not found, or is an ELF file bkm does not read
 *  (32-bit, big-endian, another machine) or a malformed one (the message names it and what is
 *  wrong), or the closure exceeds cfg->max_objects; BKM_ENOMEM. @p r is reset first; on error it
 *  is empty. */
int bkm_aff_runtime_detect_static(const char *program, const bkm_aff_runtime_cfg_t *cfg,
                                  bkm_aff_runtime_result_t *r, bkm_err_t *err);
/** Classify one file: *kind (NONE when it is no OpenMP runtime) and, when @p how is non-NULL,
 *  why ("SONAME libomp.so.5"). @return BKM_OK; BKM_EINVAL when it is not an ELF file bkm reads
 *  or is malformed (named). */
int bkm_aff_runtime_classify_file(const char *path, bkm_aff_runtime_kind_t *kind, char *how, size_t how_size,
                                  bkm_err_t *err);

/** The dynamic section of one ELF file, as read by the closure. */
typedef struct bkm_aff_elf_info {
    int type;                       /**< ET_EXEC or ET_DYN */
    int has_dynamic;                /**< 0: statically linked */
    char *interp;                   /**< PT_INTERP, or NULL */
    char *soname, *rpath, *runpath; /**< DT_SONAME, DT_RPATH, DT_RUNPATH (as written), or NULL */
    int nodeflib;                   /**< DF_1_NODEFLIB: no ld.so.cache, no default directories */
    int n_needed;
    char **needed;                  /**< [n_needed] DT_NEEDED strings in order */
} bkm_aff_elf_info_t;
/** Read the ELF header, program headers and dynamic section of @p path (a regular file).
 *  @return BKM_OK; BKM_EINVAL naming the file when it is not ELF, not 64-bit little-endian
 *  x86-64, or malformed (truncated headers, offsets or sizes outside the file, a string that does
 *  not end inside the string table, more than the limits: 1024 program headers, 65536 dynamic
 *  entries, 4096 DT_NEEDED, 4096-byte strings); BKM_EIO; BKM_ENOMEM. Free with
 *  bkm_aff_elf_info_free (also after an error). */
int bkm_aff_elf_read(const char *path, bkm_aff_elf_info_t *info, bkm_err_t *err);
void bkm_aff_elf_info_free(bkm_aff_elf_info_t *info);

/** The dynamic loader's cache (/etc/ld.so.cache, format "glibc-ld.so.cache1.1", alone or after
 *  the old "ld.so-1.7.0" table). */
typedef struct bkm_aff_ldcache bkm_aff_ldcache_t;
/** Largest cache read. */
#define BKM_AFF_LDCACHE_MAX_BYTES ((size_t)64 << 20)
/** Read and check the whole cache: header, entry table and every string offset inside the file.
 *  @return BKM_OK; BKM_EIO when it cannot be opened (absent: the caller falls back to the default
 *  directories); BKM_EINVAL naming the file and the fault when it is malformed, big-endian or only
 *  in the old format; BKM_ENOMEM. */
int bkm_aff_ldcache_open(const char *path, bkm_aff_ldcache_t **cache, bkm_err_t *err);
/** The path the cache gives for @p soname among the x86-64 libc6 entries (flags 0x0303, no
 *  glibc-hwcaps subdirectory), the first in the file's order; NULL when absent. Valid until
 *  bkm_aff_ldcache_close. */
const char *bkm_aff_ldcache_lookup(const bkm_aff_ldcache_t *cache, const char *soname);
/** Entries of the cache (all flags), for tests and diagnostics. */
int bkm_aff_ldcache_count(const bkm_aff_ldcache_t *cache);
void bkm_aff_ldcache_close(bkm_aff_ldcache_t *cache);

/* ---------------------------------------------------------------------------------------- */
/* Dynamic detection                                                                         */

/** One file mapped into a process (a line of /proc/PID/maps with a path). */
typedef struct bkm_aff_maps_file {
    char *path;                     /**< as the kernel prints it, without " (deleted)" */
    unsigned long long inode;
    unsigned dev_major, dev_minor;
    int deleted;                    /**< the file was removed or replaced since it was mapped */
} bkm_aff_maps_file_t;
/** The distinct files (by device and inode, else path) mapped in process @p pid (0: "self") under
 *  @p proc_root (NULL: "/proc"), in the order of first appearance. *files is the caller's
 *  (bkm_aff_maps_free). @return BKM_OK; BKM_EIO when the maps file cannot be read (the process
 *  is gone or not ours: named); BKM_EINVAL when a line is malformed (named by number);
 *  BKM_ENOMEM. At most 65536 files and 1 MiB lines are read. */
int bkm_aff_maps_read(const char *proc_root, int pid, bkm_aff_maps_file_t **files, int *n_files, bkm_err_t *err);
void bkm_aff_maps_free(bkm_aff_maps_file_t *files, int n_files);
/** The OpenMP runtime(s) mapped in process @p pid (0: this process) under cfg->proc_root: each
 *  mapped file classified (bkm_aff_runtime_classify_file; a deleted or unreadable file by its
 *  name). r->dynamic = 1; two runtimes are a warning. BKM_EIO (as bkm_aff_maps_read), BKM_ENOMEM. */
int bkm_aff_runtime_detect_pid(int pid, const bkm_aff_runtime_cfg_t *cfg, bkm_aff_runtime_result_t *r,
                               bkm_err_t *err);

/** Starting a program briefly to see what it maps (`tune lint --probe`). */
typedef struct bkm_aff_runtime_probe_cfg {
    double timeout_s;               /**< how long it may run; 0: 5 s */
    const char *cwd;                /**< directory it starts in; NULL: ours */
    char *const *envp;              /**< its environment (NULL: empty) */
    const char *proc_root;          /**< NULL: "/proc" */
} bkm_aff_runtime_probe_cfg_t;
/** Start @p exe (an absolute or relative path: never looked up, never through a shell) with
 *  @p argv in its own process group, stdin, stdout and stderr on /dev/null, default signal
 *  dispositions; read its /proc/PID/maps right after it starts, every 2 ms for the first
 *  200 ms, then at growing intervals (20 ms to 250 ms) until it exits or cfg->timeout_s has passed; then kill the group (SIGTERM,
 *  SIGKILL 200 ms later) and reap it. @p r gets the union of the runtimes seen (dynamic), the
 *  number of samples, whether it exited by itself and its status. A program that exits before a
 *  sample shows a runtime is reported with what was seen (possibly none): see r->samples.
 *  @return BKM_OK; BKM_EINVAL when it cannot be started (named, with the reason); BKM_EIO;
 *  BKM_ENOMEM. */
int bkm_aff_runtime_probe_run(const char *exe, char *const argv[], const bkm_aff_runtime_probe_cfg_t *cfg,
                              bkm_aff_runtime_result_t *r, bkm_err_t *err);

#ifdef __cplusplus
}
#endif
#endif /* BKM_AFFINITY_RUNTIME_H */
