/* src/input/vllm-args.h — vLLM's `vllm serve` command line read as ranksim settings.
 *
 * vllm_args_parse reads serve flags (vllm/engine/arg_utils.py names and short forms: -tp, -dp,
 * -pcp, -dcp, --attention-backend, --quantization, --compilation-config, -O3, ...) on top of a
 * base ModelParallel and ModelEngine into a VllmArgs; vllm_args_apply then settles what several
 * flags decide together (--enforce-eager and -O against cudagraph_mode, the quantization a model
 * name implies) and hands the result to a model scenario. Flags ranksim does not read, and
 * values that are approximated, become notes ("--moe-backend flashinfer_cutlass",
 * "cudagraph_mode FULL_DECODE_ONLY (simulated as FULL)") for Scenario.ignored_flags.
 *
 * vLLM eval configs (tests/evals/gsm8k/configs/NAME.yaml: model_name + server_args + env) are
 * read through this layer by the scenario loader (src/input/scenario-eval.h), which
 * this parser knows nothing of. The engine-value spellings below are shared with `engine:`.
 *
 * Errors: one GError in VLLM_ARGS_ERROR, "FLAG: problem; what would be valid" (the scenario
 * loader adds the file, line and key). Costs: O(argc x flags in the table) per parse.
 */
#ifndef SRC_VLLM_ARGS_H
#define SRC_VLLM_ARGS_H

#include <glib.h>
#include <stdbool.h>

#include "../../model/engine-args.h"
#include "../../model/plan.h"
#include "../../sched/program.h"

#define VLLM_ARGS_ERROR (vllm_args_error_quark())
GQuark vllm_args_error_quark(void);

typedef enum {
    VLLM_ARGS_ERROR_INVALID, /* a flag ranksim reads has a bad or missing value */
    VLLM_ARGS_ERROR_SPLIT,   /* vllm_args_parse_line: the line does not split like a shell's */
} VllmArgsErrorCode;

/* The settings a command line gives, on top of the base given to the parser. Plain data. */
typedef struct {
    ModelParallel par;    /* base + the parallel flags */
    ModelEngine engine;   /* base + the engine flags (before vllm_args_apply's settling) */
    char quant_given[32]; /* --quantization as given ("" = none) */
    bool quant_set;       /* --quantization names one of ranksim's schemes (engine.quantization) */
    bool quant_ascend;    /* --quantization ascend (vLLM-Ascend: the scheme is the model's) */
    bool backend_set;     /* an attention backend was given */
    bool cudagraph_set;   /* a cudagraph mode was given */
    bool all2all_set;     /* --all2all-backend was given (it wins over VLLM_ALL2ALL_BACKEND) */
    bool eager;           /* --enforce-eager (the last of it and --no-enforce-eager) */
    bool eplb;            /* --enable-eplb (noted: redundant experts are not modelled) */
    int opt_level;        /* -O N / --optimization-level N, or -1 */
    GPtrArray *notes;     /* char*, owned: given but not simulated, in command-line order */
} VllmArgs;

/* Reads argv[0..argc) (the flags after `vllm serve MODEL`; no program name) on top of `par`
 * and `engine` (NULL: vLLM's defaults, model_parallel_defaults / model_engine_defaults).
 * `--flag=value` and `--flag value` both work; underscores in long flag names count as dashes
 * (as in vLLM); unknown flags (with the value that follows them, if any) and stray values become
 * notes. Returns NULL and sets `error` (VLLM_ARGS_ERROR_INVALID) on a bad value of a flag ranksim
 * reads. Caller owns the result (vllm_args_free). */
/* vLLM's EPLB rules when --enable-eplb was given: EP on, and TP x PCP x DP > 1. False with
 * vLLM's message. */
bool vllm_args_check_eplb(const VllmArgs *a, const ModelParallel *par, GError **error);

VllmArgs *vllm_args_parse(const char *const *argv, int argc, const ModelParallel *par,
                          const ModelEngine *engine, GError **error);

/* Splits `line` like a shell (g_shell_parse_argv; an empty line is no flags), then as
 * vllm_args_parse. A line that does not split fails with VLLM_ARGS_ERROR_SPLIT. */
VllmArgs *vllm_args_parse_line(const char *line, const ModelParallel *par,
                               const ModelEngine *engine, GError **error);

/* Writes the parsed settings into *par and *engine: --enforce-eager turns CUDA graphs off, else
 * -O picks the cudagraph mode when none was given. Appends a copy of each note to `ignored` (an
 * array of char* that frees its elements, e.g. Scenario.ignored_flags). Cannot fail. */
void vllm_args_apply(const VllmArgs *a, ModelParallel *par, ModelEngine *engine,
                     GPtrArray *ignored);

/* Settles --quantization against the checkpoint (arch->quant.method, from its
 * quantization_config): the same method (kernel variants such as awq_marlin count as awq) keeps
 * the checkpoint's per-tensor formats; another method is vLLM's error "Quantization method
 * specified in the model config (X) does not match ... (Y)"; on an unquantized checkpoint,
 * ranksim's scheme of that name becomes the override (online quantization; a note says so) and
 * a method that needs pre-quantized weights is an error. `--quantization ascend` takes W8A8
 * when the model has no scheme of its own. Returns false with VLLM_ARGS_ERROR_INVALID. */
bool vllm_args_settle_quant(const VllmArgs *a, ModelArch *arch, ModelEngine *engine,
                            GPtrArray *notes, GError **error);

/* Whether `name` is a quantization method ranksim knows (its schemes and vLLM's methods). */
bool vllm_args_known_method(const char *name);
/* The known methods, comma-separated, for messages. */
extern const char vllm_args_methods[];

void vllm_args_free(VllmArgs *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VllmArgs, vllm_args_free)

/* ---- engine values as vLLM spells them (shared with the scenario's `engine:`) ---- */

#define VLLM_ARGS_N_CUDAGRAPH (MODEL_CUDAGRAPH_FULL_AND_PIECEWISE + 1)

/* The canonical attention backend names, NULL-terminated, into `out` (static strings). */
void vllm_args_backend_names(const char *out[MODEL_BACKEND_COUNT + 1]);
/* The cudagraph mode names, NULL-terminated, into `out` (static strings). */
void vllm_args_cudagraph_names(const char *out[VLLM_ARGS_N_CUDAGRAPH + 1]);
/* The quantization names, bf16, fp8, ... then "none" (= bf16), NULL-terminated. */
void vllm_args_quant_names(const char *out[MODEL_QUANT_COUNT + 2]);
/* --kv-cache-dtype values, NULL-terminated. */
extern const char *const vllm_args_kv_dtype_names[];

/* An attention backend, case-insensitively. Returns false for an unknown name. */
bool vllm_args_parse_backend(const char *text, ModelBackend *out);
/* A quantization: ranksim's names, "none" (bf16), and the vLLM method names that mean one of
 * them (modelopt_fp4 = nvfp4; modelopt, fbgemm_fp8, ptpc_fp8 = fp8). Case-insensitive. */
bool vllm_args_parse_quant(const char *text, ModelQuant *out);
/* vLLM's --kv-cache-dtype: auto (the model's dtype, bf16 here) or bf16 -> bf16; fp8 kinds ->
 * fp8. Case-insensitive. */
bool vllm_args_parse_kv_dtype(const char *text, SchedDtype *out);
/* A cudagraph mode (NONE, PIECEWISE, FULL, ...), case-insensitively. */
bool vllm_args_parse_cudagraph(const char *text, ModelCudagraph *out);
/* A vLLM command line as a user would paste it — `[env] [VAR=VALUE...] vllm serve MODEL
 * [FLAGS...]` or `python[3] -m vllm.entrypoints.openai.api_server --model MODEL [FLAGS...]`
 * (argv[0..argc), already split), a `--config FILE.yaml` of flags expanded as vLLM expands it —
 * as the text of the eval config that says the same (model_name + server_args + env), which the
 * scenario loader reads like any eval config (src/input/vllm-command.c). NULL with `error`
 * (VLLM_ARGS_ERROR_INVALID) when it is neither form, names no model, or its --config file cannot
 * be read. Caller frees. */
char *vllm_args_command_to_eval(int argc, char **argv, GError **error);

/* A --speculative-config "method" as ranksim models it: "mtp" or any "*_mtp" (the model's own
 * MTP layers), "ngram", "eagle*" (a separate draft model), anything else OTHER. */
ModelSpecMethod vllm_args_spec_method(const char *method);

#endif
