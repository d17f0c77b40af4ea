/* tests/validate/validate-times.c — replays measured kernel and collective times
 * (the CSV files of tests/data/times/, format in tests/data/times/README.md) through `ranksim
 * cost`'s models and prints, per kind and device, n and the median, 90th percentile and worst
 * |error|.
 *
 *   validate-times [--check] [--min-rows N] [--steps STEPS.csv] [--table TABLE]... FILE.csv...
 *
 * --steps: measured serving runs (tests/data/times/steps.csv: model, device, tp, dp, isl, osl,
 * concurrency, moe_tp, moe_ep, vllm_version, measured_tpot_ms, measured_ttft_ms, source; columns
 * read by name, and isl / osl / concurrency / moe_tp / moe_ep taken from "name=N" in the source
 * when a file has no such columns): each row becomes the `vllm serve` line of its model at its
 * deployment (steps_moe_deployment: for an MoE model, -tp tp -dp (moe_tp x moe_ep / tp when AIC
 * left attention DP blank), --enable-expert-parallel when moe_ep > 1; a row vLLM cannot express
 * is skipped with its reason; an fp8 row of a bf16 checkpoint adds --quantization fp8; a
 * vllm_version before 0.14, which had no async scheduling by default, adds
 * --no-async-scheduling) serving --prompts-per-slot (default 10) x concurrency requests of isl
 * + osl tokens, all released at 0, through a closed-loop client of max_concurrency =
 * concurrency (vllm bench serve --request-rate inf --max-concurrency); ranksim's mean TPOT and
 * mean TTFT are computed as vllm bench computes them. Grouped by metric, model and device (and
 * by tp, dp, moe_tp, moe_ep with --by-deployment). A
 * row ranksim cannot serve is counted as not priced (VALIDATE_VERBOSE=1 says why, and prints
 * each run's figures and time).
 *
 * --check: exit 1 when a group of at least N rows (default 20) misses the bars (a kernel
 * kind: median |error| <= 15 %, p90 <= 40 %; whole steps: median <= 10 % for a dense model,
 * <= 25 % for an MoE model). A malformed file: exit 2, one line naming file, line, column.
 * Rows whose kind the models do not price yet are counted as such, never as passing.
 * --table: load these measured tables (model/kernel-table.h; each device's rows for that device)
 * and price through them as `ranksim cost --perf-db` does; the bar is then that every
 * row the table covers (source "table") is within 5 % of its measurement, and --check fails when
 * one is not or when no row is covered.
 */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/input/cost-query.h"
#include "../../src/input/hardware.h"
#include "../../src/run/cost.h"
#include "../../src/run/runner.h"
#include "../../src/util/inputfile.h"
#include "../../model/kernel-attn.h"
#include "../../model/deployment.h"

/* --steps: requests per client slot (num_prompts = K x concurrency). AIConfigurator does not
 * state its silicon runs' num_prompts; its deployment guide benchmarks concurrency x 10, so
 * K = 10. Fewer prompts leave the replay in its start-up waves (identical requests sent together
 * prefill together, then decode together: doc/serving.md), with the prefills in TTFT and none
 * mixed into other requests' decode steps, where a benchmark of 10 x concurrency prompts spends
 * most of its time: on Qwen3-32B bf16 H100 (90 rows, vLLM 0.12 without async scheduling) the
 * TPOT median |error| is 13.1 / 9.8 / 8.1 % and TTFT's 111 / 34 / 30 % at K = 2 / 5 / 10. */
#define STEPS_PROMPTS_PER_SLOT 10

/* The bar with a measured table loaded (issue 23): covered ops reproduce it within 5 %. */
#define TABLE_TOLERANCE 0.05

typedef struct {
    char **paths;                     /* --table files, NULL-terminated, or NULL */
    GHashTable *by_device;            /* device name -> ModelKernelTable* */
    unsigned covered, outside, worse; /* rows covered, not covered, covered beyond 5 % */
    double worst;                     /* largest |error| of a covered row */
} Tables;

/* The tables loaded for `hw` (NULL without --table); exits 2 on a bad table. */
static const ModelKernelTable *tables_for(Tables *t, const NetHardware *hw)
{
    if (!t->paths)
        return NULL;
    ModelKernelTable *mt = g_hash_table_lookup(t->by_device, hw->name);
    if (mt)
        return mt;
    mt = model_kernel_table_new(hw->name);
    for (int i = 0; t->paths[i]; i++) {
        g_autoptr(GError) err = NULL;
        gsize len = 0;
        g_autofree char *data = input_file_read_bytes(t->paths[i], 0, &len, &err);
        if (!data || !model_kernel_table_load(mt, data, len, t->paths[i], &err)) {
            fprintf(stderr, "validate-times: --table %s\n", err->message);
            exit(2);
        }
    }
    g_hash_table_insert(t->by_device, g_strdup(hw->name), mt);
    return mt;
}

typedef struct {
    char *name;      /* "gemm bf16 h100" */
    GArray *err;     /* double: relative error, predicted / measured - 1 */
    double step_bar; /* whole-step groups: the median bar; 0: a kernel kind's bars */
} Group;

/* The bars. A kernel kind: median |error| <= 15 % and p90 <= 40 %. Whole vLLM steps
 * (the TPOT and TTFT of --steps): median <= 10 % for dense models, <= 25 % for the MoE models
 * (the issue names MLA / DSA MoE; every MoE model gets that bar here, its kernels' errors add
 * up the same way). */
#define KERNEL_MEDIAN_BAR 0.15
#define KERNEL_P90_BAR 0.40
#define STEP_BAR_DENSE 0.10
#define STEP_BAR_MOE 0.25

static int cmp_abs(const void *a, const void *b)
{
    double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
    return x < y ? -1 : x > y;
}

/* The group a row belongs to: its kind and the key that selects the kernel family. */
static char *group_name(const CostQuery *q, const char *device)
{
    const char *sub = "";
    switch (q->kind) {
    case COST_GEMM:
        sub = cost_query_word(q, CQ_GEMM_DTYPE);
        break;
    case COST_ATTENTION:
        sub = cost_query_word(q, CQ_ATTN_PHASE);
        break;
    case COST_MOE: /* each routing is a group of its own (skewed rows time the busiest rank) */
        return g_strdup_printf("moe %s %s %s", cost_query_word(q, CQ_MOE_DTYPE),
                               cost_query_word(q, CQ_MOE_DIST), device);
    case COST_COLLECTIVE:
        sub = q->val[CQ_COLL_IMPL] ? "custom all_reduce" : cost_query_word(q, CQ_COLL_OP);
        break;
    case COST_EP:
        return g_strdup_printf("ep %s %s %s", cost_query_word(q, CQ_EP_MODE),
                               cost_query_word(q, CQ_EP_OP), device);
    default:
        break;
    }
    return g_strdup_printf("%s %s %s", cost_kind_name(q->kind), sub, device);
}

static Group *group_get(GPtrArray *groups, const char *name)
{
    for (guint i = 0; i < groups->len; i++) {
        Group *g = g_ptr_array_index(groups, i);
        if (strcmp(g->name, name) == 0)
            return g;
    }
    Group *g = g_new0(Group, 1);
    g->name = g_strdup(name);
    g->err = g_array_new(FALSE, FALSE, sizeof(double));
    g_ptr_array_add(groups, g);
    return g;
}

static void group_free(gpointer p)
{
    Group *g = p;
    g_free(g->name);
    g_array_free(g->err, TRUE);
    g_free(g);
}

static const NetHardware *device(GHashTable *devices, const char *name, GError **error)
{
    NetHardware *hw = g_hash_table_lookup(devices, name);
    if (hw)
        return hw;
    hw = g_new0(NetHardware, 1);
    if (!hardware_load_preset(name, hw, error)) {
        g_free(hw);
        return NULL;
    }
    g_hash_table_insert(devices, g_strdup(name), hw);
    return hw;
}

/* One file; returns false (and says where) on a malformed line. */
static bool replay(const char *path, GHashTable *devices, GPtrArray *groups, unsigned *unpriced,
                   Tables *tables)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &text, NULL, &err)) {
        fprintf(stderr, "validate-times: %s\n", err->message);
        return false;
    }
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    bool header = false;
    for (int ln = 0; lines[ln]; ln++) {
        const char *line = lines[ln];
        if (!line[0] || line[0] == '#')
            continue;
        if (!header) {
            if (!g_str_has_prefix(line, "kind,device,args,measured_us")) {
                fprintf(stderr, "%s:%d: header must start kind,device,args,measured_us\n", path,
                        ln + 1);
                return false;
            }
            header = true;
            continue;
        }
        g_auto(GStrv) f = g_strsplit(line, ",", 5);
        if (g_strv_length(f) < 4) {
            fprintf(stderr, "%s:%d: expected kind,device,args,measured_us[,source]\n", path,
                    ln + 1);
            return false;
        }
        char *end = NULL;
        double measured = g_ascii_strtod(f[3], &end);
        if (end == f[3] || *end || !(measured > 0)) {
            fprintf(stderr, "%s:%d: column measured_us: '%s' is not a positive number\n", path,
                    ln + 1, f[3]);
            return false;
        }
        const NetHardware *hw = device(devices, f[1], &err);
        if (!hw) {
            fprintf(stderr, "%s:%d: column device: %s\n", path, ln + 1, err->message);
            return false;
        }
        CostQuery q;
        if (!cost_query_parse_text(f[0], f[2], &q, &err)) {
            fprintf(stderr, "%s:%d: column args: %s\n", path, ln + 1, err->message);
            return false;
        }
        CostResult r;
        if (!cost_predict_table(hw, tables_for(tables, hw), &q, &r, &err)) {
            g_clear_error(&err);
            (*unpriced)++;
            continue;
        }
        g_autofree char *name = group_name(&q, f[1]);
        double e = r.time_us / measured - 1.0;
        if (tables->paths && strcmp(r.source, "table") == 0) {
            tables->covered++;
            tables->worse += fabs(e) > TABLE_TOLERANCE;
            tables->worst = fmax(tables->worst, fabs(e));
            if (fabs(e) > TABLE_TOLERANCE)
                fprintf(stderr, "%s:%d: the table gives %.3f us, measured %.3f us (%+.1f %%)\n",
                        path, ln + 1, r.time_us, measured, e * 100);
        } else if (tables->paths) {
            tables->outside++;
        }
        g_array_append_val(group_get(groups, name)->err, e);
    }
    return true;
}

/* ---- --steps: serving runs replayed as the benchmark ran them ---- */

/* The columns of a steps file, by name (-1: absent). Today's files name isl, osl and
 * concurrency; older ones (model,device,tp,batch,context,prefill_tokens,vllm_version,
 * measured_ms,source) carry them in the source's "(isl=N osl=N concurrency=N ...)". */
enum {
    SC_MODEL,
    SC_DEVICE,
    SC_TP,
    SC_DP,
    SC_ISL,
    SC_OSL,
    SC_CONC,
    SC_TPOT,
    SC_TPOT_OLD,
    SC_TTFT,
    SC_SOURCE,
    SC_VERSION,
    SC_MOE_TP,
    SC_MOE_EP,
    SC_N
};
static const char *const steps_cols[SC_N] = {"model",       "device",
                                             "tp",          "dp",
                                             "isl",         "osl",
                                             "concurrency", "measured_tpot_ms",
                                             "measured_ms", "measured_ttft_ms",
                                             "source",      "vllm_version",
                                             "moe_tp",      "moe_ep"};

typedef struct {
    const char *model, *device, *source, *version;
    uint32_t tp, dp, isl, osl, conc;
    uint32_t moe_tp, moe_ep; /* the MoE layer's TP and EP as AIC records them; 0: not recorded */
    double tpot_ms, ttft_ms; /* ttft_ms 0: not measured */
} StepsRow;

/* The vLLM deployment a row is replayed as: --tensor-parallel-size, --data-parallel-size and
 * --enable-expert-parallel. */
typedef struct {
    uint32_t tp, dp;
    bool ep;
    bool dp_inferred; /* dp taken from the MoE width (AIC left attention_dp_size blank) */
} StepsDeploy;

/* A number from the row's column `c`, or else from "name=N" in its source; 0 when neither. */
static double steps_value(char **f, guint nf, const int *col, int c, const char *name)
{
    if (col[c] >= 0 && (guint)col[c] < nf && f[col[c]][0])
        return g_ascii_strtod(f[col[c]], NULL);
    const char *src = col[SC_SOURCE] >= 0 && (guint)col[SC_SOURCE] < nf ? f[col[SC_SOURCE]] : "";
    g_autofree char *key = g_strdup_printf(" %s=", name);
    const char *at = strstr(src, key);
    if (!at) {
        g_free(key);
        key = g_strdup_printf("(%s=", name);
        at = strstr(src, key);
    }
    return at ? g_ascii_strtod(at + strlen(key), NULL) : 0;
}

/* Whether the row's vLLM release predates async scheduling by default: it came with v0.14.0
 * (PR 27614; vLLM's async scheduling plan, issue 27679; "Disables async scheduling which is now
 * enabled by default" on adopting v0.14.0, torch-spyre/sendnn-inference PR 636). Such a server
 * ran the host's work between every two steps. An unknown version keeps ranksim's default. */
static bool steps_before_async_default(const char *version)
{
    unsigned major = 0, minor = 0;
    if (!version || sscanf(version, "%u.%u", &major, &minor) != 2)
        return false;
    return major == 0 && minor < 14;
}

/* The deployment of an MoE row from AIC's MoE columns. AIConfigurator's width identity (its
 * ModelConfig.resolve_moe_parallelism, sdk/config.py): the MoE layer spans every GPU of the run,
 * tp x attention_dp = moe_tp x moe_ep. vLLM's FusedMoEParallelConfig.make splits the MoE layer
 * over the TP x DP ranks either by tensor parallelism (no --enable-expert-parallel: moe_tp =
 * tp x dp) or by experts (--enable-expert-parallel: moe_ep = tp x dp), never both (AIC's
 * test_vllm_excludes_simultaneous_moe_tp_and_ep). A row whose attention_dp_size AIC left blank
 * (dp 1 here) and whose MoE width exceeds tp ran attention DP = width / tp: the 19 vLLM 0.12
 * Qwen3-235B-A22B-FP8 rows of tp 1 / 2 with moe_tp 2 / 4 (TP1 x 236 GB of fp8 weights cannot be
 * one H200). False with *why for a row vLLM (so ranksim) cannot express. */
static bool steps_moe_deployment(const StepsRow *r, StepsDeploy *d, char **why)
{
    uint32_t width = r->moe_tp * r->moe_ep;
    if (r->moe_tp > 1 && r->moe_ep > 1) {
        *why = g_strdup_printf("moe_tp %u x moe_ep %u: vLLM splits the MoE layer by TP or by "
                               "EP, never both",
                               r->moe_tp, r->moe_ep);
        return false;
    }
    *d = (StepsDeploy){.tp = r->tp, .dp = r->dp, .ep = r->moe_ep > 1};
    if (r->tp * r->dp == width)
        return true;
    if (r->dp == 1 && width > r->tp && width % r->tp == 0) {
        d->dp = width / r->tp;
        d->dp_inferred = true;
        return true;
    }
    *why = g_strdup_printf("tp %u x attention DP %u = %u GPUs but moe_tp %u x moe_ep %u = %u",
                           r->tp, r->dp, r->tp * r->dp, r->moe_tp, r->moe_ep, width);
    return false;
}

/* The deployment before the model is known: tp and dp as given; expert parallel when moe_ep > 1
 * (a column, or "moe_ep=" in an older file's source) or, with no MoE columns, when dp > 1 (the
 * DP runs of the sample are MoE runs with EP). */
static StepsDeploy steps_given_deployment(const StepsRow *r)
{
    return (StepsDeploy){.tp = r->tp,
                         .dp = r->dp,
                         .ep = r->moe_ep > 1 || (r->moe_tp == 0 && r->dp > 1)};
}

/* The scenario of a row at deployment d: the `vllm serve` line of its model (an fp8 row of a
 * bf16 checkpoint adds --quantization fp8; a vllm_version before 0.14 --no-async-scheduling). */
static Scenario *steps_load(const StepsRow *r, const StepsDeploy *d, const char *where,
                            GError **error)
{
    g_auto(GStrv) mp = g_strsplit(r->model, ":", 2);
    const char *precision = mp[1] ? mp[1] : "bf16";
    GString *args = g_string_new(NULL);
    g_string_append_printf(args, "-tp %u", d->tp);
    if (d->dp > 1)
        g_string_append_printf(args, " -dp %u", d->dp);
    if (strcmp(precision, "fp8") == 0 && !g_strrstr(mp[0], "FP8") && !g_strrstr(mp[0], "fp8"))
        g_string_append(args, " --quantization fp8");
    if (steps_before_async_default(r->version))
        g_string_append(args, " --no-async-scheduling");
    if (d->ep)
        g_string_append(args, " --enable-expert-parallel");
    g_autofree char *text = g_strdup_printf("model_name: %s\nserver_args: %s\n", mp[0], args->str);
    g_string_free(args, TRUE);
    /* a one-sequence decode step only to load the deployment; serving is called below */
    g_autoptr(GArray) decode = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t one = 1;
    g_array_append_val(decode, one);
    ScenarioExtras ex = {.hardware = r->device, .decode = decode};
    return scenario_load_string_extras(text, where, &ex, error);
}

/* The serving run of a row: its model at its deployment (steps_given_deployment, then for an
 * MoE model with MoE columns steps_moe_deployment; *d says which ran), `prompts` requests of isl
 * prompt and osl output tokens all sent at 0 (vllm bench serve's random dataset with
 * --ignore-eos at --request-rate inf) through a client of max_concurrency = concurrency. Fills
 * the mean TPOT and TTFT (ms) as vllm bench serve computes them; false with *why when ranksim
 * cannot run it, and *skipped too when the row's deployment cannot be expressed at all. */
static bool steps_serve(const StepsRow *r, const char *where, uint32_t prompts_per_slot,
                        StepsDeploy *d, double *tpot_ms, double *ttft_ms, double *bar,
                        bool *skipped, char **why)
{
    g_autoptr(GError) err = NULL;
    *d = steps_given_deployment(r);
    g_autoptr(Scenario) sc = steps_load(r, d, where, &err);
    if (!sc) {
        *why = g_strdup(err->message);
        return false;
    }
    if (sc->arch->moe && r->moe_tp >= 1 && r->moe_ep >= 1) {
        StepsDeploy m;
        if (!steps_moe_deployment(r, &m, why)) {
            *skipped = true;
            return false;
        }
        if (m.tp != d->tp || m.dp != d->dp || m.ep != d->ep) {
            g_clear_pointer(&sc, scenario_free);
            sc = steps_load(r, &m, where, &err);
            if (!sc) {
                *why = g_strdup(err->message);
                return false;
            }
        }
        *d = m;
    }
    *bar = sc->arch->moe ? STEP_BAR_MOE : STEP_BAR_DENSE;
    uint32_t n = r->conc * prompts_per_slot;
    g_autoptr(GArray) reqs = g_array_sized_new(FALSE, TRUE, sizeof(ModelRequest), n);
    for (uint32_t i = 0; i < n; i++) {
        ModelRequest q = {.prompt = r->isl, .output = r->osl};
        g_array_append_val(reqs, q);
    }
    ModelLowerInput li = {.arch = sc->arch,
                          .plan = sc->plan,
                          .engine = &sc->engine,
                          .cost = sc->cost,
                          .hw = &sc->hardware,
                          .broken = MODEL_BREAK_NONE};
    ModelDeploymentServe in = {.lower = &li,
                               .nodes = sc->nodes,
                               .algo = sc->algo,
                               .contention = sc->contention,
                               .max_concurrency = r->conc,
                               .coarse_contexts = true};
    g_autoptr(ModelServe) sv =
        model_deployment_serve(&in, (const ModelRequest *)(const void *)reqs->data, n, &err);
    if (!sv || sv->stopped) {
        *why = g_strdup(sv ? sv->stopped : err->message);
        return false;
    }
    ModelServeSummary sum;
    model_serve_summarize((const ModelServeRequest *)(const void *)sv->requests->data, n, &sum);
    *tpot_ms = sum.tpot_mean * 1e3;
    *ttft_ms = sum.ttft_mean * 1e3;
    return true;
}

/* The header's columns into col[]; false when a required one is missing. */
static bool steps_header(const char *line, int *col)
{
    g_auto(GStrv) names = g_strsplit(line, ",", -1);
    for (int c = 0; c < SC_N; c++)
        col[c] = -1;
    for (int i = 0; names[i]; i++)
        for (int c = 0; c < SC_N; c++)
            if (strcmp(g_strstrip(names[i]), steps_cols[c]) == 0)
                col[c] = i;
    if (col[SC_TPOT] < 0)
        col[SC_TPOT] = col[SC_TPOT_OLD];
    return col[SC_MODEL] >= 0 && col[SC_DEVICE] >= 0 && col[SC_TP] >= 0 && col[SC_TPOT] >= 0;
}

/* One data line into *r (borrowing f); false when a value is missing or out of range. */
static bool steps_row(char **f, const int *col, StepsRow *r)
{
    guint nf = g_strv_length(f);
    int last = 0;
    for (int c = 0; c < SC_N; c++)
        last = MAX(last, col[c]);
    if (nf < (guint)MIN(last + 1, col[SC_SOURCE] >= 0 ? col[SC_SOURCE] : last + 1))
        return false;
    *r = (StepsRow){
        .model = f[col[SC_MODEL]],
        .device = f[col[SC_DEVICE]],
        .source = col[SC_SOURCE] >= 0 && (guint)col[SC_SOURCE] < nf ? f[col[SC_SOURCE]] : NULL,
        .version = col[SC_VERSION] >= 0 && (guint)col[SC_VERSION] < nf ? f[col[SC_VERSION]] : NULL,
        .tp = (uint32_t)atoi(f[col[SC_TP]]),
        .dp = (uint32_t)MAX(1.0, steps_value(f, nf, col, SC_DP, "dp")),
        .isl = (uint32_t)steps_value(f, nf, col, SC_ISL, "isl"),
        .osl = (uint32_t)steps_value(f, nf, col, SC_OSL, "osl"),
        .conc = (uint32_t)steps_value(f, nf, col, SC_CONC, "concurrency"),
        .moe_tp = (uint32_t)steps_value(f, nf, col, SC_MOE_TP, "moe_tp"),
        .moe_ep = (uint32_t)steps_value(f, nf, col, SC_MOE_EP, "moe_ep"),
        .tpot_ms = g_ascii_strtod(f[col[SC_TPOT]], NULL),
        .ttft_ms = col[SC_TTFT] >= 0 ? g_ascii_strtod(f[col[SC_TTFT]], NULL) : 0,
    };
    return r->tp >= 1 && r->isl >= 1 && r->osl >= 2 && r->conc >= 1 && r->tpot_ms > 0;
}

/* One row's serving run, replayed on a worker thread. */
typedef struct {
    StepsRow r;
    char *where;
    uint32_t prompts_per_slot;
    bool ok, skipped;
    StepsDeploy d;
    double tpot, ttft, seconds, bar;
    char *why;
} StepsJob;

/* What the groups of --steps are keyed by beyond metric, model and device. */
typedef struct {
    bool by_deployment; /* also by the row's tp / dp / moe_tp / moe_ep (--by-deployment) */
    unsigned skipped;   /* rows whose deployment vLLM cannot express */
} StepsReport;

static void steps_job_run(gpointer data, gpointer user)
{
    StepsJob *j = data;
    (void)user;
    gint64 t0 = g_get_monotonic_time();
    j->ok = steps_serve(&j->r, j->where, j->prompts_per_slot, &j->d, &j->tpot, &j->ttft, &j->bar,
                        &j->skipped, &j->why);
    j->seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
}

static void steps_jobs_free(GArray *todo)
{
    for (guint i = 0; i < todo->len; i++) {
        g_free(g_array_index(todo, StepsJob, i).where);
        g_free(g_array_index(todo, StepsJob, i).why);
    }
    g_array_unref(todo);
}

/* The groups of one replayed run. */
static void steps_job_record(const StepsJob *j, GPtrArray *groups, unsigned *unpriced,
                             StepsReport *rep)
{
    bool verbose = g_getenv("VALIDATE_VERBOSE") != NULL;
    if (j->skipped) {
        fprintf(stderr, "%s: skipped: %s\n", j->where, j->why);
        rep->skipped++;
        return;
    }
    if (!j->ok) {
        if (verbose)
            fprintf(stderr, "%s: not priced: %s\n", j->where, j->why);
        (*unpriced)++;
        return;
    }
    if (verbose)
        fprintf(stderr,
                "%s: -tp %u -dp %u%s%s: TPOT %.3f ms (measured %.3f), TTFT %.1f ms (measured "
                "%.1f); %.2f s\n",
                j->where, j->d.tp, j->d.dp, j->d.ep ? " EP" : "",
                j->d.dp_inferred ? " (DP from moe_tp x moe_ep)" : "", j->tpot, j->r.tpot_ms,
                j->ttft, j->r.ttft_ms, j->seconds);
    g_autofree char *key =
        rep->by_deployment ? g_strdup_printf(" tp%u dp%u moe_tp%u moe_ep%u", j->r.tp, j->r.dp,
                                             j->r.moe_tp, j->r.moe_ep)
                           : g_strdup("");
    g_autofree char *tn = g_strdup_printf("tpot %s %s%s", j->r.model, j->r.device, key);
    double e = j->tpot / j->r.tpot_ms - 1.0;
    Group *g = group_get(groups, tn);
    g->step_bar = j->bar;
    g_array_append_val(g->err, e);
    if (j->r.ttft_ms > 0) {
        g_autofree char *fn = g_strdup_printf("ttft %s %s%s", j->r.model, j->r.device, key);
        e = j->ttft / j->r.ttft_ms - 1.0;
        g = group_get(groups, fn);
        g->step_bar = j->bar;
        g_array_append_val(g->err, e);
    }
}

/* Replays a steps file, its runs on `jobs` threads (each run is independent; the groups are
 * filled in file order, so the output does not depend on `jobs`); false on a malformed line. */
static bool replay_steps(const char *path, GPtrArray *groups, unsigned *unpriced,
                         StepsReport *rep, uint32_t prompts_per_slot, uint32_t jobs)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &text, NULL, &err)) {
        fprintf(stderr, "validate-times: %s\n", err->message);
        return false;
    }
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    GArray *todo = g_array_new(FALSE, TRUE, sizeof(StepsJob));
    int col[SC_N];
    bool header = false;
    for (int ln = 0; lines[ln]; ln++) {
        if (!lines[ln][0] || lines[ln][0] == '#')
            continue;
        if (!header) {
            if (!steps_header(lines[ln], col)) {
                fprintf(stderr,
                        "%s:%d: the header must name model, device, tp and "
                        "measured_tpot_ms (or measured_ms); isl, osl, concurrency, dp, "
                        "moe_tp, moe_ep, measured_ttft_ms and source are read when present\n",
                        path, ln + 1);
                steps_jobs_free(todo);
                return false;
            }
            header = true;
            continue;
        }
        int last_col = col[SC_SOURCE] >= 0 ? col[SC_SOURCE] + 1 : -1;
        char **f = g_strsplit(lines[ln], ",", last_col);
        g_ptr_array_add(fields, f);
        StepsJob j = {.where = g_strdup_printf("%s:%d", path, ln + 1),
                      .prompts_per_slot = prompts_per_slot};
        bool ok = steps_row(f, col, &j.r);
        g_array_append_val(todo, j);
        if (!ok) {
            fprintf(stderr,
                    "%s: expected tp >= 1, isl >= 1, osl >= 2, concurrency >= 1 (columns "
                    "or isl=, osl=, concurrency= in the source) and a TPOT > 0\n",
                    j.where);
            steps_jobs_free(todo);
            return false;
        }
    }
    GThreadPool *pool = g_thread_pool_new(steps_job_run, NULL, (gint)MAX(jobs, 1u), TRUE, NULL);
    for (guint i = 0; i < todo->len; i++)
        g_thread_pool_push(pool, &g_array_index(todo, StepsJob, i), NULL);
    g_thread_pool_free(pool, FALSE, TRUE);
    for (guint i = 0; i < todo->len; i++)
        steps_job_record(&g_array_index(todo, StepsJob, i), groups, unpriced, rep);
    steps_jobs_free(todo);
    return true;
}

/* ---- mla_module rows (tests/data/times/mla-module-*.csv) ---- */

/* The ops of one MLA / DSA attention module as the lowering names them (model/lower.c): what
 * vLLM's DeepseekV2MLAAttention runs between the input norm and o_proj, o_proj included. */
static bool mla_module_op(const char *n)
{
    static const char *const names[] = {
        "fused_qkv_a_proj", "q_a_proj",     "q_a_layernorm",    "q_b_proj",
        "kv_a_proj",        "kv_a_layernorm", "kv_b_proj",      "rotary_emb",
        "mla_q_absorb",     "indexer",      "mla_attention",    "sparse_attention",
        "mla_v_absorb",     "o_proj",       NULL};
    for (int i = 0; names[i]; i++)
        if (strcmp(n, names[i]) == 0)
            return true;
    return false;
}

/* One mla_module row's args as a model scenario: the preset at that TP, one step of `batch`
 * decodes at `context` or `batch` prompts of `seqlen`. NULL (and *why) on a bad key. */
static char *mla_module_scenario(const char *device, const char *args, char **why)
{
    g_auto(GStrv) kv = g_strsplit(args, " ", -1);
    const char *phase = NULL, *model = NULL, *kvd = "bf16";
    long tp = 0, batch = 0, len = 0, graph = 1;
    for (int i = 0; kv[i]; i++) {
        char *eq = strchr(kv[i], '=');
        if (!eq) {
            *why = g_strdup_printf("'%s' is not key=value", kv[i]);
            return NULL;
        }
        *eq = '\0';
        const char *k = kv[i], *v = eq + 1;
        if (strcmp(k, "phase") == 0)
            phase = v;
        else if (strcmp(k, "model") == 0)
            model = v;
        else if (strcmp(k, "kv_dtype") == 0)
            kvd = v;
        else if (strcmp(k, "tp") == 0)
            tp = atol(v);
        else if (strcmp(k, "batch") == 0)
            batch = atol(v);
        else if (strcmp(k, "context") == 0 || strcmp(k, "seqlen") == 0)
            len = atol(v);
        else if (strcmp(k, "graph") == 0)
            graph = atol(v);
        else {
            *why = g_strdup_printf("unknown key '%s'; valid: phase model tp batch context seqlen "
                                   "kv_dtype graph", k);
            return NULL;
        }
    }
    bool decode = phase && strcmp(phase, "decode") == 0;
    if (!phase || (!decode && strcmp(phase, "prefill") != 0) || !model || tp < 1 || batch < 1 ||
        len < 1) {
        *why = g_strdup("expected phase=decode|prefill model tp>=1 batch>=1 context|seqlen>=1");
        return NULL;
    }
    GString *t = g_string_new(NULL);
    g_string_append_printf(t, "name: mla-module\nmodel: %s\nhardware: %s\nparallel: "
                              "{tensor_parallel_size: %ld}\n", model, device, tp);
    /* the collector's batch is one step: the token budget never splits it; graph=0 (a module
     * the collector ran eagerly) runs without CUDA graphs */
    g_string_append_printf(t, "engine: {max_num_batched_tokens: %ld, kv_cache_dtype: %s%s}\n",
                           MAX(8192L, batch * (decode ? 1 : len)),
                           strcmp(kvd, "fp8") == 0 ? "fp8" : "auto",
                           graph ? "" : ", cudagraph_mode: NONE");
    g_string_append_printf(t, "workload:\n  steps:\n    - {%s: [", decode ? "decode" : "prefill");
    for (long i = 0; i < batch; i++)
        g_string_append_printf(t, "%s%ld", i ? ", " : "", len);
    g_string_append(t, "]}\n");
    return g_string_free(t, FALSE);
}

/* The module's time in us on rank 0: the attention-side ops of the first layer that has an MLA
 * attention op, from the op before it back to its input norm and on to its o_proj. */
static double mla_module_us(const Scenario *sc)
{
    const SchedProgram *p = sc->program;
    if (!p || !p->n_ranks)
        return -1;
    const SchedOpList *l = sched_program_ops(p, 0);
    for (uint32_t i = 0; i < l->len; i++) {
        const char *n = sched_program_name_str(p, l->ops[i].name);
        if (strcmp(n, "mla_attention") != 0 && strcmp(n, "sparse_attention") != 0)
            continue;
        uint32_t lo = i;
        while (lo > 0 && strcmp(sched_program_name_str(p, l->ops[lo - 1].name), "input_layernorm"))
            lo--;
        double ns = 0;
        for (uint32_t j = lo; j < l->len; j++) {
            const SchedOp *op = &l->ops[j];
            const char *m = sched_program_name_str(p, op->name);
            if (op->kind == SCHED_OP_COMPUTE && mla_module_op(m))
                ns += (double)op->dur_ns;
            if (strcmp(m, "o_proj") == 0)
                return ns / 1e3;
        }
        return -1;
    }
    return -1;
}

/* One mla_bmm row (op=pre|post tokens heads; DeepSeek-V3's qk_nope 128, kv_lora 512, v 128) as
 * the lowering prices mla_q_absorb / mla_v_absorb (model_mla_bmm_time). < 0 (and *why) on bad
 * args. */
static double mla_bmm_us(GHashTable *devices, const char *dev, const char *args, char **why)
{
    g_auto(GStrv) kv = g_strsplit(args, " ", -1);
    const char *op = NULL;
    long tokens = 0, heads = 0;
    for (int i = 0; kv[i]; i++) {
        char *eq = strchr(kv[i], '=');
        if (eq)
            *eq = '\0';
        if (eq && strcmp(kv[i], "op") == 0)
            op = eq + 1;
        else if (eq && strcmp(kv[i], "tokens") == 0)
            tokens = atol(eq + 1);
        else if (eq && strcmp(kv[i], "heads") == 0)
            heads = atol(eq + 1);
        else {
            *why = g_strdup_printf("unknown key '%s'; valid: op tokens heads", kv[i]);
            return -1;
        }
    }
    bool pre = op && strcmp(op, "pre") == 0;
    if (!op || (!pre && strcmp(op, "post") != 0) || tokens < 1 || heads < 1) {
        *why = g_strdup("expected op=pre|post tokens>=1 heads>=1");
        return -1;
    }
    g_autoptr(GError) err = NULL;
    const NetHardware *hw = device(devices, dev, &err);
    if (!hw) {
        *why = g_strdup(err->message);
        return -1;
    }
    ModelKernelTime t =
        model_mla_bmm_time(hw, (double)heads, (double)tokens, pre ? 128 : 512, pre ? 512 : 128);
    return t.ns / 1e3;
}

/* Replays an mla_module / mla_bmm file (kind,device,args,measured_us,source); false on a malformed
 * line. Grouped by kind, attention (mla / dsa), phase and device. */
static bool replay_mla_module(const char *path, GHashTable *devices, GPtrArray *groups,
                              unsigned *unpriced)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &text, NULL, &err)) {
        fprintf(stderr, "validate-times: %s\n", err->message);
        return false;
    }
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    bool header = false;
    for (int ln = 0; lines[ln]; ln++) {
        if (!lines[ln][0] || lines[ln][0] == '#')
            continue;
        if (!header) {
            header = g_str_has_prefix(lines[ln], "kind,device,args,measured_us");
            if (!header) {
                fprintf(stderr, "%s:%d: header must start kind,device,args,measured_us\n", path,
                        ln + 1);
                return false;
            }
            continue;
        }
        g_auto(GStrv) f = g_strsplit(lines[ln], ",", 5);
        double measured = g_strv_length(f) >= 4 ? g_ascii_strtod(f[3], NULL) : 0;
        char *why = NULL;
        if (g_strv_length(f) >= 4 && strcmp(f[0], "mla_bmm") == 0 && measured > 0) {
            double us = mla_bmm_us(devices, f[1], f[2], &why);
            if (us < 0) {
                fprintf(stderr, "%s:%d: %s\n", path, ln + 1, why);
                g_free(why);
                return false;
            }
            g_autofree char *name = g_strdup_printf("mla_bmm %s", f[1]);
            double e = us / measured - 1.0;
            g_array_append_val(group_get(groups, name)->err, e);
            continue;
        }
        g_autofree char *yaml = NULL;
        if (g_strv_length(f) < 4 || strcmp(f[0], "mla_module") != 0 || !(measured > 0) ||
            !(yaml = mla_module_scenario(f[1], f[2], &why))) {
            fprintf(stderr, "%s:%d: %s\n", path, ln + 1,
                    why ? why : "expected mla_module|mla_bmm,device,args,measured_us>0[,source]");
            g_free(why);
            return false;
        }
        g_autofree char *where = g_strdup_printf("%s:%d", path, ln + 1);
        Scenario *sc = runner_load_string(yaml, where, NULL, &err);
        double us = sc ? mla_module_us(sc) : -1;
        if (sc)
            scenario_free(sc);
        if (us < 0) {
            if (g_getenv("VALIDATE_VERBOSE"))
                fprintf(stderr, "%s: not priced: %s\n", where, err ? err->message : "no MLA op");
            g_clear_error(&err);
            (*unpriced)++;
            continue;
        }
        if (g_getenv("VALIDATE_VERBOSE"))
            fprintf(stderr, "%s: %s %s predicted %.1f us measured %.1f us (%+.1f %%)\n", where,
                    f[1], f[2], us, measured, (us / measured - 1) * 100);
        g_autofree char *name =
            g_strdup_printf("mla_module %s %s %s", strstr(f[2], "v3.2") ? "dsa" : "mla",
                            strstr(f[2], "phase=decode") ? "decode" : "prefill", f[1]);
        double e = us / measured - 1.0;
        g_array_append_val(group_get(groups, name)->err, e);
    }
    return true;
}

int main(int argc, char **argv)
{
    gboolean check = FALSE;
    gint min_rows = 20;
    g_autofree char *steps = NULL;
    g_auto(GStrv) mla_modules = NULL;
    gint prompts_per_slot = STEPS_PROMPTS_PER_SLOT, jobs = 2;
    gboolean by_deployment = FALSE;
    Tables tables = {0};
    GOptionEntry entries[] = {
        {"check", 0, 0, G_OPTION_ARG_NONE, &check, "exit 1 when a group misses the bars", NULL},
        {"min-rows", 0, 0, G_OPTION_ARG_INT, &min_rows, "groups checked need this many rows", "N"},
        {"steps", 0, 0, G_OPTION_ARG_FILENAME, &steps, "serving runs to replay", "FILE"},
        {"mla-module", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &mla_modules,
         "MLA / DSA attention modules to replay (kind mla_module)", "FILE"},
        {"prompts-per-slot", 0, 0, G_OPTION_ARG_INT, &prompts_per_slot,
         "--steps: num_prompts = K x concurrency (default 10)", "K"},
        {"jobs", 0, 0, G_OPTION_ARG_INT, &jobs, "--steps: serving runs at once (default 2)", "N"},
        {"by-deployment", 0, 0, G_OPTION_ARG_NONE, &by_deployment,
         "--steps: group also by tp, dp, moe_tp and moe_ep", NULL},
        {"table", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &tables.paths,
         "price through this measured table; covered rows must be within 5 %", "TABLE"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("FILE.csv...");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &err) || (argc < 2 && !steps && !mla_modules)) {
        fprintf(stderr, "validate-times: %s\n", err ? err->message : "give fixture files");
        return 2;
    }
    g_autoptr(GHashTable) devices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GPtrArray) groups = g_ptr_array_new_with_free_func(group_free);
    unsigned unpriced = 0;
    StepsReport rep = {.by_deployment = by_deployment};
    tables.by_device = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                             (GDestroyNotify)model_kernel_table_free);
    for (int i = 1; i < argc; i++)
        if (!replay(argv[i], devices, groups, &unpriced, &tables))
            return 2;
    if (steps &&
        (prompts_per_slot < 1 || jobs < 1 ||
         !replay_steps(steps, groups, &unpriced, &rep, (uint32_t)prompts_per_slot,
                       (uint32_t)jobs)))
        return 2;
    for (int i = 0; mla_modules && mla_modules[i]; i++)
        if (!replay_mla_module(mla_modules[i], devices, groups, &unpriced))
            return 2;
    printf("%-44s %5s %8s %8s %8s %8s\n", "kind", "n", "median", "p90", "worst", "bias");
    int failed = 0;
    for (guint i = 0; i < groups->len; i++) {
        Group *g = g_ptr_array_index(groups, i);
        GArray *e = g->err;
        g_array_sort(e, cmp_abs);
        guint n = e->len;
        double med = fabs(g_array_index(e, double, n / 2));
        double p90 = fabs(g_array_index(e, double, (guint)(0.9 * (n - 1))));
        double worst = fabs(g_array_index(e, double, n - 1));
        double bias = 0;
        for (guint j = 0; j < n; j++)
            bias += g_array_index(e, double, j);
        bias /= n;
        bool miss = (int)n >= min_rows && (g->step_bar > 0 ? med > g->step_bar
                                                           : med > KERNEL_MEDIAN_BAR ||
                                                                 p90 > KERNEL_P90_BAR);
        g_autofree char *label =
            !miss             ? g_strdup("")
            : g->step_bar > 0 ? g_strdup_printf("  MISSES THE STEP BAR (median %.0f%%)",
                                                g->step_bar * 100)
                              : g_strdup("  MISSES THE BARS");
        printf("%-44s %5u %7.1f%% %7.1f%% %7.1f%% %+7.1f%%%s\n", g->name, n, med * 100, p90 * 100,
               worst * 100, bias * 100, label);
        failed += miss;
    }
    if (unpriced)
        printf("%u rows of kinds not priced yet (not counted as passing)\n", unpriced);
    if (rep.skipped)
        printf("%u serving runs skipped: a deployment vLLM cannot express (reasons above; not "
               "counted as passing)\n",
               rep.skipped);
    bool with_table = tables.paths != NULL, table_miss = false;
    if (with_table) {
        printf("with the table: %u rows covered, worst |error| %.2f%%, %u beyond %.0f%%; %u "
               "not covered\n",
               tables.covered, tables.worst * 100, tables.worse, TABLE_TOLERANCE * 100,
               tables.outside);
        table_miss = tables.covered == 0 || tables.worse > 0;
    }
    g_hash_table_unref(tables.by_device);
    g_strfreev(tables.paths);
    if (with_table)
        return check && table_miss ? 1 : 0;
    return check && (failed || unpriced || rep.skipped) ? 1 : 0;
}
