/* src/scenario.c — the scenario loader: YAML text -> Scenario. The format is described key by
 * key in doc/scenario-format.md.
 *
 * Pipeline: src/yamldoc parses the text into an owned tree carrying 1-based line numbers
 * (rejecting aliases, duplicate keys and non-scalar keys on the way); the --set overrides edit
 * that tree; then the tree is interpreted top-down in one of three ways:
 *   - kind: program — ranks, groups and per-rank op lists written out;
 *   - kind: model (the default) — `model:` -> ModelArch, `parallel:` -> ModelPlan (vLLM's
 *     rules), hardware and nodes for the plan's world, `engine:` -> ModelEngine + ModelCost,
 *     `workload:` (or --prefill/--decode) -> ModelWorkload, then model_lower() builds the program
 *     and model_layout_check() its findings;
 *   - a vLLM eval config (top-level `model_name`) — model_name -> a preset, server_args (vLLM
 *     flags, shell-split) -> parallel and engine settings, then as kind: model.
 * Faults and the other run settings come last, so fault op names are checked against the
 * program that will run; sched_program_validate() runs at the very end as a safety net.
 * `hardware:` goes through src/hardware (presets, hardware files, overrides).
 *
 * Errors: the first problem found ends loading with exactly one GError in SCENARIO_ERROR whose
 * message is one line, "FILE:LINE: key 'KEY': problem; what would be valid" (or
 * "FILE: --set PATH: key 'KEY': ..." for values that came from an override, "FILE: --prefill
 * N: ..." for command-line extras). Errors from the model layer (MODEL_ARCH_ERROR,
 * MODEL_PLAN_ERROR, MODEL_COST_ERROR, MODEL_LOWER_ERROR) are wrapped with the location of the
 * key they came from. Every helper that can fail returns false after setting the error, and
 * callers return at once, so an error is never set twice.
 *
 * Costs: O(text) to parse and copy; O(ranks) memory for rank bookkeeping; group membership of
 * each rank-set key is checked once per (key, group), O(set size x log group size). A model
 * scenario adds the lowering (model/lower.h states its costs).
 */
#include "scenario.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "hardware.h"
#include "yamldoc.h"

G_DEFINE_QUARK(ranksim - scenario - error - quark, scenario_error)

/* ---- limits (doc/scenario-format.md lists them) ---- */

#define MAX_RANKS 1048576u
#define MAX_COUNT (UINT64_C(1) << 48)         /* elements; also tokens */
#define MAX_US 1e12                           /* compute duration, microseconds */
#define MAX_SECONDS 1e9                       /* timeouts, delays, crash times */
#define MAX_TIMES 10000000                    /* repeat iterations */
#define MAX_LAYER (INT64_C(1) << 30)          /* layer, layer_start */
#define MAX_FACTOR 1e6                        /* slowdown factor, link fault factor */
#define MAX_GROUP_MEMBERS (UINT64_C(1) << 24) /* summed over all groups */
#define MAX_SEQ_LEN 10000000                  /* prompt and context lengths; engine token limits */
#define MAX_BATCH_SEQS 1048576                /* sequences in one batch; max_num_seqs */
#define MAX_STEPS 1000000                     /* workload steps */
#define MAX_LAUNCH_US 1e6                     /* engine.launch_us */

/* ---- loader state ---- */

typedef struct {
    YamlDoc doc;                  /* file name and the load's error */
    const char *path;             /* the scenario's path, for files relative to it */
    const ScenarioExtras *extras; /* command-line additions; never NULL (may be all empty) */
    SchedProgram *prog;           /* being built; NULL until `ranks` is known */
    uint32_t n_ranks;
    uint32_t *stamp; /* per rank, for duplicate detection; compared with stamp_gen */
    uint32_t stamp_gen;
} Loader;

/* Every top-level key of either kind, for whole-file messages ("the file is empty; ..."). */
static const char *const top_keys[] = {
    "name",
    "kind",
    "description",
    "model",
    "parallel",
    "engine",
    "workload",
    "ranks",
    "groups",
    "programs",
    "hardware",
    "nodes",
    "collective_algorithm",
    "contention",
    "on_mismatch",
    "watchdog",
    "faults",
    "straggler_threshold_s",
    NULL,
};

static const char *const program_keys[] = {
    "name",
    "kind",
    "description",
    "ranks",
    "groups",
    "programs",
    "hardware",
    "nodes",
    "collective_algorithm",
    "contention",
    "on_mismatch",
    "watchdog",
    "faults",
    "straggler_threshold_s",
    NULL,
};

static const char *const model_keys[] = {
    "name",       "kind",        "description", "model",  "parallel",
    "engine",     "workload",    "hardware",    "nodes",  "collective_algorithm",
    "contention", "on_mismatch", "watchdog",    "faults", "straggler_threshold_s",
    NULL,
};

/* Keys of one kind only, reported as such in a file of the other kind. */
static const char *const program_only_keys[] = {"ranks", "groups", "programs", NULL};
static const char *const model_only_keys[] = {"model", "parallel", "engine", "workload", NULL};

static bool in_list(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* ---- command-line extras and notes ---- */

/* Sets the load's error "FILE: WHAT: MESSAGE" for a problem with a command-line extra, which
 * has no line; WHAT names the flag ("--hardware h1000"). Always returns false. */
static bool extras_fail(Loader *ld, int code, const char *what, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static bool extras_fail(Loader *ld, int code, const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(ld->doc.error, SCENARIO_ERROR, code, "%s: %s: %s", ld->doc.file, what, msg);
    return false;
}

/* Records a setting that was given but is not simulated (Scenario.ignored_flags). */
static void note_ignored(Scenario *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void note_ignored(Scenario *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_ptr_array_add(s->ignored_flags, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

static bool extras_have_workload(const ScenarioExtras *x)
{
    return (x->prefill && x->prefill->len) || (x->decode && x->decode->len);
}

/* ---- rank sets ---- */

static const char rank_set_forms[] = "a rank set such as 3, 0-7, 0,2,4, 0-3,8-11 or \"*\"";

/* Parses "3", "0-7", "0,2,4", "0-3,8-11" into `out` (int32, in the order written). "*" sets
 * *star and leaves `out` empty when allow_star; otherwise it is an error. A rank written twice
 * is an error. */
static bool parse_rank_set(Loader *ld, const YamlDocNode *at, const char *key, const char *text,
                           bool allow_star, bool *star, GArray *out)
{
    *star = false;
    g_autofree char *s = g_strstrip(g_strdup(text));
    if (strcmp(s, "*") == 0) {
        if (!allow_star)
            return yamldoc_fail(&ld->doc, at, key, "\"*\" is not allowed here; valid: %s",
                                rank_set_forms);
        *star = true;
        return true;
    }
    uint32_t gen = ++ld->stamp_gen;
    const char *p = s;
    for (;;) {
        int64_t lo = 0, hi = 0;
        for (int k = 0; k < 2; k++) {
            while (*p == ' ')
                p++;
            if (!g_ascii_isdigit(*p))
                return yamldoc_fail(&ld->doc, at, key, "'%s' is not a rank set; valid: %s", text,
                                    rank_set_forms);
            const char *digits = p;
            int64_t v = 0;
            for (; g_ascii_isdigit(*p); p++)
                if (v <= (int64_t)MAX_RANKS * 10)
                    v = v * 10 + (*p - '0');
            if (v >= ld->n_ranks) {
                g_autofree char *shown = g_strndup(digits, MIN((gsize)(p - digits), 40));
                return yamldoc_fail(&ld->doc, at, key,
                                    "rank %s is out of range; valid: 0..%u (ranks: %u)", shown,
                                    ld->n_ranks - 1, ld->n_ranks);
            }
            while (*p == ' ')
                p++;
            if (k == 0) {
                lo = hi = v;
                if (*p != '-')
                    break;
                p++;
            } else {
                hi = v;
            }
        }
        if (hi < lo)
            return yamldoc_fail(&ld->doc, at, key,
                                "range %" G_GINT64_FORMAT "-%" G_GINT64_FORMAT
                                " runs backwards; write it as %" G_GINT64_FORMAT
                                "-%" G_GINT64_FORMAT,
                                lo, hi, hi, lo);
        for (int64_t r = lo; r <= hi; r++) {
            if (ld->stamp[r] == gen)
                return yamldoc_fail(&ld->doc, at, key,
                                    "rank %" G_GINT64_FORMAT " appears twice in '%s'; "
                                    "list each rank once",
                                    r, text);
            ld->stamp[r] = gen;
            int32_t v32 = (int32_t)r;
            g_array_append_val(out, v32);
        }
        if (*p == '\0')
            return true;
        if (*p != ',')
            return yamldoc_fail(&ld->doc, at, key, "'%s' is not a rank set; valid: %s", text,
                                rank_set_forms);
        p++;
    }
}

/* ---- groups ---- */

static bool load_groups(Loader *ld, const YamlDocNode *groups)
{
    const char *valid = "a mapping of group name -> list of ranks or rank set, e.g. "
                        "{tp0: [0, 1], dp: \"0-7\"}";
    if (!yamldoc_expect_map(&ld->doc, groups, "groups", valid))
        return false;
    uint64_t total = 0;
    for (uint32_t i = 0; i < yamldoc_map_len(groups); i++) {
        const YamlDocNode *k = yamldoc_map_key(groups, i), *v = yamldoc_map_value(groups, i);
        const char *name = k->text;
        if (name[0] == '\0' || yamldoc_is_null(k))
            return yamldoc_fail(&ld->doc, k, name, "empty group name; give the group a name");
        g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(int32_t));
        if (v->type == YAMLDOC_SEQ) {
            uint32_t gen = ++ld->stamp_gen;
            for (guint j = 0; j < v->items->len; j++) {
                const YamlDocNode *item = g_ptr_array_index(v->items, j);
                int64_t r = 0;
                if (!yamldoc_get_int(&ld->doc, item, name, 0, ld->n_ranks - 1, &r))
                    return false;
                if (ld->stamp[r] == gen)
                    return yamldoc_fail(&ld->doc, item, name,
                                        "duplicate member %" G_GINT64_FORMAT
                                        " in group '%s'; list each rank once",
                                        r, name);
                ld->stamp[r] = gen;
                int32_t r32 = (int32_t)r;
                g_array_append_val(members, r32);
            }
        } else if (v->type == YAMLDOC_SCALAR && !yamldoc_is_null(v)) {
            bool star = false;
            if (!parse_rank_set(ld, v, name, v->text, true, &star, members))
                return false;
            if (star)
                for (int32_t r = 0; r < (int32_t)ld->n_ranks; r++)
                    g_array_append_val(members, r);
        } else {
            g_autofree char *got = yamldoc_describe(v);
            return yamldoc_fail(&ld->doc, v, name,
                                "expected a list of ranks or a rank-set string, got %s; "
                                "valid: [0, 1, 2] or \"0-7\"",
                                got);
        }
        if (members->len == 0)
            return yamldoc_fail(&ld->doc, v, name,
                                "group '%s' is empty; a group needs at least one rank", name);
        total += members->len;
        if (total > MAX_GROUP_MEMBERS)
            return yamldoc_fail(&ld->doc, v, name,
                                "groups hold more than %" G_GUINT64_FORMAT
                                " members in total; that is the limit",
                                MAX_GROUP_MEMBERS);
        sched_program_add_group(ld->prog, name, (const int32_t *)(void *)members->data,
                                members->len);
    }
    return true;
}

/* ---- ops ---- */

/* Ranks a program key applies to, and which groups were already checked for them. */
typedef struct {
    const char *key; /* the programs key, for messages */
    const int32_t *ranks;
    uint32_t n;
    uint8_t *group_checked; /* per group id */
} KeyCtx;

static const char *const dtype_names_list[] = {"bf16", "fp16",  "fp32", "fp8",
                                               "int8", "int32", NULL};
static const char *const op_names_list[] = {
    "compute", "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast",
    "barrier", "send",       "recv",           "repeat",     NULL,
};

static const char *const keys_compute[] = {"op", "name", "us", "tokens", "layer", NULL};
static const char *const keys_coll[] = {"op",   "group",  "count", "dtype",
                                        "name", "tokens", "layer", NULL};
static const char *const keys_bcast[] = {"op",   "group",  "count", "dtype", "root",
                                         "name", "tokens", "layer", NULL};
static const char *const keys_p2p[] = {"op",   "peer",   "count", "dtype",
                                       "name", "tokens", "layer", NULL};
static const char *const keys_repeat[] = {"op", "times", "ops", "layer_start", NULL};
static const char *const keys_any_op[] = {"op",    "name",  "us",          "tokens", "layer",
                                          "group", "count", "dtype",       "root",   "peer",
                                          "times", "ops",   "layer_start", NULL};

static const char *const *op_keys(SchedOpKind k)
{
    if (k == SCHED_OP_COMPUTE)
        return keys_compute;
    if (k == SCHED_OP_BROADCAST)
        return keys_bcast;
    if (sched_op_is_collective(k))
        return keys_coll;
    if (sched_op_is_p2p(k))
        return keys_p2p;
    return keys_repeat;
}

/* Names of the groups containing `rank`, comma-separated. Caller frees. */
static char *groups_of_rank(const SchedProgram *p, int32_t rank)
{
    GString *s = g_string_new(NULL);
    for (guint g = 0; g < p->groups->len; g++) {
        const SchedGroup *grp = sched_program_group(p, (int32_t)g);
        if (sched_group_index_of(grp, rank) >= 0) {
            if (s->len)
                g_string_append(s, ", ");
            g_string_append(s, grp->name);
        }
    }
    if (!s->len)
        g_string_append(s, "none");
    return g_string_free(s, FALSE);
}

static char *group_members_text(const SchedGroup *g)
{
    return sched_format_ranks(g->sorted, g->n);
}

static bool op_group(Loader *ld, const YamlDocNode *n, KeyCtx *kc, int32_t *out)
{
    const char *name = NULL;
    if (!yamldoc_get_string(&ld->doc, n, "group", "the name of a group under groups:", &name))
        return false;
    SchedProgram *p = ld->prog;
    int32_t g = sched_program_find_group(p, name);
    if (g < 0) {
        if (p->groups->len == 0)
            return yamldoc_fail(&ld->doc, n, "group",
                                "no group named '%s'; no groups are defined, add "
                                "groups: {%s: [RANKS]}",
                                name, name);
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        for (guint i = 0; i < p->groups->len && i < 64; i++)
            g_ptr_array_add(names, sched_program_group(p, (int32_t)i)->name);
        g_ptr_array_add(names, NULL);
        g_autofree char *hint = yamldoc_suggestion(name, (const char *const *)names->pdata);
        return yamldoc_fail(&ld->doc, n, "group", "no group named '%s'; %s%s", name, hint,
                            p->groups->len > 64 ? " (first 64 shown)" : "");
    }
    if (!kc->group_checked[g]) {
        const SchedGroup *grp = sched_program_group(p, g);
        for (uint32_t i = 0; i < kc->n; i++) {
            if (sched_group_index_of(grp, kc->ranks[i]) < 0) {
                g_autofree char *members = group_members_text(grp);
                g_autofree char *mine = groups_of_rank(p, kc->ranks[i]);
                return yamldoc_fail(&ld->doc, n, "group",
                                    "rank %d (programs key '%s') is not a member of "
                                    "group '%s' (members %s); valid groups for rank %d: %s",
                                    kc->ranks[i], kc->key, name, members, kc->ranks[i], mine);
            }
        }
        kc->group_checked[g] = 1;
    }
    *out = g;
    return true;
}

static bool op_dtype(Loader *ld, const YamlDocNode *m, SchedDtype *out)
{
    *out = SCHED_DTYPE_BF16;
    const YamlDocNode *n = yamldoc_map_get(m, "dtype");
    if (!n)
        return true;
    int i = 0;
    if (!yamldoc_get_enum(&ld->doc, n, "dtype", dtype_names_list, &i))
        return false;
    if (!sched_dtype_parse(dtype_names_list[i], out))
        g_assert_not_reached(); /* the two name tables disagree */
    return true;
}

static bool op_u64(Loader *ld, const YamlDocNode *m, const char *key, bool required, uint64_t max,
                   const char *what, uint64_t *out)
{
    const YamlDocNode *n = yamldoc_map_get(m, key);
    if (!n) {
        if (required)
            return yamldoc_fail(&ld->doc, m, key,
                                "missing; %s needs %s: a number in 0..%" G_GUINT64_FORMAT, what,
                                key, max);
        return true;
    }
    int64_t v = 0;
    if (!yamldoc_get_int(&ld->doc, n, key, 0, (int64_t)max, &v))
        return false;
    *out = (uint64_t)v;
    return true;
}

static bool op_name_of(Loader *ld, const YamlDocNode *m, const char *dflt, uint32_t *out)
{
    const char *name = dflt;
    const YamlDocNode *n = yamldoc_map_get(m, "name");
    if (n && !yamldoc_get_string(&ld->doc, n, "name", "a name for the op, e.g. attn_fwd", &name))
        return false;
    if (!name)
        return yamldoc_fail(&ld->doc, m, "name", "missing; a compute op needs name: NAME");
    *out = sched_program_name(ld->prog, name);
    return true;
}

static bool build_ops(Loader *ld, const YamlDocNode *list, const char *list_key, KeyCtx *kc,
                      int depth, GArray *out);

static bool build_op(Loader *ld, const YamlDocNode *m, KeyCtx *kc, int depth, GArray *out)
{
    const char *op_valid = "one of compute, all_reduce, reduce_scatter, all_gather, all_to_all, "
                           "broadcast, barrier, send, recv, repeat";
    if (m->type != YAMLDOC_MAP) {
        g_autofree char *got = yamldoc_describe(m);
        return yamldoc_fail(&ld->doc, m, kc->key,
                            "an op must be a mapping such as {op: all_gather, group: "
                            "tp, count: 1024}, got %s",
                            got);
    }
    const YamlDocNode *opn = yamldoc_map_get(m, "op");
    if (!opn)
        return yamldoc_fail(&ld->doc, m, "op", "missing; every op needs op: %s", op_valid);
    int ki = 0;
    if (!yamldoc_get_enum(&ld->doc, opn, "op", op_names_list, &ki))
        return false;
    SchedOpKind kind = SCHED_OP_COMPUTE;
    if (!sched_op_kind_parse(op_names_list[ki], &kind))
        g_assert_not_reached(); /* the two name tables disagree */
    g_autofree char *context = g_strdup_printf("op %s", op_names_list[ki]);
    if (!yamldoc_check_keys(&ld->doc, m, op_keys(kind), keys_any_op, context))
        return false;

    uint64_t tokens = 0, layer = UINT64_MAX;
    if (kind != SCHED_OP_REPEAT) {
        if (!op_u64(ld, m, "tokens", false, MAX_COUNT, context, &tokens) ||
            !op_u64(ld, m, "layer", false, (uint64_t)MAX_LAYER, context, &layer))
            return false;
    }

    SchedOp op;
    if (kind == SCHED_OP_COMPUTE) {
        uint32_t name = 0;
        if (!op_name_of(ld, m, NULL, &name))
            return false;
        const YamlDocNode *us = yamldoc_map_get(m, "us");
        if (!us)
            return yamldoc_fail(&ld->doc, m, "us",
                                "missing; a compute op needs us: DURATION in "
                                "microseconds (0..1e12)");
        double d = 0;
        if (!yamldoc_get_number(&ld->doc, us, "us", 0, false, MAX_US, "microseconds", &d))
            return false;
        op = sched_op_compute(name, (int64_t)llround(d * 1000.0), tokens);
    } else if (sched_op_is_collective(kind)) {
        const YamlDocNode *gn = yamldoc_map_get(m, "group");
        if (!gn)
            return yamldoc_fail(&ld->doc, m, "group",
                                "missing; %s needs group: NAME (a key of groups:)", context);
        int32_t g = -1;
        uint64_t count = 0;
        SchedDtype dt = SCHED_DTYPE_BF16;
        uint32_t name = 0;
        if (!op_group(ld, gn, kc, &g) ||
            !op_u64(ld, m, "count", kind != SCHED_OP_BARRIER, MAX_COUNT, context, &count) ||
            !op_dtype(ld, m, &dt) || !op_name_of(ld, m, op_names_list[ki], &name))
            return false;
        op = sched_op_collective(kind, name, g, count, dt);
        op.tokens = tokens;
        if (kind == SCHED_OP_BROADCAST) {
            const YamlDocNode *rn = yamldoc_map_get(m, "root");
            if (!rn)
                return yamldoc_fail(&ld->doc, m, "root",
                                    "missing; broadcast needs root: RANK (a member of "
                                    "its group)");
            int64_t root = 0;
            if (!yamldoc_get_int(&ld->doc, rn, "root", 0, ld->n_ranks - 1, &root))
                return false;
            const SchedGroup *grp = sched_program_group(ld->prog, g);
            if (sched_group_index_of(grp, (int32_t)root) < 0) {
                g_autofree char *members = group_members_text(grp);
                return yamldoc_fail(&ld->doc, rn, "root",
                                    "root %" G_GINT64_FORMAT " is not a member of group "
                                    "'%s'; valid: one of %s",
                                    root, grp->name, members);
            }
            op.root = (int32_t)root;
        }
    } else if (sched_op_is_p2p(kind)) {
        const YamlDocNode *pn = yamldoc_map_get(m, "peer");
        if (!pn)
            return yamldoc_fail(&ld->doc, m, "peer", "missing; %s needs peer: RANK (another rank)",
                                context);
        int64_t peer = 0;
        if (!yamldoc_get_int(&ld->doc, pn, "peer", 0, ld->n_ranks - 1, &peer))
            return false;
        for (uint32_t i = 0; i < kc->n; i++)
            if (kc->ranks[i] == peer)
                return yamldoc_fail(&ld->doc, pn, "peer",
                                    "rank %" G_GINT64_FORMAT " (programs key '%s') "
                                    "cannot be its own peer; valid: another rank in 0..%u",
                                    peer, kc->key, ld->n_ranks - 1);
        uint64_t count = 0;
        SchedDtype dt = SCHED_DTYPE_BF16;
        uint32_t name = 0;
        if (!op_u64(ld, m, "count", true, MAX_COUNT, context, &count) || !op_dtype(ld, m, &dt) ||
            !op_name_of(ld, m, op_names_list[ki], &name))
            return false;
        op = sched_op_p2p(kind, name, (int32_t)peer, count, dt);
        op.tokens = tokens;
    } else {
        /* repeat: header, then the body; body_len is known once the body is built. */
        const YamlDocNode *tn = yamldoc_map_get(m, "times");
        if (!tn)
            return yamldoc_fail(&ld->doc, m, "times", "missing; repeat needs times: N (0..%d)",
                                MAX_TIMES);
        int64_t times = 0;
        if (!yamldoc_get_int(&ld->doc, tn, "times", 0, MAX_TIMES, &times))
            return false;
        int64_t layer_start = depth == 0 ? 0 : -1;
        const YamlDocNode *ls = yamldoc_map_get(m, "layer_start");
        if (ls && !yamldoc_get_int(&ld->doc, ls, "layer_start", 0, MAX_LAYER, &layer_start))
            return false;
        if (depth + 1 > SCHED_MAX_REPEAT_DEPTH)
            return yamldoc_fail(&ld->doc, opn, "op",
                                "repeats nest deeper than %d levels; valid: at most %d "
                                "nested repeats",
                                SCHED_MAX_REPEAT_DEPTH, SCHED_MAX_REPEAT_DEPTH);
        const YamlDocNode *body = yamldoc_map_get(m, "ops");
        if (!body)
            return yamldoc_fail(&ld->doc, m, "ops",
                                "missing; repeat needs ops: [OPS...] (a non-empty list)");
        if (!yamldoc_expect_seq(&ld->doc, body, "ops", "a non-empty list of ops"))
            return false;
        if (body->items->len == 0)
            return yamldoc_fail(&ld->doc, body, "ops",
                                "empty list; repeat needs at least one op in ops:");
        guint hdr = out->len;
        op = sched_op_repeat((uint32_t)times, 0, (int32_t)layer_start);
        g_array_append_val(out, op);
        if (!build_ops(ld, body, "ops", kc, depth + 1, out))
            return false;
        if (out->len - hdr - 1 > UINT32_MAX)
            return yamldoc_fail(&ld->doc, body, "ops", "repeat body too long");
        g_array_index(out, SchedOp, hdr).body_len = (uint32_t)(out->len - hdr - 1);
        return true;
    }
    if (layer != UINT64_MAX)
        op.layer = (int32_t)layer;
    g_array_append_val(out, op);
    return true;
}

static bool build_ops(Loader *ld, const YamlDocNode *list, const char *list_key, KeyCtx *kc,
                      int depth, GArray *out)
{
    if (!yamldoc_expect_seq(&ld->doc, list, list_key,
                            "a list of ops, e.g. [{op: compute, name: fwd, us: 100}]"))
        return false;
    for (guint i = 0; i < list->items->len; i++)
        if (!build_op(ld, g_ptr_array_index(list->items, i), kc, depth, out))
            return false;
    return true;
}

/* `pkey` is the `programs` key node, where errors about the whole mapping point. */
static bool load_programs(Loader *ld, const YamlDocNode *pkey, const YamlDocNode *programs)
{
    if (!yamldoc_expect_map(&ld->doc, programs, "programs",
                            "a mapping of rank set -> op list, e.g. {\"0-7\": [...]}"))
        return false;
    SchedProgram *p = ld->prog;
    g_autofree int32_t *owner = g_new(int32_t, ld->n_ranks); /* programs key index per rank */
    for (uint32_t r = 0; r < ld->n_ranks; r++)
        owner[r] = -1;
    g_autofree uint8_t *checked = g_new0(uint8_t, p->groups->len + 1);
    int star = -1;
    g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    /* First pass: every key's rank set, so "*" can take what the others leave. */
    for (uint32_t i = 0; i < yamldoc_map_len(programs); i++) {
        const YamlDocNode *k = yamldoc_map_key(programs, i);
        GArray *set = g_array_new(FALSE, FALSE, sizeof(int32_t));
        g_ptr_array_add(sets, set);
        bool is_star = false;
        if (!parse_rank_set(ld, k, k->text, k->text, true, &is_star, set))
            return false;
        if (is_star) {
            if (star >= 0)
                return yamldoc_fail(&ld->doc, k, k->text,
                                    "a second \"*\" key (first at line %u); use one",
                                    yamldoc_map_key(programs, (uint32_t)star)->line);
            star = (int)i;
            continue;
        }
        for (guint j = 0; j < set->len; j++) {
            int32_t r = g_array_index(set, int32_t, j);
            if (owner[r] >= 0)
                return yamldoc_fail(&ld->doc, k, k->text,
                                    "rank %d already has a program (key '%s' at line "
                                    "%u); give each rank exactly one",
                                    r, yamldoc_map_key(programs, (uint32_t)owner[r])->text,
                                    yamldoc_map_key(programs, (uint32_t)owner[r])->line);
            owner[r] = (int32_t)i;
        }
    }
    if (star >= 0) {
        GArray *set = g_ptr_array_index(sets, (guint)star);
        for (uint32_t r = 0; r < ld->n_ranks; r++)
            if (owner[r] < 0) {
                int32_t r32 = (int32_t)r;
                g_array_append_val(set, r32);
                owner[r] = star;
            }
    } else {
        g_autoptr(GArray) missing = g_array_new(FALSE, FALSE, sizeof(int32_t));
        for (uint32_t r = 0; r < ld->n_ranks; r++)
            if (owner[r] < 0) {
                int32_t r32 = (int32_t)r;
                g_array_append_val(missing, r32);
            }
        if (missing->len) {
            g_autofree char *text =
                sched_format_ranks((const int32_t *)(void *)missing->data, missing->len);
            return yamldoc_fail(&ld->doc, pkey, "programs",
                                "rank%s %s ha%s no program; add a key for "
                                "%s, or \"*\" for all ranks not listed",
                                missing->len > 1 ? "s" : "", text, missing->len > 1 ? "ve" : "s",
                                missing->len > 1 ? "them" : "it");
        }
    }
    /* Second pass: build each key's list once and give it to its ranks. */
    for (uint32_t i = 0; i < yamldoc_map_len(programs); i++) {
        GArray *set = g_ptr_array_index(sets, i);
        if (set->len == 0)
            continue; /* a "*" with nothing left over */
        memset(checked, 0, p->groups->len + 1);
        KeyCtx kc = {yamldoc_map_key(programs, i)->text, (const int32_t *)(void *)set->data,
                     set->len, checked};
        g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(SchedOp));
        if (!build_ops(ld, yamldoc_map_value(programs, i), kc.key, &kc, 0, ops))
            return false;
        if (ops->len > UINT32_MAX)
            return yamldoc_fail(&ld->doc, yamldoc_map_value(programs, i), kc.key,
                                "op list too long");
        uint32_t list = sched_program_set_ops(p, (uint32_t)g_array_index(set, int32_t, 0),
                                              (const SchedOp *)(void *)ops->data, ops->len);
        for (guint j = 1; j < set->len; j++)
            sched_program_share_ops(p, (uint32_t)g_array_index(set, int32_t, j), list);
    }
    return true;
}

/* ---- hardware, nodes, algorithms ---- */

/* A `hardware:` string naming a file rather than a preset: it contains '/' or ends in .yaml or
 * .yml. */
static bool is_hardware_path(const char *s)
{
    return strchr(s, '/') != NULL || g_str_has_suffix(s, ".yaml") || g_str_has_suffix(s, ".yml");
}

/* `p` relative to the scenario's folder (as given when absolute or the folder is "."). */
static char *resolve_path(const Loader *ld, const char *p)
{
    if (g_path_is_absolute(p))
        return g_strdup(p);
    while (p[0] == '.' && p[1] == '/')
        p += 2;
    g_autofree char *dir = g_path_get_dirname(ld->path);
    if (strcmp(dir, ".") == 0)
        return g_strdup(p);
    return g_build_filename(dir, p, NULL);
}

/* A short reason for a failed g_file_get_contents. */
static const char *io_reason(const GError *e)
{
    return e->code == G_FILE_ERROR_NOENT   ? "no such file"
           : e->code == G_FILE_ERROR_ACCES ? "permission denied"
           : e->code == G_FILE_ERROR_ISDIR ? "it is a folder"
                                           : e->message;
}

static bool hardware_base_file(Loader *ld, const YamlDocNode *at, const char *key,
                               const char *given, Scenario *s)
{
    g_autofree char *path = resolve_path(ld, given);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &ioerr)) {
        g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
        return yamldoc_fail_code(&ld->doc, SCENARIO_ERROR_IO, at, key,
                                 "cannot read hardware file '%s': %s; valid: a preset (%s) or "
                                 "the path of a hardware file, relative to the scenario's folder",
                                 path, io_reason(ioerr), presets);
    }
    if (!hardware_load_string(text, (gssize)len, path, &s->hardware, ld->doc.error))
        return false;
    g_free(s->hardware_source);
    s->hardware_source = g_steal_pointer(&path);
    return true;
}

/* Loads a known preset into the scenario and records where the hardware came from. */
static bool use_preset(Loader *ld, const char *name, Scenario *s)
{
    if (!hardware_load_preset(name, &s->hardware, ld->doc.error))
        return false;
    g_free(s->hardware_source);
    s->hardware_source = g_strdup_printf("preset %s", name);
    return true;
}

static bool hardware_base_preset(Loader *ld, const YamlDocNode *at, const char *key,
                                 const char *name, Scenario *s)
{
    if (!hardware_is_preset(name)) {
        g_autofree char *hint = yamldoc_suggestion(name, hardware_preset_names());
        return yamldoc_fail(&ld->doc, at, key,
                            "unknown hardware preset '%s'; %s; or a hardware file's path such as "
                            "./cluster.yaml",
                            name, hint);
    }
    return use_preset(ld, name, s);
}

/* --hardware NAME|PATH from the command line: a preset, or a hardware file relative to the
 * working directory (not to the scenario: the user typed it). */
static bool hardware_from_extras(Loader *ld, const char *given, Scenario *s)
{
    g_autofree char *what = g_strdup_printf("--hardware %s", given);
    g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
    if (is_hardware_path(given)) {
        g_autofree char *text = NULL;
        gsize len = 0;
        g_autoptr(GError) ioerr = NULL;
        if (!g_file_get_contents(given, &text, &len, &ioerr))
            return extras_fail(ld, SCENARIO_ERROR_IO, what,
                               "cannot read hardware file '%s': %s; valid: a preset (%s) or the "
                               "path of a hardware file",
                               given, io_reason(ioerr), presets);
        if (!hardware_load_string(text, (gssize)len, given, &s->hardware, ld->doc.error))
            return false;
        g_free(s->hardware_source);
        s->hardware_source = g_strdup(given);
        return true;
    }
    if (!hardware_is_preset(given)) {
        g_autofree char *hint = yamldoc_suggestion(given, hardware_preset_names());
        return extras_fail(ld, SCENARIO_ERROR_INVALID, what,
                           "unknown hardware preset '%s'; %s; or a hardware file's path such as "
                           "./cluster.yaml",
                           given, hint);
    }
    return use_preset(ld, given, s);
}

/* `hardware:` absent (`hw` NULL): --hardware, else the default preset; a string: a preset or a
 * path; a mapping: `preset:` or `file:` (default preset when neither) plus overrides of
 * hardware keys. A --hardware the file overrides is noted in ignored_flags. */
static bool load_hardware(Loader *ld, const YamlDocNode *hw, Scenario *s)
{
    const char *cli = ld->extras->hardware;
    if (!hw)
        return cli ? hardware_from_extras(ld, cli, s)
                   : hardware_base_preset(ld, NULL, "hardware", HARDWARE_DEFAULT_PRESET, s);
    if (cli)
        note_ignored(s, "--hardware %s (the scenario names hardware:)", cli);
    g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
    g_autofree char *valid = g_strdup_printf(
        "a preset (%s), a hardware file's path, or a mapping {preset: NAME or file: PATH, "
        "hardware keys to override}",
        presets);
    if (hw->type == YAMLDOC_SEQ || yamldoc_is_null(hw)) {
        g_autofree char *got = yamldoc_describe(hw);
        return yamldoc_fail(&ld->doc, hw, "hardware",
                            "expected a string or a mapping, got %s; "
                            "valid: %s",
                            got, valid);
    }
    if (hw->type == YAMLDOC_SCALAR) {
        const char *name = hw->text;
        if (is_hardware_path(name))
            return hardware_base_file(ld, hw, "hardware", name, s);
        return hardware_base_preset(ld, hw, "hardware", name, s);
    }
    static const char *const own[] = {"preset", "file", NULL};
    const YamlDocNode *pn = yamldoc_map_get(hw, "preset"), *fn = yamldoc_map_get(hw, "file");
    if (pn && fn)
        return yamldoc_fail(&ld->doc, yamldoc_map_get_key(hw, "file"), "file",
                            "give either preset or file, not both");
    const char *v = NULL;
    if (fn) {
        if (!yamldoc_get_string(&ld->doc, fn, "file",
                                "a hardware file's path, relative to the scenario's folder", &v) ||
            !hardware_base_file(ld, fn, "file", v, s))
            return false;
    } else if (pn) {
        if (!yamldoc_get_string(&ld->doc, pn, "preset", presets, &v) ||
            !hardware_base_preset(ld, pn, "preset", v, s))
            return false;
    } else if (!hardware_base_preset(ld, NULL, "hardware", HARDWARE_DEFAULT_PRESET, s)) {
        return false;
    }
    return hardware_apply_overrides(&ld->doc, hw, "hardware", own, &s->hardware);
}

/* The nodes the run uses: `nodes:`, or the fewest that hold every rank. */
static uint32_t effective_nodes(const Loader *ld, const Scenario *s)
{
    if (s->nodes)
        return s->nodes;
    uint32_t d = s->hardware.devices_per_node;
    return (uint32_t)(((uint64_t)ld->n_ranks + d - 1) / d);
}

static bool load_nodes(Loader *ld, const YamlDocNode *n, Scenario *s)
{
    int64_t v = 0;
    if (!yamldoc_get_int(&ld->doc, n, "nodes", 1, MAX_RANKS, &v))
        return false;
    uint64_t devices = (uint64_t)v * s->hardware.devices_per_node;
    if (devices < ld->n_ranks) {
        uint32_t need = (uint32_t)(((uint64_t)ld->n_ranks + s->hardware.devices_per_node - 1) /
                                   s->hardware.devices_per_node);
        return yamldoc_fail(&ld->doc, n, "nodes",
                            "%u ranks do not fit on %" G_GINT64_FORMAT " node%s of %u devices "
                            "(%s: %" G_GUINT64_FORMAT " devices); valid: nodes >= %u, or leave "
                            "nodes out for the fewest that fit",
                            ld->n_ranks, v, v == 1 ? "" : "s", s->hardware.devices_per_node,
                            s->hardware.name, devices, need);
    }
    s->nodes = (uint32_t)v;
    return true;
}

/* The collective kinds `collective_algorithm:` may set, in this order. */
static const NetCollKind algo_kinds[] = {NET_ALL_REDUCE, NET_ALL_GATHER, NET_REDUCE_SCATTER,
                                         NET_ALL_TO_ALL, NET_BROADCAST,  NET_BARRIER};

static bool load_algorithms(Loader *ld, const YamlDocNode *m, Scenario *s)
{
    enum { N_KINDS = sizeof algo_kinds / sizeof algo_kinds[0] };
    const char *kinds[N_KINDS + 1] = {0};
    for (size_t i = 0; i < N_KINDS; i++)
        kinds[i] = net_coll_kind_name(algo_kinds[i]);
    if (!yamldoc_expect_map(&ld->doc, m, "collective_algorithm",
                            "a mapping collective kind -> algorithm, e.g. {all_reduce: ring, "
                            "all_to_all: direct}") ||
        !yamldoc_check_keys(&ld->doc, m, kinds, NULL, "collective_algorithm"))
        return false;
    for (size_t i = 0; i < N_KINDS; i++) {
        const YamlDocNode *n = yamldoc_map_get(m, kinds[i]);
        if (!n)
            continue;
        /* The algorithms that can run this kind, "auto" first. */
        const char *valid[NET_ALGO_COUNT + 1] = {0};
        int nv = 0;
        for (int a = 0; a < NET_ALGO_COUNT; a++)
            if (a == NET_ALGO_AUTO || net_algo_supports((NetAlgo)a, algo_kinds[i]))
                valid[nv++] = net_algo_name((NetAlgo)a);
        const char *name = NULL;
        g_autofree char *list = g_strjoinv(", ", (char **)valid);
        if (!yamldoc_get_string(&ld->doc, n, kinds[i], list, &name))
            return false;
        NetAlgo algo = NET_ALGO_AUTO;
        if (!net_algo_parse(name, &algo)) {
            g_autofree char *hint = yamldoc_suggestion(name, valid);
            return yamldoc_fail(&ld->doc, n, kinds[i], "unknown algorithm '%s'; %s", name, hint);
        }
        if (algo != NET_ALGO_AUTO && !net_algo_supports(algo, algo_kinds[i]))
            return yamldoc_fail(&ld->doc, n, kinds[i],
                                "algorithm '%s' cannot run %s; valid for %s: %s", name, kinds[i],
                                kinds[i], list);
        s->algo[algo_kinds[i]] = algo;
    }
    return true;
}

/* ---- faults ---- */

static bool seconds_to_ns(Loader *ld, const YamlDocNode *n, const char *key, int64_t *out)
{
    double s = 0;
    if (!yamldoc_get_number(&ld->doc, n, key, 0, false, MAX_SECONDS, "seconds", &s))
        return false;
    *out = (int64_t)llround(s * 1e9);
    return true;
}

/* Finds op `name` in `rank`'s program; sets *id. On a miss, fails suggesting the closest. */
static bool fault_op(Loader *ld, const YamlDocNode *n, int32_t rank, int64_t *id)
{
    const char *name = NULL;
    if (!yamldoc_get_string(&ld->doc, n, "op", "the name of an op in the rank's program", &name))
        return false;
    const SchedProgram *p = ld->prog;
    const SchedOpList *l = sched_program_ops(p, (uint32_t)rank);
    g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (uint32_t i = 0; i < l->len; i++) {
        if (l->ops[i].kind == SCHED_OP_REPEAT)
            continue;
        const char *s = sched_program_name_str(p, l->ops[i].name);
        if (strcmp(s, name) == 0) {
            *id = l->ops[i].name;
            return true;
        }
        if (g_hash_table_add(seen, GUINT_TO_POINTER(l->ops[i].name + 1)))
            g_ptr_array_add(names, (gpointer)s);
    }
    if (names->len == 0)
        return yamldoc_fail(&ld->doc, n, "op", "rank %d has no ops, so no op named '%s'", rank,
                            name);
    guint shown = MIN(names->len, 20u);
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (guint i = 0; i < names->len; i++) {
        size_t d = yamldoc_edit_distance(name, g_ptr_array_index(names, i));
        if (d < best_d) {
            best_d = d;
            best = g_ptr_array_index(names, i);
        }
    }
    guint total = names->len;
    g_ptr_array_set_size(names, shown);
    g_ptr_array_add(names, NULL);
    g_autofree char *list = g_strjoinv(", ", (char **)names->pdata);
    if (best && best_d <= YAMLDOC_SUGGEST_MAX_DISTANCE && best_d < strlen(name))
        return yamldoc_fail(&ld->doc, n, "op",
                            "rank %d has no op named '%s'; did you mean '%s'? (ops of rank "
                            "%d: %s%s)",
                            rank, name, best, rank, list, shown < total ? ", ..." : "");
    return yamldoc_fail(&ld->doc, n, "op",
                        "rank %d has no op named '%s'; valid: the ops of rank %d: %s%s", rank, name,
                        rank, list, shown < total ? ", ..." : "");
}

/* A fault of kind `link`: {kind: link, tier: NAME, node: N, factor: F}. */
static bool load_link_fault(Loader *ld, const YamlDocNode *m, Scenario *s)
{
    const NetHardware *hw = &s->hardware;
    const char *tiers[NET_MAX_TIERS + 1] = {0};
    for (uint32_t i = 0; i < hw->n_tiers; i++)
        tiers[i] = hw->tiers[i].name;
    g_autofree char *tier_list = g_strjoinv(", ", (char **)tiers);
    uint32_t nodes = effective_nodes(ld, s);
    const YamlDocNode *tn = yamldoc_map_get(m, "tier"), *nn = yamldoc_map_get(m, "node"),
                      *fn = yamldoc_map_get(m, "factor");
    if (!tn)
        return yamldoc_fail(&ld->doc, m, "tier", "missing; a link fault needs tier: one of %s",
                            tier_list);
    if (!nn)
        return yamldoc_fail(&ld->doc, m, "node", "missing; a link fault needs node: 0..%u",
                            nodes - 1);
    if (!fn)
        return yamldoc_fail(&ld->doc, m, "factor",
                            "missing; a link fault needs factor: F (bandwidth multiplier, > 0; "
                            "0.5 = half the bandwidth)");
    const char *name = NULL;
    if (!yamldoc_get_string(&ld->doc, tn, "tier", tier_list, &name))
        return false;
    int t = net_hardware_tier(hw, name);
    if (t < 0) {
        g_autofree char *hint = yamldoc_suggestion(name, tiers);
        return yamldoc_fail(&ld->doc, tn, "tier", "no tier named '%s' in hardware '%s'; %s", name,
                            hw->name, hint);
    }
    int64_t node = 0;
    if (!yamldoc_get_int(&ld->doc, nn, "node", 0, MAX_RANKS, &node))
        return false;
    if (node >= (int64_t)nodes)
        return yamldoc_fail(&ld->doc, nn, "node",
                            "node %" G_GINT64_FORMAT " is out of range; valid: 0..%u (%u node%s: "
                            "%s)",
                            node, nodes - 1, nodes, nodes == 1 ? "" : "s",
                            s->nodes ? "as set by nodes:"
                                     : "the fewest that hold the ranks; set nodes: for more");
    NetLinkFault f = {.tier = t, .node = (uint32_t)node, .factor = 1.0};
    if (!yamldoc_get_number(&ld->doc, fn, "factor", 0, true, MAX_FACTOR, NULL, &f.factor))
        return false;
    g_array_append_val(s->link_faults, f);
    return true;
}

static bool load_fault(Loader *ld, const YamlDocNode *m, Scenario *s)
{
    static const char *const kinds[] = {"delay", "slowdown", "crash", "skip", "link", NULL};
    static const char *const keys_all[] = {"rank",   "kind", "op",   "occurrence", "seconds",
                                           "factor", "at_s", "tier", "node",       NULL};
    static const char *const keys_delay[] = {"rank", "kind", "op", "occurrence", "seconds", NULL};
    static const char *const keys_slow[] = {"rank", "kind", "factor", NULL};
    static const char *const keys_crash[] = {"rank", "kind", "at_s", "op", "occurrence", NULL};
    static const char *const keys_skip[] = {"rank", "kind", "op", "occurrence", NULL};
    static const char *const keys_link[] = {"kind", "tier", "node", "factor", NULL};
    static const char *const *const kind_keys[] = {keys_delay, keys_slow, keys_crash, keys_skip,
                                                   keys_link};
    if (!yamldoc_expect_map(&ld->doc, m, "faults",
                            "a mapping such as {rank: 3, kind: delay, op: fwd, seconds: 5}"))
        return false;
    const YamlDocNode *kn = yamldoc_map_get(m, "kind");
    if (!kn)
        return yamldoc_fail(&ld->doc, m, "kind",
                            "missing; a fault needs kind: one of delay, slowdown, crash, skip, "
                            "link");
    int ki = 0;
    if (!yamldoc_get_enum(&ld->doc, kn, "kind", kinds, &ki))
        return false;
    g_autofree char *context = g_strdup_printf("fault kind %s", kinds[ki]);
    if (!yamldoc_check_keys(&ld->doc, m, kind_keys[ki], keys_all, context))
        return false;
    if (strcmp(kinds[ki], "link") == 0)
        return load_link_fault(ld, m, s);
    GArray *faults = s->faults;
    const YamlDocNode *rn = yamldoc_map_get(m, "rank");
    if (!rn)
        return yamldoc_fail(&ld->doc, m, "rank", "missing; a fault needs rank: 0..%u",
                            ld->n_ranks - 1);
    int64_t rank = 0;
    if (!yamldoc_get_int(&ld->doc, rn, "rank", 0, ld->n_ranks - 1, &rank))
        return false;

    SchedFault f = {.kind = (SchedFaultKind)ki,
                    .rank = (int32_t)rank,
                    .op_name = -1,
                    .occurrence = 0,
                    .delay_ns = 0,
                    .factor = 1.0,
                    .at_ns = -1};
    const YamlDocNode *opn = yamldoc_map_get(m, "op");
    const YamlDocNode *occ = yamldoc_map_get(m, "occurrence");
    if (f.kind == SCHED_FAULT_SLOWDOWN) {
        const YamlDocNode *fn = yamldoc_map_get(m, "factor");
        if (!fn)
            return yamldoc_fail(&ld->doc, m, "factor",
                                "missing; a slowdown needs factor: F (> 0; 2 = twice "
                                "as slow)");
        if (!yamldoc_get_number(&ld->doc, fn, "factor", 0, true, MAX_FACTOR, NULL, &f.factor))
            return false;
    } else if (f.kind == SCHED_FAULT_CRASH) {
        const YamlDocNode *at = yamldoc_map_get(m, "at_s");
        if (at && opn)
            return yamldoc_fail(&ld->doc, at, "at_s",
                                "a crash takes either at_s or op, not both; valid: "
                                "{kind: crash, at_s: T} or {kind: crash, op: NAME, occurrence: N}");
        if (!at && !opn)
            return yamldoc_fail(&ld->doc, m, "kind",
                                "a crash needs at_s: SECONDS or op: NAME; valid: "
                                "{kind: crash, at_s: T} or {kind: crash, op: NAME, occurrence: N}");
        if (at && occ)
            return yamldoc_fail(&ld->doc, occ, "occurrence",
                                "occurrence goes with op, not at_s; remove it");
        if (at && !seconds_to_ns(ld, at, "at_s", &f.at_ns))
            return false;
    } else {
        if (!opn)
            return yamldoc_fail(
                &ld->doc, m, "op",
                "missing; a %s fault needs op: NAME (an op of rank %" G_GINT64_FORMAT ")",
                kinds[ki], rank);
    }
    if (f.kind == SCHED_FAULT_DELAY) {
        const YamlDocNode *sn = yamldoc_map_get(m, "seconds");
        if (!sn)
            return yamldoc_fail(&ld->doc, m, "seconds",
                                "missing; a delay needs seconds: S (0..1e9)");
        if (!seconds_to_ns(ld, sn, "seconds", &f.delay_ns))
            return false;
    }
    if (opn) {
        if (!fault_op(ld, opn, f.rank, &f.op_name))
            return false;
        int64_t o = 1;
        if (occ && !yamldoc_get_int(&ld->doc, occ, "occurrence", 1, (int64_t)MAX_COUNT, &o))
            return false;
        f.occurrence = (uint64_t)o;
    }
    g_array_append_val(faults, f);
    return true;
}

/* ---- settings every kind shares ---- */

static bool get_seconds_ns(Loader *ld, const YamlDocNode *map, const char *key, int64_t *out)
{
    const YamlDocNode *n = yamldoc_map_get(map, key);
    return !n || seconds_to_ns(ld, n, key, out);
}

/* `name:` and `description:`. */
static bool load_identity(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(root, "name"))) {
        const char *name = NULL;
        if (!yamldoc_get_string(&ld->doc, n, "name", "a name for the scenario", &name))
            return false;
        g_free(s->name);
        s->name = g_strdup(name);
    }
    if ((n = yamldoc_map_get(root, "description")) && n->type != YAMLDOC_SCALAR)
        return yamldoc_fail(&ld->doc, n, "description",
                            "expected a string, got %s; valid: free text",
                            n->type == YAMLDOC_MAP ? "a mapping" : "a list");
    return true;
}

/* `hardware:` then `nodes:` (the node check needs the devices per node), for ld->n_ranks. */
static bool load_placement(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    const YamlDocNode *n;
    if (!load_hardware(ld, yamldoc_map_get(root, "hardware"), s))
        return false;
    return !(n = yamldoc_map_get(root, "nodes")) || load_nodes(ld, n, s);
}

/* What follows the program: algorithms, contention, mismatch policy, watchdog, straggler
 * threshold, faults (op names checked against ld->prog), and the final consistency check.
 * `what` names the program's origin in the safety net's message. */
static bool load_run_settings(Loader *ld, const YamlDocNode *root, Scenario *s, const char *what)
{
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(root, "collective_algorithm")) && !load_algorithms(ld, n, s))
        return false;
    if ((n = yamldoc_map_get(root, "contention")) &&
        !yamldoc_get_bool(&ld->doc, n, "contention", &s->contention))
        return false;

    static const char *const policies[] = {"hang", "abort", "continue", NULL};
    if ((n = yamldoc_map_get(root, "on_mismatch"))) {
        int pol = 0;
        if (!yamldoc_get_enum(&ld->doc, n, "on_mismatch", policies, &pol))
            return false;
        s->on_mismatch = pol == 0   ? SCHED_MISMATCH_HANG
                         : pol == 1 ? SCHED_MISMATCH_ABORT
                                    : SCHED_MISMATCH_CONTINUE;
    }
    if ((n = yamldoc_map_get(root, "watchdog"))) {
        static const char *const wkeys[] = {"collective_timeout_s", NULL};
        if (!yamldoc_expect_map(&ld->doc, n, "watchdog", "{collective_timeout_s: SECONDS}") ||
            !yamldoc_check_keys(&ld->doc, n, wkeys, NULL, "watchdog") ||
            !get_seconds_ns(ld, n, "collective_timeout_s", &s->collective_timeout_ns))
            return false;
    }
    if (!get_seconds_ns(ld, root, "straggler_threshold_s", &s->straggler_threshold_ns))
        return false;

    if ((n = yamldoc_map_get(root, "faults"))) {
        if (!yamldoc_expect_seq(&ld->doc, n, "faults",
                                "a list of faults, e.g. [{rank: 3, kind: slowdown, "
                                "factor: 2}]"))
            return false;
        for (guint i = 0; i < n->items->len; i++)
            if (!load_fault(ld, g_ptr_array_index(n->items, i), s))
                return false;
    }

    g_autoptr(GError) verr = NULL;
    if (!sched_program_validate(s->program, &verr))
        return yamldoc_fail(&ld->doc, root, NULL, "%s is inconsistent: %s", what, verr->message);
    return true;
}

/* Keys of the other kind get a message that says which kind they belong to. */
static bool reject_other_kind_keys(Loader *ld, const YamlDocNode *root, bool model)
{
    const char *const *other = model ? program_only_keys : model_only_keys;
    const char *const *valid = model ? model_keys : program_keys;
    for (uint32_t i = 0; i < yamldoc_map_len(root); i++) {
        const YamlDocNode *k = yamldoc_map_key(root, i);
        if (!in_list(other, k->text))
            continue;
        g_autofree char *list = g_strjoinv(", ", (char **)valid);
        if (model)
            return yamldoc_fail(&ld->doc, k, k->text,
                                "not valid for kind: model (the default when kind: is left out), "
                                "whose ranks, groups and programs come from lowering model:, "
                                "parallel: and workload:; write kind: program for hand-written "
                                "programs (valid for kind: model: %s)",
                                list);
        return yamldoc_fail(&ld->doc, k, k->text,
                            "not valid for kind: program (it belongs to kind: model); valid for "
                            "kind: program: %s",
                            list);
    }
    return true;
}

/* ---- kind: program ---- */

static bool interpret_program(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (!reject_other_kind_keys(ld, root, false) ||
        !yamldoc_check_keys(&ld->doc, root, program_keys, NULL, "the scenario") ||
        !load_identity(ld, root, s))
        return false;
    if (extras_have_workload(ld->extras))
        note_ignored(s, "--prefill/--decode (a kind: program scenario has no workload)");

    const YamlDocNode *n = yamldoc_map_get(root, "ranks");
    if (!n)
        return yamldoc_fail(&ld->doc, root, "ranks",
                            "missing; a program scenario needs ranks: N (1..%u)", MAX_RANKS);
    int64_t ranks = 0;
    if (!yamldoc_get_int(&ld->doc, n, "ranks", 1, MAX_RANKS, &ranks))
        return false;
    ld->n_ranks = (uint32_t)ranks;
    s->program = sched_program_new(ld->n_ranks);
    ld->prog = s->program;
    ld->stamp = g_new0(uint32_t, ld->n_ranks);

    if ((n = yamldoc_map_get(root, "groups")) && !load_groups(ld, n))
        return false;
    int pi = yamldoc_map_find(root, "programs");
    if (pi < 0)
        return yamldoc_fail(
            &ld->doc, root, "programs",
            "missing; a program scenario needs programs: "
            "{RANKSET: [OPS]}, e.g. programs: {\"*\": [{op: compute, name: fwd, us: 10}]}");
    if (!load_programs(ld, yamldoc_map_key(root, (uint32_t)pi),
                       yamldoc_map_value(root, (uint32_t)pi)))
        return false;

    /* Hardware before nodes, nodes before link faults: each check needs the one before. */
    return load_placement(ld, root, s) && load_run_settings(ld, root, s, "the program");
}

/* ---- kind: model: model, parallel, engine, workload ---- */

/* Where errors about one part of a model scenario point: a node (NULL: line 1) and a key. */
typedef struct {
    const YamlDocNode *at;
    const char *key;
} Spot;

/* What the settings start from before the file's `parallel:` and `engine:` apply: vLLM's
 * defaults for a model scenario, the server_args of an eval config. */
typedef struct {
    ModelParallel par;
    ModelEngine engine;
    ModelCostParams cost;
    Spot par_spot;    /* plan errors when the file has no `parallel:` */
    Spot engine_spot; /* lowering errors about the engine when the file has no `engine:` */
    bool eval;        /* an eval config: hardware must be named (no h100 default) */
} ModelSetup;

/* The built-in model presets, NULL-terminated. Caller frees (g_strfreev). */
static char **model_presets(void)
{
    char **v = g_strsplit(model_arch_preset_names(), ",", -1);
    guint n = 0;
    for (guint i = 0; v[i]; i++) {
        g_strstrip(v[i]);
        if (v[i][0])
            v[n++] = v[i];
        else
            g_free(v[i]);
    }
    v[n] = NULL;
    return v;
}

/* A `model:` string naming a file rather than a preset: it contains '/' or ends in .json. */
static bool is_model_path(const char *s)
{
    return strchr(s, '/') != NULL || g_str_has_suffix(s, ".json");
}

/* Loads the config.json at `path` (a folder means its config.json). */
static bool arch_from_file(Loader *ld, const YamlDocNode *at, const char *key, const char *path,
                           Scenario *s)
{
    g_autofree char *file = g_file_test(path, G_FILE_TEST_IS_DIR)
                                ? g_build_filename(path, "config.json", NULL)
                                : g_strdup(path);
    if (!g_file_test(file, G_FILE_TEST_IS_REGULAR)) {
        g_auto(GStrv) presets = model_presets();
        g_autofree char *list = g_strjoinv(", ", presets);
        return yamldoc_fail_code(&ld->doc, SCENARIO_ERROR_IO, at, key,
                                 "cannot read model config '%s': no such file; valid: a preset "
                                 "(%s) or the path of a Hugging Face config.json (or its folder), "
                                 "relative to the scenario's folder",
                                 file, list);
    }
    g_autoptr(GError) err = NULL;
    if (!model_arch_load_file(file, s->arch, &err))
        return yamldoc_fail_code(&ld->doc,
                                 err->code == 0 ? SCENARIO_ERROR_IO : SCENARIO_ERROR_INVALID, at,
                                 key, "%s", err->message);
    g_free(s->model_source);
    s->model_source = g_steal_pointer(&file);
    return true;
}

static bool arch_from_preset(Loader *ld, const YamlDocNode *at, const char *key, const char *name,
                             Scenario *s)
{
    g_auto(GStrv) presets = model_presets();
    if (!g_strv_contains((const char *const *)presets, name)) {
        g_autofree char *hint = yamldoc_suggestion(name, (const char *const *)presets);
        return yamldoc_fail(&ld->doc, at, key,
                            "unknown model preset '%s'; %s; or the path of a Hugging Face "
                            "config.json such as ./config.json",
                            name, hint);
    }
    g_autoptr(GError) err = NULL;
    if (!model_arch_load_preset(name, s->arch, &err))
        return yamldoc_fail(&ld->doc, at, key, "%s", err->message);
    g_free(s->model_source);
    s->model_source = g_strdup_printf("preset %s", name);
    return true;
}

/* `model:`: a preset name, or a config.json path relative to the scenario's folder. */
static bool load_arch(Loader *ld, const YamlDocNode *n, Scenario *s)
{
    g_auto(GStrv) presets = model_presets();
    g_autofree char *list = g_strjoinv(", ", presets);
    g_autofree char *valid = g_strdup_printf(
        "a model preset (%s) or the path of a Hugging Face config.json, relative to the "
        "scenario's folder",
        list);
    const char *v = NULL;
    if (!yamldoc_get_string(&ld->doc, n, "model", valid, &v))
        return false;
    if (is_model_path(v)) {
        g_autofree char *path = resolve_path(ld, v);
        return arch_from_file(ld, n, "model", path, s);
    }
    return arch_from_preset(ld, n, "model", v, s);
}

/* An optional integer `key` of mapping `m` in [min, max] into *out (untouched when absent). */
static bool get_u32(Loader *ld, const YamlDocNode *m, const char *key, int64_t min, int64_t max,
                    uint32_t *out)
{
    const YamlDocNode *n = yamldoc_map_get(m, key);
    int64_t v = 0;
    if (!n)
        return true;
    if (!yamldoc_get_int(&ld->doc, n, key, min, max, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool get_bool_opt(Loader *ld, const YamlDocNode *m, const char *key, bool *out)
{
    const YamlDocNode *n = yamldoc_map_get(m, key);
    return !n || yamldoc_get_bool(&ld->doc, n, key, out);
}

static const char *const dcp_backend_names[] = {"ag_rs", "a2a", NULL};

/* `parallel:` (vLLM's ParallelConfig names) applied on top of *par. */
static bool load_parallel(Loader *ld, const YamlDocNode *m, ModelParallel *par)
{
    static const char *const keys[] = {
        "tensor_parallel_size",         "data_parallel_size",
        "pipeline_parallel_size",       "prefill_context_parallel_size",
        "decode_context_parallel_size", "enable_expert_parallel",
        "enable_sequence_parallel",     "dcp_comm_backend",
        "cp_kv_cache_interleave_size",  NULL,
    };
    if (!yamldoc_expect_map(&ld->doc, m, "parallel",
                            "a mapping of vLLM parallel settings, e.g. {tensor_parallel_size: 1, "
                            "prefill_context_parallel_size: 4, decode_context_parallel_size: 4}") ||
        !yamldoc_check_keys(&ld->doc, m, keys, NULL, "parallel"))
        return false;
    uint32_t pp = 1;
    if (!get_u32(ld, m, "tensor_parallel_size", 1, MAX_RANKS, &par->tensor_parallel_size) ||
        !get_u32(ld, m, "data_parallel_size", 1, MAX_RANKS, &par->data_parallel_size) ||
        !get_u32(ld, m, "pipeline_parallel_size", 1, MAX_RANKS, &pp) ||
        !get_u32(ld, m, "prefill_context_parallel_size", 1, MAX_RANKS,
                 &par->prefill_context_parallel_size) ||
        !get_u32(ld, m, "decode_context_parallel_size", 1, MAX_RANKS,
                 &par->decode_context_parallel_size) ||
        !get_u32(ld, m, "cp_kv_cache_interleave_size", 1, MAX_SEQ_LEN,
                 &par->cp_kv_cache_interleave_size) ||
        !get_bool_opt(ld, m, "enable_expert_parallel", &par->enable_expert_parallel) ||
        !get_bool_opt(ld, m, "enable_sequence_parallel", &par->enable_sequence_parallel))
        return false;
    if (pp != 1)
        return yamldoc_fail(&ld->doc, yamldoc_map_get(m, "pipeline_parallel_size"),
                            "pipeline_parallel_size",
                            "pipeline parallelism is not modelled; valid: 1");
    const YamlDocNode *n = yamldoc_map_get(m, "dcp_comm_backend");
    int b = 0;
    if (n) {
        if (!yamldoc_get_enum(&ld->doc, n, "dcp_comm_backend", dcp_backend_names, &b))
            return false;
        par->dcp_comm_backend = b == 0 ? MODEL_DCP_AG_RS : MODEL_DCP_A2A;
    }
    return true;
}

/* ---- engine values (shared by `engine:` and server_args) ---- */

/* Canonical names, NULL-terminated, into `out` (static strings). */
static void backend_names(const char *out[MODEL_BACKEND_COUNT + 1])
{
    for (int b = 0; b < MODEL_BACKEND_COUNT; b++)
        out[b] = model_backend_name((ModelBackend)b);
    out[MODEL_BACKEND_COUNT] = NULL;
}

#define N_CUDAGRAPH (MODEL_CUDAGRAPH_FULL_AND_PIECEWISE + 1)
static void cudagraph_names(const char *out[N_CUDAGRAPH + 1])
{
    for (int m = 0; m < N_CUDAGRAPH; m++)
        out[m] = model_cudagraph_name((ModelCudagraph)m);
    out[N_CUDAGRAPH] = NULL;
}

/* bf16, fp8, ... then "none" (= bf16). */
static void quant_names(const char *out[MODEL_QUANT_COUNT + 2])
{
    for (int q = 0; q < MODEL_QUANT_COUNT; q++)
        out[q] = model_quant_name((ModelQuant)q);
    out[MODEL_QUANT_COUNT] = "none";
    out[MODEL_QUANT_COUNT + 1] = NULL;
}

/* An attention backend, case-insensitively. */
static bool parse_backend(const char *text, ModelBackend *out)
{
    g_autofree char *up = g_ascii_strup(text, -1);
    return model_backend_parse(up, out) || model_backend_parse(text, out);
}

/* A quantization: ranksim's names, "none" (bf16), and the vLLM method names that mean one of
 * them (modelopt_fp4 = nvfp4; modelopt, fbgemm_fp8, ptpc_fp8 = fp8). Case-insensitive. */
static bool parse_quant(const char *text, ModelQuant *out)
{
    static const struct {
        const char *name;
        ModelQuant q;
    } aliases[] = {{"none", MODEL_QUANT_BF16},
                   {"modelopt_fp4", MODEL_QUANT_NVFP4},
                   {"modelopt", MODEL_QUANT_FP8},
                   {"fbgemm_fp8", MODEL_QUANT_FP8},
                   {"ptpc_fp8", MODEL_QUANT_FP8}};
    g_autofree char *low = g_ascii_strdown(text, -1);
    if (model_quant_parse(low, out) || model_quant_parse(text, out))
        return true;
    for (size_t i = 0; i < G_N_ELEMENTS(aliases); i++)
        if (strcmp(low, aliases[i].name) == 0) {
            *out = aliases[i].q;
            return true;
        }
    return false;
}

static const char *const kv_dtype_names[] = {"auto",     "bf16",     "bfloat16", "fp8",
                                             "fp8_e4m3", "fp8_e5m2", NULL};

/* vLLM's --kv-cache-dtype: auto (the model's dtype, bf16 here) or bf16 -> bf16; fp8 kinds -> fp8.
 */
static bool parse_kv_dtype(const char *text, SchedDtype *out)
{
    g_autofree char *low = g_ascii_strdown(text, -1);
    for (int i = 0; kv_dtype_names[i]; i++)
        if (strcmp(low, kv_dtype_names[i]) == 0) {
            *out = i < 3 ? SCHED_DTYPE_BF16 : SCHED_DTYPE_FP8;
            return true;
        }
    return false;
}

static bool parse_cudagraph(const char *text, ModelCudagraph *out)
{
    g_autofree char *up = g_ascii_strup(text, -1);
    return model_cudagraph_parse(up, out) || model_cudagraph_parse(text, out);
}

/* `engine:` applied on top of *e and *cp. *profile_at gets the `op_profile` node, if any. */
static bool load_engine(Loader *ld, const YamlDocNode *m, ModelEngine *e, ModelCostParams *cp,
                        const YamlDocNode **profile_at)
{
    static const char *const keys[] = {
        "attention_backend",
        "quantization",
        "kv_cache_dtype",
        "gpu_memory_utilization",
        "max_num_batched_tokens",
        "max_model_len",
        "max_num_seqs",
        "cudagraph_mode",
        "op_profile",
        "compute_efficiency",
        "memory_efficiency",
        "launch_us",
        NULL,
    };
    if (!yamldoc_expect_map(&ld->doc, m, "engine",
                            "a mapping of vLLM engine settings, e.g. {attention_backend: "
                            "FLASHMLA_SPARSE, quantization: nvfp4, kv_cache_dtype: fp8}") ||
        !yamldoc_check_keys(&ld->doc, m, keys, NULL, "engine"))
        return false;
    const YamlDocNode *n;
    const char *v = NULL;
    if ((n = yamldoc_map_get(m, "attention_backend"))) {
        const char *names[MODEL_BACKEND_COUNT + 1];
        backend_names(names);
        g_autofree char *list = g_strjoinv(", ", (char **)names);
        if (!yamldoc_get_string(&ld->doc, n, "attention_backend", list, &v))
            return false;
        if (!parse_backend(v, &e->attention_backend)) {
            g_autofree char *hint = yamldoc_suggestion(v, names);
            return yamldoc_fail(&ld->doc, n, "attention_backend",
                                "unknown attention backend '%s'; %s", v, hint);
        }
    }
    if ((n = yamldoc_map_get(m, "quantization"))) {
        const char *names[MODEL_QUANT_COUNT + 2];
        quant_names(names);
        g_autofree char *list = g_strjoinv(", ", (char **)names);
        if (yamldoc_is_null(n)) {
            e->quantization = MODEL_QUANT_BF16;
        } else {
            if (!yamldoc_get_string(&ld->doc, n, "quantization", list, &v))
                return false;
            if (!parse_quant(v, &e->quantization)) {
                g_autofree char *hint = yamldoc_suggestion(v, names);
                return yamldoc_fail(&ld->doc, n, "quantization", "unknown quantization '%s'; %s", v,
                                    hint);
            }
        }
    }
    if ((n = yamldoc_map_get(m, "kv_cache_dtype"))) {
        g_autofree char *list = g_strjoinv(", ", (char **)kv_dtype_names);
        if (!yamldoc_get_string(&ld->doc, n, "kv_cache_dtype", list, &v))
            return false;
        if (!parse_kv_dtype(v, &e->kv_cache_dtype)) {
            g_autofree char *hint = yamldoc_suggestion(v, kv_dtype_names);
            return yamldoc_fail(&ld->doc, n, "kv_cache_dtype", "unknown KV cache dtype '%s'; %s", v,
                                hint);
        }
    }
    if ((n = yamldoc_map_get(m, "gpu_memory_utilization")) &&
        !yamldoc_get_number(&ld->doc, n, "gpu_memory_utilization", 0, true, 1,
                            "(fraction of device memory)", &e->gpu_memory_utilization))
        return false;
    if (!get_u32(ld, m, "max_num_batched_tokens", 1, MAX_SEQ_LEN, &e->max_num_batched_tokens) ||
        !get_u32(ld, m, "max_model_len", 1, MAX_SEQ_LEN, &e->max_model_len) ||
        !get_u32(ld, m, "max_num_seqs", 1, MAX_BATCH_SEQS, &e->max_num_seqs))
        return false;
    if ((n = yamldoc_map_get(m, "cudagraph_mode"))) {
        const char *names[N_CUDAGRAPH + 1];
        cudagraph_names(names);
        g_autofree char *list = g_strjoinv(", ", (char **)names);
        if (!yamldoc_get_string(&ld->doc, n, "cudagraph_mode", list, &v))
            return false;
        if (!parse_cudagraph(v, &e->cudagraph_mode)) {
            g_autofree char *hint = yamldoc_suggestion(v, names);
            return yamldoc_fail(&ld->doc, n, "cudagraph_mode", "unknown cudagraph mode '%s'%s; %s",
                                v,
                                g_ascii_strcasecmp(v, "FULL_DECODE_ONLY") == 0
                                    ? " (not modelled; FULL is the closest)"
                                    : "",
                                hint);
        }
    }
    if ((n = yamldoc_map_get(m, "op_profile"))) {
        if (!yamldoc_get_string(&ld->doc, n, "op_profile",
                                "the path of a CSV file with header op,rows,seconds, relative to "
                                "the scenario's folder",
                                &v))
            return false;
        *profile_at = n;
    }
    if ((n = yamldoc_map_get(m, "compute_efficiency")) &&
        !yamldoc_get_number(&ld->doc, n, "compute_efficiency", 0, true, 1,
                            "(fraction of the dense peak)", &cp->compute_efficiency))
        return false;
    if ((n = yamldoc_map_get(m, "memory_efficiency")) &&
        !yamldoc_get_number(&ld->doc, n, "memory_efficiency", 0, true, 1,
                            "(fraction of the HBM bandwidth)", &cp->memory_efficiency))
        return false;
    if ((n = yamldoc_map_get(m, "launch_us"))) {
        double us = 0;
        if (!yamldoc_get_number(&ld->doc, n, "launch_us", 0, false, MAX_LAUNCH_US, "microseconds",
                                &us))
            return false;
        cp->launch_ns = (int64_t)llround(us * 1000.0);
    }
    return true;
}

/* engine.op_profile: a CSV relative to the scenario's folder, loaded into s->cost. */
static bool load_profile(Loader *ld, const YamlDocNode *at, Scenario *s)
{
    g_autofree char *path = resolve_path(ld, at->text);
    if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
        return yamldoc_fail_code(
            &ld->doc, SCENARIO_ERROR_IO, at, "op_profile",
            "cannot read op profile '%s': %s; valid: the path of a CSV file "
            "with header op,rows,seconds, relative to the scenario's folder",
            path, g_file_test(path, G_FILE_TEST_IS_DIR) ? "it is a folder" : "no such file");
    g_autoptr(GError) err = NULL;
    if (!model_cost_load_profile(s->cost, path, &err))
        return yamldoc_fail_code(&ld->doc,
                                 err->domain == MODEL_COST_ERROR && err->code == MODEL_COST_ERROR_IO
                                     ? SCENARIO_ERROR_IO
                                     : SCENARIO_ERROR_INVALID,
                                 at, "op_profile", "%s", err->message);
    s->op_profile = g_steal_pointer(&path);
    return true;
}

/* ---- workload ---- */

/* Checks one length of a batch against the engine: prompts and decode contexts fit in
 * max_model_len (the rule model_lower applies too, checked here to point at the line).
 * Returns NULL or a message (caller frees). */
static char *length_problem(uint64_t len, bool decode, const ModelEngine *e)
{
    if (len > e->max_model_len)
        return g_strdup_printf("a %s of %" G_GUINT64_FORMAT " tokens is longer than "
                               "max_model_len=%u; valid: 1..%u, or raise max_model_len",
                               decode ? "decode context" : "prompt", len, e->max_model_len,
                               e->max_model_len);
    return NULL;
}

/* Checks one DP rank's batch against vLLM's per-step scheduler limits. Returns NULL or a
 * message (caller frees). */
static char *batch_problem(const ModelBatch *b, const ModelEngine *e)
{
    uint64_t seqs = (uint64_t)b->prefill->len + b->decode->len;
    if (seqs > e->max_num_seqs)
        return g_strdup_printf("%" G_GUINT64_FORMAT " sequences in one batch exceed "
                               "max_num_seqs=%u (vLLM's scheduler runs at most that many per "
                               "step); spread them over more steps or raise max_num_seqs",
                               seqs, e->max_num_seqs);
    uint64_t tokens = b->decode->len;
    for (guint i = 0; i < b->prefill->len; i++)
        tokens += g_array_index(b->prefill, uint32_t, i);
    if (tokens > e->max_num_batched_tokens)
        return g_strdup_printf("%" G_GUINT64_FORMAT " tokens in one batch exceed "
                               "max_num_batched_tokens=%u (vLLM's scheduler never batches more "
                               "per step); use smaller batches or raise max_num_batched_tokens "
                               "to at least %" G_GUINT64_FORMAT,
                               tokens, e->max_num_batched_tokens, tokens);
    return NULL;
}

static bool batch_empty(const ModelBatch *b)
{
    return b->prefill->len == 0 && b->decode->len == 0;
}

/* `prefill:` or `decode:` of a batch: a list of token counts. */
static bool load_lengths(Loader *ld, const YamlDocNode *list, const char *key, const ModelEngine *e,
                         GArray *out)
{
    bool decode = strcmp(key, "decode") == 0;
    if (!yamldoc_expect_seq(&ld->doc, list, key,
                            decode ? "a list of context lengths, one per sequence decoding a "
                                     "token, e.g. [633, 633]"
                                   : "a list of prompt lengths, one per prompt prefilled, "
                                     "e.g. [633]"))
        return false;
    if (list->items->len > MAX_BATCH_SEQS)
        return yamldoc_fail(&ld->doc, list, key, "%u sequences in one list; valid: at most %d",
                            list->items->len, MAX_BATCH_SEQS);
    for (guint i = 0; i < list->items->len; i++) {
        const YamlDocNode *item = g_ptr_array_index(list->items, i);
        int64_t v = 0;
        if (!yamldoc_get_int(&ld->doc, item, key, 1, MAX_SEQ_LEN, &v))
            return false;
        g_autofree char *why = length_problem((uint64_t)v, decode, e);
        if (why)
            return yamldoc_fail(&ld->doc, item, key, "%s", why);
        uint32_t v32 = (uint32_t)v;
        g_array_append_val(out, v32);
    }
    return true;
}

/* A batch mapping {prefill: [...], decode: [...]} (either may be absent). Keys are checked by
 * the caller. */
static bool load_batch(Loader *ld, const YamlDocNode *m, const ModelEngine *e, ModelBatch *b)
{
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(m, "prefill")) && !load_lengths(ld, n, "prefill", e, b->prefill))
        return false;
    return !(n = yamldoc_map_get(m, "decode")) || load_lengths(ld, n, "decode", e, b->decode);
}

static const char step_forms[] =
    "{prefill: [LEN, ...]}, {decode: [CTX, ...]}, both (a mixed batch), or "
    "{per_dp_rank: [{decode: [...]}, ...]}";

/* One entry of `steps:` (number `idx`, 1-based) appended to s->workload. */
static bool load_step(Loader *ld, const YamlDocNode *m, guint idx, Scenario *s)
{
    static const char *const step_keys[] = {"prefill", "decode", "per_dp_rank", NULL};
    static const char *const batch_keys[] = {"prefill", "decode", NULL};
    static const char *const nested[] = {"per_dp_rank", NULL};
    const ModelEngine *e = &s->engine;
    uint32_t dp = s->plan->par.data_parallel_size;
    if (!yamldoc_expect_map(&ld->doc, m, "steps", step_forms) ||
        !yamldoc_check_keys(&ld->doc, m, step_keys, NULL, "a workload step"))
        return false;
    g_autoptr(GPtrArray) per_dp = g_ptr_array_new_with_free_func((GDestroyNotify)model_batch_free);
    const YamlDocNode *pd = yamldoc_map_get(m, "per_dp_rank");
    if (pd) {
        for (int k = 0; k < 2; k++)
            if (yamldoc_map_get(m, batch_keys[k]))
                return yamldoc_fail(&ld->doc, yamldoc_map_get_key(m, batch_keys[k]), batch_keys[k],
                                    "a step with per_dp_rank lists each DP rank's batch inside "
                                    "it; move %s into the per_dp_rank entries",
                                    batch_keys[k]);
        if (!yamldoc_expect_seq(&ld->doc, pd, "per_dp_rank",
                                "a list of batches, one per DP rank, e.g. [{decode: [633]}, "
                                "{decode: [1024, 1024]}]"))
            return false;
        if (pd->items->len == 0)
            return yamldoc_fail(&ld->doc, pd, "per_dp_rank",
                                "empty list; give one batch per DP rank (at most %u)", dp);
        if (pd->items->len > dp)
            return yamldoc_fail(&ld->doc, pd, "per_dp_rank",
                                "%u batches for %u DP rank%s (data_parallel_size=%u); valid: at "
                                "most %u (DP ranks beyond the list run an empty batch)",
                                pd->items->len, dp, dp == 1 ? "" : "s", dp, dp);
        for (guint i = 0; i < pd->items->len; i++) {
            const YamlDocNode *bm = g_ptr_array_index(pd->items, i);
            if (!yamldoc_expect_map(&ld->doc, bm, "per_dp_rank",
                                    "a batch such as {prefill: [633], decode: [633, 633]} or {} "
                                    "for an idle DP rank") ||
                !yamldoc_check_keys(&ld->doc, bm, batch_keys, nested, "a per_dp_rank batch"))
                return false;
            ModelBatch *b = model_batch_new();
            g_ptr_array_add(per_dp, b);
            if (!load_batch(ld, bm, e, b))
                return false;
            g_autofree char *why = batch_problem(b, e);
            if (why)
                return yamldoc_fail(&ld->doc, bm, "per_dp_rank", "step %u, DP rank %u: %s", idx, i,
                                    why);
        }
        /* Exactly DP batches: one entry would otherwise mean "the same on every rank". */
        while (per_dp->len < dp)
            g_ptr_array_add(per_dp, model_batch_new());
    } else {
        ModelBatch *b = model_batch_new();
        g_ptr_array_add(per_dp, b);
        if (!load_batch(ld, m, e, b))
            return false;
        g_autofree char *why = batch_problem(b, e);
        if (why)
            return yamldoc_fail(&ld->doc, m, "steps", "step %u: %s", idx, why);
    }
    bool empty = true;
    for (guint i = 0; i < per_dp->len && empty; i++)
        empty = batch_empty(g_ptr_array_index(per_dp, i));
    if (empty)
        return yamldoc_fail(&ld->doc, m, "steps", "step %u is empty; valid: %s", idx, step_forms);
    model_workload_add_step(s->workload, g_steal_pointer(&per_dp));
    return true;
}

/* `workload: {steps: [...]}`. */
static bool load_workload_node(Loader *ld, const YamlDocNode *w, Scenario *s)
{
    static const char *const keys[] = {"steps", NULL};
    if (!yamldoc_expect_map(&ld->doc, w, "workload",
                            "a mapping {steps: [STEPS]}, e.g. {steps: [{prefill: [633]}, "
                            "{decode: [633, 633]}]}") ||
        !yamldoc_check_keys(&ld->doc, w, keys, NULL, "workload"))
        return false;
    const YamlDocNode *steps = yamldoc_map_get(w, "steps");
    if (!steps)
        return yamldoc_fail(&ld->doc, w, "steps",
                            "missing; a workload needs steps: [STEP, ...], each %s", step_forms);
    if (!yamldoc_expect_seq(&ld->doc, steps, "steps",
                            "a list of steps, e.g. [{prefill: [633]}, {decode: [633, 633]}]"))
        return false;
    if (steps->items->len == 0)
        return yamldoc_fail(&ld->doc, steps, "steps",
                            "empty list; give at least one step, e.g. {prefill: [633]}");
    if (steps->items->len > MAX_STEPS)
        return yamldoc_fail(&ld->doc, steps, "steps", "%u steps; valid: at most %d",
                            steps->items->len, MAX_STEPS);
    for (guint i = 0; i < steps->items->len; i++)
        if (!load_step(ld, g_ptr_array_index(steps->items, i), i + 1, s))
            return false;
    return true;
}

/* --prefill N ... and --decode B:CTX ...: one step, the same batch on every DP rank. */
static bool workload_from_extras(Loader *ld, Scenario *s)
{
    const ScenarioExtras *x = ld->extras;
    const ModelEngine *e = &s->engine;
    ModelBatch *b = model_batch_new();
    g_autoptr(GPtrArray) per_dp = g_ptr_array_new_with_free_func((GDestroyNotify)model_batch_free);
    g_ptr_array_add(per_dp, b);
    for (guint i = 0; x->prefill && i < x->prefill->len; i++) {
        uint32_t len = g_array_index(x->prefill, uint32_t, i);
        g_autofree char *what = g_strdup_printf("--prefill %u", len);
        if (len < 1 || len > MAX_SEQ_LEN)
            return extras_fail(ld, SCENARIO_ERROR_INVALID, what,
                               "prompt length out of range; valid: 1..%d", MAX_SEQ_LEN);
        g_autofree char *why = length_problem(len, false, e);
        if (why)
            return extras_fail(ld, SCENARIO_ERROR_INVALID, what, "%s", why);
        g_array_append_val(b->prefill, len);
    }
    for (guint i = 0; x->decode && i < x->decode->len; i++) {
        uint32_t ctx = g_array_index(x->decode, uint32_t, i);
        g_autofree char *what = g_strdup_printf("--decode (context %u)", ctx);
        if (ctx < 1 || ctx > MAX_SEQ_LEN)
            return extras_fail(ld, SCENARIO_ERROR_INVALID, what,
                               "context length out of range; valid: 1..%d", MAX_SEQ_LEN);
        g_autofree char *why = length_problem(ctx, true, e);
        if (why)
            return extras_fail(ld, SCENARIO_ERROR_INVALID, what, "%s", why);
        if (b->decode->len >= MAX_BATCH_SEQS)
            return extras_fail(ld, SCENARIO_ERROR_INVALID, "--decode",
                               "more than %d decoding sequences in all", MAX_BATCH_SEQS);
        g_array_append_val(b->decode, ctx);
    }
    g_autofree char *why = batch_problem(b, e);
    if (why)
        return extras_fail(ld, SCENARIO_ERROR_INVALID, "--prefill/--decode", "%s", why);
    model_workload_add_step(s->workload, g_steal_pointer(&per_dp));
    return true;
}

/* The workload: the file's, else the command line's, else an error. */
static bool load_workload(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    s->workload = model_workload_new();
    const YamlDocNode *w = yamldoc_map_get(root, "workload");
    if (w) {
        if (extras_have_workload(ld->extras))
            note_ignored(s, "--prefill/--decode (the scenario has workload:)");
        return load_workload_node(ld, w, s);
    }
    if (extras_have_workload(ld->extras))
        return workload_from_extras(ld, s);
    return yamldoc_fail(&ld->doc, root, "workload",
                        "missing; give workload.steps in the file or --prefill N / --decode "
                        "B:CTX");
}

/* ---- kind: model: from the plan to the program ---- */

/* Everything after the architecture, shared by model scenarios and eval configs: the plan,
 * hardware and nodes for its world, engine and cost, workload, lowering, run settings. */
static bool finish_model(Loader *ld, const YamlDocNode *root, Scenario *s, ModelSetup *ms)
{
    const YamlDocNode *pn = yamldoc_map_get(root, "parallel");
    const YamlDocNode *en = yamldoc_map_get(root, "engine");
    if (pn && !load_parallel(ld, pn, &ms->par))
        return false;
    /* Errors about a whole mapping point at its key: a block mapping starts a line later. */
    Spot ps = pn ? (Spot){yamldoc_map_get_key(root, "parallel"), "parallel"} : ms->par_spot;
    const ModelParallel *par = &ms->par;
    uint64_t world = (uint64_t)par->data_parallel_size * par->prefill_context_parallel_size *
                     par->tensor_parallel_size;
    if (world > MAX_RANKS)
        return yamldoc_fail(&ld->doc, ps.at, ps.key,
                            "DP %u x PCP %u x TP %u = %" G_GUINT64_FORMAT " ranks; valid: at "
                            "most %u",
                            par->data_parallel_size, par->prefill_context_parallel_size,
                            par->tensor_parallel_size, world, MAX_RANKS);
    g_autoptr(GError) err = NULL;
    s->plan = model_plan_new(par, s->arch, &err);
    if (!s->plan)
        return yamldoc_fail(&ld->doc, ps.at, ps.key, "%s", err->message);
    ld->n_ranks = s->plan->world;

    if (ms->eval && !yamldoc_map_get(root, "hardware") && !ld->extras->hardware) {
        g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
        return yamldoc_fail(&ld->doc, root, NULL,
                            "an eval config names no hardware; pass --hardware NAME (%s) or a "
                            "hardware file's path",
                            presets);
    }
    if (!load_placement(ld, root, s))
        return false;

    const YamlDocNode *profile_at = NULL;
    if (en && !load_engine(ld, en, &ms->engine, &ms->cost, &profile_at))
        return false;
    s->engine = ms->engine;
    s->cost = model_cost_new(&s->hardware, &ms->cost);
    if (profile_at && !load_profile(ld, profile_at, s))
        return false;

    if (!load_workload(ld, root, s))
        return false;

    ModelLowerInput in = {s->arch, s->plan, &s->engine, s->workload, s->cost, MODEL_BREAK_NONE};
    s->program = model_lower(&in, &err);
    if (!s->program) {
        /* Backend / architecture mismatches belong to the engine, the rest to the workload
         * (whose lengths and batch counts were checked above with their own lines). */
        if (strstr(err->message, "backend")) {
            Spot es = en ? (Spot){yamldoc_map_get_key(root, "engine"), "engine"} : ms->engine_spot;
            return yamldoc_fail(&ld->doc, es.at, es.key, "%s", err->message);
        }
        const YamlDocNode *wn = yamldoc_map_get_key(root, "workload");
        if (!wn)
            return extras_fail(ld, SCENARIO_ERROR_INVALID, "--prefill/--decode", "%s",
                               err->message);
        return yamldoc_fail(&ld->doc, wn, "workload", "%s", err->message);
    }
    s->findings = model_layout_check(s->program, &in);
    ld->prog = s->program;
    return load_run_settings(ld, root, s, "the lowered program (a bug in model/lower.c)");
}

static bool interpret_model(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (!reject_other_kind_keys(ld, root, true) ||
        !yamldoc_check_keys(&ld->doc, root, model_keys, NULL, "the scenario") ||
        !load_identity(ld, root, s))
        return false;
    const YamlDocNode *mn = yamldoc_map_get(root, "model");
    if (!mn) {
        g_auto(GStrv) presets = model_presets();
        g_autofree char *list = g_strjoinv(", ", presets);
        return yamldoc_fail(&ld->doc, root, "model",
                            "missing; a model scenario (kind: model, the default) needs model: "
                            "a preset (%s) or the path of a Hugging Face config.json; write "
                            "kind: program for hand-written programs",
                            list);
    }
    s->arch = g_new0(ModelArch, 1);
    if (!load_arch(ld, mn, s))
        return false;
    ModelSetup ms = {.par_spot = {root, "parallel"}, .engine_spot = {root, "engine"}};
    model_parallel_defaults(&ms.par);
    model_engine_defaults(&ms.engine);
    model_cost_params_defaults(&ms.cost);
    return finish_model(ld, root, s, &ms);
}

/* ---- vLLM eval configs (vllm-project/vllm tests/evals/gsm8k/configs/NAME.yaml) ---- */

/* The eval config's own keys. */
static const char *const eval_keys[] = {"model_name", "server_args", "env", NULL};
/* Keys of the eval harness that say nothing about the engine: accepted, not simulated
 * (max_model_len, used by lm-eval configs, is the default for --max-model-len). */
static const char *const eval_harness_keys[] = {
    "accuracy_threshold",
    "num_questions",
    "num_fewshot",
    "max_concurrency",
    "startup_max_wait_seconds",
    "tolerance",
    "trust_remote_code",
    "rocm_request_timeout_seconds",
    "max_model_len",
    NULL,
};
/* Scenario keys an eval config (or --set) may add on top of what server_args says. */
static const char *const eval_scenario_keys[] = {
    "name",       "kind",        "description", "model",  "parallel",
    "engine",     "workload",    "hardware",    "nodes",  "collective_algorithm",
    "contention", "on_mismatch", "watchdog",    "faults", "straggler_threshold_s",
    NULL,
};

/* Every top-level key: ours and the scenario's are read; the harness's are accepted; ranks,
 * groups, programs are errors; a near miss of a key we read is an error with a suggestion;
 * anything else is another harness key, accepted and noted in ignored_flags. */
static bool check_eval_keys(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    const char *read[G_N_ELEMENTS(eval_keys) + G_N_ELEMENTS(eval_scenario_keys)];
    size_t n = 0;
    for (size_t i = 0; eval_keys[i]; i++)
        read[n++] = eval_keys[i];
    for (size_t i = 0; eval_scenario_keys[i]; i++)
        read[n++] = eval_scenario_keys[i];
    read[n] = NULL;
    for (uint32_t i = 0; i < yamldoc_map_len(root); i++) {
        const YamlDocNode *k = yamldoc_map_key(root, i);
        if (in_list(read, k->text) || in_list(eval_harness_keys, k->text))
            continue;
        g_autofree char *list = g_strjoinv(", ", (char **)read);
        if (in_list(program_only_keys, k->text))
            return yamldoc_fail(&ld->doc, k, k->text,
                                "not valid in a vLLM eval config, which is a model scenario "
                                "(its ranks, groups and programs come from lowering the model); "
                                "valid: %s",
                                list);
        const char *best = yamldoc_closest(k->text, read);
        if (best)
            return yamldoc_fail(&ld->doc, k, k->text,
                                "unknown key in a vLLM eval config; did you mean '%s'? (read: "
                                "%s; other keys are eval-harness settings and ignored)",
                                best, list);
        note_ignored(s, "eval config key '%s'", k->text);
    }
    return true;
}

/* ---- eval configs: model_name -> preset ---- */

static const struct {
    const char *suffix;
    ModelQuant q;
} quant_suffixes[] = {
    {"-nvfp4", MODEL_QUANT_NVFP4}, {"-fp4", MODEL_QUANT_NVFP4}, {"-fp8", MODEL_QUANT_FP8},
    {"-w8a8", MODEL_QUANT_W8A8},   {"-int8", MODEL_QUANT_W8A8}, {"-w4a8", MODEL_QUANT_W4A8},
    {"-w4a16", MODEL_QUANT_W4A8},  {"-awq", MODEL_QUANT_W4A8},  {"-gptq", MODEL_QUANT_W4A8},
    {"-int4", MODEL_QUANT_W4A8},   {"-bf16", MODEL_QUANT_BF16},
};
/* Suffixes that name a release, not an architecture. */
static const char *const release_suffixes[] = {
    "-instruct", "-chat", "-exp", "-base", "-hf", "-it", "-thinking", "-preview", "-dynamic", NULL};
/* Models with a preset's architecture under another name. */
static const char *const model_aliases[][2] = {{"deepseek-r1", "deepseek-v3"},
                                               {"deepseek-v3.1", "deepseek-v3"}};

/* `s` lowercased without '-', '.' and '_'. Caller frees. */
static char *model_key(const char *s)
{
    GString *k = g_string_new(NULL);
    for (; *s; s++)
        if (*s != '-' && *s != '.' && *s != '_')
            g_string_append_c(k, g_ascii_tolower(*s));
    return g_string_free(k, FALSE);
}

/* Strips one known suffix from `s` (lowercase) in place; sets *quant for a quantization suffix
 * when it is still -1. Returns whether one was stripped. */
static bool strip_model_suffix(char *s, int *quant)
{
    size_t len = strlen(s);
    for (size_t i = 0; i < G_N_ELEMENTS(quant_suffixes); i++) {
        size_t n = strlen(quant_suffixes[i].suffix);
        if (len > n && g_str_has_suffix(s, quant_suffixes[i].suffix)) {
            s[len - n] = '\0';
            if (*quant < 0)
                *quant = (int)quant_suffixes[i].q;
            return true;
        }
    }
    for (size_t i = 0; release_suffixes[i]; i++) {
        size_t n = strlen(release_suffixes[i]);
        if (len > n && g_str_has_suffix(s, release_suffixes[i])) {
            s[len - n] = '\0';
            return true;
        }
    }
    /* a date such as -2507 or -0528 */
    if (len > 5 && s[len - 5] == '-' && g_ascii_isdigit(s[len - 4]) &&
        g_ascii_isdigit(s[len - 3]) && g_ascii_isdigit(s[len - 2]) && g_ascii_isdigit(s[len - 1])) {
        s[len - 5] = '\0';
        return true;
    }
    return false;
}

/* Maps a Hugging Face model id to a preset: the part after the last '/', lowercased, without
 * quantization suffixes (which set *quant, else -1), release suffixes and dates, without a
 * leading "meta-", compared with the presets ignoring '-', '.' and '_'. Returns the matching
 * entry of `presets` or NULL; *stem gets the name as read (caller frees). */
static const char *eval_model_preset(const char *model_name, char *const *presets, char **stem,
                                     int *quant)
{
    g_autofree char *trimmed = g_strdup(model_name);
    size_t len = strlen(trimmed);
    while (len > 1 && trimmed[len - 1] == '/')
        trimmed[--len] = '\0';
    const char *slash = strrchr(trimmed, '/');
    char *s = g_ascii_strdown(slash ? slash + 1 : trimmed, -1);
    *quant = -1;
    while (strip_model_suffix(s, quant))
        ;
    if (g_str_has_prefix(s, "meta-") && s[5]) {
        char *t = g_strdup(s + 5);
        g_free(s);
        s = t;
    }
    *stem = s;
    g_autofree char *key = model_key(s);
    for (size_t i = 0; i < G_N_ELEMENTS(model_aliases); i++) {
        g_autofree char *ak = model_key(model_aliases[i][0]);
        if (strcmp(key, ak) == 0) {
            g_free(key);
            key = model_key(model_aliases[i][1]);
            break;
        }
    }
    for (size_t i = 0; presets[i]; i++) {
        g_autofree char *pk = model_key(presets[i]);
        if (strcmp(key, pk) == 0)
            return presets[i];
    }
    return NULL;
}

/* ---- eval configs: server_args -> parallel and engine settings ---- */

typedef enum {
    VF_TP,
    VF_DP,
    VF_PCP,
    VF_DCP,
    VF_PP,
    VF_EP,
    VF_NO_EP,
    VF_DCP_BACKEND,
    VF_INTERLEAVE,
    VF_BACKEND,
    VF_ATTENTION_CONFIG,
    VF_QUANT,
    VF_KV_DTYPE,
    VF_GPU_UTIL,
    VF_BATCHED_TOKENS,
    VF_MODEL_LEN,
    VF_NUM_SEQS,
    VF_COMPILATION,
    VF_OPT_LEVEL,
    VF_EAGER,
    VF_NO_EAGER,
    VF_NO_EFFECT, /* read and dropped: no bearing on a simulation */
} VllmFlagKind;

typedef struct {
    const char *name;
    VllmFlagKind kind;
    bool value; /* takes a value */
} VllmFlag;

/* vLLM's serve flags that ranksim reads (vllm/engine/arg_utils.py names and short forms). */
static const VllmFlag vllm_flags[] = {
    {"--tensor-parallel-size", VF_TP, true},
    {"-tp", VF_TP, true},
    {"--data-parallel-size", VF_DP, true},
    {"-dp", VF_DP, true},
    {"--prefill-context-parallel-size", VF_PCP, true},
    {"-pcp", VF_PCP, true},
    {"--decode-context-parallel-size", VF_DCP, true},
    {"-dcp", VF_DCP, true},
    {"--pipeline-parallel-size", VF_PP, true},
    {"-pp", VF_PP, true},
    {"--enable-expert-parallel", VF_EP, false},
    {"-ep", VF_EP, false},
    {"--no-enable-expert-parallel", VF_NO_EP, false},
    {"--dcp-comm-backend", VF_DCP_BACKEND, true},
    {"--cp-kv-cache-interleave-size", VF_INTERLEAVE, true},
    {"--dcp-kv-cache-interleave-size", VF_INTERLEAVE, true},
    {"--attention-backend", VF_BACKEND, true},
    {"--attention-config", VF_ATTENTION_CONFIG, true},
    {"-ac", VF_ATTENTION_CONFIG, true},
    {"--quantization", VF_QUANT, true},
    {"-q", VF_QUANT, true},
    {"--kv-cache-dtype", VF_KV_DTYPE, true},
    {"--gpu-memory-utilization", VF_GPU_UTIL, true},
    {"--max-num-batched-tokens", VF_BATCHED_TOKENS, true},
    {"--max-model-len", VF_MODEL_LEN, true},
    {"--max-num-seqs", VF_NUM_SEQS, true},
    {"--compilation-config", VF_COMPILATION, true},
    {"-cc", VF_COMPILATION, true},
    {"--optimization-level", VF_OPT_LEVEL, true},
    {"-O", VF_OPT_LEVEL, true},
    {"--enforce-eager", VF_EAGER, false},
    {"--no-enforce-eager", VF_NO_EAGER, false},
    {"--trust-remote-code", VF_NO_EFFECT, false},
    {"--disable-log-requests", VF_NO_EFFECT, false},
    {"--enable-log-requests", VF_NO_EFFECT, false},
    {"--disable-log-stats", VF_NO_EFFECT, false},
    {"--disable-uvicorn-access-log", VF_NO_EFFECT, false},
    {"--host", VF_NO_EFFECT, true},
    {"--port", VF_NO_EFFECT, true},
    {"--served-model-name", VF_NO_EFFECT, true},
    {"--revision", VF_NO_EFFECT, true},
    {"--code-revision", VF_NO_EFFECT, true},
    {"--tokenizer-revision", VF_NO_EFFECT, true},
    {"--download-dir", VF_NO_EFFECT, true},
    {"--safetensors-load-strategy", VF_NO_EFFECT, true},
    {"--load-format", VF_NO_EFFECT, true},
    {"--seed", VF_NO_EFFECT, true},
    {"--uvicorn-log-level", VF_NO_EFFECT, true},
    {"--api-key", VF_NO_EFFECT, true},
};

/* The state of reading server_args. */
typedef struct {
    Loader *ld;
    Scenario *s;
    const YamlDocNode *at;    /* the server_args key: where errors point */
    const YamlDocNode *value; /* the server_args value */
    ModelSetup *ms;
    bool quant_set, quant_ascend, backend_set, cudagraph_set, eager;
    int opt_level; /* -O N, or -1 */
} EvalFlags;

static bool flag_fail(EvalFlags *ef, const char *flag, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static bool flag_fail(EvalFlags *ef, const char *flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return yamldoc_fail(&ef->ld->doc, ef->at, "server_args", "%s: %s", flag, msg);
}

/* A token that is an option rather than a value: "-x..." but not a negative number. */
static bool looks_like_flag(const char *t)
{
    return t[0] == '-' && t[1] != '\0' && !g_ascii_isdigit(t[1]) && t[1] != '.';
}

/* An unsigned integer in [min, max]; `human` also takes vLLM's 4k / 4K (1000 / 1024) forms. */
static bool flag_uint(EvalFlags *ef, const char *flag, const char *v, uint64_t min, uint64_t max,
                      bool human, uint32_t *out)
{
    g_autofree char *digits = g_strdup(v);
    uint64_t mult = 1;
    size_t len = strlen(digits);
    if (human && len > 1) {
        static const char units[] = "kKmMgG";
        static const uint64_t mults[] = {1000, 1024, 1000000, 1048576, 1000000000, 1073741824};
        const char *u = strchr(units, digits[len - 1]);
        if (u) {
            mult = mults[u - units];
            digits[len - 1] = '\0';
        }
    }
    guint64 x = 0;
    if (!g_ascii_string_to_unsigned(digits, 10, 0, G_MAXUINT64 / 1073741824, &x, NULL))
        return flag_fail(ef, flag,
                         "expected an integer, got '%s'; valid: %" G_GUINT64_FORMAT
                         "..%" G_GUINT64_FORMAT,
                         v, min, max);
    x *= mult;
    if (x < min || x > max)
        return flag_fail(ef, flag,
                         "%s is out of range; valid: %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT, v,
                         min, max);
    *out = (uint32_t)x;
    return true;
}

static bool flag_backend(EvalFlags *ef, const char *flag, const char *v)
{
    if (parse_backend(v, &ef->ms->engine.attention_backend)) {
        ef->backend_set = true;
        return true;
    }
    const char *names[MODEL_BACKEND_COUNT + 1];
    backend_names(names);
    g_autofree char *hint = yamldoc_suggestion(v, names);
    return flag_fail(ef, flag, "unknown attention backend '%s'; %s", v, hint);
}

static bool flag_cudagraph(EvalFlags *ef, const char *flag, const char *v)
{
    if (g_ascii_strcasecmp(v, "FULL_DECODE_ONLY") == 0) {
        ef->ms->engine.cudagraph_mode = MODEL_CUDAGRAPH_FULL;
        note_ignored(ef->s, "cudagraph_mode FULL_DECODE_ONLY (simulated as FULL)");
    } else if (!parse_cudagraph(v, &ef->ms->engine.cudagraph_mode)) {
        const char *names[N_CUDAGRAPH + 1];
        cudagraph_names(names);
        g_autofree char *hint = yamldoc_suggestion(v, names);
        return flag_fail(ef, flag, "unknown cudagraph_mode '%s'; %s, FULL_DECODE_ONLY", v, hint);
    }
    ef->cudagraph_set = true;
    return true;
}

static bool flag_opt_level(EvalFlags *ef, const char *flag, const char *v)
{
    guint64 level = 0;
    if (!g_ascii_string_to_unsigned(v, 10, 0, 3, &level, NULL))
        return flag_fail(ef, flag, "expected an optimization level, got '%s'; valid: 0..3", v);
    ef->opt_level = (int)level;
    return true;
}

/* The JSON of --compilation-config: cudagraph_mode, and pass_config.enable_sp (or its older
 * name enable_sequence_parallelism) for sequence parallelism. Other members have no bearing. */
static bool flag_compilation_json(EvalFlags *ef, const char *flag, const char *json)
{
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) jerr = NULL;
    if (!json_parser_load_from_data(p, json, -1, &jerr))
        return flag_fail(ef, flag,
                         "not valid JSON (%s); valid: e.g. '{\"cudagraph_mode\": "
                         "\"PIECEWISE\"}'",
                         jerr->message);
    JsonNode *root = json_parser_get_root(p);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return flag_fail(ef, flag,
                         "expected a JSON object such as '{\"cudagraph_mode\": "
                         "\"PIECEWISE\"}'");
    JsonObject *o = json_node_get_object(root);
    JsonNode *m = json_object_get_member(o, "cudagraph_mode");
    if (m) {
        if (!JSON_NODE_HOLDS_VALUE(m) || json_node_get_value_type(m) != G_TYPE_STRING)
            return flag_fail(ef, flag, "cudagraph_mode must be a string such as \"PIECEWISE\"");
        if (!flag_cudagraph(ef, flag, json_node_get_string(m)))
            return false;
    }
    JsonNode *pc = json_object_get_member(o, "pass_config");
    if (pc && JSON_NODE_HOLDS_OBJECT(pc)) {
        JsonObject *po = json_node_get_object(pc);
        static const char *const sp_names[] = {"enable_sp", "enable_sequence_parallelism"};
        for (size_t i = 0; i < G_N_ELEMENTS(sp_names); i++) {
            JsonNode *b = json_object_get_member(po, sp_names[i]);
            if (b && JSON_NODE_HOLDS_VALUE(b) && json_node_get_value_type(b) == G_TYPE_BOOLEAN)
                ef->ms->par.enable_sequence_parallel = json_node_get_boolean(b);
        }
    }
    return true;
}

/* --compilation-config VALUE, or --compilation-config.SUBKEY VALUE. */
static bool flag_compilation(EvalFlags *ef, const char *flag, const char *sub, const char *v,
                             const char *given)
{
    if (sub) {
        if (strcmp(sub, "cudagraph_mode") == 0)
            return flag_cudagraph(ef, flag, v);
        if (strcmp(sub, "pass_config.enable_sp") == 0 ||
            strcmp(sub, "pass_config.enable_sequence_parallelism") == 0) {
            if (g_ascii_strcasecmp(v, "true") != 0 && g_ascii_strcasecmp(v, "false") != 0)
                return flag_fail(ef, given, "expected true or false, got '%s'", v);
            ef->ms->par.enable_sequence_parallel = g_ascii_strcasecmp(v, "true") == 0;
            return true;
        }
        note_ignored(ef->s, "%s %s", given, v);
        return true;
    }
    if (g_ascii_isdigit(v[0]))
        return flag_opt_level(ef, flag, v); /* older vLLM: a number is the level */
    return flag_compilation_json(ef, flag, v);
}

/* --attention-config '{"backend": ...}' or --attention-config.backend NAME. */
static bool flag_attention_config(EvalFlags *ef, const char *flag, const char *sub, const char *v,
                                  const char *given)
{
    if (sub) {
        if (strcmp(sub, "backend") == 0)
            return flag_backend(ef, given, v);
        note_ignored(ef->s, "%s %s", given, v);
        return true;
    }
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) jerr = NULL;
    if (!json_parser_load_from_data(p, v, -1, &jerr))
        return flag_fail(ef, flag,
                         "not valid JSON (%s); valid: e.g. '{\"backend\": "
                         "\"FLASHMLA_SPARSE\"}'",
                         jerr->message);
    JsonNode *root = json_parser_get_root(p);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root))
        return flag_fail(ef, flag,
                         "expected a JSON object such as '{\"backend\": "
                         "\"FLASHMLA_SPARSE\"}'");
    JsonNode *b = json_object_get_member(json_node_get_object(root), "backend");
    if (!b)
        return true;
    if (!JSON_NODE_HOLDS_VALUE(b) || json_node_get_value_type(b) != G_TYPE_STRING)
        return flag_fail(ef, flag, "backend must be a string such as \"FLASHMLA_SPARSE\"");
    return flag_backend(ef, flag, json_node_get_string(b));
}

/* One recognised flag with its value (NULL for flags without one). `flag` is the canonical
 * spelling, `given` what the config wrote (for messages), `sub` a dotted sub-key or NULL. */
static bool apply_flag(EvalFlags *ef, const VllmFlag *f, const char *given, const char *sub,
                       const char *v)
{
    ModelParallel *par = &ef->ms->par;
    ModelEngine *e = &ef->ms->engine;
    const char *flag = f->name;
    switch (f->kind) {
    case VF_TP:
        return flag_uint(ef, flag, v, 1, MAX_RANKS, false, &par->tensor_parallel_size);
    case VF_DP:
        return flag_uint(ef, flag, v, 1, MAX_RANKS, false, &par->data_parallel_size);
    case VF_PCP:
        return flag_uint(ef, flag, v, 1, MAX_RANKS, false, &par->prefill_context_parallel_size);
    case VF_DCP:
        return flag_uint(ef, flag, v, 1, MAX_RANKS, false, &par->decode_context_parallel_size);
    case VF_PP: {
        uint32_t pp = 1;
        if (!flag_uint(ef, flag, v, 1, MAX_RANKS, false, &pp))
            return false;
        return pp == 1 || flag_fail(ef, flag, "pipeline parallelism is not modelled; valid: 1");
    }
    case VF_EP:
        par->enable_expert_parallel = true;
        return true;
    case VF_NO_EP:
        par->enable_expert_parallel = false;
        return true;
    case VF_DCP_BACKEND:
        if (strcmp(v, "ag_rs") == 0 || strcmp(v, "a2a") == 0) {
            par->dcp_comm_backend = v[1] == 'g' ? MODEL_DCP_AG_RS : MODEL_DCP_A2A;
            return true;
        }
        return flag_fail(ef, flag, "unknown value '%s'; valid: ag_rs, a2a", v);
    case VF_INTERLEAVE:
        return flag_uint(ef, flag, v, 1, MAX_SEQ_LEN, false, &par->cp_kv_cache_interleave_size);
    case VF_BACKEND:
        return flag_backend(ef, flag, v);
    case VF_ATTENTION_CONFIG:
        return flag_attention_config(ef, flag, sub, v, given);
    case VF_QUANT:
        if (g_ascii_strcasecmp(v, "ascend") == 0) { /* vLLM-Ascend: the scheme is the model's */
            ef->quant_ascend = true;
            return true;
        }
        if (!parse_quant(v, &e->quantization)) {
            const char *names[MODEL_QUANT_COUNT + 2];
            quant_names(names);
            g_autofree char *list = g_strjoinv(", ", (char **)names);
            return flag_fail(ef, flag,
                             "quantization '%s' is not modelled; valid: %s (also modelopt_fp4, "
                             "modelopt, fbgemm_fp8, ptpc_fp8, ascend)",
                             v, list);
        }
        ef->quant_set = true;
        return true;
    case VF_KV_DTYPE:
        if (parse_kv_dtype(v, &e->kv_cache_dtype))
            return true;
        {
            g_autofree char *list = g_strjoinv(", ", (char **)kv_dtype_names);
            return flag_fail(ef, flag, "unknown KV cache dtype '%s'; valid: %s", v, list);
        }
    case VF_GPU_UTIL: {
        char *end = NULL;
        double x = g_ascii_strtod(v, &end);
        if (end == v || *end || !isfinite(x))
            return flag_fail(ef, flag,
                             "expected a number, got '%s'; valid: a number > 0 and "
                             "<= 1",
                             v);
        if (x <= 0 || x > 1)
            return flag_fail(ef, flag, "%s is out of range; valid: a number > 0 and <= 1", v);
        e->gpu_memory_utilization = x;
        return true;
    }
    case VF_BATCHED_TOKENS:
        return flag_uint(ef, flag, v, 1, MAX_SEQ_LEN, true, &e->max_num_batched_tokens);
    case VF_MODEL_LEN:
        return flag_uint(ef, flag, v, 1, MAX_SEQ_LEN, true, &e->max_model_len);
    case VF_NUM_SEQS:
        return flag_uint(ef, flag, v, 1, MAX_BATCH_SEQS, false, &e->max_num_seqs);
    case VF_COMPILATION:
        return flag_compilation(ef, flag, sub, v, given);
    case VF_OPT_LEVEL:
        return v[0] == '{' ? flag_compilation_json(ef, flag, v) : flag_opt_level(ef, flag, v);
    case VF_EAGER:
        ef->eager = true;
        return true;
    case VF_NO_EAGER:
        ef->eager = false;
        return true;
    case VF_NO_EFFECT:
        return true;
    }
    g_assert_not_reached();
}

static const VllmFlag *find_flag(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(vllm_flags); i++)
        if (strcmp(vllm_flags[i].name, name) == 0)
            return &vllm_flags[i];
    return NULL;
}

/* Reads server_args (a string, split like a shell) into ef->ms. `--flag=value` and `--flag
 * value` both work; underscores in long flag names count as dashes (as in vLLM); unknown flags
 * (with the value that follows them, if any) go to ignored_flags. */
static bool eval_server_args(EvalFlags *ef)
{
    Loader *ld = ef->ld;
    const YamlDocNode *at = ef->at;
    const char *text = NULL;
    if (!yamldoc_get_string(&ld->doc, ef->value, "server_args",
                            "vLLM serve flags in one string, e.g. \"--tensor-parallel-size 4 "
                            "--enable-expert-parallel\"",
                            &text))
        return false;
    int argc = 0;
    g_auto(GStrv) argv = NULL;
    g_autoptr(GError) serr = NULL;
    if (!g_shell_parse_argv(text, &argc, &argv, &serr)) {
        if (g_error_matches(serr, G_SHELL_ERROR, G_SHELL_ERROR_EMPTY_STRING))
            return true;
        return yamldoc_fail(&ld->doc, at, "server_args",
                            "cannot split it like a shell command line: %s; quote JSON values "
                            "like '{\"cudagraph_mode\": \"PIECEWISE\"}'",
                            serr->message);
    }
    for (int i = 0; i < argc; i++) {
        const char *tok = argv[i];
        if (!looks_like_flag(tok)) {
            note_ignored(ef->s, "%s", tok);
            continue;
        }
        /* name [=value]; "-O3" is "-O 3" */
        const char *eq = strchr(tok, '=');
        g_autofree char *name = eq ? g_strndup(tok, (gsize)(eq - tok)) : g_strdup(tok);
        g_autofree char *inline_val = eq ? g_strdup(eq + 1) : NULL;
        if (name[0] == '-' && name[1] == 'O' && name[2] && name[2] != '.' && !inline_val) {
            inline_val = g_strdup(name + 2);
            name[2] = '\0';
        }
        char *sub = strchr(name, '.');
        if (sub)
            *sub++ = '\0';
        if (name[1] == '-')
            for (char *c = name + 2; *c; c++)
                if (*c == '_')
                    *c = '-';
        const VllmFlag *f = find_flag(name);
        if (f && sub && f->kind != VF_COMPILATION && f->kind != VF_ATTENTION_CONFIG)
            f = NULL;
        if (!f) {
            if (!eq && i + 1 < argc && !looks_like_flag(argv[i + 1])) {
                note_ignored(ef->s, "%s %s", tok, argv[i + 1]);
                i++;
            } else {
                note_ignored(ef->s, "%s", tok);
            }
            continue;
        }
        g_autofree char *given = sub ? g_strdup_printf("%s.%s", name, sub) : g_strdup(name);
        const char *v = inline_val;
        if (f->value && !v) {
            if (i + 1 >= argc || looks_like_flag(argv[i + 1]))
                return flag_fail(ef, given, "needs a value");
            v = argv[++i];
        } else if (!f->value && v) {
            return flag_fail(ef, given, "takes no value, got '=%s'", v);
        }
        if (!apply_flag(ef, f, given, sub, v))
            return false;
    }
    return true;
}

/* A local model folder named by model_name ("/models/GLM-5.2" or "./ckpt"): its config.json,
 * relative to the scenario's folder, or NULL. Caller frees. */
static char *eval_local_config(const Loader *ld, const char *model_name)
{
    if (!(model_name[0] == '/' || g_str_has_prefix(model_name, "./") ||
          g_str_has_prefix(model_name, "../")))
        return NULL;
    g_autofree char *dir = resolve_path(ld, model_name);
    char *cfg = g_build_filename(dir, "config.json", NULL);
    if (g_file_test(cfg, G_FILE_TEST_IS_REGULAR))
        return cfg;
    g_free(cfg);
    return NULL;
}

static bool interpret_eval(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (!check_eval_keys(ld, root, s) || !load_identity(ld, root, s))
        return false;
    const YamlDocNode *n = yamldoc_map_get(root, "kind");
    const char *kind = NULL;
    if (n &&
        (!yamldoc_get_string(&ld->doc, n, "kind", "model", &kind) || strcmp(kind, "model") != 0))
        return yamldoc_fail(&ld->doc, n, "kind",
                            "a vLLM eval config (model_name:) is a model scenario; valid: kind: "
                            "model, or leave kind out");

    /* model_name -> architecture (a `model:` key, e.g. from --set, takes precedence) */
    const YamlDocNode *mn = yamldoc_map_get(root, "model_name");
    const char *model_name = NULL;
    if (!yamldoc_get_string(&ld->doc, mn, "model_name",
                            "a Hugging Face model id such as nvidia/GLM-5.2-NVFP4", &model_name))
        return false;
    g_auto(GStrv) presets = model_presets();
    g_autofree char *stem = NULL;
    int name_quant = -1;
    const char *preset = eval_model_preset(model_name, presets, &stem, &name_quant);
    s->arch = g_new0(ModelArch, 1);
    const YamlDocNode *model = yamldoc_map_get(root, "model");
    g_autofree char *local = model ? NULL : eval_local_config(ld, model_name);
    if (model) {
        if (!load_arch(ld, model, s))
            return false;
    } else if (preset) {
        if (!arch_from_preset(ld, mn, "model_name", preset, s))
            return false;
    } else if (local) {
        if (!arch_from_file(ld, mn, "model_name", local, s))
            return false;
    } else {
        g_autofree char *list = g_strjoinv(", ", presets);
        return yamldoc_fail(&ld->doc, mn, "model_name",
                            "no built-in model matches '%s' (read as '%s'); valid: %s; for "
                            "another model write a model scenario with model: "
                            "path/to/config.json, or add --set model=path/to/config.json",
                            model_name, stem, list);
    }

    /* server_args and env -> parallel and engine settings */
    ModelSetup ms = {.eval = true};
    model_parallel_defaults(&ms.par);
    model_engine_defaults(&ms.engine);
    model_cost_params_defaults(&ms.cost);
    if ((n = yamldoc_map_get(root, "max_model_len")) &&
        !get_u32(ld, root, "max_model_len", 1, MAX_SEQ_LEN, &ms.engine.max_model_len))
        return false;
    const YamlDocNode *sa = yamldoc_map_get(root, "server_args");
    const YamlDocNode *sak = yamldoc_map_get_key(root, "server_args");
    ms.par_spot = ms.engine_spot = sa ? (Spot){sak, "server_args"} : (Spot){mn, "model_name"};
    EvalFlags ef = {.ld = ld, .s = s, .at = sak, .value = sa, .ms = &ms, .opt_level = -1};
    if (sa && !eval_server_args(&ef))
        return false;
    if (ef.eager)
        ms.engine.cudagraph_mode = MODEL_CUDAGRAPH_NONE;
    else if (!ef.cudagraph_set && ef.opt_level >= 0)
        ms.engine.cudagraph_mode = ef.opt_level == 0   ? MODEL_CUDAGRAPH_NONE
                                   : ef.opt_level == 1 ? MODEL_CUDAGRAPH_PIECEWISE
                                                       : MODEL_CUDAGRAPH_FULL_AND_PIECEWISE;
    if (!ef.quant_set)
        ms.engine.quantization = name_quant >= 0   ? (ModelQuant)name_quant
                                 : ef.quant_ascend ? MODEL_QUANT_W8A8
                                                   : MODEL_QUANT_BF16;

    const YamlDocNode *env = yamldoc_map_get(root, "env");
    if (env) {
        if (!yamldoc_expect_map(&ld->doc, env, "env",
                                "a mapping of environment variables, e.g. "
                                "{VLLM_USE_V2_MODEL_RUNNER: \"1\"}"))
            return false;
        const YamlDocNode *bn = yamldoc_map_get(env, "VLLM_ATTENTION_BACKEND");
        if (bn && !ef.backend_set) {
            const char *names[MODEL_BACKEND_COUNT + 1];
            backend_names(names);
            g_autofree char *list = g_strjoinv(", ", (char **)names);
            const char *v = NULL;
            if (!yamldoc_get_string(&ld->doc, bn, "VLLM_ATTENTION_BACKEND", list, &v))
                return false;
            if (!parse_backend(v, &ms.engine.attention_backend)) {
                g_autofree char *hint = yamldoc_suggestion(v, names);
                return yamldoc_fail(&ld->doc, bn, "VLLM_ATTENTION_BACKEND",
                                    "unknown attention backend '%s'; %s", v, hint);
            }
        }
    }
    return finish_model(ld, root, s, &ms);
}

/* ---- top level ---- */

static bool interpret(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (yamldoc_map_find(root, "model_name") >= 0) {
        g_free(s->kind);
        s->kind = g_strdup("model");
        return interpret_eval(ld, root, s);
    }
    static const char *const kinds[] = {"program", "model", NULL};
    int kind = 1; /* model */
    const YamlDocNode *n = yamldoc_map_get(root, "kind");
    if (n && !yamldoc_get_enum(&ld->doc, n, "kind", kinds, &kind))
        return false;
    g_free(s->kind);
    s->kind = g_strdup(kinds[kind]);
    return kind == 0 ? interpret_program(ld, root, s) : interpret_model(ld, root, s);
}

/* The basename of `path` without its extension: "scenarios/x.yaml" -> "x". Caller frees. */
static char *default_name(const char *path)
{
    char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    return base;
}

static Scenario *load_text(char *text, size_t len, const char *display,
                           const ScenarioExtras *extras, GError **error)
{
    static const ScenarioExtras none = {0};
    g_autoptr(Scenario) s = g_new0(Scenario, 1);
    s->path = g_strdup(display);
    s->text = text;
    s->name = default_name(display);
    s->kind = g_strdup("model");
    SchedConfig dflt = sched_config_default();
    s->on_mismatch = dflt.on_mismatch;
    s->collective_timeout_ns = dflt.collective_timeout_ns;
    s->straggler_threshold_ns = dflt.straggler_threshold_ns;
    s->contention = dflt.fabric.contention;
    for (int k = 0; k < NET_COLL_KIND_COUNT; k++)
        s->algo[k] = NET_ALGO_AUTO;
    s->faults = g_array_new(FALSE, FALSE, sizeof(SchedFault));
    s->link_faults = g_array_new(FALSE, FALSE, sizeof(NetLinkFault));
    s->ignored_flags = g_ptr_array_new_with_free_func(g_free);

    Loader ld = {
        .doc = {.file = display, .what = "scenario file", .top_keys = top_keys, .error = error},
        .path = display,
        .extras = extras ? extras : &none,
    };
    g_autoptr(YamlDocNode) root = yamldoc_parse(&ld.doc, s->text, len);
    if (!root)
        return NULL;
    const char *const *overrides = ld.extras->overrides;
    for (size_t i = 0; overrides && overrides[i]; i++)
        if (!yamldoc_set(&ld.doc, root, overrides[i]))
            return NULL;
    bool ok = interpret(&ld, root, s);
    g_free(ld.stamp);
    if (!ok)
        return NULL;
    return g_steal_pointer(&s);
}

Scenario *scenario_load_extras(const char *path, const ScenarioExtras *extras, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &ioerr)) {
        g_set_error(error, SCENARIO_ERROR, SCENARIO_ERROR_IO, "%s: cannot read the scenario: %s",
                    path, ioerr->message);
        return NULL;
    }
    return load_text(text, len, path, extras, error);
}

Scenario *scenario_load(const char *path, const char *const *overrides, GError **error)
{
    ScenarioExtras x = {.overrides = overrides};
    return scenario_load_extras(path, &x, error);
}

Scenario *scenario_load_string_extras(const char *text, const char *display_name,
                                      const ScenarioExtras *extras, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return load_text(g_strdup(text), strlen(text), display_name ? display_name : "<string>", extras,
                     error);
}

Scenario *scenario_load_string(const char *text, const char *display_name,
                               const char *const *overrides, GError **error)
{
    ScenarioExtras x = {.overrides = overrides};
    return scenario_load_string_extras(text, display_name, &x, error);
}

void scenario_free(Scenario *s)
{
    if (!s)
        return;
    g_free(s->path);
    g_free(s->text);
    g_free(s->name);
    g_free(s->kind);
    sched_program_free(s->program);
    if (s->faults)
        g_array_free(s->faults, TRUE);
    if (s->link_faults)
        g_array_free(s->link_faults, TRUE);
    g_free(s->hardware_source);
    g_free(s->arch);
    g_free(s->model_source);
    model_plan_free(s->plan);
    model_workload_free(s->workload);
    model_cost_free(s->cost);
    g_free(s->op_profile);
    if (s->findings) {
        g_ptr_array_set_free_func(s->findings, (GDestroyNotify)sched_diag_free);
        g_ptr_array_unref(s->findings);
    }
    if (s->ignored_flags)
        g_ptr_array_unref(s->ignored_flags);
    g_free(s);
}

SchedConfig scenario_engine_config(const Scenario *s)
{
    SchedConfig cfg = sched_config_default();
    cfg.on_mismatch = s->on_mismatch;
    cfg.collective_timeout_ns = s->collective_timeout_ns;
    cfg.straggler_threshold_ns = s->straggler_threshold_ns;
    cfg.fabric.hw = &s->hardware;
    cfg.fabric.n_ranks = s->program->n_ranks;
    cfg.fabric.nodes = s->nodes;
    memcpy(cfg.fabric.algo, s->algo, sizeof cfg.fabric.algo);
    cfg.fabric.contention = s->contention;
    cfg.fabric.faults = (const NetLinkFault *)(const void *)s->link_faults->data;
    cfg.fabric.n_faults = s->link_faults->len;
    cfg.faults = (const SchedFault *)(const void *)s->faults->data;
    cfg.n_faults = s->faults->len;
    return cfg;
}
