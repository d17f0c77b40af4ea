/* model/lower-hybrid.h — the ops of a Mamba-2 or Gated DeltaNet mixer on one rank, as vLLM
 * runs them (vllm/model_executor/layers/mamba/mamba_mixer2.py MambaMixer2.forward;
 * models/qwen3_next.py Qwen3NextGatedDeltaNet.forward):
 *
 *   Mamba-2: in_proj (z, x, B, C, dt; column-parallel), conv1d (causal_conv1d_fn /
 *            causal_conv1d_update over x, B, C), ssm_scan (mamba_chunk_scan_combined for
 *            prefills, selective_state_update for decodes), gated_norm (RMSNormGated with z),
 *            out_proj (row-parallel; the caller all-reduces over TP).
 *   GDN:     in_proj_qkvz, in_proj_ba, conv1d (over q, k, v), gdn_gating (g and beta from a and
 *            b), gdn_scan (chunk_gated_delta_rule / fused_recurrent_gated_delta_rule),
 *            gated_norm, out_proj.
 *
 * TP splits heads, groups (padded to TP when it does not divide them), the conv channels and
 * the state; no collective inside the mixer. The caller turns each op into a SchedOp (linears
 * through its GEMM model). Pure; no allocation.
 */
#ifndef MODEL_LOWER_HYBRID_H
#define MODEL_LOWER_HYBRID_H

#include <stdint.h>

#include "../net/hardware.h"
#include "arch.h"
#include "kernel-ssm.h"

typedef enum {
    MODEL_HOP_LINEAR = 0, /* [rows, in] x [in, out] */
    MODEL_HOP_KERNEL,     /* a priced kernel */
} ModelHybridOpKind;

typedef struct {
    const char *name; /* canonical op name (static storage) */
    uint8_t kind;     /* ModelHybridOpKind */
    double in, out;   /* LINEAR: the weight's shape on this rank */
    ModelKernelTime k; /* KERNEL: its time */
    uint32_t launches; /* KERNEL: kernels launched (eager host dispatches) */
} ModelHybridOp;

#define MODEL_HYBRID_MAX_OPS 8

typedef struct {
    const ModelArch *a;
    ModelMixer mixer;        /* MAMBA2 or GDN */
    uint32_t tp;
    const NetHardware *dev;
    uint32_t act_bytes;      /* 2 (bf16) */
    ModelSsmBatch batch;     /* this rank's rows of the step */
} ModelHybridMixerIn;

/* Whether vLLM (and ranksim) run `a` with TP `tp`, PCP `pcp`, DCP `dcp` and sequence
 * parallelism `sp`: NULL when they do, else a newly allocated message (caller frees): vLLM's
 * words where vLLM refuses (MambaMixer2's asserts; vllm.distributed.utils.divide's "N is not
 * divisible by TP" for GDN heads), ranksim's where ranksim does not lower the combination. */
char *model_lower_hybrid_refusal(const ModelArch *a, uint32_t tp, uint32_t pcp, uint32_t dcp,
                                 bool sp);

/* Fills out[] with the mixer's ops in order; returns how many (0 for a mixer that is neither). */
uint32_t model_lower_hybrid_mixer(const ModelHybridMixerIn *in,
                                  ModelHybridOp out[MODEL_HYBRID_MAX_OPS]);

#endif
