/* SPDX-License-Identifier: MIT */
/* Private declarations shared inside kernels/ (never installed, never included outside it).
 *
 * The files of kernels/ call one another without a cycle (the CTest test kernels_dag checks the
 * built objects with nm). Bottom first; a file calls only files of its own group or of the groups
 * above it:
 *   base      isa.c (CPUID dispatch), params.c (--param sets), buffer.c (seeded fill and zeroing,
 *             op argument buffers)
 *   GEMM      gemm.c (the BLIS-style driver, its tunables and plan) over gemm_ukr_<isa>.c (the
 *             micro-kernels), gemm_edge_avx512.c (short row panels of 32-column panels) and
 *             gemm_dot_avx512.c (A * B^T with few rows); gemm_ref.c; peak*.c (FMA peak)
 *   kernels   im2col.c, conv2d_desc.c, conv2d.c (the native conv2d object) over conv2d_fast.c and
 *             conv2d_fast_avx512.c (algo 3); layers.c and layers_avx512.c (pooling, ReLU, FC,
 *             dropout, softmax cross-entropy, SGD); conv3d.c; lstm.c; their references
 *             conv2d_ref.c, layers_ref.c, conv3d_ref.c, lstm_ref.c; onednn.c (what the oneDNN
 *             files share, onednn_int.h) and lstm_onednn.c
 *   objects   what the backends run (backend_int.h): the ops op_native.c and onednn_op.c; the
 *             network tables net_desc.c, what the engines share net_common.c, and the engines
 *             net_native.c, net_onednn.c, net_ref.c (net_int.h)
 *   table     backend.c: the one table of backends, through which ops, LSTM stacks and network
 *             engines are created
 *   front     op.c (bkm_kern_op_*), net_seq.c (sequence networks over any backend's LSTM stacks),
 *             net.c (bkm_net_exec_*)
 * This header declares what the base, GEMM and kernels groups share. The *_avx2.c and *_avx512.c
 * files are the only ones compiled with vector ISA flags; their functions are called only after
 * run-time CPUID dispatch. */
#ifndef BKM_KERNELS_INT_H
#define BKM_KERNELS_INT_H

#include "bkm/kernels.h"

/* ---------------------------------------------------------------------------------------- */
/* Base: tunable sets and seeded buffers (params.c, buffer.c)                                 */

/* Value given for @p key in @p p (NULL: none), or @p def. */
int32_t bkm__kern_params_value(const bkm_kern_params_t *p, const char *key, int32_t def);

/* Deterministic fill with values in [-1, 1) from a counter-based hash of (seed, index); parallel
 * (first touch by the thread that later works on the same part under static schedules). */
void bkm__kern_fill_seeded(float *p, size_t n, uint64_t seed);
/* Zero n floats from the calling thread's OpenMP team under the static schedule of the compute's
 * loops over flat arrays (element i by the thread whose static chunk holds i): first touch puts
 * each page on the socket of the thread that later works on it, not all on the master's. */
void bkm__kern_zero_team(float *p, size_t n);
/* 64-bit counter-based mixer (splitmix64 finaliser) used by the fill and by dropout. */
uint64_t bkm__kern_hash64(uint64_t seed, uint64_t i);

/* ---------------------------------------------------------------------------------------- */
/* SGEMM (gemm.c, gemm_ukr_<isa>.c, gemm_edge_avx512.c, gemm_dot_avx512.c, peak*.c)           */

/* Largest register tile of any micro-kernel: bounds the driver's on-stack edge tile. */
#define BKM_GEMM_MR_MAX 16
#define BKM_GEMM_NR_MAX 64

/* C[MR x NR] = alpha * A_pack * B_pack + beta * C for one full register tile.
 * a: MR-row micro-panel, a[p*MR + i]; b: NR-column micro-panel, b[p*NR + j]; k >= 1.
 * c is row-major with leading dimension ldc. beta == 0 never reads C (it may hold NaN).
 * Edge tiles (m < MR or n < NR) are handled by the driver through a scratch tile. */
typedef void (*bkm_gemm_ukr_t)(int64_t k, const float *restrict a, const float *restrict b,
                               float *restrict c, int64_t ldc, float alpha, float beta);

/* A micro-kernel and the cache blocking that suits it. */
typedef struct bkm_gemm_ukr_desc {
    bkm_isa_t isa;
    int32_t mr, nr;
    int32_t mc_def, kc_def, nc_def;
    bkm_gemm_ukr_t fn;
    const char *name; /* "avx512_14x32" */
} bkm_gemm_ukr_desc_t;

/* Micro-kernel descriptors (static storage), one per ISA; defined in gemm_ukr_<isa>.c. */
extern const bkm_gemm_ukr_desc_t bkm__gemm_ukr_generic;
extern const bkm_gemm_ukr_desc_t bkm__gemm_ukr_avx2;
extern const bkm_gemm_ukr_desc_t bkm__gemm_ukr_avx512;
/* Defaults of @p isa with nt = 1, without calling OpenMP (bkm_kern_gemm_cfg_init adds nt). */
int bkm__kern_gemm_cfg_defaults(bkm_gemm_cfg_t *cfg, bkm_isa_t isa, bkm_err_t *err);
/* Resolve @p params against the tunables of cfg->isa, set them and check the whole cfg (nt as
 * already set): the one sequence that op creation and bkm_kern_gemm_params_check share. */
int bkm__kern_gemm_cfg_apply(bkm_gemm_cfg_t *cfg, const bkm_kern_params_t *params, bkm_err_t *err);
/* The fixed depth block of @p cfg: kc when given, else the micro-kernel's default (kc = 0 is auto:
 * bkm_kern_sgemm may go deeper, from the L2 size, for calls with several row blocks). */
int32_t bkm__kern_gemm_kc(const bkm_gemm_cfg_t *cfg);
/* C = alpha * A * B^T + beta * C, A m x k and B n x k row-major, read in place (no packing), in
 * passes of kc along k: the AVX-512 path of bkm_kern_sgemm for few rows (gemm_dot_avx512.c). */
#define BKM_GEMM_DOT_MR 4 /* rows of A per tile of the dot path (2 to 4; 3 x 8 and 2 x 8 measured no faster) */
#define BKM_GEMM_DOT_NR 6 /* rows of B per tile (<= 8) */
void bkm__gemm_dot_avx512(int64_t m, int64_t n, int64_t k, int64_t kc, float alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* AVX-512 edge kernel (gemm_edge_avx512.c), for 32-column B panels only: C[m x 32] = A * B + beta * C
 * for the first 1 <= m <= BKM_GEMM_EDGE_M rows of an A panel with lda floats per k step
 * (a[p * lda + i]); b[p * 32 + j]; row-major C (ldc); beta == 0 never reads C. The short last row
 * panel of the SGEMM driver and of the conv2d algo-3 driver. */
#define BKM_GEMM_EDGE_M 13
#define BKM_GEMM_EDGE_NR 32
void bkm__gemm_edge_avx512(int64_t m, int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                           float beta);

/* Peak-calibration FMA chains (peak*.c): run @p iters iterations of independent FMA chains and
 * return the number of floating-point operations executed (2 per lane per FMA). The result is
 * written through @p sink so that the compiler cannot remove the chains. */
double bkm__peak_chain_generic(int64_t iters, float *sink);
double bkm__peak_chain_avx2(int64_t iters, float *sink);
double bkm__peak_chain_avx512(int64_t iters, float *sink);

/* AVX-512 transposing pack (gemm_ukr_avx512.c), w <= 32:
 * d[p * w + i] = i < rows ? s[i * lds + p] : 0 for p < kb, i < w (16 x 16 register transposes). */
void bkm__pack_tr_avx512(const float *s, int64_t lds, int64_t rows, int64_t kb, float *d, int64_t w);

/* ---------------------------------------------------------------------------------------- */
/* conv2d (im2col.c, conv2d.c; algo 3: conv2d_fast.c, conv2d_fast_avx512.c)                   */

/* Column matrix of one image and one group for output pixels [p0, p0 + np): rows are
 * (c, r, s) for c in [c0, c1) of the group's channels (row index (c * kh + r) * kw + s, rows of
 * other channels untouched), columns are the pixels; col has leading dimension np.
 * src points at the group's first channel of the image; padded taps are 0. */
void bkm__kern_im2col(const bkm_conv2d_desc_t *d, const float *src, int64_t c0, int64_t c1, int64_t p0,
                      int64_t np, float *col);
/* The adjoint: diff_src[c][y][x] += every column entry that im2col would have read from it,
 * for channels [c0, c1) and pixels [p0, p0 + np). Callers own disjoint channel ranges. */
void bkm__kern_col2im(const bkm_conv2d_desc_t *d, const float *col, int64_t c0, int64_t c1, int64_t p0,
                      int64_t np, float *diff_src);

/* The native conv2d object's fused entries (conv2d.c): any algo (the fast one fuses, the others
 * run the separate pass after). fwd: dst = relu(conv + bias); bwd_data: diff_src = relu'(y) *
 * bwd_data(diff_dst), y the ReLU's output (the conv's input). Same arguments as the public ones. */
int bkm__kern_conv2d_fwd_relu(bkm_kern_conv2d_t *cv, const float *src, const float *wei, const float *bias,
                              float *dst, bkm_err_t *err);
int bkm__kern_conv2d_bwd_data_relu(bkm_kern_conv2d_t *cv, const float *diff_dst, const float *wei, const float *y,
                                   float *diff_src, bkm_err_t *err);

/* Workspace and geometry of the algo-3 path of one native conv2d object. */
typedef struct bkm_conv2d_fast bkm_conv2d_fast_t;

/* @p cfg: resolved GEMM config (isa picks bkm__gemm_ukr_<isa>; mr, nr, mc, kc are used);
 * @p nc > 0: columns per B block (fwd pixels, bwd_w K columns), 0 = about 1 MiB blocks;
 * @p ptile > 0: pixels per bwd_d column tile, 0 = about 1 MiB; @p nt threads. Allocates every
 * buffer (first-touched by the thread that uses it). BKM_ENOTSUP without a micro-kernel for
 * cfg->isa, BKM_ENOMEM. The descriptor must have been validated by the caller. */
int bkm__conv2d_fast_create(bkm_conv2d_fast_t **out, const bkm_conv2d_desc_t *d, const bkm_gemm_cfg_t *cfg,
                            int32_t nc, int32_t ptile, int nt, bkm_err_t *err);
void bkm__conv2d_fast_destroy(bkm_conv2d_fast_t *f);
/* The three directions (arguments non-NULL, user layouts NCHW / goihw; bias NULL = none).
 * They open their own parallel region of nt threads and never allocate. bwd_weights writes
 * diff_wei only (the caller computes diff_bias); its result does not depend on the threads. */
void bkm__conv2d_fast_fwd(bkm_conv2d_fast_t *f, const float *src, const float *wei, const float *bias, float *dst);
void bkm__conv2d_fast_bwd_data(bkm_conv2d_fast_t *f, const float *diff_dst, const float *wei, float *diff_src);
void bkm__conv2d_fast_bwd_weights(bkm_conv2d_fast_t *f, const float *src, const float *diff_dst, float *diff_wei);
/* "native:im2col_packed.<isa>_<mr>x<nr>" (+ ".phase_split_fwd" when the fwd takes that path) into buf. */
void bkm__conv2d_fast_name(const bkm_conv2d_fast_t *f, bkm_isa_t isa, char *buf, size_t size);
/* bwd_w B packing by window rows (conv2d_fast_avx512.c), 1 <= len <= 16: o[t * nr + l] = in[t * sw + l]
 * where 0 <= ix + t * sw + l < iw, else 0, for t < seg, l < len (in == NULL: all zeros). */
void bkm__conv2d_fast_rows_avx512(int64_t seg, int64_t len, const float *in, int64_t sw, int64_t ix, int64_t iw,
                                  float *o, int64_t nr);
/* A copy run of the fwd im2col packing (conv2d_fast.c): batch columns [jj, jj + len) of NR-column
 * panel q read consecutive input elements, sw apart, from off on (off < 0: padding, zeros). */
typedef struct bkm__fast_run {
    int64_t off;
    int32_t q, jj, len;
} bkm__fast_run_t;
/* One packed im2col row (conv2d_fast_avx512.c): every run into row + q * kb * nr + jj. */
void bkm__conv2d_fast_pack_row_avx512(const bkm__fast_run_t *r, int32_t n_runs, const float *base, int64_t sw,
                                      int64_t kb, int64_t nr, float *row);
/* Fusions. Activation of the fwd store's epilogue, applied once per tile after its
 * last depth block (after the bias): NONE, RELU (v > 0 ? v : 0), MASK (ReLU backward: mask > 0 ?
 * v : 0, mask in dst's layout), with the same operations, so the same bits, as the separate passes. */
enum { BKM_FAST_ACT_NONE = 0, BKM_FAST_ACT_RELU = 1, BKM_FAST_ACT_MASK = 2 };
/* bkm__conv2d_fast_fwd with the activation @p act in the store (mask: BKM_FAST_ACT_MASK only). */
void bkm__conv2d_fast_fwd_act(bkm_conv2d_fast_t *f, const float *src, const float *wei, const float *bias, int act,
                              const float *mask, float *dst);
/* bkm__conv2d_fast_bwd_data, then diff_src = mask > 0 ? diff_src : 0 (mask NULL: none): in the
 * store of the transposed path, else per thread over its images after their col2im. */
void bkm__conv2d_fast_bwd_data_mask(bkm_conv2d_fast_t *f, const float *diff_dst, const float *wei, const float *mask,
                                    float *diff_src);
/* AVX-512 epilogue (conv2d_fast_avx512.c): rows [0, m), columns [0, n) of c (ldc) += bias[i]
 * (NULL: none), then the activation; mask at c's offsets. */
void bkm__conv2d_fast_epi_avx512(float *c, int64_t ldc, int64_t m, int64_t n, const float *bias, int act,
                                 const float *mask);
/* Phase-split fwd (conv2d_fast.c), AVX-512: one tile C (ld 32, aligned, rows [0, m), m <= 14) = A * B
 * over k depth steps, row p of B at b + boff[p]. */
void bkm__conv2d_fast_s2d_tile_avx512(int64_t m, int64_t k, const float *a, int64_t lda, const float *b,
                                      const int32_t *boff, float *c);
/* The phase-split band of output rows [oy0, oy0 + nrow) of one image (img: its channel 0) into q:
 * slab (c, r, ph) at q + ((c * kh + r) * sw + ph) * slab, row oyb at + oyb * ws, column xx = input
 * column xx * sw + ph - pw of row (oy0 + oyb) * sh - ph_pad + r (0 outside the input). */
void bkm__conv2d_fast_s2d_band_avx512(const bkm_conv2d_desc_t *d, const float *img, int64_t oy0, int64_t nrow,
                                      int64_t ws, int64_t slab, float *q);
/* Columns [0, len) of an m-row tile with 32 floats per row into c (ldc) through the fwd epilogue
 * (bias NULL: none; mask at c's offsets): the store of the phase-split tile and of the fwd's
 * scratch tile. */
void bkm__conv2d_fast_store_avx512(const float *tile, int64_t m, int64_t len, float *c, int64_t ldc,
                                   const float *bias, int act, const float *mask);
/* bwd_d, stride 1 (conv2d_fast_avx512.c): out[x0 + t + s] += o[s * ld + t] for s < kw, t < len, inside [0, iw),
 * the taps of each output in the order s = 0, 1, ... (AVX-512). */
void bkm__conv2d_fast_col2im_row_avx512(const float *o, int64_t ld, int64_t kw, int64_t len, int64_t x0, int64_t iw,
                                        float *out);
/* ---------------------------------------------------------------------------------------- */
/* Direct convolution (dconv.c over dconv_avx512.c, dconv_avx2.c)                              */

#define BKM_DCONV_R_MAX 12    /* rows of the largest register tile */
#define BKM_DCONV_TAPS_MAX 64 /* widest kernel along one axis */
/* c[i][l] (+)= sum_{j < n} base[i][off[j]] * b[row[j] * lb + l] for rows i < r, lanes l < lb (the
 * descriptor's); acc = 0 starts from zero (c is only written). Rows of c are lb floats apart. */
typedef void (*bkm_dconv_ukr_t)(int64_t n, const float *const *base, const int32_t *off, const int32_t *row,
                                const float *b, float *c, int acc);
typedef struct bkm_dconv_ukr_desc {
    int32_t v, r, lb; /* vectors per row, rows, lanes per row of b and c */
    bkm_dconv_ukr_t fn;
    const char *name; /* "avx512_6x64" */
} bkm_dconv_ukr_desc_t;
/* By vectors: [v - 1] for v = 1..4 (AVX-512, 16 lanes a vector, 64 lanes a row; [4] is the 7-row
 * variant of v = 4) and v = 1..2 (AVX2, 8 lanes a vector, 16 a row). */
extern const bkm_dconv_ukr_desc_t bkm__dconv_ukr_avx512[5];
extern const bkm_dconv_ukr_desc_t bkm__dconv_ukr_avx2[2];
/* Tiles of all lanes with r rows, [r - 1]: r = 1..7 (AVX-512, 64 lanes), 1..6 (AVX2, 16 lanes). */
extern const bkm_dconv_ukr_desc_t bkm__dconv_tail_avx512[7];
extern const bkm_dconv_ukr_desc_t bkm__dconv_tail_avx2[6];
/* d[p * ldd + i] = s[i * lds + p] for i < rows (<= 64), p < np (AVX-512 16 x 16 transposes). */
void bkm__dconv_tr_avx512(const float *s, int64_t lds, int64_t rows, int64_t np, float *d, int64_t ldd);
/* y[l * ldy + o_k + j] = act(stage[(q_k + j) * 64 + l] + bias[l]) for the runs k < nruns of
 * (q_k, n_k, o_k) = runs[3k .. 3k + 2], j < n_k, lanes l < nl <= 64 (bias NULL: none; act
 * BKM_FAST_ACT_NONE or _RELU, as the scalar ReLU): 16 x 16 transposes into tbuf (64 x the pixels
 * rounded up to 16, aligned), then lane by lane in output order. */
void bkm__dconv_store_avx512(const float *stage, int64_t nq, int64_t nl, const int64_t *runs, int64_t nruns, float *y,
                             int64_t ldy, const float *bias, int act, float *tbuf);
/* Forward with pixels in the lanes for short reductions (unit strides, no padding), one output plane:
 * virtual pixels v < v_count (v = oy * iw + ox, ox < iw; ox >= ow never stored); koff[k] the input
 * offset of reduction entry k (c, t, r, s) from the plane's first element, k < K (<= 64); per 16-pixel
 * vector i the runs [run0[i], run0[i + 1]) of runs = (first lane, lanes, output offset) triples. */
typedef struct bkm_dconv_px {
    int64_t v, k, oc;
    const int32_t *koff, *run0, *runs;
} bkm_dconv_px_t;
/* y[o * ldy + ...] = act(conv + bias) for every output channel o of the plane (bias NULL: none); wp:
 * the weights in blocks of 8 channels, wp[(o0 + k) * 8 + i] = W[o0 + i][k] (rows past oc repeat the last). */
void bkm__dconv_px_fwd_avx512(const bkm_dconv_px_t *g, const float *x, const float *wp, const float *bias, int act,
                              float *y, int64_t ldy);
/* out[l] = sum over p < np of t[p * 64 + l], l < 64, in pixel order (AVX-512). */
void bkm__dconv_colsum_avx512(const float *t, int64_t np, float *out);

/* Blocking of a direct convolution (0 = auto): kc reduction channels per block of the gathers
 * (auto: one lane block's weights in half of L2), grp tiles per group of output pixels (16), pb
 * pixels per backward-weights block (auto: the transposed diff_dst block in a quarter of L2), r7 the
 * 7-row AVX-512 tile instead of 6 rows; l2 the L2 bytes (0: 1 MiB). */
typedef struct bkm_dconv_cfg {
    bkm_isa_t isa; /* resolved: BKM_ISA_AVX512 or BKM_ISA_AVX2 */
    int32_t kc, grp, pb, r7;
    int32_t no_px; /* never the pixel-lane forward (else: for at most 64 entries, unit strides, no padding) */
    size_t l2;
    int32_t pad;   /* BKM_DCONV_PAD_*: where a gather reads a zero-padded copy of its input */
} bkm_dconv_cfg_t;
/* The tunable dpad: 0 auto (backward-data from a padded copy when one image of diff_dst exceeds L2),
 * 1 no copies (classes of valid taps on every axis), 2 backward-data from a copy of diff_dst
 * zero-padded along x, 3 the forward from such a copy of src as well. */
enum { BKM_DCONV_PAD_AUTO = 0, BKM_DCONV_PAD_NONE = 1, BKM_DCONV_PAD_BWD_D = 2, BKM_DCONV_PAD_BOTH = 3 };
enum { BKM_DCONV_FWD = 1, BKM_DCONV_BWD_D = 2, BKM_DCONV_BWD_W = 4 };
typedef struct bkm_dconv bkm_dconv_t;
/* The directions @p dirs of @p d (checked by the caller) on @p nt threads. BKM_ENOTSUP for an ISA
 * without micro-kernels, a kernel over BKM_DCONV_TAPS_MAX taps or images beyond 32-bit offsets;
 * BKM_ENOMEM. */
int bkm__dconv_create(bkm_dconv_t **out, const bkm_conv3d_desc_t *d, const bkm_dconv_cfg_t *cfg, int dirs, int nt,
                      bkm_err_t *err);
void bkm__dconv_destroy(bkm_dconv_t *dc);
/* NCDHW / OIDHW; each opens its own parallel region of nt threads and never allocates. fwd: dst =
 * conv + bias (NULL: none), then act (BKM_FAST_ACT_NONE or _RELU); bwd_weights: diff_wei, and
 * diff_bias unless NULL (per pixel block in float, across blocks in double, in a fixed order). */
void bkm__dconv_fwd(bkm_dconv_t *dc, const float *src, const float *wei, const float *bias, int act, float *dst);
void bkm__dconv_bwd_data(bkm_dconv_t *dc, const float *diff_dst, const float *wei, float *diff_src);
void bkm__dconv_bwd_weights(bkm_dconv_t *dc, const float *src, const float *diff_dst, float *diff_wei,
                            float *diff_bias);
/* "direct.avx512_6x64" (+ ".px_fwd_8x48" for the pixel-lane forward; static storage of the object) */
const char *bkm__dconv_name(const bkm_dconv_t *dc);

/* ---------------------------------------------------------------------------------------- */
/* Pooling and ReLU (layers.c, layers_avx512.c)                                               */

/* AVX-512 max pooling of the interior output columns of one row (layers_avx512.c): nc outputs,
 * the first window's column x0, rows [ya, yb), kw taps per row, stride sw; int32 indices.
 * [pf, pf + npf) is prefetched (input the following rows read; inside the source tensor). */
void bkm__maxpool_row_avx512(const float *in, int64_t iw, int64_t ya, int64_t yb, int64_t kw, int64_t x0, int64_t sw,
                             int64_t nc, float *out, int32_t *am, const float *pf, int64_t npf);
/* AVX-512 3-D max pooling of the interior output columns of one output row (layers_avx512.c):
 * planes [za, zb) of plane floats, rows [ya, yb), nc outputs from column x0 at stride sw; the
 * offsets fit int32. */
void bkm__maxpool3d_row_avx512(const float *in, int64_t plane, int64_t za, int64_t zb, int64_t iw, int64_t ya,
                               int64_t yb, int64_t kw, int64_t x0, int64_t sw, int64_t nc, float *out, int32_t *am);

/* Max pooling of r = 2 or 4 output rows at once (layers_avx512.c): row q (< r) has its window rows
 * [y0 + q sh, y0 + q sh + kh) inside the input and nc <= 16 interior columns from column x0 at
 * stride sw; outputs and indices at out / am + q * ldo. Same bits as bkm__maxpool_row_avx512.
 * [pf, pf + npf) is prefetched (the rows the next call reads; inside the source tensor). */
void bkm__maxpool_rows_avx512(int64_t r, const float *in, int64_t iw, int64_t y0, int64_t sh, int64_t kh, int64_t kw,
                              int64_t x0, int64_t sw, int64_t nc, float *out, int64_t ldo, int32_t *am, const float *pf,
                              int64_t npf);
/* Max pooling with the ReLU before it (layers.c): fwd: dst = relu(maxpool(src)), which equals
 * maxpool(relu(src)) (argmax: a positive window maximum's first position, as over relu(src); a
 * window with no positive element gets a zero gradient either way); bwd: the pool's scatter of
 * diff_dst, each term kept only where src (the ReLU's input or output) at its argmax is > 0, or,
 * with dst non-NULL, where dst (the pool's output as the forward left it, or any sign-preserving
 * in-place change of it) is > 0: the same test, read in order from a tensor a quarter the size. */
void bkm__kern_maxpool_relu_fwd(const bkm_pool_desc_t *d, const float *src, float *dst, int32_t *argmax);
void bkm__kern_maxpool_relu_bwd(const bkm_pool_desc_t *d, const float *diff_dst, const int32_t *argmax,
                                const float *src, const float *dst, float *diff_src);

/* ---------------------------------------------------------------------------------------- */
/* conv3d (conv3d.c)                                                                          */

/* Part @p t of an even @p nt-way split of vol2col's / col2vol's flat range: what thread t of a
 * team of nt runs inside bkm_kern_vol2col / bkm_kern_col2vol (tests call it without a team). */
void bkm__kern_vol2col_part(const bkm_conv3d_desc_t *d, const float *src, float *col, int nt, int t);
void bkm__kern_col2vol_part(const bkm_conv3d_desc_t *d, const float *col, float *src, int nt, int t);

#endif /* BKM_KERNELS_INT_H */
