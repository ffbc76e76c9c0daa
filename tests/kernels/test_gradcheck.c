/* SPDX-License-Identifier: MIT */
/* Finite-difference gradient check of a small CNN built from the native layers:
 * conv2d(+bias) -> ReLU -> maxpool 3x3/2 -> FC(+bias) -> softmax + cross-entropy.
 * The analytic gradients of every conv weight and bias, every FC weight and bias and every input
 * element (backward chain of the same layers) are compared with central differences of the loss. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bkm_check.h"
#include "bkm/kernels.h"
#include "kern_test.h"

#define MB 2
#define NCLS 4

typedef struct {
    bkm_conv2d_desc_t cd;
    bkm_pool_desc_t pd;
    bkm_fc_desc_t fd;
    bkm_kern_conv2d_t *conv;
    bkm_kern_fc_t *fc;
    size_t n_x, n_c, n_p, n_wc, n_wf;
    float *x, *wc, *bc, *wf, *bf;        /* input and parameters */
    float *c, *p, *logits, *prob;        /* activations (c is conv output after in-place ReLU) */
    int32_t *am, labels[MB];
    float *dx, *dwc, *dbc, *dwf, *dbf;   /* analytic gradients */
    float *dc, *dp, *dlogits;
} net_t;

static void net_init(net_t *n)
{
    bkm_err_t err = {0};
    memset(n, 0, sizeof(*n));
    ck_assert_int_eq(bkm_kern_conv2d_desc_parse("mb2ic2ih9iw8oc3kh3kw2ph1pw1", 0, &n->cd, &err), BKM_OK);
    ck_assert_msg(bkm_kern_conv2d_create(&n->conv, &n->cd, NULL, &err) == BKM_OK, "%s", err.msg);
    ck_assert_int_eq(bkm_kern_pool_desc_init(&n->pd, MB, n->cd.oc, n->cd.oh, n->cd.ow, 3, 2, 0, &err), BKM_OK);
    n->fd.mb = MB;
    n->fd.in = n->pd.c * n->pd.oh * n->pd.ow;
    n->fd.out = NCLS;
    n->fd.has_bias = 1;
    ck_assert_msg(bkm_kern_fc_create(&n->fc, &n->fd, NULL, &err) == BKM_OK, "%s", err.msg);
    n->n_x = (size_t)(MB * n->cd.ic * n->cd.ih * n->cd.iw);
    n->n_c = (size_t)(MB * n->cd.oc * n->cd.oh * n->cd.ow);
    n->n_p = (size_t)(MB * n->fd.in);
    n->n_wc = (size_t)(n->cd.oc * n->cd.ic * n->cd.kh * n->cd.kw);
    n->n_wf = (size_t)(n->fd.out * n->fd.in);
    n->x = rnd_nr(n->n_x, 1, 1.0f);
    n->wc = rnd_nr(n->n_wc, 2, 0.5f);
    n->bc = rnd_nr((size_t)n->cd.oc, 3, 0.2f);
    n->wf = rnd_nr(n->n_wf, 4, 0.5f);
    n->bf = rnd_nr(NCLS, 5, 0.2f);
    n->c = malloc(n->n_c * 4), n->dc = malloc(n->n_c * 4);
    n->p = malloc(n->n_p * 4), n->dp = malloc(n->n_p * 4);
    n->am = malloc(n->n_p * sizeof(int32_t));
    n->logits = malloc(MB * NCLS * 4), n->prob = malloc(MB * NCLS * 4), n->dlogits = malloc(MB * NCLS * 4);
    n->dx = malloc(n->n_x * 4), n->dwc = malloc(n->n_wc * 4), n->dbc = malloc((size_t)n->cd.oc * 4);
    n->dwf = malloc(n->n_wf * 4), n->dbf = malloc(NCLS * 4);
    n->labels[0] = 1;
    n->labels[1] = 3;
}

static void net_free(net_t *n)
{
    bkm_kern_conv2d_destroy(n->conv);
    bkm_kern_fc_destroy(n->fc);
    free(n->x), free(n->wc), free(n->bc), free(n->wf), free(n->bf), free(n->c), free(n->dc), free(n->p);
    free(n->dp), free(n->am), free(n->logits), free(n->prob), free(n->dlogits), free(n->dx), free(n->dwc);
    free(n->dbc), free(n->dwf), free(n->dbf);
}

static double net_forward(net_t *n)
{
    bkm_err_t err = {0};
    double loss = 0.0;
    ck_assert_int_eq(bkm_kern_conv2d_fwd(n->conv, n->x, n->wc, n->bc, n->c, &err), BKM_OK);
    bkm_kern_relu_fwd(n->n_c, n->c, n->c);
    bkm_kern_maxpool_fwd(&n->pd, n->c, n->p, n->am);
    ck_assert_int_eq(bkm_kern_fc_fwd(n->fc, n->p, n->wf, n->bf, n->logits, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_softmax_xent_fwd(MB, NCLS, n->logits, n->labels, n->prob, &loss, &err), BKM_OK);
    return loss;
}

static void net_backward(net_t *n)
{
    bkm_err_t err = {0};
    ck_assert_int_eq(bkm_kern_softmax_xent_bwd(MB, NCLS, n->prob, n->labels, n->dlogits, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_fc_bwd_weights(n->fc, n->p, n->dlogits, n->dwf, n->dbf, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_fc_bwd_data(n->fc, n->dlogits, n->wf, n->dp, &err), BKM_OK);
    bkm_kern_maxpool_bwd(&n->pd, n->dp, n->am, n->dc);
    bkm_kern_relu_bwd(n->n_c, n->c, n->dc, n->dc);
    ck_assert_int_eq(bkm_kern_conv2d_bwd_weights(n->conv, n->x, n->dc, n->dwc, n->dbc, &err), BKM_OK);
    ck_assert_int_eq(bkm_kern_conv2d_bwd_data(n->conv, n->dc, n->wc, n->dx, &err), BKM_OK);
}

/* Central differences of the loss in every element of @p v (length @p len) against @p grad.
 * A step that moves a ReLU input or a pooling winner across its kink makes the numeric value
 * wrong, not the analytic one: at most one such element per tensor is tolerated. */
static void check_tensor(net_t *n, const char *what, float *v, const float *grad, size_t len)
{
    const float h = 2e-3f;
    int bad = 0;
    char first[256] = "";
    for (size_t i = 0; i < len; i++) {
        const float keep = v[i];
        double lp, lm, num, ana = grad[i];
        v[i] = keep + h;
        lp = net_forward(n);
        v[i] = keep - h;
        lm = net_forward(n);
        v[i] = keep;
        /* The step actually applied in fp32, not the nominal one. */
        num = (lp - lm) / ((double)(keep + h) - (double)(keep - h));
        if (fabs(num - ana) > 1e-2 * fmax(fabs(num), fabs(ana)) + 2e-4) {
            if (bad++ == 0)
                snprintf(first, sizeof first, "%s[%zu]: analytic %.6g, numeric %.6g", what, i, ana, num);
        }
    }
    ck_assert_msg(bad <= 1, "%d of %zu gradients of %s disagree; first %s", bad, len, what, first);
}

START_TEST(cnn_gradients_match_central_differences)
{
    net_t n;
    double loss;
    net_init(&n);
    loss = net_forward(&n);
    ck_assert(loss > 0.0 && isfinite(loss));
    net_backward(&n);
    {
        /* The analytic gradients are kept: net_forward in the checks overwrites activations only. */
        float *dx = malloc(n.n_x * 4), *dwc = malloc(n.n_wc * 4), *dwf = malloc(n.n_wf * 4);
        float dbc[8], dbf[NCLS];
        memcpy(dx, n.dx, n.n_x * 4);
        memcpy(dwc, n.dwc, n.n_wc * 4);
        memcpy(dwf, n.dwf, n.n_wf * 4);
        memcpy(dbc, n.dbc, (size_t)n.cd.oc * 4);
        memcpy(dbf, n.dbf, NCLS * 4);
        check_tensor(&n, "conv weights", n.wc, dwc, n.n_wc);
        check_tensor(&n, "conv bias", n.bc, dbc, (size_t)n.cd.oc);
        check_tensor(&n, "fc weights", n.wf, dwf, n.n_wf);
        check_tensor(&n, "fc bias", n.bf, dbf, NCLS);
        check_tensor(&n, "input", n.x, dx, n.n_x);
        free(dx), free(dwc), free(dwf);
    }
    net_free(&n);
}
END_TEST

static Suite *gradcheck_suite(void)
{
    Suite *s = suite_create("gradcheck");
    TCase *tc = tcase_create("cnn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, cnn_gradients_match_central_differences);
    suite_add_tcase(s, tc);
    return s;
}

BKM_CHECK_MAIN(gradcheck_suite)
