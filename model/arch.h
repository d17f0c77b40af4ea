/* model/arch.h — a model's architecture as the lowering and the memory plan need it, read from
 * a Hugging Face config.json (json-glib) or a preset (model/presets/NAME.json, the same format,
 * embedded in the binary). model/ reads no files: a config.json comes as bytes, read by the
 * caller (src/input/hf-config.h reads a checkpoint folder's files).
 *
 * Structure is detected from fields: MLA when `kv_lora_rank` is present, a DSA indexer + sparse
 * attention when `index_topk` is present (with `index_n_heads`, `index_head_dim`), IndexShare when
 * `indexer_types` lists per-layer "full"/"shared" entries, MoE when `n_routed_experts`
 * (DeepSeek/GLM/Kimi), `num_local_experts` (Mixtral, gpt-oss, MiniMax, Llama-4) or `num_experts`
 * (Qwen) is present and positive; which layers carry experts follows `first_k_dense_replace`,
 * `moe_layer_freq`, `decoder_sparse_step`, `interleave_moe_layer_step`, `moe_layers` and
 * `mlp_only_layers` (layer_moe[]). Otherwise a dense GQA model with `num_key_value_heads` and
 * `head_dim` (default hidden_size / num_attention_heads). A nested `text_config` (Llama-4,
 * multimodal models) holds the language model; `vision_config` the vision tower.
 *
 * A few tensors exist by model class alone, with no field saying so; for those the language
 * model's `model_type` decides (Qwen2's q/k/v bias, Qwen3's q_norm/k_norm, gpt-oss's sinks and
 * biases, Llama-4's shared expert). Of the hybrid Mamba / linear-attention models, Nemotron-H
 * Qwen3-Next, Falcon-H1 and Granite-4.0-H are read (the hybrid fields below); the others are
 * refused by name.
 */
#ifndef MODEL_ARCH_H
#define MODEL_ARCH_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "quant.h"

#define MODEL_ARCH_ERROR (model_arch_error_quark())
GQuark model_arch_error_quark(void);
/* Codes: 0 = unreadable file or unknown preset, 1 = malformed JSON, 2 = missing/wrong field. */

#define MODEL_MAX_LAYERS 1024

typedef struct {
    char name[64];          /* preset name, or the config file's folder/basename */
    char architecture[64];  /* architectures[0], informative only */
    char model_type[32];    /* the language model's model_type (text_config's when nested:
                               "llama4_text"); "" when absent. Selects the checkpoint's module
                               names for quantization ignore lists. */
    char layer_prefix[48];  /* checkpoint name of decoder layer L is layer_prefix + "L.":
                               "model.layers.", or "language_model.model.layers." under a
                               text_config */
    uint32_t hidden_size;
    uint32_t num_layers;    /* num_hidden_layers (MTP layers not included) */
    uint32_t num_heads;     /* num_attention_heads */
    uint32_t num_kv_heads;  /* GQA: num_key_value_heads; MLA: = num_heads */
    uint32_t head_dim;      /* GQA only */
    uint32_t intermediate_size; /* dense MLP width (Llama-4: intermediate_size_mlp) */
    uint32_t vocab_size;
    bool tie_word_embeddings;
    uint32_t num_nextn_predict_layers; /* MTP layers after the decoder layers:
                                          num_nextn_predict_layers (DeepSeek/GLM), MiniMax
                                          num_mtp_modules, mtp_num_hidden_layers; loaded only
                                          with MTP speculative decoding */

    bool mla;
    uint32_t q_lora_rank;   /* 0 = no q compression (q_proj directly) */
    uint32_t kv_lora_rank;
    uint32_t qk_nope_head_dim;
    uint32_t qk_rope_head_dim;
    uint32_t v_head_dim;

    bool dsa;               /* indexer + sparse attention */
    uint32_t index_n_heads;
    uint32_t index_head_dim;
    uint32_t index_topk;
    uint32_t index_topk_freq;     /* IndexShare: 1 = every layer has its own indexer */
    bool index_shared[MODEL_MAX_LAYERS]; /* true: layer reuses the previous full layer's top-k */

    bool moe;
    uint32_t n_routed_experts;      /* n_routed_experts / num_local_experts / num_experts */
    uint32_t num_experts_per_tok;   /* num_experts_per_tok / num_experts_per_token /
                                       experts_per_token */
    uint32_t moe_intermediate_size; /* one expert's width: moe_intermediate_size, else (Mixtral,
                                       gpt-oss, MiniMax, Llama-4) intermediate_size */
    uint32_t n_shared_experts;      /* shared expert modules per MoE layer (Qwen2-MoE, Llama-4:
                                       1) */
    uint32_t first_k_dense_replace; /* count of leading dense layers (informative: layer_moe
                                       is the truth) */
    bool layer_moe[MODEL_MAX_LAYERS]; /* layer i has a MoE block (first_k_dense_replace,
                                         moe_layer_freq, decoder_sparse_step, mlp_only_layers,
                                         interleave_moe_layer_step) */
    uint32_t shared_expert_intermediate_size; /* total width of the shared expert(s) of a MoE
                                                 layer: n_shared_experts x moe_intermediate_size,
                                                 or Qwen2-MoE's shared_expert_intermediate_size;
                                                 0 = none */
    bool shared_expert_gate;  /* Qwen2-MoE: a sigmoid gate Linear(hidden, 1) on the shared expert */
    bool expert_bias;         /* gpt-oss: biases on the expert linears (gate_up, down) */
    bool router_bias;         /* gpt-oss: a bias on the router */
    bool router_score_bias;   /* DeepSeek/GLM noaux_tc: fp32 e_score_correction_bias [E] */

    /* attention details (GQA) */
    bool attention_bias;      /* q/k/v projections carry biases (Qwen2, gpt-oss) */
    bool o_proj_bias;         /* o_proj carries a bias (gpt-oss) */
    bool attention_sinks;     /* gpt-oss: one learned sink logit per head (bf16 [heads]) */
    bool attn_head_gate;      /* Step-3.5 head-wise attention output gate: g_proj Linear(hidden,
                                 heads), split by heads */
    uint32_t layer_heads[MODEL_MAX_LAYERS]; /* query heads of layer i when it differs from
                                               num_heads (Step-3.5 attention_other_setting:
                                               96 on sliding layers); 0 = num_heads */
    uint32_t qk_norm_dim;     /* Qwen3 / MiniMax q_norm, k_norm weight length: head_dim (per
                                 head) or heads x head_dim (MiniMax per-layer); 0 = none */
    bool qk_norm_per_layer;   /* MiniMax: q_norm [heads x head_dim], k_norm [kv x head_dim] */
    uint32_t sliding_window;  /* tokens; 0 = none */
    bool layer_sliding[MODEL_MAX_LAYERS]; /* layer i uses the sliding window (layer_types
                                             "sliding_attention", or every layer when
                                             sliding_window is set without layer_types; Qwen2
                                             use_sliding_window: layers >= max_window_layers) */
    uint32_t attention_chunk_size; /* Llama-4 chunked local attention: tokens per chunk; 0 =
                                      none */
    bool layer_chunked[MODEL_MAX_LAYERS]; /* layer i attends within its chunk only (Llama-4 RoPE
                                             layers, no_rope_layers != 0; layer_types
                                             "chunked_attention") */

    /* DeepSeek-V4 (model_type deepseek_v4, vllm deepseek_v4.py): one 512-wide latent KV head
     * (num_key_value_heads 1, head_dim), every layer a 128-token sliding window plus, by
     * compress_ratios, a KV compressed 4x (C4: with a DSA-style indexer, top index_topk) or 128x
     * (C128); a grouped low-rank output projection; hc_mult residual streams
     * (hyper-connections); the first num_hash_layers route experts by token id. */
    bool dsv4;
    uint8_t compress_ratio[MODEL_MAX_LAYERS]; /* 1 (window only), 4 or 128 */
    uint32_t o_groups, o_lora_rank;
    uint32_t hc_mult;
    uint32_t num_hash_layers;
    bool experts_fp4;         /* expert_dtype "fp4": routed experts MXFP4 whatever the scheme */

    /* Hybrid state-space / linear-attention models (model/lower-hybrid.h, memory-hybrid.h).
     * Nemotron-H (model_type nemotron_h): `hybrid_override_pattern`, one letter a layer — M a
     * Mamba-2 mixer alone, * an attention layer alone, E a MoE alone, - an MLP alone (each with
     * one pre-norm; vllm nemotron_h.py). Qwen3-Next (qwen3_next): `layer_types`
     * "linear_attention" (Gated DeltaNet) / "full_attention" (gated attention), else every
     * full_attention_interval-th layer full; each layer a mixer then its MoE. Falcon-H1
     * (falcon_h1): every layer attention and a Mamba-2 mixer side by side on the same normed
     * input (parallel_ssm), then a dense MLP. Granite-4.0-H (granitemoehybrid): `layer_types`
     * "mamba" / "attention", every layer a mixer then its MoE with a shared expert (or, with
     * num_local_experts 0, the shared MLP alone). */
    uint8_t layer_mixer[MODEL_MAX_LAYERS]; /* ModelMixer of layer i */
    bool layer_no_ffn[MODEL_MAX_LAYERS];   /* Nemotron-H M and * layers: no MLP / MoE block */
    uint32_t mamba_num_heads, mamba_head_dim, ssm_state_size, mamba_n_groups, mamba_conv_kernel;
    uint32_t mamba_chunk_size;             /* the SSD kernel's chunk (chunk_size, default 256) */
    uint32_t linear_num_key_heads, linear_num_value_heads;
    uint32_t linear_key_head_dim, linear_value_head_dim, linear_conv_kernel_dim;
    bool ssm_state_fp32;      /* mamba_ssm_cache_dtype "float32" (Nemotron-H's config.json):
                                 the recurrent state in fp32, the conv state in the model dtype */
    bool ssm_dtype_given;     /* the config.json names mamba_ssm_cache_dtype (else vLLM's default
                                 for the release applies: model_hybrid_ssm_elt) */
    bool attn_output_gate;    /* Qwen3-Next: q_proj also yields a sigmoid gate per element */
    bool mlp_ungated;         /* Nemotron-H: up, relu^2, down (no gate half) in MLPs and experts */
    uint32_t moe_latent_size; /* Nemotron-3-Super latent MoE: experts work in this width between
                                 fc1_latent_proj and fc2_latent_proj; 0 = none */
    bool parallel_ssm;        /* Falcon-H1 (FalconH1ParallelHybrid): each attention layer also
                                 runs a Mamba-2 mixer on the same input, the two outputs summed;
                                 model_arch_count_mixer counts such a layer under both mixers */
    bool attn_no_rope;        /* attention without rotary embedding: Nemotron-H, Granite-4.0-H's
                                 position_embedding_type "nope" */
    /* DeepSeek-V4.1 (model_type deepseek_v41_text under text_config; transformers
     * configuration_deepseek_v41.py): a DeepSeek-V4 (dsv4 also set, compress_ratio all 1) whose
     * compressed attention is CSA2 — per-layer ratios 0 (window only), 1 (full-resolution
     * compressed KV) or r > 1 (r tokens pooled), one compressed KV per kv-source layer shared
     * by the layers up to the next source, the indexer run on index-source layers only (the
     * others reuse its top-k), a candidate pre-filter on one layer bounding the later indexers —
     * and Engram n-gram tables gathered into the residual streams at a few layers. */
    bool dsv41;
    uint8_t csa_ratio[MODEL_MAX_LAYERS];     /* compress_ratios as written: 0, 1 or r > 1 */
    bool kv_source[MODEL_MAX_LAYERS];        /* owns the compressor of its group */
    bool index_source[MODEL_MAX_LAYERS];     /* runs the indexer (publishes top-k) */
    int32_t candidate_source;                /* layer of the candidate pre-filter; -1 none */
    uint32_t candidate_topk_blocks, candidate_block_size;
    bool engram[MODEL_MAX_LAYERS];           /* an Engram module before this layer */
    uint64_t engram_rows[MODEL_MAX_LAYERS];  /* rows of its table (engram_num_embeddings) */
    uint32_t engram_n_heads, engram_max_ngram, engram_head_dim;

    /* context length in tokens as vLLM derives it (vllm/config/model.py
     * _get_and_verify_max_len): the smallest of max_position_embeddings and friends
     * (model_max_length wins when present), times the rope_scaling / rope_parameters factor for
     * rope types other than su/longrope/llama3 (YaRN: original_max_position_embeddings x
     * factor); 2048 when the file has no length key, as vLLM assumes. 0 only for presets built
     * by hand. */
    uint32_t max_model_len;

    /* RoPE's cos/sin cache, a buffer vLLM makes on every rank when the model is built
     * (rotary_embedding/base.py: [positions, rotary_dim] in the model dtype; get_rope shares one
     * per set of parameters), so "Model loading took" counts it: positions =
     * max_position_embeddings (the length keys' smallest when absent), times the scaling factor
     * as for max_model_len (YaRN: original_max_position_embeddings x factor); rotary_dim = the
     * rope part of a head (qk_rope_head_dim with MLA, else head_dim x partial_rotary_factor).
     * No cache when attn_no_rope. */
    uint32_t rope_positions;
    double partial_rotary_factor; /* 1 when absent */

    /* multimodal: parameters of the vision tower and projector, loaded as `vision` weights;
     * 0 = text-only. Counted from vision_config as vLLM builds the tower (Llama-4:
     * mllama4.py; transformers' Llama4VisionConfig defaults when the file has none); other
     * towers are refused. */
    uint64_t vision_params;

    /* how the checkpoint stores each tensor group (from quantization_config; native dtype when
     * absent) */
    ModelWeightKind native_dtype; /* torch_dtype: BF16 (default), FP16 or FP32 */
    ModelQuantSpec quant;
} ModelArch;

/* What mixes the tokens in a layer. */
typedef enum {
    MODEL_MIXER_ATTENTION = 0, /* softmax attention (every non-hybrid layer) */
    MODEL_MIXER_MAMBA2,        /* Nemotron-H M, Granite-4.0-H "mamba" */
    MODEL_MIXER_GDN,           /* Gated DeltaNet (Qwen3-Next linear_attention) */
    MODEL_MIXER_NONE,          /* Nemotron-H E / -: an MLP or MoE alone */
} ModelMixer;

/* The error codes of MODEL_ARCH_ERROR. */
typedef enum {
    MODEL_ARCH_ERROR_IO = 0, /* a preset that does not exist; a file that cannot be read (set
                                by the caller that reads it: src/input/hf-config.h) */
    MODEL_ARCH_ERROR_JSON,   /* malformed JSON: the message says where (FILE:LINE:COLUMN) */
    MODEL_ARCH_ERROR_FIELD,  /* a field with a value ranksim cannot use, or an architecture
                                it does not simulate: the message names the field */
} ModelArchErrorCode;

/* A file's bytes as the caller read them (model/ never opens files) and the name messages
 * give it (its path). `data` need not be NUL-terminated. */
typedef struct {
    const char *data;
    gsize len;
    const char *display;
} ModelArchText;

/* Files a checkpoint may keep beside its config.json: vLLM-Ascend's description of every
 * tensor's format (it then gives the quantization), and NVIDIA ModelOpt's scheme for a
 * config.json without quantization_config (applied with model_arch_apply_quant_json). */
#define MODEL_ARCH_ASCEND_DESCRIPTION "quant_model_description.json"
#define MODEL_ARCH_HF_QUANT_CONFIG "hf_quant_config.json"

/* Parses a config.json's bytes; `ascend_desc` (NULL: none) is the vLLM-Ascend
 * quant_model_description.json found beside it, which then gives the quantization. Returns
 * false and sets `error` (MODEL_ARCH_ERROR_JSON / _FIELD) naming the file and field on
 * failure; *out is written only on success. */
bool model_arch_load_config(const ModelArchText *config, const ModelArchText *ascend_desc,
                            ModelArch *out, GError **error);
/* Parses config.json text; `display` names it in messages. */
bool model_arch_load_string(const char *json, const char *display, ModelArch *out,
                            GError **error);
/* Loads a built-in preset: every model/presets/NAME.json embedded in the binary (files whose
 * name starts with "catalog" are not presets). Unknown name -> error listing them. */
bool model_arch_load_preset(const char *name, ModelArch *out, GError **error);
/* The preset names, sorted, ", "-separated (static storage, built once, thread-safe). */
const char *model_arch_preset_names(void);

/* Replaces a->quant with the scheme of a `quantization_config` given as JSON text (the object
 * itself, or a whole config.json holding one), resolved against a's module names. `display`
 * names the text in messages. On failure returns false, leaves *a untouched and sets
 * MODEL_ARCH_ERROR (MODEL_ARCH_ERROR_JSON, or MODEL_ARCH_ERROR_FIELD with the quantization
 * parser's message). */
bool model_arch_apply_quant_json(ModelArch *a, const char *json_text, const char *display,
                                 GError **error);

/* Whether layer i (0-based) has a MoE block (else a dense MLP): layer_moe[i]; MTP layers
 * (i >= num_layers) have one when the model is MoE. */
bool model_arch_layer_is_moe(const ModelArch *a, uint32_t layer);
/* Query heads of layer i (layer_heads, else num_heads); the most over all layers. */
uint32_t model_arch_layer_heads(const ModelArch *a, uint32_t layer);
uint32_t model_arch_max_heads(const ModelArch *a);
/* Layer i's mixer (MTP layers: attention); whether the model has recurrent-state layers;
 * how many of layers [l0, l1) have mixer `m` (with parallel_ssm an attention layer counts as a
 * Mamba-2 layer too: it holds both an attention KV cache and a Mamba state, as vLLM registers
 * both). */
ModelMixer model_arch_layer_mixer(const ModelArch *a, uint32_t layer);
bool model_arch_is_hybrid(const ModelArch *a);
uint32_t model_arch_count_mixer(const ModelArch *a, ModelMixer m, uint32_t l0, uint32_t l1);
/* The width the routed experts compute in: moe_latent_size, else hidden_size. */
uint32_t model_arch_expert_hidden(const ModelArch *a);
/* How many decoder layers have a dense MLP (all of them for a dense model). */
uint32_t model_arch_dense_layers(const ModelArch *a);

#endif
