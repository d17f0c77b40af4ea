/* tests/fuzz/fuzz-set.c — libFuzzer target: `--set KEY=VALUE` overrides on a scenario, loaded
 * with runner_load_string (as `ranksim run FILE --set ... --hardware h100 --prefill
 * 128`: the two extras only count when the file says nothing) and, when its work is bounded
 * (FUZZ_MAX_RANK_OPS), simulated.
 *
 * Input: text, one override per line (what `ranksim run --set LINE` would get; at most
 * MAX_OVERRIDES of them). An optional first line "@NAME" picks the scenario the overrides apply
 * to: one of the built-in bases below (@program, @model, @eval), or a file of the repository's
 * scenarios/ by its stem (@lse-size-mismatch), read at start-up from RANKSIM_SOURCE_DIR (its
 * path is the display name, so relative paths in it resolve). Without it the base is @program. An unknown NAME is no input (rejected from the corpus).
 */
#include "fuzz-common.h"

#include "../../src/run/runner.h"
#include "../../src/input/scenario.h"

#ifndef RANKSIM_SOURCE_DIR
#define RANKSIM_SOURCE_DIR "."
#endif

#define MAX_OVERRIDES 64

/* Every top-level key of a program scenario, so overrides reach each of them. */
static const char base_program[] =
    "name: fuzz-program\n"
    "description: every top-level key of a program scenario\n"
    "kind: program\n"
    "ranks: 8\n"
    "hardware:\n"
    "  preset: b200\n"
    "  devices_per_node: 4\n"
    "  launch_latency_us: 5\n"
    "  tiers:\n"
    "    nvlink: {bandwidth_gb_s: 900}\n"
    "nodes: 2\n"
    "collective_algorithm: {all_reduce: ring, all_gather: auto}\n"
    "contention: true\n"
    "on_mismatch: hang\n"
    "watchdog: {collective_timeout_s: 600}\n"
    "straggler_threshold_s: 10\n"
    "groups: {tp: \"0-3\", tp2: \"4-7\", world: \"*\", pair: [0, 4]}\n"
    "programs:\n"
    "  \"0-3\":\n"
    "    - op: repeat\n"
    "      times: 4\n"
    "      ops:\n"
    "        - {op: compute, name: attn, us: 50, tokens: 128}\n"
    "        - {op: all_reduce, group: tp, name: tp_all_reduce, count: 1048576, dtype: bf16}\n"
    "    - {op: all_gather, group: world, count: 4096, dtype: fp32}\n"
    "  \"4-7\":\n"
    "    - op: repeat\n"
    "      times: 4\n"
    "      ops:\n"
    "        - {op: compute, name: attn, us: 55, tokens: 128}\n"
    "        - {op: all_reduce, group: tp2, name: tp_all_reduce, count: 1048576, dtype: bf16}\n"
    "    - {op: all_gather, group: world, count: 4096, dtype: fp32}\n"
    "faults:\n"
    "  - {rank: 2, kind: delay, op: attn, occurrence: 2, seconds: 0.001}\n"
    "  - {rank: 5, kind: slowdown, factor: 1.5}\n"
    "  - {kind: link, tier: ib, node: 1, factor: 0.5}\n";

static const char base_model[] =
    "name: fuzz-model\n"
    "model: qwen3-0.6b\n"
    "hardware: h100\n"
    "parallel: {tensor_parallel_size: 2, data_parallel_size: 1, enable_expert_parallel: false}\n"
    "engine: {max_model_len: 4096, gpu_memory_utilization: 0.9}\n"
    "workload:\n"
    "  steps:\n"
    "    - {prefill: [300]}\n"
    "    - {decode: [300, 12]}\n"
    "watchdog: {collective_timeout_s: 600}\n";

static const char base_eval[] =
    "model_name: \"Qwen/Qwen3-30B-A3B\"\n"
    "accuracy_threshold: 0.8\n"
    "num_questions: 1319\n"
    "server_args: >-\n"
    "  --max-model-len 4096\n"
    "  --tensor-parallel-size 2\n"
    "  --enable-expert-parallel\n";

typedef struct {
    char *name;
    char *path; /* the display name: a repository file's path, so relative paths resolve */
    char *text;
} Base;

static GPtrArray *bases; /* Base* */
static GArray *prefill;  /* --prefill 128, for scenarios without a workload */

static void add_base(const char *name, const char *path, const char *text)
{
    Base *b = g_new0(Base, 1);
    b->name = g_strdup(name);
    b->path = g_strdup(path);
    b->text = g_strdup(text);
    g_ptr_array_add(bases, b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    prefill = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t n = 128;
    g_array_append_val(prefill, n);
    bases = g_ptr_array_new();
    add_base("program", RANKSIM_SOURCE_DIR "/scenarios/fuzz-program.yaml", base_program);
    add_base("model", RANKSIM_SOURCE_DIR "/scenarios/fuzz-model.yaml", base_model);
    add_base("eval", RANKSIM_SOURCE_DIR "/scenarios/fuzz-eval.yaml", base_eval);
    const char *dir = RANKSIM_SOURCE_DIR "/scenarios";
    GDir *d = g_dir_open(dir, 0, NULL);
    if (!d)
        return 0;
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (const char *f; (f = g_dir_read_name(d));)
        if (g_str_has_suffix(f, ".yaml"))
            g_ptr_array_add(names, g_strdup(f));
    g_dir_close(d);
    g_ptr_array_sort(names, (GCompareFunc)(void (*)(void))g_strcmp0);
    for (guint i = 0; i < names->len; i++) {
        const char *f = g_ptr_array_index(names, i);
        g_autofree char *path = g_build_filename(dir, f, NULL);
        g_autofree char *text = NULL;
        if (!g_file_get_contents(path, &text, NULL, NULL))
            continue;
        g_autofree char *stem = g_strndup(f, strlen(f) - strlen(".yaml"));
        add_base(stem, path, text);
    }
    return 0;
}

static const Base *find_base(const char *name)
{
    for (guint i = 0; i < bases->len; i++) {
        const Base *b = g_ptr_array_index(bases, i);
        if (strcmp(b->name, name) == 0)
            return b;
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    g_auto(GStrv) lines = g_strsplit_set(text, "\n", -1);
    guint n = g_strv_length(lines);
    /* a trailing newline is no override */
    if (n && lines[n - 1][0] == '\0') {
        g_free(lines[n - 1]);
        lines[--n] = NULL;
    }
    const Base *base = g_ptr_array_index(bases, 0);
    char **ov = lines;
    if (n && lines[0][0] == '@') {
        base = find_base(lines[0] + 1);
        if (!base)
            return -1;
        ov++;
    }
    if (g_strv_length(ov) > MAX_OVERRIDES)
        return -1;
    ScenarioExtras extras = {.overrides = (const char *const *)ov, .hardware = "h100",
                             .prefill = prefill, .max_rank_ops = FUZZ_MAX_RANK_OPS};
    GError *err = NULL;
    Scenario *sc = runner_load_string(base->text, base->path, &extras, &err);
    fuzz_check_error("runner_load_string", sc != NULL, err);
    if (!sc) {
        g_error_free(err);
        return 0;
    }
    bool ok = runner_check_work(sc, FUZZ_MAX_RANK_OPS, &err);
    fuzz_check_error("runner_check_work", ok, err);
    if (ok)
        runner_result_free(runner_simulate(sc, SCHED_TIMELINE_NONE, NULL, NULL, NULL, NULL));
    else
        g_error_free(err);
    scenario_free(sc);
    return 0;
}
