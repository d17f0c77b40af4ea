/* src/cli/cmd-cost.c — `ranksim cost --hardware HW [--json] KIND key=value...`: one kernel's or
 * collective's predicted time on a device, through the same models a run uses (src/run/cost.h).
 * Reads the hardware (a preset or a file); stores nothing. */
#include <stdio.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "../input/cost-query.h"
#include "../input/hardware.h"
#include "../run/cost.h"
#include "../util/inputfile.h"
#include "cmd-common.h"
#include "help.h"
#include "commands.h"

static const char summary[] =
    "Prints the predicted time of one kernel or collective on a device, and its rates.\n"
    "\n"
    "Kinds and keys (key=value; [optional]):\n"
    "  gemm        m n k [dtype] [graph]\n"
    "              a linear layer [m, k] x [k, n] as vLLM runs it, the activation's\n"
    "              quantization included; dtype bf16 (default), fp16, fp8 (per tensor),\n"
    "              fp8_block, nvfp4, mxfp4, int8, int4 (weight-only)\n"
    "  attention   phase=prefill batch seqlen heads [kv_heads] head_dim [cached] [causal]\n"
    "              [window] [kv_dtype] [kernel] [graph] [l2] [kv_layout]\n"
    "              phase=decode batch context heads [kv_heads] head_dim [kv_dtype] [kernel]\n"
    "              one layer's attention with its KV-cache write; heads and kv_heads per\n"
    "              rank; seqlen new tokens per sequence, cached the context before them;\n"
    "              context the tokens each sequence attends to; kernel auto (by device),\n"
    "              fa3, fa2, flashinfer, triton, flashmla, fa3_mla, flashmla_sparse,\n"
    "              mla_prefill, ascend_fia, ascend_sfa; MLA: mla=1 v_head_dim=N, DSA:\n"
    "              topk=N; l2=warm (default: a benchmark replaying one layer) or cold;\n"
    "              kv_layout=paged (vLLM's cache, default) or contiguous\n"
    "  moe         tokens hidden inter topk experts [tp] [ep] [dtype] [backend]\n"
    "              vLLM's fused MoE on one rank, tokens entering it\n"
    "  collective  op ranks bytes [nodes] [dtype] [impl]\n"
    "              op all_reduce, all_gather, reduce_scatter, all_to_all, broadcast; bytes\n"
    "              as nccl-tests' size column (all_gather: the gathered output), K/M/G\n"
    "              suffixes binary; impl nccl (default) or custom (vLLM's all-reduce)\n"
    "  ep          op=dispatch|combine [mode=normal|low_latency] ep tokens hidden topk\n"
    "              [dtype] [experts] [nodes]\n"
    "              DeepEP's expert-parallel all-to-all within one NVLink domain, tokens\n"
    "              per rank\n"
    "graph=1 (default): inside a CUDA graph, as vLLM's decode replays it; graph=0: launched\n"
    "eagerly, the host's dispatch time counted when it is longer.\n"
    "--perf-db PATH (repeatable): a measured table (ranksim's CSV, AIConfigurator's tables,\n"
    "nccl-tests output); a shape it covers is priced from it (source \"table\").\n"
    "Formulas and sources: doc/cost-model.md.";

static void print_json(const CostQuery *q, const CostResult *r)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "kind");
    json_builder_add_string_value(b, cost_kind_name(q->kind));
    json_builder_set_member_name(b, "time_us");
    json_builder_add_double_value(b, r->time_us);
    json_builder_set_member_name(b, "tflops");
    json_builder_add_double_value(b, r->tflops);
    json_builder_set_member_name(b, "gbps");
    json_builder_add_double_value(b, r->gbps);
    json_builder_set_member_name(b, "bound");
    json_builder_add_string_value(b, r->bound);
    json_builder_set_member_name(b, "source");
    json_builder_add_string_value(b, r->source);
    if (r->detail) {
        json_builder_set_member_name(b, "detail");
        json_builder_add_string_value(b, r->detail);
    }
    json_builder_end_object(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    g_autofree char *text = json_generator_to_data(gen, NULL);
    printf("%s\n", text);
}

/* The measured tables of --perf-db for `hw`, or NULL when none is given; false after printing
 * the one-line error. */
static bool load_tables(char **paths, const NetHardware *hw, ModelKernelTable **out)
{
    *out = NULL;
    if (!paths || !paths[0])
        return true;
    g_autoptr(ModelKernelTable) t = model_kernel_table_new(hw->name);
    for (int i = 0; paths[i]; i++) {
        g_autoptr(GError) err = NULL;
        gsize len = 0;
        g_autofree char *data = input_file_read_bytes(paths[i], 0, &len, &err);
        if (!data || !model_kernel_table_load(t, data, len, paths[i], &err)) {
            cli_error("cost: --perf-db %s", err->message);
            return false;
        }
    }
    *out = g_steal_pointer(&t);
    return true;
}

int cli_cost(int argc, char **argv)
{
    gboolean json = FALSE;
    g_autofree char *hardware = NULL;
    g_auto(GStrv) perf_db = NULL;
    GOptionEntry entries[] = {
        {"hardware", 0, 0, G_OPTION_ARG_STRING, &hardware,
         "a hardware preset (h100, h200, b200, ...: `ranksim list hardware`) or file", "HW"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json,
         "one JSON object: time_us, tflops, gbps, bound, source", NULL},
        {"perf-db", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &perf_db,
         "a measured table that overrides the model where it covers the shape (repeatable)",
         "PATH"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("KIND key=value...");
    g_option_context_set_summary(ctx, summary);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!cli_option_parse(ctx, &argc, &argv, &err)) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (!hardware) {
        cli_error("cost: --hardware missing; give a preset (`ranksim list hardware`) or a file");
        return CLI_EXIT_INVALID;
    }
    NetHardware hw;
    bool loaded = hardware_is_preset(hardware) ? hardware_load_preset(hardware, &hw, &err)
                                               : hardware_load_file(hardware, &hw, &err);
    if (!loaded) {
        cli_error("%s", err->message);
        return CLI_EXIT_INVALID;
    }
    g_autoptr(ModelKernelTable) table = NULL;
    if (!load_tables(perf_db, &hw, &table))
        return CLI_EXIT_INVALID;
    CostQuery q;
    CostResult r;
    if (!cost_query_parse(argc - 1, argv + 1, &q, &err) ||
        !cost_predict_table(&hw, table, &q, &r, &err)) {
        cli_error("cost: %s", err->message);
        return CLI_EXIT_INVALID;
    }
    if (json) {
        print_json(&q, &r);
        return CLI_EXIT_OK;
    }
    printf("%s on %s: %.3f us", cost_kind_name(q.kind), hw.name, r.time_us);
    if (q.kind == COST_COLLECTIVE)
        printf(", busbw %.1f GB/s", r.gbps);
    else if (q.kind == COST_EP)
        printf(", %.1f GB/s sent", r.gbps);
    else
        printf(", %.1f TFLOP/s, %.1f GB/s", r.tflops, r.gbps);
    printf(" (%s-bound; %s%s%s)\n", r.bound, r.source, r.detail ? ", " : "",
           r.detail ? r.detail : "");
    return CLI_EXIT_OK;
}
