/* model/catalog.h — Hugging Face Hub ids -> a built-in preset and the checkpoint's quantization.
 *
 * The catalog (model/presets/catalog.json, embedded) lists real checkpoints: each Hub id names a
 * preset (model/presets/NAME.json, the architecture) and carries the checkpoint's own
 * `quantization_config` in its HF format (ModelOpt, compressed-tensors, fp8, mxfp4, Quark, ...),
 * marked "inferred" when it was written from the publisher's documented scheme rather than read
 * from the checkpoint. Ids compare case-insensitively (a huggingface.co/ URL prefix and trailing
 * '/' are dropped); a bare name without org that exactly one entry has resolves to that entry.
 * An id that is not listed resolves by name rule:
 *
 *   1. the org prefix is dropped and the name lowercased;
 *   2. suffixes that say the format are stripped and become `format` (-FP8, -FP8-dynamic,
 *      -FP8-KV, -NVFP4, -FP4, -MXFP4, -INT4, -INT8, -AWQ, -GPTQ, -quantized.w8a8,
 *      -quantized.w4a16, -W8A8, -W4A16, -BF16; -v2 right after one of them);
 *   3. variant words that do not change the architecture are stripped (-Instruct, -Chat, -Base,
 *      -Thinking, -it, -hf, -v0.1, -Preview, -Exp, four-digit dates such as -0528 / -2507);
 *   4. a leading "meta-" is dropped, the catalog's aliases apply (deepseek-r1 -> deepseek-v3,
 *      deepseek-coder-v2-lite -> deepseek-v2-lite, minimax-m2.7 -> minimax-m2, ...);
 *   5. what is left must equal a preset name exactly: Kimi-K2 is not DeepSeek-V3, Qwen3-30B-A3B
 *      is not Qwen3-32B, DeepSeek-V4.1-Flash is not DeepSeek-V4-Flash.
 *
 * A name-rule match takes its quantization_config from the catalog's per-publisher formats
 * (`org_formats`: e.g. Qwen fp8 = block 128) when the org and format have one, else NULL with
 * the format alone.
 *
 * The catalog is parsed once per process (g_once), then read-only: every function is
 * thread-safe. Costs: a resolution is O(entries + presets x name length) string work.
 */
#ifndef MODEL_CATALOG_H
#define MODEL_CATALOG_H

#include <glib.h>
#include <stdbool.h>

#define MODEL_CATALOG_ERROR (model_catalog_error_quark())
GQuark model_catalog_error_quark(void);
/* Codes: 0 = no preset matches the id, 1 = the embedded catalog is malformed (a build problem). */
enum { MODEL_CATALOG_ERROR_NO_MATCH = 0, MODEL_CATALOG_ERROR_CATALOG = 1 };

typedef struct {
    char preset[64];           /* preset name (model/presets/NAME.json) */
    char catalog_id[160];      /* the catalog entry's id as listed; "" when resolved by rule */
    char format[16];           /* what the name says: "fp8", "fp8-dynamic", "nvfp4", "mxfp4",
                                  "int4", "w8a8", "w4a16", "awq", "gptq", "bf16"; "" = nothing */
    bool kv_cache_fp8;         /* the name says -FP8-KV */
    bool inferred;             /* quantization_config written from the publisher's scheme */
    char *quantization_config; /* JSON object text to apply (owned), or NULL = the preset's own
                                  (native dtype unless the preset file says otherwise) */
    char *how;                 /* one line: "catalog entry nvidia/...", "name rule: '...' ->
                                  preset ..., format ... (...)" (owned) */
} ModelCatalogMatch;

/* Resolves a Hub id (or a bare model name). On success fills *out (release it with
 * model_catalog_match_clear) and returns true. When nothing matches returns false with
 * MODEL_CATALOG_ERROR_NO_MATCH whose message names the id, what it was read as, the nearest
 * presets (edit distance) and all presets. */
bool model_catalog_resolve(const char *hub_id, ModelCatalogMatch *out, GError **error);

/* Frees the owned strings of *m and zeroes it. NULL-safe; can't fail. */
void model_catalog_match_clear(ModelCatalogMatch *m);

/* The catalog's Hub ids in file order, NULL-terminated (static storage; `ranksim list models`).
 * Empty when the embedded catalog is malformed. */
const char *const *model_catalog_ids(void);

/* The preset names built into this binary (the GResource folder /org/ranksim/models/), sorted,
 * NULL-terminated (static storage). */
const char *const *model_catalog_presets(void);

#endif
