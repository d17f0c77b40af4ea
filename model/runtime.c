/* model/runtime.c — runtime failures from their formulas (model/runtime.h). */
#include "runtime.h"

#include <string.h>

uint64_t model_trtllm_slab_bytes(uint64_t gathered_heads, uint64_t tokens)
{
    return 8ull * gathered_heads * tokens * 256ull + 1048576ull;
}

/* Crashes `ranks` at the start of step s (its `embed` op, occurrence s + 1) for `reason`. */
static void crash_at_step(GArray *faults, const GArray *ranks, int32_t embed, guint s,
                          const char *reason)
{
    for (guint i = 0; i < ranks->len; i++) {
        SchedFault f = {.kind = SCHED_FAULT_CRASH,
                        .rank = g_array_index(ranks, int32_t, i),
                        .op_name = embed,
                        .occurrence = s + 1,
                        .at_ns = -1,
                        .reason = g_intern_string(reason)};
        g_array_append_val(faults, f);
    }
}

/* FlashInfer sparse MLA before PR #50791: every scheduled token goes through the MQA kernel
 * with q_len 1 and the query all-gathered over the DCP group's heads, so a step of T tokens
 * asks for a slab of 8 x (heads/TP x DCP) x T x 256 + 1 MiB (vLLM issue #50781). */
static void sparse_mla_slab(const SchedProgram *p, const ModelLowerInput *in, GArray *faults,
                            GPtrArray *findings)
{
    const ModelParallel *par = &in->plan->par;
    uint32_t dcp = par->decode_context_parallel_size;
    if (dcp <= 1 || model_vllm_has(in->engine->vllm_absent, MODEL_VLLM_SPARSE_MLA_DCP_WORKSPACE) ||
        model_engine_backend(in->arch, in->engine, par, in->hw) !=
            MODEL_BACKEND_FLASHINFER_MLA_SPARSE)
        return;
    uint64_t heads = (uint64_t)in->arch->num_heads / par->tensor_parallel_size * dcp;
    uint64_t avail = MODEL_TRTLLM_SLAB_AVAILABLE_BYTES;
    uint64_t max_tokens = (avail - 1048576ull) / (8ull * heads * 256ull);
    int32_t embed = sched_program_find_name(p, "embed");
    if (embed < 0)
        return;
    g_autofree bool *dead = g_new0(bool, in->plan->world);
    for (guint s = 0; s < in->workload->steps->len; s++) {
        const ModelStep *st = g_ptr_array_index(in->workload->steps, s);
        g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        uint64_t tokens = 0;
        for (uint32_t r = 0; r < in->plan->world; r++) {
            uint64_t t = model_batch_tokens(model_step_batch(st, in->plan->coord[r].dp));
            if (dead[r] || model_trtllm_slab_bytes(heads, t) <= avail)
                continue;
            dead[r] = true;
            tokens = MAX(tokens, t);
            int32_t rr = (int32_t)r;
            g_array_append_val(ranks, rr);
        }
        if (!ranks->len)
            continue;
        uint64_t slab = model_trtllm_slab_bytes(heads, tokens);
        g_autofree char *rs = sched_format_ranks((const int32_t *)(void *)ranks->data, ranks->len);
        g_autofree char *msg = g_strdup_printf(
            "crash: step %u schedules %" G_GUINT64_FORMAT " tokens; FlashInfer's trtllm-gen sparse "
            "MLA launcher carves its softmax-stats slab, 8 B x %" G_GUINT64_FORMAT " gathered "
            "heads (%u per rank x DCP %u) x %" G_GUINT64_FORMAT " x 256 + 1 MiB = %.1f MiB, out of "
            "the fixed 394 MiB workspace, which has %.1f MiB left after its counter carve: it "
            "writes past the buffer and DCP worker%s %s die (vLLM issue #50781). At most "
            "%" G_GUINT64_FORMAT
            " tokens a step fit. vLLM sizes and preallocates the workspace since PR #50791 "
            "(landed through #55879); this run is vLLM without it (engine.vllm_without)",
            s + 1, tokens, heads, in->arch->num_heads / par->tensor_parallel_size, dcp, tokens,
            (double)slab / 1048576.0, (double)avail / 1048576.0, ranks->len > 1 ? "s" : "", rs,
            max_tokens);
        g_autofree char *detail = g_strdup_printf(
            "{\"mechanism\":\"sparse_mla_softmax_slab\",\"phase\":\"step\",\"step\":%u,"
            "\"tokens\":%" G_GUINT64_FORMAT ",\"gathered_heads\":%" G_GUINT64_FORMAT
            ",\"slab_bytes\":%" G_GUINT64_FORMAT ",\"available_bytes\":%" G_GUINT64_FORMAT
            ",\"max_tokens\":%" G_GUINT64_FORMAT ",\"ranks\":\"%s\",\"fixed_by\":[50791,55879]}",
            s + 1, tokens, heads, slab, avail, max_tokens, rs);
        g_ptr_array_add(findings,
                        sched_diag_new("crash", SCHED_SEV_ERROR, g_array_index(ranks, int32_t, 0),
                                       -1, 0, -1, "sparse_attention", msg, detail));
        crash_at_step(faults, ranks, embed, s,
                      "the sparse-MLA softmax-stats slab overflows FlashInfer's fixed workspace "
                      "(vLLM issue #50781)");
    }
}

/* The KV tokens DCP rank r holds of a sequence of L tokens, interleave I, DCP size D (vLLM's
 * get_dcp_local_seq_lens): base = L / I / D x I; rem = clip(L - base x D - r x I, 0, I). */
static uint64_t dcp_local_len(uint64_t L, uint32_t I, uint32_t D, uint32_t r)
{
    uint64_t base = L / I / D * I;
    int64_t rem = (int64_t)L - (int64_t)(base * D) - (int64_t)r * I;
    rem = rem < 0 ? 0 : rem > (int64_t)I ? (int64_t)I : rem;
    return base + (uint64_t)rem;
}

/* vLLM before PR #55879's empty branch: on a DCP rank where no sequence of the step has a local
 * KV token, mask_dcp_empty_shards_ clamps the sequence index to -1 and indexes an empty tensor
 * (seed 004: the CUDA-graph warm-up crash). */
static void dcp_empty_shard(const SchedProgram *p, const ModelLowerInput *in, GArray *faults,
                            GPtrArray *findings)
{
    const ModelParallel *par = &in->plan->par;
    uint32_t D = par->decode_context_parallel_size, I = MAX(par->cp_kv_cache_interleave_size, 1u);
    if (D <= 1 || model_vllm_has(in->engine->vllm_absent, MODEL_VLLM_DCP_EMPTY_SHARD_MASK))
        return;
    int32_t embed = sched_program_find_name(p, "embed");
    if (embed < 0)
        return;
    g_autofree bool *dead = g_new0(bool, in->plan->world);
    for (uint32_t r = 0; r < in->plan->world; r++)
        for (guint f = 0; f < faults->len; f++)
            dead[r] |= g_array_index(faults, SchedFault, f).rank == (int32_t)r;
    for (guint s = 0; s < in->workload->steps->len; s++) {
        const ModelStep *st = g_ptr_array_index(in->workload->steps, s);
        g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        for (uint32_t r = 0; r < in->plan->world; r++) {
            const ModelBatch *b = model_step_batch(st, in->plan->coord[r].dp);
            if (dead[r] || !b || (!b->decode->len && !b->prefill->len))
                continue;
            uint32_t d = in->plan->coord[r].dcp;
            uint64_t local = 0;
            for (guint i = 0; i < b->decode->len; i++)
                local += dcp_local_len(g_array_index(b->decode, uint32_t, i), I, D, d);
            for (guint i = 0; i < b->prefill->len; i++)
                local += dcp_local_len(g_array_index(b->prefill, uint32_t, i), I, D, d);
            if (local)
                continue;
            dead[r] = true;
            int32_t rr = (int32_t)r;
            g_array_append_val(ranks, rr);
        }
        if (!ranks->len)
            continue;
        g_autofree char *rs = sched_format_ranks((const int32_t *)(void *)ranks->data, ranks->len);
        g_autofree char *msg = g_strdup_printf(
            "crash: step %u leaves rank%s %s without a local KV token of any sequence (DCP %u, "
            "interleave %u): mask_dcp_empty_shards_ clamps the sequence index to -1 and indexes an "
            "empty tensor there (seed 004: the CUDA-graph warm-up crash). vLLM returns early on "
            "an empty shard since PR #55879; this run is vLLM without it (engine.vllm_without)",
            s + 1, ranks->len > 1 ? "s" : "", rs, D, I);
        g_autofree char *detail =
            g_strdup_printf("{\"mechanism\":\"dcp_empty_shard\",\"phase\":\"step\",\"step\":%u,"
                            "\"ranks\":\"%s\",\"fixed_by\":[55879]}",
                            s + 1, rs);
        g_ptr_array_add(findings,
                        sched_diag_new("crash", SCHED_SEV_ERROR, g_array_index(ranks, int32_t, 0),
                                       -1, 0, -1, "mask_dcp_empty_shards_", msg, detail));
        crash_at_step(faults, ranks, embed, s,
                      "mask_dcp_empty_shards_ indexes an empty tensor on a DCP rank with no local "
                      "sequence (before vLLM PR #55879)");
    }
}

/* vLLM's executor gives up on a worker RPC after VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (vllm/envs.py,
 * 300; ../shared/reference/postmortem.md). */
#define RPC_TIMEOUT_NS (300ll * 1000000000ll)

/* The first step where rank r's batch has a prompt (`decode` false) or a decoding sequence
 * (`decode` true), or -1. */
static int first_step_with(const ModelLowerInput *in, uint32_t r, bool decode)
{
    for (guint s = 0; s < in->workload->steps->len; s++) {
        const ModelBatch *b =
            model_step_batch(g_ptr_array_index(in->workload->steps, s), in->plan->coord[r].dp);
        if (b && (decode ? b->decode->len : b->prefill->len))
            return (int)s;
    }
    return -1;
}

static bool crashed(const GArray *faults, uint32_t r)
{
    for (guint f = 0; f < faults->len; f++) {
        const SchedFault *x = &g_array_index(faults, SchedFault, f);
        if (x->kind == SCHED_FAULT_CRASH && x->rank == (int32_t)r)
            return true;
    }
    return false;
}

/* vLLM before PR #55879's warm-up keys: the sparse-attention indexer's prefill-chunk metadata
 * kernel (Triton) is warmed with each rank's own (DCP_RANK, DCP_WORLD), but under PCP + DCP the
 * runtime normalizes the key to (0, 1). Triton keys an int argument by its class — exactly 1, a
 * multiple of 16 (0 included), or neither — and no rank warmed DCP_WORLD in the class "1", so on
 * the first prefill every rank compiles the kernel before its first forward
 * (research notes jit-sync.md; seed 004; khluu on PR #55879). Each compile takes
 * engine.jit_compile_s; a compile longer than the executor's RPC timeout kills the engine. */
static void indexer_cold_key(const SchedProgram *p, const ModelLowerInput *in, GArray *faults,
                             GPtrArray *findings)
{
    const ModelParallel *par = &in->plan->par;
    if (!in->arch->dsa || par->prefill_context_parallel_size <= 1 ||
        par->decode_context_parallel_size <= 1 ||
        model_vllm_has(in->engine->vllm_absent, MODEL_VLLM_INDEXER_WARMUP_KEYS))
        return;
    int32_t embed = sched_program_find_name(p, "embed");
    if (embed < 0)
        return;
    int64_t compile_ns = (int64_t)(in->engine->jit_compile_s * 1e9);
    g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
    int step = -1;
    for (uint32_t r = 0; r < in->plan->world; r++) {
        int s = first_step_with(in, r, false);
        if (s < 0 || crashed(faults, r))
            continue;
        SchedFault f = {.kind = SCHED_FAULT_DELAY,
                        .rank = (int32_t)r,
                        .op_name = embed,
                        .occurrence = (uint64_t)s + 1,
                        .delay_ns = compile_ns,
                        .at_ns = -1};
        g_array_append_val(faults, f);
        int32_t rr = (int32_t)r;
        g_array_append_val(ranks, rr);
        step = step < 0 ? s : MIN(step, s);
    }
    if (!ranks->len)
        return;
    g_autofree char *rs = sched_format_ranks((const int32_t *)(void *)ranks->data, ranks->len);
    g_autofree char *msg = g_strdup_printf(
        "jit: the first prefill (step %d) runs the sparse-attention indexer's prefill-chunk "
        "metadata kernel with the PCP+DCP normalized key (DCP_RANK=0, DCP_WORLD=1), which the "
        "warm-up of vLLM before PR #55879 never compiled (each rank warmed its own DCP_RANK with "
        "DCP_WORLD=%u; Triton keys DCP_WORLD=1 in a class of its own): rank%s %s JIT-compile%s "
        "it on the first real batch, %.3g s each (engine.jit_compile_s), while the engine waits. "
        "vLLM's JIT monitor logs \"Triton kernel JIT compilation during inference\"; PR #55879 "
        "warms the normalized key and the four pointer alignments",
        step + 1, par->decode_context_parallel_size, ranks->len > 1 ? "s" : "", rs,
        ranks->len > 1 ? "" : "s", in->engine->jit_compile_s);
    g_autofree char *detail = g_strdup_printf(
        "{\"mechanism\":\"indexer_warmup_keys\",\"phase\":\"serve\",\"step\":%d,\"ranks\":"
        "\"%s\",\"runtime_key\":{\"DCP_RANK\":0,\"DCP_WORLD\":1},\"compile_s\":%.6g,"
        "\"fixed_by\":[55879]}",
        step + 1, rs, in->engine->jit_compile_s);
    g_ptr_array_add(findings,
                    sched_diag_new("jit", SCHED_SEV_WARNING, g_array_index(ranks, int32_t, 0), -1,
                                   0, -1, "build_prefill_chunk_metadata", msg, detail));
    if (compile_ns < RPC_TIMEOUT_NS || in->plan->world <= 1)
        return;
    g_autofree char *tmsg = g_strdup_printf(
        "timeout: the JIT compile of step %d (%.3g s on rank%s %s) outlasts the executor's RPC "
        "timeout, VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=300: at 300 s vLLM raises \"RPC call to "
        "sample_tokens timed out.\" and the engine dies (EngineDeadError) before the compile "
        "ends — the hang seed 004 reports on the first real batch",
        step + 1, in->engine->jit_compile_s, ranks->len > 1 ? "s" : "", rs);
    g_autofree char *tdetail = g_strdup_printf(
        "{\"mechanism\":\"indexer_warmup_keys\",\"phase\":\"serve\",\"step\":%d,\"ranks\":"
        "\"%s\",\"compile_s\":%.6g,\"rpc_timeout_s\":300}",
        step + 1, rs, in->engine->jit_compile_s);
    g_ptr_array_add(findings,
                    sched_diag_new("timeout", SCHED_SEV_ERROR, g_array_index(ranks, int32_t, 0), -1,
                                   0, -1, "build_prefill_chunk_metadata", tmsg, tdetail));
    /* the executor then shuts every worker down */
    for (uint32_t r = 0; r < in->plan->world; r++) {
        if (crashed(faults, r))
            continue;
        SchedFault f = {.kind = SCHED_FAULT_CRASH,
                        .rank = (int32_t)r,
                        .op_name = -1,
                        .at_ns = RPC_TIMEOUT_NS,
                        .reason = "the executor's RPC timed out (300 s) and shut the workers down"};
        g_array_append_val(faults, f);
    }
}

/* vLLM before PR #55879's device rank tensor: every decode metadata build under DCP made
 * torch.tensor(dcp_rank, device=...), a synchronous host-to-device copy. With the runtime's
 * GPU<->CPU sync guard on (VLLM_GPU_SYNC_CHECK=error, which vLLM's CI image sets; PR #44800) the
 * first decode step raises on every DCP rank (research notes jit-sync.md; seed 004). */
static void dcp_rank_sync(const SchedProgram *p, const ModelLowerInput *in, GArray *faults,
                          GPtrArray *findings)
{
    const ModelParallel *par = &in->plan->par;
    if (!in->arch->dsa || par->decode_context_parallel_size <= 1 || !in->engine->gpu_sync_check ||
        model_vllm_has(in->engine->vllm_absent, MODEL_VLLM_DCP_RANK_TENSOR))
        return;
    int32_t embed = sched_program_find_name(p, "embed");
    if (embed < 0)
        return;
    g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
    int step = -1;
    for (uint32_t r = 0; r < in->plan->world; r++) {
        int s = first_step_with(in, r, true);
        if (s < 0 || crashed(faults, r))
            continue;
        int32_t rr = (int32_t)r;
        g_array_append_val(ranks, rr);
        step = step < 0 ? s : MIN(step, s);
        g_autoptr(GArray) one = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_array_append_val(one, rr);
        crash_at_step(faults, one, embed, (guint)s,
                      "RuntimeError: GPU<->CPU sync detected - avoid it or wrap with "
                      "gpu_sync_allowed() (torch.tensor(dcp_rank, device=...) per decode batch, "
                      "before vLLM PR #55879)");
    }
    if (!ranks->len)
        return;
    g_autofree char *rs = sched_format_ranks((const int32_t *)(void *)ranks->data, ranks->len);
    g_autofree char *msg = g_strdup_printf(
        "crash: the first decode step (%d) builds the DCP-local sequence lengths with "
        "torch.tensor(dcp_rank, device=...), a synchronous host-to-device copy on the decode hot "
        "path; with the GPU<->CPU sync guard on (engine.gpu_sync_check, VLLM_GPU_SYNC_CHECK=error) "
        "rank%s %s raise \"RuntimeError: GPU<->CPU sync detected - avoid it or wrap with "
        "gpu_sync_allowed()\". PR #55879 makes the rank tensor once in the metadata builder",
        step + 1, ranks->len > 1 ? "s" : "", rs);
    g_autofree char *detail = g_strdup_printf(
        "{\"mechanism\":\"dcp_rank_tensor\",\"phase\":\"serve\",\"step\":%d,\"ranks\":\"%s\","
        "\"fixed_by\":[55879]}",
        step + 1, rs);
    g_ptr_array_add(findings,
                    sched_diag_new("crash", SCHED_SEV_ERROR, g_array_index(ranks, int32_t, 0), -1,
                                   0, -1, "get_dcp_local_seq_lens", msg, detail));
}

void model_runtime_faults(const SchedProgram *p, const ModelLowerInput *in, GArray *faults,
                          GPtrArray *findings)
{
    g_autoptr(GArray) mine = g_array_new(FALSE, FALSE, sizeof(SchedFault));
    sparse_mla_slab(p, in, mine, findings);
    dcp_empty_shard(p, in, mine, findings);
    dcp_rank_sync(p, in, mine, findings);
    indexer_cold_key(p, in, mine, findings);
    g_array_append_vals(faults, mine->data, mine->len);
}
