/* model/kernel-ssm.h — the kernels of state-space and linear-attention mixers as vLLM runs
 * them: the causal depthwise convolution, Mamba-2's chunked SSD scan (prefill) and selective
 * state update (decode), Gated DeltaNet's chunked delta rule (prefill) and fused recurrent
 * update (decode), and the gated RMSNorm both end with.
 *
 * Each is FLOPs and HBM bytes from the algorithm (sources per function and in
 * doc/cost-model.md, "State-space and linear-attention kernels") priced by the generic
 * roofline of model/kernel.h, plus the elementwise fixed time per extra kernel launch the
 * implementation makes. Shapes are per rank (heads already divided by TP). Pure functions; no
 * state, no allocation. APPROXIMATION: no kernel of this family has been measured against
 * ranksim yet; the chunked kernels' tensor-core share is taken at the generic 0.7 of peak.
 */
#ifndef MODEL_KERNEL_SSM_H
#define MODEL_KERNEL_SSM_H

#include <stdint.h>

#include "../net/hardware.h"
#include "kernel.h"

/* One step's sequences as a mixer sees them: `tokens` rows in `seqs` sequences, of which
 * `decode_seqs` decode (`decode_rows` rows: one each, 1 + k with speculative decoding); the
 * rest prefill. */
typedef struct {
    double tokens;
    double seqs;
    double decode_seqs;
    double decode_rows;
} ModelSsmBatch;

/* Mamba-2 / GDN sizes on one rank. */
typedef struct {
    double heads;      /* Mamba-2 heads, or GDN value heads, on this rank */
    double head_dim;   /* Mamba-2 head_dim P, or GDN value head dim Dv */
    double state;      /* Mamba-2 d_state N, or GDN key head dim Dk */
    double groups;     /* Mamba-2 B/C groups, or GDN key heads, on this rank */
    double conv_dim;   /* channels of the causal conv on this rank */
    double conv_kernel;
    double chunk;      /* tokens per chunk of the chunked prefill kernel */
    double act_bytes;  /* activations (bf16: 2) */
    double state_bytes; /* the recurrent state's element size (fp32: 4) */
} ModelSsmShape;

/* causal_conv1d_fn over prefill rows, causal_conv1d_update over decode rows (one op):
 * 2 x K FLOPs per channel per row; the rows read and written, the weights, and each
 * sequence's (K - 1) x conv_dim state read and written. */
ModelKernelTime model_ssm_conv_time(const NetHardware *hw, const ModelSsmShape *s,
                                    const ModelSsmBatch *b);

/* Mamba-2's mamba_chunk_scan_combined over the prefill rows (Dao & Gu 2024, "Transformers are
 * SSMs", SSD algorithm; vLLM layers/mamba/ops/ssd_*.py: five kernels) plus
 * selective_state_update over the decode rows; 0-time when the step has no rows. */
ModelKernelTime model_ssm_scan_time(const NetHardware *hw, const ModelSsmShape *s,
                                    const ModelSsmBatch *b);

/* Gated DeltaNet: FLA's chunk_gated_delta_rule over the prefill rows (Yang et al. 2024, "Gated
 * Delta Networks"; vllm/model_executor/layers/fla/ops/chunk.py: the WY representation, the
 * chunk states, the output — six kernels) and fused_recurrent_gated_delta_rule over the decode
 * rows. */
ModelKernelTime model_gdn_scan_time(const NetHardware *hw, const ModelSsmShape *s,
                                    const ModelSsmBatch *b);

/* RMSNormGated over `rows` x `width` (norm(y) x silu(z)): reads y and z, writes the output. */
ModelKernelTime model_ssm_gated_norm_time(const NetHardware *hw, double rows, double width,
                                          double act_bytes);

#endif
