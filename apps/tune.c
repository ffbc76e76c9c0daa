/* SPDX-License-Identifier: MIT */
/* `tune`: dispatches to the subcommands in apps/cmd_*.c. With no subcommand, or when the first
 * argument is an option, `tune` runs a sweep (`tune sweep`), the main job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/common.h"

#include "cli_common.h"
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
