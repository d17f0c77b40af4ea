/* src/scenario.c — the scenario loader: YAML text -> Scenario (program, policies, hardware,
 * nodes, collective algorithms, faults). The format is described key by key in
 * doc/scenario-format.md.
 *
 * Pipeline: src/yamldoc parses the text into an owned tree carrying 1-based line numbers
 * (rejecting aliases, duplicate keys and non-scalar keys on the way); the --set overrides edit
 * that tree; then the tree is interpreted top-down, and sched_program_validate() runs last as a
 * safety net. `hardware:` goes through src/hardware (presets, hardware files, overrides).
 *
 * Errors: the first problem found ends loading with exactly one GError in SCENARIO_ERROR whose
 * message is one line, "FILE:LINE: key 'KEY': problem; what would be valid" (or
 * "FILE: --set PATH: key 'KEY': ..." for values that came from an override). Every helper that
 * can fail returns false after setting the error, and callers return at once, so an error is
 * never set twice.
 *
 * Costs: O(text) to parse and copy; O(ranks) memory for rank bookkeeping; group membership of
 * each rank-set key is checked once per (key, group), O(set size x log group size).
 */
#include "scenario.h"

#include <math.h>
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

/* ---- loader state ---- */

typedef struct {
    YamlDoc doc;        /* file name and the load's error */
    const char *path;   /* the scenario's path, for hardware files relative to it */
    SchedProgram *prog; /* being built; NULL until `ranks` is known */
    uint32_t n_ranks;
    uint32_t *stamp; /* per rank, for duplicate detection; compared with stamp_gen */
    uint32_t stamp_gen;
} Loader;

static const char *const top_keys[] = {
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

static bool hardware_base_file(Loader *ld, const YamlDocNode *at, const char *key,
                               const char *given, Scenario *s)
{
    g_autofree char *path = resolve_path(ld, given);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &ioerr)) {
        g_autofree char *presets = g_strjoinv(", ", (char **)hardware_preset_names());
        const char *why = ioerr->code == G_FILE_ERROR_NOENT   ? "no such file"
                          : ioerr->code == G_FILE_ERROR_ACCES ? "permission denied"
                          : ioerr->code == G_FILE_ERROR_ISDIR ? "it is a folder"
                                                              : ioerr->message;
        return yamldoc_fail_code(&ld->doc, SCENARIO_ERROR_IO, at, key,
                                 "cannot read hardware file '%s': %s; valid: a preset (%s) or "
                                 "the path of a hardware file, relative to the scenario's folder",
                                 path, why, presets);
    }
    if (!hardware_load_string(text, (gssize)len, path, &s->hardware, ld->doc.error))
        return false;
    g_free(s->hardware_source);
    s->hardware_source = g_steal_pointer(&path);
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
    if (!hardware_load_preset(name, &s->hardware, ld->doc.error))
        return false;
    g_free(s->hardware_source);
    s->hardware_source = g_strdup_printf("preset %s", name);
    return true;
}

/* `hardware:` absent (`hw` NULL): the default preset; a string: a preset or a path; a mapping:
 * `preset:` or `file:` (default preset when neither) plus overrides of hardware keys. */
static bool load_hardware(Loader *ld, const YamlDocNode *hw, Scenario *s)
{
    if (!hw)
        return hardware_base_preset(ld, NULL, "hardware", HARDWARE_DEFAULT_PRESET, s);
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

/* ---- top level ---- */

static bool get_seconds_ns(Loader *ld, const YamlDocNode *map, const char *key, int64_t *out)
{
    const YamlDocNode *n = yamldoc_map_get(map, key);
    return !n || seconds_to_ns(ld, n, key, out);
}

static bool interpret(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (!yamldoc_check_keys(&ld->doc, root, top_keys, NULL, "the scenario"))
        return false;
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

    static const char *const kinds[] = {"program", "model", NULL};
    int kind = 1;
    n = yamldoc_map_get(root, "kind");
    if (n && !yamldoc_get_enum(&ld->doc, n, "kind", kinds, &kind))
        return false;
    if (kind == 1)
        return yamldoc_fail(&ld->doc, n ? n : root, "kind",
                            "%skind 'model' is not supported yet by this "
                            "build; use kind: program",
                            n ? "" : "missing (the default is 'model'); ");

    n = yamldoc_map_get(root, "ranks");
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
    if (!load_hardware(ld, yamldoc_map_get(root, "hardware"), s))
        return false;
    if ((n = yamldoc_map_get(root, "nodes")) && !load_nodes(ld, n, s))
        return false;
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
        return yamldoc_fail(&ld->doc, root, NULL, "the program is inconsistent: %s", verr->message);
    return true;
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
                           const char *const *overrides, GError **error)
{
    g_autoptr(Scenario) s = g_new0(Scenario, 1);
    s->path = g_strdup(display);
    s->text = text;
    s->name = default_name(display);
    s->kind = g_strdup("program");
    SchedConfig dflt = sched_config_default();
    s->on_mismatch = dflt.on_mismatch;
    s->collective_timeout_ns = dflt.collective_timeout_ns;
    s->straggler_threshold_ns = dflt.straggler_threshold_ns;
    s->contention = dflt.fabric.contention;
    for (int k = 0; k < NET_COLL_KIND_COUNT; k++)
        s->algo[k] = NET_ALGO_AUTO;
    s->faults = g_array_new(FALSE, FALSE, sizeof(SchedFault));
    s->link_faults = g_array_new(FALSE, FALSE, sizeof(NetLinkFault));

    Loader ld = {
        .doc = {.file = display, .what = "scenario file", .top_keys = top_keys, .error = error},
        .path = display,
    };
    g_autoptr(YamlDocNode) root = yamldoc_parse(&ld.doc, s->text, len);
    if (!root)
        return NULL;
    for (size_t i = 0; overrides && overrides[i]; i++)
        if (!yamldoc_set(&ld.doc, root, overrides[i]))
            return NULL;
    bool ok = interpret(&ld, root, s);
    g_free(ld.stamp);
    if (!ok)
        return NULL;
    return g_steal_pointer(&s);
}

Scenario *scenario_load(const char *path, const char *const *overrides, GError **error)
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
    return load_text(text, len, path, overrides, error);
}

Scenario *scenario_load_string(const char *text, const char *display_name,
                               const char *const *overrides, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return load_text(g_strdup(text), strlen(text), display_name ? display_name : "<string>",
                     overrides, error);
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
