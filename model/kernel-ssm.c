/* model/kernel-ssm.c — FLOPs and bytes of the state-space / linear-attention kernels
 * (model/kernel-ssm.h), priced by the generic roofline. */
#include "kernel-ssm.h"

#include <math.h>

/* Launches of each implementation, beyond the first, each paying the elementwise fixed time:
 * vLLM's mamba_chunk_scan_combined runs _chunk_cumsum, _chunk_state, _state_passing,
 * _bmm_chunk and _chunk_scan (layers/mamba/ops/ssd_combined.py); FLA's chunk_gated_delta_rule
 * runs chunk_local_cumsum, chunk_scaled_dot_kkt, solve_tril, recompute_w_u, chunk_h and chunk_o
 * (layers/fla/ops/chunk.py). */
#define SSD_KERNELS 5.0
#define GDN_CHUNK_KERNELS 6.0

static double extra_launches_ns(const NetHardware *hw, double kernels)
{
    ModelKernelTime one = model_elementwise_time(hw, 0, 0);
    return kernels > 1 ? (kernels - 1) * one.ns : 0;
}

static void add(ModelKernelTime *acc, const ModelKernelTime *k)
{
    acc->ns += k->ns;
    acc->flops += k->flops;
    acc->bytes += k->bytes;
    if (k->bound && (!acc->bound || k->ns > acc->ns - k->ns))
        acc->bound = k->bound;
}

ModelKernelTime model_ssm_conv_time(const NetHardware *hw, const ModelSsmShape *s,
                                    const ModelSsmBatch *b)
{
    double flops = 2.0 * b->tokens * s->conv_dim * s->conv_kernel;
    double bytes = 2.0 * b->tokens * s->conv_dim * s->act_bytes +
                   s->conv_dim * s->conv_kernel * s->act_bytes +
                   2.0 * b->seqs * (s->conv_kernel - 1) * s->conv_dim * s->act_bytes;
    return model_elementwise_time(hw, bytes, flops);
}

/* SSD per chunk of Q tokens, per head (head dim P, state N): the intra-chunk C B^T (Q^2 N per
 * group, half by causality) applied to X (Q^2 P / 2), the chunk's state B^T X (Q N P) and the
 * output from the entering state C h (Q N P): 2 FLOPs a multiply-add. Bytes: x, z-free y, B,
 * C, dt in and y out per row; a P x N state per head and chunk written and read back in fp32;
 * each sequence's initial and final state. */
static ModelKernelTime ssd_prefill(const NetHardware *hw, const ModelSsmShape *s, double rows,
                                   double seqs)
{
    double Q = s->chunk, P = s->head_dim, N = s->state, H = s->heads, G = s->groups;
    double flops = 2.0 * rows * (H * (Q * P / 2.0 + 2.0 * N * P) + G * Q * N / 2.0);
    double chunks = ceil(rows / Q) + seqs;
    double bytes = rows * (2.0 * H * P + 2.0 * G * N + H) * s->act_bytes +
                   2.0 * chunks * H * P * N * 4.0 + 2.0 * seqs * H * P * N * s->state_bytes;
    ModelKernelTime k = model_generic_time(hw, flops, bytes, NET_PEAK_BF16);
    k.ns += extra_launches_ns(hw, SSD_KERNELS);
    return k;
}

/* selective_state_update: each decoding row reads and writes its sequence's H x P x N state
 * (speculative rows each keep their own state: num_speculative_blocks) and does about 3
 * multiply-adds per state element (decay, B x input, C readout). */
static ModelKernelTime state_update(const NetHardware *hw, const ModelSsmShape *s, double seqs,
                                    double rows)
{
    double elems = rows * s->heads * s->head_dim * s->state;
    double flops = 6.0 * elems;
    (void)seqs;
    double bytes = 2.0 * elems * s->state_bytes +
                   rows * (2.0 * s->heads * s->head_dim + 2.0 * s->groups * s->state) *
                       s->act_bytes;
    /* bandwidth-bound: the peak hardly matters (fp32 math on CUDA cores, priced at bf16's) */
    return model_generic_time(hw, flops, bytes, NET_PEAK_BF16);
}

ModelKernelTime model_ssm_scan_time(const NetHardware *hw, const ModelSsmShape *s,
                                    const ModelSsmBatch *b)
{
    ModelKernelTime sum = {0};
    double pre_rows = b->tokens - b->decode_rows, pre_seqs = b->seqs - b->decode_seqs;
    if (pre_rows > 0) {
        ModelKernelTime k = ssd_prefill(hw, s, pre_rows, pre_seqs);
        add(&sum, &k);
    }
    if (b->decode_seqs > 0) {
        ModelKernelTime k = state_update(hw, s, b->decode_seqs, b->decode_rows);
        add(&sum, &k);
    }
    if (sum.ns == 0)
        sum = model_elementwise_time(hw, 0, 0);
    return sum;
}

/* Chunked gated delta rule per chunk of C tokens (C = 64 in FLA), per value head (Dk keys, Dv
 * values): K K^T inside the chunk (C^2 Dk / 2) and its triangular inverse (C^3 / 3 per chunk),
 * W = A K and U = A V (C^2 (Dk + Dv) / 2), the state pass U - W S and S += K^T U (2 C Dk Dv),
 * the output Q S and the intra-chunk Q K^T V (C Dk Dv + C^2 (Dk + Dv) / 2). Bytes: q, k, v, g,
 * beta in, o out per row; a Dk x Dv fp32 state per head and chunk written and read back; each
 * sequence's initial and final state. */
static ModelKernelTime gdn_prefill(const NetHardware *hw, const ModelSsmShape *s, double rows,
                                   double seqs)
{
    double C = s->chunk, Dk = s->state, Dv = s->head_dim, H = s->heads, Hk = s->groups;
    double per_row = C * Dk / 2.0 + C * C / 3.0 + C * (Dk + Dv) + 3.0 * Dk * Dv;
    double flops = 2.0 * rows * H * per_row;
    double chunks = ceil(rows / C) + seqs;
    double bytes = rows * (2.0 * Hk * Dk + 2.0 * H * Dv + 2.0 * H) * s->act_bytes +
                   2.0 * chunks * H * Dk * Dv * 4.0 + 2.0 * seqs * H * Dk * Dv * s->state_bytes;
    ModelKernelTime k = model_generic_time(hw, flops, bytes, NET_PEAK_BF16);
    k.ns += extra_launches_ns(hw, GDN_CHUNK_KERNELS);
    return k;
}

/* fused_recurrent_gated_delta_rule: per decoding sequence and value head, the Dk x Dv state read
 * once and written per row (speculative rows keep theirs); decay, the delta (S^T k), the
 * rank-one update and the readout (S^T q) per row: about 4 multiply-adds per state element. */
static ModelKernelTime gdn_recurrent(const NetHardware *hw, const ModelSsmShape *s, double seqs,
                                     double rows)
{
    double state = s->heads * s->state * s->head_dim;
    double elems = rows * state;
    double bytes = (seqs + rows) * state * s->state_bytes +
                   rows * (2.0 * s->groups * s->state + 2.0 * s->heads * s->head_dim) *
                       s->act_bytes;
    return model_generic_time(hw, 8.0 * elems, bytes, NET_PEAK_BF16); /* bandwidth-bound */
}

ModelKernelTime model_gdn_scan_time(const NetHardware *hw, const ModelSsmShape *s,
                                    const ModelSsmBatch *b)
{
    ModelKernelTime sum = {0};
    double pre_rows = b->tokens - b->decode_rows, pre_seqs = b->seqs - b->decode_seqs;
    if (pre_rows > 0) {
        ModelKernelTime k = gdn_prefill(hw, s, pre_rows, pre_seqs);
        add(&sum, &k);
    }
    if (b->decode_seqs > 0) {
        ModelKernelTime k = gdn_recurrent(hw, s, b->decode_seqs, b->decode_rows);
        add(&sum, &k);
    }
    if (sum.ns == 0)
        sum = model_elementwise_time(hw, 0, 0);
    return sum;
}

ModelKernelTime model_ssm_gated_norm_time(const NetHardware *hw, double rows, double width,
                                          double act_bytes)
{
    return model_elementwise_time(hw, 3.0 * rows * width * act_bytes, 8.0 * rows * width);
}
