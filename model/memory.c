/* model/memory.c — per-rank device memory plan and the KV-cache budget; see memory.h for the
 * contract and doc/memory.md for every formula with its source.
 *
 * Design. A rank's memory is built as a list of items (tensor name, shape, dtype, bytes), each
 * in one component; a component's bytes are the sum of its items. Decoder tensors are
 * accumulated per layer and merged across the layers where the same tensor (same name, shape,
 * dtype, bytes) appears, so a 78-layer model yields a few dozen items per rank, named with a
 * compact layer list ("layers.3-77.mlp.experts.w13_weight"). The only per-rank difference in
 * what vLLM holds is the number of local experts under EP (E % EP leftovers go to the first
 * ranks); ranks with the same count share one item array (refcounted GPtrArray) and one set of
 * figures, so planning costs O(classes x layers x tensors) plus O(world).
 *
 * Units: bytes everywhere (uint64_t); GiB (2^30) only in messages, as vLLM prints them.
 */
#include "memory.h"
#include "memory-hybrid.h"

#include "memory-vllm.h"

#include <math.h>
#include <string.h>

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

/* ---- constants, each with its source (doc/memory.md repeats them) ---- */

/* VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE default, 394 MiB (vllm/envs.py; vllm-cp.md). */
#define FLASHINFER_WORKSPACE_BYTES (394ull * MIB)
/* trtllm-gen sparse MLA softmax-stats slab: sizeof(float2) x gathered heads x tokens x 256
 * + 1 MiB (vllm PR #50791 compute_trtllm_sparse_mla_workspace_bytes; vllm-cp.md). */
#define TRTLLM_SLAB_ROW_BYTES 8ull
#define TRTLLM_SLAB_COLS 256ull
#define TRTLLM_SLAB_EXTRA (1ull * MIB)
/* VLLM_SPARSE_INDEXER_MAX_LOGITS_MB default: the indexer's prefill logits chunk bound. */
#define INDEXER_MAX_LOGITS_BYTES (512ull * MIB)
/* vLLM's CUDA-graph profiler floor, "at least 1 MiB per graph for driver overhead"
 * (gpu_model_runner.py profile_cudagraph_memory); a graph there is one capture size of a mode. */
#define GRAPH_OVERHEAD_BYTES (1ull * MIB)
/* One piecewise sub-graph's capture beyond the shared pool: 0.3 MiB, fitted on the graph
 * memory vLLM 0.10.1.1 printed for PIECEWISE captures of 51 sizes (doc/validation.md L01:
 * Qwen2-7B, 29 pieces, 0.50 GiB; L12: Llama-3.1-8B, 33 pieces, 0.52 GiB). */
#define GRAPH_PIECE_BYTES (3ull * MIB / 10)
/* A piece holding an MoE layer (routing, dispatch, grouped GEMMs: several times the kernels):
 * 1 MiB, fitted on vLLM's own estimate for GLM-5.2 (78 layers, seed 004: 6.15 GiB,
 * tests/src/run/test-lifecycle.c) and on gpt-oss-120b's capture (doc/validation.md L06: 1.88
 * GiB over 36 MoE layers). */
#define GRAPH_PIECE_MOE_BYTES (1ull * MIB)
/* DEFAULT_VOCAB_PADDING_SIZE (vocab_parallel_embedding.py). */
#define VOCAB_PADDING 64u
/* Block sizes of the quantization formats. */
#define FP8_BLOCK 128u      /* DeepSeek-style fp8: one fp32 scale per 128 x 128 block */
#define NVFP4_GROUP 16u     /* NVFP4: one fp8 e4m3 scale per 16 values */
#define W4A8_GROUP 256u     /* ASSUMPTION: Ascend W4A8 per-group scale over 256 input values */
#define INDEXER_QBLOCK 128u /* indexer keys: one fp32 scale per 128 fp8 values */
/* ASSUMPTIONS (doc/memory.md, "reserved"): driver/runtime context and communicator buffers. */
#define CUDA_CONTEXT_BYTES (512ull * MIB)
#define CANN_CONTEXT_BYTES (1ull * GIB)
#define NCCL_COMM_BYTES (256ull * MIB)
/* HCCL: each communicator holds 2 x HCCL_BUFFSIZE, default 200 MB (Huawei CANN env-var docs). */
#define HCCL_COMM_BYTES (2ull * 200ull * MIB)
#define DETAIL_MAX_RANKS 256u
/* DeepSeek-V4 KV pages (vllm deepseek_v4_attention.py, sparse_swa.py, kv_cache_interface.py;
 * vLLM blog "DeepSeek V4 in vLLM", 2026-04-24): one cached entry is 584 B (448 fp8 NoPE + 128
 * B bf16 RoPE + 7 B ue8m0 scales + 1 pad), an indexer key 132 B; pages pad to 576 B. The
 * sliding window (128 tokens) has 64-token blocks: 64 x 584 = 37,376 -> 37,440 B; compressed
 * layers have 256-token logical blocks: C4 64 entries (37,440 B) plus an indexer page of 64 x
 * 132 = 8,448 -> 8,640 B, C128 2 entries (1,168 -> 1,728 B); the compressor states are
 * sliding-window caches (window 8 in blocks of 4 for C4, 128 in blocks of 8 for C128) on the
 * 37,440 B (main) and 8,640 B (indexer) pages. */
#define V4_SWA_WINDOW 128u
#define V4_SWA_BLOCK 64u
#define V4_PAGE_LARGE 37440ull
#define V4_PAGE_INDEXER 8640ull
#define V4_PAGE_C128 1728ull

static const char *const component_names[MODEL_MEM_COUNT] = {
    "weights",     "quant_scales", "derived_weights", "kv_cache",       "attn_workspace",
    "activations", "cudagraph",    "reserved",        "outside_budget",
};

const char *model_mem_component_name(ModelMemComponent c)
{
    return (unsigned)c < MODEL_MEM_COUNT ? component_names[c] : "?";
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

static double gib(double bytes)
{
    return bytes / (double)GIB;
}

uint64_t model_flashinfer_sparse_workspace(uint32_t heads_per_rank, uint32_t dcp,
                                           uint32_t max_num_batched_tokens)
{
    if (dcp <= 1)
        return FLASHINFER_WORKSPACE_BYTES;
    uint64_t gathered = (uint64_t)heads_per_rank * dcp;
    return FLASHINFER_WORKSPACE_BYTES +
           TRTLLM_SLAB_ROW_BYTES * gathered * max_num_batched_tokens * TRTLLM_SLAB_COLS +
           TRTLLM_SLAB_EXTRA;
}

/* ---- the planning context ---- */

typedef struct {
    const ModelArch *a;
    const ModelPlan *pl;
    const ModelEngine *e;
    const NetHardware *hw;
    ModelBackend backend; /* AUTO resolved as the lowering does */
    bool ascend;          /* vLLM-Ascend semantics (backend ASCEND) */
    bool npu;             /* Ascend hardware, by preset name */
    bool dsa_cp;          /* sequence parallel on a DSA model: q_b/kv_b/o_proj replicated */
    bool sp;              /* sequence parallel otherwise (TP > 1) */
    uint32_t tp, dp, pcp, dcp, ep;
    uint32_t moe_world;      /* devices an MoE layer shards over: TP x DP x PCP */
    uint32_t heads;          /* attention heads whose weights a rank holds */
    const ModelQuantSpec *q; /* the formats in force: the checkpoint's or the override */
    ModelQuantSpec override; /* engine.quantization, when given */
    uint32_t l0, l1;         /* the decoder layers [l0, l1) of the rank's pipeline stage */
    bool first, last;        /* the stage holds the embedding / the final norm and lm_head */
    bool reserved_in_budget; /* the communicators are made after vLLM's first memory snapshot */
} Ctx;

/* The pipeline stage of the ranks being planned (vLLM's make_layers / PPMissingLayer: a stage
 * holds its layers, the first the embedding, the last the norm and the head). */
static void ctx_stage(Ctx *c, uint32_t stage)
{
    uint32_t S = MAX(1u, c->pl->par.pipeline_parallel_size);
    c->l0 = S > 1 ? c->pl->layer_start[stage] : 0;
    c->l1 = S > 1 ? c->pl->layer_end[stage] : c->a->num_layers;
    c->first = stage == 0;
    c->last = stage + 1 == S;
}

static uint32_t n_layers(const Ctx *c)
{
    return c->l1 - c->l0;
}

static void ctx_init(Ctx *c, const ModelArch *a, const ModelPlan *pl, const ModelEngine *e,
                     const NetHardware *hw)
{
    *c = (Ctx){.a = a,
               .pl = pl,
               .e = e,
               .hw = hw,
               .backend = model_engine_backend(a, e, &pl->par, hw),
               .npu = hw && hw->platform == NET_PLATFORM_NPU,
               .tp = pl->par.tensor_parallel_size,
               .dp = pl->par.data_parallel_size,
               .pcp = pl->par.prefill_context_parallel_size,
               .dcp = pl->par.decode_context_parallel_size,
               .ep = a->moe && pl->ep_size > 1 ? pl->ep_size : 1};
    c->ascend = c->backend == MODEL_BACKEND_ASCEND;
    /* Since vLLM PR #25359 the CUDA worker initializes the distributed environment before its
     * first snapshot; vLLM-Ascend's worker is its own and keeps them inside (doc/memory.md) */
    c->reserved_in_budget =
        c->npu || !model_vllm_has(e->vllm_absent, MODEL_VLLM_NCCL_BEFORE_MEMORY_SNAPSHOT);
    c->moe_world = c->tp * c->dp * c->pcp;
    bool seq = pl->par.enable_sequence_parallel && c->tp > 1;
    c->dsa_cp = seq && a->dsa && a->mla;
    c->sp = seq && !c->dsa_cp;
    /* the most heads a layer has (activation peaks); per-layer weights use their own */
    c->heads = c->dsa_cp ? a->num_heads : model_arch_max_heads(a) / c->tp;
    c->q = &a->quant;
    if (e->quantization_override &&
        model_quant_spec_from_name(model_engine_quant_name(e->quantization), a->moe,
                                   a->native_dtype, a->num_layers + a->num_nextn_predict_layers,
                                   &c->override))
        c->q = &c->override;
    ctx_stage(c, 0);
}

/* ---- items ---- */

static void item_free(gpointer p)
{
    ModelMemItem *it = p;
    g_free(it->name);
    g_free(it->shape);
    g_free(it->dtype);
    g_free(it);
}

typedef struct {
    GPtrArray *items; /* ModelMemItem* */
    uint64_t bytes[MODEL_MEM_COUNT];
} Build;

static void build_add(Build *b, ModelMemComponent comp, char *name, char *shape, const char *dtype,
                      uint64_t bytes)
{
    ModelMemItem *it = g_new0(ModelMemItem, 1);
    it->component = comp;
    it->name = name;   /* taken over */
    it->shape = shape; /* taken over */
    it->dtype = g_strdup(dtype);
    it->bytes = bytes;
    g_ptr_array_add(b->items, it);
    b->bytes[comp] += bytes;
}

/* A tensor repeated over layers: merged while name, shape, dtype and bytes agree. */
typedef struct {
    ModelMemComponent comp;
    char *suffix, *shape, *dtype;
    uint64_t bytes; /* per layer */
    GArray *layers; /* int32 */
} LayerAcc;

typedef struct {
    GPtrArray *accs;   /* LayerAcc*, in first-seen order */
    GHashTable *index; /* key -> LayerAcc* (borrowed) */
    int32_t layer;     /* the layer being described; -1: tensors outside the decoder layers */
} Layers;

static void layer_acc_free(gpointer p)
{
    LayerAcc *x = p;
    g_free(x->suffix);
    g_free(x->shape);
    g_free(x->dtype);
    g_array_unref(x->layers);
    g_free(x);
}

static void layers_init(Layers *L)
{
    L->accs = g_ptr_array_new_with_free_func(layer_acc_free);
    L->index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    L->layer = 0;
}

static void layers_clear(Layers *L)
{
    g_hash_table_unref(L->index);
    g_ptr_array_unref(L->accs);
}

/* Records one tensor of the current layer; takes `shape` over. */
static void layer_add(Layers *L, ModelMemComponent comp, const char *suffix, char *shape,
                      const char *dtype, uint64_t bytes)
{
    char *key =
        g_strdup_printf("%d|%s|%s|%s|%" G_GUINT64_FORMAT, (int)comp, suffix, shape, dtype, bytes);
    LayerAcc *x = g_hash_table_lookup(L->index, key);
    if (!x) {
        x = g_new0(LayerAcc, 1);
        x->comp = comp;
        x->suffix = g_strdup(suffix);
        x->shape = shape;
        shape = NULL;
        x->dtype = g_strdup(dtype);
        x->bytes = bytes;
        x->layers = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_ptr_array_add(L->accs, x);
        g_hash_table_insert(L->index, key, x);
    } else {
        g_free(key);
    }
    g_free(shape);
    g_array_append_val(x->layers, L->layer);
}

static void layers_emit(Layers *L, Build *b)
{
    for (guint i = 0; i < L->accs->len; i++) {
        LayerAcc *x = g_ptr_array_index(L->accs, i);
        g_autofree char *ranges =
            sched_format_ranks((const int32_t *)(void *)x->layers->data, x->layers->len);
        uint32_t n = x->layers->len;
        bool global = g_array_index(x->layers, int32_t, 0) < 0;
        char *shape = n > 1 ? g_strdup_printf("%u x %s", n, x->shape) : g_strdup(x->shape);
        char *name =
            global ? g_strdup(x->suffix) : g_strdup_printf("layers.%s.%s", ranges, x->suffix);
        build_add(b, x->comp, name, shape, x->dtype, x->bytes * n);
    }
}

static char *shape2(uint64_t a, uint64_t b)
{
    return g_strdup_printf("[%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]", a, b);
}

static char *shape3(uint64_t a, uint64_t b, uint64_t c)
{
    return g_strdup_printf("[%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]",
                           a, b, c);
}

static char *shape1(uint64_t a)
{
    return g_strdup_printf("[%" G_GUINT64_FORMAT "]", a);
}

/* ---- quantization formats ---- */

/* A linear layer: `batch` copies (experts) of a weight [sum(parts), in] in the format the spec
 * gives role `role` in the current layer (`L->layer`; `global` for embedding / lm_head /
 * vision). `parts` are the output widths of the fused projections (each has its own per-tensor
 * scales). Disposed weights (vLLM-Ascend frees kv_b_proj once W_UK_T / W_UV exist) are listed
 * with 0 bytes. Tensors, names and bytes per format: model/quant.c. */
static void add_linear_fmt(Layers *L, const char *name, uint64_t batch, const uint64_t *parts,
                           int nparts, uint64_t in, const ModelWeightFormat *f, bool expert,
                           bool disposed)
{
    /* FusedMoE names its parameters w13_weight, w13_weight_scale, ...; linears name.weight */
    char sep = expert ? '_' : '.';
    ModelQuantTensor t[MODEL_QUANT_MAX_TENSORS];
    int n = model_quant_linear_tensors(f, batch, parts, nparts, in, t);
    const char *tail = disposed ? " (disposed after load)" : "";
    for (int i = 0; i < n; i++) {
        g_autofree char *tname = g_strdup_printf("%s%c%s%s", name, sep, t[i].suffix, tail);
        char *shape = t[i].ndims == 1   ? shape1(t[i].dims[0])
                      : t[i].ndims == 2 ? shape2(t[i].dims[0], t[i].dims[1])
                                        : shape3(t[i].dims[0], t[i].dims[1], t[i].dims[2]);
        layer_add(L, t[i].is_scale ? MODEL_MEM_QUANT_SCALES : MODEL_MEM_WEIGHTS, tname, shape,
                  t[i].dtype, disposed ? 0 : t[i].bytes);
    }
}

static const ModelWeightFormat *fmt_of(const Ctx *c, const Layers *L, ModelTensorRole role)
{
    return model_quant_format(c->q, L->layer, role);
}

/* vLLM runs FP8 checkpoints through Marlin's weight-only FP8 kernels on GPUs without FP8 (A100
 * class), which replace the checkpoint's scales by bf16 ones per output column and 128-input
 * group (model/memory-vllm.c): the layer's scale items take that size. */
static void marlin_fp8_scales(const Ctx *c, Layers *L, guint first, uint64_t batch,
                              const uint64_t *parts, int nparts, uint64_t in,
                              const ModelWeightFormat *f)
{
    bool block = f->kind == MODEL_WFMT_FP8_BLOCK;
    if (!(block || f->kind == MODEL_WFMT_FP8_CHANNEL || f->kind == MODEL_WFMT_FP8_TENSOR) ||
        !model_mem_fp8_via_marlin(c->hw))
        return;
    uint64_t n = 0;
    for (int i = 0; i < nparts; i++)
        n += parts[i];
    /* accumulators made by this call (one met again in a later layer was adjusted the first
     * time: the figure depends on the shape alone) */
    for (guint i = first; i < L->accs->len; i++) {
        LayerAcc *x = g_ptr_array_index(L->accs, i);
        if (x->comp != MODEL_MEM_QUANT_SCALES || x->bytes == 0 ||
            g_str_has_suffix(x->suffix, "input_scale"))
            continue;
        x->bytes = batch * model_mem_marlin_fp8_scale_bytes(n, in, block);
        g_free(x->dtype);
        x->dtype = g_strdup("bf16 (Marlin repacked)");
    }
}

static void add_linear(const Ctx *c, Layers *L, const char *name, uint64_t batch,
                       const uint64_t *parts, int nparts, uint64_t in, ModelTensorRole role,
                       bool disposed)
{
    const ModelWeightFormat *f = fmt_of(c, L, role);
    guint first = L->accs->len;
    add_linear_fmt(L, name, batch, parts, nparts, in, f, role == MODEL_ROLE_EXPERT, disposed);
    marlin_fp8_scales(c, L, first, batch, parts, nparts, in, f);
}

/* A bias vector of `n` values in the checkpoint's native dtype (fp32 for gpt-oss is bf16 too). */
static void add_bias(const Ctx *c, Layers *L, const char *name, uint64_t batch, uint64_t n)
{
    uint64_t elt = c->a->native_dtype == MODEL_WFMT_FP32 ? 4 : 2;
    const char *dt = elt == 4 ? "fp32" : c->a->native_dtype == MODEL_WFMT_FP16 ? "fp16" : "bf16";
    layer_add(L, MODEL_MEM_WEIGHTS, name, batch > 1 ? shape2(batch, n) : shape1(n), dt,
              batch * n * elt);
}

static void add_norm(Layers *L, const char *name, uint64_t dim)
{
    layer_add(L, MODEL_MEM_WEIGHTS, name, shape1(dim), "bf16", dim * 2);
}

/* ---- weights of one decoder layer ---- */

static void layer_attention_mla(const Ctx *c, Layers *L, bool own_indexer)
{
    const ModelArch *a = c->a;
    uint64_t H = a->hidden_size, h = c->heads;
    uint64_t qk = (uint64_t)a->qk_nope_head_dim + a->qk_rope_head_dim;
    uint64_t kva = (uint64_t)a->kv_lora_rank + a->qk_rope_head_dim;
    if (a->q_lora_rank) {
        /* q_a_proj and kv_a_proj_with_mqa fused, MergedReplicatedLinear (deepseek_v2.py) */
        uint64_t p[2] = {a->q_lora_rank, kva};
        add_linear(c, L, "self_attn.fused_qkv_a_proj", 1, p, 2, H, MODEL_ROLE_ATTN_QKV, false);
        add_norm(L, "self_attn.q_a_layernorm.weight", a->q_lora_rank);
        uint64_t q[1] = {h * qk};
        add_linear(c, L, "self_attn.q_b_proj", 1, q, 1, a->q_lora_rank, MODEL_ROLE_ATTN_Q_B, false);
    } else {
        uint64_t q[1] = {h * qk};
        add_linear(c, L, "self_attn.q_proj", 1, q, 1, H, MODEL_ROLE_ATTN_QKV, false);
        uint64_t p[1] = {kva};
        add_linear(c, L, "self_attn.kv_a_proj_with_mqa", 1, p, 1, H, MODEL_ROLE_ATTN_QKV, false);
    }
    add_norm(L, "self_attn.kv_a_layernorm.weight", a->kv_lora_rank);
    uint64_t kvb[1] = {h * ((uint64_t)a->qk_nope_head_dim + a->v_head_dim)};
    add_linear(c, L, "self_attn.kv_b_proj", 1, kvb, 1, a->kv_lora_rank, MODEL_ROLE_ATTN_KV_B,
               c->ascend);
    uint64_t o[1] = {H};
    add_linear(c, L, "self_attn.o_proj", 1, o, 1, h * a->v_head_dim, MODEL_ROLE_ATTN_O, false);

    /* W_UK_T [h, nope, lora] and W_UV [h, lora, v], bf16, from kv_b_proj as this rank holds it
     * (full layout under DSA CP). vLLM (CUDA): views of the dequantized kv_b_proj, so a copy
     * exists only when kv_b_proj is quantized; vLLM-Ascend: contiguous copies. */
    ModelWeightKind kvb_kind = fmt_of(c, L, MODEL_ROLE_ATTN_KV_B)->kind;
    bool copies = c->ascend || (kvb_kind != MODEL_WFMT_BF16 && kvb_kind != MODEL_WFMT_FP16);
    uint64_t uk = h * a->qk_nope_head_dim * a->kv_lora_rank * 2;
    uint64_t uv = h * a->kv_lora_rank * a->v_head_dim * 2;
    const char *dt = copies ? "bf16" : "bf16 (view of kv_b_proj.weight)";
    layer_add(L, MODEL_MEM_DERIVED_WEIGHTS, "self_attn.W_UK_T",
              shape3(h, a->qk_nope_head_dim, a->kv_lora_rank), dt, copies ? uk : 0);
    layer_add(L, MODEL_MEM_DERIVED_WEIGHTS, "self_attn.W_UV",
              shape3(h, a->kv_lora_rank, a->v_head_dim), dt, copies ? uv : 0);

    if (own_indexer) {
        /* Indexer (deepseek_v2.py Indexer): wq_b, wk ReplicatedLinear with the model's
         * quant_config; k_norm LayerNorm (weight + bias); weights_proj unquantized. */
        uint64_t ih = a->index_n_heads, id = a->index_head_dim;
        uint64_t qin = a->q_lora_rank ? a->q_lora_rank : H;
        uint64_t wq[1] = {ih * id}, wk[1] = {id}, wp[1] = {ih};
        add_linear(c, L, "self_attn.indexer.wq_b", 1, wq, 1, qin, MODEL_ROLE_INDEXER, false);
        add_linear(c, L, "self_attn.indexer.wk", 1, wk, 1, H, MODEL_ROLE_INDEXER, false);
        add_norm(L, "self_attn.indexer.k_norm.weight", id);
        add_norm(L, "self_attn.indexer.k_norm.bias", id);
        add_linear(c, L, "self_attn.indexer.weights_proj", 1, wp, 1, H, MODEL_ROLE_INDEXER_WEIGHTS,
                   false);
    }
}

/* DeepSeek-V4 attention (deepseek_v4.py, deepseek_compressor.py, deepseek_v4_attention.py):
 * replicated fused wq_a + wkv and norms, wq_b split by heads, the grouped output projection
 * (wo_a: o_groups / TP groups, wo_b split on its input), fp32 sinks padded to 64 heads, the
 * compressor of C4 / C128 layers (unquantized, replicated) and the C4 layers' indexer
 * (replicated; wq_b quantized, the rest not), and the hyper-connection mixers (fp32). */
static void layer_attention_v4(const Ctx *c, Layers *L, uint32_t ratio)
{
    const ModelArch *a = c->a;
    const ModelWeightFormat *native = &c->q->formats[0];
    uint64_t H = a->hidden_size, D = a->head_dim, qr = a->q_lora_rank, h = c->heads;
    uint64_t G = a->o_groups, orank = a->o_lora_rank;
    uint64_t qa[2] = {qr, D};
    add_linear(c, L, "attn.fused_wqa_wkv", 1, qa, 2, H, MODEL_ROLE_ATTN_QKV, false);
    add_norm(L, "attn.q_norm.weight", qr);
    add_norm(L, "attn.kv_norm.weight", D);
    uint64_t qb[1] = {h * D};
    add_linear(c, L, "attn.wq_b", 1, qb, 1, qr, MODEL_ROLE_ATTN_Q_B, false);
    uint64_t groups = MAX(1u, G / c->tp);
    uint64_t woa[1] = {orank};
    add_linear(c, L, "attn.wo_a", groups, woa, 1, (uint64_t)a->num_heads / G * D, MODEL_ROLE_ATTN_O,
               false);
    uint64_t wob[1] = {H};
    add_linear(c, L, "attn.wo_b", 1, wob, 1, groups * orank, MODEL_ROLE_ATTN_O, false);
    uint64_t sinks = MAX(h, 64u);
    layer_add(L, MODEL_MEM_WEIGHTS, "attn.attn_sink", shape1(sinks), "fp32", sinks * 4);
    if (ratio > 1) {
        uint64_t coff = ratio == 4 ? 2 : 1;
        uint64_t cw[1] = {2 * coff * D};
        add_linear_fmt(L, "attn.compressor.fused_wkv_wgate", 1, cw, 1, H, native, false, false);
        layer_add(L, MODEL_MEM_WEIGHTS, "attn.compressor.ape", shape2(ratio, coff * D), "fp32",
                  ratio * coff * D * 4);
        add_norm(L, "attn.compressor.norm.weight", D);
    }
    if (ratio == 4) {
        uint64_t ih = a->index_n_heads, id = a->index_head_dim;
        uint64_t wq[1] = {ih * id}, wp[1] = {ih}, ic[1] = {4 * id};
        add_linear(c, L, "attn.indexer.wq_b", 1, wq, 1, qr, MODEL_ROLE_INDEXER, false);
        add_linear_fmt(L, "attn.indexer.weights_proj", 1, wp, 1, H, native, false, false);
        add_norm(L, "attn.indexer.k_norm.weight", id);
        add_norm(L, "attn.indexer.k_norm.bias", id);
        add_linear_fmt(L, "attn.indexer.compressor.fused_wkv_wgate", 1, ic, 1, H, native, false,
                       false);
        layer_add(L, MODEL_MEM_WEIGHTS, "attn.indexer.compressor.ape", shape2(4, 2 * id), "fp32",
                  4 * 2 * id * 4);
        add_norm(L, "attn.indexer.compressor.norm.weight", id);
    }
    /* hyper-connections before attention and before the FFN: fn [(2+hc) x hc, hc x H],
     * base [(2+hc) x hc], scale [3], fp32 */
    uint64_t hc = MAX(1u, a->hc_mult), mix = (2 + hc) * hc;
    const char *const names[2][3] = {{"hc_attn_fn", "hc_attn_base", "hc_attn_scale"},
                                     {"hc_ffn_fn", "hc_ffn_base", "hc_ffn_scale"}};
    for (int i = 0; i < 2; i++) {
        layer_add(L, MODEL_MEM_WEIGHTS, names[i][0], shape2(mix, hc * H), "fp32", mix * hc * H * 4);
        layer_add(L, MODEL_MEM_WEIGHTS, names[i][1], shape1(mix), "fp32", mix * 4);
        layer_add(L, MODEL_MEM_WEIGHTS, names[i][2], shape1(3), "fp32", 12);
    }
}

/* DeepSeek-V4.1's CSA2 and Engram tensors of layer `l` (transformers modeling_deepseek_v41.py
 * and its docs; vLLM loads V4.1 with DeepSeek-V4's model class). A kv-source layer owns the
 * compressor of its group (fused_wkv_wgate [2 x head_dim, H], ape [ratio, head_dim] fp32, norm)
 * and, ASSUMPTION as V4's C4 indexer has one, the indexer keys' compressor ([2 x index_head_dim,
 * H]); an index-source layer the indexer (wq_b [index heads x index_head_dim, q_lora],
 * weights_proj [index heads, H], k_norm); all of these bf16 as the checkpoint ships them
 * ("the compressor / indexer projections ... in bf16"). An Engram layer holds its n-gram table
 * ([rows, engram_head_dim] fp8 with a ue8m0 scale per 32 values), ASSUMPTION row-sharded over
 * the TP ranks as vLLM shards a vocabulary embedding (197 GB of tables fit no single device),
 * wkv [H x (hc + 1), (max_ngram - 1) x heads x engram_head_dim] in the checkpoint's fp8 and
 * its q / k gate weights [hc, H] fp32. */
static void layer_csa2_v41(const Ctx *c, Layers *L, uint32_t l)
{
    const ModelArch *a = c->a;
    const ModelWeightFormat *native = &c->q->formats[0];
    uint64_t H = a->hidden_size, D = a->head_dim, qr = a->q_lora_rank, r = a->csa_ratio[l];
    uint64_t ih = a->index_n_heads, id = a->index_head_dim, hc = MAX(1u, a->hc_mult);
    if (a->kv_source[l]) {
        uint64_t cw[1] = {2 * D}, ic[1] = {2 * id};
        add_linear_fmt(L, "attn.compressor.fused_wkv_wgate", 1, cw, 1, H, native, false, false);
        layer_add(L, MODEL_MEM_WEIGHTS, "attn.compressor.ape", shape2(MAX(1u, r), D), "fp32",
                  MAX(1u, r) * D * 4);
        add_norm(L, "attn.compressor.norm.weight", D);
        add_linear_fmt(L, "attn.indexer.compressor.fused_wkv_wgate", 1, ic, 1, H, native, false,
                       false);
    }
    if (a->index_source[l]) {
        uint64_t wq[1] = {ih * id}, wp[1] = {ih};
        add_linear_fmt(L, "attn.indexer.wq_b", 1, wq, 1, qr, native, false, false);
        add_linear_fmt(L, "attn.indexer.weights_proj", 1, wp, 1, H, native, false, false);
        add_norm(L, "attn.indexer.k_norm.weight", id);
    }
    if (a->engram[l]) {
        uint64_t dim = a->engram_head_dim, rows = ceil_div(a->engram_rows[l], c->tp);
        layer_add(L, MODEL_MEM_WEIGHTS, "engram.embed.weight", shape2(rows, dim), "fp8_e4m3",
                  rows * dim);
        layer_add(L, MODEL_MEM_QUANT_SCALES, "engram.embed.scale", shape2(rows, dim / 32),
                  "ue8m0", rows * (dim / 32));
        uint64_t cols = (uint64_t)(a->engram_max_ngram - 1) * a->engram_n_heads * dim;
        uint64_t kv[1] = {H * (hc + 1)};
        add_linear(c, L, "engram.wkv", 1, kv, 1, cols, MODEL_ROLE_ATTN_QKV, false);
        layer_add(L, MODEL_MEM_WEIGHTS, "engram.q_weight", shape2(hc, H), "fp32", hc * H * 4);
        layer_add(L, MODEL_MEM_WEIGHTS, "engram.k_weight", shape2(hc, H), "fp32", hc * H * 4);
    }
}

/* GQA (Llama, Qwen): QKVParallelLinear + RowParallelLinear; KV heads replicated when fewer
 * than TP ranks. */
static uint64_t gqa_kv_heads(const Ctx *c)
{
    uint64_t k = c->a->num_kv_heads / c->tp;
    return k ? k : 1;
}

static void layer_attention_gqa(const Ctx *c, Layers *L)
{
    const ModelArch *a = c->a;
    uint64_t H = a->hidden_size, hd = a->head_dim, kvh = gqa_kv_heads(c);
    uint64_t h = L->layer >= 0 ? model_arch_layer_heads(a, (uint32_t)L->layer) / c->tp : c->heads;
    /* Qwen3-Next's gated attention: q_proj yields the query and its gate (2 x heads x hd) */
    uint64_t p[3] = {h * hd * (a->attn_output_gate ? 2 : 1), kvh * hd, kvh * hd};
    add_linear(c, L, "self_attn.qkv_proj", 1, p, 3, H, MODEL_ROLE_ATTN_QKV, false);
    if (a->attention_bias)
        add_bias(c, L, "self_attn.qkv_proj.bias", 1, (h + 2 * kvh) * hd);
    uint64_t o[1] = {H};
    add_linear(c, L, "self_attn.o_proj", 1, o, 1, h * hd, MODEL_ROLE_ATTN_O, false);
    if (a->o_proj_bias) /* RowParallelLinear keeps the whole bias on every rank */
        add_bias(c, L, "self_attn.o_proj.bias", 1, H);
    if (a->qk_norm_dim) {
        /* Qwen3: RMSNorm over head_dim, shared by the heads; MiniMax per layer: over the
         * rank's heads x head_dim (q) and KV heads x head_dim (k), split by TP */
        uint64_t qn = a->qk_norm_per_layer ? h * hd : a->qk_norm_dim;
        uint64_t kn = a->qk_norm_per_layer ? kvh * hd : a->qk_norm_dim;
        add_norm(L, "self_attn.q_norm.weight", qn);
        add_norm(L, "self_attn.k_norm.weight", kn);
    }
    if (a->attention_sinks) /* gpt-oss: one sink logit per local head */
        add_bias(c, L, "self_attn.sinks", 1, h);
    if (a->attn_head_gate) { /* Step-3.5 g_proj: one gate per local head (ColumnParallel) */
        uint64_t g[1] = {h};
        add_linear(c, L, "self_attn.g_proj", 1, g, 1, H, MODEL_ROLE_ATTN_QKV, false);
    }
}

/* Local experts of rank `r`: vLLM's linear expert placement gives E / EP to each EP rank and
 * one more to the first E % EP (fused_moe/layer.py determine_expert_map). The EP rank is the
 * flattened TP x PCP x DP index (FusedMoEParallelConfig.flatten_tp_across_dp_and_pcp). */
static uint32_t local_experts(const Ctx *c, uint32_t rank)
{
    const ModelArch *a = c->a;
    if (c->ep <= 1)
        return a->n_routed_experts;
    const ModelCoord *co = &c->pl->coord[rank];
    uint32_t er = (co->dp * c->pcp + co->pcp) * c->tp + co->tp;
    uint32_t base = a->n_routed_experts / c->ep, rem = a->n_routed_experts % c->ep;
    return base + (er < rem ? 1 : 0);
}

/* The dense MLP of width `inter` split over TP (MergedColumnParallel gate_up, RowParallel down). */
static void add_dense_mlp(const Ctx *c, Layers *L, const char *prefix, uint64_t inter,
                          ModelTensorRole role)
{
    uint64_t H = c->a->hidden_size;
    uint64_t i = ceil_div(inter, c->tp);
    uint64_t gu[2] = {i, i}, d[1] = {H};
    bool ungated = c->a->mlp_ungated; /* Nemotron-H: up_proj alone, ReLU^2 */
    g_autofree char *n1 =
        g_strdup_printf(ungated ? "%s.up_proj" : "%s.gate_up_proj", prefix);
    g_autofree char *n2 = g_strdup_printf("%s.down_proj", prefix);
    add_linear(c, L, n1, 1, gu, ungated ? 1 : 2, H, role, false);
    add_linear(c, L, n2, 1, d, 1, i, role, false);
}

/* vLLM's MXFP4 MoE (quantization/mxfp4.py, Mxfp4MoEMethod.create_weights) pads the expert
 * weights for the MoE backend it picks, not for the device as such (model/memory-vllm.c):
 * Marlin I to 128 and H to 256, FlashInfer both to 256, OAI Triton I to 64 (and H to 256 after
 * its swizzle). gpt-oss (hidden 2880) loads 3072-wide experts. */
static void mxfp4_pad(const Ctx *c, const ModelWeightFormat *f, uint64_t *inter, uint64_t *hidden)
{
    if (f->kind != MODEL_WFMT_MXFP4 || f->scheme != MODEL_QSCHEME_MXFP4)
        return;
    model_mem_mxfp4_pad(model_mem_mxfp4_backend(c->hw, c->e->moe_backend), inter, hidden);
}

static void layer_ffn(const Ctx *c, Layers *L, bool moe, uint32_t n_local)
{
    const ModelArch *a = c->a;
    uint64_t H = a->hidden_size;
    if (!moe) {
        add_dense_mlp(c, L, "mlp", a->intermediate_size, MODEL_ROLE_DENSE_MLP);
        return;
    }
    uint64_t E = a->n_routed_experts;
    uint64_t g[1] = {E};
    add_linear(c, L, "mlp.gate", 1, g, 1, H, MODEL_ROLE_ROUTER, false);
    if (a->router_bias)
        add_bias(c, L, "mlp.gate.bias", 1, E);
    bool hash = a->dsv4 && L->layer >= 0 && (uint32_t)L->layer < a->num_hash_layers;
    if (hash) /* DeepSeek-V4 hash routing: token id -> experts, int32 [vocab, top-k] */
        layer_add(L, MODEL_MEM_WEIGHTS, "mlp.gate.tid2eid",
                  shape2(a->vocab_size, a->num_experts_per_tok), "int32",
                  (uint64_t)a->vocab_size * a->num_experts_per_tok * 4);
    else if (a->router_score_bias) /* DeepSeek/GLM noaux_tc routing: fp32 e_score_correction_bias */
        layer_add(L, MODEL_MEM_WEIGHTS, "mlp.gate.e_score_correction_bias", shape1(E), "fp32",
                  E * 4);
    /* FusedMoE: w13 [E_local, 2 x I_local, H], w2 [E_local, H, I_local]. EP: whole experts;
     * otherwise every expert's intermediate split over TP x DP x PCP. */
    uint64_t il =
        c->ep > 1 ? a->moe_intermediate_size : ceil_div(a->moe_intermediate_size, c->moe_world);
    uint64_t eh = model_arch_expert_hidden(a);
    mxfp4_pad(c, fmt_of(c, L, MODEL_ROLE_EXPERT), &il, &eh);
    uint64_t w13[2] = {il, il}, w2[1] = {eh};
    if (a->moe_latent_size) { /* Nemotron-3-Super: hidden -> latent -> experts -> hidden */
        uint64_t lat[1] = {a->moe_latent_size}, hid[1] = {H};
        add_linear(c, L, "mixer.fc1_latent_proj", 1, lat, 1, H, MODEL_ROLE_SHARED_EXPERT, false);
        add_linear(c, L, "mixer.fc2_latent_proj", 1, hid, 1, a->moe_latent_size,
                   MODEL_ROLE_SHARED_EXPERT, false);
    }
    add_linear(c, L, "mlp.experts.w13", n_local, w13, a->mlp_ungated ? 1 : 2, eh,
               MODEL_ROLE_EXPERT, false);
    add_linear(c, L, "mlp.experts.w2", n_local, w2, 1, il, MODEL_ROLE_EXPERT, false);
    if (a->expert_bias) { /* gpt-oss: w13_bias [E, 2I], w2_bias [E, H] */
        add_bias(c, L, "mlp.experts.w13_bias", n_local, 2 * il);
        add_bias(c, L, "mlp.experts.w2_bias", n_local, eh);
    }
    if (a->shared_expert_intermediate_size) {
        add_dense_mlp(c, L, "mlp.shared_experts", a->shared_expert_intermediate_size,
                      MODEL_ROLE_SHARED_EXPERT);
        if (a->shared_expert_gate) {
            uint64_t one[1] = {1};
            add_linear(c, L, "mlp.shared_expert_gate", 1, one, 1, H, MODEL_ROLE_SHARED_EXPERT,
                       false);
        }
    }
}

static uint64_t vocab_per_rank(const Ctx *c)
{
    uint64_t vp = ceil_div(c->a->vocab_size, VOCAB_PADDING) * VOCAB_PADDING;
    return ceil_div(vp, c->tp);
}

/* A Mamba-2 or Gated DeltaNet mixer's tensors on a rank (model/memory-hybrid.h sizes them):
 * in_proj (+ GDN's in_proj_ba), the depthwise conv1d [conv_dim, 1, K], A_log / dt_bias (/ D),
 * the gated norm and out_proj. */
static void layer_state_mixer(const Ctx *c, Layers *L, ModelMixer mx)
{
    ModelHybridDims d;
    model_hybrid_dims(c->a, mx, c->tp, &d);
    uint64_t H = c->a->hidden_size, in[1] = {d.in_proj}, o[1] = {H};
    add_linear(c, L, "mixer.in_proj", 1, in, 1, H, MODEL_ROLE_ATTN_QKV, false);
    if (d.ba_proj) {
        uint64_t ba[1] = {d.ba_proj};
        add_linear(c, L, "mixer.in_proj_ba", 1, ba, 1, H, MODEL_ROLE_ATTN_QKV, false);
    }
    add_bias(c, L, "mixer.conv1d.weight", d.conv_dim, d.conv_kernel);
    if (mx == MODEL_MIXER_MAMBA2)
        add_bias(c, L, "mixer.conv1d.bias", 1, d.conv_dim);
    /* A (fp32 in MambaMixer2), D, dt_bias: one per head */
    layer_add(L, MODEL_MEM_WEIGHTS, "mixer.A_log+D+dt_bias", shape1(3ull * d.heads), "fp32",
              3ull * d.heads * 4);
    /* RMSNormGated: over the rank's inner width (Mamba-2, grouped) or one value head (GDN) */
    add_norm(L, "mixer.norm.weight", mx == MODEL_MIXER_GDN ? d.head_dim : d.inner);
    add_linear(c, L, "mixer.out_proj", 1, o, 1, d.inner, MODEL_ROLE_ATTN_O, false);
}

/* One decoder layer's tensors into L (L->layer set by the caller). */
static void plan_layer(const Ctx *c, Layers *L, uint32_t l, bool moe, uint32_t n_local)
{
    const ModelArch *a = c->a;
    uint64_t H = a->hidden_size;
    ModelMixer mx = model_arch_layer_mixer(a, l);
    add_norm(L, "input_layernorm.weight", H);
    if (mx == MODEL_MIXER_MAMBA2 || mx == MODEL_MIXER_GDN)
        layer_state_mixer(c, L, mx);
    else if (mx == MODEL_MIXER_NONE)
        ; /* Nemotron-H E / -: the FFN alone, after the one norm */
    else if (a->dsv4) { /* V4.1: the CSA2 tensors beside V4's attention */
        layer_attention_v4(c, L, l < a->num_layers ? a->compress_ratio[l] : 1);
        if (a->dsv41 && l < a->num_layers)
            layer_csa2_v41(c, L, l);
    } else if (a->mla)
        layer_attention_mla(c, L, a->dsa && (l >= a->num_layers || !a->index_shared[l]));
    else
        layer_attention_gqa(c, L);
    if (mx == MODEL_MIXER_ATTENTION && a->parallel_ssm && l < a->num_layers)
        layer_state_mixer(c, L, MODEL_MIXER_MAMBA2); /* Falcon-H1's parallel Mamba-2 branch */
    if (l < a->num_layers && a->layer_no_ffn[l])
        return; /* Nemotron-H M / *: the mixer alone */
    if (mx != MODEL_MIXER_NONE)
        add_norm(L, "post_attention_layernorm.weight", H);
    layer_ffn(c, L, moe, n_local);
}

/* MTP layers vLLM loads when speculative decoding uses them (deepseek_mtp.py): per layer
 * enorm, hnorm, eh_proj [H, 2H] (replicated), one decoder layer (MoE when the model is), and
 * shared_head.norm; embed_tokens and the head are shared with the target model. */
static uint32_t mtp_layers_loaded(const Ctx *c)
{
    const ModelEngine *e = c->e;
    if (e->speculative_method != MODEL_SPEC_MTP || e->num_speculative_tokens == 0)
        return 0;
    return c->a->num_nextn_predict_layers;
}

/* RoPE's cos/sin cache (ModelArch.rope_positions): one buffer on every rank whose stage holds
 * a softmax-attention layer, in the model dtype, replicated (not split by any parallelism).
 * Small for most models (131,072 positions x 128 x 2 B = 32 MiB); Llama-4-Scout's 10,485,760
 * positions make it 2.5 GiB a rank. A derived tensor: made at init, counted in the loading. */
static void add_rope_cache(const Ctx *c, Layers *G)
{
    const ModelArch *a = c->a;
    bool attention = false;
    for (uint32_t l = c->l0; l < c->l1 && !attention; l++)
        attention = model_arch_layer_mixer(a, l) == MODEL_MIXER_ATTENTION;
    uint64_t dim = a->mla || a->dsv4 ? a->qk_rope_head_dim
                                     : (uint64_t)floor(a->head_dim * a->partial_rotary_factor);
    if (!attention || a->attn_no_rope || a->rope_positions == 0 || dim == 0)
        return;
    uint64_t elt = a->native_dtype == MODEL_WFMT_FP32 ? 4 : 2;
    const char *dt = elt == 4 ? "fp32" : a->native_dtype == MODEL_WFMT_FP16 ? "fp16" : "bf16";
    layer_add(G, MODEL_MEM_DERIVED_WEIGHTS, "rotary_emb.cos_sin_cache",
              shape2(a->rope_positions, dim), dt, (uint64_t)a->rope_positions * dim * elt);
}

static void plan_weights(const Ctx *c, Build *b, uint32_t n_local)
{
    const ModelArch *a = c->a;
    uint64_t H = a->hidden_size, v = vocab_per_rank(c);
    const ModelWeightFormat *emb = model_quant_format(c->q, -1, MODEL_ROLE_EMBED);
    const ModelWeightFormat *head = model_quant_format(c->q, -1, MODEL_ROLE_LM_HEAD);
    Layers G;
    layers_init(&G);
    G.layer = -1;
    uint64_t vv[1] = {v};
    if (c->first)
        add_linear_fmt(&G, "embed_tokens", 1, vv, 1, H, emb, false, false);
    Layers L;
    layers_init(&L);
    for (uint32_t l = c->l0; l < c->l1; l++) {
        L.layer = (int32_t)l;
        plan_layer(c, &L, l, model_arch_layer_is_moe(a, l), n_local);
    }
    add_rope_cache(c, &G);
    uint32_t mtp = c->last ? mtp_layers_loaded(c) : 0;
    for (uint32_t k = 0; k < mtp; k++) {
        uint32_t l = a->num_layers + k;
        L.layer = (int32_t)l;
        add_norm(&L, "mtp.enorm.weight", H);
        add_norm(&L, "mtp.hnorm.weight", H);
        /* eh_proj is a plain nn.Linear in vLLM (deepseek_mtp.py) and bf16 in the checkpoints
         * (DeepSeek-V3: no weight_scale_inv for it): the native dtype, whatever the scheme */
        uint64_t eh[1] = {H};
        add_linear_fmt(&L, "mtp.eh_proj", 1, eh, 1, 2 * H, &c->q->formats[0], false, false);
        plan_layer(c, &L, l, a->moe, n_local);
        add_norm(&L, "mtp.shared_head.norm.weight", H);
    }
    layers_emit(&L, b);
    layers_clear(&L);
    /* a tied head is the embedding's tensor, except on a last stage that has no embedding */
    if (c->last && (!a->tie_word_embeddings || !c->first))
        add_linear_fmt(&G, "lm_head", 1, vv, 1, H, head, false, false);
    if (a->vision_params) {
        /* The vision tower and projector: counted, not itemised (model/arch.c), split over TP
         * as vLLM's encoders shard their linears; ASSUMPTION: the native dtype. */
        uint64_t per = ceil_div(a->vision_params, c->tp);
        uint64_t one[1] = {per};
        add_linear_fmt(&G, "vision_tower+projector", 1, one, 1, 1,
                       model_quant_format(c->q, -1, MODEL_ROLE_VISION), false, false);
    }
    if (a->dsv4) { /* hc_head: the streams collapsed before the head, fp32 */
        uint64_t hc = MAX(1u, a->hc_mult);
        layer_add(&G, MODEL_MEM_WEIGHTS, "hc_head_fn", shape2(hc, hc * H), "fp32", hc * hc * H * 4);
        layer_add(&G, MODEL_MEM_WEIGHTS, "hc_head_base", shape1(hc), "fp32", hc * 4);
        layer_add(&G, MODEL_MEM_WEIGHTS, "hc_head_scale", shape1(1), "fp32", 4);
    }
    layers_emit(&G, b);
    layers_clear(&G);
    if (c->last)
        build_add(b, MODEL_MEM_WEIGHTS, g_strdup("norm.weight"), shape1(H), "bf16", H * 2);
}

/* ---- KV cache ---- */

/* Bytes one token's latent (MLA) or K+V (GQA) takes in one layer before DCP sharding. */
static uint64_t kv_main_width(const Ctx *c)
{
    const ModelArch *a = c->a;
    bool fp8 = c->e->kv_cache_dtype == SCHED_DTYPE_FP8;
    uint64_t elt = fp8 ? 1 : 2;
    if (a->mla) {
        /* FlashMLA sparse stores fp8 as "fp8_ds_mla": 512 fp8 latent + 4 fp32 scales (one per
         * 128) + 64 bf16 rope = 656 B (flashmla_sparse.py get_kv_cache_shape). */
        if (fp8 && c->backend == MODEL_BACKEND_FLASHMLA_SPARSE)
            return a->kv_lora_rank + ceil_div(a->kv_lora_rank, FP8_BLOCK) * 4 +
                   (uint64_t)a->qk_rope_head_dim * 2;
        return ((uint64_t)a->kv_lora_rank + a->qk_rope_head_dim) * elt;
    }
    return 2 * gqa_kv_heads(c) * a->head_dim * elt;
}

/* The indexer's key cache per token in a layer with its own indexer: fp8 keys plus one fp32
 * scale per 128 (DeepseekV32IndexerCache, head_dim + head_dim / 128 * 4 = 132 B), whatever
 * kv_cache_dtype is. vLLM-Ascend keeps bf16 keys (no fp8 on the NPU). */
static uint64_t kv_index_width(const Ctx *c)
{
    uint64_t id = c->a->index_head_dim;
    return c->ascend ? id * 2 : id + ceil_div(id, INDEXER_QBLOCK) * 4;
}

/* Whether the indexer cache is sharded by DCP like the latent: yes in vLLM (the indexer
 * localizes decode lengths per DCP rank), no on vLLM-Ascend (SFA replicates it). */
static bool index_sharded(const Ctx *c)
{
    return !c->ascend;
}

uint64_t model_kv_bytes_per_token_layer(const ModelArch *arch, const ModelPlan *plan,
                                        const ModelEngine *engine)
{
    g_return_val_if_fail(arch && plan && engine, 0);
    Ctx c;
    ctx_init(&c, arch, plan, engine, NULL);
    uint64_t bytes = ceil_div(kv_main_width(&c), c.dcp);
    if (arch->dsa)
        bytes += index_sharded(&c) ? ceil_div(kv_index_width(&c), c.dcp) : kv_index_width(&c);
    return bytes;
}

static uint32_t indexer_layers(const Ctx *c)
{
    const ModelArch *a = c->a;
    uint32_t n = 0;
    if (a->dsa)
        for (uint32_t l = c->l0; l < c->l1; l++)
            n += a->index_shared[l] ? 0 : 1;
    return n;
}

/* Blocks a sliding-window cache admits per request (vLLM SlidingWindowSpec.max_memory_usage:
 * cdiv(min(window - 1 + max_num_batched_tokens, len), block) + 1). */
static uint64_t window_blocks(const Ctx *c, uint64_t window, uint64_t block, uint64_t len)
{
    uint64_t need = MIN(window - 1 + c->e->max_num_batched_tokens, len);
    return ceil_div(need, block) + 1;
}

/* DeepSeek-V4.1: every layer's 128-token fp8 window as V4's (vLLM runs V4.1 on V4's attention
 * and its fp8_ds_mla window pages), plus per kv-source group one compressed cache of
 * ceil(len / ratio) entries, each the FP4 latent (head_dim e2m1 + an e4m3 scale per 16:
 * 288 B) and its FP4 indexer key (index_head_dim e2m1 + a ue8m0 scale per 32: 68 B) — the
 * QAT formats of transformers' deepseek_v41 docs, which give the paper's 890 B of global KV per
 * token for the released schedule (HF papers 2609.19969). ASSUMPTION: whole 256-token logical
 * blocks as V4's compressed layers (vLLM's V4.1 page layout is not published); the
 * compressor's partial-group state (at most ratio - 1 tokens) is left out. */
#define V41_ENTRY_BYTES(a) ((a)->head_dim / 2 + (a)->head_dim / 16 + (a)->index_head_dim / 2 + \
                            (a)->index_head_dim / 32)
static uint64_t v41_request_bytes(const Ctx *c, uint64_t len)
{
    const ModelArch *a = c->a;
    uint64_t total = 0, blocks = ceil_div(len, MODEL_ENGINE_V4_COMPRESSED_BLOCK);
    for (uint32_t l = c->l0; l < c->l1; l++) {
        total += window_blocks(c, V4_SWA_WINDOW, V4_SWA_BLOCK, len) * V4_PAGE_LARGE;
        uint64_t r = a->csa_ratio[l];
        if (a->kv_source[l] && r > 0)
            total += blocks * ceil_div(MODEL_ENGINE_V4_COMPRESSED_BLOCK, r) * V41_ENTRY_BYTES(a);
    }
    return total;
}

/* DeepSeek-V4: what one request of `len` tokens takes on a rank (the caches are not split by
 * TP: one latent KV head). */
static uint64_t v4_request_bytes(const Ctx *c, uint64_t len)
{
    const ModelArch *a = c->a;
    uint64_t total = 0, compressed = ceil_div(len, MODEL_ENGINE_V4_COMPRESSED_BLOCK);
    if (a->dsv41)
        return v41_request_bytes(c, len);
    for (uint32_t l = c->l0; l < c->l1; l++) {
        total += window_blocks(c, V4_SWA_WINDOW, V4_SWA_BLOCK, len) * V4_PAGE_LARGE;
        if (a->compress_ratio[l] == 4)
            total += compressed * (V4_PAGE_LARGE + V4_PAGE_INDEXER) +
                     window_blocks(c, 8, 4, len) * (V4_PAGE_LARGE + V4_PAGE_INDEXER);
        else if (a->compress_ratio[l] == 128)
            total += compressed * V4_PAGE_C128 + window_blocks(c, 128, 8, len) * V4_PAGE_LARGE;
    }
    return total;
}

/* Hybrid models: vLLM's hybrid KV-cache layout on this rank (model/memory-hybrid.h). */
static void hybrid_layout(const Ctx *c, ModelHybridLayout *L)
{
    model_hybrid_layout(c->a, c->tp, c->e, c->hw, c->l0, c->l1,
                        c->e->kv_cache_dtype == SCHED_DTYPE_FP8 ? 1 : 2, L);
}

static uint64_t kv_bytes_per_token_rank(const Ctx *c)
{
    if (model_arch_is_hybrid(c->a)) /* the attention layers' K and V; the state is per request */
        return kv_main_width(c) *
               model_arch_count_mixer(c->a, MODEL_MIXER_ATTENTION, c->l0, c->l1);
    if (c->a->dsv4) /* per token of a max_model_len request, windows included */
        return ceil_div(v4_request_bytes(c, MAX(1u, c->e->max_model_len)),
                        MAX(1u, c->e->max_model_len));
    uint64_t main = ceil_div(kv_main_width(c), c->dcp) * n_layers(c);
    uint64_t idx = index_sharded(c) ? ceil_div(kv_index_width(c), c->dcp) : kv_index_width(c);
    return main + idx * indexer_layers(c);
}

static uint32_t kv_block_size(const Ctx *c)
{
    if (model_arch_is_hybrid(c->a)) {
        ModelHybridLayout L;
        hybrid_layout(c, &L);
        return L.block_size;
    }
    return model_engine_kv_block_size(c->a, c->backend, c->hw);
}

/* KV bytes one request of `len` tokens holds on a rank, in whole blocks: every full-attention
 * layer its DCP shard of the tokens; a sliding-window layer at most cdiv(min(window - 1 +
 * max_num_batched_tokens, len), block) + 1 blocks (vLLM SlidingWindowSpec.max_memory_usage_bytes,
 * v1/kv_cache_interface.py); the indexer cache like the latent when DCP shards it, whole
 * otherwise. */
static uint64_t kv_request_bytes(const Ctx *c, uint64_t len)
{
    const ModelArch *a = c->a;
    if (a->dsv4)
        return v4_request_bytes(c, len);
    if (model_arch_is_hybrid(a)) {
        ModelHybridLayout L;
        hybrid_layout(c, &L);
        return model_hybrid_request_bytes(&L, len);
    }
    uint64_t bs = kv_block_size(c);
    uint64_t main_w = kv_main_width(c);
    uint64_t shard_blocks = ceil_div(ceil_div(len, c->dcp), bs);
    uint64_t total = 0;
    for (uint32_t l = c->l0; l < c->l1; l++) {
        uint64_t blocks = shard_blocks;
        if (a->sliding_window && a->layer_sliding[l]) {
            uint64_t need =
                MIN((uint64_t)a->sliding_window - 1 + c->e->max_num_batched_tokens, len);
            blocks = MIN(blocks, ceil_div(ceil_div(need, c->dcp), bs) + 1);
        }
        total += blocks * bs * main_w;
    }
    if (a->dsa) {
        uint64_t idx_blocks = index_sharded(c) ? shard_blocks : ceil_div(len, bs);
        total += (uint64_t)indexer_layers(c) * idx_blocks * bs * kv_index_width(c);
    }
    return total;
}

uint64_t model_kv_request_bytes(const ModelArch *arch, const ModelPlan *plan,
                                const ModelEngine *engine, uint32_t len)
{
    g_return_val_if_fail(arch && plan && engine, 0);
    Ctx *c = g_new(Ctx, 1);
    ctx_init(c, arch, plan, engine, NULL);
    uint64_t b = kv_request_bytes(c, len);
    g_free(c);
    return b;
}

/* ---- attention workspaces ---- */

/* FlashInfer's workspace buffers belong to the attention metadata builders, which vLLM builds
 * in initialize_kv_cache (init_attn_backend, both model runners), after the profile measured
 * the non-KV memory: no budget counts them (research notes vllm-memflow.md section 5). Under
 * PIECEWISE the V2 runner's CUDA-graph profile builds them too, inside memory_profiling but
 * before the graph estimate starts and after the torch peak is taken, so they stay uncounted. */
static void plan_workspace(const Ctx *c, Build *b)
{
    const ModelArch *a = c->a;
    const ModelEngine *e = c->e;
    if (c->backend == MODEL_BACKEND_FLASHINFER_MLA_SPARSE) {
        uint64_t heads = a->num_heads / c->tp;
        /* vLLM before PR #50791 (landed through #55879) keeps the fixed buffer and carves the
         * softmax-stats slab out of it at run time (model_sparse_mla_slab_check). */
        bool sized =
            c->dcp > 1 && model_vllm_has(e->vllm_absent, MODEL_VLLM_SPARSE_MLA_DCP_WORKSPACE);
        uint64_t ws = sized ? model_flashinfer_sparse_workspace((uint32_t)heads, c->dcp,
                                                                e->max_num_batched_tokens)
                            : FLASHINFER_WORKSPACE_BYTES;
        char *shape = sized ? g_strdup_printf("394 MiB + 8 x (%" G_GUINT64_FORMAT
                                              " heads x DCP %u) x %u tokens x 256 + 1 MiB",
                                              heads, c->dcp, e->max_num_batched_tokens)
                            : g_strdup("394 MiB");
        build_add(b, MODEL_MEM_OUTSIDE_BUDGET, g_strdup("flashinfer.trtllm_sparse_mla_workspace"),
                  shape, "uint8", ws);
    } else if (c->backend == MODEL_BACKEND_FLASHINFER_MLA) {
        build_add(b, MODEL_MEM_OUTSIDE_BUDGET, g_strdup("flashinfer.workspace_buffer"),
                  g_strdup("394 MiB"), "uint8", FLASHINFER_WORKSPACE_BYTES);
    }
    /* FLASHMLA(_SPARSE): tile-scheduler metadata of a few KiB; TRITON_MLA, FLASH_ATTN, ASCEND:
     * no persistent workspace (per-call scratch falls under activations). */
    if (a->dsa) {
        /* DeepseekV2Model allocates topk_indices_buffer [max_num_batched_tokens, index_topk]
         * int32 at model construction, shared by every layer's indexer. */
        uint64_t rows = e->max_num_batched_tokens, k = a->index_topk;
        build_add(b, MODEL_MEM_ATTN_WORKSPACE, g_strdup("indexer.topk_indices_buffer"),
                  shape2(rows, k), "int32", rows * k * 4);
    }
}

/* ---- activations: the peak live set of a profile forward ---- */

typedef struct {
    const char *name;
    uint64_t d[3];
    int nd;
    const char *dtype;
    uint64_t elt;
} ATens;

typedef struct {
    const char *phase;
    ATens t[8];
    int n;
} APhase;

static void aph_add(APhase *p, const char *name, int nd, uint64_t d0, uint64_t d1, uint64_t d2,
                    const char *dtype, uint64_t elt)
{
    g_assert(p->n < (int)G_N_ELEMENTS(p->t));
    ATens *t = &p->t[p->n++];
    t->name = name;
    t->nd = nd;
    t->d[0] = d0, t->d[1] = d1, t->d[2] = d2;
    t->dtype = dtype;
    t->elt = elt;
}

static uint64_t atens_bytes(const ATens *t)
{
    uint64_t b = t->elt;
    for (int i = 0; i < t->nd; i++)
        b *= t->d[i];
    return b;
}

static uint64_t aph_bytes(const APhase *p)
{
    uint64_t s = 0;
    for (int i = 0; i < p->n; i++)
        s += atens_bytes(&p->t[i]);
    return s;
}

/* Rows the profile forward runs on a rank for `tokens` tokens: vLLM's dummy run feeds
 * max_num_batched_tokens rows to every rank (PCP splits scheduled batches, not the dummy run).
 * Sequence parallel / DSA CP: attention on the full (TP-padded) tokens, the rest on local. */
typedef struct {
    uint64_t attn, local, moe;
} ARows;

static ARows act_rows(const Ctx *c, uint64_t tokens)
{
    ARows r;
    if (c->dsa_cp || c->sp) {
        r.attn = ceil_div(tokens, c->tp) * c->tp;
        r.local = r.attn / c->tp;
        r.moe = c->dsa_cp ? r.local : r.attn; /* SP runs the MoE on full tokens */
    } else {
        r.attn = r.local = r.moe = tokens;
    }
    return r;
}

/* Query heads the attention kernel sees after the DCP query gather (model/plan.c
 * dcp_gathered_heads: x DCP without PCP, x DCP / PCP with PCP). */
static uint64_t gathered_heads(const Ctx *c)
{
    if (c->dcp <= 1)
        return c->heads;
    return c->pcp > 1 ? c->heads * (c->dcp / c->pcp) : c->heads * c->dcp;
}

/* The routed experts are NVFP4, so FlashInfer's MoE kernels quantize the activations to FP4. */
static bool experts_fp4(const Ctx *c)
{
    for (uint32_t l = 0; l < c->a->num_layers; l++)
        if (model_arch_layer_is_moe(c->a, l))
            return model_quant_format(c->q, (int32_t)l, MODEL_ROLE_EXPERT)->kind ==
                   MODEL_WFMT_NVFP4;
    return false;
}

static int32_t first_moe_layer(const ModelArch *a)
{
    for (uint32_t l = 0; l < a->num_layers; l++)
        if (model_arch_layer_is_moe(a, l))
            return (int32_t)l;
    return 0;
}

/* The fused-MoE workspace the WorkspaceManager keeps after the profile forward (vLLM with PR
 * 27532): the modular kernel's workspace13 + workspace2 + output for the rows reaching the
 * experts, M = min(rows, VLLM_FUSED_MOE_CHUNK_SIZE), by backend (model/memory-vllm.c). The
 * FlashInfer CUTLASS backend's own workspace is its moe_cutlass phase. 0 without MoE. */
static uint64_t moe_persistent_workspace(const Ctx *c, uint64_t tokens)
{
    const ModelArch *a = c->a;
    if (!a->moe || !model_vllm_has(c->e->vllm_absent, MODEL_VLLM_MOE_WORKSPACE_PERSISTENT))
        return 0;
    ARows r = act_rows(c, tokens);
    uint64_t mrows = r.moe;
    if (c->ep <= 1 && (c->dp > 1 || c->pcp > 1))
        mrows *= c->dp > 1 ? c->dp : c->pcp;
    const ModelWeightFormat *f = model_quant_format(c->q, first_moe_layer(a),
                                                    MODEL_ROLE_EXPERT);
    uint64_t il =
        c->ep > 1 ? a->moe_intermediate_size : ceil_div(a->moe_intermediate_size, c->moe_world);
    uint64_t H = a->hidden_size;
    bool oai = false;
    ModelMoeBackend be = c->e->moe_backend;
    if (f->kind == MODEL_WFMT_MXFP4 && f->scheme == MODEL_QSCHEME_MXFP4) {
        ModelMxfp4Backend mb = model_mem_mxfp4_backend(c->hw, be);
        model_mem_mxfp4_pad(mb, &il, &H);
        oai = mb == MODEL_MXFP4_TRITON;
        if (mb == MODEL_MXFP4_FLASHINFER)
            return 0; /* FlashInfer's MXFP4 kernels: no modular workspace */
    }
    ModelMoeWsShape sh = {.rows = MIN(mrows, (uint64_t)MODEL_MEM_FUSED_MOE_CHUNK),
                          .top_k = a->num_experts_per_tok,
                          .inter = il,
                          .hidden = H,
                          .local_experts = local_experts(c, 0),
                          .mxfp4_oai = oai};
    return model_mem_moe_workspace_bytes(be, &sh);
}

/* Fills `phases` with the candidate peak sets; returns how many. `profile` adds the dummy
 * sampler run on the last pipeline stage (the profile run, not CUDA-graph capture). */
static int act_phases(const Ctx *c, uint64_t tokens, bool profile, bool replicated, APhase *ph)
{
    const ModelArch *a = c->a;
    ARows r = act_rows(c, tokens);
    uint64_t H = a->hidden_size, h = c->heads;
    int n = 0;
    if (a->mla) {
        uint64_t qk = (uint64_t)a->qk_nope_head_dim + a->qk_rope_head_dim;
        uint64_t kva = (uint64_t)a->kv_lora_rank + a->qk_rope_head_dim;
        APhase *p = &ph[n++];
        memset(p, 0, sizeof *p);
        if (a->dsa) {
            /* absorbed (MQA) path of sparse MLA: q, q projected into the latent, latent out */
            uint64_t hq = gathered_heads(c);
            p->phase = "sparse_attention";
            if (a->q_lora_rank)
                aph_add(p, "q_c", 2, r.attn, a->q_lora_rank, 0, "bf16", 2);
            aph_add(p, "kv_c_k_pe", 2, r.attn, kva, 0, "bf16", 2);
            aph_add(p, "q", 3, r.attn, h, qk, "bf16", 2);
            aph_add(p, "q_latent", 3, r.attn, hq, kva, "bf16", 2);
            aph_add(p, "attn_out_latent", 3, r.attn, hq, a->kv_lora_rank, "bf16", 2);
            APhase *x = &ph[n++];
            memset(x, 0, sizeof *x);
            x->phase = "indexer";
            uint64_t ih = a->index_n_heads, id = a->index_head_dim;
            if (a->q_lora_rank)
                aph_add(x, "q_c", 2, r.attn, a->q_lora_rank, 0, "bf16", 2);
            aph_add(x, "kv_c_k_pe", 2, r.attn, kva, 0, "bf16", 2);
            aph_add(x, "index_q", 3, r.attn, ih, id, "bf16", 2);
            aph_add(x, "index_q_fp8", 3, r.attn, ih, id, "fp8_e4m3", 1);
            aph_add(x, "index_weights", 2, r.attn, ih, 0, "fp32", 4);
            /* logits [rows, context] fp32 per prefill chunk, bounded by 512 MiB */
            uint64_t lg = r.attn * r.attn * 4;
            if (lg > INDEXER_MAX_LOGITS_BYTES)
                lg = INDEXER_MAX_LOGITS_BYTES;
            aph_add(x, "index_logits", 1, lg / 4, 0, 0, "fp32", 4);
        } else {
            /* dense MLA prefill (forward_mha): kv_b_proj output expanded to per-head K and V */
            p->phase = "mla_prefill";
            if (a->q_lora_rank)
                aph_add(p, "q_c", 2, r.attn, a->q_lora_rank, 0, "bf16", 2);
            aph_add(p, "kv_c_k_pe", 2, r.attn, kva, 0, "bf16", 2);
            aph_add(p, "q", 3, r.attn, h, qk, "bf16", 2);
            aph_add(p, "kv", 3, r.attn, h, (uint64_t)a->qk_nope_head_dim + a->v_head_dim, "bf16",
                    2);
            aph_add(p, "k", 3, r.attn, h, qk, "bf16", 2);
            aph_add(p, "attn_out", 3, r.attn, h, a->v_head_dim, "bf16", 2);
        }
    } else {
        APhase *p = &ph[n++];
        memset(p, 0, sizeof *p);
        p->phase = "attention";
        uint64_t hd = a->head_dim, kvh = gqa_kv_heads(c);
        aph_add(p, "qkv", 2, r.attn, (h + 2 * kvh) * hd, 0, "bf16", 2);
        aph_add(p, "attn_out", 2, r.attn, h * hd, 0, "bf16", 2);
    }
    ModelMoeWorkspace ws;
    bool cutlass = a->moe && c->e->moe_backend == MODEL_MOE_FLASHINFER_CUTLASS;
    /* Rows that every PCP rank holds alike (decode, CUDA-graph captures) skip the gather: vLLM
     * PR 56157's all-reduce fast path for all-PCP-replicated steps. */
    if (cutlass && replicated && c->pcp > 1 && c->dp <= 1)
        cutlass = model_moe_cutlass_workspace_rows(a, &c->pl->par, r.moe, experts_fp4(c), &ws);
    else if (cutlass)
        cutlass =
            model_moe_cutlass_workspace(a, &c->pl->par, (uint32_t)tokens, experts_fp4(c), &ws);
    if (cutlass) {
        /* FlashInfer's CUTLASS fused MoE (vLLM's FlashInferExperts under the modular kernel):
         * the dispatch gathers the rows over DP (else PCP) as the lowering does, quantized to
         * NVFP4 before it when the experts are; the modular kernel takes max(workspace13 (M,
         * K), fused_out (M, 2K)), K the packed 3072 of an NVFP4 row, from vLLM's persistent
         * WorkspaceManager (vllm/v1/worker/workspace.py); the runner allocates its own
         * workspace per call (getWorkspaceInfo, model_moe_cutlass_workspace); the combine
         * writes the rank's [rows, H] output. Research notes vllm-memflow.md sections 2-3. */
        uint64_t m = ws.tokens, k = a->num_experts_per_tok;
        APhase *p = &ph[n++];
        memset(p, 0, sizeof *p);
        p->phase = "moe_cutlass";
        aph_add(p, "router_logits", 2, r.moe, a->n_routed_experts, 0, "fp32", 4);
        if (experts_fp4(c))
            aph_add(p, "dispatched_a1q_and_scales", 2, m, H / 2 + H / 16, 0, "nvfp4+fp8", 1);
        else
            aph_add(p, "dispatched_hidden", 2, m, H, 0, "bf16", 2);
        aph_add(p, "dispatched_topk_ids_weights", 2, m, k, 0, "int32+fp32", 8);
        aph_add(p, "workspace_manager", 2, m, H, 0, "bf16", 2);
        aph_add(p, "cutlass_runner_workspace", 1, ws.bytes, 0, 0, "uint8", 1);
        /* FlashInfer's Python op allocates the per-expert token scores [local experts, rows]
         * fp32 on every call, min-latency mode or not (flashinfer/fused_moe/core.py
         * cutlass_fused_moe @fb28d72; research notes moe-peak-live-set.md) */
        aph_add(p, "experts_to_token_score", 2, ws.local_experts, m, 0, "fp32", 4);
        aph_add(p, "output", 2, r.moe, H, 0, "bf16", 2);
        /* SharedFusedMoE runs the shared experts first and keeps their output until it adds
         * the routed one (vllm/model_executor/layers/fused_moe/shared_fused_moe.py) */
        if (a->n_shared_experts > 0 || a->shared_expert_intermediate_size > 0)
            aph_add(p, "shared_experts_output", 2, r.moe, H, 0, "bf16", 2);
    } else if (a->moe) {
        /* routed experts: every rank receives rows x top-k token-expert pairs (uniform routing
         * with EP; all of them with the experts TP-sharded). Without EP and with DP (else
         * PCP) > 1 the rows are first gathered over that group (the lowering's
         * moe_dispatch_all_gather), so the experts see rows x DP. */
        uint64_t mrows = r.moe;
        if (c->ep <= 1 && (c->dp > 1 || c->pcp > 1))
            mrows *= c->dp > 1 ? c->dp : c->pcp;
        uint64_t pairs = mrows * a->num_experts_per_tok;
        uint64_t il =
            c->ep > 1 ? a->moe_intermediate_size : ceil_div(a->moe_intermediate_size, c->moe_world);
        APhase *p1 = &ph[n++], *p2 = &ph[n++];
        memset(p1, 0, sizeof *p1);
        memset(p2, 0, sizeof *p2);
        p1->phase = "moe_w13";
        p2->phase = "moe_w2";
        APhase *both[2] = {p1, p2};
        for (int i = 0; i < 2; i++) {
            aph_add(both[i], "router_logits", 2, mrows, a->n_routed_experts, 0, "fp32", 4);
            aph_add(both[i], "topk_ids_weights", 2, mrows, a->num_experts_per_tok, 0, "int32+fp32",
                    8);
            aph_add(both[i], "permuted_hidden", 2, pairs, H, 0, "bf16", 2);
            aph_add(both[i], "act_out", 2, pairs, il, 0, "bf16", 2);
        }
        aph_add(p1, "gate_up_out", 2, pairs, 2 * il, 0, "bf16", 2);
        aph_add(p2, "down_out", 2, pairs, H, 0, "bf16", 2);
    }
    if (!a->moe || model_arch_dense_layers(a) > 0) {
        uint64_t i = ceil_div(a->intermediate_size, c->tp);
        APhase *p = &ph[n++];
        memset(p, 0, sizeof *p);
        p->phase = "mlp";
        aph_add(p, "gate_up_out", 2, r.moe, 2 * i, 0, "bf16", 2);
        aph_add(p, "act_out", 2, r.moe, i, 0, "bf16", 2);
        aph_add(p, "down_out", 2, r.moe, H, 0, "bf16", 2);
    }
    if (profile && c->last) {
        /* the dummy sampler run over min(max_num_seqs, tokens) rows of the gathered
         * vocabulary, top_k = vocab - 1 and top_p = 0.9, only on the last pipeline stage
         * (profile_run: `if get_pp_group().is_last_rank: ... _dummy_sampler_run`): its peak per
         * logit depends on the top-k/top-p kernel of the version (model/memory-vllm.c); the
         * fused-MoE workspaces the WorkspaceManager keeps are still allocated (PR 27532) */
        uint64_t s = MIN((uint64_t)MAX(1u, c->e->max_num_seqs), tokens);
        uint64_t vp = ceil_div(a->vocab_size, VOCAB_PADDING) * VOCAB_PADDING;
        double bpl = model_mem_sampler_bytes_per_logit(c->e->vllm_absent);
        APhase *p = &ph[n++];
        memset(p, 0, sizeof *p);
        p->phase = "sampler";
        aph_add(p,
                bpl < 20 ? "logits_probs_q (14 B per logit, Triton top-k/top-p)"
                         : "logits_and_sort (PyTorch sort top-k/top-p, fitted B per logit)",
                1, (uint64_t)(bpl * (double)(s * vp)), 0, 0, "mixed", 1);
        uint64_t scratch = model_mem_sampler_scratch_bytes(c->e->vllm_absent, s, a->vocab_size,
                                                           c->hw ? c->hw->compute_units : 0);
        if (scratch)
            aph_add(p, "topk_topp_triton_buffer", 1, scratch, 0, 0, "fp32", 1);
        /* What the profile run holds while the sampler runs (vllm/v1/worker/gpu_model_runner.py,
         * V1 runner, every release read from 0.10 to 0.2x): profile_run keeps the forward's
         * output `hidden_states` [max_num_batched_tokens, H] until `del hidden_states, output`
         * after _dummy_sampler_run; `last_hidden_states` = hidden_states[logit_indices] (one
         * row per dummy request, a gathered copy) and _dummy_sampler_run's
         * `torch.rand_like(hidden_states)`, which compute_logits reads, are both alive. */
        aph_add(p, "profile_hidden_states", 2, r.attn, H, 0, "bf16", 2);
        aph_add(p, "last_hidden_states_and_rand_like", 3, 2, s, H, "bf16", 2);
        uint64_t ws = moe_persistent_workspace(c, tokens);
        if (ws)
            aph_add(p, "fused_moe_workspace (WorkspaceManager)", 1, ws, 0, 0, "bf16", 1);
    }
    return n;
}

static char *atens_shape(const ATens *t)
{
    if (t->nd == 1)
        return shape1(t->d[0]);
    if (t->nd == 2)
        return shape2(t->d[0], t->d[1]);
    return shape3(t->d[0], t->d[1], t->d[2]);
}

/* The peak: residual + hidden states + the largest phase. Adds items to `b` under `comp`
 * when `b` is given; returns the bytes. */
static uint64_t plan_activations(const Ctx *c, uint64_t tokens, bool profile, bool replicated,
                                 Build *b)
{
    ARows r = act_rows(c, tokens);
    uint64_t H = c->a->hidden_size;
    APhase ph[8];
    int n = act_phases(c, tokens, profile, replicated, ph);
    uint64_t resid = r.local * H * 2, hidden = r.attn * H * 2;
    /* A stage after the first receives the previous stage's hidden states and residual into
     * buffers the profile run's _dummy_run makes once and keeps: make_empty_intermediate_tensors
     * (batch_size=max_num_tokens), two [max_num_batched_tokens, H] tensors in the model dtype
     * (vllm/v1/worker/gpu_model_runner.py _dummy_run, `self.intermediate_tensors`); they are
     * live through every phase, the sampler's included. */
    uint64_t pp_recv = profile && !c->first ? 2 * tokens * H * 2 : 0;
    /* torch's cuBLAS workspace, made by the profile forward's first GEMM and kept
     * (model/memory-vllm.c): live through every phase */
    uint64_t cublas = profile ? model_mem_cublas_workspace_bytes(c->hw) : 0;
    /* a forward phase holds the residual and the hidden states too; the dummy sampler runs
     * after the forward, when they are freed (what the profile run still holds then is in the
     * sampler's phase: its output hidden states and the sampled rows) */
    int best = 0;
    uint64_t best_total = 0;
    for (int i = 0; i < n; i++) {
        bool sampler = strcmp(ph[i].phase, "sampler") == 0;
        uint64_t t = aph_bytes(&ph[i]) + (sampler ? 0 : resid + hidden) + pp_recv + cublas;
        if (i == 0 || t > best_total)
            best = i, best_total = t;
    }
    if (strcmp(ph[best].phase, "sampler") == 0)
        resid = hidden = 0;
    uint64_t total = best_total;
    if (b) {
        build_add(b, MODEL_MEM_ACTIVATIONS, g_strdup("activations.residual"), shape2(r.local, H),
                  "bf16", resid);
        build_add(b, MODEL_MEM_ACTIVATIONS, g_strdup("activations.hidden_states"),
                  shape2(r.attn, H), "bf16", hidden);
        if (pp_recv)
            build_add(b, MODEL_MEM_ACTIVATIONS, g_strdup("activations.pp_intermediate_tensors"),
                      shape3(2, tokens, H), "bf16", pp_recv);
        if (cublas)
            build_add(b, MODEL_MEM_ACTIVATIONS, g_strdup("activations.cublas_workspace"),
                      shape1(cublas), "uint8", cublas);
        for (int i = 0; i < ph[best].n; i++) {
            const ATens *t = &ph[best].t[i];
            build_add(b, MODEL_MEM_ACTIVATIONS,
                      g_strdup_printf("activations.%s.%s", ph[best].phase, t->name), atens_shape(t),
                      t->dtype, atens_bytes(t));
        }
    }
    return total;
}

/* ---- CUDA graphs ---- */

static void plan_cudagraph(const Ctx *c, Build *b)
{
    ModelCudagraph m = c->e->cudagraph_mode;
    if (m == MODEL_CUDAGRAPH_NONE)
        return;
    uint32_t largest = 0;
    uint32_t n_all = model_engine_cudagraph_sizes(c->e, c->hw, UINT32_MAX, &largest);
    if (n_all == 0)
        return;
    /* vLLM: max over modes of the first capture + (n - 1) x the next graph's cost, per mode.
     * First capture = the graph pool's live set at the largest size. */
    uint64_t pool = plan_activations(c, largest, false, true, NULL);
    build_add(b, MODEL_MEM_CUDAGRAPH, g_strdup("cudagraph.pool"),
              g_strdup_printf("activations at %u tokens", largest), "bf16", pool);
    /* vLLM's profile_cudagraph_memory counts one capture descriptor (one batch size of one
     * mode) as a graph, however many piecewise sub-graphs it records: a further size costs
     * what its capture measured on top of the shared pool, at least 1 MiB ("at least 1 MiB
     * per graph for driver overhead"). A piecewise capture records one graph per piece (split
     * at every attention op); a piece's cost grows with its kernels: GRAPH_PIECE_MOE_BYTES for
     * a piece ending in an MoE layer, GRAPH_PIECE_BYTES otherwise. A FULL capture is one
     * graph. */
    uint64_t moe_pieces = 0;
    for (uint32_t l = c->l0; l < c->l1; l++)
        moe_pieces += model_arch_layer_is_moe(c->a, l);
    uint64_t pieces = (uint64_t)n_layers(c) + 1;
    if (m == MODEL_CUDAGRAPH_PIECEWISE || m == MODEL_CUDAGRAPH_FULL_AND_PIECEWISE) {
        uint64_t per = MAX(moe_pieces * GRAPH_PIECE_MOE_BYTES +
                               (pieces - moe_pieces) * GRAPH_PIECE_BYTES,
                           GRAPH_OVERHEAD_BYTES);
        build_add(b, MODEL_MEM_CUDAGRAPH, g_strdup("cudagraph.piecewise_graphs"),
                  g_strdup_printf("(%u - 1) sizes x (%" G_GUINT64_FORMAT
                                  " MoE pieces x 1 MiB + %" G_GUINT64_FORMAT
                                  " pieces x 0.3 MiB)",
                                  n_all, moe_pieces, pieces - moe_pieces),
                  "graph", (uint64_t)(n_all - 1) * per);
    }
    if (m == MODEL_CUDAGRAPH_FULL || m == MODEL_CUDAGRAPH_FULL_AND_PIECEWISE) {
        /* FULL: every size; FULL_AND_PIECEWISE: uniform-decode sizes up to max_num_seqs */
        uint32_t l2 = 0;
        uint32_t n_full =
            m == MODEL_CUDAGRAPH_FULL
                ? n_all
                : model_engine_cudagraph_sizes(c->e, c->hw, MAX(1u, c->e->max_num_seqs), &l2);
        if (n_full > 1)
            build_add(b, MODEL_MEM_CUDAGRAPH, g_strdup("cudagraph.full_graphs"),
                      g_strdup_printf("(%u - 1) sizes x 1 MiB", n_full), "graph",
                      (uint64_t)(n_full - 1) * GRAPH_OVERHEAD_BYTES);
    }
}

/* ---- outside the budget: allocated where no measurement of vLLM's sees it ---- */

static void plan_outside(const Ctx *c, Build *b)
{
    if (c->e->v2_model_runner && c->last) {
        /* The V2 runner builds its Sampler in load_model after the weights' memory is measured,
         * and the sampler's PenaltiesState holds output_bin_counts [max_num_reqs, vocab] int32
         * (vllm/v1/worker/gpu/sample/penalties.py: "can be very large, taking up GBs").
         * memory_profiling's total_consumed (the device's free memory since the worker's first
         * snapshot) counts it: a buffer made once outside the profile. Before it neither the
         * weights' measurement nor the profile's torch peak increase saw it. */
        uint64_t rows = MAX(1u, c->e->max_num_seqs), v = c->a->vocab_size;
        bool counted =
            model_vllm_has(c->e->vllm_absent, MODEL_VLLM_MEMORY_PROFILING_TOTAL_CONSUMED);
        build_add(b, counted ? MODEL_MEM_ATTN_WORKSPACE : MODEL_MEM_OUTSIDE_BUDGET,
                  g_strdup("sampler.penalties.output_bin_counts"), shape2(rows, v), "int32",
                  rows * v * 4);
    }
}

/* ---- non-torch memory the profile run adds, inside the budget ---- */

/* What vLLM's "non-torch forward increase memory" counts on CUDA (model/memory-vllm.c): the
 * kernel modules and library workspaces the profile loads; with NCCL's cuMem on (PR 24141) the
 * ring buffers the profile's first large TP all-reduce connects after the snapshot; the
 * FlashInfer all-reduce + RMSNorm fusion workspace (PR 34299; DP = PP = 1 in the releases
 * before PR 41458). Items named non_torch.* in the attn_workspace component (a workspace made
 * during the profile, counted by the budget). */
static void plan_non_torch(const Ctx *c, Build *b)
{
    if (c->npu || (c->hw && c->hw->platform != NET_PLATFORM_CUDA))
        return;
    const ModelEngine *e = c->e;
    uint64_t mods = model_mem_profile_non_torch_bytes(e->vllm_release);
    if (mods)
        build_add(b, MODEL_MEM_ATTN_WORKSPACE, g_strdup("non_torch.profile_run_modules"),
                  g_strdup(mods > (uint64_t)(0.2 * 1073741824.0) ? "fitted: 0.13 + 0.12 GiB"
                                                                  : "fitted: 0.13 GiB"),
                  "-", mods);
    if (c->tp <= 1)
        return;
    if (model_vllm_has(e->vllm_absent, MODEL_VLLM_NCCL_CUMEM_LAZY_CONNECT) &&
        !c->reserved_in_budget) {
        uint32_t ch = model_mem_nccl_channels(c->hw);
        build_add(b, MODEL_MEM_ATTN_WORKSPACE, g_strdup("non_torch.nccl_tp_ring_buffers"),
                  g_strdup_printf("%u channels x (6 MiB recv + 6 MiB send)", ch), "uint8",
                  model_mem_nccl_ring_bytes(ch));
    }
    ModelFiArShape fs = {.tp = c->tp,
                         .hidden = c->a->hidden_size,
                         .max_tokens = e->max_num_batched_tokens};
    uint64_t fi = model_mem_fi_allreduce_workspace_bytes(c->hw, &fs, e->vllm_absent);
    if (fi && e->cudagraph_mode != MODEL_CUDAGRAPH_NONE && c->dp <= 1 &&
        c->pl->par.pipeline_parallel_size <= 1 &&
        model_vllm_has(e->vllm_absent, MODEL_VLLM_FI_ALLREDUCE_FUSION_DEFAULT))
        build_add(b, MODEL_MEM_ATTN_WORKSPACE,
                  g_strdup("non_torch.flashinfer_allreduce_fusion_workspace"),
                  g_strdup_printf("TP %u: buffer + flags + 3 x Lamport%s", c->tp,
                                  model_vllm_has(e->vllm_absent,
                                                 MODEL_VLLM_FI_ALLREDUCE_SYMM_DEVICE_MEMORY) &&
                                          !model_vllm_has(e->vllm_absent,
                                                          MODEL_VLLM_FI_ALLREDUCE_TORCH_SYMM_MEMORY)
                                      ? ", each rounded up to 512 MiB"
                                      : ""),
                  "uint8", fi);
}

/* ---- reserved: runtime context and communicator buffers ---- */

static void add_comm(const Ctx *c, Build *b, const char *group, uint32_t size)
{
    if (size <= 1)
        return;
    uint64_t bytes = c->npu ? HCCL_COMM_BYTES : NCCL_COMM_BYTES;
    build_add(b, MODEL_MEM_RESERVED,
              g_strdup_printf("%s.%s_communicator", c->npu ? "hccl" : "nccl", group),
              g_strdup_printf("%u ranks", size), "uint8", bytes);
}

/* The CUDA / CANN context exists before vLLM's first memory snapshot, so its KV budget does
 * not subtract it (the "non-torch" memory of the profile is measured from that snapshot: 0.02
 * to 0.07 GiB on one GPU in the logs of doc/validation.md); it is outside the budget but on the
 * device, so the profile-run OOM check counts it. */
static uint64_t context_bytes(const Ctx *c)
{
    return c->npu ? CANN_CONTEXT_BYTES : CUDA_CONTEXT_BYTES;
}

static void plan_reserved(const Ctx *c, Build *b)
{
    add_comm(c, b, "tp", c->tp);
    add_comm(c, b, "pcp", c->pcp);
    add_comm(c, b, "dcp", c->dcp);
    add_comm(c, b, "dp", c->dp);
    /* the EP group's communicator exists for every MoE model with more than one rank */
    add_comm(c, b, "ep", c->a->moe && c->pl->moe ? c->pl->world : c->ep);
}

/* ---- one rank class ---- */

typedef struct {
    uint32_t n_local; /* local experts and the pipeline stage: the class key */
    uint32_t stage;
    ModelMemRank r;         /* items shared by every rank of the class */
    uint64_t weights_total; /* weights + quant_scales + derived */
    uint64_t non_kv;
    uint64_t one_request; /* KV bytes of one max_model_len request */
} RankClass;

static void plan_class(const Ctx *c, uint64_t requested, RankClass *k)
{
    Build b;
    memset(&b, 0, sizeof b);
    b.items = g_ptr_array_new_with_free_func(item_free);
    plan_weights(c, &b, k->n_local);
    plan_workspace(c, &b);
    plan_activations(c, MAX(1u, c->e->max_num_batched_tokens), true, false, &b);
    plan_cudagraph(c, &b);
    plan_reserved(c, &b);
    plan_non_torch(c, &b);
    plan_outside(c, &b);

    /* vLLM's non-KV memory: everything but the KV cache and what no budget counts; the
     * CUDA-graph estimate only when the profiler subtracts it (vLLM >= 0.21,
     * VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS) */
    uint64_t non_kv = 0;
    for (int i = 0; i < MODEL_MEM_COUNT; i++)
        if (model_mem_in_non_kv((ModelMemComponent)i, c->e->cudagraph_memory_profiling,
                                c->reserved_in_budget))
            non_kv += b.bytes[i];
    int64_t budget = (int64_t)requested - (int64_t)non_kv;
    uint64_t bpt = kv_bytes_per_token_rank(c);

    /* The KV cache the engine would allocate: whole blocks of rank-local slots. */
    ModelHybridLayout hl = {0};
    bool hybrid = model_arch_is_hybrid(c->a);
    if (hybrid)
        hybrid_layout(c, &hl);
    if (budget > 0 && hybrid) {
        uint64_t nb = model_hybrid_num_blocks(&hl, budget);
        build_add(&b, MODEL_MEM_KV_CACHE,
                  g_strdup_printf("layers.%u-%u.kv_cache (%u attention + %u state layers in %u "
                                  "groups of %u)",
                                  c->l0, c->l1 - 1, hl.attn_layers, hl.state_layers,
                                  hl.attn_groups + hl.state_groups, hl.group_size),
                  g_strdup_printf("%u x [%" G_GUINT64_FORMAT " blocks, %" G_GUINT64_FORMAT
                                  " B page (%u tokens; state %" G_GUINT64_FORMAT " B padded)]",
                                  hl.group_size, nb, hl.page, hl.block_size, hl.state_page),
                  c->e->kv_cache_dtype == SCHED_DTYPE_FP8 ? "fp8_e4m3" : "bf16",
                  nb * hl.page * hl.group_size);
    } else if (budget > 0 && bpt > 0 && c->a->dsv4) {
        build_add(&b, MODEL_MEM_KV_CACHE,
                  g_strdup_printf("layers.%u-%u.kv_cache (sliding window, compressed, indexer)",
                                  c->l0, c->l1 - 1),
                  g_strdup("the pool: every byte of the budget"), "fp8_ds_mla", (uint64_t)budget);
    } else if (budget > 0 && bpt > 0) {
        const ModelArch *a = c->a;
        uint64_t main_w = kv_main_width(c), idx_w = a->dsa ? kv_index_width(c) : 0;
        uint64_t nidx = indexer_layers(c);
        /* a slot holds one token of the rank's shard in every layer */
        uint64_t slot = main_w * n_layers(c) + (index_sharded(c) ? idx_w * nidx : 0);
        uint64_t per_token_repl = index_sharded(c) ? 0 : idx_w * nidx; /* not sharded */
        uint32_t blk = kv_block_size(c);
        /* slots s hold s x DCP tokens; replicated parts need one entry per token */
        uint64_t denom = slot + per_token_repl * c->dcp;
        uint64_t slots = (uint64_t)budget / denom / blk * blk;
        const char *kvdt =
            c->e->kv_cache_dtype == SCHED_DTYPE_FP8
                ? (c->backend == MODEL_BACKEND_FLASHMLA_SPARSE && a->mla ? "fp8_ds_mla"
                                                                         : "fp8_e4m3")
                : "bf16";
        build_add(&b, MODEL_MEM_KV_CACHE,
                  g_strdup_printf("layers.%u-%u.kv_cache", c->l0, c->l1 - 1),
                  g_strdup_printf("%u x [%" G_GUINT64_FORMAT " slots, %" G_GUINT64_FORMAT " B]",
                                  n_layers(c), slots, main_w),
                  kvdt, slots * main_w * n_layers(c));
        if (nidx) {
            uint64_t n_entries = index_sharded(c) ? slots : slots * c->dcp;
            int32_t *ls = g_new(int32_t, nidx);
            uint32_t j = 0;
            for (uint32_t l = c->l0; l < c->l1; l++)
                if (!a->index_shared[l])
                    ls[j++] = (int32_t)l;
            g_autofree char *ranges = sched_format_ranks(ls, j);
            g_free(ls);
            build_add(&b, MODEL_MEM_KV_CACHE, g_strdup_printf("layers.%s.indexer.k_cache", ranges),
                      g_strdup_printf("%" G_GUINT64_FORMAT " x [%" G_GUINT64_FORMAT
                                      " slots, %" G_GUINT64_FORMAT " B]",
                                      nidx, n_entries, idx_w),
                      c->ascend ? "bf16" : "fp8_e4m3+fp32 scale", n_entries * idx_w * nidx);
        }
    }

    k->r.items = b.items;
    memcpy(k->r.bytes, b.bytes, sizeof b.bytes);
    k->r.kv_budget_bytes = budget;
    k->r.kv_bytes_per_token = bpt;
    k->weights_total = b.bytes[MODEL_MEM_WEIGHTS] + b.bytes[MODEL_MEM_QUANT_SCALES] +
                       b.bytes[MODEL_MEM_DERIVED_WEIGHTS];
    k->non_kv = non_kv;
    k->one_request = kv_request_bytes(c, c->e->max_model_len);
    /* vLLM's capacity lines (kv_cache_utils.py get_max_concurrency_for_kv_cache_config and the
     * "GPU KV cache size" line derived from it): requests of max_model_len tokens that fit,
     * and that concurrency x max_model_len as the token count. */
    k->r.kv_block_size = kv_block_size(c);
    if (budget > 0 && k->one_request > 0 && hybrid) {
        /* get_max_concurrency_for_kv_cache_config: num_blocks / the blocks of one request;
         * "GPU KV cache size": num_blocks / groups x the attention block */
        uint64_t nb = model_hybrid_num_blocks(&hl, budget);
        k->r.max_concurrency =
            (double)nb / (double)model_hybrid_request_blocks(&hl, c->e->max_model_len);
        k->r.kv_tokens = model_hybrid_kv_tokens(&hl, nb);
    } else if (budget > 0 && k->one_request > 0) {
        k->r.max_concurrency = (double)budget / (double)k->one_request;
        k->r.kv_tokens = (uint64_t)(k->r.max_concurrency * (double)c->e->max_model_len);
    }
}

/* ---- diagnostics ---- */

/* In the order vLLM meets them: loading the weights, the profile forward (activations and
 * workspaces on top of the weights and the runtime's context), then the KV-cache budget. */
typedef enum { P_OOM = 0, P_PROFILE_OOM, P_NO_KV, P_TOO_SMALL, P_TIGHT, P_COUNT } Problem;

/* What the profile run holds at its peak: weights, the runtime context and communicator
 * buffers, attention workspaces and the activation peak. */
static uint64_t profile_peak(const RankClass *k, uint64_t context)
{
    const uint64_t *b = k->r.bytes;
    return context + k->weights_total + b[MODEL_MEM_RESERVED] + b[MODEL_MEM_ATTN_WORKSPACE] +
           b[MODEL_MEM_ACTIVATIONS];
}

static double util_ceil4(double x)
{
    return ceil(x * 10000.0 - 1e-7) / 10000.0;
}

static void json_rank(GString *s, uint32_t rank, const RankClass *k)
{
    g_string_append_printf(s,
                           "{\"rank\":%u,\"non_kv_bytes\":%" G_GUINT64_FORMAT
                           ",\"kv_budget_bytes\":%" G_GINT64_FORMAT
                           ",\"weights_total_bytes\":%" G_GUINT64_FORMAT
                           ",\"one_request_bytes\":%" G_GUINT64_FORMAT "}",
                           rank, k->non_kv, k->r.kv_budget_bytes, k->weights_total, k->one_request);
}

/* Whether rank class `k` has problem `p` (each rank has at most one: the first vLLM meets). */
static bool rank_has(const ModelMemPlan *m, const RankClass *k, Problem p)
{
    bool oom = k->weights_total > m->hbm_bytes;
    bool poom = !oom && profile_peak(k, m->context_bytes) > m->hbm_bytes;
    int64_t bud = k->r.kv_budget_bytes;
    bool small = !oom && !poom && bud > 0 && (uint64_t)bud < k->one_request;
    bool tight = !oom && !poom && bud > 0 && !small &&
                 (double)bud < MODEL_MEM_NON_KV_UNDERESTIMATE * (double)k->non_kv;
    return p == P_OOM           ? oom
           : p == P_PROFILE_OOM ? poom
           : p == P_NO_KV       ? !oom && !poom && bud <= 0
           : p == P_TOO_SMALL   ? small
                                : tight;
}

/* Whether rank class `k` is worse off than `w` for problem `p`: more weights, a higher profile
 * peak, or less KV budget left after one request. */
static bool rank_worse(const ModelMemPlan *m, const RankClass *k, const RankClass *w, Problem p)
{
    if (p == P_OOM)
        return k->weights_total > w->weights_total;
    if (p == P_PROFILE_OOM)
        return profile_peak(k, m->context_bytes) > profile_peak(w, m->context_bytes);
    return k->r.kv_budget_bytes - (int64_t)k->one_request <
           w->r.kv_budget_bytes - (int64_t)w->one_request;
}

/* One problem as found on the plan's ranks: what its message and its detail say. */
typedef struct {
    Problem p;
    GArray *ranks;      /* int32 ranks that have it, ascending */
    int32_t worst;      /* the rank worst off (the first of equals) */
    const RankClass *w; /* its class */
    const char *rl;     /* `ranks` formatted ("0-3,8") */
    double u_pos;       /* gpu_memory_utilization for a positive KV budget on `worst` */
    double u_one;       /* ... for one max_model_len request */
} MemProblem;

/* The ranks that have problem `p` (caller frees), and the worst of them in *worst (-1: none). */
static GArray *problem_ranks(const ModelMemPlan *m, const RankClass *classes,
                             const uint32_t *cls_of, Problem p, int32_t *worst)
{
    GArray *ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
    *worst = -1;
    for (uint32_t r = 0; r < m->world; r++) {
        const RankClass *k = &classes[cls_of[r]];
        if (!rank_has(m, k, p))
            continue;
        int32_t rr = (int32_t)r;
        g_array_append_val(ranks, rr);
        if (*worst < 0 || rank_worse(m, k, &classes[cls_of[*worst]], p))
            *worst = rr;
    }
    return ranks;
}

/* The non-KV components of the worst rank, in GiB, for the KV-budget messages; the
 * communicators are named as part of non-KV or, since PR #25359, beside it. Caller frees. */
static char *non_kv_parts(const Ctx *c, const RankClass *w)
{
    const uint64_t *by = w->r.bytes;
    g_autofree char *comm =
        c->reserved_in_budget
            ? g_strdup_printf(", reserved %.2f GiB", gib((double)by[MODEL_MEM_RESERVED]))
            : g_strdup_printf(" GiB; the communicators' %.2f GiB are outside the budget, "
                              "made before vLLM's first memory snapshot",
                              gib((double)by[MODEL_MEM_RESERVED]));
    return g_strdup_printf(
        "weights %.2f, quant scales %.2f, derived weights %.2f, attention workspace %.2f, "
        "activations %.2f, CUDA graphs %.2f%s",
        gib((double)by[MODEL_MEM_WEIGHTS]), gib((double)by[MODEL_MEM_QUANT_SCALES]),
        gib((double)by[MODEL_MEM_DERIVED_WEIGHTS]), gib((double)by[MODEL_MEM_ATTN_WORKSPACE]),
        gib((double)by[MODEL_MEM_ACTIVATIONS]), gib((double)by[MODEL_MEM_CUDAGRAPH]), comm);
}

/* The out-of-memory messages: the weights alone, or the profile forward on top of them. */
static char *oom_message(const Ctx *c, const ModelMemPlan *m, const MemProblem *q)
{
    const RankClass *w = q->w;
    const uint64_t *by = w->r.bytes;
    double hbm = (double)m->hbm_bytes;
    if (q->p == P_PROFILE_OOM)
        return g_strdup_printf(
            "%s out of memory during the profile run: rank %d holds %.2f GiB of weights "
            "(weights %.2f, quant scales %.2f, derived weights %.2f GiB) and %.2f GiB of "
            "runtime context (%.2f) and communicator buffers, and its profile forward at "
            "max_num_batched_tokens=%u adds %.2f GiB of activations and %.2f GiB of "
            "attention workspace: %.2f GiB, more than the device's %.2f GiB, before any KV "
            "cache. Lower max_num_batched_tokens, or shard the model over more ranks. Ranks "
            "affected: %s.",
            c->npu ? "NPU" : "CUDA", q->worst, gib((double)w->weights_total),
            gib((double)by[MODEL_MEM_WEIGHTS]), gib((double)by[MODEL_MEM_QUANT_SCALES]),
            gib((double)by[MODEL_MEM_DERIVED_WEIGHTS]),
            gib((double)(by[MODEL_MEM_RESERVED] + m->context_bytes)), gib((double)m->context_bytes),
            c->e->max_num_batched_tokens, gib((double)by[MODEL_MEM_ACTIVATIONS]),
            gib((double)by[MODEL_MEM_ATTN_WORKSPACE]),
            gib((double)profile_peak(w, m->context_bytes)), gib(hbm), q->rl);
    return g_strdup_printf(
        "%s out of memory while loading the model: rank %d needs %.2f GiB for its "
        "weights alone (weights %.2f, quant scales %.2f, derived weights %.2f GiB) but "
        "the device holds %.2f GiB. Shard the model over more ranks (tensor or expert "
        "parallelism) or use a smaller quantization. Ranks affected: %s.",
        c->npu ? "NPU" : "CUDA", q->worst, gib((double)w->weights_total),
        gib((double)by[MODEL_MEM_WEIGHTS]), gib((double)by[MODEL_MEM_QUANT_SCALES]),
        gib((double)by[MODEL_MEM_DERIVED_WEIGHTS]), gib(hbm), q->rl);
}

/* The KV-budget messages, in vLLM's words where vLLM has them: no budget, a budget within
 * ranksim's uncertainty, a budget below one max_model_len request. */
static char *kv_message(const Ctx *c, const ModelMemPlan *m, const MemProblem *q)
{
    const RankClass *w = q->w;
    double hbm = (double)m->hbm_bytes;
    g_autofree char *parts = non_kv_parts(c, w);
    if (q->p == P_NO_KV) {
        g_autofree char *fit =
            q->u_one <= 1.0
                ? g_strdup_printf("; one max_model_len request (%u tokens, %.2f GiB of KV "
                                  "cache on this rank) needs >= %.4f",
                                  c->e->max_model_len, gib((double)w->one_request), q->u_one)
                : g_strdup_printf("; one max_model_len request (%u tokens, %.2f GiB) would "
                                  "need %.4f, more than the device: reduce the non-KV "
                                  "memory instead",
                                  c->e->max_model_len, gib((double)w->one_request), q->u_one);
        return g_strdup_printf(
            "No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine. Rank %d (worst of ranks "
            "%s): KV budget %.2f GiB = requested %.2f GiB (%.2f GiB x %.4g) - non-KV %.2f "
            "GiB (%s). A positive budget needs gpu_memory_utilization >= %.4f%s.",
            q->worst, q->rl, gib((double)w->r.kv_budget_bytes), gib((double)m->requested_bytes),
            gib(hbm), m->utilization, gib((double)w->non_kv), parts, q->u_pos, fit);
    }
    if (q->p == P_TIGHT) {
        double band = MODEL_MEM_NON_KV_UNDERESTIMATE * (double)w->non_kv;
        double u_margin = util_ceil4(((double)w->non_kv + band) / hbm);
        return g_strdup_printf(
            "Available KV cache memory is only %.2f GiB on rank %d (worst of ranks %s), "
            "within ranksim's uncertainty: its non-KV memory has been up to %.1f %% lower "
            "than vLLM's in real start-up logs (doc/validation.md), %.2f GiB here, so on "
            "hardware the budget may be negative. Non-KV %.2f GiB (%s); "
            "gpu_memory_utilization >= %.4f keeps a positive budget with that margin.",
            gib((double)w->r.kv_budget_bytes), q->worst, q->rl,
            100.0 * MODEL_MEM_NON_KV_UNDERESTIMATE, gib(band), gib((double)w->non_kv), parts,
            u_margin);
    }
    uint64_t est =
        w->r.kv_bytes_per_token ? (uint64_t)w->r.kv_budget_bytes / w->r.kv_bytes_per_token : 0;
    return g_strdup_printf(
        "To serve at least one request with the models's max seq len (%u), (%.2f GiB KV "
        "cache is needed, which is larger than the available KV cache memory (%.2f "
        "GiB). Based on the available memory, the estimated maximum model length is "
        "%" G_GUINT64_FORMAT ". Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine. Rank %d (worst of ranks %s): "
        "non-KV %.2f GiB (%s); gpu_memory_utilization >= %.4f fits one request.",
        c->e->max_model_len, gib((double)w->one_request), gib((double)w->r.kv_budget_bytes), est,
        q->worst, q->rl, gib((double)w->non_kv), parts, q->u_one);
}

/* The diagnostic's detail (JSON): the problem, the utilizations that would fit, and the
 * first DETAIL_MAX_RANKS affected ranks' figures. Caller frees. */
static char *problem_detail(const Ctx *c, const ModelMemPlan *m, const RankClass *classes,
                            const uint32_t *cls_of, const MemProblem *q)
{
    static const char *const pname[P_COUNT] = {"weights_exceed_hbm", "profile_run_exceeds_hbm",
                                               "no_kv_cache", "kv_below_one_request",
                                               "kv_budget_within_uncertainty"};
    static const char *const phase[P_COUNT] = {"load_weights", "profile_run", "kv_cache",
                                               "kv_cache", "kv_cache"};
    GString *d = g_string_new(NULL);
    g_string_append_printf(
        d,
        "{\"problem\":\"%s\",\"phase\":\"%s\",\"worst_rank\":%d,"
        "\"ranks\":\"%s\","
        "\"hbm_bytes\":%" G_GUINT64_FORMAT ",\"requested_bytes\":%" G_GUINT64_FORMAT
        ",\"gpu_memory_utilization\":%.6g,"
        "\"utilization_positive_budget\":%.4f,"
        "\"utilization_one_request\":%.4f,\"max_model_len\":%u,"
        "\"per_rank\":[",
        pname[q->p], phase[q->p], q->worst, q->rl, m->hbm_bytes, m->requested_bytes, m->utilization,
        q->u_pos, q->u_one, c->e->max_model_len);
    guint shown = MIN(q->ranks->len, DETAIL_MAX_RANKS);
    for (guint i = 0; i < shown; i++) {
        uint32_t r = (uint32_t)g_array_index(q->ranks, int32_t, i);
        if (i)
            g_string_append_c(d, ',');
        json_rank(d, r, &classes[cls_of[r]]);
    }
    g_string_append_printf(d, "],\"truncated\":%s}", shown < q->ranks->len ? "true" : "false");
    return g_string_free(d, FALSE);
}

/* One diagnostic per problem some rank has (oom, or kv_budget: an error, a warning when the
 * budget is only within ranksim's uncertainty), naming the worst rank and the ranks affected. */
static void add_diags(const Ctx *c, ModelMemPlan *m, RankClass *classes, const uint32_t *cls_of)
{
    double hbm = (double)m->hbm_bytes;
    for (int p = 0; p < P_COUNT; p++) {
        MemProblem q = {.p = (Problem)p};
        q.ranks = problem_ranks(m, classes, cls_of, q.p, &q.worst);
        if (q.ranks->len == 0) {
            g_array_unref(q.ranks);
            continue;
        }
        q.w = &classes[cls_of[q.worst]];
        g_autofree char *rl =
            sched_format_ranks((const int32_t *)(void *)q.ranks->data, q.ranks->len);
        q.rl = rl;
        q.u_pos = util_ceil4((double)q.w->non_kv / hbm);
        q.u_one = util_ceil4((double)(q.w->non_kv + q.w->one_request) / hbm);
        bool oom = q.p == P_OOM || q.p == P_PROFILE_OOM;
        g_autofree char *msg = oom ? oom_message(c, m, &q) : kv_message(c, m, &q);
        g_autofree char *detail = problem_detail(c, m, classes, cls_of, &q);
        g_ptr_array_add(m->diags,
                        sched_diag_new(oom ? "oom" : "kv_budget",
                                       q.p == P_TIGHT ? SCHED_SEV_WARNING : SCHED_SEV_ERROR,
                                       q.worst, -1, 0, -1, NULL, msg, detail));
        g_array_unref(q.ranks);
    }
}

/* The tensor roles this architecture has, for describing the formats in force. */
static uint32_t role_mask(const ModelArch *a, const Ctx *c)
{
    uint32_t m = 1u << MODEL_ROLE_EMBED | 1u << MODEL_ROLE_ATTN_QKV | 1u << MODEL_ROLE_ATTN_O;
    if (!a->tie_word_embeddings)
        m |= 1u << MODEL_ROLE_LM_HEAD;
    if (a->mla)
        m |= 1u << MODEL_ROLE_ATTN_KV_B | (a->q_lora_rank ? 1u << MODEL_ROLE_ATTN_Q_B : 0);
    if (a->dsa)
        m |= 1u << MODEL_ROLE_INDEXER | 1u << MODEL_ROLE_INDEXER_WEIGHTS;
    if (a->moe)
        m |= 1u << MODEL_ROLE_ROUTER | 1u << MODEL_ROLE_EXPERT |
             (a->shared_expert_intermediate_size ? 1u << MODEL_ROLE_SHARED_EXPERT : 0);
    if (model_arch_dense_layers(a))
        m |= 1u << MODEL_ROLE_DENSE_MLP;
    if (mtp_layers_loaded(c))
        m |= 1u << MODEL_ROLE_MTP_PROJ;
    if (a->vision_params)
        m |= 1u << MODEL_ROLE_VISION;
    return m;
}

/* ---- entry points ---- */

ModelMemPlan *model_memory_plan(const ModelArch *arch, const ModelPlan *plan,
                                const ModelEngine *engine, const NetHardware *hw,
                                const SchedProgram *lowered)
{
    g_return_val_if_fail(arch && plan && engine && hw, NULL);
    (void)lowered; /* activations come from the architecture (doc/memory.md) */
    Ctx c;
    ctx_init(&c, arch, plan, engine, hw);

    ModelMemPlan *m = g_new0(ModelMemPlan, 1);
    m->world = plan->world;
    m->hbm_bytes = hw->hbm_bytes;
    m->utilization = engine->gpu_memory_utilization;
    m->max_model_len = engine->max_model_len;
    m->context_bytes = context_bytes(&c);
    m->cudagraph_in_budget = engine->cudagraph_memory_profiling;
    m->reserved_in_budget = c.reserved_in_budget;
    m->vllm_release = engine->vllm_release;
    {
        for (uint32_t l = 0; l < arch->num_layers && !m->experts_nvfp4; l++)
            if (model_arch_layer_is_moe(arch, l))
                m->experts_nvfp4 = model_quant_format(c.q, (int32_t)l, MODEL_ROLE_EXPERT)->kind ==
                                   MODEL_WFMT_NVFP4;
        /* layers past the decoder's (MTP) are MoE layers in the models that have them */
        bool moe_of[MODEL_QUANT_MAX_LAYERS];
        for (uint32_t l = 0; l < MODEL_QUANT_MAX_LAYERS; l++)
            moe_of[l] = l < arch->num_layers ? model_arch_layer_is_moe(arch, l) : arch->moe;
        g_autofree char *d = model_quant_spec_describe(c.q, role_mask(arch, &c), moe_of);
        m->weights_format =
            g_strdup_printf("%s (%s%s%s)", d, c.q->source, c.q->method[0] ? ", " : "", c.q->method);
    }
    m->requested_bytes = (uint64_t)ceil((double)hw->hbm_bytes * engine->gpu_memory_utilization);
    m->diags = g_ptr_array_new_with_free_func((GDestroyNotify)sched_diag_free);
    m->ranks = g_new0(ModelMemRank, m->world);

    /* Rank classes by local expert count (at most two values under EP). */
    GArray *classes = g_array_new(FALSE, TRUE, sizeof(RankClass));
    uint32_t *cls_of = g_new(uint32_t, m->world);
    for (uint32_t r = 0; r < m->world; r++) {
        uint32_t nl = arch->moe ? local_experts(&c, r) : 0, st = plan->coord[r].pp;
        guint k = 0;
        while (k < classes->len && (g_array_index(classes, RankClass, k).n_local != nl ||
                                    g_array_index(classes, RankClass, k).stage != st))
            k++;
        if (k == classes->len) {
            RankClass rc;
            memset(&rc, 0, sizeof rc);
            rc.n_local = nl;
            rc.stage = st;
            ctx_stage(&c, st);
            plan_class(&c, m->requested_bytes, &rc);
            g_array_append_val(classes, rc);
        }
        cls_of[r] = k;
    }
    for (uint32_t r = 0; r < m->world; r++) {
        RankClass *k = &g_array_index(classes, RankClass, cls_of[r]);
        m->ranks[r] = k->r;
        m->ranks[r].items = g_ptr_array_ref(k->r.items);
    }
    m->vllm.rank = -1;
    for (uint32_t r = 0; r < m->world; r++)
        if (m->vllm.rank < 0 || m->ranks[r].kv_budget_bytes < m->vllm.kv_budget_bytes) {
            const ModelMemRank *x = &m->ranks[r];
            m->vllm.rank = (int32_t)r;
            m->vllm.loading_bytes = x->bytes[MODEL_MEM_WEIGHTS] + x->bytes[MODEL_MEM_QUANT_SCALES] +
                                    x->bytes[MODEL_MEM_DERIVED_WEIGHTS];
            m->vllm.kv_budget_bytes = x->kv_budget_bytes;
            m->vllm.kv_tokens = x->kv_tokens;
            m->vllm.max_concurrency = x->max_concurrency;
            m->vllm.kv_block_size = x->kv_block_size;
        }
    if (model_arch_is_hybrid(arch)) {
        ModelHybridLayout hl;
        hybrid_layout(&c, &hl);
        m->vllm.state_page_bytes = hl.state_page;
        m->vllm.padded_page_bytes = hl.page;
    }
    add_diags(&c, m, (RankClass *)(void *)classes->data, cls_of);
    for (guint k = 0; k < classes->len; k++)
        g_ptr_array_unref(g_array_index(classes, RankClass, k).r.items);
    g_array_unref(classes);
    g_free(cls_of);
    return m;
}

void model_mem_vllm_split(const ModelMemPlan *m, const ModelMemRank *r, ModelVllmSplit *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < MODEL_MEM_COUNT; i++)
        if (model_mem_in_non_kv((ModelMemComponent)i, m->cudagraph_in_budget,
                                m->reserved_in_budget))
            out->total += r->bytes[i];
    out->weights = r->bytes[MODEL_MEM_WEIGHTS] + r->bytes[MODEL_MEM_QUANT_SCALES] +
                   r->bytes[MODEL_MEM_DERIVED_WEIGHTS];
    out->cudagraph = m->cudagraph_in_budget ? r->bytes[MODEL_MEM_CUDAGRAPH] : 0;
    out->non_torch = m->reserved_in_budget ? r->bytes[MODEL_MEM_RESERVED] : 0;
    for (guint i = 0; r->items && i < r->items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(r->items, i);
        if (g_str_has_prefix(it->name, "non_torch."))
            out->non_torch += it->bytes;
    }
    uint64_t rest = out->weights + out->cudagraph + out->non_torch;
    out->torch_peak = out->total > rest ? out->total - rest : 0;
}

void model_memory_plan_free(ModelMemPlan *m)
{
    if (!m)
        return;
    for (uint32_t r = 0; r < m->world; r++)
        if (m->ranks[r].items)
            g_ptr_array_unref(m->ranks[r].items);
    g_free(m->ranks);
    g_free(m->weights_format);
    if (m->diags)
        g_ptr_array_unref(m->diags);
    g_free(m->phases);
    g_free(m);
}
