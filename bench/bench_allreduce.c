/* SPDX-License-Identifier: MIT */
/* fmnist-sgd's communication (issue 12), under `mpiexec -n P`:
 *  1. ring allreduce vs MPI_Allreduce on one buffer (default 4 MiB), interleaved in the same run:
 *     median/min/max ms of the slowest rank, algorithm bandwidth, ring / MPI ratio;
 *  2. overlap vs flat in training: short runs alternating allreduce=flat and allreduce=overlap; the
 *     communication left exposed (comm_s: time in the allreduce after backward, plus the hooks' own
 *     time for overlap) per step, and the share overlap hides = 1 - overlap / flat (medians, and
 *     min/max over the runs), with overlap's own evidence: the share of gradient bytes whose bucket's
 *     allreduce had completed when backward ended (tune train's epochs[].overlap).
 * Prints rank 0's table, or with --json one JSON object (provenance, every run's figures); asserts
 * nothing about speed.
 *   mpiexec -n 2 build/bench/bench_allreduce [--bytes N] [--reps R] [--runs K] [--train-limit N]
 *                                            [--model cnn|mlp] [--bucket-kb N] [--micro N] [--json 1] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/workloads.h"

static void cpu_name(char *buf, size_t n)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    snprintf(buf, n, "unknown CPU");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
            snprintf(buf, n, "%s", strchr(line, ':') + 2);
            buf[strcspn(buf, "\n")] = 0;
            break;
        }
    if (f)
        fclose(f);
}


static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bkm_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One short training run; its exposed communication and compute seconds per step. */
static int train_once(const char *algo, const char *model, long limit, int bucket_kb, const char *micro, double *comm,
                      double *comp, double *share, bkm_err_t *err)
{
    bkm_wl_config_t cfg;
    bkm_buf_t out;
    bkm_json_t *j = NULL;
    char kv[64];
    int rc, rank = 0;
    const char *set[7] = {"epochs=1", "test_limit=500", kv, NULL, NULL, NULL, NULL};
    char lim[48], bk[48], mo[48], mi[48];
    snprintf(kv, sizeof kv, "allreduce=%s", algo);
    snprintf(lim, sizeof lim, "train_limit=%ld", limit);
    snprintf(bk, sizeof bk, "bucket_kb=%d", bucket_kb);
    snprintf(mo, sizeof mo, "model=%s", model);
    snprintf(mi, sizeof mi, "micro=%s", micro);
    set[3] = lim, set[4] = bk, set[5] = mo, set[6] = mi;
    bkm_wl_config_init(&cfg);
    for (int i = 0; i < 7; i++)
        if ((rc = bkm_wl_config_add(&cfg, set[i], err)) < 0)
            return rc;
    bkm_buf_init(&out);
    if ((rc = bkm_train_run(&cfg, 0, NULL, NULL, &out, &rank, err)) < 0)
        goto done;
    *comm = *comp = *share = 0.0;
    if (rank == 0) {
        if ((rc = bkm_json_parse(bkm_buf_str(&out), &j, err)) < 0)
            goto done;
        const bkm_json_t *e = bkm_json_at(bkm_json_get(j, "epochs"), 0);
        double steps = bkm_json_get_num(j, "steps_per_epoch", 1);
        *comm = bkm_json_get_num(e, "comm_s", 0) / steps * 1e3;
        *comp = bkm_json_get_num(e, "compute_s", 0) / steps * 1e3;
        *share = bkm_json_get_num(bkm_json_get(e, "overlap"), "reduced_during_backward_share", 0);
    }
done:
    bkm_json_free(j);
    bkm_buf_free(&out);
    return rc;
}

int main(int argc, char **argv)
{
    long bytes = 4l << 20, limit = 12800;
    int reps = 20, runs = 3, bucket_kb = 32, rank = 0, size = 1, rc = 0, json = 0;
    const char *model = "cnn", *micro = "auto";
    bkm_err_t err;
    bkm_allreduce_bench_t b;
    char cpu[160];
    memset(&err, 0, sizeof err);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--bytes") == 0)
            bytes = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--runs") == 0)
            runs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--train-limit") == 0)
            limit = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--bucket-kb") == 0)
            bucket_kb = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--model") == 0)
            model = argv[i + 1];
        else if (strcmp(argv[i], "--micro") == 0)
            micro = argv[i + 1];
        else if (strcmp(argv[i], "--json") == 0)
            json = atoi(argv[i + 1]) != 0;
        else {
            fprintf(stderr, "bench_allreduce: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (bytes < 4 || reps < 1 || runs < 0 || runs > 50 || limit < 128) {
        fprintf(stderr, "bench_allreduce: --bytes >= 4, --reps >= 1, --runs 0..50, --train-limit >= 128\n");
        return 2;
    }
    if (bkm_train_mpi_init(&rank, &size, &err) < 0) {
        fprintf(stderr, "bench_allreduce: %s\n", err.msg);
        return 3;
    }
    cpu_name(cpu, sizeof cpu);
    if ((rc = bkm_allreduce_bench((size_t)bytes / sizeof(float), reps, &b, &err)) < 0)
        goto out;
    if (rank == 0 && !json) {
        printf("allreduce of %ld bytes, P=%d, %d interleaved rounds, %s\n", bytes, size, reps, cpu);
        printf("%-14s %9s %9s %9s %9s\n", "algorithm", "med ms", "min ms", "max ms", "GB/s");
        printf("%-14s %9.3f %9.3f %9.3f %9.3f\n", "MPI_Allreduce", b.mpi_ms[1], b.mpi_ms[0], b.mpi_ms[2], b.mpi_gbs);
        printf("%-14s %9.3f %9.3f %9.3f %9.3f\n", "ring", b.ring_ms[1], b.ring_ms[0], b.ring_ms[2], b.ring_gbs);
        printf("ring / MPI_Allreduce bandwidth: %.2f  (results %s)\n", b.ratio, b.exact ? "identical" : "DIFFER");
    }
    if (runs > 0) {
        double fc[50], oc[50], fp[50], op[50], sh[50], dummy;
        for (int r = 0; r < runs; r++)
            if ((rc = train_once("flat", model, limit, bucket_kb, micro, &fc[r], &fp[r], &dummy, &err)) < 0 ||
                (rc = train_once("overlap", model, limit, bucket_kb, micro, &oc[r], &op[r], &sh[r], &err)) < 0)
                goto out;
        if (rank == 0 && !json) {
            double hid[50], mf, mo, mh;
            for (int r = 0; r < runs; r++)
                hid[r] = fc[r] > 0 ? 1.0 - oc[r] / fc[r] : 0.0;
            printf("\ntraining %s, %ld images, P=%d, bucket %d KiB, micro %s, %d runs each, alternating (ms per "
                   "step, mean over ranks)\n",
                   model, limit, size, bucket_kb, micro, runs);
            for (int r = 0; r < runs; r++)
                printf("run %d: flat exposed comm %.3f  overlap exposed comm %.3f  hidden %.0f%%  overlap: %.0f%% of "
                       "the gradient bytes reduced before backward ended\n",
                       r + 1, fc[r], oc[r], 100.0 * hid[r], 100.0 * sh[r]);
            mh = median(hid, runs); /* sorts hid: [0] and [runs - 1] are the extremes */
            mf = median(fc, runs);
            mo = median(oc, runs);
            printf("flat:    exposed comm %.3f  compute %.3f (medians)\n", mf, median(fp, runs));
            printf("overlap: exposed comm %.3f  compute %.3f (medians)\n", mo, median(op, runs));
            printf("communication hidden by overlap: %.0f%% (1 - overlap / flat exposed comm, medians; per run: median "
                   "%.0f%%, %.0f%% .. %.0f%%); gradient bytes reduced during backward: median %.0f%%\n",
                   mf > 0 ? 100.0 * (1.0 - mo / mf) : 0.0, 100.0 * mh, 100.0 * hid[0], 100.0 * hid[runs - 1],
                   100.0 * median(sh, runs));
        }
        if (rank == 0 && json) {
            printf("{\"bench\": \"allreduce\", \"cpu\": \"%s\", \"ranks\": %d, \"bytes\": %ld, \"reps\": %d, "
                   "\"mpi_ms\": [%.6g, %.6g, %.6g], \"ring_ms\": [%.6g, %.6g, %.6g], \"ring_over_mpi\": %.6g, "
                   "\"exact\": %s, \"training\": {\"model\": \"%s\", \"images\": %ld, \"bucket_kb\": %d, "
                   "\"micro\": \"%s\", \"runs\": [",
                   cpu, size, bytes, reps, b.mpi_ms[0], b.mpi_ms[1], b.mpi_ms[2], b.ring_ms[0], b.ring_ms[1],
                   b.ring_ms[2], b.ratio, b.exact ? "true" : "false", model, limit, bucket_kb, micro);
            for (int r = 0; r < runs; r++)
                printf("%s{\"flat_exposed_comm_ms\": %.6g, \"overlap_exposed_comm_ms\": %.6g, \"hidden_share\": %.6g, "
                       "\"reduced_during_backward_share\": %.6g, \"flat_compute_ms\": %.6g, "
                       "\"overlap_compute_ms\": %.6g}",
                       r ? ", " : "", fc[r], oc[r], fc[r] > 0 ? 1.0 - oc[r] / fc[r] : 0.0, sh[r], fp[r], op[r]);
            printf("]}}\n");
        }
    } else if (rank == 0 && json)
        printf("{\"bench\": \"allreduce\", \"cpu\": \"%s\", \"ranks\": %d, \"bytes\": %ld, \"reps\": %d, "
               "\"mpi_ms\": [%.6g, %.6g, %.6g], \"ring_ms\": [%.6g, %.6g, %.6g], \"ring_over_mpi\": %.6g, \"exact\": %s}\n",
               cpu, size, bytes, reps, b.mpi_ms[0], b.mpi_ms[1], b.mpi_ms[2], b.ring_ms[0], b.ring_ms[1], b.ring_ms[2],
               b.ratio, b.exact ? "true" : "false");
out:
    if (rc < 0)
        fprintf(stderr, "bench_allreduce: [rank %d] %s\n", rank, err.msg);
    bkm_train_mpi_finalize();
    return rc < 0 ? 3 : 0;
}
