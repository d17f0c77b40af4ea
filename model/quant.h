/* model/quant.h — how a checkpoint stores its weights: the format of every tensor group, read
 * from config.json's `quantization_config` (or vLLM-Ascend's quant_model_description.json), and
 * the tensors (weight, scales, zero points) and bytes each format takes for one linear layer.
 *
 * A ModelQuantSpec is a small table: up to MODEL_QUANT_MAX_FORMATS distinct weight formats, and
 * for every decoder layer (MTP layers included, after the num_hidden_layers ordinary ones) and
 * tensor role the index of the format that layer's tensors of that role use. Ignore lists
 * (compressed-tensors `ignore`, ModelOpt `exclude_modules`, `modules_to_not_convert`, ...) are
 * resolved once, at load time, against the module names Hugging Face checkpoints use for each
 * role, so the memory plan and the lowering never match strings.
 *
 * Schemes (doc/quantization.md has each scheme's tensors, bytes, matching rules and sources;
 * doc/memory.md, "Quantization schemes", the override layouts):
 *   fp8 (DeepSeek / Qwen / GLM / MiniMax block FP8, `weight_block_size`), compressed-tensors
 *   (int8 / fp8 W8A8 per channel or tensor, W4A16 int4 groups, NVFP4 `nvfp4-pack-quantized`,
 *   with `ignore`), ModelOpt (FP8 per tensor, NVFP4, `exclude_modules`), MXFP4 (gpt-oss, Quark),
 *   AWQ / GPTQ int4 with `group_size`, fbgemm_fp8 (`modules_to_not_convert`), and vLLM-Ascend
 *   W8A8 / W4A8 descriptions. An unknown `quant_method` is an error naming the known ones.
 *
 * Costs: loading is O(layers x roles x ignore entries); lookups are O(1). A spec is plain data
 * (no pointers): copy it by value.
 */
#ifndef MODEL_QUANT_H
#define MODEL_QUANT_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>

#define MODEL_QUANT_ERROR (model_quant_error_quark())
GQuark model_quant_error_quark(void);
/* Codes: 0 = unknown quant_method / scheme, 1 = malformed field. */

#define MODEL_QUANT_MAX_LAYERS 1040 /* decoder layers + MTP layers */
#define MODEL_QUANT_MAX_FORMATS 8
#define MODEL_QUANT_MAX_TENSORS 6 /* tensors one quantized linear can carry */

typedef enum {
    MODEL_WFMT_BF16 = 0,     /* 2 B per value */
    MODEL_WFMT_FP16,         /* 2 B per value */
    MODEL_WFMT_FP32,         /* 4 B per value */
    MODEL_WFMT_FP8_BLOCK,    /* e4m3 + fp32 scale per block_n x block_k block (weight_scale_inv) */
    MODEL_WFMT_FP8_CHANNEL,  /* e4m3 + one scale per output row */
    MODEL_WFMT_FP8_TENSOR,   /* e4m3 + one fp32 scale per tensor (per fused part) */
    MODEL_WFMT_INT8_CHANNEL, /* int8 + one scale per output row (+ offset when zero_point) */
    MODEL_WFMT_INT4_GROUP,   /* 4-bit packed + scale per group_size inputs (+ zero points) */
    MODEL_WFMT_NVFP4,        /* e2m1 packed + fp8 e4m3 scale per 16 + fp32 global scale */
    MODEL_WFMT_MXFP4,        /* e2m1 packed + e8m0 (1 B) scale per 32 */
    MODEL_WFMT_COUNT
} ModelWeightKind;

typedef struct {
    ModelWeightKind kind;
    uint32_t group_size;       /* INT4_GROUP, NVFP4, MXFP4: inputs per scale (0 = whole row) */
    uint32_t block_n, block_k; /* FP8_BLOCK: rows x inputs per scale */
    uint8_t scale_bytes;       /* bytes of one weight scale (4 fp32, 2 bf16/fp16, 1 fp8/e8m0) */
    bool zero_point;           /* asymmetric: zero points beside the scales */
    bool input_scale;          /* a static activation scale per tensor (fp32) */
    bool g_idx;                /* GPTQ desc_act: an int32 group index per input */
    uint8_t scheme;            /* ModelQuantScheme: whose tensor names and packing */
} ModelWeightFormat;

/* Whose names and packing a format's tensors follow (the same bits can be stored differently). */
typedef enum {
    MODEL_QSCHEME_NONE = 0,
    MODEL_QSCHEME_FP8,      /* weight, weight_scale_inv (DeepSeek-style block FP8) */
    MODEL_QSCHEME_CT,       /* compressed-tensors: weight / weight_packed, weight_scale, ... */
    MODEL_QSCHEME_MODELOPT, /* weight, weight_scale, weight_scale_2, input_scale */
    MODEL_QSCHEME_MXFP4,    /* *_blocks, *_scales (gpt-oss), Quark weight, weight_scale */
    MODEL_QSCHEME_AWQ,      /* qweight, qzeros, scales (int32-packed) */
    MODEL_QSCHEME_GPTQ,     /* qweight, qzeros, scales, g_idx */
    MODEL_QSCHEME_FBGEMM,   /* weight, weight_scale per row */
    MODEL_QSCHEME_ASCEND,   /* weight, weight_scale, weight_offset, (deq_scale, quant_bias) */
    MODEL_QSCHEME_QUARK,    /* AMD Quark: weight, weight_scale (MXFP4 e8m0 per 32, FP8, int8) */
    MODEL_QSCHEME_COUNT
} ModelQuantScheme;

/* Tensor roles: the groups of linear weights a quantization scheme treats alike. */
typedef enum {
    MODEL_ROLE_EMBED = 0,       /* embed_tokens (a lookup table; quantized by no scheme here) */
    MODEL_ROLE_LM_HEAD,         /* lm_head */
    MODEL_ROLE_ATTN_QKV,        /* q/k/v_proj, qkv_proj; MLA q_a_proj, kv_a_proj_with_mqa */
    MODEL_ROLE_ATTN_Q_B,        /* MLA q_b_proj */
    MODEL_ROLE_ATTN_KV_B,       /* MLA kv_b_proj */
    MODEL_ROLE_ATTN_O,          /* o_proj */
    MODEL_ROLE_INDEXER,         /* DSA indexer wq_b, wk */
    MODEL_ROLE_INDEXER_WEIGHTS, /* DSA indexer weights_proj */
    MODEL_ROLE_ROUTER,          /* the MoE router (mlp.gate) */
    MODEL_ROLE_DENSE_MLP,       /* gate/up/down of a dense layer's MLP */
    MODEL_ROLE_SHARED_EXPERT,   /* shared experts (and Qwen2-MoE's shared_expert_gate) */
    MODEL_ROLE_EXPERT,          /* routed experts */
    MODEL_ROLE_MTP_PROJ,        /* MTP eh_proj */
    MODEL_ROLE_VISION,          /* vision tower and projector linears */
    MODEL_ROLE_COUNT
} ModelTensorRole;

typedef struct {
    char method[32];   /* quant_method as the checkpoint names it ("fp8", "compressed-tensors",
                          "modelopt", "mxfp4", "awq", "gptq", "fbgemm_fp8", "ascend", ...);
                          "" when the checkpoint is not quantized */
    char source[32];   /* "checkpoint", "override engine.quantization", "default" */
    uint8_t n_formats; /* >= 1; formats[0] is the checkpoint's native dtype (torch_dtype) */
    ModelWeightFormat formats[MODEL_QUANT_MAX_FORMATS];
    uint32_t n_layers; /* decoder layers described, MTP included */
    uint8_t layer_fmt[MODEL_QUANT_MAX_LAYERS][MODEL_ROLE_COUNT]; /* index into formats */
    uint8_t global_fmt[MODEL_ROLE_COUNT]; /* EMBED, LM_HEAD, VISION (and a default per role) */
    bool kv_cache_fp8; /* the checkpoint carries an fp8 kv_cache_scheme / kv scales */
} ModelQuantSpec;

/* One tensor of a linear as stored: name suffix ("weight", "weight_scale_inv", "qzeros", ...),
 * dtype label, up to 3 dims and bytes; `is_scale` puts it in the quant_scales component. */
typedef struct {
    char suffix[24];
    char dtype[16];
    uint64_t dims[3];
    int ndims;
    uint64_t bytes;
    bool is_scale;
} ModelQuantTensor;

/* The module names a layout uses, so ignore lists can be resolved against the checkpoint's own
 * names: "model.layers.{L}." + the role's module. Filled by model/arch from the architecture
 * (e.g. Mixtral's experts are "block_sparse_moe.experts.{E}.w1"). NULL members take the
 * DeepSeek/Llama/Qwen defaults. */
typedef struct {
    const char *layer_prefix; /* default "model.layers." */
    const char *experts;      /* default "mlp.experts" */
    const char *shared;       /* default "mlp.shared_experts" */
    const char *router;       /* default "mlp.gate" */
    const char *mlp;          /* default "mlp" */
    uint32_t num_layers;      /* decoder layers */
    uint32_t num_mtp_layers;  /* MTP layers after them */
} ModelQuantNames;

/* An unquantized spec: every tensor in `native` (BF16, FP16 or FP32). Never fails. */
void model_quant_spec_native(ModelQuantSpec *out, ModelWeightKind native, uint32_t n_layers);

/* Reads a config.json `quantization_config` object. `display` names the file in messages,
 * `native` is the checkpoint's torch_dtype. On failure returns false with MODEL_QUANT_ERROR
 * naming the file, the key and what would be valid (e.g. the known quant_method values).
 * Also reads ModelOpt's hf_quant_config.json ({"producer", "quantization": {...}}) as it
 * stands; when `display` ends in "hf_quant_config.json" key paths are not prefixed with
 * "quantization_config.". `qcfg` NULL gives the native spec. Ignore / exclude lists are
 * matched by each scheme's own rule against the names `names` implies (doc/quantization.md,
 * "Matching"); `names` NULL takes the defaults with no decoder layers. Sets `method` and
 * `source` = "checkpoint". */
bool model_quant_from_config(JsonObject *qcfg, const char *display, ModelWeightKind native,
                             const ModelQuantNames *names, ModelQuantSpec *out, GError **error);

/* Reads vLLM-Ascend's quant_model_description.json (per-tensor "W8A8" / "W8A8_DYNAMIC" /
 * "W4A8" / "W4A8_DYNAMIC" / "FLOAT"; an optional "group_size" for W4A8, default 256). A role
 * takes the type of the first of its candidate tensors the description lists ("<module>.weight");
 * unlisted roles stay native. Errors name the entry. Sets `method` = "ascend". */
bool model_quant_from_ascend(JsonObject *desc, const char *display, ModelWeightKind native,
                             const ModelQuantNames *names, ModelQuantSpec *out, GError **error);

/* The scheme the `engine.quantization` override names (ranksim's simple schemes: "bf16",
 * "fp8", "w8a8", "w4a8", "nvfp4"), laid out as doc/memory.md describes for an MoE or dense
 * model. Also "mxfp4", "awq", "gptq", "fbgemm_fp8", "modelopt" / "modelopt_fp8",
 * "modelopt_fp4" with the default layouts of doc/quantization.md ("Override names").
 * Embeddings, lm_head, the router and the indexer's weights_proj stay native. Sets `method` to
 * the name ("" for bf16) and `source` = "override engine.quantization". Returns false for an
 * unknown name (out is then the native spec). */
bool model_quant_spec_from_name(const char *name, bool moe, ModelWeightKind native,
                                uint32_t n_layers, ModelQuantSpec *out);

/* The format of role `role` in decoder layer `layer` (0-based, MTP layers after the ordinary
 * ones); layer < 0 asks for the global roles (EMBED, LM_HEAD, VISION). Never NULL. */
const ModelWeightFormat *model_quant_format(const ModelQuantSpec *s, int32_t layer,
                                            ModelTensorRole role);

/* The tensors a linear of format `f` stores: `batch` copies (experts) of a weight whose output
 * is the fused parts `parts[0..nparts)` (each with its own per-tensor scales) over `in` inputs.
 * Writes at most MODEL_QUANT_MAX_TENSORS entries to `out`; returns how many. Never fails. */
int model_quant_linear_tensors(const ModelWeightFormat *f, uint64_t batch, const uint64_t *parts,
                               int nparts, uint64_t in, ModelQuantTensor *out);

/* Bytes per weight value, scales included, for the compute cost's byte count (e.g. NVFP4
 * 0.5 + 1/16). */
double model_weight_format_bytes_per_value(const ModelWeightFormat *f);

/* "bf16", "fp8 block 128x128", "nvfp4 (group 16)", "int4 group 128 (asymmetric)", ... Writes
 * into `buf` (size `n`) and returns it. */
const char *model_weight_format_describe(const ModelWeightFormat *f, char *buf, size_t n);

/* One line saying which format each group of tensors was taken in, e.g. "routed experts nvfp4
 * (group 16); attention, shared experts, dense MLP, lm_head bf16", or "all weights bf16".
 * `role_mask` has bit (1 << role) set for each role the architecture has (0 = every role);
 * `layer_moe[l]` (NULL: unknown) says which layers are MoE, so that a role is judged only by the
 * layers that have it (the dense MLP by the dense layers). Caller frees. */
char *model_quant_spec_describe(const ModelQuantSpec *s, uint32_t role_mask, const bool *layer_moe);

/* Known quant_method values, comma-separated (static storage), for messages. */
const char *model_quant_methods(void);

#endif
