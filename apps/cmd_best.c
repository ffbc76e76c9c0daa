/* SPDX-License-Identifier: MIT */
/* `tune best`: the stored best-known setting of a node and workload, with its evidence. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm/results.h"
#include "bkm/tuner.h"
#include "cli_common.h"

const char bkm_cli_best_summary[] = "show the best-known setting of a node and workload, with its evidence";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tune best --node NODE --workload WL [--db PATH] [--json]\n\n"
            "Shows the newest best-known setting stored for NODE and WL by a sweep, with its evidence:\n"
            "the median time and its 95%% confidence interval, the default setting's median, the speedup\n"
            "over the default, and whether the win is significant (beyond the noise: ratio, Mann-Whitney\n"
            "test and separated confidence intervals). When it is not significant, keep the default.\n"
            "The database is opened read-only: nothing is modified or created next to it.\n\n"
            "options:\n"
            "  --node NODE     node profile (knl, haswell, auto, ...)\n"
            "  --workload WL   workload (gemm, conv2d, alexnet, ...)\n"
            "  --db PATH       results database (default: $BKM_DB, else %s)\n"
            "  --json          print {\"config\": {...}, \"median_ms\": ..., \"ci95\": [lo, hi],\n"
            "                  \"speedup_vs_default\": ..., \"significant\": true|false, ...}\n"
            "  -h, --help      this help\n\n"
            "example:\n"
            "  tune best --node knl --workload alexnet --json\n\n"
            "exit codes: 0 found, 1 no best-known setting stored for NODE/WL, 2 bad usage,\n"
            "            3 the database is missing, not a bkm database or damaged\n",
            BKM_DB_DEFAULT_PATH);
}

static void print_json(const bkm_db_best_t *b)
{
    bkm_buf_t out;
    bkm_json_w_t w;
    bkm_buf_init(&out);
    bkm_json_w_init(&w, &out, 1);
    bkm_json_obj_begin(&w);
    bkm_json_key(&w, "node");
    bkm_json_str(&w, b->node);
    bkm_json_key(&w, "workload");
    bkm_json_str(&w, b->workload);
    bkm_json_key(&w, "config");
    bkm_json_raw(&w, b->config_json); /* canonical JSON object, checked when stored */
    bkm_json_key(&w, "median_ms");
    bkm_json_double(&w, b->median_ms);
    bkm_json_key(&w, "ci95");
    bkm_json_arr_begin(&w);
    bkm_json_double(&w, b->ci_lo_ms);
    bkm_json_double(&w, b->ci_hi_ms);
    bkm_json_arr_end(&w);
    bkm_json_key(&w, "default_median_ms");
    bkm_json_double(&w, b->default_median_ms);
    bkm_json_key(&w, "speedup_vs_default");
    bkm_json_double(&w, b->speedup);
    bkm_json_key(&w, "significant");
    bkm_json_bool(&w, b->significant);
    bkm_json_key(&w, "sweep");
    bkm_json_str(&w, b->sweep_uuid);
    bkm_json_key(&w, "created_at");
    bkm_json_str(&w, b->created_at);
    bkm_json_key(&w, "evidence");
    if (b->evidence_json)
        bkm_json_raw(&w, b->evidence_json);
    else
        bkm_json_null(&w);
    bkm_json_obj_end(&w);
    printf("%s\n", bkm_buf_str(&out));
    bkm_buf_free(&out);
}

static void print_text(const bkm_db_best_t *b)
{
    printf("best-known setting for node %s, workload %s (stored %s, sweep %s)\n", b->node, b->workload,
           b->created_at ? b->created_at : "?", b->sweep_uuid ? b->sweep_uuid : "?");
    printf("  config:  %s\n", b->config_json);
    printf("  median:  %.4g ms, 95%% CI [%.4g, %.4g] ms\n", b->median_ms, b->ci_lo_ms, b->ci_hi_ms);
    if (isfinite(b->default_median_ms))
        printf("  default: %.4g ms, speedup %.3fx\n", b->default_median_ms, b->speedup);
    printf("  %s\n", b->significant ? "significant: beats the default beyond the noise"
                                    : "not significant: the default setting stands");
}

int bkm_cli_best(int argc, char **argv)
{
    const char *db_path = NULL, *node = NULL, *workload = NULL;
    const char **slot;
    char node_name[64];
    int json = 0, found = 0, ret;
    bkm_db_t *db = NULL;
    bkm_db_best_t b;
    bkm_err_t err = {0};
    for (int i = 1; i < argc; i++) {
        slot = NULL;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            continue;
        } else if (strcmp(argv[i], "--node") == 0) {
            slot = &node;
        } else if (strcmp(argv[i], "--workload") == 0) {
            slot = &workload;
        } else if (strcmp(argv[i], "--db") == 0) {
            slot = &db_path;
        }
        if (slot == NULL || i + 1 >= argc || argv[i + 1][0] == '\0') {
            fprintf(stderr, "tune best: %s '%s' (see tune best --help)\n",
                    slot ? "missing value after" : "unknown option", argv[i]);
            return 2;
        }
        *slot = argv[++i];
    }
    if (node == NULL || workload == NULL) {
        fprintf(stderr, "tune best: --node and --workload are required (see tune best --help)\n");
        return 2;
    }
    /* auto: this host's name, as the sweep stored it */
    if ((ret = bkm_tune_node_resolve(node, node_name, sizeof node_name, &err)) < 0) {
        fprintf(stderr, "tune best: --node: %s\n", err.msg);
        return bkm_status_exit_code(ret);
    }
    node = node_name;
    db_path = bkm_cli_db_path(db_path);
    if (!bkm_cli_db_check("best", db_path))
        return 2;
    if ((ret = bkm_db_open(&db, db_path, BKM_DB_READONLY, &err)) == BKM_OK)
        ret = bkm_db_best_get(db, node, workload, &b, &found, &err);
    bkm_db_close(db);
    if (ret < 0) {
        fprintf(stderr, "tune best: %s\n", err.msg);
        return bkm_status_exit_code(ret);
    }
    if (!found) {
        fprintf(stderr, "tune best: no best-known setting stored for node '%s', workload '%s' in %s "
                "(run `tune --node %s --workload %s` first)\n", node, workload, db_path, node, workload);
        return 1;
    }
    if (json)
        print_json(&b);
    else
        print_text(&b);
    bkm_db_best_clear(&b);
    return 0;
}
