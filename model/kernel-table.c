/* model/kernel-table.c — measured kernel times, loaded and looked up (model/kernel-table.h).
 *
 * A table is a list of groups, one per (kind, eager, words): the points that can be
 * interpolated between. A group keeps its points in a hash by canonical coordinates and, per
 * dim, the sorted distinct values its points take (the grid's axes). Canonical coordinates are
 * the key's dims, except for MoE, whose TP split is folded into inter (the kernel a rank runs
 * sees inter / tp only, and the lowering knows no more): two rows with the same canonical
 * coordinates but different raw keys are the same kernel problem, and their times are averaged.
 *
 * Why multilinear over the grid cell, in log(1 + dim), of the ratio measured / analytic:
 *  - the tables users have are grids (AIConfigurator sweeps m x n x k, tokens x model shapes;
 *    nccl-tests sizes x 2), so the cell around a query is usually complete, and a cell's
 *    corners are by construction the nearest measured shapes on both sides in every dim;
 *  - sizes in these tables are geometric (powers of two), so log spacing makes neighbours
 *    equidistant; 1 + dim keeps dims that may be 0 (cached context, window) defined;
 *  - the ratio varies slowly where the time itself changes by orders of magnitude (the analytic
 *    model carries the wave quantization, the ramp and the fixed time), so linear in the ratio
 *    is a far better interpolant than linear in time, and an exact corner gives ratio x its own
 *    analytic time = the measured time;
 *  - inverse-distance weighting over k nearest would also take scattered tables, but it reaches
 *    across the model shapes of a table (another hidden size, another expert count) and flattens
 *    near every point; we would rather say "not covered" and keep the analytic time.
 */
#include "kernel-table.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kernel-attn.h"
#include "kernel-gemm.h"
#include "kernel-moe.h"

G_DEFINE_QUARK(ranksim - model - kernel - table - error - quark, model_kernel_table_error)

#define MAX_CORNERS (1u << MODEL_KERNEL_KEY_DIMS)
/* Two coordinates closer than this (relative) are the same grid value. */
#define SAME_TOL 1e-9

typedef struct {
    double c[MODEL_KERNEL_KEY_DIMS]; /* canonical coordinates, unused ones 0 */
    ModelKernelKey key;              /* as read (words: static strings) */
    double ns;                       /* measured, the mean of `n` rows */
    guint n;
} Point;

typedef struct {
    uint8_t kind;
    bool eager;
    const char *word[MODEL_KERNEL_KEY_WORDS];
    guint ndims;
    GPtrArray *points;                   /* Point*, owned */
    GHashTable *at;                      /* Point* (by c) -> itself */
    GArray *axis[MODEL_KERNEL_KEY_DIMS]; /* double, sorted distinct values of c[d] */
} Group;

struct ModelKernelTable {
    char *device;      /* NULL: every device */
    GPtrArray *groups; /* Group*, owned */
    guint size;
};

/* ---- words ------------------------------------------------------------------------------- */

static const char *const kind_names[MODEL_KERNEL_KIND_COUNT] = {
    [MODEL_KERNEL_GEMM] = "gemm",
    [MODEL_KERNEL_ATTENTION] = "attention",
    [MODEL_KERNEL_MOE] = "moe",
    [MODEL_KERNEL_COLLECTIVE] = "collective",
};

const char *model_kernel_kind_name(ModelKernelKind k)
{
    return (unsigned)k < MODEL_KERNEL_KIND_COUNT ? kind_names[k] : NULL;
}

/* The same names `ranksim cost` takes (src/input/cost-query.c), canonical spellings first. */
static const char *const gemm_dtypes[] = {"bf16",  "fp16", "fp8",  "fp8_block", "nvfp4",
                                          "mxfp4", "int8", "int4", NULL};
static const char *const phases[] = {"prefill", "decode", NULL};
static const char *const act_dtypes[] = {"bf16", "fp16", NULL};
static const char *const kv_dtypes[] = {"auto", "bf16", "fp16", "fp8", NULL};
static const char *const moe_dists[] = {"balanced", "power_law_1.01", "power_law_1.2", NULL};
static const char *const coll_ops[] = {"all_reduce", "all_gather", "reduce_scatter",
                                       "all_to_all", "broadcast",  NULL};
static const char *const coll_dtypes[] = {"bf16", "fp16",  "fp32",  "fp8",
                                          "int8", "int32", "int64", NULL};
static const uint32_t coll_dtype_bytes[] = {2, 2, 4, 1, 1, 4, 8};
static const char *const impls[] = {"nccl", "custom", NULL};

/* Other spellings the formats use (AIConfigurator, nccl-tests, torch) -> canonical. */
static const char *const aliases[][2] = {
    {"bfloat16", "bf16"}, {"float16", "fp16"},        {"half", "fp16"},         {"float", "fp32"},
    {"float32", "fp32"},  {"fp8_e4m3", "fp8"},        {"w4a16_mxfp4", "mxfp4"}, {"int4_wo", "int4"},
    {"sq", "int8"},       {"alltoall", "all_to_all"},
};

/* The static canonical string of `s` in `list` (after aliases), or NULL. */
static const char *word_in(const char *const *list, const char *s)
{
    for (guint i = 0; i < G_N_ELEMENTS(aliases); i++)
        if (strcmp(s, aliases[i][0]) == 0) {
            s = aliases[i][1];
            break;
        }
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], s) == 0)
            return list[i];
    return NULL;
}

static char *list_text(const char *const *list)
{
    return g_strjoinv(", ", (char **)list);
}

/* ---- parse context and errors ------------------------------------------------------------ */

typedef struct {
    const char *display;
    const char *device;
    GArray *rows;     /* Point, as read (c unset) */
    GHashTable *seen; /* raw key text -> line */
} Load;

typedef struct {
    ModelKernelKey key;
    double ns;
    guint line;
} Row;

static bool G_GNUC_PRINTF(5, 6)
    fail(GError **error, const Load *ld, guint line, const char *column, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (column)
        g_set_error(error, MODEL_KERNEL_TABLE_ERROR, MODEL_KERNEL_TABLE_ERROR_PARSE,
                    "%s:%u: column '%s': %s", ld->display, line, column, what);
    else
        g_set_error(error, MODEL_KERNEL_TABLE_ERROR, MODEL_KERNEL_TABLE_ERROR_PARSE, "%s:%u: %s",
                    ld->display, line, what);
    return false;
}

/* A whole field as a finite number >= 0 (`sized`: with a K/M/G binary suffix). */
static bool number(const Load *ld, guint line, const char *column, const char *field, bool sized,
                   double *out, GError **error)
{
    if (!field || !*field)
        return fail(error, ld, line, column, "empty, expected a number");
    char *end = NULL;
    double v = g_ascii_strtod(field, &end);
    if (end == field)
        return fail(error, ld, line, column, "'%s' is not a number", field);
    if (sized && *end && !end[1]) {
        const char *units = "KMG";
        const char *u = strchr(units, g_ascii_toupper(*end));
        if (u) {
            v *= pow(1024.0, (double)(u - units + 1));
            end++;
        }
    }
    if (*end)
        return fail(error, ld, line, column, "'%s' is not a number", field);
    if (!isfinite(v) || v < 0)
        return fail(error, ld, line, column, "'%s' is not a finite number >= 0", field);
    *out = v;
    return true;
}

static bool word(const Load *ld, guint line, const char *column, const char *field,
                 const char *const *list, const char **out, GError **error)
{
    const char *w = field ? word_in(list, field) : NULL;
    if (!w) {
        g_autofree char *valid = list_text(list);
        return fail(error, ld, line, column, "'%s' is not one of %s", field ? field : "", valid);
    }
    *out = w;
    return true;
}

/* Text of a complete key, to find the same point twice. */
static char *key_text(const ModelKernelKey *k)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%s%s", kind_names[k->kind], k->eager ? " graph=0" : "");
    for (int i = 0; i < MODEL_KERNEL_KEY_WORDS; i++)
        if (k->word[i])
            g_string_append_printf(s, " %s", k->word[i]);
    for (int i = 0; i < MODEL_KERNEL_KEY_DIMS; i++)
        g_string_append_printf(s, " %.17g", k->dim[i]);
    return g_string_free(s, FALSE);
}

static bool add_row(Load *ld, guint line, const char *column, const ModelKernelKey *key, double ns,
                    GError **error)
{
    if (!(ns > 0) || !isfinite(ns))
        return fail(error, ld, line, column, "the time must be a number > 0");
    char *text = key_text(key);
    gpointer first = g_hash_table_lookup(ld->seen, text);
    if (first) {
        g_free(text);
        return fail(error, ld, line, NULL, "the same %s point as line %u", kind_names[key->kind],
                    GPOINTER_TO_UINT(first));
    }
    g_hash_table_insert(ld->seen, text, GUINT_TO_POINTER(line));
    Row r = {.key = *key, .ns = ns, .line = line};
    g_array_append_val(ld->rows, r);
    return true;
}

/* ---- ranksim's CSV: kind,device,args,measured_us[,source] -------------------------------- */

typedef enum { ROLE_DIM, ROLE_WORD, ROLE_GRAPH, ROLE_IGNORE } Role;

typedef struct {
    const char *name;
    Role role;
    int index;                /* dim or word index */
    const char *const *words; /* ROLE_WORD */
    bool required;
    bool sized;
} ArgSpec;

static const ArgSpec gemm_args[] = {
    {"m", ROLE_DIM, MODEL_KEY_GEMM_M, NULL, true, false},
    {"n", ROLE_DIM, MODEL_KEY_GEMM_N, NULL, true, false},
    {"k", ROLE_DIM, MODEL_KEY_GEMM_K, NULL, true, false},
    {"dtype", ROLE_WORD, MODEL_KEY_GEMM_DTYPE, gemm_dtypes, false, false},
    {"graph", ROLE_GRAPH, 0, NULL, false, false},
    {NULL, 0, 0, NULL, false, false},
};
static const ArgSpec moe_args[] = {
    {"tokens", ROLE_DIM, MODEL_KEY_MOE_TOKENS, NULL, true, false},
    {"hidden", ROLE_DIM, MODEL_KEY_MOE_HIDDEN, NULL, true, false},
    {"inter", ROLE_DIM, MODEL_KEY_MOE_INTER, NULL, true, false},
    {"topk", ROLE_DIM, MODEL_KEY_MOE_TOPK, NULL, true, false},
    {"experts", ROLE_DIM, MODEL_KEY_MOE_EXPERTS, NULL, true, false},
    {"tp", ROLE_DIM, MODEL_KEY_MOE_TP, NULL, false, false},
    {"ep", ROLE_DIM, MODEL_KEY_MOE_EP, NULL, false, false},
    {"dtype", ROLE_WORD, MODEL_KEY_MOE_DTYPE, gemm_dtypes, false, false},
    {"dist", ROLE_WORD, MODEL_KEY_MOE_DIST, moe_dists, false, false},
    {"backend", ROLE_IGNORE, 0, NULL, false, false},
    {"graph", ROLE_GRAPH, 0, NULL, false, false},
    {NULL, 0, 0, NULL, false, false},
};
static const ArgSpec attn_args[] = {
    {"phase", ROLE_WORD, MODEL_KEY_ATTN_PHASE, phases, true, false},
    {"batch", ROLE_DIM, MODEL_KEY_ATTN_BATCH, NULL, true, false},
    {"seqlen", ROLE_DIM, MODEL_KEY_ATTN_SEQLEN, NULL, false, false},
    {"context", ROLE_DIM, MODEL_KEY_ATTN_CONTEXT, NULL, false, false},
    {"cached", ROLE_DIM, MODEL_KEY_ATTN_CONTEXT, NULL, false, false},
    {"heads", ROLE_DIM, MODEL_KEY_ATTN_HEADS, NULL, true, false},
    {"kv_heads", ROLE_DIM, MODEL_KEY_ATTN_KV_HEADS, NULL, false, false},
    {"head_dim", ROLE_DIM, MODEL_KEY_ATTN_HEAD_DIM, NULL, true, false},
    {"causal", ROLE_DIM, MODEL_KEY_ATTN_CAUSAL, NULL, false, false},
    {"window", ROLE_DIM, MODEL_KEY_ATTN_WINDOW, NULL, false, false},
    {"dtype", ROLE_WORD, MODEL_KEY_ATTN_DTYPE, act_dtypes, false, false},
    {"kv_dtype", ROLE_WORD, MODEL_KEY_ATTN_KV_DTYPE, kv_dtypes, false, false},
    {"kernel", ROLE_IGNORE, 0, NULL, false, false},
    {"graph", ROLE_GRAPH, 0, NULL, false, false},
    {NULL, 0, 0, NULL, false, false},
};
static const ArgSpec coll_args[] = {
    {"op", ROLE_WORD, MODEL_KEY_COLL_OP, coll_ops, true, false},
    {"ranks", ROLE_DIM, MODEL_KEY_COLL_RANKS, NULL, true, false},
    {"bytes", ROLE_DIM, MODEL_KEY_COLL_BYTES, NULL, true, true},
    {"nodes", ROLE_DIM, MODEL_KEY_COLL_NODES, NULL, false, false},
    {"dtype", ROLE_WORD, MODEL_KEY_COLL_DTYPE, coll_dtypes, false, false},
    {"impl", ROLE_WORD, MODEL_KEY_COLL_IMPL, impls, false, false},
    {"algo", ROLE_IGNORE, 0, NULL, false, false},
    {"graph", ROLE_GRAPH, 0, NULL, false, false},
    {NULL, 0, 0, NULL, false, false},
};
static const ArgSpec *const kind_args[MODEL_KERNEL_KIND_COUNT] = {
    [MODEL_KERNEL_GEMM] = gemm_args,
    [MODEL_KERNEL_ATTENTION] = attn_args,
    [MODEL_KERNEL_MOE] = moe_args,
    [MODEL_KERNEL_COLLECTIVE] = coll_args,
};

static char *arg_names(const ArgSpec *spec)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; spec[i].name; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", spec[i].name);
    return g_string_free(s, FALSE);
}

/* The defaults `ranksim cost` fills for keys not given, and the derived ones, so a row and a
 * query of the same shape make the same key (model_kernel_key_normalize). */
static void key_defaults(ModelKernelKey *k, const bool *given_dim)
{
    switch (k->kind) {
    case MODEL_KERNEL_GEMM:
        if (!k->word[MODEL_KEY_GEMM_DTYPE])
            k->word[MODEL_KEY_GEMM_DTYPE] = gemm_dtypes[0];
        break;
    case MODEL_KERNEL_MOE:
        if (!k->word[MODEL_KEY_MOE_DTYPE])
            k->word[MODEL_KEY_MOE_DTYPE] = gemm_dtypes[0];
        if (!k->word[MODEL_KEY_MOE_DIST])
            k->word[MODEL_KEY_MOE_DIST] = moe_dists[0];
        if (!given_dim[MODEL_KEY_MOE_TP])
            k->dim[MODEL_KEY_MOE_TP] = 1;
        if (!given_dim[MODEL_KEY_MOE_EP])
            k->dim[MODEL_KEY_MOE_EP] = 1;
        k->dim[MODEL_KEY_MOE_ROUTES] = k->dim[MODEL_KEY_MOE_TOKENS] * k->dim[MODEL_KEY_MOE_TOPK];
        break;
    case MODEL_KERNEL_ATTENTION:
        if (!k->word[MODEL_KEY_ATTN_DTYPE])
            k->word[MODEL_KEY_ATTN_DTYPE] = act_dtypes[0];
        if (!k->word[MODEL_KEY_ATTN_KV_DTYPE] ||
            strcmp(k->word[MODEL_KEY_ATTN_KV_DTYPE], "auto") == 0)
            k->word[MODEL_KEY_ATTN_KV_DTYPE] = k->word[MODEL_KEY_ATTN_DTYPE];
        if (!given_dim[MODEL_KEY_ATTN_KV_HEADS])
            k->dim[MODEL_KEY_ATTN_KV_HEADS] = k->dim[MODEL_KEY_ATTN_HEADS];
        if (!given_dim[MODEL_KEY_ATTN_CAUSAL])
            k->dim[MODEL_KEY_ATTN_CAUSAL] = 1;
        if (!given_dim[MODEL_KEY_ATTN_SEQLEN] &&
            strcmp(k->word[MODEL_KEY_ATTN_PHASE], "decode") == 0)
            k->dim[MODEL_KEY_ATTN_SEQLEN] = 1;
        break;
    case MODEL_KERNEL_COLLECTIVE:
        if (!k->word[MODEL_KEY_COLL_DTYPE])
            k->word[MODEL_KEY_COLL_DTYPE] = coll_dtypes[0];
        if (!k->word[MODEL_KEY_COLL_IMPL])
            k->word[MODEL_KEY_COLL_IMPL] = impls[0];
        if (!given_dim[MODEL_KEY_COLL_NODES])
            k->dim[MODEL_KEY_COLL_NODES] = 1;
        break;
    default:
        break;
    }
}

static bool parse_args(const Load *ld, guint line, const char *args, ModelKernelKey *k,
                       GError **error)
{
    const ArgSpec *spec = kind_args[k->kind];
    bool given[32] = {false};
    bool given_dim[MODEL_KERNEL_KEY_DIMS] = {false};
    bool graph = k->kind != MODEL_KERNEL_COLLECTIVE; /* nccl-tests times collectives eagerly */
    g_auto(GStrv) words = g_strsplit_set(args, " \t", -1);
    for (int w = 0; words[w]; w++) {
        if (!*words[w])
            continue;
        char *eq = strchr(words[w], '=');
        if (!eq)
            return fail(error, ld, line, "args", "'%s' is not key=value", words[w]);
        *eq = '\0';
        const char *name = words[w], *val = eq + 1;
        int i = 0;
        while (spec[i].name && strcmp(spec[i].name, name) != 0)
            i++;
        if (!spec[i].name) {
            g_autofree char *valid = arg_names(spec);
            return fail(error, ld, line, "args", "key '%s' is unknown for %s (valid: %s)", name,
                        kind_names[k->kind], valid);
        }
        if (given[i])
            return fail(error, ld, line, "args", "key '%s' given twice", name);
        given[i] = true;
        g_autofree char *col = g_strdup_printf("args: %s", name);
        double v = 0;
        switch (spec[i].role) {
        case ROLE_DIM:
            if (!number(ld, line, col, val, spec[i].sized, &v, error))
                return false;
            k->dim[spec[i].index] = v;
            given_dim[spec[i].index] = true;
            break;
        case ROLE_WORD:
            if (!word(ld, line, col, val, spec[i].words, &k->word[spec[i].index], error))
                return false;
            break;
        case ROLE_GRAPH:
            if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
                return fail(error, ld, line, col, "'%s' is not 0 or 1", val);
            graph = val[0] == '1';
            break;
        case ROLE_IGNORE:
            break;
        }
    }
    for (int i = 0; spec[i].name; i++)
        if (spec[i].required && !given[i])
            return fail(error, ld, line, "args", "%s needs key '%s'", kind_names[k->kind],
                        spec[i].name);
    k->eager = !graph;
    key_defaults(k, given_dim);
    return true;
}

static bool project_row(Load *ld, guint line, const char *text, GError **error)
{
    g_auto(GStrv) f = g_strsplit(text, ",", 5);
    if (g_strv_length(f) < 4)
        return fail(error, ld, line, NULL, "expected 4 or 5 columns kind,device,args,measured_us");
    const char *kind = g_strstrip(f[0]), *device = g_strstrip(f[1]);
    if (ld->device && strcmp(device, "*") != 0 && g_ascii_strcasecmp(device, ld->device) != 0)
        return true; /* another device's row */
    ModelKernelKey k = {0};
    for (int i = 1; i < MODEL_KERNEL_KIND_COUNT; i++)
        if (strcmp(kind, kind_names[i]) == 0)
            k.kind = (uint8_t)i;
    if (!k.kind)
        return fail(error, ld, line, "kind", "'%s' is not one of gemm, attention, moe, collective",
                    kind);
    if (!parse_args(ld, line, g_strstrip(f[2]), &k, error))
        return false;
    double us;
    if (!number(ld, line, "measured_us", g_strstrip(f[3]), false, &us, error))
        return false;
    return add_row(ld, line, "measured_us", &k, us * 1e3, error);
}

/* ---- AIConfigurator's tables: CSV with named columns, latency in ms ---------------------- */

typedef enum { AIC_GEMM = 0, AIC_ATTN, AIC_MOE, AIC_NCCL, AIC_CUSTOM_AR, AIC_COUNT } AicKind;

/* The columns each table must have (after log_perf's framework,...,kernel_source). */
static const char *const aic_cols[AIC_COUNT][12] = {
    [AIC_GEMM] = {"gemm_dtype", "m", "n", "k", "latency", NULL},
    [AIC_ATTN] = {"batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim",
                  "kv_cache_dtype", "step", "latency", NULL},
    [AIC_MOE] = {"moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
                 "moe_tp_size", "moe_ep_size", "latency", NULL},
    [AIC_NCCL] = {"op_name", "num_gpus", "message_size", "latency", NULL},
    [AIC_CUSTOM_AR] = {"allreduce_dtype", "num_gpus", "message_size", "latency", NULL},
};
static const char *const aic_names[AIC_COUNT] = {"GEMM", "attention", "MoE", "NCCL",
                                                 "custom all-reduce"};

typedef struct {
    AicKind kind;
    GStrv header; /* column names */
    GStrv cells;  /* the row's */
    guint ncells;
} AicRow;

static int col_index(GStrv header, const char *name)
{
    for (int i = 0; header[i]; i++)
        if (strcmp(header[i], name) == 0)
            return i;
    return -1;
}

static const char *cell(const AicRow *r, const char *name)
{
    int i = col_index(r->header, name);
    return i >= 0 && (guint)i < r->ncells ? r->cells[i] : NULL;
}

static bool cell_num(const Load *ld, guint line, const AicRow *r, const char *name, double *v,
                     GError **error)
{
    return number(ld, line, name, cell(r, name), false, v, error);
}

/* Dims from columns: names[i] -> key.dim[idx[i]]. */
static bool cell_dims(const Load *ld, guint line, const AicRow *r, ModelKernelKey *k,
                      const char *const *names, const int *idx, int n, GError **error)
{
    for (int i = 0; i < n; i++)
        if (!cell_num(ld, line, r, names[i], &k->dim[idx[i]], error))
            return false;
    return true;
}

static bool aic_attention(const Load *ld, guint line, const AicRow *r, ModelKernelKey *k,
                          GError **error)
{
    static const char *const names[] = {"batch_size", "num_heads", "num_key_value_heads",
                                        "head_dim"};
    static const int idx[] = {MODEL_KEY_ATTN_BATCH, MODEL_KEY_ATTN_HEADS, MODEL_KEY_ATTN_KV_HEADS,
                              MODEL_KEY_ATTN_HEAD_DIM};
    double isl, step, window = 0;
    if (!cell_dims(ld, line, r, k, names, idx, 4, error) ||
        !cell_num(ld, line, r, "isl", &isl, error) || !cell_num(ld, line, r, "step", &step, error))
        return false;
    if (cell(r, "window_size") && !cell_num(ld, line, r, "window_size", &window, error))
        return false;
    const char *op = cell(r, "op_name");
    bool decode = step > 0;
    if (op && strcmp(op, "context_attention") == 0)
        decode = false;
    else if (op && strcmp(op, "generation_attention") == 0)
        decode = true;
    else if (op)
        return fail(error, ld, line, "op_name",
                    "'%s' is not context_attention or generation_attention", op);
    k->word[MODEL_KEY_ATTN_PHASE] = phases[decode ? 1 : 0];
    /* AIC's collector: prefill isl new tokens after `step` cached ones; decode one token
     * after `step` cached ones, so it attends step + 1 (tests/data/times/README.md). */
    k->dim[MODEL_KEY_ATTN_SEQLEN] = decode ? 1 : isl;
    k->dim[MODEL_KEY_ATTN_CONTEXT] = decode ? step + 1 : step;
    k->dim[MODEL_KEY_ATTN_CAUSAL] = 1;
    k->dim[MODEL_KEY_ATTN_WINDOW] = window;
    const char *dt = cell(r, "attn_dtype");
    if (!dt)
        k->word[MODEL_KEY_ATTN_DTYPE] = act_dtypes[0];
    else if (!word(ld, line, "attn_dtype", dt, act_dtypes, &k->word[MODEL_KEY_ATTN_DTYPE], error))
        return false;
    return word(ld, line, "kv_cache_dtype", cell(r, "kv_cache_dtype"), kv_dtypes,
                &k->word[MODEL_KEY_ATTN_KV_DTYPE], error);
}

static bool aic_moe(const Load *ld, guint line, const AicRow *r, ModelKernelKey *k, GError **error)
{
    static const char *const names[] = {"num_tokens",  "hidden_size", "inter_size", "topk",
                                        "num_experts", "moe_tp_size", "moe_ep_size"};
    static const int idx[] = {MODEL_KEY_MOE_TOKENS, MODEL_KEY_MOE_HIDDEN,  MODEL_KEY_MOE_INTER,
                              MODEL_KEY_MOE_TOPK,   MODEL_KEY_MOE_EXPERTS, MODEL_KEY_MOE_TP,
                              MODEL_KEY_MOE_EP};
    if (!cell_dims(ld, line, r, k, names, idx, 7, error) ||
        !word(ld, line, "moe_dtype", cell(r, "moe_dtype"), gemm_dtypes,
              &k->word[MODEL_KEY_MOE_DTYPE], error))
        return false;
    const char *dist = cell(r, "distribution");
    if (dist &&
        !word(ld, line, "distribution", dist, moe_dists, &k->word[MODEL_KEY_MOE_DIST], error))
        return false;
    return true;
}

/* NCCL (nccl-tests run by AIC's collector) and vLLM's custom all-reduce: message_size is the
 * element count (collector/network/collect_nccl.py: size // bytes_per_element). */
static bool aic_collective(const Load *ld, guint line, const AicRow *r, ModelKernelKey *k,
                           GError **error)
{
    bool custom = r->kind == AIC_CUSTOM_AR;
    const char *dcol = custom ? "allreduce_dtype" : "nccl_dtype";
    const char *op = custom ? "all_reduce" : cell(r, "op_name");
    double elems;
    if (!word(ld, line, "op_name", op, coll_ops, &k->word[MODEL_KEY_COLL_OP], error) ||
        !cell_num(ld, line, r, "num_gpus", &k->dim[MODEL_KEY_COLL_RANKS], error) ||
        !cell_num(ld, line, r, "message_size", &elems, error))
        return false;
    const char *dt = cell(r, dcol);
    k->word[MODEL_KEY_COLL_DTYPE] = coll_dtypes[1]; /* fp16: the collector's default */
    if (dt && !word(ld, line, dcol, dt, coll_dtypes, &k->word[MODEL_KEY_COLL_DTYPE], error))
        return false;
    guint di = 0;
    while (coll_dtypes[di] != k->word[MODEL_KEY_COLL_DTYPE])
        di++;
    k->dim[MODEL_KEY_COLL_BYTES] = elems * coll_dtype_bytes[di];
    k->dim[MODEL_KEY_COLL_NODES] = 1; /* AIC's collectors run on one node */
    k->word[MODEL_KEY_COLL_IMPL] = impls[custom ? 1 : 0];
    /* nccl-tests time eagerly; the custom all-reduce table has graph and eager rows */
    const char *mode = cell(r, "backend") ? cell(r, "backend") : cell(r, "kernel_source");
    k->eager = !custom || !mode || strstr(mode, "graph") == NULL;
    return true;
}

static bool aic_row(Load *ld, guint line, const AicRow *r, GError **error)
{
    ModelKernelKey k = {0};
    bool ok = true;
    switch (r->kind) {
    case AIC_GEMM: {
        static const char *const names[] = {"m", "n", "k"};
        static const int idx[] = {MODEL_KEY_GEMM_M, MODEL_KEY_GEMM_N, MODEL_KEY_GEMM_K};
        k.kind = MODEL_KERNEL_GEMM;
        ok = cell_dims(ld, line, r, &k, names, idx, 3, error) &&
             word(ld, line, "gemm_dtype", cell(r, "gemm_dtype"), gemm_dtypes,
                  &k.word[MODEL_KEY_GEMM_DTYPE], error);
        break;
    }
    case AIC_ATTN:
        k.kind = MODEL_KERNEL_ATTENTION;
        ok = aic_attention(ld, line, r, &k, error);
        break;
    case AIC_MOE:
        k.kind = MODEL_KERNEL_MOE;
        ok = aic_moe(ld, line, r, &k, error);
        break;
    default:
        k.kind = MODEL_KERNEL_COLLECTIVE;
        ok = aic_collective(ld, line, r, &k, error);
        break;
    }
    if (!ok)
        return false;
    bool given[MODEL_KERNEL_KEY_DIMS];
    memset(given, 1, sizeof given);
    key_defaults(&k, given);
    double ms;
    if (!cell_num(ld, line, r, "latency", &ms, error))
        return false;
    return add_row(ld, line, "latency", &k, ms * 1e6, error);
}

/* Which AIC table a header is (all its required columns present), or AIC_COUNT. */
static AicKind aic_kind(GStrv header)
{
    static const char *const marker[AIC_COUNT] = {"gemm_dtype", "num_key_value_heads", "moe_dtype",
                                                  "message_size", "allreduce_dtype"};
    if (col_index(header, "latency") < 0)
        return AIC_COUNT;
    if (col_index(header, "allreduce_dtype") >= 0)
        return AIC_CUSTOM_AR;
    for (int i = 0; i < AIC_COUNT; i++)
        if (col_index(header, marker[i]) >= 0)
            return (AicKind)i;
    return AIC_COUNT;
}

/* ---- CSV driver --------------------------------------------------------------------------- */

static GStrv split_csv(const char *text)
{
    GStrv f = g_strsplit(text, ",", -1);
    for (int i = 0; f[i]; i++) {
        char *s = g_strstrip(f[i]);
        size_t n = strlen(s);
        if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
            memmove(s, s + 1, n - 2);
            s[n - 2] = '\0';
        }
    }
    return f;
}

static bool header_fail(Load *ld, guint line, const char *text, GError **error)
{
    return fail(error, ld, line, NULL,
                "unknown table format, header '%s' (valid: ranksim's kind,device,args,measured_us"
                "[,source]; an AIConfigurator gemm/attention/moe/nccl/custom all-reduce table "
                "exported to CSV, with a latency column; nccl-tests output)",
                text);
}

static bool load_csv(Load *ld, GStrv lines, GError **error)
{
    g_auto(GStrv) header = NULL;
    bool project = false;
    AicKind aic = AIC_COUNT;
    for (guint i = 0; lines[i]; i++) {
        guint line = i + 1;
        char *text = lines[i];
        if (i == 0 && g_str_has_prefix(text, "\xEF\xBB\xBF")) /* UTF-8 BOM */
            text += 3;
        text = g_strstrip(text);
        if (!*text || *text == '#')
            continue;
        if (!header) {
            header = split_csv(text);
            project = col_index(header, "kind") == 0 && col_index(header, "device") == 1 &&
                      col_index(header, "args") == 2 && col_index(header, "measured_us") == 3;
            aic = project ? AIC_COUNT : aic_kind(header);
            if (!project && aic == AIC_COUNT)
                return header_fail(ld, line, text, error);
            for (int c = 0; !project && aic_cols[aic][c]; c++)
                if (col_index(header, aic_cols[aic][c]) < 0) {
                    g_autofree char *want = list_text(aic_cols[aic]);
                    return fail(error, ld, line, aic_cols[aic][c],
                                "missing: an AIConfigurator %s table has the columns %s",
                                aic_names[aic], want);
                }
            continue;
        }
        if (project) {
            if (!project_row(ld, line, text, error))
                return false;
            continue;
        }
        g_auto(GStrv) cells = split_csv(text);
        AicRow r = {.kind = aic, .header = header, .cells = cells, .ncells = g_strv_length(cells)};
        if (r.ncells != g_strv_length(header))
            return fail(error, ld, line, NULL, "%u cells, the header has %u columns", r.ncells,
                        g_strv_length(header));
        if (!aic_row(ld, line, &r, error))
            return false;
    }
    if (!header)
        return fail(error, ld, 1, NULL, "no header line: empty table");
    return true;
}

/* ---- nccl-tests output -------------------------------------------------------------------- */

typedef struct {
    const char *op; /* canonical, or NULL until known */
    guint ranks;
    GHashTable *hosts;
    bool graph;
    int time_col; /* index of the first (out-of-place) `time` in a data row */
} NcclRun;

static const char *op_of_test(const char *name)
{
    g_autofree char *s = g_strdup(name);
    char *p = strstr(s, "_perf");
    if (p)
        *p = '\0';
    return word_in(coll_ops, s);
}

/* The `#` lines that say what the rows are. */
static bool nccl_comment(Load *ld, guint line, const char *text, NcclRun *run, GError **error)
{
    const char *p;
    if ((p = strstr(text, "Collective test starting:"))) {
        g_autofree char *name = g_strstrip(g_strdup(p + strlen("Collective test starting:")));
        run->op = op_of_test(name);
        if (!run->op)
            return fail(error, ld, line, NULL,
                        "test '%s' is not one of all_reduce_perf, "
                        "all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf",
                        name);
    } else if ((p = strstr(text, "nThread"))) {
        run->graph = strstr(text, "graph: 1") != NULL;
    } else if (g_regex_match_simple("^#\\s+Rank\\s+\\d+\\s+Group", text, 0, 0)) {
        run->ranks++;
        const char *on = strstr(text, " on ");
        if (on) {
            g_autofree char *rest = g_strchug(g_strdup(on + 4));
            g_auto(GStrv) w = g_strsplit_set(rest, " \t", 2);
            g_hash_table_add(run->hosts, g_strdup(w[0]));
        }
    } else if (strstr(text, "size") && strstr(text, "count") && strstr(text, "time")) {
        g_auto(GStrv) w = g_strsplit_set(text + 1, " \t", -1);
        int col = 0;
        for (int i = 0; w[i]; i++) {
            if (!*w[i])
                continue;
            if (strcmp(w[i], "time") == 0) {
                run->time_col = col;
                break;
            }
            col++;
        }
    }
    return true;
}

static bool nccl_row(Load *ld, guint line, const char *text, const NcclRun *run, GError **error)
{
    g_auto(GStrv) raw = g_strsplit_set(text, " \t", -1);
    const char *w[16];
    int n = 0;
    for (int i = 0; raw[i] && n < 16; i++)
        if (*raw[i])
            w[n++] = raw[i];
    if (n <= run->time_col || !g_ascii_isdigit(w[0][0]))
        return true; /* not a row of the table (a warning, a summary line) */
    if (!run->op)
        return fail(error, ld, line, NULL,
                    "which collective: no '# Collective test starting: X_perf' line above, and "
                    "the file's name names none of all_reduce, all_gather, reduce_scatter, "
                    "alltoall, broadcast");
    if (!run->ranks)
        return fail(error, ld, line, NULL, "no '#  Rank N Group ...' lines above: ranks unknown");
    ModelKernelKey k = {.kind = MODEL_KERNEL_COLLECTIVE, .eager = !run->graph};
    double us;
    if (!number(ld, line, "size", w[0], false, &k.dim[MODEL_KEY_COLL_BYTES], error) ||
        !word(ld, line, "type", w[2], coll_dtypes, &k.word[MODEL_KEY_COLL_DTYPE], error) ||
        !number(ld, line, "time", w[run->time_col], false, &us, error))
        return false;
    k.word[MODEL_KEY_COLL_OP] = run->op;
    k.word[MODEL_KEY_COLL_IMPL] = impls[0];
    k.dim[MODEL_KEY_COLL_RANKS] = run->ranks;
    k.dim[MODEL_KEY_COLL_NODES] = MAX(g_hash_table_size(run->hosts), 1u);
    return add_row(ld, line, "time", &k, us * 1e3, error);
}

static bool load_nccl_tests(Load *ld, GStrv lines, GError **error)
{
    g_autoptr(GHashTable) hosts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    NcclRun run = {.hosts = hosts, .time_col = 5};
    g_autofree char *base = g_path_get_basename(ld->display);
    for (int i = 0; coll_ops[i]; i++) {
        const char *file_name = strcmp(coll_ops[i], "all_to_all") == 0 ? "alltoall" : coll_ops[i];
        if (strstr(base, file_name))
            run.op = coll_ops[i];
    }
    for (guint i = 0; lines[i]; i++) {
        char *text = g_strstrip(lines[i]);
        bool ok = !*text         ? true
                  : *text == '#' ? nccl_comment(ld, i + 1, text, &run, error)
                                 : nccl_row(ld, i + 1, text, &run, error);
        if (!ok)
            return false;
    }
    return true;
}

/* ---- groups and merging ------------------------------------------------------------------ */

static guint canon(const ModelKernelKey *k, double *c)
{
    memset(c, 0, sizeof(double) * MODEL_KERNEL_KEY_DIMS);
    switch (k->kind) {
    case MODEL_KERNEL_GEMM:
        memcpy(c, k->dim, sizeof(double) * MODEL_KEY_GEMM_DIMS);
        return MODEL_KEY_GEMM_DIMS;
    case MODEL_KERNEL_MOE: {
        double tp = k->dim[MODEL_KEY_MOE_TP] > 0 ? k->dim[MODEL_KEY_MOE_TP] : 1;
        c[0] = k->dim[MODEL_KEY_MOE_TOKENS];
        c[1] = k->dim[MODEL_KEY_MOE_HIDDEN];
        c[2] = k->dim[MODEL_KEY_MOE_INTER] / tp;
        c[3] = k->dim[MODEL_KEY_MOE_TOPK];
        c[4] = k->dim[MODEL_KEY_MOE_EXPERTS];
        c[5] = k->dim[MODEL_KEY_MOE_EP] > 0 ? k->dim[MODEL_KEY_MOE_EP] : 1;
        return 6;
    }
    case MODEL_KERNEL_ATTENTION:
        memcpy(c, k->dim, sizeof(double) * MODEL_KEY_ATTN_DIMS);
        return MODEL_KEY_ATTN_DIMS;
    case MODEL_KERNEL_COLLECTIVE:
        memcpy(c, k->dim, sizeof(double) * MODEL_KEY_COLL_DIMS);
        return MODEL_KEY_COLL_DIMS;
    default:
        return 0;
    }
}

static guint point_hash(gconstpointer p)
{
    const Point *pt = p;
    guint h = 5381;
    for (int i = 0; i < MODEL_KERNEL_KEY_DIMS; i++) {
        double v = pt->c[i] + 0.0; /* no -0 */
        guint64 bits;
        memcpy(&bits, &v, sizeof bits);
        h = h * 33u ^ (guint)(bits ^ (bits >> 32));
    }
    return h;
}

static gboolean point_equal(gconstpointer a, gconstpointer b)
{
    const Point *x = a, *y = b;
    for (int i = 0; i < MODEL_KERNEL_KEY_DIMS; i++)
        if (x->c[i] != y->c[i])
            return FALSE;
    return TRUE;
}

static void group_free(gpointer p)
{
    Group *g = p;
    g_hash_table_unref(g->at);
    g_ptr_array_unref(g->points);
    for (int d = 0; d < MODEL_KERNEL_KEY_DIMS; d++)
        if (g->axis[d])
            g_array_unref(g->axis[d]);
    g_free(g);
}

static bool group_matches(const Group *g, const ModelKernelKey *k)
{
    if (g->kind != k->kind || g->eager != k->eager)
        return false;
    for (int i = 0; i < MODEL_KERNEL_KEY_WORDS; i++)
        if (g_strcmp0(g->word[i], k->word[i]) != 0)
            return false;
    return true;
}

static Group *group_find(const ModelKernelTable *t, const ModelKernelKey *k)
{
    for (guint i = 0; i < t->groups->len; i++) {
        Group *g = g_ptr_array_index(t->groups, i);
        if (group_matches(g, k))
            return g;
    }
    return NULL;
}

static Group *group_get(ModelKernelTable *t, const ModelKernelKey *k)
{
    Group *g = group_find(t, k);
    if (g)
        return g;
    g = g_new0(Group, 1);
    g->kind = k->kind;
    g->eager = k->eager;
    memcpy(g->word, k->word, sizeof g->word);
    double c[MODEL_KERNEL_KEY_DIMS];
    g->ndims = canon(k, c);
    g->points = g_ptr_array_new_with_free_func(g_free);
    g->at = g_hash_table_new(point_hash, point_equal);
    g_ptr_array_add(t->groups, g);
    return g;
}

static int cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void group_axes(Group *g)
{
    for (guint d = 0; d < g->ndims; d++) {
        if (g->axis[d])
            g_array_unref(g->axis[d]);
        GArray *a = g_array_new(FALSE, FALSE, sizeof(double));
        for (guint i = 0; i < g->points->len; i++)
            g_array_append_val(a, ((Point *)g_ptr_array_index(g->points, i))->c[d]);
        g_array_sort(a, cmp_double);
        guint w = 0;
        for (guint i = 0; i < a->len; i++)
            if (w == 0 || g_array_index(a, double, i) != g_array_index(a, double, w - 1))
                g_array_index(a, double, w++) = g_array_index(a, double, i);
        g_array_set_size(a, w);
        g->axis[d] = a;
    }
}

/* Adds a valid row: a point of the same raw key (an earlier file's) is replaced; one of the
 * same canonical coordinates but another raw key is the same problem: times averaged. */
static void table_add(ModelKernelTable *t, const Row *r)
{
    Group *g = group_get(t, &r->key);
    Point probe = {.key = r->key};
    canon(&r->key, probe.c);
    Point *p = g_hash_table_lookup(g->at, &probe);
    if (p) {
        if (memcmp(p->key.dim, r->key.dim, sizeof p->key.dim) == 0) {
            p->ns = r->ns;
            p->n = 1;
        } else {
            p->ns = (p->ns * p->n + r->ns) / (p->n + 1);
            p->n++;
        }
        return;
    }
    p = g_new(Point, 1);
    *p = probe;
    p->ns = r->ns;
    p->n = 1;
    g_ptr_array_add(g->points, p);
    g_hash_table_add(g->at, p);
    t->size++;
}

/* ---- public ------------------------------------------------------------------------------ */

ModelKernelTable *model_kernel_table_new(const char *device)
{
    ModelKernelTable *t = g_new0(ModelKernelTable, 1);
    t->device = g_strdup(device);
    t->groups = g_ptr_array_new_with_free_func(group_free);
    return t;
}

void model_kernel_table_free(ModelKernelTable *t)
{
    if (!t)
        return;
    g_ptr_array_unref(t->groups);
    g_free(t->device);
    g_free(t);
}

guint model_kernel_table_size(const ModelKernelTable *t)
{
    return t ? t->size : 0;
}

/* nccl-tests' output: its banner line, its test line, or its table's column header, at the
 * start of a line (a CSV's comments may mention nccl-tests, never start a line so). */
static bool is_nccl_tests(GStrv lines)
{
    for (guint i = 0; lines[i]; i++) {
        const char *t = lines[i];
        while (*t == ' ' || *t == '\t')
            t++;
        if (g_str_has_prefix(t, "# nThread ") ||
            g_str_has_prefix(t, "# Collective test starting:") ||
            g_regex_match_simple("^#\\s+size\\s+count\\s+type", t, 0, 0))
            return true;
    }
    return false;
}

bool model_kernel_table_load(ModelKernelTable *t, const char *data, gsize len, const char *display,
                             GError **error)
{
    g_return_val_if_fail(t != NULL && display != NULL, false);
    g_return_val_if_fail(data != NULL || len == 0, false);
    if (len && memchr(data, '\0', len)) {
        g_set_error(error, MODEL_KERNEL_TABLE_ERROR, MODEL_KERNEL_TABLE_ERROR_PARSE,
                    "%s: contains a NUL byte; expected a text table", display);
        return false;
    }
    g_autofree char *text = g_strndup(data ? data : "", len);
    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(Row));
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    Load ld = {.display = display, .device = t->device, .rows = rows, .seen = seen};
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    bool nccl = is_nccl_tests(lines);
    if (!(nccl ? load_nccl_tests(&ld, lines, error) : load_csv(&ld, lines, error)))
        return false;
    for (guint i = 0; i < rows->len; i++)
        table_add(t, &g_array_index(rows, Row, i));
    for (guint i = 0; i < t->groups->len; i++)
        group_axes(g_ptr_array_index(t->groups, i));
    return true;
}

/* ---- lookup ------------------------------------------------------------------------------ */

static bool same(double a, double b)
{
    return fabs(a - b) <= SAME_TOL * fmax(1.0, fabs(b));
}

/* Where `q` falls on `axis`: *lo, *hi (equal on a grid value) and the fraction in log(1 + x);
 * false outside the axis' range. */
static bool bracket(const GArray *axis, double q, guint *lo, guint *hi, double *f)
{
    const double *a = (const double *)(const void *)axis->data;
    guint n = axis->len;
    guint l = 0, h = n; /* first index with a[i] >= q */
    while (l < h) {
        guint m = l + (h - l) / 2;
        if (a[m] < q)
            l = m + 1;
        else
            h = m;
    }
    if (l < n && same(q, a[l])) {
        *lo = *hi = l;
        *f = 0;
        return true;
    }
    if (l > 0 && same(q, a[l - 1])) {
        *lo = *hi = l - 1;
        *f = 0;
        return true;
    }
    if (l == 0 || l == n)
        return false;
    *lo = l - 1;
    *hi = l;
    *f = (log1p(q) - log1p(a[l - 1])) / (log1p(a[l]) - log1p(a[l - 1]));
    return true;
}

static bool not_covered(ModelKernelTableHit *hit, const char *why)
{
    hit->covered = false;
    hit->why = why;
    return false;
}

bool model_kernel_table_lookup(const ModelKernelTable *t, const ModelKernelKey *key,
                               double query_ns, ModelKernelAnalyticFn analytic, const void *user,
                               double *ns, ModelKernelTableHit *hit)
{
    ModelKernelTableHit local;
    if (!hit)
        hit = &local;
    *hit = (ModelKernelTableHit){0};
    if (!t || !key || key->kind == MODEL_KERNEL_NONE || key->kind >= MODEL_KERNEL_KIND_COUNT)
        return not_covered(hit, "not a kernel a table can hold");
    if (key->kind == MODEL_KERNEL_MOE && !(key->dim[MODEL_KEY_MOE_TOKENS] > 0))
        return not_covered(hit, "the MoE layer's tokens are not known");
    const Group *g = group_find(t, key);
    if (!g)
        return not_covered(hit, "no measured point of this kind, dtype and mode");
    double q[MODEL_KERNEL_KEY_DIMS];
    canon(key, q);
    guint lo[MODEL_KERNEL_KEY_DIMS], hi[MODEL_KERNEL_KEY_DIMS], frac[MODEL_KERNEL_KEY_DIMS];
    double f[MODEL_KERNEL_KEY_DIMS];
    guint nfrac = 0;
    for (guint d = 0; d < g->ndims; d++) {
        if (!bracket(g->axis[d], q[d], &lo[d], &hi[d], &f[d]))
            return not_covered(hit, "outside the table's range");
        if (lo[d] != hi[d])
            frac[nfrac++] = d;
    }
    /* the cell's corners, their weights and ratios */
    const Point *corner[MAX_CORNERS];
    double weight[MAX_CORNERS];
    guint ncorner = 1u << nfrac;
    for (guint m = 0; m < ncorner; m++) {
        Point probe = {.n = 0};
        double w = 1;
        for (guint d = 0; d < g->ndims; d++)
            probe.c[d] = g_array_index(g->axis[d], double, lo[d]);
        for (guint i = 0; i < nfrac; i++) {
            guint d = frac[i];
            bool up = (m >> i) & 1u;
            probe.c[d] = g_array_index(g->axis[d], double, up ? hi[d] : lo[d]);
            w *= up ? f[d] : 1 - f[d];
        }
        corner[m] = g_hash_table_lookup(g->at, &probe);
        if (!corner[m])
            return not_covered(hit, "no measured cell around it");
        weight[m] = w;
    }
    /* utilization space when every corner and the query have an analytic time */
    double a[MAX_CORNERS];
    bool ratios = analytic != NULL && query_ns > 0;
    for (guint m = 0; ratios && m < ncorner; m++)
        ratios = analytic(&corner[m]->key, user, &a[m]) && a[m] > 0;
    double sum = 0;
    for (guint m = 0; m < ncorner; m++)
        sum += weight[m] * (ratios ? corner[m]->ns / a[m] : corner[m]->ns);
    *ns = ratios ? sum * query_ns : sum;
    hit->covered = true;
    hit->exact = nfrac == 0;
    hit->corners = ncorner;
    return true;
}

void model_kernel_key_complete(ModelKernelKey *key, uint64_t rows)
{
    if (key->kind != MODEL_KERNEL_MOE || key->dim[MODEL_KEY_MOE_TOKENS] > 0 || rows == 0)
        return;
    key->dim[MODEL_KEY_MOE_TOKENS] = (double)rows;
    key->dim[MODEL_KEY_MOE_TOPK] = key->dim[MODEL_KEY_MOE_ROUTES] / (double)rows;
}

bool model_kernel_key_analytic(const ModelKernelKey *key, const void *user, double *ns)
{
    const NetHardware *hw = user;
    switch (key->kind) {
    case MODEL_KERNEL_GEMM: {
        ModelGemmShape s = {.m = (uint64_t)key->dim[MODEL_KEY_GEMM_M],
                            .n = (uint64_t)key->dim[MODEL_KEY_GEMM_N],
                            .k = (uint64_t)key->dim[MODEL_KEY_GEMM_K]};
        if (!model_gemm_dtype_parse(key->word[MODEL_KEY_GEMM_DTYPE], &s.dtype))
            s.dtype = MODEL_GEMM_BF16;
        *ns = model_gemm_time(hw, &s).ns;
        if (key->eager)
            *ns = fmax(*ns, model_gemm_host_ns(&s));
        return true;
    }
    case MODEL_KERNEL_MOE: {
        ModelMoeShape s = {
            .tokens = (uint64_t)key->dim[MODEL_KEY_MOE_TOKENS],
            .hidden = (uint32_t)key->dim[MODEL_KEY_MOE_HIDDEN],
            .inter = (uint32_t)key->dim[MODEL_KEY_MOE_INTER],
            .topk = (uint32_t)key->dim[MODEL_KEY_MOE_TOPK],
            .experts = (uint32_t)key->dim[MODEL_KEY_MOE_EXPERTS],
            .tp = (uint32_t)MAX(key->dim[MODEL_KEY_MOE_TP], 1),
            .ep = (uint32_t)MAX(key->dim[MODEL_KEY_MOE_EP], 1),
        };
        if (!model_gemm_dtype_parse(key->word[MODEL_KEY_MOE_DTYPE], &s.dtype))
            s.dtype = MODEL_GEMM_BF16;
        (void)model_moe_routing_parse(key->word[MODEL_KEY_MOE_DIST], &s.routing); /* else even */
        *ns = model_moe_time(hw, &s).ns;
        return true;
    }
    case MODEL_KERNEL_ATTENTION: {
        /* a uniform batch, as the tables measure it: warm L2 (one layer replayed), paged K/V */
        bool decode = key->word[MODEL_KEY_ATTN_PHASE] &&
                      strcmp(key->word[MODEL_KEY_ATTN_PHASE], "decode") == 0;
        const char *kv = key->word[MODEL_KEY_ATTN_KV_DTYPE];
        ModelAttnShape s = {
            .heads = (uint32_t)key->dim[MODEL_KEY_ATTN_HEADS],
            .kv_heads = (uint32_t)MAX(key->dim[MODEL_KEY_ATTN_KV_HEADS], 1),
            .head_dim = (uint32_t)key->dim[MODEL_KEY_ATTN_HEAD_DIM],
            .causal = key->dim[MODEL_KEY_ATTN_CAUSAL] != 0,
            .window = (uint32_t)key->dim[MODEL_KEY_ATTN_WINDOW],
            .kv_bytes = kv && strcmp(kv, "fp8") == 0 ? 1 : 2,
            .warm_l2 = true,
        };
        double ctx = key->dim[MODEL_KEY_ATTN_CONTEXT], len = key->dim[MODEL_KEY_ATTN_SEQLEN];
        uint32_t q_len = decode ? 1 : (uint32_t)len;
        uint32_t kv_len = (uint32_t)(decode ? ctx : ctx + len);
        *ns = model_attn_time_uniform(hw, &s, (uint32_t)key->dim[MODEL_KEY_ATTN_BATCH], q_len,
                                      kv_len)
                  .ns;
        return true;
    }
    default:
        return false;
    }
}
