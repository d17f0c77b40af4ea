/* model/quant-shape.h — vLLM's load-time shape rules of quantized layers: the checks each
 * quantization method's create_weights makes on a linear's per-rank shape, which refuse a
 * checkpoint at some parallel sizes and accept it at others (Qwen3-235B-A22B-FP8 at TP8:
 * "The output_size of gate's and up's weight = 192 is not divisible by weight quantization
 * block_n = 128.", vllm#17569).
 *
 * The rules, each in vLLM's words (sources in quant-shape.c):
 *   - block FP8 (fp8 `weight_block_size`, compressed-tensors block strategy), dense linears:
 *     validate_fp8_block_shape — a TP-split input divisible by block_k, every TP-split or fused
 *     output part divisible by block_n;
 *   - block FP8 fused MoE: the per-partition intermediate size divisible by block_n, and by
 *     block_k when TP > 1 (Fp8MoEMethod / CompressedTensorsW8A8Fp8MoEMethod.create_weights);
 *   - AWQ / GPTQ int4 groups: a row-parallel input per rank divisible by group_size;
 *   - ModelOpt NVFP4 linears: the input per rank a multiple of 16.
 * The shapes are those of model/memory.c's tensors (GQA qkv/o, MLA q_b/kv_b/o, dense and
 * shared-expert MLPs, routed experts); DeepSeek-V4's grouped output projection is not checked.
 *
 * Errors: MODEL_QUANT_SHAPE_ERROR code 0, one line: "parallel.tensor_parallel_size: <vLLM's
 * message> (<which tensor of which layer>); loads with: <the sizes that would>". model/plan
 * calls it with the other parallel rules and hands the message on as MODEL_PLAN_ERROR; this
 * module does not know the plan (the parallel sizes come as plain numbers).
 * Costs: O(layers x linears per layer), x (log TP + 2) to list what would load.
 */
#ifndef MODEL_QUANT_SHAPE_H
#define MODEL_QUANT_SHAPE_H

#include <glib.h>
#include <stdbool.h>

#include "arch.h"

#define MODEL_QUANT_SHAPE_ERROR (model_quant_shape_error_quark())
GQuark model_quant_shape_error_quark(void);

/* The parallel sizes the shapes depend on (vLLM's ParallelConfig names). Plain data. */
typedef struct {
    uint32_t tensor_parallel_size;          /* >= 1 */
    uint32_t data_parallel_size;            /* >= 1 */
    uint32_t prefill_context_parallel_size; /* >= 1 */
    bool enable_expert_parallel;
} ModelQuantShapeSizes;

/* True when every quantized linear of `arch` (its arch->quant formats) loads at the parallel
 * sizes `sz`; false with the first refusal, in vLLM's words. A model without quantization
 * always passes. */
bool model_quant_shape_check(const ModelQuantShapeSizes *sz, const ModelArch *arch, GError **error);

#endif
