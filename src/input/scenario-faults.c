/* src/input/scenario-faults.c — `faults:`: the injected failures of a run. Rank faults (delay,
 * slowdown, crash, skip) become SchedFault entries whose op names are checked against the rank's
 * program (so faults load after the program); link faults (kind: link) become NetLinkFault
 * entries checked against the hardware's tiers and the run's nodes. Part of the scenario loader
 * (src/input/scenario-common.h).
 *
 * Costs: O(ops of the rank) per fault that names an op, to find it or suggest the closest.
 */
#include "scenario-faults.h"

#include <string.h>

#include "scenario-hardware.h"

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
    uint32_t nodes = scenario_effective_nodes(ld, s);
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
        if (at && !scenario_seconds_to_ns(ld, at, "at_s", &f.at_ns))
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
        if (!scenario_seconds_to_ns(ld, sn, "seconds", &f.delay_ns))
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

bool scenario_load_faults(Loader *ld, const YamlDocNode *list, Scenario *s)
{
    if (!yamldoc_expect_seq(&ld->doc, list, "faults",
                            "a list of faults, e.g. [{rank: 3, kind: slowdown, "
                            "factor: 2}]"))
        return false;
    for (guint i = 0; i < list->items->len; i++)
        if (!load_fault(ld, g_ptr_array_index(list->items, i), s))
            return false;
    return true;
}
