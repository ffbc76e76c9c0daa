/* SPDX-License-Identifier: MIT */
/* `tune`: dispatches to the subcommands in apps/cmd_*.c. With no subcommand, or when the first
 * argument is an option, `tune` runs a sweep (`tune sweep`), the main job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/common.h"

#include "cli_common.h"
#include "cli_opt.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f,
            "tune %s: find the best-known OpenMP/kernel settings for deep-learning workloads on HPC nodes\n\n"
            "usage: tune [sweep] --node NODE --workload WL [options]   (the main job)\n"
            "       tune COMMAND [options]      (tune COMMAND --help for each)\n\ncommands:\n",
            BKM_VERSION);
    for (const bkm_cli_cmd_t *c = bkm_cli_commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fprintf(f, "\nexit codes: 0 success, 1 check failed, 2 bad usage or input, 3 environment problem,\n"
               "            4 partial success (some trials failed; the rest are stored)\n");
}

/* The man page tune(1): this text around every command's `--help --man` section, so the options
 * it lists are the ones each command's table parses (built into BUILD/tune.1 by apps/CMakeLists.txt). */
static int man_page(void)
{
    printf(".TH TUNE 1 \"\" \"bkm %s\" \"bkm\"\n"
           ".SH NAME\ntune \\- find the best\\-known OpenMP/kernel settings for deep\\-learning workloads on HPC "
           "nodes\n"
           ".SH SYNOPSIS\n.nf\n\\fBtune\\fR [\\fBsweep\\fR] \\fB\\-\\-node\\fR \\fINODE\\fR \\fB\\-\\-workload\\fR "
           "\\fIWL\\fR [\\fIoptions\\fR]\n\\fBtune\\fR \\fICOMMAND\\fR [\\fIoptions\\fR]\n"
           "\\fBtune\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR [\\fB\\-\\-json\\fR]\n.fi\n"
           ".SH DESCRIPTION\n"
           "\\fBtune\\fR finds the runtime settings that make a deep\\-learning workload, or the user's own "
           "program, fast on a node: OpenMP thread count, KMP_AFFINITY, KMP_BLOCKTIME, KMP_HW_SUBSET, the "
           "OMP_PLACES/OMP_PROC_BIND alternative, kernel blocking and MPI ranks x threads. Every setting is "
           "measured in a fresh worker process (this same executable, \\fBtune worker\\fR), its thread binding "
           "is checked against the plan, every sample is stored in an SQLite database, and a best\\-known "
           "setting is claimed only when it beats the default beyond the noise. The results become Slurm "
           "batch scripts, an HTML report and a regression gate.\n"
           ".PP\nWith no command, or when the first argument is an option, \\fBtune\\fR runs a sweep (the main "
           "job). Every command prints its help with \\fB\\-\\-help\\fR and its option table as JSON with "
           "\\fB\\-\\-help \\-\\-json\\fR; the sections below are generated from the same tables. Options are "
           "written \\fB\\-\\-opt\\fR \\fIVALUE\\fR or \\fB\\-\\-opt\\fR=\\fIVALUE\\fR; an option given again "
           "replaces its earlier value unless it is repeatable.\n"
           ".SH COMMANDS\n",
           BKM_VERSION);
    for (const bkm_cli_cmd_t *c = bkm_cli_commands; c->name; c++) {
        printf(".TP\n\\fB%s\\fR\n", c->name);
        bkm_cli_roff_literal(stdout, c->summary);
    }
    printf(".SH \"COMMAND REFERENCE\"\n");
    for (const bkm_cli_cmd_t *c = bkm_cli_commands; c->name; c++) {
        char *argv[] = {(char *)c->name, "--help", "--man", NULL};
        fflush(stdout);
        if (c->fn(3, argv) != 0) {
            fprintf(stderr, "tune help --man: tune %s --help --man failed\n", c->name);
            return 3;
        }
    }
    printf(".SH \"EXIT STATUS\"\n.TP\n0\nsuccess\n.TP\n1\nthe check failed (e.g. \\fBtune regress\\fR found a "
           "regression)\n.TP\n2\nbad usage or bad input (the message names the value)\n.TP\n3\nan environment "
           "problem (a missing dependency, an unreadable database, no Slurm)\n.TP\n4\npartial success (some trials "
           "failed; the rest are stored)\n"
           ".SH ENVIRONMENT\n.TP\nBKM_DB\nthe results database when \\fB\\-\\-db\\fR is not given (default "
           "results/bkm.sqlite)\n"
           ".TP\nKMP_AFFINITY, KMP_BLOCKTIME, KMP_HW_SUBSET, OMP_PLACES, OMP_PROC_BIND, ...\nread by \\fBtune "
           "affinity \\-\\-env\\fR; a trial's worker gets only the variables of its setting, every other "
           "OMP_*/KMP_*/GOMP_* variable is removed\n"
           ".TP\nBKM_LIBOMP_TOPOLOGY\nauto (default), never or always: when the processes tune starts get "
           "hwloc's topology for libomp (see \\fBtune topo\\fR)\n"
           ".TP\nHWLOC_XMLFILE\nread by hwloc as this host's topology\n"
           ".TP\nPATH\nwhere sbatch, mpiexec and a program named by \\-\\- CMD are found\n"
           ".TP\nBKM_TUNE\nread by the batch scripts tune writes, not by tune: the tune a job runs instead of "
           "the one that wrote the script\n"
           ".TP\nBKM_HOME\nset by the Lmod module bkm to the prefix tune is installed under; tune itself finds "
           "its files from its own location\n"
           ".SH FILES\n.TP\nPREFIX/" BKM_INSTALL_BINDIR "/tune\nthe command, also the trial worker\n"
           ".TP\nPREFIX/" BKM_INSTALL_PKGLIBDIR "/libbkm_team.so\npreloaded into a program tune measures, to name "
           "its OpenMP team\n"
           ".TP\nPREFIX/" BKM_INSTALL_RT_DIR "/libgomp.so.1\na link to LLVM libomp, in tune's DT_RPATH: oneDNN's "
           "GNU OpenMP calls run on the one runtime tune uses\n"
           ".TP\nPREFIX/" BKM_INSTALL_MODULEDIR "/%s.lua\nthe Lmod module\n"
           ".TP\nPREFIX/" BKM_INSTALL_DOCDIR "/\nthe documentation (docs/install.md: this layout)\n"
           ".SH \"SEE ALSO\"\n\\fBsbatch\\fR(1), \\fBsrun\\fR(1), \\fBlstopo\\fR(1), \\fBmodule\\fR(1)\n",
           BKM_VERSION);
    return 0;
}

static const bkm_cli_cmd_t *find(const char *name)
{
    for (const bkm_cli_cmd_t *c = bkm_cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* hwloc itself reads HWLOC_XMLFILE when it discovers "this host": a FIFO there would block every
 * command forever and /dev/zero would grow memory until the OOM killer. Judge it like --xml. */
static int hwloc_env_check(void)
{
    const char *x = getenv("HWLOC_XMLFILE");
    bkm_err_t err = {0};
    if (x == NULL || x[0] == '\0')
        return 0;
    if (bkm_file_check_regular_or_absent(x, "HWLOC_XMLFILE (hwloc reads it as this host's topology)", &err) < 0) {
        fprintf(stderr, "tune: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const bkm_cli_cmd_t *c;
    bkm_cli_sigchld_reset();   /* a parent may have left SIGCHLD ignored: the workers' status */
    if (hwloc_env_check() < 0)
        return 2;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "help") == 0 && argc == 3 && strcmp(argv[2], "--man") == 0)
        return man_page();
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("tune %s\n", BKM_VERSION);
        return 0;
    }
    if (argv[1][0] == '-') {
        c = find("sweep");
        if (c == NULL) {
            fprintf(stderr, "tune: the sweep command is not built in this version\n");
            return 3;
        }
        /* argv[0] becomes "sweep"; the options follow. */
        argv[0] = (char *)"sweep";
        return c->fn(argc, argv);
    }
    c = find(argv[1]);
    if (c == NULL) {
        fprintf(stderr, "tune: unknown command '%s' (see tune --help)\n", argv[1]);
        return 2;
    }
    return c->fn(argc - 1, argv + 1);
}
