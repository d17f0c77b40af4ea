/* tests/model/test-memory-vllm.c — the start-up memory items that change with vLLM's version and
 * MoE backend (issue 25, model/memory-vllm.c): the dummy sampler per logit, the persistent
 * fused-MoE workspace, NCCL's lazily connected ring buffers and FlashInfer's all-reduce fusion
 * workspace inside the budget, MXFP4 padding by backend, Marlin's FP8 scales, and the plan as a
 * release tag switches them. Golden figures by hand from the formulas' sources. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../model/memory-vllm.h"
#include "../../model/memory.h"

#define MIB 1048576ull
#define GIB 1073741824ull

/* the behaviours vLLM 0.11.0 lacks (the version table's rows dated after it that memory reads) */
#define ABSENT_0_11                                                                              \
    ((1u << MODEL_VLLM_TRITON_TOPK_TOPP_SAMPLER) | (1u << MODEL_VLLM_MOE_WORKSPACE_PERSISTENT) | \
     (1u << MODEL_VLLM_FI_ALLREDUCE_FUSION_DEFAULT) |                                            \
     (1u << MODEL_VLLM_CUDAGRAPH_PROFILING_DEFAULT) |                                            \
     (1u << MODEL_VLLM_FI_ALLREDUCE_SYMM_DEVICE_MEMORY) |                                        \
     (1u << MODEL_VLLM_FI_ALLREDUCE_TORCH_SYMM_MEMORY))

Test(sampler, bytes_per_logit_follow_the_top_k_top_p_kernel)
{
    cr_assert_float_eq(model_mem_sampler_bytes_per_logit(0), 14.0, 1e-9);
    cr_assert_float_eq(model_mem_sampler_bytes_per_logit(ABSENT_0_11), 38.0, 1e-9);
    /* Llama-3 vocabulary, 1,024 rows: 1.71 GiB with Triton, 4.65 with the sort */
    double rows = 1024, v = 128256;
    cr_assert(fabs(model_mem_sampler_bytes_per_logit(0) * rows * v / GIB - 1.71) < 0.01);
    cr_assert(fabs(model_mem_sampler_bytes_per_logit(ABSENT_0_11) * rows * v / GIB - 4.65) < 0.01);
}

/* The Triton kernel's cached buffer: one fp32 vocabulary row per program, min(next power of 2
 * of min(SMs, rows), SMs) rows (topk_topp_triton.py). */
Test(sampler, triton_buffer_is_one_vocab_row_per_program)
{
    /* H100's 132 SMs, 1,024 rows: 132 x 128,256 x 4 = 67,719,168 B (64.6 MiB) */
    cr_assert_eq(model_mem_sampler_scratch_bytes(0, 1024, 128256, 132), 67719168ull);
    /* 100 rows: 100 programs, a buffer of 128 rows; 8 rows: 8 */
    cr_assert_eq(model_mem_sampler_scratch_bytes(0, 100, 128256, 132), 128ull * 128256 * 4);
    cr_assert_eq(model_mem_sampler_scratch_bytes(0, 8, 128256, 132), 8ull * 128256 * 4);
    /* SM count unknown: PR 33538's "around ~80 MiB" */
    cr_assert_eq(model_mem_sampler_scratch_bytes(0, 1024, 128256, 0), 80 * MIB);
    cr_assert_eq(model_mem_sampler_scratch_bytes(0, 4, 128256, 132), 0,
                 "below 8 rows: the PyTorch path");
    cr_assert_eq(model_mem_sampler_scratch_bytes(ABSENT_0_11, 1024, 128256, 132), 0);
}

Test(sampler, cublas_workspace_by_compute_capability)
{
    /* CUBLAS_WORKSPACE_CONFIG's defaults: ":4096:8" on 9.x/10.x/12.x, ":4096:2:16:8" else */
    NetHardware h;
    memset(&h, 0, sizeof h);
    h.platform = NET_PLATFORM_CUDA;
    h.arch = NET_ARCH_SM90;
    cr_assert_eq(model_mem_cublas_workspace_bytes(&h), 32 * MIB);
    h.arch = NET_ARCH_SM100;
    cr_assert_eq(model_mem_cublas_workspace_bytes(&h), 32 * MIB);
    h.arch = NET_ARCH_SM80;
    cr_assert_eq(model_mem_cublas_workspace_bytes(&h), 8519680ull);
    h.platform = NET_PLATFORM_NPU;
    h.arch = NET_ARCH_ASCEND910B;
    cr_assert_eq(model_mem_cublas_workspace_bytes(&h), 0, "not modelled off CUDA");
}

Test(moe, workspace_by_backend)
{
    /* Qwen3-30B-A3B at 8,192 tokens, TP1: H 2048, I 768, top-8: 2 x 8192 x 8 x (2048 + 2048) +
     * 2 x 8192 x 2048 = 570,425,344 B (0.53 GiB) */
    ModelMoeWsShape s = {.rows = 8192, .top_k = 8, .inter = 768, .hidden = 2048,
                         .local_experts = 128, .mxfp4_oai = false};
    cr_assert_eq(model_mem_moe_workspace_bytes(MODEL_MOE_TRITON, &s), 570425344ull);
    cr_assert_eq(model_mem_moe_workspace_bytes(MODEL_MOE_AUTO, &s), 570425344ull);
    cr_assert_eq(model_mem_moe_workspace_bytes(MODEL_MOE_MARLIN, &s), 570425344ull);
    /* DeepGEMM: 65,536 pairs + 128 x 127 rows, rounded to 128: 81,792 rows */
    uint64_t dg = 2 * (81792ull * 2048 + 81792ull * 2048 + 8192ull * 2048);
    cr_assert_eq(model_mem_moe_workspace_bytes(MODEL_MOE_DEEP_GEMM, &s), dg);
    cr_assert_eq(model_mem_moe_workspace_bytes(MODEL_MOE_FLASHINFER_CUTLASS, &s), 0);
    /* gpt-oss-20b through OAI Triton: workspace13 and output only (H 2880, I 2880, top-4) */
    ModelMoeWsShape g = {.rows = 8192, .top_k = 4, .inter = 2880, .hidden = 2880,
                         .local_experts = 32, .mxfp4_oai = true};
    cr_assert_eq(model_mem_moe_workspace_bytes(MODEL_MOE_AUTO, &g),
                 2 * (32768ull * 2880 + 8192ull * 2880));
}

static NetHardware hw(NetArch arch, double intra_bw)
{
    NetHardware h;
    memset(&h, 0, sizeof h);
    h.platform = NET_PLATFORM_CUDA;
    h.arch = arch;
    h.n_tiers = 1;
    h.tiers[0].bw_bytes_per_s = intra_bw;
    return h;
}

Test(nccl, ring_buffers_are_cumem_rounded)
{
    /* recv LL 512 KiB + LL128 4,915,200 B + header -> 6 MiB; send 4 MiB + header -> 6 MiB */
    cr_assert_eq(model_mem_nccl_ring_bytes(1), 12 * MIB);
    cr_assert_eq(model_mem_nccl_ring_bytes(32), 384 * MIB);
    NetHardware h100 = hw(NET_ARCH_SM90, 450e9), a100 = hw(NET_ARCH_SM80, 300e9);
    NetHardware pcie = hw(NET_ARCH_SM89, 32e9);
    cr_assert_eq(model_mem_nccl_channels(&h100), 32);
    cr_assert_eq(model_mem_nccl_channels(&a100), 24);
    cr_assert_eq(model_mem_nccl_channels(&pcie), 4);
}

/* FlashInfer's trtllm workspace: before PR 33985 (and with FlashInfer PR 2955) its own size,
 * buffer + flags + 3 x Lamport each rounded to 2 MiB; with the unified API's SymmDeviceMemory
 * each rounded up to 512 MiB. */
#define ABSENT_FI_SYMM (1u << MODEL_VLLM_FI_ALLREDUCE_SYMM_DEVICE_MEMORY)
#define ABSENT_FI_TORCH (1u << MODEL_VLLM_FI_ALLREDUCE_TORCH_SYMM_MEMORY)
Test(flashinfer, allreduce_fusion_workspace)
{
    NetHardware h100 = hw(NET_ARCH_SM90, 450e9), b200 = hw(NET_ARCH_SM100, 900e9);
    NetHardware a100 = hw(NET_ARCH_SM80, 300e9);
    /* Llama-3.1-8B at TP2 on H100: T = 64 MiB / 8 KiB = 8192, payload 2 x 64 MiB */
    ModelFiArShape l8 = {.tp = 2, .hidden = 4096, .max_tokens = 8192};
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&h100, &l8, ABSENT_FI_SYMM),
                 128 * MIB + 2 * MIB + 384 * MIB);
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&h100, &l8, ABSENT_FI_TORCH), 3 * 512 * MIB,
                 "SymmDeviceMemory: three 512 MiB granules");
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&h100, &l8, 0), 514 * MIB,
                 "torch symmetric memory (main): the workspace's own size again");
    /* Kimi-VL-A3B (H 2048): T capped by max_num_batched_tokens at 8192, half the workspace,
     * the same 1.5 GiB with SymmDeviceMemory */
    ModelFiArShape kv = {.tp = 2, .hidden = 2048, .max_tokens = 8192};
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&h100, &kv, ABSENT_FI_SYMM),
                 64 * MIB + 2 * MIB + 192 * MIB);
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&h100, &kv, ABSENT_FI_TORCH), 3 * 512 * MIB);
    /* TP4 on H100: 2 MB max (T = 256 at H 4096): 8 + 2 + 24 MiB; 1.5 GiB with the granules */
    ModelFiArShape t4 = {.tp = 4, .hidden = 4096, .max_tokens = 8192};
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&h100, &t4, ABSENT_FI_SYMM), 34 * MIB);
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&h100, &t4, ABSENT_FI_TORCH), 3 * 512 * MIB);
    ModelFiArShape b4 = {.tp = 4, .hidden = 4096, .max_tokens = 8192};
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&b200, &b4, ABSENT_FI_SYMM),
                 128 * MIB + 2 * MIB + 384 * MIB);
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&a100, &l8, 0), 0, "SM90 / SM100 only");
    ModelFiArShape t3 = {.tp = 3, .hidden = 4096, .max_tokens = 8192};
    cr_assert_eq(model_mem_fi_allreduce_workspace_bytes(&h100, &t3, 0), 0);
}

Test(non_torch, profile_modules_by_release)
{
    cr_assert_eq(model_mem_profile_non_torch_bytes(MODEL_VLLM_RELEASE(0, 10, 1, 1)), 0);
    uint64_t b = model_mem_profile_non_torch_bytes(MODEL_VLLM_RELEASE(0, 11, 0, 0));
    cr_assert(b > 130 * MIB && b < 135 * MIB);
    cr_assert_eq(model_mem_profile_non_torch_bytes(MODEL_VLLM_RELEASE(0, 17, 0, 0)), b);
    uint64_t g = model_mem_profile_non_torch_bytes(MODEL_VLLM_RELEASE(0, 18, 0, 0));
    cr_assert(g > b + 120 * MIB && g < b + 125 * MIB, "the CUDA-graph profiling from 0.18");
    cr_assert_eq(model_mem_profile_non_torch_bytes(0), g, "main");
}

Test(mxfp4, padding_by_backend_not_device)
{
    NetHardware a100 = hw(NET_ARCH_SM80, 300e9), h100 = hw(NET_ARCH_SM90, 450e9);
    NetHardware b200 = hw(NET_ARCH_SM100, 900e9);
    cr_assert_eq(model_mem_mxfp4_backend(&a100, MODEL_MOE_AUTO), MODEL_MXFP4_MARLIN);
    cr_assert_eq(model_mem_mxfp4_backend(&h100, MODEL_MOE_AUTO), MODEL_MXFP4_TRITON);
    cr_assert_eq(model_mem_mxfp4_backend(&h100, MODEL_MOE_MARLIN), MODEL_MXFP4_MARLIN);
    cr_assert_eq(model_mem_mxfp4_backend(&b200, MODEL_MOE_AUTO), MODEL_MXFP4_FLASHINFER);
    cr_assert_eq(model_mem_mxfp4_backend(NULL, MODEL_MOE_AUTO), MODEL_MXFP4_NONE);
    uint64_t i = 2880, h = 2880;
    model_mem_mxfp4_pad(MODEL_MXFP4_MARLIN, &i, &h);
    cr_assert(i == 2944 && h == 3072);
    i = h = 2880;
    model_mem_mxfp4_pad(MODEL_MXFP4_TRITON, &i, &h);
    cr_assert(i == 2880 && h == 3072);
    i = h = 2880;
    model_mem_mxfp4_pad(MODEL_MXFP4_FLASHINFER, &i, &h);
    cr_assert(i == 3072 && h == 3072);
}

Test(marlin, fp8_scales)
{
    NetHardware a100 = hw(NET_ARCH_SM80, 300e9), h100 = hw(NET_ARCH_SM90, 450e9);
    cr_assert(model_mem_fp8_via_marlin(&a100));
    cr_assert_not(model_mem_fp8_via_marlin(&h100));
    /* [4096, 4096] block FP8: 32 groups x 4096 columns x bf16 = 256 KiB (the checkpoint's
     * 32 x 32 fp32 block scales are 4 KiB) */
    cr_assert_eq(model_mem_marlin_fp8_scale_bytes(4096, 4096, true), 256 * 1024);
    cr_assert_eq(model_mem_marlin_fp8_scale_bytes(4096, 4096, false), 8192);
}

Test(release, parse_and_format)
{
    ModelVllmRelease r;
    char buf[24];
    cr_assert(model_vllm_release_parse("0.19.1", &r));
    cr_assert_eq(r, MODEL_VLLM_RELEASE(0, 19, 1, 0));
    cr_assert_str_eq(model_vllm_release_format(r, buf, sizeof buf), "0.19.1");
    cr_assert(model_vllm_release_parse("v0.10.1.1", &r));
    cr_assert_str_eq(model_vllm_release_format(r, buf, sizeof buf), "0.10.1.1");
    cr_assert(model_vllm_release_parse("0.19", &r));
    cr_assert_eq(r, MODEL_VLLM_RELEASE(0, 19, 0, 0));
    cr_assert_not(model_vllm_release_parse("main", &r));
    cr_assert_not(model_vllm_release_parse("0.19.x", &r));
    cr_assert_not(model_vllm_release_parse("19", &r));
    cr_assert(model_vllm_at_least(0, MODEL_VLLM_RELEASE(0, 21, 0, 0)), "main is newest");
    cr_assert_not(model_vllm_at_least(MODEL_VLLM_RELEASE(0, 19, 0, 0),
                                      MODEL_VLLM_RELEASE(0, 21, 0, 0)));
}

/* The plan as the version switches: Llama-3.1-8B on one H100-like device at 8,192 tokens and
 * 1,024 sequences: the activation peak is the sampler's, 38.0 B per logit on 0.11, 14 on 0.19
 * (+ the Triton buffer), with the profile run's hidden states ([8192, 4096] and two [1024,
 * 4096], bf16) and torch's 32 MiB cuBLAS workspace held through it; and TP2 adds the ring
 * buffers and FlashInfer's workspace inside the budget only from the releases that have them. */
Test(plan, versions_switch_the_profile_peak_and_the_non_torch_memory)
{
    ModelArch a;
    GError *err = NULL;
    cr_assert(model_arch_load_preset("llama-3.1-8b", &a, &err));
    ModelParallel par;
    model_parallel_defaults(&par);
    par.tensor_parallel_size = 2;
    ModelPlan *pl = model_plan_new(&par, &a, &err);
    cr_assert_not_null(pl);
    ModelEngine e;
    model_engine_defaults(&e);
    e.max_num_batched_tokens = 8192;
    e.max_num_seqs = 1024;
    e.cudagraph_memory_profiling = false;
    NetHardware h = hw(NET_ARCH_SM90, 450e9);
    h.hbm_bytes = 80ull * GIB;
    double v = 128256, rows = 1024;
    /* vLLM 0.19.0: everything but FlashInfer's torch-symmetric-memory workspace */
    e.vllm_absent = ABSENT_FI_TORCH;
    e.vllm_release = MODEL_VLLM_RELEASE(0, 19, 0, 0);
    ModelMemPlan *m = model_memory_plan(&a, pl, &e, &h, NULL);
    uint64_t act19 = m->ranks[0].bytes[MODEL_MEM_ACTIVATIONS];
    /* the forward's output, the sampled rows and their random copy, torch's cuBLAS workspace */
    uint64_t held = 8192ull * 4096 * 2 + 2ull * 1024 * 4096 * 2 + 32 * MIB;
    cr_assert_eq(act19, (uint64_t)(14.0 * rows * v) + 80 * MIB + held, "SMs unknown: 80 MiB");
    ModelVllmSplit s19;
    model_mem_vllm_split(m, &m->ranks[0], &s19);
    /* 0.13 + 0.12 GiB + 32 x 12 MiB + three 512 MiB SymmDeviceMemory buffers */
    cr_assert_eq(s19.non_torch, model_mem_profile_non_torch_bytes(e.vllm_release) + 384 * MIB +
                                    3 * 512 * MIB);
    model_memory_plan_free(m);
    e.vllm_absent = ABSENT_0_11;
    e.vllm_release = MODEL_VLLM_RELEASE(0, 11, 0, 0);
    m = model_memory_plan(&a, pl, &e, &h, NULL);
    cr_assert_eq(m->ranks[0].bytes[MODEL_MEM_ACTIVATIONS], (uint64_t)(38.0 * rows * v) + held);
    ModelVllmSplit s11;
    model_mem_vllm_split(m, &m->ranks[0], &s11);
    cr_assert_eq(s11.non_torch, model_mem_profile_non_torch_bytes(e.vllm_release) + 384 * MIB,
                 "no FlashInfer fusion before PR 34299");
    cr_assert_eq(s11.total, s11.weights + s11.torch_peak + s11.non_torch);
    model_memory_plan_free(m);
    model_plan_free(pl);
}

static const ModelMemItem *item_named(const ModelMemRank *r, const char *name)
{
    for (guint i = 0; r->items && i < r->items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(r->items, i);
        if (strcmp(it->name, name) == 0)
            return it;
    }
    return NULL;
}

/* Pipeline parallel: vLLM's profile run samples on the last stage only, and a stage after the
 * first keeps the two [max_num_batched_tokens, H] buffers it receives into. Llama-3.1-8B PP2 on
 * vLLM 0.19 (V04's layout): the first stage has neither, the last both. */
Test(plan, sampler_on_the_last_stage_receive_buffers_after_the_first)
{
    ModelArch a;
    GError *err = NULL;
    cr_assert(model_arch_load_preset("llama-3.1-8b", &a, &err));
    ModelParallel par;
    model_parallel_defaults(&par);
    par.pipeline_parallel_size = 2;
    ModelPlan *pl = model_plan_new(&par, &a, &err);
    cr_assert_not_null(pl, "%s", err ? err->message : "");
    ModelEngine e;
    model_engine_defaults(&e);
    e.max_num_batched_tokens = 8192;
    e.max_num_seqs = 1024;
    e.vllm_absent = ABSENT_FI_TORCH;
    e.vllm_release = MODEL_VLLM_RELEASE(0, 19, 0, 0);
    NetHardware h = hw(NET_ARCH_SM90, 450e9);
    h.hbm_bytes = 80ull * GIB;
    ModelMemPlan *m = model_memory_plan(&a, pl, &e, &h, NULL);
    cr_assert_eq(m->world, 2);
    const ModelMemRank *first = &m->ranks[0], *last = &m->ranks[1];
    cr_assert_null(item_named(first, "activations.pp_intermediate_tensors"));
    cr_assert_null(item_named(first, "activations.sampler.profile_hidden_states"));
    const ModelMemItem *recv = item_named(last, "activations.pp_intermediate_tensors");
    cr_assert_not_null(recv);
    cr_assert_eq(recv->bytes, 2ull * 8192 * 4096 * 2);
    cr_assert_not_null(item_named(last, "activations.sampler.profile_hidden_states"));
    /* the last stage's peak is the sampler's plus what it holds: 14 B x 1,024 x 128,256, the
     * 80 MiB buffer (SMs unknown), the hidden states, the receive buffers, cuBLAS's 32 MiB */
    uint64_t want = (uint64_t)(14.0 * 1024 * 128256) + 80 * MIB + 8192ull * 4096 * 2 +
                    2ull * 1024 * 4096 * 2 + recv->bytes + 32 * MIB;
    cr_assert_eq(last->bytes[MODEL_MEM_ACTIVATIONS], want);
    cr_assert_lt(first->bytes[MODEL_MEM_ACTIVATIONS], want - recv->bytes);
    model_memory_plan_free(m);
    model_plan_free(pl);
}

/* FP8 on an A100 runs through Marlin, whose scales are bf16 per column and 128-input group: the
 * plan's quant_scales grow there, the weights do not. */
Test(plan, marlin_fp8_scales_on_a100)
{
    ModelArch a;
    GError *err = NULL;
    cr_assert(model_arch_load_preset("qwen3-32b", &a, &err));
    ModelParallel par;
    model_parallel_defaults(&par);
    ModelPlan *pl = model_plan_new(&par, &a, &err);
    ModelEngine e;
    model_engine_defaults(&e);
    e.quantization = MODEL_QUANT_FP8;
    e.quantization_override = true;
    NetHardware h100 = hw(NET_ARCH_SM90, 450e9), a100 = hw(NET_ARCH_SM80, 300e9);
    h100.hbm_bytes = a100.hbm_bytes = 80ull * GIB;
    ModelMemPlan *m1 = model_memory_plan(&a, pl, &e, &h100, NULL);
    ModelMemPlan *m2 = model_memory_plan(&a, pl, &e, &a100, NULL);
    cr_assert_eq(m1->ranks[0].bytes[MODEL_MEM_WEIGHTS], m2->ranks[0].bytes[MODEL_MEM_WEIGHTS]);
    uint64_t s1 = m1->ranks[0].bytes[MODEL_MEM_QUANT_SCALES];
    uint64_t s2 = m2->ranks[0].bytes[MODEL_MEM_QUANT_SCALES];
    cr_assert(s2 > s1, "%lu vs %lu", (unsigned long)s2, (unsigned long)s1);
    model_memory_plan_free(m1);
    model_memory_plan_free(m2);
    model_plan_free(pl);
}
