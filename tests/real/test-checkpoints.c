/* tests/real/test-checkpoints.c — golden figures from public sources: every real Hugging Face
 * config.json of ../shared/real/hf-configs/ against its published checkpoint size
 * (tests/data/checkpoints.tsv, figures quoted in /work/research/checkpoint-sizes-2.md).
 *
 * Part 1, per row: the memory plan on ONE rank with no sharding (TP1, no EP, vLLM's engine
 * defaults; MTP speculative decoding with one token when the published figure includes the MTP
 * layers) gives weights + quant_scales, the tensors a checkpoint stores (derived weights are
 * built at load time and are not in it). That must be within tol_pct of the published bytes
 * (3 %, 5 % for NVFP4 / MXFP4 mixes). Rows with only an element count of a quantized checkpoint
 * ("params only") or no figure are printed and left out of the pass/fail set. Where an element
 * count is published, the plan's element count (bytes over each item's stored element size) is
 * printed beside it: informative, exact when the tensor shapes are.
 *
 * Part 2, per row with a scenario in hf-configs/scenarios/ (the real deployment): the built
 * binary runs it (`run S --timeline none --db TMP --json`); the sum over ranks of weights +
 * quant_scales, divided by the one-rank total without MTP layers (the scenarios configure no
 * speculative decoding), must lie in [0.99, 1.10]: no weights lost by the sharding, and no more
 * than 10 % replicated. Rows marked `oom` must end with exit 3 and an `oom` diagnostic.
 *
 * With folder names as arguments only those rows run, and each one-rank plan's weights and
 * scales are itemised, to set against the checkpoint's tensor list.
 *
 * A plain program (meson protocol exitcode): 0 all pass, 1 some fail, 77 when the real files
 * are absent (a user's clone). Costs: one memory plan per row and one simulation per scenario.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "../../model/memory.h"
#include "../../src/input/hardware.h"
#include "../../src/input/hf-config.h"

#define GIB 1073741824.0
#define RATIO_MIN 0.99
#define RATIO_MAX 1.10

typedef struct {
    char *folder;
    uint64_t bytes;    /* 0 = none */
    uint64_t elements; /* 0 = none */
    char *kind;
    bool mtp;
    double tol_pct;
    bool expect_oom;
} Row;

static void row_free(Row *r)
{
    g_free(r->folder);
    g_free(r->kind);
    g_free(r);
}

/* Reads the table; NULL with `error` when it cannot be read or a row is malformed. */
static GPtrArray *rows_load(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, error))
        return NULL;
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify)row_free);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        const char *l = lines[i];
        if (!*l || *l == '#')
            continue;
        g_auto(GStrv) f = g_strsplit(l, "\t", -1);
        if (g_strv_length(f) < 9) {
            g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                        "%s:%u: %u columns, 9 expected (folder bytes elements kind mtp tol_pct "
                        "expect source what)",
                        path, i + 1, g_strv_length(f));
            return NULL;
        }
        Row *r = g_new0(Row, 1);
        r->folder = g_strdup(f[0]);
        r->bytes = strcmp(f[1], "-") ? g_ascii_strtoull(f[1], NULL, 10) : 0;
        r->elements = strcmp(f[2], "-") ? g_ascii_strtoull(f[2], NULL, 10) : 0;
        r->kind = g_strdup(f[3]);
        r->mtp = strcmp(f[4], "yes") == 0;
        r->tol_pct = g_ascii_strtod(f[5], NULL);
        r->expect_oom = strcmp(f[6], "oom") == 0;
        g_ptr_array_add(rows, r);
    }
    return g_steal_pointer(&rows);
}

/* Prints the weights and quant_scales items of a one-rank plan (the --memory-detail lines). */
static void items_print(const ModelMemRank *x)
{
    for (guint i = 0; x->items && i < x->items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(x->items, i);
        if (it->component != MODEL_MEM_WEIGHTS && it->component != MODEL_MEM_QUANT_SCALES)
            continue;
        printf("    %-12s %-58s %-30s %-9s %14.4f GiB\n", model_mem_component_name(it->component),
               it->name, it->shape, it->dtype, it->bytes / GIB);
    }
}

/* Bytes of one stored element of an item's dtype as a safetensors header counts elements:
 * packed fp4 and MXFP4 blocks count one element per byte (U8), as the Hub does for NVFP4. */
static uint64_t element_bytes(const char *dtype)
{
    if (!strcmp(dtype, "bf16") || !strcmp(dtype, "fp16"))
        return 2;
    if (!strcmp(dtype, "fp32") || !strcmp(dtype, "int32"))
        return 4;
    return 1; /* fp8_e4m3, int8, e8m0, uint8, fp4_e2m1 (packed) */
}

/* weights + quant_scales of the whole model on one unsharded rank, and their element count
 * (`elements` may be NULL; items printed when `detail`); false with `error` when the config or
 * the plan is refused. */
static bool one_rank_bytes(const ModelArch *arch, bool mtp, const NetHardware *hw, bool detail,
                           uint64_t *out, uint64_t *elements, GError **error)
{
    ModelParallel par;
    model_parallel_defaults(&par);
    g_autoptr(ModelPlan) plan = model_plan_new(&par, arch, error);
    if (!plan)
        return false;
    ModelEngine eng;
    model_engine_defaults(&eng);
    if (mtp) {
        eng.speculative_method = MODEL_SPEC_MTP;
        eng.num_speculative_tokens = 1;
    }
    g_autoptr(ModelMemPlan) m = model_memory_plan(arch, plan, &eng, hw, NULL);
    *out = m->ranks[0].bytes[MODEL_MEM_WEIGHTS] + m->ranks[0].bytes[MODEL_MEM_QUANT_SCALES];
    if (detail)
        items_print(&m->ranks[0]);
    const GPtrArray *items = m->ranks[0].items;
    for (guint i = 0; elements && items && i < items->len; i++) {
        const ModelMemItem *it = g_ptr_array_index(items, i);
        if (it->component == MODEL_MEM_WEIGHTS || it->component == MODEL_MEM_QUANT_SCALES)
            *elements += it->bytes / element_bytes(it->dtype);
    }
    return true;
}

typedef struct {
    int code; /* exit code, -1 when the run did not exit normally */
    uint32_t world;
    uint64_t sum; /* weights + quant_scales over all ranks */
    uint64_t max; /* ... of the largest rank */
    bool oom;     /* an `oom` diagnostic */
    char *kinds;  /* the diagnostics' kinds, "," separated */
    char *first;  /* the first diagnostic's message (truncated) */
} ScenarioRun;

static bool scenario_run(const char *scenario, const char *db, ScenarioRun *s, GError **error)
{
    const char *argv[] = {RANKSIM_BINARY, "run", scenario, "--timeline", "none",
                          "--db",         db,    "--json", NULL};
    g_autofree char *out = NULL, *err = NULL;
    int status = 0;
    memset(s, 0, sizeof *s);
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                      error))
        return false;
    s->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_data(p, out, -1, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p))) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "exit %d, no JSON report: %.300s",
                    s->code, err && *err ? err : out);
        return false;
    }
    JsonObject *root = json_node_get_object(json_parser_get_root(p));
    GString *kinds = g_string_new(NULL);
    if (json_object_has_member(root, "diagnostics")) {
        JsonArray *d = json_object_get_array_member(root, "diagnostics");
        for (guint i = 0; i < json_array_get_length(d); i++) {
            JsonObject *o = json_array_get_object_element(d, i);
            const char *k = json_object_get_string_member(o, "kind");
            if (strcmp(k, "oom") == 0)
                s->oom = true;
            if (!strstr(kinds->str, k))
                g_string_append_printf(kinds, "%s%s", kinds->len ? "," : "", k);
            if (!s->first)
                s->first = g_strndup(json_object_get_string_member(o, "message"), 160);
        }
    }
    s->kinds = g_string_free(kinds, FALSE);
    if (!json_object_has_member(root, "memory")) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                    "exit %d, no memory plan in the "
                    "report",
                    s->code);
        return false;
    }
    JsonArray *ranks =
        json_object_get_array_member(json_object_get_object_member(root, "memory"), "ranks");
    s->world = json_array_get_length(ranks);
    for (guint r = 0; r < s->world; r++) {
        JsonObject *b =
            json_object_get_object_member(json_array_get_object_element(ranks, r), "bytes");
        uint64_t w = (uint64_t)json_object_get_int_member(b, "weights") +
                     (uint64_t)json_object_get_int_member(b, "quant_scales");
        s->sum += w;
        if (w > s->max)
            s->max = w;
    }
    return true;
}

/* Arguments (optional): folder names; only those rows run, and their one-rank weights are
 * itemised (to compare with the checkpoint's tensor list). */
static bool selected(char **only, const char *folder)
{
    if (!only || !*only)
        return true;
    for (; *only; only++)
        if (strcmp(*only, folder) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    char **only = argc > 1 ? argv + 1 : NULL;
    const char *src = RANKSIM_SOURCE_DIR;
    g_autofree char *real = g_build_filename(src, "..", "shared", "real", "hf-configs", NULL);
    if (!g_file_test(real, G_FILE_TEST_IS_DIR)) {
        printf("skipped: %s is absent (the real config.json files live beside the repository "
               "in CI only)\n",
               real);
        return 77;
    }
    g_autofree char *table = g_build_filename(src, "tests", "data", "checkpoints.tsv", NULL);
    GError *err = NULL;
    g_autoptr(GPtrArray) rows = rows_load(table, &err);
    if (!rows) {
        printf("FAIL: %s\n", err->message);
        return 1;
    }
    /* One huge device, so nothing the one-rank plan computes depends on fitting. */
    NetHardware hw;
    if (!hardware_load_preset("mi355x", &hw, &err)) {
        printf("FAIL: %s\n", err->message);
        return 1;
    }
    hw.hbm_bytes = hw.hbm_visible_bytes = 1ull << 50;
    /* the checkpoint as stored: no device, so no kernel's load-time padding (MXFP4 experts
     * are padded for the kernels of a known arch; model/memory.c mxfp4_pad) */
    hw.arch = NET_ARCH_UNKNOWN;
    g_autofree char *tmp = g_dir_make_tmp("ranksim-ckpt-XXXXXX", &err);
    if (!tmp) {
        printf("FAIL: %s\n", err->message);
        return 1;
    }
    g_autofree char *db = g_build_filename(tmp, "ckpt.db", NULL);

    int checked = 0, passed = 0, failed = 0, reported = 0;
    ModelArch *arch = g_new0(ModelArch, 1);
    printf("%-44s %10s %10s %8s %10s %8s  %s\n", "checkpoint", "pred GiB", "publ GiB", "err %",
           "diff MiB", "elem %", "result");
    /* one-rank totals without MTP, for part 2 */
    uint64_t *plain = g_new0(uint64_t, rows->len);
    for (guint i = 0; i < rows->len; i++) {
        const Row *r = g_ptr_array_index(rows, i);
        if (!selected(only, r->folder))
            continue;
        g_autofree char *cfg = g_build_filename(real, r->folder, "config.json", NULL);
        memset(arch, 0, sizeof *arch);
        uint64_t pred = 0, elems = 0;
        if (!hf_config_load_file(cfg, arch, &err) ||
            !one_rank_bytes(arch, r->mtp, &hw, only != NULL, &pred, &elems, &err) ||
            !one_rank_bytes(arch, false, &hw, false, &plain[i], NULL, &err)) {
            printf("%-44s %10s %10s %8s %10s %8s  FAIL (%s)\n", r->folder, "-", "-", "-", "-", "-",
                   err->message);
            g_clear_error(&err);
            failed++;
            continue;
        }
        /* the element count: informative (exact when the shapes are) */
        char el[16] = "-", eld[64] = "";
        if (r->elements) {
            g_snprintf(el, sizeof el, "%+.3f",
                       100.0 * ((double)elems - (double)r->elements) / (double)r->elements);
            if (elems != r->elements)
                g_snprintf(eld, sizeof eld, "; elements %+" G_GINT64_FORMAT,
                           (gint64)elems - (gint64)r->elements);
        }
        if (r->bytes == 0) {
            printf("%-44s %10.2f %10s %8s %10s %8s  %s (%s%s)\n", r->folder, pred / GIB, "-", "-",
                   "-", el,
                   strcmp(r->kind, "params_only") == 0 ? "params only" : "no published figure",
                   r->mtp ? "MTP loaded" : "no MTP", eld);
            reported++;
            continue;
        }
        double e = 100.0 * ((double)pred - (double)r->bytes) / (double)r->bytes;
        bool ok = fabs(e) <= r->tol_pct;
        printf("%-44s %10.2f %10.2f %+8.2f %+10.1f %8s  %s (tol %g %%, %s%s%s)\n", r->folder,
               pred / GIB, r->bytes / GIB, e, ((double)pred - (double)r->bytes) / 1048576.0, el,
               ok ? "PASS" : "FAIL", r->tol_pct, r->kind, r->mtp ? ", MTP loaded" : "", eld);
        checked++;
        ok ? passed++ : failed++;
    }

    printf("\n%-44s %5s %4s %10s %10s %7s %9s  %s\n", "scenario", "world", "exit", "rank GiB",
           "1-rank GiB", "ratio", "max x W", "result");
    int s_failed = 0, s_passed = 0;
    for (guint i = 0; i < rows->len; i++) {
        const Row *r = g_ptr_array_index(rows, i);
        if (!selected(only, r->folder))
            continue;
        g_autofree char *name = g_strconcat(r->folder, ".yaml", NULL);
        g_autofree char *scn = g_build_filename(real, "scenarios", name, NULL);
        if (!g_file_test(scn, G_FILE_TEST_EXISTS)) {
            printf("%-44s no scenario\n", r->folder);
            continue;
        }
        ScenarioRun s;
        if (!scenario_run(scn, db, &s, &err)) {
            printf("%-44s FAIL (%s)\n", r->folder, err->message);
            g_clear_error(&err);
            g_free(s.kinds);
            g_free(s.first);
            s_failed++;
            continue;
        }
        double ratio = plain[i] ? (double)s.sum / (double)plain[i] : 0;
        double maxw = plain[i] ? (double)s.max * s.world / (double)plain[i] : 0;
        bool ok = ratio >= RATIO_MIN && ratio <= RATIO_MAX;
        g_autofree char *why = NULL;
        if (!ok)
            why = g_strdup_printf("ratio outside [%.2f, %.2f]", RATIO_MIN, RATIO_MAX);
        if (r->expect_oom && !(s.code == 3 && s.oom)) {
            ok = false;
            g_free(why);
            why = g_strdup_printf("expected exit 3 with an oom diagnostic, got exit %d, "
                                  "diagnostics [%s]: %s",
                                  s.code, s.kinds, s.first ? s.first : "");
        }
        printf("%-44s %5u %4d %10.2f %10.2f %7.4f %9.4f  %s%s%s [%s]\n", r->folder, s.world, s.code,
               s.max / GIB, plain[i] / GIB, ratio, maxw, ok ? "PASS" : "FAIL", why ? ": " : "",
               why ? why : "", s.kinds);
        ok ? s_passed++ : s_failed++;
        g_free(s.kinds);
        g_free(s.first);
    }
    g_free(plain);
    g_free(arch);
    g_autoptr(GDir) dir = g_dir_open(tmp, 0, NULL);
    for (const char *n; dir && (n = g_dir_read_name(dir));) {
        g_autofree char *f = g_build_filename(tmp, n, NULL);
        g_unlink(f);
    }
    g_rmdir(tmp);

    printf("\ncheckpoints: %d of %d within tolerance, %d failed, %d reported only; scenarios: "
           "%d passed, %d failed\n",
           passed, checked, failed, reported, s_passed, s_failed);
    return failed || s_failed ? 1 : 0;
}
