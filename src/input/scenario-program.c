/* src/input/scenario-program.c — `kind: program`: hand-written per-rank schedules. `ranks:` sizes
 * the program, `groups:` names communicators (rank lists or rank sets such as "0-7"),
 * `programs:` maps rank sets to op lists (compute, the collectives, send/recv, repeat), checked
 * op by op: a collective's group must contain every rank of the key, a broadcast's root must be
 * a member, a peer must be another rank. Part of the scenario loader (src/input/scenario-common.h).
 *
 * Costs: O(ranks) memory for rank bookkeeping; group membership of each programs key is checked
 * once per (key, group), O(set size x log group size), with groups found by name in O(1)
 * and no per-key clearing (a stamp per group); each key's op list is built once and shared by
 * its ranks (sched_program_share_ops): set-up linear in ranks, groups and ops written.
 */
#include <math.h>
#include <string.h>

#include "scenario-program.h"

#include "scenario-hardware.h"
#include "scenario-settings.h"

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
    uint32_t *group_checked; /* per group id: the `gen` of the last key that checked it */
    uint32_t gen;            /* this key's stamp, >= 1: no per-key clearing of the array */
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
    if (kc->group_checked[g] != kc->gen) {
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
        kc->group_checked[g] = kc->gen;
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
    g_autofree uint32_t *checked = g_new0(uint32_t, p->groups->len + 1);
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
        KeyCtx kc = {.key = yamldoc_map_key(programs, i)->text,
                     .ranks = (const int32_t *)(void *)set->data,
                     .n = set->len,
                     .group_checked = checked,
                     .gen = i + 1};
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

/* ---- kind: program ---- */

bool scenario_interpret_program(Loader *ld, const YamlDocNode *root, Scenario *s)
{
    if (!scenario_reject_other_kind_keys(ld, root, false) ||
        !yamldoc_check_keys(&ld->doc, root, scenario_program_keys, NULL, "the scenario") ||
        !scenario_load_identity(ld, root, s))
        return false;
    if (scenario_extras_have_workload(ld->extras))
        scenario_note_ignored(s, "--prefill/--decode (a kind: program scenario has no workload)");

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
    if (!scenario_load_placement(ld, root, s))
        return false;
    if ((ld->calibration && !yamldoc_is_null(ld->calibration)) ||
        (ld->extras->perf_db && ld->extras->perf_db[0]))
        scenario_note_ignored(s, "measured tables (hardware.calibration, --perf-db) price a "
                                 "model's kernels; a program's ops keep their written durations");
    return scenario_load_run_settings(ld, root, s, "the program");
}
