/* SPDX-License-Identifier: MIT */
/* `tune train`: the synchronous-SGD training run fmnist-sgd over MPI (docs/workloads.md §7), one process
 * per rank under `mpiexec -n P` (or srun, or alone). A thin layer: options into a configuration,
 * bkm_train_run, per-epoch lines from rank 0 on stdout, rank 0's JSON with --json. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <omp.h>

#include "cli_opt.h"
#include "bkm/workloads.h"

const char bkm_cli_train_summary[] = "synchronous-SGD training over MPI on Fashion-MNIST (fmnist-sgd)";

typedef struct train_opts {
    bkm_wl_config_t cfg;
    const char *workload;
    int threads, json, dry_run;
} train_opts_t;

static int train_param(void *cfg, const bkm_cli_opt_t *opt, const char *v, bkm_err_t *err)
{
    (void)opt;
    return bkm_wl_config_add(&((train_opts_t *)cfg)->cfg, v, err);
}

static const bkm_cli_opt_t train_table[] = {
    {.name = "workload", .short_name = 'w', .kind = BKM_CLI_CHOICE, .metavar = "W",
     .off = offsetof(train_opts_t, workload), .choices = "fmnist-sgd", .help = "the training run (fmnist-sgd)"},
    {.name = "threads", .kind = BKM_CLI_INT, .metavar = "N", .off = offsetof(train_opts_t, threads), .lo = 1,
     .hi = BKM_CPUSET_MAX, .help = "OpenMP threads per rank (default: the OpenMP runtime's)", .example = "1"},
    {.name = "param", .kind = BKM_CLI_CALL, .metavar = "key=value", .call = train_param, .flags = BKM_CLI_REPEAT,
     .help = "a training parameter: epochs, batch, lr, momentum, model, dropout,\n"
             "allreduce, bucket_kb, reduce, data, trace, verbose_ranks, seed, backend,\n"
             "bcast, micro, train_limit, test_limit (listed with defaults below)",
     .example = "epochs=1"},
    {.name = "dry-run", .kind = BKM_CLI_FLAG, .off = offsetof(train_opts_t, dry_run),
     .help = "check the parameters and exit (no MPI, no data read)"},
    {.name = "json", .kind = BKM_CLI_FLAG, .off = offsetof(train_opts_t, json),
     .help = "print rank 0's result as JSON (no per-epoch text)"},
};

static const bkm_cli_cmd_spec_t train_cmd = {
    .name = "train",
    .usage = "[mpiexec -n P] tune train [--workload fmnist-sgd] [--threads N] [--param key=value ...]\n"
             "         [--dry-run] [--json]",
    .about = "Trains the seed's CNN (or an MLP) on Fashion-MNIST with synchronous data-parallel\n"
             "SGD over MPI: parameters broadcast from rank 0, the global batch split evenly over\n"
             "the ranks, one shuffled order per epoch identical on every rank (so P ranks train\n"
             "the same global batches as one), gradients AVERAGED over the ranks (the seed summed\n"
             "them, which multiplies the learning rate by P: reduce=sum reproduces it), SGD with\n"
             "momentum, and at the end of every epoch a check that every rank holds rank 0's\n"
             "parameters. Prints per epoch: loss, test accuracy, samples/s, compute and\n"
             "communication seconds (rank 0; every rank with verbose_ranks=1), and first the\n"
            "CPUs of every rank (ranks sharing CPUs are pointed out).",
    BKM_CLI_TABLE(train_table),
    .more = "Parameters (--param key=value):\n"
            "  epochs=10 batch=128 lr=auto momentum=auto model=cnn|mlp dropout=auto (cnn 0.5, mlp 0)\n"
            "  allreduce=mpi|flat|ring|overlap bucket_kb=32 reduce=mean|sum\n"
            "  data=/usr/share/datasets/fashion-mnist trace=0|1 verbose_ranks=0|1 seed=1234\n"
            "  backend=native|onednn bcast=start|epoch micro=auto train_limit=0 test_limit=0\n"
            "A last partial batch of an epoch is dropped (60000 / 128: 468 steps).\n"
            "lr=auto: mlp 0.05; cnn 0.02 = the seed's 0.01 times its 2 ranks, because the seed\n"
            "summed the gradients of 2 ranks and we average them (momentum=auto: cnn 0.5 as the\n"
            "seed, mlp 0.9). With lr=0.01 the cnn with dropout ends near 0.838 after 10 epochs.\n"
            "micro=auto (32 images at batch 128 on 1, 2 or 4 ranks): each rank runs its slice as\n"
            "micro-batches, sums their gradients in double in a fixed tree over the micro-batch\n"
            "index and allreduces doubles, so the gradient of a global batch does not depend on\n"
            "how it is split: P=1 and P=2 losses agree to ~1e-16. micro=0: one float step per\n"
            "rank slice and a float allreduce (faster by a few %, P-dependent rounding).\n"
            "allreduce=overlap reports, per epoch, the share of gradient bytes reduced before\n"
            "backward ended and the exposed wait (JSON: epochs[].overlap); with micro-batches\n"
            "only the last micro-batch's backward can hide communication.\n\n"
            "Examples:\n"
            "  tune train --param epochs=1                          # one rank, no launcher\n"
            "  mpiexec -n 2 -bind-to core tune train --threads 1 --param allreduce=ring\n"
            "  mpiexec -n 2 tune train --param model=mlp --param trace=1 --json\n"
            "  mpiexec -n 2 tune train --param lr=0.01 --param reduce=sum  # the seed's recipe\n\n"
            "Exit codes: 0 done; 1 the ranks' parameters differ; 2 a bad parameter or data file\n"
            "(named; on every rank); 3 an MPI error. A rank that dies ends the job (the launcher\n"
            "stops the others).\n",
};

static void train_log(void *ctx, const char *line)
{
    (void)ctx;
    printf("%s\n", line);
    fflush(stdout);
}

int bkm_cli_train(int argc, char **argv)
{
    train_opts_t o;
    bkm_err_t err;
    bkm_buf_t json;
    int ret, rc, rank = 0;
    memset(&o, 0, sizeof o);
    bkm_wl_config_init(&o.cfg);
    memset(&err, 0, sizeof err);
    if (bkm_cli_opt_parse_cmd(&train_cmd, argc, argv, &o, &ret))
        return ret;
    if (bkm_train_config_check(&o.cfg, &err) < 0) { /* before MPI: every rank refuses alike */
        fprintf(stderr, "tune train: %s\n", err.msg);
        return 2;
    }
    if (o.dry_run) {
        printf("tune train: parameters ok\n");
        return 0;
    }
    if (o.threads > 0)
        omp_set_num_threads(o.threads);
    bkm_buf_init(&json);
    rc = bkm_train_run(&o.cfg, o.threads, o.json ? NULL : train_log, NULL, &json, &rank, &err);
    if (rc == BKM_OK) {
        if (o.json && rank == 0)
            printf("%s\n", bkm_buf_str(&json));
        ret = 0;
    } else {
        fprintf(stderr, "tune train: [rank %d] %s\n", rank, err.msg);
        ret = rc == BKM_EINVAL ? 2 : rc == BKM_EVERIFY ? 1 : 3;
    }
    bkm_buf_free(&json);
    return ret;
}
