/* model/lower.c — model + plan + engine + workload -> per-rank programs; see lower.h and
 * doc/lowering.md for the rules and where each comes from. */
#include "lower.h"
#include "lower-hybrid.h"
#include "kernel-gemm.h"
#include "host.h"
#include "kernel-attn.h"
#include "kernel-moe.h"
#include "surface.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK(ranksim - model - lower - error - quark, model_lower_error)

/* DeepSeek-V4's attention window and cached entry (deepseek_v4_attention.py: 584 B per
 * fp8_ds_mla entry; a 128-token sliding window on every layer). */
#define V4_WINDOW 128u
#define V4_ENTRY_BYTES 584.0

/* ---- batches and workloads ---- */

ModelBatch *model_batch_new(void)
{
    ModelBatch *b = g_new0(ModelBatch, 1);
    b->prefill = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    b->prefill_ctx = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    b->decode = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    return b;
}

void model_batch_free(ModelBatch *b)
{
    if (!b)
        return;
    g_array_unref(b->prefill);
    g_array_unref(b->prefill_ctx);
    g_array_unref(b->decode);
    g_free(b);
}

uint32_t model_batch_prefill_ctx(const ModelBatch *b, guint i)
{
    return b && i < b->prefill_ctx->len ? g_array_index(b->prefill_ctx, uint32_t, i) : 0;
}

void model_batch_add_prefill(ModelBatch *b, uint32_t len, uint32_t ctx)
{
    uint32_t zero = 0;
    while (b->prefill_ctx->len < b->prefill->len)
        g_array_append_val(b->prefill_ctx, zero);
    g_array_append_val(b->prefill, len);
    g_array_append_val(b->prefill_ctx, ctx);
}

static void step_free(gpointer data)
{
    ModelStep *s = data;
    g_ptr_array_unref(s->per_dp);
    g_free(s);
}

ModelWorkload *model_workload_new(void)
{
    ModelWorkload *w = g_new0(ModelWorkload, 1);
    w->steps = g_ptr_array_new_with_free_func(step_free);
    return w;
}

void model_workload_free(ModelWorkload *w)
{
    if (!w)
        return;
    g_ptr_array_unref(w->steps);
    g_free(w);
}

void model_workload_add_step(ModelWorkload *w, GPtrArray *per_dp)
{
    ModelStep *s = g_new0(ModelStep, 1);
    g_ptr_array_set_free_func(per_dp, (GDestroyNotify)model_batch_free);
    s->per_dp = per_dp;
    s->sched_after = (int32_t)w->steps->len - 1;
    g_ptr_array_add(w->steps, s);
}

/* ---- the lowering context ---- */

typedef enum { MODE_TP = 0, MODE_SP, MODE_DSA_CP } Mode;

typedef struct {
    const ModelLowerInput *in;
    const ModelArch *a;
    const ModelPlan *pl;
    const ModelEngine *e;
    SchedProgram *p;
    ModelBackend backend; /* AUTO resolved */
    double wbytes;        /* bytes per weight element under the quantization */
    NetPeakDtype cdt;     /* the dtype linear layers compute in */
    ModelGemmDtype gdt;   /* ...and the kernel family vLLM runs them with (model/kernel-gemm.h) */
    const NetHardware *dev; /* the device the kernel models price for */
    uint32_t window;      /* the current layer's sliding window (tokens); 0 = full attention */
    const ModelBatch *pad_batch; /* the batch pad_rows was computed for (NULL: none) */
    uint64_t pad_rows;           /* the most PCP rows any PCP rank of pad_batch gets */
    GHashTable *dp_steps;        /* const ModelStep* -> DpStep*: what a step's DP ranks agree on,
                                    computed once per step, not once per rank (step_dp) */
    bool graphed;                /* this step's ops replay inside CUDA graphs (but see
                                    graphed_attention) */
    bool graphed_attention;      /* ...and its attention too (a full graph, not piecewise) */
    uint32_t act_bytes;          /* activation element size (bf16) */
    uint32_t kv_bytes;           /* KV-cache element size */
    GArray *ops;                 /* SchedOp being built for one rank */
} Ctx;

/* Query rows per tile of a prefill attention kernel: FlashAttention-2/3's forward block (Dao,
 * "FlashAttention-2", 2023: Br = 128 for head dims up to 128; FlashAttention-3 uses 128-row Q
 * tiles on Hopper) — the K/V of a context is read once per tile, not once per query row. */
#define ATTN_Q_TILE 128.0

/* What one rank processes in one step. */
typedef struct {
    uint32_t n_prefill, n_decode; /* requests */
    uint64_t tokens;              /* N: this DP rank's tokens (prefill + one per decode) */
    uint64_t real;                /* rows this rank really owns in attention (PCP split) */
    uint64_t padded;              /* rows every rank of the PCP group runs (batch padded) */
    uint64_t moe_rows;            /* rows entering the MoE on this rank */
    uint64_t full, local;         /* SP / DSA CP: full (padded to TP) and local rows */
    double ctx_avg;               /* mean context length seen by a query row */
    double kv_reads_avg;          /* KV tokens the attention kernel reads per query row: a
                                     prefill's query tile of ATTN_Q_TILE rows shares one pass
                                     over its context; a decode row reads its own */
    uint64_t ctx_max;             /* longest context in the step */
    uint64_t logits_rows;         /* sequences sampled this step */
    uint64_t prefill_ctx;         /* keys of this rank's prefills: cached context + new rows,
                                     summed (what MLA's prefill decompresses) */
    const ModelBatch *batch;      /* this rank's batch (NULL: a dummy batch), for the attention
                                     kernel's per-sequence lengths */
    uint32_t pcp_rank;            /* this rank's place in its PCP group */
    Mode mode;
    bool has_prefill;
} StepRows;

static uint32_t op_name(Ctx *c, const char *name)
{
    return sched_program_name(c->p, name);
}

/* An op priced by a kernel model: its time inside a CUDA graph, or eagerly the longer of it
 * and the host's dispatch (model/cost.h), unless a profile names it. */
static void emit_kernel(Ctx *c, const char *name, uint64_t rows, const ModelKernelTime *k,
                        double host_ns)
{
    uint8_t bound;
    bool attn = strcmp(name, "attention") == 0 || strcmp(name, "mla_attention") == 0 ||
                strcmp(name, "sparse_attention") == 0 || strcmp(name, "indexer") == 0;
    bool graphed = c->graphed && (c->graphed_attention || !attn);
    int64_t ns = model_cost_kernel_ns(c->in->cost, name, rows, k, host_ns, graphed, &bound);
    SchedOp op = sched_op_compute(op_name(c, name), ns, rows);
    op.bound = bound;
    g_array_append_val(c->ops, op);
}

/* Adds kernel `k` to `acc`, one op made of several kernels; the bound is the longest's. */
static void kernel_add(ModelKernelTime *acc, const ModelKernelTime *k, double *longest)
{
    acc->ns += k->ns;
    acc->flops += k->flops;
    acc->bytes += k->bytes;
    if (k->ns > *longest) {
        *longest = k->ns;
        acc->bound = k->bound;
    }
}

/* After the QKV projection of a GQA layer: Qwen3's and MiniMax's per-head q/k RMSNorms (two
 * kernels) and the rotary embedding (vLLM's rotary_embedding op: one kernel over q and k),
 * each a bandwidth-bound pass over the q and k heads. */
static void emit_qk_rope(Ctx *c, uint64_t rows, double heads, double kv_heads)
{
    double qk = (double)rows * (heads + kv_heads) * c->a->head_dim * c->act_bytes;
    if (c->a->qk_norm_dim) {
        ModelKernelTime k = model_elementwise_time(c->dev, 2.0 * qk, 4.0 * qk / c->act_bytes);
        ModelKernelTime one = model_elementwise_time(c->dev, 0, 0);
        k.ns += one.ns; /* q and k: two kernels */
        emit_kernel(c, "qk_norm", rows, &k, 2.0 * model_cost_eager_ns(c->in->cost));
    }
    ModelKernelTime k = model_elementwise_time(c->dev, 2.0 * qk, 3.0 * qk / c->act_bytes);
    emit_kernel(c, "rotary_emb", rows, &k, model_cost_eager_ns(c->in->cost));
}

/* An op without a kernel family model yet (model_generic_time). */
static void emit_compute(Ctx *c, const char *name, uint64_t rows, double flops, double bytes,
                         NetPeakDtype dt)
{
    ModelKernelTime k = model_generic_time(c->dev, flops, bytes, dt);
    emit_kernel(c, name, rows, &k, model_cost_eager_ns(c->in->cost));
}

static ModelGemmShape gemm_shape(const Ctx *c, uint64_t rows, double in, double out)
{
    return (ModelGemmShape){.m = rows, .n = (uint64_t)llround(out), .k = (uint64_t)llround(in),
                            .dtype = c->gdt};
}

/* A linear layer [rows, in] x [in, out], as vLLM's kernel for the weights' format runs it. */
static void emit_linear(Ctx *c, const char *name, uint64_t rows, double in, double out)
{
    ModelGemmShape s = gemm_shape(c, rows, in, out);
    ModelKernelTime k = model_gemm_time(c->dev, &s);
    emit_kernel(c, name, rows, &k, model_gemm_host_ns(&s));
}

/* A linear layer vLLM never quantizes, whatever the checkpoint's format: bf16 through cuBLAS.
 * The MoE router gate is built without a quant config (ReplicatedLinear(..., quant_config=None)
 * in vLLM's qwen2_moe.py, qwen3_moe.py, deepseek_v2.py, minimax_m2.py; gpt-oss's router is a
 * plain bf16 Linear), and the LM head is a ParallelLMHead, an embedding layer that Fp8Config,
 * compressed-tensors and ModelOpt leave unquantized (their get_quant_method returns a linear
 * method for LinearBase only; checkpoints list lm_head in their ignore lists too). */
static void emit_linear_bf16(Ctx *c, const char *name, uint64_t rows, double in, double out)
{
    ModelGemmShape s = gemm_shape(c, rows, in, out);
    s.dtype = MODEL_GEMM_BF16;
    ModelKernelTime k = model_gemm_time(c->dev, &s);
    emit_kernel(c, name, rows, &k, model_gemm_host_ns(&s));
}

static void emit_norm(Ctx *c, const char *name, uint64_t rows, double dim)
{
    ModelKernelTime k = model_elementwise_time(c->dev, 2.0 * (double)rows * dim * c->act_bytes,
                                               4.0 * (double)rows * dim);
    emit_kernel(c, name, rows, &k, model_cost_eager_ns(c->in->cost));
}

/* A gated MLP of intermediate size `inter` on `rows`: the gate-up GEMM, SiLU-and-mul, the down
 * GEMM (vLLM's MergedColumnParallelLinear, SiluAndMul, RowParallelLinear), as one op. */
static void emit_mlp(Ctx *c, const char *name, uint64_t rows, double inter)
{
    double hidden = c->a->hidden_size, longest = 0;
    ModelKernelTime sum = {0};
    /* Nemotron-H's MLP is ungated: up_proj alone, ReLU^2 */
    ModelGemmShape up = gemm_shape(c, rows, hidden, (c->a->mlp_ungated ? 1.0 : 2.0) * inter);
    ModelGemmShape down = gemm_shape(c, rows, inter, hidden);
    ModelKernelTime k = model_gemm_time(c->dev, &up);
    kernel_add(&sum, &k, &longest);
    k = model_elementwise_time(c->dev, (double)rows * inter * 3.0 * c->act_bytes,
                               3.0 * (double)rows * inter);
    kernel_add(&sum, &k, &longest);
    k = model_gemm_time(c->dev, &down);
    kernel_add(&sum, &k, &longest);
    double host = model_gemm_host_ns(&up) + model_cost_eager_ns(c->in->cost) +
                  model_gemm_host_ns(&down);
    emit_kernel(c, name, rows, &sum, host);
}

static void emit_coll(Ctx *c, SchedOpKind kind, const char *name, int32_t group, uint64_t count,
                      SchedDtype dt, uint64_t rows)
{
    if (group < 0)
        return;
    SchedOp op = sched_op_collective(kind, op_name(c, name), group, count, dt);
    op.tokens = rows;
    g_array_append_val(c->ops, op);
}

/* ---- per-step rows ---- */

const ModelBatch *model_step_batch(const ModelStep *s, uint32_t dp)
{
    if (s->per_dp->len == 1)
        return g_ptr_array_index(s->per_dp, 0);
    if (dp < s->per_dp->len)
        return g_ptr_array_index(s->per_dp, dp);
    return NULL; /* an idle DP rank: runs a dummy batch (see moe_rows) */
}

uint64_t model_batch_tokens(const ModelBatch *b)
{
    if (!b)
        return 0;
    uint64_t n = b->decode->len;
    for (guint i = 0; i < b->prefill->len; i++)
        n += g_array_index(b->prefill, uint32_t, i);
    return n;
}

/* Rows a decoding sequence brings to the target forward: 1, or 1 + k with speculative decoding
 * (the k drafted tokens are verified with the new one: vLLM's num_tokens_with_spec). */
static uint64_t decode_rows(const Ctx *c)
{
    const ModelEngine *e = c->e;
    return 1 + (e->speculative_method != MODEL_SPEC_NONE ? e->num_speculative_tokens : 0);
}

static uint64_t batch_rows(const Ctx *c, const ModelBatch *b)
{
    return b ? model_batch_tokens(b) + (uint64_t)b->decode->len * (decode_rows(c) - 1) : 0;
}

static uint64_t pcp_rows_of(const ModelBatch *b, uint32_t pcp, uint32_t r)
{
    if (!b)
        return 0;
    uint64_t n = b->decode->len; /* decode requests are replicated on every PCP rank */
    for (guint i = 0; i < b->prefill->len; i++)
        n += model_pcp_rows(g_array_index(b->prefill, uint32_t, i), pcp, r);
    return n;
}

/* What every DP rank of a step agrees on, whichever rank asks: whether any DP rank prefills,
 * and the most rows any DP rank's batch brings. A property of the step alone, so it is kept per
 * step: asking it per rank made lowering O(ranks x DP) (issue 29: quadratic in DP). */
typedef struct {
    bool has_prefill;
    uint64_t most_rows;
} DpStep;

static const DpStep *step_dp(Ctx *c, const ModelStep *s)
{
    if (!c->dp_steps)
        c->dp_steps = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    DpStep *d = g_hash_table_lookup(c->dp_steps, s);
    if (d)
        return d;
    d = g_new0(DpStep, 1);
    uint32_t n = c->pl->par.data_parallel_size;
    /* Beyond per_dp's length every DP rank runs the dummy batch (NULL: no rows, no prefill);
     * one batch shared by every DP rank is looked at once. */
    uint32_t batches = MIN(n, s->per_dp->len == 1 ? 1 : s->per_dp->len);
    for (uint32_t dp = 0; dp < batches; dp++) {
        const ModelBatch *x = model_step_batch(s, dp);
        d->has_prefill = d->has_prefill || (x && x->prefill->len > 0);
        d->most_rows = MAX(d->most_rows, batch_rows(c, x));
    }
    g_hash_table_insert(c->dp_steps, (gpointer)s, d);
    return d;
}

static StepRows step_rows(Ctx *c, const ModelStep *s, uint32_t rank)
{
    const ModelParallel *par = &c->pl->par;
    const ModelCoord *co = &c->pl->coord[rank];
    const ModelBatch *b = model_step_batch(s, co->dp);
    StepRows r;
    memset(&r, 0, sizeof r);
    r.n_prefill = b ? b->prefill->len : 0;
    r.n_decode = b ? b->decode->len : 0;
    r.batch = b;
    r.pcp_rank = co->pcp;
    /* Whether the step prefills is agreed across DP (vLLM and vLLM-Ascend sync it with the
     * token counts), so every DP rank takes the same path and MoE method. */
    const DpStep *agreed = step_dp(c, s);
    r.has_prefill = agreed->has_prefill;
    r.tokens = batch_rows(c, b);
    uint32_t pcp = par->prefill_context_parallel_size;
    if (pcp > 1) {
        r.real = pcp_rows_of(b, pcp, co->pcp);
        /* the largest PCP rank's rows depend on the batch only: computed once per batch, not
         * per rank (O(PCP x prompts) instead of O(world x PCP x prompts)) */
        if (b && b != c->pad_batch) {
            uint64_t most = 0;
            for (uint32_t k = 0; k < pcp; k++) {
                uint64_t x = pcp_rows_of(b, pcp, k);
                if (x > most)
                    most = x;
            }
            c->pad_batch = b;
            c->pad_rows = most;
        }
        r.padded = b ? c->pad_rows : 0;
    } else {
        r.real = r.padded = r.tokens;
    }
    /* Context: a prefill row sees on average half its prompt (causal), a decode row its whole
     * context. */
    double ctx_sum = 0, reads = 0;
    uint64_t rows = 0;
    if (b) {
        for (guint i = 0; i < b->prefill->len; i++) {
            double l = g_array_index(b->prefill, uint32_t, i);
            double cached = model_batch_prefill_ctx(b, i);
            /* causal: row j of the chunk sees the cached context and the j + 1 rows up to it */
            ctx_sum += l * cached + l * (l + 1) / 2.0;
            /* query tile k (of ceil(l / tile)) reads the cached context and the (k + 1) x tile
             * new tokens up to it: l / 2 of them on average over the tiles */
            double tiles = ceil(l / ATTN_Q_TILE);
            reads += tiles * (cached + (l + ATTN_Q_TILE) / 2.0);
            rows += (uint64_t)l;
            r.prefill_ctx += (uint64_t)(cached + l);
            if ((uint64_t)(cached + l) > r.ctx_max)
                r.ctx_max = (uint64_t)(cached + l);
        }
        for (guint i = 0; i < b->decode->len; i++) {
            uint32_t l = g_array_index(b->decode, uint32_t, i);
            ctx_sum += l;
            reads += l;
            rows++;
            if (l > r.ctx_max)
                r.ctx_max = l;
        }
    }
    r.ctx_avg = rows ? ctx_sum / (double)rows : 0;
    r.kv_reads_avg = rows ? reads / (double)rows : 0;
    r.logits_rows = r.n_prefill + r.n_decode;
    uint32_t tp = par->tensor_parallel_size;
    if (par->enable_sequence_parallel && tp > 1 && r.has_prefill)
        r.mode = c->a->dsa && c->a->mla ? MODE_DSA_CP : MODE_SP;
    /* DP ranks pad to the largest DP batch so EP collectives agree (vLLM syncs
     * num_tokens_across_dp and idle ranks run dummy batches). */
    uint64_t dp_most = r.padded;
    if (par->data_parallel_size > 1 && (c->pl->ep_size > 1 || c->a->moe))
        dp_most = MAX(dp_most, agreed->most_rows);
    uint32_t pad = b && b->pad_tokens ? b->pad_tokens : s->pad_tokens;
    if (pad && pcp <= 1 && r.mode == MODE_TP) {
        r.padded = MAX(r.padded, (uint64_t)pad);
        /* a rank that chose its own size (ModelBatch.pad_tokens) runs it, whatever the other
         * DP ranks run: the per-rank decision a scenario can make diverge */
        dp_most = b && b->pad_tokens ? r.padded : MAX(dp_most, r.padded);
    }
    if (r.mode != MODE_TP) {
        r.full = (dp_most + tp - 1) / tp * tp;
        r.local = r.full / tp;
        r.moe_rows = r.local;
    } else {
        r.moe_rows = dp_most;
    }
    return r;
}

/* ---- attention ---- */

/* Rows MLA runs in the latent ("absorbed") form: decode rows (vLLM's MLA decode multiplies
 * the query by W_UK and the output by W_UV, per head, instead of decompressing the cache), every
 * row under DSA (sparse MLA attends in the latent space for prefill too). The rest of the rows
 * are prefills, attended as MHA over K/V decompressed by kv_b_proj. */
static uint64_t mla_absorbed_rows(const Ctx *c, const StepRows *sr, uint64_t rows)
{
    if (c->a->dsa || sr->n_prefill == 0)
        return rows;
    uint64_t dec = (uint64_t)sr->n_decode * decode_rows(c);
    return MIN(dec, rows);
}

/* W_UK / W_UV of the absorbed rows: vLLM multiplies them per head with torch.bmm on the bf16
 * weights it derives from kv_b_proj at load time (mla_attention.py process_weights_after_loading:
 * W_UK_T and W_UV in the activation dtype; no fp8 BMM on CUDA — AIConfigurator's
 * collector/vllm/collect_mla_bmm.py says the same): model/kernel-attn.h. */
static ModelKernelTime mla_bmm_time(const Ctx *c, uint64_t rows, uint32_t heads, double in,
                                    double out)
{
    return model_mla_bmm_time(c->dev, heads, (double)rows, in, out);
}

/* MLA projections on `rows`; `heads` query/key heads this rank projects (vLLM's
 * DeepseekV2MLAAttention / MLAAttention): q_a and kv_a in one GEMM (fused_qkv_a_proj) when the
 * model has a q LoRA, their norms, q_b_proj, the rotary embedding of q_pe and k_pe (one kernel);
 * then kv_b_proj decompressing the prefills' keys (cached + new: the MHA path) and the W_UK
 * product of the absorbed rows (mla_q_absorb). */
static void emit_mla_projections(Ctx *c, uint64_t rows, uint32_t heads, const StepRows *sr)
{
    const ModelArch *a = c->a;
    double qk = a->qk_nope_head_dim + a->qk_rope_head_dim;
    double kv_a = a->kv_lora_rank + a->qk_rope_head_dim;
    if (a->q_lora_rank) {
        emit_linear(c, "fused_qkv_a_proj", rows, a->hidden_size, a->q_lora_rank + kv_a);
        emit_norm(c, "q_a_layernorm", rows, a->q_lora_rank);
        emit_norm(c, "kv_a_layernorm", rows, a->kv_lora_rank);
        emit_linear(c, "q_b_proj", rows, a->q_lora_rank, heads * qk);
    } else {
        emit_linear(c, "q_b_proj", rows, a->hidden_size, heads * qk);
        emit_linear(c, "kv_a_proj", rows, a->hidden_size, kv_a);
        emit_norm(c, "kv_a_layernorm", rows, a->kv_lora_rank);
    }
    /* rotary_emb over q_pe (heads x rope) and k_pe (rope), read and written in place */
    double pe = (double)rows * (heads + 1.0) * a->qk_rope_head_dim * c->act_bytes;
    ModelKernelTime rope = model_elementwise_time(c->dev, 2.0 * pe, 3.0 * pe / c->act_bytes);
    emit_kernel(c, "rotary_emb", rows, &rope, model_cost_eager_ns(c->in->cost));
    uint64_t absorbed = mla_absorbed_rows(c, sr, rows);
    if (absorbed < rows && sr->prefill_ctx) {
        /* the GEMM runs over every key the prefills attend (vLLM's MLA prefill decompresses the
         * new rows and, chunk by chunk, the cached context: _compute_prefill_context), but the
         * op carries the step's rows like every other layer op (the layout checker bounds an
         * op's rows by the step's) */
        ModelGemmShape s = gemm_shape(c, sr->prefill_ctx, a->kv_lora_rank,
                                      heads * (double)(a->qk_nope_head_dim + a->v_head_dim));
        ModelKernelTime k = model_gemm_time(c->dev, &s);
        emit_kernel(c, "kv_b_proj", rows, &k, model_gemm_host_ns(&s));
    }
    if (absorbed) {
        ModelKernelTime k =
            mla_bmm_time(c, absorbed, heads, a->qk_nope_head_dim, a->kv_lora_rank);
        emit_kernel(c, "mla_q_absorb", absorbed, &k, model_cost_eager_ns(c->in->cost));
    }
}

/* After MLA attention: the absorbed rows' output back from the latent space (W_UV, torch.bmm),
 * then vLLM's copy of the (heads, rows, v) product into the (rows, heads x v) output
 * (_v_up_proj: out.copy_ of the transposed view) — two kernels, one op. */
static void emit_mla_v_absorb(Ctx *c, uint64_t rows, uint32_t heads, const StepRows *sr)
{
    uint64_t absorbed = mla_absorbed_rows(c, sr, rows);
    if (!absorbed)
        return;
    double longest = 0;
    ModelKernelTime sum = {0};
    ModelKernelTime k =
        mla_bmm_time(c, absorbed, heads, c->a->kv_lora_rank, c->a->v_head_dim);
    kernel_add(&sum, &k, &longest);
    double out = (double)absorbed * heads * c->a->v_head_dim * c->act_bytes;
    k = model_elementwise_time(c->dev, 2.0 * out, 0);
    kernel_add(&sum, &k, &longest);
    emit_kernel(c, "mla_v_absorb", absorbed, &sum, 2.0 * model_cost_eager_ns(c->in->cost));
}

/* DeepSeek-V3.2's indexer (vLLM deepseek_v2.py Indexer.forward and its SparseAttnIndexer op), the
 * kernels it runs on `rows` query rows, summed into one op: wq_b (q_lora -> index heads x
 * head_dim, the checkpoint's GEMM format), wk (hidden -> head_dim, same format), k_norm
 * (LayerNorm), weights_proj (hidden -> index heads, unquantized in the checkpoint), the rotary
 * embedding of the index q and k, the fp8 quantization of q (per 128-group) and of k with its
 * cache write (indexer_k_quant_and_cache), the logits (DeepGEMM fp8_mqa_logits /
 * fp8_paged_mqa_logits: every row against every key of its context, index heads x head_dim fp8
 * MACs per pair, the fp8 keys and their fp32 scales read once per sequence), and the top-k
 * selection over the fp32 logits (top_k_per_row). */
static void emit_indexer(Ctx *c, uint64_t rows, const StepRows *sr)
{
    const ModelArch *a = c->a;
    double ih = a->index_n_heads, id = a->index_head_dim, r = (double)rows, longest = 0;
    double h = a->hidden_size, ab = c->act_bytes;
    ModelKernelTime sum = {0}, k;
    ModelGemmShape g = gemm_shape(c, rows, a->q_lora_rank ? a->q_lora_rank : h, ih * id);
    k = model_gemm_time(c->dev, &g);
    kernel_add(&sum, &k, &longest);
    double host = model_gemm_host_ns(&g);
    g = gemm_shape(c, rows, h, id);
    k = model_gemm_time(c->dev, &g);
    kernel_add(&sum, &k, &longest);
    host += model_gemm_host_ns(&g);
    g = gemm_shape(c, rows, h, ih);
    g.dtype = MODEL_GEMM_BF16;
    k = model_gemm_time(c->dev, &g);
    kernel_add(&sum, &k, &longest);
    host += model_gemm_host_ns(&g);
    /* k_norm; rotary of q and k; q quantization; k quantization and cache write */
    const double elem[4] = {2.0 * r * id * ab, 2.0 * r * (ih + 1.0) * a->qk_rope_head_dim * ab,
                            r * ih * id * (ab + 1.0), r * id * (ab + 1.0)};
    for (int i = 0; i < 4; i++) {
        k = model_elementwise_time(c->dev, elem[i], 4.0 * elem[i] / ab);
        kernel_add(&sum, &k, &longest);
        host += model_cost_eager_ns(c->in->cost);
    }
    /* logits: the keys each sequence attends are read once per sequence (decode: one row per
     * sequence; a prefill's rows share its keys) */
    double seqs = MAX(1.0, (double)(sr->n_prefill + sr->n_decode));
    double keys = sr->ctx_avg * MIN(r, seqs) + (r > seqs ? sr->ctx_avg : 0);
    k = model_generic_time(c->dev, 2.0 * r * sr->ctx_avg * ih * id,
                           keys * (id + 4.0) + r * ih * id + r * sr->ctx_avg * 4.0, NET_PEAK_FP8);
    kernel_add(&sum, &k, &longest);
    /* top-k: the fp32 logits read once, the index_topk int32 indices written */
    double topk = MIN((double)a->index_topk, MAX(1.0, sr->ctx_avg));
    k = model_elementwise_time(c->dev, r * sr->ctx_avg * 4.0 + r * topk * 4.0,
                               r * sr->ctx_avg);
    kernel_add(&sum, &k, &longest);
    host += 2.0 * model_cost_eager_ns(c->in->cost);
    emit_kernel(c, "indexer", rows, &sum, host);
}

/* Attention compute for `rows` query rows over `heads` heads against `kv_share` of each
 * context (1/DCP when the KV is sharded). */
/* The kernel family of ranksim's attention backend (model/kernel-attn.h); AUTO resolves by the
 * device there. */
static ModelAttnKernel attn_kernel(const Ctx *c)
{
    switch (c->backend) {
    case MODEL_BACKEND_FLASHMLA_SPARSE:
    case MODEL_BACKEND_FLASHINFER_MLA_SPARSE:
    case MODEL_BACKEND_ROCM_AITER_MLA_SPARSE:
        return MODEL_ATTN_FLASHMLA_SPARSE;
    case MODEL_BACKEND_FLASHMLA:
    case MODEL_BACKEND_CUTLASS_MLA:
    case MODEL_BACKEND_FLASHINFER_MLA:
        /* Blackwell's MLA decode kernels (CUTLASS MLA; FlashInfer's trtllm-gen MLA) read the
         * latent cache as FlashMLA does: one KV head of kv_lora_rank + rope per token, 64-row
         * query tiles. Not fitted: FlashMLA's figures stand for them. */
        return MODEL_ATTN_FLASHMLA;
    case MODEL_BACKEND_FLASH_ATTN_MLA:
        return MODEL_ATTN_FA3_MLA;
    case MODEL_BACKEND_FLASHINFER:
        return MODEL_ATTN_FLASHINFER;
    case MODEL_BACKEND_TRITON_ATTN:
    case MODEL_BACKEND_TRITON_MLA:
    case MODEL_BACKEND_ROCM_ATTN:
    case MODEL_BACKEND_ROCM_AITER_UNIFIED_ATTN:
    case MODEL_BACKEND_ROCM_AITER_TRITON_MLA:
    case MODEL_BACKEND_FLEX_ATTENTION:
        return MODEL_ATTN_TRITON;
    case MODEL_BACKEND_ASCEND:
        return c->a->dsa ? MODEL_ATTN_ASCEND_SFA : MODEL_ATTN_ASCEND_FIA;
    default:
        return MODEL_ATTN_AUTO;
    }
}

/* The sequences attention sees on this rank: a prefill's query rows (its PCP share) over its
 * cached context and itself, a decode's rows (1 + speculative tokens) over its context; the keys
 * divided by `kv_div` (DCP's KV shards). `prefill` / `decode` pick which. A dummy batch is `rows`
 * one-token sequences. Caller frees. */
static GArray *attn_seqs(const Ctx *c, const StepRows *sr, uint64_t rows, double kv_div,
                         bool prefill, bool decode)
{
    GArray *v = g_array_new(FALSE, FALSE, sizeof(ModelAttnSeq));
    const ModelBatch *b = sr->batch;
    uint32_t pcp = c->pl->par.prefill_context_parallel_size;
    if (!b) {
        ModelAttnSeq one = {1, 1};
        for (uint64_t i = 0; decode && i < MIN(rows, (uint64_t)UINT32_MAX); i++)
            g_array_append_val(v, one);
        return v;
    }
    for (guint i = 0; prefill && i < b->prefill->len; i++) {
        uint32_t len = g_array_index(b->prefill, uint32_t, i);
        uint32_t q = pcp > 1 ? model_pcp_rows(len, pcp, sr->pcp_rank) : len;
        double keys = ((double)model_batch_prefill_ctx(b, i) + len) / kv_div;
        ModelAttnSeq x = {q, (uint32_t)MIN(ceil(keys), (double)UINT32_MAX)};
        if (q)
            g_array_append_val(v, x);
    }
    for (guint i = 0; decode && i < b->decode->len; i++) {
        double keys = (double)g_array_index(b->decode, uint32_t, i) / kv_div;
        ModelAttnSeq x = {(uint32_t)decode_rows(c), (uint32_t)MIN(ceil(keys), (double)UINT32_MAX)};
        g_array_append_val(v, x);
    }
    return v;
}

/* One attention op over `heads` heads on this rank with its sequences' keys divided by `kv_div`
 * (the KV shard of DCP), priced by the attention kernel model. A dense-MLA batch that mixes
 * prefills and decodes runs two kernels (MHA over the decompressed prefill keys, the latent
 * decode), summed into the one op. */
static void emit_attention(Ctx *c, uint64_t rows, uint32_t heads, const StepRows *sr,
                           double kv_share)
{
    const ModelArch *a = c->a;
    double kv_div = kv_share > 0 ? 1.0 / kv_share : 1.0;
    uint32_t tp = c->pl->par.tensor_parallel_size;
    ModelAttnShape sh = {
        .heads = heads,
        .kv_heads = MAX(1u, a->num_kv_heads / tp),
        .head_dim = a->head_dim,
        .causal = true,
        .window = c->window,
        .kv_bytes = c->kv_bytes,
        .kernel = attn_kernel(c),
    };
    const char *name = "attention";
    ModelKernelTime sum = {0};
    double longest = 0;
    if (!a->mla) {
        g_autoptr(GArray) seqs = attn_seqs(c, sr, rows, kv_div, true, true);
        ModelKernelTime k = model_attn_time(c->dev, &sh, (const ModelAttnSeq *)(void *)seqs->data,
                                            seqs->len);
        emit_kernel(c, name, rows, &k, model_cost_eager_ns(c->in->cost));
        return;
    }
    /* MLA: the latent form (decode rows; every row under DSA) */
    name = a->dsa ? "sparse_attention" : "mla_attention";
    ModelAttnShape lat = sh;
    lat.mla = true;
    lat.kv_heads = 1;
    lat.head_dim = a->kv_lora_rank + a->qk_rope_head_dim;
    lat.v_head_dim = a->kv_lora_rank;
    lat.sparse_topk = a->dsa ? a->index_topk : 0;
    if (a->dsa)
        lat.kv_bytes = 1; /* vLLM's fp8_ds_mla cache */
    g_autoptr(GArray) dec = attn_seqs(c, sr, rows, kv_div, a->dsa, true);
    if (dec->len) {
        ModelKernelTime k = model_attn_time(c->dev, &lat, (const ModelAttnSeq *)(void *)dec->data,
                                            dec->len);
        kernel_add(&sum, &k, &longest);
        /* the latent query: vLLM hands FlashMLA-style kernels one tensor, torch.cat of ql_nope
         * and q_pe (quantized to fp8 with an fp8 cache); FA3's MLA kernel takes the two parts
         * (q and qv) as they are */
        ModelAttnKernel kk = model_attn_kernel_resolve(c->dev, &lat, true);
        if (kk != MODEL_ATTN_FA3_MLA) {
            double q = 0;
            for (guint i = 0; i < dec->len; i++)
                q += g_array_index(dec, ModelAttnSeq, i).q_len;
            q *= (double)heads * lat.head_dim * c->act_bytes;
            k = model_elementwise_time(c->dev, 2.0 * q, 0);
            kernel_add(&sum, &k, &longest);
        }
    }
    if (!a->dsa) { /* MHA over the decompressed keys for the prefills */
        g_autoptr(GArray) pre = attn_seqs(c, sr, rows, kv_div, true, false);
        if (pre->len) {
            ModelAttnShape mha = sh;
            mha.mla = true;
            mha.kv_heads = heads;
            mha.head_dim = a->qk_nope_head_dim + a->qk_rope_head_dim;
            mha.v_head_dim = a->v_head_dim;
            mha.kernel = MODEL_ATTN_MLA_PREFILL;
            ModelKernelTime k = model_attn_time(c->dev, &mha,
                                                (const ModelAttnSeq *)(void *)pre->data, pre->len);
            kernel_add(&sum, &k, &longest);
        }
    }
    if (!dec->len && sum.ns == 0)
        sum = model_attn_time(c->dev, &lat, NULL, 0);
    emit_kernel(c, name, rows, &sum, model_cost_eager_ns(c->in->cost));
}

/* The context-parallel exchanges around the attention kernel. */
static void emit_cp_attention(Ctx *c, uint32_t rank, const StepRows *sr, uint64_t lin_rows,
                              uint32_t h)
{
    const ModelArch *a = c->a;
    const ModelPlan *pl = c->pl;
    const ModelParallel *par = &pl->par;
    uint32_t dcp = par->decode_context_parallel_size, pcp = par->prefill_context_parallel_size;
    int32_t gd = pl->dcp_group[rank], gp = pl->pcp_group[rank];
    double kv_dim = a->mla
                        ? a->kv_lora_rank + a->qk_rope_head_dim
                        : 2.0 * a->head_dim * MAX(1u, a->num_kv_heads / par->tensor_parallel_size);
    double v_dim = a->mla ? a->kv_lora_rank : a->head_dim;
    bool flashinfer = c->backend == MODEL_BACKEND_FLASHINFER_MLA_SPARSE;

    if (pcp > 1) /* every PCP rank needs the new tokens' KV to write its shard and attend */
        emit_coll(c, SCHED_OP_ALL_GATHER, "pcp_kv_all_gather", gp, sr->padded * (uint64_t)kv_dim,
                  c->e->kv_cache_dtype == SCHED_DTYPE_FP8 ? SCHED_DTYPE_FP8 : SCHED_DTYPE_BF16,
                  sr->padded);
    if (dcp <= 1) {
        emit_attention(c, sr->real, h, sr, 1.0);
        return;
    }
    if (pcp > 1) {
        /* PCP + DCP: no query gather. FLASHMLA_SPARSE gathers the DCP KV shards first and
         * exchanges padded rows; FLASHINFER_MLA_SPARSE keeps the shards and sizes its LSE
         * exchange by the rank's real rows. A rank with no rows of its own skips the KV gather
         * in the FLASHMLA_SPARSE path (the short-prefill hang in vllm-cp.md). */
        uint64_t rows = flashinfer ? sr->real : sr->padded;
        if (!flashinfer && sr->real > 0) {
            uint64_t shard = 0;
            for (uint32_t k = 0; k < dcp; k++) {
                uint64_t x = model_dcp_local_len((uint32_t)sr->ctx_max, dcp, k,
                                                 par->cp_kv_cache_interleave_size);
                if (x > shard)
                    shard = x;
            }
            emit_coll(c, SCHED_OP_ALL_GATHER, "dcp_kv_all_gather", gd, shard * (uint64_t)kv_dim,
                      SCHED_DTYPE_BF16, sr->padded);
        }
        emit_attention(c, sr->real, h, sr, flashinfer ? 1.0 / dcp : 1.0);
        emit_coll(c, SCHED_OP_ALL_GATHER, "dcp_lse_all_gather", gd, rows * h, SCHED_DTYPE_FP32,
                  rows);
        emit_coll(c, SCHED_OP_ALL_REDUCE, "dcp_out_all_reduce", gd, rows * h * (uint64_t)v_dim,
                  SCHED_DTYPE_BF16, rows);
        (void)lin_rows;
        return;
    }
    /* DCP inside TP: gather the query heads of the DCP group, attend over the local KV shard,
     * then combine: LSE all-gather + output reduce-scatter (ag_rs) or one all-to-all (a2a). */
    uint64_t rows = sr->real;
    uint32_t hg = h * dcp;
    double q_dim = a->mla ? a->kv_lora_rank + a->qk_rope_head_dim : a->head_dim;
    emit_coll(c, SCHED_OP_ALL_GATHER, "dcp_q_all_gather", gd, rows * h * (uint64_t)q_dim,
              SCHED_DTYPE_BF16, rows);
    emit_attention(c, rows, hg, sr, 1.0 / dcp);
    if (par->dcp_comm_backend == MODEL_DCP_A2A) {
        emit_coll(c, SCHED_OP_ALL_TO_ALL, "dcp_all_to_all", gd, rows * hg * (uint64_t)(v_dim + 2),
                  SCHED_DTYPE_BF16, rows);
    } else {
        emit_coll(c, SCHED_OP_ALL_GATHER, "dcp_lse_all_gather", gd, rows * hg, SCHED_DTYPE_FP32,
                  rows);
        emit_coll(c, SCHED_OP_REDUCE_SCATTER, "dcp_out_reduce_scatter", gd,
                  rows * hg * (uint64_t)v_dim, SCHED_DTYPE_BF16, rows);
    }
}

/* ---- MLP / MoE ---- */

static void emit_dense_mlp(Ctx *c, uint64_t rows, uint32_t tp)
{
    emit_mlp(c, "mlp", rows, (double)c->a->intermediate_size / tp);
}

/* Routed experts: `rows` tokens, `tokens_per_row` of their routes landing on this rank's
 * `experts_here` experts of intermediate size `inter` (vLLM's fused MoE); shared experts
 * (one route per row, one expert) are a dense MLP in vLLM and priced as one. */
static void emit_experts(Ctx *c, const char *name, uint64_t rows, double tokens_per_row,
                         double experts_here, double inter)
{
    if (strcmp(name, "shared_experts") == 0) {
        emit_mlp(c, name, rows, inter);
        return;
    }
    /* ungated experts (Nemotron-H: w1 and w2, 2 I H a expert) priced as gated ones (3 I H) of
     * two thirds the width: the same FLOPs and weight bytes; latent MoE in its latent width */
    if (c->a->mlp_ungated)
        inter *= 2.0 / 3.0;
    ModelKernelTime k =
        model_moe_local_time(c->dev, c->gdt, model_arch_expert_hidden(c->a), inter, experts_here,
                             (double)rows * tokens_per_row,
                             (double)rows * MAX(c->a->num_experts_per_tok, 1u), (double)rows);
    /* eager: routing, sort, two GEMMs, activation and sum, each a launch */
    emit_kernel(c, name, rows, &k, 6.0 * model_cost_eager_ns(c->in->cost));
}

typedef enum { MOE_REDUCE_TP = 0, MOE_REDUCE_SHARED, MOE_REDUCE_NONE } MoeReduce;

static void emit_moe(Ctx *c, uint32_t rank, const StepRows *sr, uint64_t rows, MoeReduce reduce)
{
    const ModelArch *a = c->a;
    const ModelPlan *pl = c->pl;
    uint32_t tp = pl->par.tensor_parallel_size;
    int32_t gt = pl->tp_group[rank], ge = pl->ep_group[rank];
    bool ep = pl->ep_size > 1;
    double topk = a->num_experts_per_tok;
    double shared_inter = (double)a->moe_intermediate_size * MAX(1u, a->n_shared_experts);
    bool mc2 = c->backend == MODEL_BACKEND_ASCEND && ep && !sr->has_prefill && tp > 1;

    emit_linear_bf16(c, "moe_gate", rows, a->hidden_size, a->n_routed_experts);
    uint64_t route_rows = rows;
    if (mc2) {
        /* vLLM-Ascend MC2 decode: the gate ran on the full packed-local tokens; pad to a
         * multiple of TP and keep this TP rank's slice for top-k and dispatch (seed 000 §3.8:
         * dp8tp4, 9 tokens -> 12 -> 3). */
        route_rows = (rows + tp - 1) / tp;
    }
    emit_compute(c, "moe_topk", route_rows, 4.0 * (double)route_rows * a->n_routed_experts,
                 (double)route_rows * a->n_routed_experts * 4.0, NET_PEAK_BF16);
    uint32_t dp = pl->par.data_parallel_size, pcp = pl->par.prefill_context_parallel_size;
    NetPlatform pf = c->in->hw ? c->in->hw->platform : NET_PLATFORM_CUDA;
    bool agrs = ep && !mc2 && reduce == MOE_REDUCE_TP &&
                (pf == NET_PLATFORM_CUDA || pf == NET_PLATFORM_ROCM);
    if (agrs) {
        /* EP on CUDA and ROCm as vLLM's all2all managers run it (ParallelConfig.all2all_backend,
         * default allgather_reducescatter). ParallelConfig.use_all2all: DP > 1, sequence-
         * parallel MoE, or EP with PCP; otherwise (EP inside one TP group) every rank keeps
         * every token, runs its local experts on them and the MoE output merges in the TP
         * all-reduce below. use_sequence_parallel_moe (TP > 1 and DP > 1 with most backends):
         * the TP ranks hold replicated tokens after o_proj's all-reduce, so each takes its
         * ceil(T / TP) chunk (sequence_parallel_chunk), the dispatch runs over the EP group
         * (DP x PCP x TP) and a TP all-gather restores every token after the combine
         * (DeepseekV2MoE); the shared experts run on the chunk with whole weights. The gather
         * backends all-gather the tokens (over the EP group; without sequence parallelism over
         * DP, or PCP when DP is 1) and reduce-scatter the output; the others (DeepEP, MoRI,
         * NIXL-EP, FlashInfer NVLink) send each token to its experts' ranks, all-to-all over
         * the EP group. */
        bool sp = model_all2all_sequence_parallel(&pl->par);
        bool a2a = dp > 1 || sp || pcp > 1;
        bool gathers = model_all2all_gathers(pl->par.all2all_backend);
        /* every rank that sees all the tokens runs only its experts: 1 / EP of the routes */
        double local = (double)a->n_routed_experts / pl->ep_size;
        double mine_routes = topk * local / a->n_routed_experts;
        if (!a2a) {
            emit_experts(c, "moe_experts", route_rows, mine_routes, local,
                         a->moe_intermediate_size);
            if (a->n_shared_experts)
                emit_experts(c, "shared_experts", route_rows, 1.0, 1.0, shared_inter / tp);
            if (tp > 1)
                emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, rows * a->hidden_size,
                          SCHED_DTYPE_BF16, rows);
            return;
        }
        uint64_t mine = sp ? (route_rows + tp - 1) / tp : route_rows;
        if (gathers) {
            int32_t gn = sp ? ge : dp > 1 ? pl->dp_group[rank] : pl->pcp_group[rank];
            uint32_t n = sp ? pl->ep_size : dp > 1 ? dp : pcp;
            uint64_t all = mine * n;
            emit_coll(c, SCHED_OP_ALL_GATHER, "ep_dispatch_all_gather", gn, mine * a->hidden_size,
                      SCHED_DTYPE_BF16, mine);
            emit_coll(c, SCHED_OP_ALL_GATHER, "ep_router_logits_all_gather", gn,
                      mine * a->n_routed_experts, SCHED_DTYPE_FP32, mine);
            emit_experts(c, "moe_experts", all, mine_routes, local, a->moe_intermediate_size);
            emit_coll(c, SCHED_OP_REDUCE_SCATTER, "ep_combine_reduce_scatter", gn,
                      all * a->hidden_size, SCHED_DTYPE_BF16, all);
        } else {
            /* each token's top-k copies go to their experts' ranks; as many arrive on average */
            uint64_t send = mine * (uint64_t)topk * a->hidden_size;
            emit_coll(c, SCHED_OP_ALL_TO_ALL, "ep_dispatch", ge, send, SCHED_DTYPE_BF16, mine);
            emit_experts(c, "moe_experts", mine, topk, local, a->moe_intermediate_size);
            emit_coll(c, SCHED_OP_ALL_TO_ALL, "ep_combine", ge, send, SCHED_DTYPE_BF16, mine);
        }
        if (a->n_shared_experts)
            emit_experts(c, "shared_experts", mine, 1.0, 1.0,
                         sp ? shared_inter : shared_inter / tp);
        if (sp)
            emit_coll(c, SCHED_OP_ALL_GATHER, "moe_sp_all_gather", gt, mine * a->hidden_size,
                      SCHED_DTYPE_BF16, mine);
        else if (tp > 1)
            emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, rows * a->hidden_size,
                      SCHED_DTYPE_BF16, rows);
        return;
    }
    if (ep) {
        uint64_t send = route_rows * (uint64_t)topk * a->hidden_size;
        emit_coll(c, SCHED_OP_ALL_TO_ALL, "ep_dispatch", ge, send, SCHED_DTYPE_BF16, route_rows);
        emit_experts(c, "moe_experts", route_rows, topk, (double)a->n_routed_experts / pl->ep_size,
                     a->moe_intermediate_size);
        emit_coll(c, SCHED_OP_ALL_TO_ALL, "ep_combine", ge, send, SCHED_DTYPE_BF16, route_rows);
    } else if (dp > 1 || pcp > 1) {
        /* Without EP the experts are sharded tensor-parallel over all DP x PCP x TP ranks
         * (FusedMoEParallelConfig flatten_tp_across_dp_and_pcp), so every rank runs every
         * token of its DP (or PCP) group: vLLM all-gathers the hidden states and the router
         * logits before the experts and reduce-scatters the output after them — over the DP
         * group (MoERunner.do_naive_dispatch_combine; the all2all manager gathers over the DP
         * group without sequence parallelism; "Detected DP deployment with no
         * --enable-expert-parallel. Falling back to AllGather+ReduceScatter dispatch/combine.")
         * or, with PCP and DP 1, over the PCP group (../shared/reference/vllm-rules.md §1).
         * vLLM gathers with all_gatherv; the DP ranks' rows are padded to the largest here
         * (step_rows), so the counts agree. */
        bool over_dp = dp > 1;
        int32_t gn = over_dp ? pl->dp_group[rank] : pl->pcp_group[rank];
        uint32_t n = over_dp ? dp : pcp;
        uint64_t all = route_rows * n;
        emit_coll(c, SCHED_OP_ALL_GATHER, "moe_dispatch_all_gather", gn,
                  route_rows * a->hidden_size, SCHED_DTYPE_BF16, route_rows);
        emit_coll(c, SCHED_OP_ALL_GATHER, "moe_router_logits_all_gather", gn,
                  route_rows * a->n_routed_experts, SCHED_DTYPE_FP32, route_rows);
        emit_experts(c, "moe_experts", all, topk, a->n_routed_experts,
                     (double)a->moe_intermediate_size / ((double)tp * dp * pcp));
        emit_coll(c, SCHED_OP_REDUCE_SCATTER, "moe_combine_reduce_scatter", gn,
                  all * a->hidden_size, SCHED_DTYPE_BF16, all);
    } else {
        emit_experts(c, "moe_experts", route_rows, topk, a->n_routed_experts,
                     (double)a->moe_intermediate_size / tp);
    }
    if (a->n_shared_experts) {
        /* Under MC2 the shared experts run on this rank's slice of the tokens with full
         * weights; otherwise on all rows with the intermediate size split by TP. */
        double inter = mc2 ? shared_inter : shared_inter / tp;
        emit_experts(c, "shared_experts", route_rows, 1.0, 1.0, inter);
    }
    if (mc2) {
        emit_coll(c, SCHED_OP_ALL_GATHER, "mc2_all_gather", gt, route_rows * a->hidden_size,
                  SCHED_DTYPE_BF16, route_rows);
    } else if (tp > 1 && reduce != MOE_REDUCE_NONE) {
        /* The feature shards of the experts merge over TP. On local (SP) tokens this all-reduce
         * keeps the token layout (seed 000 §3.3.1). */
        emit_coll(c, SCHED_OP_ALL_REDUCE,
                  reduce == MOE_REDUCE_SHARED ? "shared_expert_all_reduce" : "tp_all_reduce", gt,
                  rows * a->hidden_size, SCHED_DTYPE_BF16, rows);
    }
}

/* ---- one decoder layer ---- */

typedef struct {
    bool moe;
    bool indexer;    /* DSA layer with its own indexer (IndexShare: shared layers reuse top-k) */
    uint32_t heads;  /* query heads of the layer (Step-3.5's sliding layers have their own) */
    uint32_t window; /* sliding window of the layer in tokens; 0 = full attention */
    uint32_t ratio;  /* DeepSeek-V4 compress ratio (1, 4, 128); V4.1: its CSA2 ratio (0, 1, r) */
    uint8_t mixer;   /* ModelMixer: attention, Mamba-2, GDN or none (hybrid models) */
    bool no_ffn;     /* Nemotron-H M / *: the mixer alone */
    uint32_t v41;    /* DeepSeek-V4.1 roles: V41_* bits */
} LayerKind;

enum {
    V41_KV_SOURCE = 1u,       /* runs its group's compressor */
    V41_INDEX_SOURCE = 2u,    /* runs the indexer */
    V41_ENGRAM = 4u,          /* an Engram lookup before the layer */
    V41_CANDIDATE = 8u,       /* the indexer also scores the candidate blocks */
    V41_AFTER_CANDIDATE = 16u /* the indexer only scores inside the candidate blocks */
};

static LayerKind layer_kind(const ModelArch *a, uint32_t l)
{
    LayerKind k = {model_arch_layer_is_moe(a, l), a->dsa && !a->index_shared[l],
                   model_arch_layer_heads(a, l), a->layer_sliding[l] ? a->sliding_window : 0,
                   a->dsv4 ? a->compress_ratio[l] : 0u, (uint8_t)model_arch_layer_mixer(a, l),
                   l < a->num_layers && a->layer_no_ffn[l], 0};
    if (a->dsv41) {
        k.ratio = a->csa_ratio[l];
        k.v41 = (a->kv_source[l] ? V41_KV_SOURCE : 0) | (a->index_source[l] ? V41_INDEX_SOURCE : 0) |
                (a->engram[l] ? V41_ENGRAM : 0) |
                (a->candidate_source == (int32_t)l ? V41_CANDIDATE : 0) |
                (a->candidate_source >= 0 && (int32_t)l > a->candidate_source ? V41_AFTER_CANDIDATE
                                                                               : 0);
    }
    return k;
}

/* DeepSeek-V4.1's Engram before a layer (transformers DeepseekV41Engram.forward; vLLM runs V4.1
 * on V4's model class): each token hashes its (max_ngram - 1) n-grams into engram_n_heads rows
 * apiece, gathered from the table (head_dim fp8 + ue8m0 scales a row, random rows); ASSUMPTION
 * the table is row-sharded over TP as a vocabulary embedding is, so the gathered rows are summed
 * by an all-reduce (bf16); then wkv (rows x cols -> H x (hc + 1), the checkpoint's fp8) and the
 * gate, which reads the hc streams and writes them back (fp32 math, bf16 streams). */
static void emit_engram_v41(Ctx *c, uint32_t rank, uint64_t rows)
{
    const ModelArch *a = c->a;
    double r = (double)rows, hc = MAX(1u, a->hc_mult), H = a->hidden_size;
    double n_rows = (double)(a->engram_max_ngram - 1) * a->engram_n_heads;
    double cols = n_rows * a->engram_head_dim, row_bytes = a->engram_head_dim * (1.0 + 1.0 / 32);
    ModelKernelTime k = model_elementwise_time(c->dev, r * n_rows * row_bytes + r * cols * 2.0,
                                               r * cols);
    emit_kernel(c, "engram_gather", rows, &k, model_cost_eager_ns(c->in->cost));
    uint32_t tp = c->pl->par.tensor_parallel_size;
    if (tp > 1)
        emit_coll(c, SCHED_OP_ALL_REDUCE, "engram_all_reduce", c->pl->tp_group[rank],
                  rows * (uint64_t)cols, SCHED_DTYPE_BF16, rows);
    emit_linear(c, "engram_wkv", rows, cols, H * (hc + 1));
    k = model_elementwise_time(c->dev, r * (2.0 * hc * H * 2.0 + H * (hc + 1) * 2.0),
                               6.0 * r * hc * H);
    emit_kernel(c, "engram_gate", rows, &k, model_cost_eager_ns(c->in->cost));
}

/* DeepSeek-V4.1's CSA2 ops of one layer before its attention, and the compressed entries its
 * attention reads per query (transformers deepseek_v41 docs, CSA2): a kv-source layer pools
 * every `ratio` tokens into one latent with a learned gate (fused wkv + wgate, H -> 2 x head_dim,
 * and ASSUMPTION the indexer keys' own, H -> 2 x index_head_dim, as V4's C4 has), bf16 as
 * shipped; an index-source layer runs the indexer over the group's ctx / ratio keys — the
 * candidate source also scores one key per candidate block, and the later index sources score
 * inside the candidate_topk_blocks x candidate_block_size positions it keeps; every compressed
 * layer attends the top index_topk of its group's entries (the others reuse the top-k). */
static double emit_csa2_v41(Ctx *c, const StepRows *sr, LayerKind lk)
{
    const ModelArch *a = c->a;
    uint64_t rows = sr->padded;
    double H = a->hidden_size, D = a->head_dim, id = a->index_head_dim;
    if (lk.ratio == 0)
        return 0;
    if (lk.v41 & V41_KV_SOURCE)
        emit_compute(c, "kv_compressor", rows, 2.0 * (double)rows * H * 2.0 * (D + id),
                     H * 2.0 * (D + id) * c->act_bytes + (double)rows * (D + id) * c->act_bytes,
                     NET_PEAK_BF16);
    double compressed = sr->ctx_avg / lk.ratio;
    if (lk.v41 & V41_INDEX_SOURCE) {
        StepRows keys = *sr;
        keys.ctx_avg = compressed;
        if (lk.v41 & V41_CANDIDATE)
            keys.ctx_avg += compressed / MAX(1u, a->candidate_block_size);
        if (lk.v41 & V41_AFTER_CANDIDATE)
            keys.ctx_avg = MIN(compressed, (double)a->candidate_topk_blocks *
                                               MAX(1u, a->candidate_block_size));
        emit_indexer(c, sr->real, &keys);
    }
    return MIN(compressed, (double)a->index_topk);
}

/* DeepSeek-V4 under TP (deepseek_v4.py): hyper-connection mixing, the replicated fused
 * wq_a + wkv, wq_b by heads, the compressor (C4 / C128) and the C4 indexer, sparse attention over
 * the 128-token window plus the compressed entries (C4: the top index_topk, C128: all of them),
 * the grouped output projection and an all-reduce, then the MoE. */
static void emit_layer_v4(Ctx *c, uint32_t rank, const StepRows *sr, LayerKind lk)
{
    const ModelArch *a = c->a;
    uint32_t tp = c->pl->par.tensor_parallel_size;
    int32_t gt = c->pl->tp_group[rank];
    uint64_t rows = sr->padded;
    double H = a->hidden_size, D = a->head_dim, qr = a->q_lora_rank, h = (double)lk.heads / tp;
    double hc = MAX(1u, a->hc_mult), groups = MAX(1u, a->o_groups / tp);
    if (lk.v41 & V41_ENGRAM)
        emit_engram_v41(c, rank, rows);
    ModelKernelTime mhc = model_mhc_time(c->dev, (double)rows, (uint32_t)hc, (uint32_t)H, true);
    emit_kernel(c, "hc_pre", rows, &mhc, model_cost_eager_ns(c->in->cost));
    emit_norm(c, "input_layernorm", rows, H);
    emit_linear(c, "q_a_kv_proj", rows, H, qr + D);
    emit_norm(c, "q_a_layernorm", rows, qr);
    emit_linear(c, "q_b_proj", rows, qr, h * D);
    double ctx = sr->ctx_avg, entries = MIN(ctx, (double)V4_WINDOW), cbytes = 0;
    if (a->dsv41) { /* the window's fp8 entries plus the FP4 compressed latents (288 B) */
        double picked = emit_csa2_v41(c, sr, lk);
        cbytes = picked * (D / 2.0 + D / 16.0);
        entries += picked;
    } else if (lk.ratio > 1) {
        double coff = lk.ratio == 4 ? 2 : 1;
        emit_compute(c, "kv_compressor", rows, 2.0 * rows * H * 2 * coff * D,
                     H * 2 * coff * D * c->act_bytes, NET_PEAK_BF16);
        double compressed = ctx / lk.ratio;
        entries += lk.ratio == 4 ? MIN(compressed, (double)a->index_topk) : compressed;
    }
    if (lk.ratio == 4 && !a->dsv41)
        emit_indexer(c, sr->real, sr);
    double flops = 2.0 * (double)sr->real * h * entries * (D + D);
    double window = MIN(ctx, (double)V4_WINDOW);
    double abytes = a->dsv41 ? window * V4_ENTRY_BYTES + cbytes : entries * V4_ENTRY_BYTES;
    emit_compute(c, "sparse_attention", sr->real, flops, (double)sr->real * abytes,
                 NET_PEAK_BF16);
    emit_linear(c, "o_proj_a", rows, (double)a->num_heads / a->o_groups * D,
                groups * a->o_lora_rank);
    emit_linear(c, "o_proj", rows, groups * a->o_lora_rank, H);
    if (tp > 1)
        emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, rows * a->hidden_size,
                  SCHED_DTYPE_BF16, rows);
    /* two hyper-connection sites a layer, around attention and around the FFN (AIConfigurator
     * times vLLM's mhc module at num_sites = 2) */
    ModelKernelTime post = model_mhc_time(c->dev, (double)rows, (uint32_t)hc, (uint32_t)H, false);
    emit_kernel(c, "hc_post", rows, &post, model_cost_eager_ns(c->in->cost));
    emit_kernel(c, "hc_pre", rows, &mhc, model_cost_eager_ns(c->in->cost));
    emit_norm(c, "post_attention_layernorm", rows, H);
    emit_moe(c, rank, sr, sr->moe_rows, MOE_REDUCE_TP);
    emit_kernel(c, "hc_post", rows, &post, model_cost_eager_ns(c->in->cost));
}

static void emit_layer_tp(Ctx *c, uint32_t rank, const StepRows *sr, LayerKind lk)
{
    if (c->a->dsv4) {
        emit_layer_v4(c, rank, sr, lk);
        return;
    }
    const ModelArch *a = c->a;
    uint32_t tp = c->pl->par.tensor_parallel_size;
    int32_t gt = c->pl->tp_group[rank];
    uint64_t rows = sr->padded;
    uint32_t h = lk.heads / tp;
    emit_norm(c, "input_layernorm", rows, a->hidden_size);
    if (a->mla) {
        emit_mla_projections(c, rows, h, sr);
    } else {
        double kvh = MAX(1.0, (double)a->num_kv_heads / tp);
        /* one GEMM: vLLM's QKVParallelLinear holds q, k and v in one weight */
        emit_linear(c, "qkv_proj", rows, a->hidden_size, ((double)h + 2.0 * kvh) * a->head_dim);
        emit_qk_rope(c, rows, h, kvh);
    }
    if (lk.indexer)
        emit_indexer(c, sr->real, sr);
    emit_cp_attention(c, rank, sr, rows, h);
    if (a->mla)
        emit_mla_v_absorb(c, rows, h, sr);
    double attn_out = a->mla ? (double)h * a->v_head_dim : (double)h * a->head_dim;
    emit_linear(c, "o_proj", rows, attn_out, a->hidden_size);
    if (tp > 1)
        emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, rows * a->hidden_size,
                  SCHED_DTYPE_BF16, rows);
    emit_norm(c, "post_attention_layernorm", rows, a->hidden_size);
    if (lk.moe) {
        emit_moe(c, rank, sr, sr->moe_rows, MOE_REDUCE_TP);
    } else {
        emit_dense_mlp(c, rows, tp);
        if (tp > 1)
            emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, rows * a->hidden_size,
                      SCHED_DTYPE_BF16, rows);
    }
}

/* Sequence parallel for models without DSA: all-reduces become reduce-scatter + all-gather
 * around the norms, which run on local tokens. */
static void emit_layer_sp(Ctx *c, uint32_t rank, const StepRows *sr, LayerKind lk)
{
    const ModelArch *a = c->a;
    uint32_t tp = c->pl->par.tensor_parallel_size;
    int32_t gt = c->pl->tp_group[rank];
    uint32_t h = lk.heads / tp;
    emit_norm(c, "input_layernorm", sr->local, a->hidden_size);
    emit_coll(c, SCHED_OP_ALL_GATHER, "sp_all_gather", gt, sr->local * a->hidden_size,
              SCHED_DTYPE_BF16, sr->local);
    if (a->mla) {
        emit_mla_projections(c, sr->full, h, sr);
    } else {
        double kvh = MAX(1.0, (double)a->num_kv_heads / tp);
        /* one GEMM: vLLM's QKVParallelLinear holds q, k and v in one weight */
        emit_linear(c, "qkv_proj", sr->full, a->hidden_size, ((double)h + 2.0 * kvh) * a->head_dim);
        emit_qk_rope(c, sr->full, h, kvh);
    }
    StepRows full = *sr;
    full.real = full.padded = sr->full;
    emit_cp_attention(c, rank, &full, sr->full, h);
    if (a->mla)
        emit_mla_v_absorb(c, sr->full, h, sr);
    double attn_out = a->mla ? (double)h * a->v_head_dim : (double)h * a->head_dim;
    emit_linear(c, "o_proj", sr->full, attn_out, a->hidden_size);
    emit_coll(c, SCHED_OP_REDUCE_SCATTER, "sp_reduce_scatter", gt, sr->full * a->hidden_size,
              SCHED_DTYPE_BF16, sr->full);
    emit_norm(c, "post_attention_layernorm", sr->local, a->hidden_size);
    emit_coll(c, SCHED_OP_ALL_GATHER, "sp_all_gather", gt, sr->local * a->hidden_size,
              SCHED_DTYPE_BF16, sr->local);
    if (lk.moe) {
        /* MoE on the gathered tokens (EP dispatch/combine when on); the reduce-scatter below
         * merges the shards and returns to local tokens. */
        emit_moe(c, rank, sr, sr->full, MOE_REDUCE_NONE);
    } else {
        emit_dense_mlp(c, sr->full, tp);
    }
    emit_coll(c, SCHED_OP_REDUCE_SCATTER, "sp_reduce_scatter", gt, sr->full * a->hidden_size,
              SCHED_DTYPE_BF16, sr->full);
}

/* DSA CP (sequence parallel on a DSA model, seed 000 §3.3): full-token attention with
 * replicated q_b/kv_b, a token slice before a replicated o_proj without all-reduce, everything
 * after on local tokens, and one all-gather per layer of the normalized attention input. */
static void emit_layer_dsa_cp(Ctx *c, uint32_t rank, const StepRows *sr, LayerKind lk)
{
    const ModelArch *a = c->a;
    uint32_t tp = c->pl->par.tensor_parallel_size;
    int32_t gt = c->pl->tp_group[rank];
    ModelBreak brk = c->in->broken;
    uint64_t full = sr->full, local = sr->local;
    if (brk == MODEL_BREAK_GATHER_RESIDUAL)
        full = sr->full * tp; /* the residual's gather expands the tokens again */
    emit_norm(c, "input_layernorm", local, a->hidden_size);
    if (brk != MODEL_BREAK_LOCAL_ATTENTION)
        emit_coll(c, SCHED_OP_ALL_GATHER, "sp_all_gather", gt, local * a->hidden_size,
                  SCHED_DTYPE_BF16, local);
    if (brk == MODEL_BREAK_GATHER_RESIDUAL)
        emit_coll(c, SCHED_OP_ALL_GATHER, "sp_all_gather", gt, local * a->hidden_size,
                  SCHED_DTYPE_BF16, local);
    uint64_t arows = brk == MODEL_BREAK_LOCAL_ATTENTION ? local : full;
    emit_mla_projections(c, arows, a->num_heads, sr); /* replicated: full heads */
    StepRows fr = *sr;
    fr.real = fr.padded = arows;
    if (lk.indexer)
        emit_indexer(c, arows, &fr);
    emit_attention(c, arows, a->num_heads, &fr, 1.0);
    emit_mla_v_absorb(c, arows, a->num_heads, sr);
    /* token slice (a layout change, no op), replicated o_proj on local tokens */
    emit_linear(c, "o_proj", local, (double)a->num_heads * a->v_head_dim, a->hidden_size);
    uint64_t frows = brk == MODEL_BREAK_EARLY_GATHER ? sr->full : local;
    if (brk == MODEL_BREAK_EARLY_GATHER)
        emit_coll(c, SCHED_OP_ALL_GATHER, "sp_all_gather", gt, local * a->hidden_size,
                  SCHED_DTYPE_BF16, local);
    emit_norm(c, "post_attention_layernorm", frows, a->hidden_size);
    if (lk.moe) {
        emit_moe(c, rank, sr, frows, MOE_REDUCE_SHARED);
    } else {
        emit_dense_mlp(c, frows, tp);
        emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, frows * a->hidden_size,
                  SCHED_DTYPE_BF16, frows);
    }
}

/* A state mixer (model/lower-hybrid.h) on the TP rows, its out_proj all-reduced over TP. */
static void emit_state_mixer(Ctx *c, uint32_t rank, const StepRows *sr, ModelMixer mx)
{
    uint64_t rows = sr->padded;
    uint32_t tp = c->pl->par.tensor_parallel_size;
    uint64_t dec = MIN(rows, (uint64_t)sr->n_decode * decode_rows(c));
    ModelHybridMixerIn in = {
        .a = c->a,
        .mixer = mx,
        .tp = tp,
        .dev = c->dev,
        .act_bytes = c->act_bytes,
        .batch = {.tokens = (double)rows,
                  .seqs = (double)(sr->n_prefill + sr->n_decode),
                  .decode_seqs = (double)sr->n_decode,
                  .decode_rows = (double)dec},
    };
    ModelHybridOp ops[MODEL_HYBRID_MAX_OPS];
    uint32_t n = model_lower_hybrid_mixer(&in, ops);
    for (uint32_t i = 0; i < n; i++) {
        if (ops[i].kind == MODEL_HOP_LINEAR)
            emit_linear(c, ops[i].name, rows, ops[i].in, ops[i].out);
        else
            emit_kernel(c, ops[i].name, rows, &ops[i].k,
                        ops[i].launches * model_cost_eager_ns(c->in->cost));
    }
    if (tp > 1)
        emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", c->pl->tp_group[rank],
                  rows * c->a->hidden_size, SCHED_DTYPE_BF16, rows);
}

/* A hybrid model's layer under TP (vllm nemotron_h.py / qwen3_next.py decoder layers): the
 * pre-norm, the mixer — a state mixer, or GQA attention (Qwen3-Next: q_proj also yields a
 * sigmoid gate applied before o_proj) — then, unless the layer is its mixer alone, the MoE or
 * MLP (Nemotron-H E / - layers have no mixer; Nemotron-3-Super's experts run between
 * fc1_latent_proj and fc2_latent_proj). */
static void emit_layer_hybrid(Ctx *c, uint32_t rank, const StepRows *sr, LayerKind lk)
{
    const ModelArch *a = c->a;
    uint32_t tp = c->pl->par.tensor_parallel_size;
    int32_t gt = c->pl->tp_group[rank];
    uint64_t rows = sr->padded;
    uint32_t h = lk.heads / tp;
    emit_norm(c, "input_layernorm", rows, a->hidden_size);
    if (lk.mixer == MODEL_MIXER_ATTENTION) {
        double kvh = MAX(1.0, (double)a->num_kv_heads / tp);
        double q = (double)h * (a->attn_output_gate ? 2.0 : 1.0);
        emit_linear(c, "qkv_proj", rows, a->hidden_size, (q + 2.0 * kvh) * a->head_dim);
        if (!a->attn_no_rope) /* Nemotron-H, Granite-4.0-H "nope": no rotary embedding */
            emit_qk_rope(c, rows, h, kvh);
        emit_cp_attention(c, rank, sr, rows, h);
        if (a->attn_output_gate) {
            double x = (double)rows * h * a->head_dim;
            ModelKernelTime g = model_elementwise_time(c->dev, 3.0 * x * c->act_bytes, 4.0 * x);
            emit_kernel(c, "attn_output_gate", rows, &g, model_cost_eager_ns(c->in->cost));
        }
        emit_linear(c, "o_proj", rows, (double)h * a->head_dim, a->hidden_size);
        if (tp > 1)
            emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, rows * a->hidden_size,
                      SCHED_DTYPE_BF16, rows);
        if (a->parallel_ssm) /* Falcon-H1: the Mamba-2 branch beside the attention */
            emit_state_mixer(c, rank, sr, MODEL_MIXER_MAMBA2);
    } else if (lk.mixer != MODEL_MIXER_NONE) {
        emit_state_mixer(c, rank, sr, (ModelMixer)lk.mixer);
    }
    if (lk.no_ffn)
        return;
    if (lk.mixer != MODEL_MIXER_NONE)
        emit_norm(c, "post_attention_layernorm", rows, a->hidden_size);
    if (!lk.moe) {
        emit_dense_mlp(c, rows, tp);
        if (tp > 1)
            emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, rows * a->hidden_size,
                      SCHED_DTYPE_BF16, rows);
        return;
    }
    if (a->moe_latent_size)
        emit_linear(c, "fc1_latent_proj", sr->moe_rows, a->hidden_size, a->moe_latent_size);
    emit_moe(c, rank, sr, sr->moe_rows, MOE_REDUCE_TP);
    if (a->moe_latent_size)
        emit_linear(c, "fc2_latent_proj", sr->moe_rows, a->moe_latent_size, a->hidden_size);
}

static void emit_layer(Ctx *c, uint32_t rank, const StepRows *sr, LayerKind lk)
{
    c->window = lk.window;
    if (model_arch_is_hybrid(c->a)) {
        emit_layer_hybrid(c, rank, sr, lk);
        return;
    }
    switch (sr->mode) {
    case MODE_DSA_CP:
        emit_layer_dsa_cp(c, rank, sr, lk);
        break;
    case MODE_SP:
        emit_layer_sp(c, rank, sr, lk);
        break;
    default:
        emit_layer_tp(c, rank, sr, lk);
        break;
    }
}

/* ---- a whole step ---- */

/* PP: the hidden states and the residual ([rows, hidden] bf16 each) to or from the same
 * (DP, PCP, TP) position of the next / previous stage. GroupCoordinator.send_tensor_dict with
 * all_gather_group = TP (vllm/distributed/parallel_state.py): each TP rank sends 1/TP of a
 * tensor whose size TP divides, and the receiving stage all-gathers it over TP. */
static void emit_pp_transfer(Ctx *c, uint32_t rank, uint64_t rows, bool send)
{
    const ModelPlan *pl = c->pl;
    const ModelParallel *par = &pl->par;
    uint32_t tp = par->tensor_parallel_size;
    uint32_t stride = par->prefill_context_parallel_size * tp;
    int32_t peer = (int32_t)(send ? rank + stride : rank - stride);
    uint64_t n = rows * c->a->hidden_size;
    bool split = tp > 1 && n % tp == 0;
    static const char *const tensors[2][2] = {{"pp_recv_hidden_states", "pp_recv_residual"},
                                              {"pp_send_hidden_states", "pp_send_residual"}};
    for (int k = 0; k < 2; k++) {
        SchedOp op =
            sched_op_p2p(send ? SCHED_OP_SEND : SCHED_OP_RECV, op_name(c, tensors[send][k]), peer,
                         split ? n / tp : n, SCHED_DTYPE_BF16);
        op.tokens = rows;
        /* vLLM sends with isend_tensor_dict (PR #33368, "Pipeline Parallel Async send/recv"):
         * the stage goes on to its next batch while the transfer waits for the receiver */
        if (send)
            op.flags |= SCHED_OP_FLAG_EAGER;
        g_array_append_val(c->ops, op);
        if (!send && split)
            emit_coll(c, SCHED_OP_ALL_GATHER, "pp_tp_all_gather", pl->tp_group[rank], n / tp,
                      SCHED_DTYPE_BF16, rows);
    }
}

/* Whether a DP rank skips its drafter this step: the scenario says so, or — in vLLM before PR
 * #40589 — its longest sequence plus the speculative tokens exceeds max_model_len
 * (input_fits_in_drafter false) and no dummy drafter run replaces the proposal. */
static bool drafter_skipped(const Ctx *c, const ModelBatch *b)
{
    if (!b)
        return false;
    if (b->skip_drafter)
        return true;
    if (model_vllm_has(c->e->vllm_absent, MODEL_VLLM_DRAFTER_DUMMY_WHEN_SKIPPED))
        return false;
    uint64_t longest = 0;
    for (guint i = 0; i < b->decode->len; i++)
        longest = MAX(longest, (uint64_t)g_array_index(b->decode, uint32_t, i));
    for (guint i = 0; i < b->prefill->len; i++)
        longest = MAX(longest, (uint64_t)g_array_index(b->prefill, uint32_t, i) +
                                   model_batch_prefill_ctx(b, i));
    return longest + c->e->num_speculative_tokens > c->e->max_model_len;
}

/* Whether the step replays CUDA graphs (vLLM's CudagraphDispatcher): a batch of at most the
 * largest capture size runs as a graph — a full one (attention included) for a uniform decode
 * batch under FULL or FULL_AND_PIECEWISE, and for any batch under FULL; piecewise graphs
 * (split at every attention op, which runs eagerly) for mixed batches under
 * FULL_AND_PIECEWISE and for every batch under PIECEWISE. Larger batches and NONE run eagerly:
 * every op pays the launch. */
static void step_graphs(Ctx *c, const StepRows *sr)
{
    ModelCudagraph m = c->e->cudagraph_mode;
    uint32_t largest = 0;
    c->graphed = c->graphed_attention = false;
    if (m == MODEL_CUDAGRAPH_NONE ||
        model_engine_cudagraph_sizes(c->e, c->in->hw, UINT32_MAX, &largest) == 0)
        return;
    uint64_t rows = sr->mode == MODE_TP ? sr->padded : sr->full;
    if (rows > largest)
        return;
    c->graphed = true;
    c->graphed_attention =
        m == MODEL_CUDAGRAPH_FULL || (m == MODEL_CUDAGRAPH_FULL_AND_PIECEWISE && !sr->has_prefill);
}

/* The MTP drafter after the target forward (vllm/v1/spec_decode, deepseek_mtp.py), k times:
 * enorm and hnorm, the replicated eh_proj [2H -> H], one decoder layer (the model's MTP layer,
 * numbered after the last decoder layer), shared_head.norm and its lm_head. Every DP rank runs
 * it on the step's largest count of sequences (idle ones in their dummy run), so its EP
 * collectives agree across DP. */
static void emit_drafter(Ctx *c, uint32_t rank, const ModelStep *s, const StepRows *sr)
{
    const ModelArch *a = c->a;
    const ModelParallel *par = &c->pl->par;
    uint64_t rows = sr->logits_rows;
    for (uint32_t dp = 0; dp < par->data_parallel_size; dp++) {
        const ModelBatch *x = model_step_batch(s, dp);
        if (x)
            rows = MAX(rows, (uint64_t)x->prefill->len + x->decode->len);
    }
    rows = MAX(rows, 1u);
    StepRows dr = *sr;
    dr.tokens = dr.real = dr.padded = dr.moe_rows = dr.logits_rows = rows;
    dr.mode = MODE_TP;
    LayerKind lk = layer_kind(a, a->num_layers - 1);
    lk.moe = a->moe;
    lk.indexer = a->dsa;
    for (uint32_t j = 0; j < c->e->num_speculative_tokens; j++) {
        emit_norm(c, "mtp_enorm", rows, a->hidden_size);
        emit_norm(c, "mtp_hnorm", rows, a->hidden_size);
        emit_linear(c, "mtp_eh_proj", rows, 2.0 * a->hidden_size, a->hidden_size);
        guint header = c->ops->len;
        SchedOp rep = sched_op_repeat(1, 0, (int32_t)a->num_layers);
        g_array_append_val(c->ops, rep);
        emit_layer(c, rank, &dr, lk);
        g_array_index(c->ops, SchedOp, header).body_len = c->ops->len - header - 1;
        emit_norm(c, "mtp_shared_head_norm", rows, a->hidden_size);
        emit_linear_bf16(c, "mtp_lm_head", rows, a->hidden_size,
                    (double)a->vocab_size / par->tensor_parallel_size);
    }
}

/* A DP rank with nothing to run: an MoE model's runs a dummy batch so the EP (or DP)
 * collectives have every member (vLLM's execute_dummy_batch); a dense model's DP ranks share no
 * collective, so an idle one runs nothing — nor does one that skips its dummy batch. */
static bool step_skipped(const Ctx *c, uint32_t rank, const ModelStep *s)
{
    const ModelBatch *own = model_step_batch(s, c->pl->coord[rank].dp);
    return model_batch_tokens(own) == 0 && (!c->a->moe || (own && own->skip_dummy));
}

/* The output rank of a rank's DP replica under PP: the first TP rank of its last stage
 * (MultiprocExecutor: "TP rank=0 and PP rank=-1"). */
static uint32_t output_rank(const ModelPlan *pl, uint32_t rank)
{
    uint32_t stages = MAX(1u, pl->par.pipeline_parallel_size);
    uint32_t per = stages * pl->par.prefill_context_parallel_size * pl->par.tensor_parallel_size;
    return pl->coord[rank].dp * per + (stages - 1) * (per / stages);
}

/* Before a step: the engine's idle wait, and under PP the step's SchedulerOutput, which every
 * worker of the DP replica takes from the engine core (its shared-memory MessageQueue). The
 * engine core has it once it scheduled the step — after the output of the step it waited for
 * (ModelStep.sched_after) came back from the last stage — so it comes from the output rank,
 * which sends it to each worker (eagerly: it waits for none of them) right after finishing
 * that step; each worker waits for it alone (`scheduler_output`, a send/recv pair per worker). */
static void emit_step_head(Ctx *c, uint32_t rank, const ModelStep *s)
{
    const ModelPlan *pl = c->pl;
    if (s->idle_ns > 0) {
        SchedOp idle = sched_op_compute(op_name(c, "idle"), s->idle_ns, 0);
        g_array_append_val(c->ops, idle);
    }
    if (MAX(1u, pl->par.pipeline_parallel_size) == 1)
        return;
    uint32_t root = output_rank(pl, rank), name = op_name(c, "scheduler_output");
    if (root != rank) {
        SchedOp so = sched_op_p2p(SCHED_OP_RECV, name, (int32_t)root, 1, SCHED_DTYPE_INT32);
        g_array_append_val(c->ops, so);
        return;
    }
    const SchedGroup *g = sched_program_group(c->p, pl->sched_group[rank]);
    for (uint32_t i = 0; i < g->n; i++) {
        if ((uint32_t)g->ranks[i] == rank)
            continue;
        SchedOp so = sched_op_p2p(SCHED_OP_SEND, name, g->ranks[i], 1, SCHED_DTYPE_INT32);
        so.flags |= SCHED_OP_FLAG_EAGER;
        g_array_append_val(c->ops, so);
    }
}

static void emit_step(Ctx *c, uint32_t rank, const ModelStep *s);
static void emit_step_body(Ctx *c, uint32_t rank, const ModelStep *s);

/* Marks the first op emitted since `from` as the start of a time-line segment (a served step's
 * ops repeat from step to step: sched/program.h's SCHED_OP_FLAG_SEGMENT) — unless that op opens
 * a repeat, whose body would cut the line at every iteration. */
static void mark_segment(Ctx *c, guint from)
{
    for (guint i = from; i < c->ops->len;) {
        SchedOp *op = &g_array_index(c->ops, SchedOp, i);
        if (op->kind != SCHED_OP_REPEAT) {
            op->flags |= SCHED_OP_FLAG_SEGMENT;
            return;
        }
        if (op->times)
            return;
        i += 1 + op->body_len;
    }
}

/* One rank's ops: each step's head and body in order — except the output rank under PP, which
 * sends a step's SchedulerOutput after the body of the step the engine waited for before
 * scheduling it (batches in flight meanwhile start on the other stages as soon as it arrives). */
static void emit_rank(Ctx *c, uint32_t rank, const ModelWorkload *w)
{
    guint n = w->steps->len;
    if (MAX(1u, c->pl->par.pipeline_parallel_size) == 1 || output_rank(c->pl, rank) != rank) {
        for (guint j = 0; j < n; j++) {
            const ModelStep *s = g_ptr_array_index(w->steps, j);
            if (step_skipped(c, rank, s))
                continue;
            guint from = c->ops->len;
            emit_step_head(c, rank, s);
            emit_step(c, rank, s);
            mark_segment(c, from);
        }
        return;
    }
    guint next = 0;
    int64_t after = -1; /* the step after whose body the next head goes */
    for (int64_t k = -1; k < (int64_t)n; k++) {
        if (k >= 0 && !step_skipped(c, rank, g_ptr_array_index(w->steps, k))) {
            guint from = c->ops->len;
            emit_step(c, rank, g_ptr_array_index(w->steps, k));
            mark_segment(c, from);
        }
        while (next < n) {
            const ModelStep *s = g_ptr_array_index(w->steps, next);
            /* -1: with the step before; never before an earlier head nor after its own body */
            int64_t want = s->sched_after < 0 ? after : MAX(after, (int64_t)s->sched_after);
            want = MIN(want, (int64_t)next - 1);
            if (want > k)
                break;
            after = k;
            if (!step_skipped(c, rank, s))
                emit_step_head(c, rank, s);
            next++;
        }
    }
}

/* vLLM's sampler over `rows` sequences' logits: the logits made fp32, temperature, softmax,
 * top-k/top-p and the draw (vllm/v1/sample/sampler.py; FlashInfer's sampling kernels): about
 * four kernels, each a pass over rows x vocab fp32 values. APPROXIMATION: greedy requests
 * (an argmax) cost the same; logprobs, penalties and structured output are not counted. */
#define SAMPLER_KERNELS 4.0

static void emit_sampler(Ctx *c, uint64_t rows)
{
    double pass = (double)rows * c->a->vocab_size * 4.0;
    ModelKernelTime k = model_elementwise_time(c->dev, SAMPLER_KERNELS * 2.0 * pass, 0);
    ModelKernelTime one = model_elementwise_time(c->dev, 0, 0);
    k.ns += (SAMPLER_KERNELS - 1.0) * one.ns; /* the other kernels' fixed time */
    emit_kernel(c, "sampler", rows, &k, SAMPLER_KERNELS * model_cost_eager_ns(c->in->cost));
}

/* Nanoseconds of the compute ops in ops[from, to), repeat blocks counted as many times as they
 * run: the step's GPU work on this rank, collectives aside (their time is the engine's). */
static double compute_ns(const GArray *ops, guint from, guint to)
{
    double sum = 0;
    for (guint i = from; i < to; i++) {
        const SchedOp *op = &g_array_index(ops, SchedOp, i);
        if (op->kind == SCHED_OP_REPEAT) {
            sum += compute_ns(ops, i + 1, i + 1 + op->body_len) * op->times;
            i += op->body_len;
        } else if (op->kind == SCHED_OP_COMPUTE) {
            sum += (double)op->dur_ns;
        }
    }
    return sum;
}

/* vLLM's host work for the step (model/host.h), put before the step's first op on this rank
 * where it shows: with async scheduling only what exceeds the step's GPU work. */
static void emit_host(Ctx *c, guint at, const ModelBatch *own)
{
    uint32_t seqs = own ? own->prefill->len + own->decode->len : 0;
    double host = model_host_step_ns(seqs);
    double shown = model_host_exposed_ns(host, compute_ns(c->ops, at, c->ops->len),
                                         c->e->async_scheduling);
    int64_t ns = (int64_t)ceil(shown);
    if (ns <= 0)
        return;
    SchedOp op = sched_op_compute(op_name(c, "vllm_host"), ns, seqs);
    op.bound = SCHED_BOUND_LAUNCH;
    g_array_insert_val(c->ops, at, op);
}

static void emit_step(Ctx *c, uint32_t rank, const ModelStep *s)
{
    guint body_start = c->ops->len;
    emit_step_body(c, rank, s);
    emit_host(c, body_start, model_step_batch(s, c->pl->coord[rank].dp));
}

static void emit_step_body(Ctx *c, uint32_t rank, const ModelStep *s)
{
    const ModelArch *a = c->a;
    const ModelPlan *pl = c->pl;
    uint32_t tp = pl->par.tensor_parallel_size;
    int32_t gt = pl->tp_group[rank];
    uint32_t stages = MAX(1u, pl->par.pipeline_parallel_size), stage = pl->coord[rank].pp;
    bool first = stage == 0, last = stage + 1 == stages;
    const ModelBatch *own = model_step_batch(s, pl->coord[rank].dp);
    StepRows sr = step_rows(c, s, rank);
    uint64_t in_rows = sr.mode == MODE_TP ? sr.padded : sr.full;
    step_graphs(c, &sr);
    /* DP ranks of an MoE model agree on each step's batch before it runs
     * (vllm/v1/worker/dp_utils.py coordinate_batch_across_dp: an all-reduce of a 4 x DP int32
     * tensor — token counts unpadded and padded, microbatching, CUDA-graph mode — over the DP
     * group's CPU (gloo) group), so a DP rank that skips a step stalls them all here. */
    uint32_t dp = pl->par.data_parallel_size;
    if (dp > 1 && a->moe)
        emit_coll(c, SCHED_OP_ALL_REDUCE, "dp_batch_all_reduce", pl->dp_group[rank], 4ull * dp,
                  SCHED_DTYPE_INT32, 0);
    /* Embedding on the first stage: vocab-parallel lookup, combined over TP (reduce-scattered
     * to local tokens under sequence parallelism). Later stages receive the previous stage's
     * hidden states and residual instead. */
    if (first) {
        emit_compute(c, "embed", in_rows, 0, (double)in_rows * a->hidden_size * c->act_bytes,
                     NET_PEAK_BF16);
        if (tp > 1) {
            if (sr.mode == MODE_TP)
                emit_coll(c, SCHED_OP_ALL_REDUCE, "tp_all_reduce", gt, in_rows * a->hidden_size,
                          SCHED_DTYPE_BF16, in_rows);
            else
                emit_coll(c, SCHED_OP_REDUCE_SCATTER, "sp_reduce_scatter", gt,
                          in_rows * a->hidden_size, SCHED_DTYPE_BF16, in_rows);
        }
    } else {
        emit_pp_transfer(c, rank, sr.padded, false);
    }
    /* Layers of this stage: one repeat block per run of identical layers. */
    uint32_t l_end = stages > 1 ? pl->layer_end[stage] : a->num_layers;
    for (uint32_t l = stages > 1 ? pl->layer_start[stage] : 0; l < l_end;) {
        LayerKind lk = layer_kind(a, l);
        uint32_t end = l + 1;
        while (end < l_end) {
            LayerKind nk = layer_kind(a, end);
            if (nk.moe != lk.moe || nk.indexer != lk.indexer || nk.heads != lk.heads ||
                nk.window != lk.window || nk.ratio != lk.ratio || nk.mixer != lk.mixer ||
                nk.no_ffn != lk.no_ffn || nk.v41 != lk.v41)
                break;
            end++;
        }
        guint header = c->ops->len;
        SchedOp rep = sched_op_repeat(end - l, 0, (int32_t)l);
        g_array_append_val(c->ops, rep);
        emit_layer(c, rank, &sr, lk);
        g_array_index(c->ops, SchedOp, header).body_len = c->ops->len - header - 1;
        l = end;
    }
    if (!last) {
        emit_pp_transfer(c, rank, sr.padded, true);
        return;
    }
    uint64_t out_rows = sr.mode == MODE_TP ? sr.padded : sr.local;
    if (sr.mode != MODE_TP) {
        emit_coll(c, SCHED_OP_ALL_GATHER, "sp_all_gather", gt, sr.local * a->hidden_size,
                  SCHED_DTYPE_BF16, sr.local);
        out_rows = sr.full;
    }
    emit_norm(c, "final_norm", out_rows, a->hidden_size);
    if (pl->par.prefill_context_parallel_size > 1)
        emit_coll(c, SCHED_OP_ALL_GATHER, "pcp_out_all_gather", pl->pcp_group[rank],
                  sr.padded * a->hidden_size, SCHED_DTYPE_BF16, sr.padded);
    uint64_t lr = sr.logits_rows ? sr.logits_rows : 1;
    emit_linear_bf16(c, "lm_head", lr, a->hidden_size, (double)a->vocab_size / tp);
    emit_sampler(c, lr);
    if (c->e->speculative_method == MODEL_SPEC_MTP && c->e->num_speculative_tokens > 0 &&
        a->num_nextn_predict_layers > 0 && !drafter_skipped(c, own))
        emit_drafter(c, rank, s, &sr);
}

/* ---- entry point ---- */

/* The attention backend exists for this architecture and device, and vLLM accepts it with
 * this parallel plan. */
static bool check_backend(const ModelLowerInput *in, ModelBackend backend, GError **error)
{
    const ModelArch *a = in->arch;
    const ModelParallel *par = &in->plan->par;
    char why[512];
    if (!model_backend_check(backend, a, in->hw, why, sizeof why)) {
        g_set_error(error, MODEL_LOWER_ERROR, MODEL_LOWER_ERROR_BACKEND, "%s", why);
        return false;
    }
    /* FlashInferMLASparseTRTLLMBackend.supports_combination (vLLM PR #55879), in its words. */
    if (backend == MODEL_BACKEND_FLASHINFER_MLA_SPARSE && par->prefill_context_parallel_size > 1 &&
        par->decode_context_parallel_size > 1 &&
        model_vllm_has(in->engine->vllm_absent, MODEL_VLLM_SPARSE_MLA_BACKEND_CHECK)) {
        g_set_error(error, MODEL_LOWER_ERROR, MODEL_LOWER_ERROR_BACKEND,
                    "attention backend FLASHINFER_MLA_SPARSE: vLLM refuses it here: "
                    "\"FLASHINFER_MLA_SPARSE does not support combined PCP+DCP; use "
                    "FLASHMLA_SPARSE, which gathers each DCP KV shard before running the "
                    "rank-local PCP prefill queries\" (since PR #55879; AUTO picks "
                    "FLASHMLA_SPARSE; engine.vllm_without: [55879] for the vLLM before it)");
        return false;
    }
    return true;
}

/* vLLM's context-parallel (PCP, DCP) rules that need the model, the engine or the backend. */
static bool check_context_parallel(const ModelLowerInput *in, ModelBackend backend, GError **error)
{
    const ModelArch *a = in->arch;
    const ModelParallel *par = &in->plan->par;
    /* ../shared/reference/vllm-rules.md §2, in vLLM's words */
    uint32_t pcp = par->prefill_context_parallel_size, dcp = par->decode_context_parallel_size;
    if (pcp > 1 && !a->mla) {
        g_set_error(error, MODEL_LOWER_ERROR, 0,
                    "parallel.prefill_context_parallel_size %u: vLLM refuses it for this model: "
                    "\"MRV2 PCP currently supports MLA models only.\" (PCPManager.validate_config, "
                    "vllm/v1/worker/gpu/pcp_manager.py); valid: prefill_context_parallel_size 1, "
                    "or decode_context_parallel_size for a GQA model",
                    pcp);
        return false;
    }
    /* Model Runner V2 (which PCP needs) has no sequence parallelism (vllm/config/vllm.py);
     * vLLM-Ascend's DSA CP is its own path, refused with PCP below */
    if (pcp > 1 && par->enable_sequence_parallel && par->tensor_parallel_size > 1 &&
        backend != MODEL_BACKEND_ASCEND) {
        g_set_error(error, MODEL_LOWER_ERROR, 0,
                    "parallel.prefill_context_parallel_size %u with sequence parallelism: vLLM "
                    "refuses it: \"Model Runner V2 does not yet support: sequence parallelism\" "
                    "(PCP runs on Model Runner V2); turn enable_sequence_parallel off or set "
                    "prefill_context_parallel_size 1",
                    pcp);
        return false;
    }
    if (pcp > 1 && in->engine->num_speculative_tokens > 0) {
        g_set_error(error, MODEL_LOWER_ERROR, 0,
                    "parallel.prefill_context_parallel_size %u with speculative decoding: vLLM "
                    "refuses it: \"MRV2 PCP does not support speculative decoding yet.\" "
                    "(pcp_manager.py); drop --speculative-config or set "
                    "prefill_context_parallel_size 1",
                    pcp);
        return false;
    }
    if (dcp > 1) {
        uint32_t il = MAX(par->cp_kv_cache_interleave_size, 1u);
        uint32_t blk = model_engine_kv_block_size(a, backend, in->hw);
        if (il > blk || blk % il != 0) {
            g_set_error(error, MODEL_LOWER_ERROR, MODEL_LOWER_ERROR_BACKEND,
                        "parallel.cp_kv_cache_interleave_size %u: vLLM refuses it with the %s "
                        "backend's %u-token blocks: \"Block_size(%u) should be greater than or "
                        "equal to and divisible by cp_kv_cache_interleave_size (%u).\" "
                        "(VllmConfig.validate_block_size); valid: a divisor of %u",
                        il, model_backend_name(backend), blk, blk, il, blk);
            return false;
        }
    }
    if (pcp > 1 || dcp > 1) {
        bool sliding = a->sliding_window > 0;
        for (uint32_t l = 0; !sliding && l < a->num_layers && l < MODEL_MAX_LAYERS; l++)
            sliding = a->layer_sliding[l];
        if (sliding) {
            g_set_error(error, MODEL_LOWER_ERROR, 0,
                        "parallel.%s_context_parallel_size %u: vLLM refuses it for a model with "
                        "sliding-window attention: \"%s not support sliding window attn now.\" "
                        "(vllm/v1/core/single_type_kv_cache_manager.py); valid: "
                        "prefill_context_parallel_size 1 and decode_context_parallel_size 1",
                        dcp > 1 ? "decode" : "prefill", dcp > 1 ? dcp : pcp,
                        dcp > 1 ? "DCP" : "PCP");
            return false;
        }
    }
    return true;
}

/* What vLLM's DeepSeek-V4 asserts and what ranksim lowers of it and of DSA CP. */
static bool check_dsa(const ModelLowerInput *in, GError **error)
{
    const ModelArch *a = in->arch;
    const ModelParallel *par = &in->plan->par;
    if (a->dsv4) {
        /* what vLLM's DeepSeek-V4 asserts, and what ranksim lowers of it */
        if (in->engine->kv_cache_dtype != SCHED_DTYPE_FP8) {
            g_set_error(error, MODEL_LOWER_ERROR, 0,
                        "DeepSeek-V4 needs an fp8 KV cache (vLLM asserts kv_cache_dtype fp8 and "
                        "stores fp8_ds_mla); valid: kv_cache_dtype fp8 (--kv-cache-dtype fp8)");
            return false;
        }
        if (par->tensor_parallel_size > a->o_groups) {
            g_set_error(error, MODEL_LOWER_ERROR, 0,
                        "parallel.tensor_parallel_size %u exceeds DeepSeek-V4's o_groups (%u): "
                        "its grouped output projection gives each rank o_groups / TP groups",
                        par->tensor_parallel_size, a->o_groups);
            return false;
        }
        if (par->prefill_context_parallel_size > 1 || par->decode_context_parallel_size > 1 ||
            par->enable_sequence_parallel) {
            g_set_error(error, MODEL_LOWER_ERROR, 0,
                        "DeepSeek-V4 is lowered for tensor, data and expert parallelism; PCP, DCP "
                        "and sequence parallel are not modelled for it (valid: "
                        "prefill_context_parallel_size 1, decode_context_parallel_size 1)");
            return false;
        }
    }
    if (par->enable_sequence_parallel && a->dsa && a->mla && par->tensor_parallel_size > 1 &&
        (par->prefill_context_parallel_size > 1 || par->decode_context_parallel_size > 1)) {
        g_set_error(error, MODEL_LOWER_ERROR, 0,
                    "DSA CP (enable_sequence_parallel on a sparse-attention model) is modelled "
                    "without PCP or DCP, as seed 000 scopes it; set prefill_context_parallel_size "
                    "and decode_context_parallel_size to 1, or turn sequence parallel off");
        return false;
    }
    return true;
}

/* Every step fits the plan (no more batches than DP ranks) and the engine (max_model_len). */
static bool check_workload(const ModelLowerInput *in, GError **error)
{
    const ModelParallel *par = &in->plan->par;
    for (guint i = 0; i < in->workload->steps->len; i++) {
        const ModelStep *s = g_ptr_array_index(in->workload->steps, i);
        if (s->per_dp->len > par->data_parallel_size) {
            g_set_error(error, MODEL_LOWER_ERROR, 0,
                        "step %u lists %u per-DP-rank batches but data_parallel_size is %u", i + 1,
                        s->per_dp->len, par->data_parallel_size);
            return false;
        }
        for (guint d = 0; d < s->per_dp->len; d++) {
            const ModelBatch *b = g_ptr_array_index(s->per_dp, d);
            GArray *lists[] = {b->prefill, b->decode};
            for (int k = 0; k < 2; k++)
                for (guint j = 0; j < lists[k]->len; j++) {
                    uint64_t len = g_array_index(lists[k], uint32_t, j);
                    if (k == 0)
                        len += model_batch_prefill_ctx(b, j);
                    if (len > in->engine->max_model_len) {
                        g_set_error(error, MODEL_LOWER_ERROR, 0,
                                    "step %u: a %s of %" G_GUINT64_FORMAT
                                    " tokens exceeds max_model_len=%u",
                                    i + 1, k ? "decode context" : "prompt", len,
                                    in->engine->max_model_len);
                        return false;
                    }
                }
        }
    }
    return true;
}

/* Hybrid models: what vLLM refuses with them, and what ranksim does not lower
 * (model/lower-hybrid.h). */
static bool check_hybrid(const ModelLowerInput *in, GError **error)
{
    const ModelParallel *par = &in->plan->par;
    g_autofree char *why = model_lower_hybrid_refusal(
        in->arch, par->tensor_parallel_size, par->prefill_context_parallel_size,
        par->decode_context_parallel_size, par->enable_sequence_parallel);
    if (!why)
        return true;
    g_set_error(error, MODEL_LOWER_ERROR, MODEL_LOWER_ERROR_INVALID, "%s: %s", in->arch->name, why);
    return false;
}

static bool check_input(const ModelLowerInput *in, ModelBackend backend, GError **error)
{
    return check_hybrid(in, error) && check_backend(in, backend, error) &&
           check_context_parallel(in, backend, error) && check_dsa(in, error) &&
           check_workload(in, error);
}

/* Bytes per weight value and the dtype linears compute in, from the format of the tensors that
 * dominate the weight bytes (routed experts of a MoE model, else the dense MLP), in the
 * checkpoint's spec or the engine.quantization override. Weight-only formats (int4 groups)
 * compute in bf16; fp8 in fp8; int8 in int8; nvfp4 / mxfp4 in fp4 (net/cost.c falls back to the
 * bf16 peak on devices without one). APPROXIMATION: one format for every linear of the step. */
static void weight_dtype(const ModelLowerInput *in, double *wbytes, NetPeakDtype *cdt,
                         ModelGemmDtype *gdt)
{
    const ModelArch *a = in->arch;
    ModelQuantSpec ov;
    const ModelQuantSpec *q = &a->quant;
    if (in->engine->quantization_override &&
        model_quant_spec_from_name(model_engine_quant_name(in->engine->quantization), a->moe,
                                   a->native_dtype, a->num_layers, &ov))
        q = &ov;
    int32_t layer = 0;
    while (a->moe && (uint32_t)layer < a->num_layers &&
           !model_arch_layer_is_moe(a, (uint32_t)layer))
        layer++;
    ModelTensorRole role =
        a->moe && (uint32_t)layer < a->num_layers ? MODEL_ROLE_EXPERT : MODEL_ROLE_DENSE_MLP;
    if ((uint32_t)layer >= a->num_layers)
        layer = 0;
    const ModelWeightFormat *f = model_quant_format(q, layer, role);
    *wbytes = model_weight_format_bytes_per_value(f);
    switch (f->kind) {
    case MODEL_WFMT_FP8_BLOCK:
        *cdt = NET_PEAK_FP8;
        *gdt = MODEL_GEMM_FP8_BLOCK;
        /* --quantization fp8 on a 16-bit checkpoint quantizes online with one scale per
         * tensor (Fp8LinearMethod.process_weights_after_loading: ops.scaled_fp8_quant with no
         * scale; vLLM's FP8 docs: "weights quantized down to FP8_E4M3 precision with a
         * per-tensor scale"): the per-tensor CUTLASS kernel runs it, not a block-scaled one. */
        if (q == &ov && in->engine->quantization == MODEL_QUANT_FP8)
            *gdt = MODEL_GEMM_FP8;
        break;
    case MODEL_WFMT_FP8_CHANNEL:
    case MODEL_WFMT_FP8_TENSOR:
        *cdt = NET_PEAK_FP8;
        *gdt = MODEL_GEMM_FP8;
        break;
    case MODEL_WFMT_INT8_CHANNEL:
        *cdt = NET_PEAK_INT8;
        *gdt = MODEL_GEMM_INT8;
        break;
    case MODEL_WFMT_NVFP4:
        *cdt = NET_PEAK_FP4;
        *gdt = MODEL_GEMM_NVFP4;
        break;
    case MODEL_WFMT_MXFP4:
        *cdt = NET_PEAK_FP4;
        *gdt = MODEL_GEMM_MXFP4;
        break;
    case MODEL_WFMT_INT4_GROUP:
        /* Ascend W4A8 computes in int8; GPU W4A16 dequantizes to bf16 */
        *cdt = f->scheme == MODEL_QSCHEME_ASCEND ? NET_PEAK_INT8 : NET_PEAK_BF16;
        *gdt = f->scheme == MODEL_QSCHEME_ASCEND ? MODEL_GEMM_INT8 : MODEL_GEMM_INT4;
        break;
    default:
        *cdt = NET_PEAK_BF16;
        *gdt = MODEL_GEMM_BF16;
        break;
    }
}

SchedProgram *model_lower(const ModelLowerInput *in, GError **error)
{
    g_return_val_if_fail(in && in->arch && in->plan && in->engine && in->workload && in->cost,
                         NULL);
    ModelBackend backend = model_engine_backend(in->arch, in->engine, &in->plan->par, in->hw);
    if (!check_input(in, backend, error))
        return NULL;
    Ctx c = {.in = in,
             .a = in->arch,
             .pl = in->plan,
             .e = in->engine,
             .backend = backend,
             .act_bytes = 2,
             .kv_bytes = in->engine->kv_cache_dtype == SCHED_DTYPE_FP8 ? 1 : 2,
             .p = sched_program_new(in->plan->world)};
    weight_dtype(in, &c.wbytes, &c.cdt, &c.gdt);
    c.dev = model_cost_hardware(in->cost);
    model_plan_add_groups((ModelPlan *)in->plan, c.p);
    c.ops = g_array_new(FALSE, FALSE, sizeof(SchedOp));
    for (uint32_t r = 0; r < in->plan->world; r++) {
        g_array_set_size(c.ops, 0);
        emit_rank(&c, r, in->workload);
        sched_program_set_ops(c.p, r, (SchedOp *)(void *)c.ops->data, c.ops->len);
    }
    g_array_unref(c.ops);
    if (c.dp_steps)
        g_hash_table_destroy(c.dp_steps);
    model_surface_groups(c.p, in->engine, in->hw,
                         model_surface_startup_forwards(in->engine, in->hw, in->arch));
    return c.p;
}

/* ---- the layout checker (seed 000 §3.3.1) ---- */

static bool is_attention_side(const char *n)
{
    static const char *const names[] = {
        "q_a_proj",  "q_a_layernorm", "q_b_proj",         "kv_a_proj",     "kv_a_layernorm",
        "kv_b_proj", "indexer",       "sparse_attention", "mla_attention", NULL};
    for (int i = 0; names[i]; i++)
        if (strcmp(n, names[i]) == 0)
            return true;
    return false;
}

static bool is_local_side(const char *n)
{
    static const char *const names[] = {
        "o_proj",      "post_attention_layernorm", "moe_gate", "moe_topk",
        "moe_experts", "shared_experts",           "mlp",      "input_layernorm",
        NULL};
    for (int i = 0; names[i]; i++)
        if (strcmp(n, names[i]) == 0)
            return true;
    return false;
}

typedef struct {
    GPtrArray *out;
    const SchedProgram *p;
    GArray *ranks; /* ranks sharing the list */
    bool seen[4];  /* one finding per class per list */
} Check;

static void finding(Check *k, int cls, int32_t layer, const char *op, uint64_t rows, uint64_t want,
                    const char *what)
{
    if (k->seen[cls])
        return;
    k->seen[cls] = true;
    static const char *const classes[] = {"", "full tokens restored before the MoE",
                                          "local tokens propagated into attention",
                                          "residual gathered across layers"};
    g_autofree char *rs =
        sched_format_ranks((const int32_t *)(void *)k->ranks->data, k->ranks->len);
    g_autofree char *msg = g_strdup_printf(
        "layout: %s (seed 000 §3.3.1 error class %d) on rank%s %s, layer %d: %s %s has "
        "%" G_GUINT64_FORMAT " rows where the DSA CP contract wants %" G_GUINT64_FORMAT,
        classes[cls], cls, k->ranks->len > 1 ? "s" : "", rs, layer, what, op, rows, want);
    g_autofree char *detail =
        g_strdup_printf("{\"class\":%d,\"op\":\"%s\",\"rows\":%" G_GUINT64_FORMAT
                        ",\"expected_rows\":%" G_GUINT64_FORMAT ",\"ranks\":\"%s\"}",
                        cls, op, rows, want, rs);
    g_ptr_array_add(k->out,
                    sched_diag_new("layout", SCHED_SEV_ERROR, g_array_index(k->ranks, int32_t, 0),
                                   -1, 0, layer, op, msg, detail));
}

/* What later vLLM does about a combination this vLLM lets through (engine.vllm_without): a
 * `fixed_in` warning naming the PR and what to run instead, so a hang it causes comes with
 * its fix. */
static void known_fixes(const ModelLowerInput *in, GPtrArray *out)
{
    const ModelParallel *par = &in->plan->par;
    ModelBackend backend = model_engine_backend(in->arch, in->engine, par, in->hw);
    /* FlashInferMLASparseTRTLLMBackend.supports_combination (vLLM PR #55879) */
    if (backend == MODEL_BACKEND_FLASHINFER_MLA_SPARSE && par->prefill_context_parallel_size > 1 &&
        par->decode_context_parallel_size > 1 &&
        !model_vllm_has(in->engine->vllm_absent, MODEL_VLLM_SPARSE_MLA_BACKEND_CHECK))
        g_ptr_array_add(
            out, sched_diag_new("fixed_in", SCHED_SEV_WARNING, -1, -1, 0, -1, "attention",
                                "fixed in vLLM PR #55879: FLASHINFER_MLA_SPARSE sizes its "
                                "PCP+DCP exchanges by each rank's real rows, which differ when "
                                "the prompt does not split evenly; vLLM with the PR refuses "
                                "this backend under PCP+DCP and AUTO picks FLASHMLA_SPARSE, "
                                "which gathers each DCP KV shard first and exchanges padded "
                                "rows (engine.attention_backend=FLASHMLA_SPARSE here)",
                                "{\"prs\":[55879],\"instead\":\"FLASHMLA_SPARSE\"}"));
}

GPtrArray *model_layout_check(const SchedProgram *p, const ModelLowerInput *in)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)sched_diag_free);
    Ctx c = {.in = in, .a = in->arch, .pl = in->plan, .e = in->engine, .p = (SchedProgram *)p};
    /* The ranks of each list, in one pass over the ranks (not one per list: O(lists x ranks)) */
    g_autofree GArray **sharing = g_new0(GArray *, p->lists->len);
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        guint li = (guint)p->list_of_rank[r];
        if (li >= p->lists->len)
            continue;
        if (!sharing[li])
            sharing[li] = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_array_append_val(sharing[li], r);
    }
    for (guint li = 0; li < p->lists->len; li++) {
        if (!sharing[li])
            continue;
        Check k = {out, p, sharing[li], {false}};
        uint32_t rank = (uint32_t)g_array_index(k.ranks, int32_t, 0);
        const SchedOpList *l = g_ptr_array_index(p->lists, li);
        int step = -1;
        StepRows sr;
        memset(&sr, 0, sizeof sr);
        uint64_t max_full = 0;
        for (guint s = 0; s < in->workload->steps->len; s++) {
            StepRows x = step_rows(&c, g_ptr_array_index(in->workload->steps, s), rank);
            uint64_t m = MAX(MAX(x.padded, x.full), x.moe_rows);
            /* the MoE runs the tokens gathered over DP (or PCP) — without EP, and with EP
             * under allgather_reducescatter on CUDA / ROCm, where sequence-parallel MoE
             * gathers each TP rank's chunk over the whole EP group: emit_moe */
            const ModelParallel *par = &in->plan->par;
            NetPlatform pf = in->hw ? in->hw->platform : NET_PLATFORM_CUDA;
            bool agrs =
                in->plan->ep_size > 1 && (pf == NET_PLATFORM_CUDA || pf == NET_PLATFORM_ROCM);
            uint32_t dp = par->data_parallel_size, pcp = par->prefill_context_parallel_size,
                     tp = par->tensor_parallel_size;
            if (in->arch->moe && (in->plan->ep_size <= 1 || agrs) && (dp > 1 || pcp > 1))
                m = MAX(m, agrs && model_all2all_sequence_parallel(par)
                               ? (x.moe_rows + tp - 1) / tp * in->plan->ep_size
                               : x.moe_rows * (dp > 1 ? dp : pcp));
            max_full = MAX(max_full, m);
        }
        for (uint32_t i = 0; i < l->len; i++) {
            const SchedOp *op = &l->ops[i];
            const char *name = sched_program_name_str(p, op->name);
            if (op->kind == SCHED_OP_COMPUTE && strcmp(name, "embed") == 0 &&
                (guint)(step + 1) < in->workload->steps->len) {
                step++;
                sr = step_rows(&c, g_ptr_array_index(in->workload->steps, (guint)step), rank);
            }
            if (op->kind != SCHED_OP_REPEAT && op->tokens > max_full)
                finding(&k, 3, op->layer, name, op->tokens, max_full, "op");
            if (op->kind != SCHED_OP_REPEAT || sr.mode != MODE_DSA_CP)
                continue;
            /* One layer block: check its body once (every iteration runs the same ops). */
            uint32_t gathers = 0;
            int32_t layer = op->layer_start;
            for (uint32_t j = i + 1; j <= i + op->body_len; j++) {
                const SchedOp *b = &l->ops[j];
                const char *bn = sched_program_name_str(p, b->name);
                if (strcmp(bn, "sp_all_gather") == 0) {
                    gathers++;
                    continue;
                }
                if (b->kind != SCHED_OP_COMPUTE)
                    continue;
                if (b->tokens > sr.full)
                    finding(&k, 3, layer, bn, b->tokens, sr.full, "op");
                else if (is_attention_side(bn) && b->tokens < sr.full)
                    finding(&k, 2, layer, bn, b->tokens, sr.full, "attention-side op");
                else if (is_local_side(bn) && b->tokens > sr.local)
                    finding(&k, 1, layer, bn, b->tokens, sr.local, "local-side op");
            }
            if (gathers > 1) {
                g_autofree char *what = g_strdup_printf("%u sp_all_gather in one layer:", gathers);
                finding(&k, 3, layer, "sp_all_gather", gathers, 1, what);
            } else if (gathers == 0) {
                finding(&k, 2, layer, "sp_all_gather", 0, 1,
                        "no all-gather restores full tokens before attention:");
            }
            i += op->body_len;
        }
        g_array_unref(k.ranks);
    }
    if (c.dp_steps)
        g_hash_table_destroy(c.dp_steps);
    known_fixes(in, out);
    return out;
}
