/* SPDX-License-Identifier: MIT */
/** @file bkm/net.h
 * Networks as data: a network is a table of layers (bkm_net_desc_t). bkm_net_init checks the table
 * once (shapes chain, sizes positive) and derives once every layer's input/output shape, parameter
 * count and offsets, and FLOPs per direction (docs/workloads.md §2). An executor runs one
 * training step of ANY such table (forward, softmax cross-entropy loss, backward, SGD update) on
 * one engine: native (this suite's kernels), oneDNN (primitives, blocked layouts between layers) or
 * the naive reference (double accumulation, the test oracle). Adding a network is adding a table.
 *
 * Parameters and gradients are owned in one place: the executor's flat user-layout arrays
 * (bkm_net_exec_params / bkm_net_exec_grads), layer i's weight at net->li[i].wei_off (conv OIHW, FC
 * OI with I in the C,H,W order of the flattened NCHW input) and bias at net->li[i].bias_off. The
 * native and reference engines compute on them directly; the oneDNN engine reorders them into its
 * layouts at prepare and back at finish.
 *
 * Sequence networks (desc t >= 1: LSTM stacks, dropout, the L1 loss) run one engine body
 * (net_seq.c) over the engine's LSTM kernels; parameters stay in the kernels' layout everywhere.
 *
 * Error convention: bkm/common.h. BKM_EINVAL names the layer and the value. Executors are used by
 * one thread at a time, outside any OpenMP parallel region; a step never allocates (except the
 * reference engine's LSTM, whose naive kernels allocate their scratch per call: the oracle only).
 */
#ifndef BKM_NET_H
#define BKM_NET_H

#include "bkm/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Layer kinds. */
typedef enum {
    BKM_NET_CONV = 1, /**< 2-D convolution + bias, square kernel k, stride s, padding p, no groups */
    BKM_NET_RELU,     /**< ReLU */
    BKM_NET_MAXPOOL,  /**< max pooling, square window k, stride s, padding p */
    BKM_NET_DROPOUT,  /**< element dropout with probability drop (bkm_net_layer_t.drop): in a training step each
                           element is zeroed or scaled by 1/(1-p), the mask drawn from the key and global
                           sample index bkm_net_exec_set_dropout gives; drop = 0 (eval mode) and forward-only
                           evaluation: the identity. drop > 0 runs on the native and reference engines */
    BKM_NET_FC,       /**< fully connected + bias, flattens its input (C,H,W order) */
    BKM_NET_LOSS,     /**< softmax + mean cross-entropy over the classes; last layer, after an FC */
    BKM_NET_CONV3D,   /**< 3-D convolution + bias (NCDHW, OIDHW), cubic kernel k, stride s, padding p */
    BKM_NET_MAXPOOL3D,/**< 3-D max pooling, cubic window k, stride s, padding p */
    BKM_NET_LOSS_BATCH,/**< log-softmax over the BATCH dimension, then the mean negative log-likelihood of
                           each sample's label (berkely.py's log_softmax(dim=0) quirk, docs/workloads.md §5);
                           last layer, after an FC */
    BKM_NET_LSTM,     /**< a stack of k unidirectional LSTM layers (bkm_kern_lstm_*), hidden size out, on a
                           sequence; its parameters are the kernel's flat array (Wx, Wh, b per layer in
                           turn, n_bias 0); initial states from bkm_net_exec_state (zero by default) */
    BKM_NET_LOSS_L1,  /**< mean |y - target| over every element of its input, the target from
                           bkm_net_exec_target (xhzhao LSTM.py's L1Loss, docs/workloads.md §6); last layer */
    BKM_NET_DROPOUT2D /**< dropout of whole channels (PyTorch Dropout2d); like BKM_NET_DROPOUT, the identity
                           when its probability drop is 0 and in forward-only evaluation */
} bkm_net_kind_t;

/** Name of a kind ("conv", "relu", "maxpool", "dropout", "fc", "loss"). */
const char *bkm_net_kind_name(bkm_net_kind_t kind);
/** 1 for the loss kinds. */
int bkm_net_kind_is_loss(bkm_net_kind_t kind);

/** One row of the table. */
typedef struct bkm_net_layer {
    bkm_net_kind_t kind;
    int64_t out;        /**< CONV / CONV3D: output channels; FC: output features; 0 otherwise */
    int64_t k, s, p;    /**< CONV / MAXPOOL (2-D and 3-D) window, stride, padding; 0 otherwise */
    char name[16];      /**< "conv1", "fc6", ... */
    float drop;         /**< DROPOUT / DROPOUT2D: probability of zeroing, in [0, 1); 0 otherwise */
} bkm_net_layer_t;

#define BKM_NET_MAX_LAYERS 32

/** The table: input shape, learning rate and layers. A plain value. */
typedef struct bkm_net_desc {
    int64_t mb, c, h, w;   /**< input batch and image (NCHW) */
    int64_t d;             /**< input depth: 0 = a 2-D input (NCHW), >= 1 a 3-D one (NCDHW) */
    float lr;              /**< SGD learning rate (no momentum, no weight decay); 0 = no update step
                                (the conv3d seed times forward + backward only) */
    int grad_input;        /**< 1: compute the gradient wrt the network input too (the first parameter
                                layer's bwd-data; single-layer benchmarks), 0: not (training) */
    int n_layers;
    bkm_net_layer_t layer[BKM_NET_MAX_LAYERS];
    int64_t t;             /**< 0: an image input as above; >= 1: a SEQUENCE input of t time steps, time-major
                                [t][mb][c] (the LSTM kernels' layout; d = 0, h = w = 1). A sequence flows
                                through LSTM and dropout layers into the L1 loss (its shape: c features,
                                h = t steps, nsp = 1) */
    int inference;         /**< 1: a step runs the forward and the loss only (no backward, no update);
                                sequence networks only (other networks: BKM_ENOTSUP at executor creation) */
} bkm_net_desc_t;

/** Append a layer to @p d (no check; bkm_net_init checks). Returns the layer or NULL when full. */
bkm_net_layer_t *bkm_net_desc_add(bkm_net_desc_t *d, bkm_net_kind_t kind, const char *name, int64_t out, int64_t k,
                                  int64_t s, int64_t p);
/** torchvision AlexNet (docs/workloads.md §3) at batch @p mb, 3x224x224 input, lr 0.01, ending in the
 *  loss layer. */
void bkm_net_desc_alexnet(bkm_net_desc_t *d, int64_t mb);
/** The NERSC conv3d seed network exactly (docs/workloads.md §5, berkely.py): input mb x 1 x 35x35x20,
 *  conv3d 1->64->64 (3^3), max pool 2, conv3d 64->128->128, max pool 2, FC 6400->512->512, loss
 *  over the batch dimension; no activations, no update step (lr 0). The seed's batch is 4. */
void bkm_net_desc_conv3d_seed(bkm_net_desc_t *d, int64_t mb);
/** The seed CNN of the MPI MNIST recipe (docs/workloads.md §7) at batch @p mb, 1x28x28 input: conv 1->10
 *  k5, max pool 2, ReLU, conv 10->20 k5, dropout2d, max pool 2, ReLU, FC 320->50, ReLU, dropout,
 *  FC 50->10, log-softmax + NLL (the loss layer: softmax cross-entropy is the same function);
 *  21,840 parameters; both dropouts with probability @p dropout (the seed's is 0.5; 0 = off); lr 0
 *  (the caller updates the parameters). */
void bkm_net_desc_mnist_cnn(bkm_net_desc_t *d, int64_t mb, float dropout);
/** MLP 784-256-10 with ReLU at batch @p mb, 1x28x28 input, ending in the loss layer; 203,530
 *  parameters; lr 0 (the caller updates the parameters). */
void bkm_net_desc_mnist_mlp(bkm_net_desc_t *d, int64_t mb);

/** The seed's LSTM benchmark (docs/workloads.md §6, xhzhao LSTM.py): a sequence input of @p t steps x
 *  @p n sentences x @p i features, one LSTM stack of @p layers layers with hidden size @p h, the L1
 *  loss; no update (lr 0); the data gradient of the input is computed (grad_input 1), as the
 *  kernels' training FLOPs (3 x forward) count it. @p inference: forward + loss only. */
void bkm_net_desc_lstm_seed(bkm_net_desc_t *d, int64_t n, int64_t t, int64_t i, int64_t h, int64_t layers,
                            int inference);

/** Directions of a layer, for FLOPs and timing. */
typedef enum { BKM_NET_FWD = 0, BKM_NET_BWD_D, BKM_NET_BWD_W, BKM_NET_UPD, BKM_NET_NDIR } bkm_net_dir_t;
/** "fwd", "bwd_d", "bwd_w", "update". */
const char *bkm_net_dir_name(bkm_net_dir_t dir);

/** A shape: channels (or features) and spatial size (d = 1 for 2-D); an FC output is c x 1 x 1 x 1
 *  with nsp = 0; nsp = number of spatial dimensions (2 NCHW, 3 NCDHW, 0 flat); nsp = 1: a sequence,
 *  c features x h time steps (d = w = 1), stored time-major [h][mb][c]. */
typedef struct bkm_net_shape { int64_t c, d, h, w; int nsp; } bkm_net_shape_t;

/** What bkm_net_init derives for one layer. */
typedef struct bkm_net_layer_info {
    bkm_net_shape_t in, out;
    int64_t n_wei, n_bias;        /**< parameter counts (0 for layers without parameters) */
    size_t wei_off, bias_off;     /**< offsets (floats) into the flat parameter / gradient arrays */
    int need_bwd;                 /**< a parameter layer is at or before this one: backward runs */
    int need_bwd_d;               /**< a parameter layer is strictly before: the input gradient is needed */
    double flops[BKM_NET_NDIR];   /**< per step; 0 for directions not run (an LSTM's whole backward
                                       through time, data and weight gradients, is one bwd_d call) */
} bkm_net_layer_info_t;

/** A checked network: the table plus everything derived from it. A plain value. */
typedef struct bkm_net {
    bkm_net_desc_t d;
    bkm_net_layer_info_t li[BKM_NET_MAX_LAYERS];
    size_t n_params;              /**< floats in the flat parameter array (with 64-byte alignment gaps) */
    int64_t n_trainable;          /**< weights + biases */
    int64_t classes;              /**< features entering the loss */
    size_t n_input;               /**< floats of the input (mb x c x d x h x w) */
    double flops_fwd;             /**< forward of the parameter layers */
    double flops_train;           /**< forward + backward (docs/workloads.md §2: 3 x fwd minus the first bwd-data) */
} bkm_net_t;

/** Engines: the backends of bkm/kernels.h (BKM_NET_X == BKM_BACKEND_X). */
typedef enum {
    BKM_NET_NATIVE = BKM_BACKEND_NATIVE,
    BKM_NET_ONEDNN = BKM_BACKEND_ONEDNN,
    BKM_NET_REF = BKM_BACKEND_REF
} bkm_net_engine_t;
/** "native", "onednn", "ref" (bkm_kern_backend_name; "?" for any other value). */
const char *bkm_net_engine_name(bkm_net_engine_t eng);

/** Check @p d and derive @p net. BKM_EINVAL naming the layer and value: non-positive sizes, a
 *  window larger than its padded input, a 2-D layer on a 3-D tensor or the reverse, a layer after the
 *  loss, a loss not after an FC layer, no loss layer, too many layers, a negative learning rate. */
int bkm_net_init(bkm_net_t *net, const bkm_net_desc_t *d, bkm_err_t *err);
/** Bytes the executor of @p net allocates on @p eng (an upper estimate; for memory checks). */
double bkm_net_bytes(const bkm_net_t *net, bkm_net_engine_t eng);

/** Times and loss of one step. Phases as the seed script splits them: fwd = the layers before
 *  the loss; bwd = the loss and the backward; update = SGD over every parameter. */
typedef struct bkm_net_step {
    double loss;
    double fwd_ms, bwd_ms, update_ms;
} bkm_net_step_t;

typedef struct bkm_net_exec bkm_net_exec_t;

/** Create the executor of @p net on @p eng: every buffer, primitive and workspace for the batch
 *  (untimed). Parameters, gradients and the input start at zero. @p kp: native conv2d tunables
 *  (NULL = defaults; ignored by the other engines). BKM_ENOTSUP / BKM_EDEP when the engine cannot
 *  build a layer (naming it), BKM_ENOMEM. */
int bkm_net_exec_create(bkm_net_exec_t **ex, const bkm_net_t *net, bkm_net_engine_t eng, const bkm_kern_params_t *kp,
                        bkm_err_t *err);
/** The checked network the executor runs (a copy it owns). */
const bkm_net_t *bkm_net_exec_net(const bkm_net_exec_t *ex);
/** User-layout input (NCHW) and labels (mb classes) the caller fills before prepare. */
float *bkm_net_exec_input(bkm_net_exec_t *ex, size_t *n);
int32_t *bkm_net_exec_labels(bkm_net_exec_t *ex, size_t *n);
/** The flat parameter array (see the file comment); fill before prepare, read after finish. */
float *bkm_net_exec_params(bkm_net_exec_t *ex, size_t *n);
/** The flat gradient array of the last step (same offsets); valid after finish. */
const float *bkm_net_exec_grads(const bkm_net_exec_t *ex, size_t *n);
/** Initial states of LSTM layer @p layer: [2][k][mb][H] floats, h0 then c0 (zero at creation; fill
 *  before the steps); NULL (and *n = 0) for any other layer. */
float *bkm_net_exec_state(bkm_net_exec_t *ex, int layer, size_t *n);
/** The L1 loss's target, as many floats as the loss input, in its layout (zero at creation); NULL
 *  (and *n = 0) when the loss is not the L1 loss. */
float *bkm_net_exec_target(bkm_net_exec_t *ex, size_t *n);
/** Untimed: check the labels (BKM_EINVAL naming the first outside [0, classes)) and bring the
 *  input and parameters into the engine's layouts. */
int bkm_net_exec_prepare(bkm_net_exec_t *ex, bkm_err_t *err);
/** TIMED: one training step. Never allocates. */
int bkm_net_exec_step(bkm_net_exec_t *ex, bkm_net_step_t *st, bkm_err_t *err);
/** Forward only (no loss, no backward, no update) of the current input with the current
 *  parameters, for evaluation; *logits = the mb x classes scores entering the loss, user layout,
 *  valid until the next call. Native and reference engines; BKM_ENOTSUP on oneDNN. */
int bkm_net_exec_forward(bkm_net_exec_t *ex, const float **logits, bkm_err_t *err);
/** Called by a step as soon as layer @p layer's parameter gradients are final in the flat gradient
 *  array (backward order, parameter layers only), so that a caller can start reducing them while
 *  backward continues (data-parallel training); @p ctx is the caller's. */
typedef void (*bkm_net_grad_hook_fn)(void *ctx, int layer);
/** Install (or with NULL remove) the gradient hook. Native and reference engines call it; the
 *  oneDNN engine does not (its gradients reach the flat array only at finish). */
void bkm_net_exec_set_grad_hook(bkm_net_exec_t *ex, bkm_net_grad_hook_fn fn, void *ctx);
/** The dropout masks of the following training steps: element (or channel) j of local sample n is
 *  kept unless a hash of (@p key, layer, (@p first_sample + n, j)) falls below drop, so that a sample
 *  gets the same mask whichever rank's slice of a global batch holds it. Set it before each step
 *  with a new key (the default key 0 and first sample 0 repeat the same masks). */
void bkm_net_exec_set_dropout(bkm_net_exec_t *ex, uint64_t key, int64_t first_sample);
/** Untimed: parameters and gradients back into the flat user-layout arrays. */
int bkm_net_exec_finish(bkm_net_exec_t *ex, bkm_err_t *err);
/** Per-layer timing on (1) or off (0, the default): when on, every step adds each layer's time per
 *  direction (a clock read per layer and direction) to the table bkm_net_exec_layer_ms reads. */
void bkm_net_exec_set_timing(bkm_net_exec_t *ex, int on);
/** Forget the per-layer times accumulated so far. */
void bkm_net_exec_reset_times(bkm_net_exec_t *ex);
/** Mean milliseconds of layer @p layer in direction @p dir over the timed steps since the last
 *  reset (0 when none ran or the layer has no such direction); *steps (may be NULL) = their number. */
double bkm_net_exec_layer_ms(const bkm_net_exec_t *ex, int layer, bkm_net_dir_t dir, long *steps);
/** Milliseconds of layer @p layer in direction @p dir in the last step (timing on; 0 otherwise). */
double bkm_net_exec_last_ms(const bkm_net_exec_t *ex, int layer, bkm_net_dir_t dir);
/** Implementations used ("native:im2col_gemm...+native:fc.sgemm", "onednn:jit:avx512_core+..."). */
const char *bkm_net_exec_impl(const bkm_net_exec_t *ex);
void bkm_net_exec_destroy(bkm_net_exec_t *ex);

#ifdef __cplusplus
}
#endif
#endif /* BKM_NET_H */
