/* tests/src/test-scenario.c — the scenario loader: good files load into the right program and
 * settings; every class of bad input gives one SCENARIO_ERROR whose one-line message names the
 * file, the line and the key. Robustness: truncated and mutated files never crash or leak. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "../../src/scenario.h"

/* ---- helpers ---- */

static Scenario *load_ok_set(const char *yaml, const char *const *ov)
{
    GError *err = NULL;
    Scenario *s = scenario_load_string(yaml, "t.yaml", ov, &err);
    cr_assert_not_null(s, "unexpected error: %s", err ? err->message : "(none)");
    cr_assert_null(err);
    return s;
}

static Scenario *load_ok(const char *yaml)
{
    return load_ok_set(yaml, NULL);
}

/* Loads `yaml`, expects failure with `code`; returns the message (caller frees). */
static char *load_fail_set(const char *yaml, const char *const *ov, int code)
{
    GError *err = NULL;
    Scenario *s = scenario_load_string(yaml, "t.yaml", ov, &err);
    cr_assert_null(s, "expected an error for:\n%s", yaml);
    cr_assert_not_null(err);
    cr_assert_eq(err->domain, SCENARIO_ERROR);
    cr_assert_eq(err->code, code, "code %d (wanted %d): %s", err->code, code, err->message);
    cr_assert_null(strchr(err->message, '\n'), "multi-line message: %s", err->message);
    char *msg = g_strdup(err->message);
    g_error_free(err);
    return msg;
}

#define assert_has(msg, sub)                                                                       \
    cr_assert(strstr((msg), (sub)) != NULL, "expected \"%s\" in: %s", (sub), (msg))
#define assert_lacks(msg, sub)                                                                     \
    cr_assert(strstr((msg), (sub)) == NULL, "did not expect \"%s\" in: %s", (sub), (msg))

/* Expects SCENARIO_ERROR_INVALID whose message starts with `loc` ("t.yaml:7"), names
 * key `key` (NULL: no key) and contains `also` (NULL: nothing more). */
static void expect_invalid_set(const char *yaml, const char *const *ov, const char *loc,
                               const char *key, const char *also)
{
    g_autofree char *msg = load_fail_set(yaml, ov, SCENARIO_ERROR_INVALID);
    g_autofree char *prefix = g_strdup_printf("%s: ", loc);
    cr_assert(g_str_has_prefix(msg, prefix), "expected prefix \"%s\" in: %s", prefix, msg);
    if (key) {
        g_autofree char *k = g_strdup_printf("key '%s'", key);
        assert_has(msg, k);
    }
    if (also)
        assert_has(msg, also);
}

static void expect_invalid(const char *yaml, const char *loc, const char *key, const char *also)
{
    expect_invalid_set(yaml, NULL, loc, key, also);
}

static const SchedOpList *ops_of(const Scenario *s, uint32_t rank)
{
    return sched_program_ops(s->program, rank);
}

static const char *op_name(const Scenario *s, const SchedOp *op)
{
    return sched_program_name_str(s->program, op->name);
}

/* Four ranks, two groups; lines 1-5. Tests append `programs:` at line 6. */
#define HEAD4                                                                                      \
    "name: t\n"                                                                                    \
    "kind: program\n"                                                                              \
    "ranks: 4\n"                                                                                   \
    "groups:\n"                                                                                    \
    "  tp: [0, 1, 2, 3]\n"

/* ---- good input ---- */

static const char cycle_yaml[] =
    "# Three ranks, three pairwise groups, each rank enters a different group first: a 3-cycle.\n"
    "name: three-way-cycle\n"
    "kind: program\n"
    "ranks: 3\n"
    "groups: {a: [0, 1], b: [1, 2], c: [2, 0]}\n"
    "programs:\n"
    "  \"0\": [{op: all_gather, group: a, count: 1024, dtype: bf16}, {op: all_gather, group: c, "
    "count: 1024}]\n"
    "  \"1\": [{op: all_gather, group: b, count: 1024}, {op: all_gather, group: a, count: 1024}]\n"
    "  \"2\": [{op: all_gather, group: c, count: 1024}, {op: all_gather, group: b, count: 1024}]\n";

Test(scenario, three_way_cycle_loads)
{
    Scenario *s = load_ok(cycle_yaml);
    cr_assert_str_eq(s->name, "three-way-cycle");
    cr_assert_str_eq(s->kind, "program");
    cr_assert_str_eq(s->path, "t.yaml");
    cr_assert_str_eq(s->text, cycle_yaml);
    cr_assert_eq(s->program->n_ranks, 3);
    cr_assert_eq(s->program->groups->len, 3);
    const char *names[] = {"a", "b", "c"};
    const int32_t members[3][2] = {{0, 1}, {1, 2}, {2, 0}};
    for (int g = 0; g < 3; g++) {
        const SchedGroup *grp = sched_program_group(s->program, g);
        cr_assert_str_eq(grp->name, names[g]);
        cr_assert_eq(grp->n, 2);
        cr_assert_eq(grp->ranks[0], members[g][0]);
        cr_assert_eq(grp->ranks[1], members[g][1]);
    }
    const int first[3][2] = {{0, 2}, {1, 0}, {2, 1}}; /* group ids per rank, in order */
    for (uint32_t r = 0; r < 3; r++) {
        const SchedOpList *l = ops_of(s, r);
        cr_assert_eq(l->len, 2);
        for (int i = 0; i < 2; i++) {
            const SchedOp *op = &l->ops[i];
            cr_assert_eq(op->kind, SCHED_OP_ALL_GATHER);
            cr_assert_eq(op->group, first[r][i], "rank %u op %d group %d", r, i, op->group);
            cr_assert_eq(op->count, 1024);
            cr_assert_eq(op->dtype, SCHED_DTYPE_BF16);
            cr_assert_eq(op->layer, -1);
            cr_assert_eq(op->root, -1);
            cr_assert_str_eq(op_name(s, op), "all_gather");
        }
    }
    /* defaults */
    cr_assert_eq(s->on_mismatch, SCHED_MISMATCH_HANG);
    cr_assert_eq(s->collective_timeout_ns, INT64_C(600000000000));
    cr_assert_eq(s->straggler_threshold_ns, INT64_C(10000000000));
    cr_assert_str_eq(s->hardware.name, "h100");
    cr_assert_str_eq(s->hardware_source, "preset h100");
    cr_assert_eq(s->hardware.tiers[0].bw_bytes_per_s, 450e9);
    cr_assert_eq(s->nodes, 0);
    cr_assert(s->contention);
    for (int k = 0; k < NET_COLL_KIND_COUNT; k++)
        cr_assert_eq(s->algo[k], NET_ALGO_AUTO);
    cr_assert_eq(s->faults->len, 0);
    cr_assert_eq(s->link_faults->len, 0);
    scenario_free(s);
}

Test(scenario, default_name_is_basename_without_extension)
{
    const char *yaml = "kind: program\nranks: 1\nprograms: {\"0\": []}\n";
    GError *err = NULL;
    Scenario *s = scenario_load_string(yaml, "some/dir/my.test.yaml", NULL, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_str_eq(s->name, "my.test");
    cr_assert_eq(ops_of(s, 0)->len, 0);
    scenario_free(s);
    s = scenario_load_string(yaml, NULL, NULL, &err);
    cr_assert_not_null(s);
    cr_assert_str_eq(s->path, "<string>");
    scenario_free(s);
}

Test(scenario, rank_sets_and_star)
{
    Scenario *s = load_ok("kind: program\n"
                          "ranks: 16\n"
                          "programs:\n"
                          "  \"*\": [{op: compute, name: rest, us: 1}]\n"
                          "  3: [{op: compute, name: three, us: 1}]\n"
                          "  0-2: [{op: compute, name: low, us: 1}]\n"
                          "  \"4,6, 8\": [{op: compute, name: even, us: 1}]\n"
                          "  \"5,7-7,9-10\": [{op: compute, name: odd, us: 1}]\n"
                          "  \"11 - 12,14\": [{op: compute, name: mixed, us: 1}]\n");
    const char *want[16] = {"low",  "low", "low", "three", "even",  "odd",  "even",  "odd",
                            "even", "odd", "odd", "mixed", "mixed", "rest", "mixed", "rest"};
    for (uint32_t r = 0; r < 16; r++) {
        const SchedOpList *l = ops_of(s, r);
        cr_assert_eq(l->len, 1);
        cr_assert_str_eq(op_name(s, &l->ops[0]), want[r], "rank %u", r);
    }
    /* one interned list per key */
    cr_assert_eq(s->program->lists->len, 6);
    scenario_free(s);
}

Test(scenario, group_rank_set_strings)
{
    Scenario *s = load_ok("kind: program\n"
                          "ranks: 8\n"
                          "groups: {world: \"*\", half: \"0-3\", odd: \"1,3,5,7\", one: 6, "
                          "listed: [7, 0, 3]}\n"
                          "programs: {\"*\": [{op: barrier, group: world}]}\n");
    const SchedProgram *p = s->program;
    cr_assert_eq(p->groups->len, 5);
    cr_assert_eq(sched_program_group(p, 0)->n, 8);
    cr_assert_eq(sched_program_group(p, 1)->n, 4);
    cr_assert_eq(sched_program_group(p, 2)->n, 4);
    cr_assert_eq(sched_program_group(p, 2)->ranks[3], 7);
    cr_assert_eq(sched_program_group(p, 3)->n, 1);
    cr_assert_eq(sched_program_group(p, 3)->ranks[0], 6);
    const SchedGroup *listed = sched_program_group(p, 4);
    cr_assert_eq(listed->ranks[0], 7); /* order as written */
    cr_assert_eq(listed->ranks[1], 0);
    cr_assert_eq(listed->ranks[2], 3);
    const SchedOp *op = &ops_of(s, 5)->ops[0];
    cr_assert_eq(op->kind, SCHED_OP_BARRIER);
    cr_assert_eq(op->count, 0);
    cr_assert_str_eq(op_name(s, op), "barrier");
    scenario_free(s);
}

Test(scenario, every_op_kind)
{
    Scenario *s =
        load_ok("kind: program\n"
                "ranks: 2\n"
                "groups: {g: [0, 1]}\n"
                "programs:\n"
                "  \"0\":\n"
                "    - {op: compute, name: fwd, us: 1.5, tokens: 128, layer: 3}\n"
                "    - {op: all_reduce, group: g, count: 1_048_576, dtype: fp32, name: grad}\n"
                "    - {op: reduce_scatter, group: g, count: 1e3, dtype: fp16}\n"
                "    - {op: all_gather, group: g, count: 0, dtype: fp8, tokens: 7}\n"
                "    - {op: all_to_all, group: g, count: 5, dtype: int8}\n"
                "    - {op: broadcast, group: g, count: 5, dtype: int32, root: 1}\n"
                "    - {op: barrier, group: g, name: sync}\n"
                "    - {op: send, peer: 1, count: 4}\n"
                "    - {op: recv, peer: 1, count: 4, name: r, dtype: fp32}\n"
                "  \"1\": [{op: compute, name: tiny, us: 0.0004}, {op: compute, name: small, us: "
                "0.0006}]\n");
    const SchedOpList *l = ops_of(s, 0);
    cr_assert_eq(l->len, 9);
    cr_assert_eq(l->ops[0].kind, SCHED_OP_COMPUTE);
    cr_assert_eq(l->ops[0].dur_ns, 1500);
    cr_assert_eq(l->ops[0].tokens, 128);
    cr_assert_eq(l->ops[0].layer, 3);
    cr_assert_str_eq(op_name(s, &l->ops[0]), "fwd");
    cr_assert_eq(l->ops[1].kind, SCHED_OP_ALL_REDUCE);
    cr_assert_eq(l->ops[1].count, 1048576);
    cr_assert_eq(l->ops[1].dtype, SCHED_DTYPE_FP32);
    cr_assert_str_eq(op_name(s, &l->ops[1]), "grad");
    cr_assert_eq(l->ops[2].kind, SCHED_OP_REDUCE_SCATTER);
    cr_assert_eq(l->ops[2].count, 1000);
    cr_assert_eq(l->ops[2].dtype, SCHED_DTYPE_FP16);
    cr_assert_str_eq(op_name(s, &l->ops[2]), "reduce_scatter");
    cr_assert_eq(l->ops[3].dtype, SCHED_DTYPE_FP8);
    cr_assert_eq(l->ops[3].tokens, 7);
    cr_assert_eq(l->ops[4].kind, SCHED_OP_ALL_TO_ALL);
    cr_assert_eq(l->ops[4].dtype, SCHED_DTYPE_INT8);
    cr_assert_eq(l->ops[5].kind, SCHED_OP_BROADCAST);
    cr_assert_eq(l->ops[5].root, 1);
    cr_assert_eq(l->ops[5].dtype, SCHED_DTYPE_INT32);
    cr_assert_eq(l->ops[6].kind, SCHED_OP_BARRIER);
    cr_assert_str_eq(op_name(s, &l->ops[6]), "sync");
    cr_assert_eq(l->ops[7].kind, SCHED_OP_SEND);
    cr_assert_eq(l->ops[7].group, 1);
    cr_assert_str_eq(op_name(s, &l->ops[7]), "send");
    cr_assert_eq(l->ops[8].kind, SCHED_OP_RECV);
    cr_assert_str_eq(op_name(s, &l->ops[8]), "r");
    cr_assert_eq(ops_of(s, 1)->ops[0].dur_ns, 0);
    cr_assert_eq(ops_of(s, 1)->ops[1].dur_ns, 1);
    scenario_free(s);
}

Test(scenario, repeat_and_nested_repeat_layers)
{
    Scenario *s = load_ok("kind: program\n"
                          "ranks: 1\n"
                          "programs:\n"
                          "  \"0\":\n"
                          "    - {op: compute, name: embed, us: 1}\n"
                          "    - op: repeat\n"
                          "      times: 3\n"
                          "      ops:\n"
                          "        - {op: compute, name: attn, us: 2}\n"
                          "        - op: repeat\n"
                          "          times: 2\n"
                          "          ops: [{op: compute, name: expert, us: 1}]\n"
                          "        - {op: repeat, times: 1, layer_start: 40, ops: "
                          "[{op: compute, name: side, us: 1}]}\n"
                          "        - {op: compute, name: pinned, us: 1, layer: 99}\n"
                          "    - {op: repeat, times: 2, layer_start: 10, ops: [{op: compute, "
                          "name: head, us: 1}]}\n");
    const SchedOpList *l = ops_of(s, 0);
    cr_assert_eq(l->len, 10);
    cr_assert_eq(l->ops[0].kind, SCHED_OP_COMPUTE);
    cr_assert_eq(l->ops[0].layer, -1);
    const SchedOp *outer = &l->ops[1];
    cr_assert_eq(outer->kind, SCHED_OP_REPEAT);
    cr_assert_eq(outer->times, 3);
    cr_assert_eq(outer->body_len, 6);
    cr_assert_eq(outer->layer_start, 0); /* top-level repeat defines layers from 0 */
    cr_assert_eq(l->ops[3].kind, SCHED_OP_REPEAT);
    cr_assert_eq(l->ops[3].times, 2);
    cr_assert_eq(l->ops[3].body_len, 1);
    cr_assert_eq(l->ops[3].layer_start, -1); /* nested: inherits */
    cr_assert_eq(l->ops[5].layer_start, 40); /* nested with its own layer_start */
    cr_assert_eq(l->ops[7].layer, 99);
    cr_assert_eq(l->ops[8].layer_start, 10);
    cr_assert_eq(l->ops[8].body_len, 1);
    cr_assert_eq(sched_program_rank_op_count(s->program, 0), 1 + 3 * (1 + 2 + 1 + 1) + 2);

    SchedProgram *u = sched_program_unroll(s->program);
    const SchedOpList *ul = sched_program_ops(u, 0);
    cr_assert_eq(ul->len, 18);
    /* iteration 1 of the outer repeat: attn, expert, expert, side, pinned */
    int32_t want[] = {-1, 0, 0, 0, 40, 99, 1, 1, 1, 40, 99, 2, 2, 2, 40, 99, 10, 11};
    for (uint32_t i = 0; i < ul->len; i++)
        cr_assert_eq(ul->ops[i].layer, want[i], "op %u layer %d", i, ul->ops[i].layer);
    sched_program_free(u);
    scenario_free(s);
}

Test(scenario, faults_parsed)
{
    Scenario *s = load_ok(HEAD4 "programs:\n"
                                "  \"*\": [{op: compute, name: fwd, us: 5}, {op: all_reduce, "
                                "group: tp, count: 8}]\n"
                                "faults:\n"
                                "  - {rank: 1, kind: delay, op: fwd, occurrence: 2, seconds: 1.5}\n"
                                "  - {rank: 2, kind: slowdown, factor: 3}\n"
                                "  - {rank: 3, kind: crash, at_s: 0.25}\n"
                                "  - {rank: 0, kind: crash, op: all_reduce, occurrence: 4}\n"
                                "  - {rank: 0, kind: skip, op: all_reduce}\n"
                                "  - {rank: 1, kind: delay, op: fwd, seconds: 0}\n");
    cr_assert_eq(s->faults->len, 6);
    const SchedFault *f = (const SchedFault *)(void *)s->faults->data;
    uint32_t fwd = sched_program_name(s->program, "fwd");
    uint32_t ar = sched_program_name(s->program, "all_reduce");

    cr_assert_eq(f[0].kind, SCHED_FAULT_DELAY);
    cr_assert_eq(f[0].rank, 1);
    cr_assert_eq(f[0].op_name, (int64_t)fwd);
    cr_assert_eq(f[0].occurrence, 2);
    cr_assert_eq(f[0].delay_ns, INT64_C(1500000000));
    cr_assert_eq(f[0].at_ns, -1);
    cr_assert_eq(f[0].factor, 1.0);

    cr_assert_eq(f[1].kind, SCHED_FAULT_SLOWDOWN);
    cr_assert_eq(f[1].rank, 2);
    cr_assert_eq(f[1].factor, 3.0);
    cr_assert_eq(f[1].op_name, -1);
    cr_assert_eq(f[1].at_ns, -1);

    cr_assert_eq(f[2].kind, SCHED_FAULT_CRASH);
    cr_assert_eq(f[2].at_ns, INT64_C(250000000));
    cr_assert_eq(f[2].op_name, -1);

    cr_assert_eq(f[3].kind, SCHED_FAULT_CRASH);
    cr_assert_eq(f[3].op_name, (int64_t)ar);
    cr_assert_eq(f[3].occurrence, 4);
    cr_assert_eq(f[3].at_ns, -1);

    cr_assert_eq(f[4].kind, SCHED_FAULT_SKIP);
    cr_assert_eq(f[4].occurrence, 1);
    cr_assert_eq(f[5].occurrence, 1);
    cr_assert_eq(f[5].delay_ns, 0);

    SchedConfig cfg = scenario_engine_config(s);
    cr_assert_eq(cfg.n_faults, 6);
    cr_assert_eq(cfg.faults, f);
    scenario_free(s);
}

Test(scenario, fault_on_op_inside_repeat)
{
    Scenario *s = load_ok("kind: program\nranks: 1\nprograms:\n  \"0\":\n"
                          "    - {op: repeat, times: 4, ops: [{op: compute, name: deep, us: 1}]}\n"
                          "faults: [{rank: 0, kind: skip, op: deep, occurrence: 3}]\n");
    cr_assert_eq(s->faults->len, 1);
    scenario_free(s);
}

Test(scenario, hardware_preset_and_overrides)
{
    Scenario *s = load_ok("kind: program\nranks: 1\nprograms: {\"0\": []}\nhardware: b200\n");
    cr_assert_str_eq(s->hardware.name, "b200");
    cr_assert_str_eq(s->hardware_source, "preset b200");
    cr_assert_eq(s->hardware.tiers[0].bw_bytes_per_s, 900e9);
    scenario_free(s);

    s = load_ok("kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                "hardware: {preset: h200, hbm_gib: 100, tiers: {ib: {bandwidth_gb_s: 25}}}\n");
    cr_assert_str_eq(s->hardware.name, "h200");
    cr_assert_str_eq(s->hardware_source, "preset h200");
    cr_assert_eq(s->hardware.hbm_bytes, UINT64_C(100) << 30);
    cr_assert_eq(s->hardware.tiers[1].bw_bytes_per_s, 25e9);
    cr_assert_eq(s->hardware.tiers[1].latency_ns, 2700); /* untouched fields stay */
    cr_assert_eq(s->hardware.tiers[0].bw_bytes_per_s, 450e9);
    scenario_free(s);

    /* a mapping without preset or file overrides the default preset */
    s = load_ok("kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                "hardware:\n  launch_latency_us: 2.5\n  tiers: {nvlink: {latency_us: 0}}\n");
    cr_assert_str_eq(s->hardware.name, "h100");
    cr_assert_eq(s->hardware.launch_latency_ns, 2500);
    cr_assert_eq(s->hardware.tiers[0].latency_ns, 0);
    scenario_free(s);

    s = load_ok("kind: program\nranks: 1\nprograms: {\"0\": []}\nhardware: {preset: h200}\n");
    cr_assert_str_eq(s->hardware.name, "h200");
    scenario_free(s);
}

Test(scenario, nodes_algorithms_contention_link_faults)
{
    Scenario *s = load_ok("kind: program\nranks: 12\nprograms: {\"*\": []}\n"
                          "nodes: 3\n"
                          "collective_algorithm: {all_reduce: tree, all_gather: ring, "
                          "all_to_all: direct, reduce_scatter: auto}\n"
                          "contention: false\n"
                          "faults:\n"
                          "  - {kind: link, tier: ib, node: 2, factor: 0.25}\n"
                          "  - {rank: 1, kind: slowdown, factor: 2}\n"
                          "  - {kind: link, tier: nvlink, node: 0, factor: 3}\n");
    cr_assert_eq(s->nodes, 3);
    cr_assert_eq(s->algo[NET_ALL_REDUCE], NET_ALGO_TREE);
    cr_assert_eq(s->algo[NET_ALL_GATHER], NET_ALGO_RING);
    cr_assert_eq(s->algo[NET_ALL_TO_ALL], NET_ALGO_DIRECT);
    cr_assert_eq(s->algo[NET_REDUCE_SCATTER], NET_ALGO_AUTO);
    cr_assert_eq(s->algo[NET_BROADCAST], NET_ALGO_AUTO);
    cr_assert_not(s->contention);
    cr_assert_eq(s->faults->len, 1);
    cr_assert_eq(s->link_faults->len, 2);
    const NetLinkFault *lf = (const NetLinkFault *)(const void *)s->link_faults->data;
    cr_assert_eq(lf[0].tier, 1);
    cr_assert_eq(lf[0].node, 2);
    cr_assert_eq(lf[0].factor, 0.25);
    cr_assert_eq(lf[1].tier, 0);
    cr_assert_eq(lf[1].factor, 3.0);

    SchedConfig cfg = scenario_engine_config(s);
    cr_assert_eq(cfg.fabric.hw, &s->hardware);
    cr_assert_eq(cfg.fabric.n_ranks, 12);
    cr_assert_eq(cfg.fabric.nodes, 3);
    cr_assert_eq(cfg.fabric.algo[NET_ALL_REDUCE], NET_ALGO_TREE);
    cr_assert_not(cfg.fabric.contention);
    cr_assert_eq(cfg.fabric.n_faults, 2);
    cr_assert_eq(cfg.fabric.faults, lf);
    cr_assert_eq(cfg.n_faults, 1);
    scenario_free(s);

    /* without nodes: the fewest that fit (12 ranks on 8 per node: 2), which link faults use */
    s = load_ok("kind: program\nranks: 12\nprograms: {\"*\": []}\ncontention: true\n"
                "faults: [{kind: link, tier: ib, node: 1, factor: 0.5}]\n");
    cr_assert_eq(s->nodes, 0);
    cr_assert(s->contention);
    cr_assert_eq(s->link_faults->len, 1);
    cfg = scenario_engine_config(s);
    cr_assert_eq(cfg.fabric.nodes, 0);
    cr_assert(cfg.fabric.contention);
    scenario_free(s);

    /* nodes exactly full, and more nodes than needed */
    s = load_ok("kind: program\nranks: 16\nprograms: {\"*\": []}\nnodes: 2\n");
    cr_assert_eq(s->nodes, 2);
    scenario_free(s);
    s = load_ok("kind: program\nranks: 1\nprograms: {\"*\": []}\nnodes: 4\n"
                "faults: [{kind: link, tier: ib, node: 3, factor: 0.5}]\n");
    cr_assert_eq(s->nodes, 4);
    scenario_free(s);
}

/* Writes `text` to DIR/NAME, creating DIR's subfolders. */
static void write_file(const char *dir, const char *name, const char *text)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *parent = g_path_get_dirname(path);
    cr_assert_eq(g_mkdir_with_parents(parent, 0700), 0);
    cr_assert(g_file_set_contents(path, text, -1, NULL));
}

static void remove_tree(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_DIR))
            remove_tree(p);
        else
            g_unlink(p);
    }
    g_rmdir(dir);
}

static const char cluster_yaml[] =
    "# a two-tier test cluster\n"
    "name: lab\n"
    "devices_per_node: 4\n"
    "launch_latency_us: 5\n"
    "tiers:\n"
    "  - {name: pcie, span: node, bandwidth_gb_s: 32, latency_us: 1}\n"
    "  - {name: eth, span: cluster, bandwidth_gb_s: 12.5, "
    "latency_us: 10}\n";

Test(scenario, hardware_file_relative_to_the_scenario)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-hw-XXXXXX", NULL);
    cr_assert_not_null(dir);
    write_file(dir, "hw/lab.yaml", cluster_yaml);
    write_file(dir, "scn/x.yaml",
               "kind: program\nranks: 6\nprograms: {\"*\": []}\nhardware: ../hw/lab.yaml\n"
               "faults: [{kind: link, tier: eth, node: 1, factor: 0.5}]\n");
    write_file(dir, "scn/y.yaml",
               "kind: program\nranks: 6\nprograms: {\"*\": []}\n"
               "hardware: {file: ../hw/lab.yaml, tiers: {eth: {bandwidth_gb_s: 25}}}\n");
    write_file(dir, "scn/local.yml", cluster_yaml);
    write_file(dir, "scn/z.yaml",
               "kind: program\nranks: 6\nprograms: {\"*\": []}\nhardware: local.yml\n");
    write_file(dir, "scn/missing.yaml",
               "kind: program\nranks: 6\nprograms: {\"*\": []}\nhardware: ./nope.yaml\n");
    write_file(dir, "hw/bad.yaml",
               "name: bad\ndevices_per_node: 4\nlaunch_latency_us: 5\n"
               "tiers:\n  - {name: eth, span: cluster, bandwidth_gb_s: -1, "
               "latency_us: 10}\n");
    write_file(dir, "scn/bad.yaml",
               "kind: program\nranks: 6\nprograms: {\"*\": []}\nhardware: ../hw/bad.yaml\n");

    GError *err = NULL;
    g_autofree char *x = g_build_filename(dir, "scn", "x.yaml", NULL);
    Scenario *s = scenario_load(x, NULL, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    g_autofree char *want = g_build_filename(dir, "scn", "../hw/lab.yaml", NULL);
    cr_assert_str_eq(s->hardware_source, want);
    cr_assert_str_eq(s->hardware.name, "lab");
    cr_assert_eq(s->hardware.devices_per_node, 4);
    cr_assert_eq(s->hardware.n_tiers, 2);
    cr_assert_eq(s->hardware.tiers[0].span_devices, 4);
    cr_assert_eq(s->hardware.tiers[1].bw_bytes_per_s, 12.5e9);
    cr_assert_eq(s->link_faults->len, 1);
    scenario_free(s);

    g_autofree char *y = g_build_filename(dir, "scn", "y.yaml", NULL);
    s = scenario_load(y, NULL, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_eq(s->hardware.tiers[1].bw_bytes_per_s, 25e9);
    scenario_free(s);

    g_autofree char *z = g_build_filename(dir, "scn", "z.yaml", NULL);
    s = scenario_load(z, NULL, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_str_eq(s->hardware.name, "lab");
    scenario_free(s);

    /* --set can point at a hardware file too, relative to the scenario */
    const char *ov[] = {"hardware=../hw/lab.yaml", NULL};
    g_autofree char *m = g_build_filename(dir, "scn", "missing.yaml", NULL);
    s = scenario_load(m, ov, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_str_eq(s->hardware.name, "lab");
    scenario_free(s);

    s = scenario_load(m, NULL, &err);
    cr_assert_null(s);
    cr_assert_eq(err->domain, SCENARIO_ERROR);
    cr_assert_eq(err->code, SCENARIO_ERROR_IO);
    g_autofree char *prefix = g_strdup_printf("%s:4: key 'hardware': cannot read hardware file", m);
    cr_assert(g_str_has_prefix(err->message, prefix), "%s", err->message);
    assert_has(err->message, "no such file");
    g_clear_error(&err);

    /* an error inside the hardware file names that file and line */
    g_autofree char *b = g_build_filename(dir, "scn", "bad.yaml", NULL);
    s = scenario_load(b, NULL, &err);
    cr_assert_null(s);
    cr_assert_eq(err->code, SCENARIO_ERROR_INVALID);
    g_autofree char *bad_hw = g_build_filename(dir, "scn", "../hw/bad.yaml", NULL);
    g_autofree char *prefix2 = g_strdup_printf("%s:5: key 'bandwidth_gb_s': ", bad_hw);
    cr_assert(g_str_has_prefix(err->message, prefix2), "%s", err->message);
    g_clear_error(&err);

    remove_tree(dir);
}

Test(scenario, policies_and_timeouts)
{
    Scenario *s = load_ok("kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                          "on_mismatch: abort\n"
                          "watchdog: {collective_timeout_s: 0}\n"
                          "straggler_threshold_s: 2.5\n"
                          "description: |\n  free text\n  over lines\n");
    cr_assert_eq(s->on_mismatch, SCHED_MISMATCH_ABORT);
    cr_assert_eq(s->collective_timeout_ns, 0);
    cr_assert_eq(s->straggler_threshold_ns, INT64_C(2500000000));
    SchedConfig cfg = scenario_engine_config(s);
    cr_assert_eq(cfg.on_mismatch, SCHED_MISMATCH_ABORT);
    cr_assert_eq(cfg.collective_timeout_ns, 0);
    cr_assert_eq(cfg.straggler_threshold_ns, INT64_C(2500000000));
    cr_assert_eq(cfg.n_faults, 0);
    scenario_free(s);
}

Test(scenario, set_overrides)
{
    const char *yaml = "name: t\nkind: program\nranks: 2\n"
                       "hardware: {preset: h200, tiers: {nvlink: {bandwidth_gb_s: 100}}}\n"
                       "watchdog: {collective_timeout_s: 60}\n"
                       "programs: {\"*\": [{op: compute, name: fwd, us: 1}]}\n";
    const char *ov[] = {"on_mismatch=continue",
                        "watchdog.collective_timeout_s=300",
                        "straggler_threshold_s=0",
                        "hardware=b200",
                        "name=renamed",
                        NULL};
    Scenario *s = load_ok_set(yaml, ov);
    cr_assert_eq(s->on_mismatch, SCHED_MISMATCH_CONTINUE);
    cr_assert_eq(s->collective_timeout_ns, INT64_C(300000000000));
    cr_assert_eq(s->straggler_threshold_ns, 0);
    cr_assert_str_eq(s->hardware.name, "b200");
    cr_assert_eq(s->hardware.tiers[0].bw_bytes_per_s, 900e9);
    cr_assert_str_eq(s->name, "renamed");
    cr_assert_str_eq(s->text, yaml); /* the stored text is the file, not the overrides */
    scenario_free(s);

    /* creating keys and intermediate mappings */
    const char *ov2[] = {"hardware.tiers.ib.bandwidth_gb_s=25",
                         "watchdog.collective_timeout_s=7",
                         "nodes=2",
                         "collective_algorithm.all_reduce=ring",
                         "contention=false",
                         NULL};
    s = load_ok_set("kind: program\nranks: 1\nprograms: {\"0\": []}\n", ov2);
    cr_assert_eq(s->hardware.tiers[1].bw_bytes_per_s, 25e9);
    cr_assert_eq(s->nodes, 2);
    cr_assert_eq(s->algo[NET_ALL_REDUCE], NET_ALGO_RING);
    cr_assert_not(s->contention);
    cr_assert_eq(s->collective_timeout_ns, INT64_C(7000000000));
    scenario_free(s);
}

Test(scenario, load_from_file_and_io_error)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-scn-XXXXXX", NULL);
    cr_assert_not_null(dir);
    g_autofree char *path = g_build_filename(dir, "from-file.yaml", NULL);
    cr_assert(g_file_set_contents(path, cycle_yaml, -1, NULL));
    GError *err = NULL;
    Scenario *s = scenario_load(path, NULL, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_str_eq(s->path, path);
    cr_assert_str_eq(s->text, cycle_yaml);
    scenario_free(s);

    cr_assert(
        g_file_set_contents(path, "kind: program\nranks: 1\nprograms: {\"0\": []}\n", -1, NULL));
    s = scenario_load(path, NULL, &err);
    cr_assert_not_null(s);
    cr_assert_str_eq(s->name, "from-file");
    scenario_free(s);

    /* a NUL byte inside the file */
    cr_assert(g_file_set_contents(path, "kind: program\n\0ranks: 1\n", 25, NULL));
    s = scenario_load(path, NULL, &err);
    cr_assert_null(s);
    cr_assert_eq(err->code, SCENARIO_ERROR_SYNTAX, "%s", err->message);
    g_clear_error(&err);
    g_unlink(path);
    g_rmdir(dir);

    s = scenario_load("/nonexistent/dir/x.yaml", NULL, &err);
    cr_assert_null(s);
    cr_assert_eq(err->domain, SCENARIO_ERROR);
    cr_assert_eq(err->code, SCENARIO_ERROR_IO);
    assert_has(err->message, "/nonexistent/dir/x.yaml");
    g_error_free(err);
}

Test(scenario, anchors_without_aliases_are_fine)
{
    Scenario *s = load_ok("kind: program\nranks: 1\nprograms: {\"0\": &ops []}\n");
    scenario_free(s);
}

/* ---- bad input: syntax and shape ---- */

Test(scenario_errors, malformed_yaml)
{
    g_autofree char *msg = load_fail_set("name: t\nkind: program\nranks: [1, 2\nprograms: {}\n",
                                         NULL, SCENARIO_ERROR_SYNTAX);
    assert_has(msg, "t.yaml:");
    assert_has(msg, "malformed YAML");
    assert_has(msg, "did not find expected ',' or ']'");
    assert_has(msg, "line 3"); /* the context: the flow sequence that started on line 3 */

    g_autofree char *m2 =
        load_fail_set("name: t\nkind: program\n\tranks: 1\n", NULL, SCENARIO_ERROR_SYNTAX);
    assert_has(m2, "t.yaml:3: malformed YAML");
    assert_has(m2, "tab");

    g_autofree char *m3 =
        load_fail_set("name: t\nkind: 'unterminated\n", NULL, SCENARIO_ERROR_SYNTAX);
    assert_has(m3, "t.yaml:");
    assert_has(m3, "quoted scalar");

    g_autofree char *m4 = load_fail_set("name: \xff\xfe\n", NULL, SCENARIO_ERROR_SYNTAX);
    assert_has(m4, "t.yaml:1: malformed YAML");
    assert_has(m4, "UTF-8");
}

Test(scenario_errors, empty_file)
{
    expect_invalid("", "t.yaml:1", NULL, "empty");
    expect_invalid("# only a comment\n\n", "t.yaml:1", NULL, "empty");
    expect_invalid("---\n", "t.yaml:1", NULL, "empty");
    expect_invalid("--- ~\n", "t.yaml:1", NULL, "top level is nothing (null)");
}

Test(scenario_errors, top_level_not_a_mapping)
{
    expect_invalid("- a\n- b\n", "t.yaml:1", NULL, "top level is a list; expected a mapping");
    expect_invalid("just text\n", "t.yaml:1", NULL, "top level is 'just text'");
}

Test(scenario_errors, second_document)
{
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\n---\nname: x\n", "t.yaml:4",
                   NULL, "second YAML document");
}

Test(scenario_errors, unknown_key_with_suggestion)
{
    expect_invalid("name: t\nkind: program\nranks: 4\ngrups: {a: [0]}\n", "t.yaml:4", "grups",
                   "did you mean 'groups'? (valid: name, kind,");
    expect_invalid("name: t\nkind: program\nranks: 4\nranks_per_node: 8\n", "t.yaml:4",
                   "ranks_per_node", "unknown key");
    g_autofree char *msg = load_fail_set("zzzzzzz: 1\n", NULL, SCENARIO_ERROR_INVALID);
    assert_has(msg, "t.yaml:1: key 'zzzzzzz': unknown key");
    assert_has(msg, "valid: name, kind, description, ranks, groups, programs");
    assert_lacks(msg, "did you mean");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                   "watchdog:\n  collective_timeout: 5\n",
                   "t.yaml:5", "collective_timeout", "did you mean 'collective_timeout_s'?");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                   "hardware: {preset: h100, bandwidth: 5}\n",
                   "t.yaml:4", "bandwidth", "unknown key in hardware; valid: preset, file, name");
}

Test(scenario_errors, kind_missing_or_unsupported)
{
    expect_invalid("name: t\nranks: 1\nprograms: {\"0\": []}\n", "t.yaml:1", "kind",
                   "kind 'model' is not supported yet by this build; use kind: program");
    expect_invalid("name: t\nkind: model\n", "t.yaml:2", "kind",
                   "kind 'model' is not supported yet");
    expect_invalid("name: t\nkind: programm\n", "t.yaml:2", "kind", "did you mean 'program'?");
}

Test(scenario_errors, missing_required_keys)
{
    expect_invalid("name: t\nkind: program\nprograms: {}\n", "t.yaml:1", "ranks", "missing");
    expect_invalid("name: t\nkind: program\nranks: 2\n", "t.yaml:1", "programs", "missing");
}

Test(scenario_errors, wrong_types)
{
    expect_invalid("kind: program\nranks: abc\n", "t.yaml:2", "ranks",
                   "expected a number, got 'abc'");
    expect_invalid("kind: program\nranks: [1]\n", "t.yaml:2", "ranks",
                   "expected a number, got a list");
    expect_invalid("kind: program\nranks: \"4\"\n", "t.yaml:2", "ranks", "without quotes");
    expect_invalid("kind: program\nranks: 2\ngroups: [a, b]\n", "t.yaml:3", "groups",
                   "expected a mapping, got a list");
    expect_invalid("kind: program\nranks: 2\nprograms:\n  - a\n", "t.yaml:4", "programs",
                   "expected a mapping, got a list");
    expect_invalid("kind: program\nranks: 2\nprograms:\n  \"*\": {op: compute}\n", "t.yaml:4", "*",
                   "expected a list, got a mapping");
    expect_invalid("kind: program\nranks: 2\nprograms:\n  \"*\": [compute]\n", "t.yaml:4", "*",
                   "an op must be a mapping");
    expect_invalid("kind: program\nranks: 2\nprograms:\n  \"*\": [{op: compute, name: [x], "
                   "us: 1}]\n",
                   "t.yaml:4", "name", "expected a string, got a list");
    expect_invalid("kind: program\nranks: 2\nprograms: {\"*\": []}\nwatchdog: 5\n", "t.yaml:4",
                   "watchdog", "expected a mapping");
    expect_invalid("kind: program\nranks: 2\nprograms: {\"*\": []}\nfaults: {rank: 1}\n",
                   "t.yaml:4", "faults", "expected a list");
    expect_invalid("kind: program\nranks: 2\nprograms: {\"*\": []}\nhardware: [h100]\n", "t.yaml:4",
                   "hardware", "got a list");
    expect_invalid("kind: program\nranks:\nprograms: {\"*\": []}\n", "t.yaml:2", "ranks",
                   "got nothing");
    expect_invalid("kind: program\nranks: 1\n? [a, b]\n: 1\n", "t.yaml:3", NULL,
                   "keys must be plain names");
}

Test(scenario_errors, huge_numbers)
{
    expect_invalid("kind: program\nranks: 10000000000\n", "t.yaml:2", "ranks",
                   "out of range; valid: 1..1048576");
    expect_invalid("kind: program\nranks: 0\n", "t.yaml:2", "ranks",
                   "out of range; valid: 1..1048576");
    expect_invalid(HEAD4 "programs:\n"
                         "  \"*\": [{op: all_gather, group: tp, count: 99999999999999999999999}]\n",
                   "t.yaml:7", "count", "out of range; valid: 0..281474976710656");
    expect_invalid(HEAD4 "programs:\n"
                         "  \"*\": [{op: all_gather, group: tp, count: 281474976710657}]\n",
                   "t.yaml:7", "count", "out of range");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: 1e400}]\n",
                   "t.yaml:7", "count", "out of range");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: .inf}]\n",
                   "t.yaml:7", "count", "out of range");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: compute, name: x, us: 1e400}]\n", "t.yaml:7",
                   "us", "out of range");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: compute, name: x, us: 1e13}]\n", "t.yaml:7",
                   "us", "out of range; valid: 0..1e+12");
    g_autofree char *digits = g_strnfill(300, '9');
    g_autofree char *yaml = g_strdup_printf(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: "
                                                  "tp, count: %s}]\n",
                                            digits);
    expect_invalid(yaml, "t.yaml:7", "count", "out of range");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: repeat, times: 10000001, ops: [{op: compute, "
                         "name: x, us: 1}]}]\n",
                   "t.yaml:7", "times", "out of range; valid: 0..10000000");
}

Test(scenario_errors, non_integer_where_integer_expected)
{
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: 1.5}]\n",
                   "t.yaml:7", "count", "expected an integer, got 1.5");
    expect_invalid("kind: program\nranks: 2.5\n", "t.yaml:2", "ranks", "expected an integer");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: 0x10}]\n",
                   "t.yaml:7", "count", "expected a number, got '0x10'");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: \"12\"}]\n",
                   "t.yaml:7", "count", "without quotes");
}

Test(scenario_errors, negative_count_and_duration)
{
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_reduce, group: tp, count: -1}]\n",
                   "t.yaml:7", "count", "-1 is out of range; valid: 0..");
    expect_invalid(HEAD4 "programs:\n  \"*\":\n    - {op: compute, name: x, us: -0.5}\n",
                   "t.yaml:8", "us", "-0.5 is out of range; valid: 0..");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\nstraggler_threshold_s: -1\n",
                   "t.yaml:4", "straggler_threshold_s", "out of range");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                   "watchdog: {collective_timeout_s: -3}\n",
                   "t.yaml:4", "collective_timeout_s", "out of range");
}

Test(scenario_errors, duplicate_mapping_keys)
{
    expect_invalid("name: t\nkind: program\nranks: 4\nranks: 5\n", "t.yaml:4", "ranks",
                   "duplicate key (first at line 3)");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: 1, count: 2}]\n",
                   "t.yaml:7", "count", "duplicate key");
    expect_invalid("kind: program\nranks: 2\ngroups:\n  a: [0]\n  a: [1]\n", "t.yaml:5", "a",
                   "duplicate key (first at line 4)");
}

Test(scenario_errors, aliases_rejected)
{
    expect_invalid("kind: program\nranks: 2\n"
                   "programs:\n"
                   "  \"0\": &ops [{op: compute, name: x, us: 1}]\n"
                   "  \"1\": *ops\n",
                   "t.yaml:5", "1", "aliases (*name)");
    expect_invalid("kind: program\nranks: 1\nprograms:\n  \"0\":\n"
                   "    - &c {op: compute, name: x, us: 1}\n"
                   "    - *c\n",
                   "t.yaml:5", NULL, "alias");
    /* a recursive alias must not loop */
    expect_invalid("a: &x [*x]\n", "t.yaml:1", NULL, "alias");
}

Test(scenario_errors, too_deep_nesting)
{
    GString *s = g_string_new("kind: program\nranks: 1\nprograms: {\"0\": []}\ndescription: ");
    for (int i = 0; i < 5000; i++)
        g_string_append_c(s, '[');
    for (int i = 0; i < 5000; i++)
        g_string_append_c(s, ']');
    g_string_append_c(s, '\n');
    expect_invalid(s->str, "t.yaml:4", NULL, "nested deeper than");
    g_string_free(s, TRUE);
}

/* ---- bad input: ranks and groups ---- */

Test(scenario_errors, rank_out_of_range)
{
    expect_invalid("kind: program\nranks: 3\nprograms:\n  0-3: []\n", "t.yaml:4", "0-3",
                   "rank 3 is out of range; valid: 0..2");
    expect_invalid("kind: program\nranks: 3\nprograms:\n  \"99999999999999999999\": []\n",
                   "t.yaml:4", "99999999999999999999", "out of range");
    expect_invalid("kind: program\nranks: 3\nprograms:\n  abc: []\n", "t.yaml:4", "abc",
                   "not a rank set; valid: a rank set such as");
    expect_invalid("kind: program\nranks: 8\nprograms:\n  5-2: []\n", "t.yaml:4", "5-2",
                   "runs backwards");
    expect_invalid("kind: program\nranks: 8\nprograms:\n  \"1,,2\": []\n", "t.yaml:4", "1,,2",
                   "not a rank set");
    expect_invalid("kind: program\nranks: 8\nprograms:\n  \"0-3,2\": []\n", "t.yaml:4", "0-3,2",
                   "rank 2 appears twice");
}

Test(scenario_errors, rank_listed_twice_or_missing)
{
    expect_invalid("kind: program\nranks: 8\nprograms:\n  0-3: []\n  \"3,4\": []\n", "t.yaml:5",
                   "3,4", "rank 3 already has a program (key '0-3' at line 4)");
    expect_invalid("kind: program\nranks: 8\nprograms:\n  0-3: []\n  \"6\": []\n", "t.yaml:3",
                   "programs", "ranks 4-5,7 have no program");
    expect_invalid("kind: program\nranks: 8\nprograms:\n  0-6: []\n", "t.yaml:3", "programs",
                   "\"*\"");
    expect_invalid("kind: program\nranks: 8\nprograms:\n  \"*\": []\n  \" *\": []\n", "t.yaml:5",
                   " *", "second \"*\"");
}

Test(scenario_errors, group_member_problems)
{
    expect_invalid("kind: program\nranks: 4\ngroups:\n  a: [0, 4]\n", "t.yaml:4", "a",
                   "4 is out of range; valid: 0..3");
    expect_invalid("kind: program\nranks: 4\ngroups:\n  a: \"2-9\"\n", "t.yaml:4", "a",
                   "rank 9 is out of range");
    expect_invalid("kind: program\nranks: 4\ngroups:\n  a: [0, 1,\n      1]\n", "t.yaml:5", "a",
                   "duplicate member 1 in group 'a'");
    expect_invalid("kind: program\nranks: 4\ngroups:\n  a: []\n", "t.yaml:4", "a",
                   "group 'a' is empty");
    expect_invalid("kind: program\nranks: 4\ngroups:\n  a: {x: 1}\n", "t.yaml:4", "a",
                   "expected a list of ranks or a rank-set string, got a mapping");
    expect_invalid("kind: program\nranks: 4\ngroups:\n  a: [zero]\n", "t.yaml:4", "a",
                   "expected a number, got 'zero'");
    expect_invalid("kind: program\nranks: 4\ngroups:\n  a:\n", "t.yaml:4", "a", "got nothing");
}

Test(scenario_errors, unknown_group)
{
    expect_invalid(HEAD4
                   "  dp: [0, 2]\nprograms:\n  \"*\": [{op: all_reduce, group: td, count: 1}]\n",
                   "t.yaml:8", "group", "no group named 'td'; did you mean 'tp'? (valid: tp, dp)");
    expect_invalid("kind: program\nranks: 2\nprograms:\n  \"*\": [{op: barrier, group: w}]\n",
                   "t.yaml:4", "group", "no groups are defined");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_reduce, count: 1}]\n", "t.yaml:7", "group",
                   "missing");
}

Test(scenario_errors, rank_not_in_group)
{
    expect_invalid("kind: program\nranks: 4\ngroups: {a: [0, 1], b: [2, 3], c: \"1-3\"}\n"
                   "programs:\n"
                   "  0-1: [{op: all_reduce, group: a, count: 1}]\n"
                   "  2-3:\n"
                   "    - {op: all_reduce, group: a, count: 1}\n",
                   "t.yaml:7", "group",
                   "rank 2 (programs key '2-3') is not a member of group 'a' (members 0-1); "
                   "valid groups for rank 2: b, c");
    expect_invalid("kind: program\nranks: 4\ngroups: {a: [0, 1]}\nprograms:\n"
                   "  \"*\": [{op: broadcast, group: a, count: 1, root: 0}]\n",
                   "t.yaml:5", "group", "rank 2 (programs key '*') is not a member");
}

Test(scenario_errors, broadcast_root)
{
    expect_invalid("kind: program\nranks: 4\ngroups: {a: [0, 1], b: [2, 3]}\nprograms:\n"
                   "  0-1: [{op: broadcast, group: a, count: 1, root: 2}]\n  2-3: []\n",
                   "t.yaml:5", "root", "root 2 is not a member of group 'a'; valid: one of 0-1");
    expect_invalid("kind: program\nranks: 2\ngroups: {a: [0, 1]}\nprograms:\n"
                   "  \"*\": [{op: broadcast, group: a, count: 1}]\n",
                   "t.yaml:5", "root", "missing");
}

Test(scenario_errors, send_recv_peer)
{
    expect_invalid("kind: program\nranks: 4\nprograms:\n  0-1: [{op: send, peer: 1, count: 1}]\n"
                   "  2-3: []\n",
                   "t.yaml:4", "peer", "rank 1 (programs key '0-1') cannot be its own peer");
    expect_invalid("kind: program\nranks: 2\nprograms:\n  \"0\": [{op: send, peer: 2, count: 1}]\n"
                   "  \"1\": []\n",
                   "t.yaml:4", "peer", "out of range; valid: 0..1");
    expect_invalid("kind: program\nranks: 2\nprograms:\n  \"0\": [{op: recv, count: 1}]\n"
                   "  \"1\": []\n",
                   "t.yaml:4", "peer", "missing");
    expect_invalid("kind: program\nranks: 2\nprograms:\n  \"0\": [{op: recv, peer: 1}]\n"
                   "  \"1\": []\n",
                   "t.yaml:4", "count", "missing");
}

/* ---- bad input: ops ---- */

Test(scenario_errors, unknown_dtype)
{
    expect_invalid(HEAD4
                   "programs:\n  \"*\": [{op: all_gather, group: tp, count: 1, dtype: bf61}]\n",
                   "t.yaml:7", "dtype",
                   "unknown value 'bf61'; did you mean 'bf16'? (valid: bf16, fp16, fp32, fp8, "
                   "int8, int32)");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: 1, dtype: "
                         "float64}]\n",
                   "t.yaml:7", "dtype", "valid: bf16, fp16, fp32, fp8, int8, int32");
}

Test(scenario_errors, unknown_op)
{
    expect_invalid(HEAD4 "programs:\n  \"*\":\n    - {op: allgather, group: tp, count: 1}\n",
                   "t.yaml:8", "op", "unknown value 'allgather'; did you mean 'all_gather'?");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: frobnicate}]\n", "t.yaml:7", "op",
                   "valid: compute, all_reduce, reduce_scatter, all_gather, all_to_all, "
                   "broadcast, barrier, send, recv, repeat");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{name: x, us: 1}]\n", "t.yaml:7", "op",
                   "missing; every op needs op:");
}

Test(scenario_errors, key_of_another_op_kind)
{
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: 1, us: 5}]\n",
                   "t.yaml:7", "us",
                   "not valid for op all_gather; valid: op, group, count, dtype, name, tokens, "
                   "layer");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, count: 1, root: 0}]\n",
                   "t.yaml:7", "root", "not valid for op all_gather");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: compute, name: x, us: 1, group: tp}]\n",
                   "t.yaml:7", "group", "not valid for op compute");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: all_gather, group: tp, cout: 1}]\n", "t.yaml:7",
                   "cout", "unknown key in op all_gather; did you mean 'count'?");
}

Test(scenario_errors, compute_fields)
{
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: compute, us: 1}]\n", "t.yaml:7", "name",
                   "missing");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: compute, name: x}]\n", "t.yaml:7", "us",
                   "missing");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: compute, name: \"\", us: 1}]\n", "t.yaml:7",
                   "name", "expected a string, got nothing");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: compute, name: x, us: 1, layer: -1}]\n",
                   "t.yaml:7", "layer", "out of range");
    expect_invalid(HEAD4 "programs:\n  \"*\": [{op: compute, name: x, us: 1, tokens: 1.5}]\n",
                   "t.yaml:7", "tokens", "expected an integer");
}

Test(scenario_errors, repeat_problems)
{
    expect_invalid(HEAD4 "programs:\n  \"*\":\n    - {op: repeat, times: 3}\n", "t.yaml:8", "ops",
                   "missing; repeat needs ops:");
    expect_invalid(HEAD4 "programs:\n  \"*\":\n    - {op: repeat, times: 3, ops: []}\n", "t.yaml:8",
                   "ops", "empty list");
    expect_invalid(HEAD4 "programs:\n  \"*\":\n    - {op: repeat, ops: [{op: compute, name: x, "
                         "us: 1}]}\n",
                   "t.yaml:8", "times", "missing");
    expect_invalid(HEAD4 "programs:\n  \"*\":\n    - {op: repeat, times: 2, ops: {op: compute}}\n",
                   "t.yaml:8", "ops", "expected a list, got a mapping");
    expect_invalid(HEAD4 "programs:\n  \"*\":\n    - {op: repeat, times: 2, layer: 3, ops: "
                         "[{op: compute, name: x, us: 1}]}\n",
                   "t.yaml:8", "layer", "not valid for op repeat");
    expect_invalid(HEAD4 "programs:\n  \"*\":\n    - {op: repeat, times: 2, layer_start: -1, ops: "
                         "[{op: compute, name: x, us: 1}]}\n",
                   "t.yaml:8", "layer_start", "out of range");
    /* nine nested repeats: one too many */
    GString *s = g_string_new(HEAD4 "programs:\n  \"*\": ");
    for (int i = 0; i < SCHED_MAX_REPEAT_DEPTH + 1; i++)
        g_string_append(s, "[{op: repeat, times: 1, ops: ");
    g_string_append(s, "[{op: compute, name: x, us: 1}]");
    for (int i = 0; i < SCHED_MAX_REPEAT_DEPTH + 1; i++)
        g_string_append(s, "}]");
    g_string_append_c(s, '\n');
    expect_invalid(s->str, "t.yaml:7", "op", "repeats nest deeper than 8");
    g_string_free(s, TRUE);
    /* exactly eight is fine */
    s = g_string_new(HEAD4 "programs:\n  \"*\": ");
    for (int i = 0; i < SCHED_MAX_REPEAT_DEPTH; i++)
        g_string_append(s, "[{op: repeat, times: 2, ops: ");
    g_string_append(s, "[{op: compute, name: x, us: 1}]");
    for (int i = 0; i < SCHED_MAX_REPEAT_DEPTH; i++)
        g_string_append(s, "}]");
    g_string_append_c(s, '\n');
    Scenario *sc = load_ok(s->str);
    cr_assert_eq(sched_program_rank_op_count(sc->program, 0), 256);
    scenario_free(sc);
    g_string_free(s, TRUE);
}

/* ---- bad input: top-level settings ---- */

Test(scenario_errors, hardware_problems)
{
    const char *h = "kind: program\nranks: 1\nprograms: {\"0\": []}\n";
    g_autofree char *y1 = g_strconcat(h, "hardware: h1000\n", NULL);
    expect_invalid(y1, "t.yaml:4", "hardware",
                   "unknown hardware preset 'h1000'; did you mean 'h100'? (valid: h100, h200, "
                   "b200, ascend-910b, ascend-910c)");
    g_autofree char *y2 = g_strconcat(h, "hardware: {preset: tpu}\n", NULL);
    expect_invalid(y2, "t.yaml:4", "preset", "valid: h100, h200, b200");
    g_autofree char *y3 =
        g_strconcat(h, "hardware: {tiers: {nvlink: {bandwidth_gb_s: 0}}}\n", NULL);
    expect_invalid(y3, "t.yaml:4", "bandwidth_gb_s", "valid: a number > 0");
    g_autofree char *y4 = g_strconcat(h, "hardware:\n  tiers:\n    ib: {latency_us: -1}\n", NULL);
    expect_invalid(y4, "t.yaml:6", "latency_us", "out of range");
    g_autofree char *y5 =
        g_strconcat(h, "hardware:\n  preset: b200\n  tiers:\n    ibx: {}\n", NULL);
    expect_invalid(
        y5, "t.yaml:7", "ibx",
        "no tier named 'ibx' in hardware 'b200'; did you mean 'ib'? (valid: nvlink, ib)");
    g_autofree char *y6 = g_strconcat(h, "hardware: {preset: b200, file: x.yaml}\n", NULL);
    expect_invalid(y6, "t.yaml:4", "file", "either preset or file");
    g_autofree char *y7 = g_strconcat(h, "hardware: [h100]\n", NULL);
    expect_invalid(y7, "t.yaml:4", "hardware", "expected a string or a mapping, got a list");
    /* an override that breaks the tier structure points at the tier it names */
    g_autofree char *y8 = g_strconcat(h,
                                      "hardware:\n  preset: ascend-910c\n  tiers:\n"
                                      "    d2d: {bandwidth_gb_s: 100}\n    ub2: {span: 8}\n",
                                      NULL);
    expect_invalid(y8, "t.yaml:8", "ub2",
                   "the hardware after these overrides is inconsistent: tier 'ub2': span 8");
    g_autofree char *y9 = g_strconcat(h, "hardware: {link_bandwidth_gb_s: 100}\n", NULL);
    expect_invalid(y9, "t.yaml:4", "link_bandwidth_gb_s", "unknown key in hardware");
    g_autofree char *y10 = g_strconcat(h, "hardware: {preset: b200, description: x}\n", NULL);
    expect_invalid(y10, "t.yaml:4", "description", "not valid for hardware");
    g_autofree char *y11 = g_strconcat(h, "hardware: {hbm_gb: 80, hbm_gib: 80}\n", NULL);
    expect_invalid(y11, "t.yaml:4", NULL, "HBM capacity is given twice");
}

Test(scenario_errors, nodes_too_few)
{
    expect_invalid("kind: program\nranks: 17\nprograms: {\"*\": []}\nnodes: 2\n", "t.yaml:4",
                   "nodes",
                   "17 ranks do not fit on 2 nodes of 8 devices (h100: 16 devices); valid: nodes "
                   ">= 3");
    expect_invalid("kind: program\nranks: 17\nprograms: {\"*\": []}\nhardware: ascend-910c\n"
                   "nodes: 1\n",
                   "t.yaml:5", "nodes", "17 ranks do not fit on 1 node of 16 devices");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"*\": []}\nnodes: 0\n", "t.yaml:4",
                   "nodes", "out of range; valid: 1..1048576");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"*\": []}\nnodes: many\n", "t.yaml:4",
                   "nodes", "expected a number");
}

Test(scenario_errors, collective_algorithm_values)
{
    const char *h = "kind: program\nranks: 1\nprograms: {\"*\": []}\n";
    g_autofree char *y1 = g_strconcat(h, "collective_algorithm: {all_gather: tree}\n", NULL);
    expect_invalid(y1, "t.yaml:4", "all_gather",
                   "algorithm 'tree' cannot run all_gather; valid for all_gather: auto, ring");
    g_autofree char *y2 = g_strconcat(h, "collective_algorithm:\n  all_to_all: rign\n", NULL);
    expect_invalid(y2, "t.yaml:5", "all_to_all", "unknown algorithm 'rign'; did you mean 'ring'?");
    g_autofree char *y3 = g_strconcat(h, "collective_algorithm: {allreduce: ring}\n", NULL);
    expect_invalid(y3, "t.yaml:4", "allreduce", "did you mean 'all_reduce'?");
    g_autofree char *y4 = g_strconcat(h, "collective_algorithm: ring\n", NULL);
    expect_invalid(y4, "t.yaml:4", "collective_algorithm", "expected a mapping");
    g_autofree char *y5 = g_strconcat(h, "collective_algorithm: {all_reduce: [ring]}\n", NULL);
    expect_invalid(y5, "t.yaml:4", "all_reduce", "expected a string, got a list");
    g_autofree char *y6 = g_strconcat(h, "contention: \"false\"\n", NULL);
    expect_invalid(y6, "t.yaml:4", "contention", "without quotes");
    g_autofree char *y7 = g_strconcat(h, "contention: 1\n", NULL);
    expect_invalid(y7, "t.yaml:4", "contention", "expected true or false");
    /* every value net_algo_supports() accepts for a kind loads */
    static const char *const kinds[] = {"all_reduce", "all_gather", "reduce_scatter",
                                        "all_to_all", "broadcast",  "barrier"};
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        NetCollKind kind;
        cr_assert(net_coll_kind_parse(kinds[k], &kind));
        for (int a = 0; a < NET_ALGO_COUNT; a++) {
            g_autofree char *y = g_strdup_printf("%scollective_algorithm: {%s: %s}\n", h, kinds[k],
                                                 net_algo_name((NetAlgo)a));
            if (a == NET_ALGO_AUTO || net_algo_supports((NetAlgo)a, kind)) {
                Scenario *s = load_ok(y);
                cr_assert_eq(s->algo[kind], (NetAlgo)a);
                scenario_free(s);
            } else {
                expect_invalid(y, "t.yaml:4", kinds[k], "cannot run");
            }
        }
    }
}

Test(scenario_errors, link_faults)
{
    const char *h = "kind: program\nranks: 16\nprograms: {\"*\": []}\n";
    g_autofree char *y1 =
        g_strconcat(h, "faults: [{kind: link, tier: nvlnk, node: 0, factor: 0.5}]\n", NULL);
    expect_invalid(y1, "t.yaml:4", "tier",
                   "no tier named 'nvlnk' in hardware 'h100'; did you mean 'nvlink'? (valid: "
                   "nvlink, ib)");
    g_autofree char *y2 =
        g_strconcat(h, "faults:\n  - {kind: link, tier: ib, node: 2, factor: 0.5}\n", NULL);
    expect_invalid(y2, "t.yaml:5", "node", "node 2 is out of range; valid: 0..1 (2 nodes");
    g_autofree char *y3 =
        g_strconcat(h, "nodes: 4\nfaults: [{kind: link, tier: ib, node: 4, factor: 0.5}]\n", NULL);
    expect_invalid(y3, "t.yaml:5", "node", "valid: 0..3 (4 nodes: as set by nodes:)");
    g_autofree char *y4 =
        g_strconcat(h, "faults: [{kind: link, tier: ib, node: 0, factor: 0}]\n", NULL);
    expect_invalid(y4, "t.yaml:4", "factor", "valid: a number > 0 and <= 1e+06");
    g_autofree char *y5 =
        g_strconcat(h, "faults: [{kind: link, tier: ib, node: 0, factor: 2e6}]\n", NULL);
    expect_invalid(y5, "t.yaml:4", "factor", "out of range");
    g_autofree char *y6 = g_strconcat(h, "faults: [{kind: link, tier: ib, factor: 2}]\n", NULL);
    expect_invalid(y6, "t.yaml:4", "node", "missing; a link fault needs node: 0..1");
    g_autofree char *y7 =
        g_strconcat(h, "faults: [{kind: link, rank: 0, tier: ib, node: 0, factor: 2}]\n", NULL);
    expect_invalid(y7, "t.yaml:4", "rank", "not valid for fault kind link");
    g_autofree char *y8 = g_strconcat(h, "faults: [{kind: link, node: 0, factor: 2}]\n", NULL);
    expect_invalid(y8, "t.yaml:4", "tier", "missing; a link fault needs tier: one of nvlink, ib");
    g_autofree char *y9 =
        g_strconcat(h, "faults: [{kind: slowdown, rank: 0, factor: 2, tier: ib}]\n", NULL);
    expect_invalid(y9, "t.yaml:4", "tier", "not valid for fault kind slowdown");
    /* tiers of the scenario's hardware, not of the default */
    g_autofree char *y10 = g_strconcat(
        h, "hardware: ascend-910c\nfaults: [{kind: link, tier: ib, node: 0, factor: 2}]\n", NULL);
    expect_invalid(y10, "t.yaml:5", "tier", "valid: d2d, ub, ub2, roce");
}

Test(scenario_errors, on_mismatch_value)
{
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\non_mismatch: hnag\n",
                   "t.yaml:4", "on_mismatch",
                   "unknown value 'hnag'; did you mean 'hang'? (valid: hang, abort, continue)");
}

/* ---- bad input: faults ---- */

#define FAULT_HEAD                                                                                 \
    HEAD4 "programs:\n"                                                                            \
          "  \"*\": [{op: compute, name: attn_fwd, us: 5}, {op: all_reduce, group: tp, count: "    \
          "8}]\n"                                                                                  \
          "faults:\n"

Test(scenario_errors, unknown_fault_kind)
{
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: dealy, op: attn_fwd, seconds: 1}\n", "t.yaml:9",
                   "kind",
                   "unknown value 'dealy'; did you mean 'delay'? (valid: delay, slowdown, crash, "
                   "skip, link)");
    expect_invalid(FAULT_HEAD "  - {rank: 1}\n", "t.yaml:9", "kind", "missing");
    expect_invalid(FAULT_HEAD "  - 3\n", "t.yaml:9", "faults", "expected a mapping");
}

Test(scenario_errors, fault_rank_out_of_range)
{
    expect_invalid(FAULT_HEAD "  - {rank: 4, kind: slowdown, factor: 2}\n", "t.yaml:9", "rank",
                   "4 is out of range; valid: 0..3");
    expect_invalid(FAULT_HEAD "  - {kind: slowdown, factor: 2}\n", "t.yaml:9", "rank", "missing");
}

Test(scenario_errors, fault_op_name)
{
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: delay, op: attn_fw, seconds: 1}\n", "t.yaml:9",
                   "op",
                   "rank 1 has no op named 'attn_fw'; did you mean 'attn_fwd'? (ops of rank 1: "
                   "attn_fwd, all_reduce)");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: skip, op: zzzzzzzz}\n", "t.yaml:9", "op",
                   "valid: the ops of rank 1: attn_fwd, all_reduce");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: skip}\n", "t.yaml:9", "op", "missing");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: skip, op: attn_fwd, occurrence: 0}\n",
                   "t.yaml:9", "occurrence", "out of range; valid: 1..");
}

Test(scenario_errors, fault_fields)
{
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: slowdown, factor: 0}\n", "t.yaml:9", "factor",
                   "valid: a number > 0");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: slowdown}\n", "t.yaml:9", "factor", "missing");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: slowdown, factor: 2, op: attn_fwd}\n",
                   "t.yaml:9", "op", "not valid for fault kind slowdown");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: crash, at_s: 1, op: attn_fwd}\n", "t.yaml:9",
                   "at_s", "either at_s or op, not both");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: crash}\n", "t.yaml:9", "kind",
                   "a crash needs at_s: SECONDS or op: NAME");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: crash, at_s: 1, occurrence: 2}\n", "t.yaml:9",
                   "occurrence", "goes with op");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: delay, op: attn_fwd}\n", "t.yaml:9", "seconds",
                   "missing");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: delay, op: attn_fwd, seconds: -2}\n", "t.yaml:9",
                   "seconds", "out of range");
    expect_invalid(FAULT_HEAD "  - {rank: 1, kind: delay, op: attn_fwd, second: 2}\n", "t.yaml:9",
                   "second", "did you mean 'seconds'?");
}

/* ---- --set ---- */

Test(scenario_errors, set_malformed)
{
    const char *yaml = "kind: program\nranks: 1\nprograms: {\"0\": []}\n";
    const char *no_eq[] = {"on_mismatch", NULL};
    g_autofree char *m1 = load_fail_set(yaml, no_eq, SCENARIO_ERROR_INVALID);
    assert_has(m1, "--set 'on_mismatch': no '=' sign");
    const char *empty_part[] = {"watchdog..x=1", NULL};
    g_autofree char *m2 = load_fail_set(yaml, empty_part, SCENARIO_ERROR_INVALID);
    assert_has(m2, "--set 'watchdog..x=1': empty key");
    const char *empty_key[] = {"=1", NULL};
    g_autofree char *m3 = load_fail_set(yaml, empty_key, SCENARIO_ERROR_INVALID);
    assert_has(m3, "--set '=1'");
    const char *through_scalar[] = {"ranks.x=1", NULL};
    g_autofree char *m4 = load_fail_set(yaml, through_scalar, SCENARIO_ERROR_INVALID);
    assert_has(m4, "--set 'ranks.x=1': 'ranks' is '1', not a mapping");
}

Test(scenario_errors, set_value_validated)
{
    const char *yaml = "kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                       "watchdog: {collective_timeout_s: 5}\n";
    const char *bad[] = {"watchdog.collective_timeout_s=soon", NULL};
    expect_invalid_set(yaml, bad, "t.yaml: --set watchdog.collective_timeout_s",
                       "collective_timeout_s", "expected a number, got 'soon'");
    const char *typo[] = {"on_mismach=abort", NULL};
    expect_invalid_set(yaml, typo, "t.yaml: --set on_mismach", "on_mismach",
                       "did you mean 'on_mismatch'?");
    const char *ranks[] = {"ranks=2", NULL};
    expect_invalid_set(yaml, ranks, "t.yaml:3", "programs", "rank 1 has no program");
    const char *policy[] = {"on_mismatch=explode", NULL};
    expect_invalid_set(yaml, policy, "t.yaml: --set on_mismatch", "on_mismatch",
                       "valid: hang, abort, continue");
}

/* ---- robustness: no input crashes or leaks ---- */

static void load_any(const char *text)
{
    GError *err = NULL;
    Scenario *s = scenario_load_string(text, "t.yaml", NULL, &err);
    cr_assert((s == NULL) != (err == NULL));
    if (s) {
        scenario_free(s);
    } else {
        cr_assert_eq(err->domain, SCENARIO_ERROR);
        cr_assert_null(strchr(err->message, '\n'), "multi-line: %s", err->message);
        cr_assert(g_str_has_prefix(err->message, "t.yaml:"), "%s", err->message);
        g_error_free(err);
    }
}

static const char fuzz_seed[] =
    "name: fuzz\nkind: program\nranks: 4\n"
    "groups: {tp: [0, 1, 2, 3], pair: \"0-1\"}\n"
    "hardware: {preset: h100, tiers: {ib: {bandwidth_gb_s: 25}}}\n"
    "nodes: 1\ncollective_algorithm: {all_reduce: tree}\ncontention: false\n"
    "on_mismatch: continue\nwatchdog: {collective_timeout_s: 30}\n"
    "programs:\n"
    "  0-1: [{op: all_reduce, group: pair, count: 8}, {op: send, peer: 2, count: 4}]\n"
    "  \"*\":\n"
    "    - op: repeat\n"
    "      times: 2\n"
    "      ops: [{op: compute, name: fwd, us: 3}, {op: broadcast, group: tp, count: 2, root: 0}]\n"
    "    - {op: recv, peer: 0, count: 4}\n"
    "faults:\n"
    "  - {rank: 2, kind: delay, op: fwd, occurrence: 2, seconds: 0.5}\n"
    "  - {rank: 0, kind: crash, at_s: 3}\n"
    "  - {kind: link, tier: ib, node: 0, factor: 0.5}\n";

Test(scenario_robust, truncations)
{
    load_any(fuzz_seed);
    size_t n = strlen(fuzz_seed);
    for (size_t len = 0; len < n; len++) {
        g_autofree char *t = g_strndup(fuzz_seed, len);
        load_any(t);
    }
}

Test(scenario_robust, mutations)
{
    static const char alphabet[] = " \n\t:-,[]{}\"'*&!#|>%@`0123456789abcz.~\xc3\xff";
    GRand *rng = g_rand_new_with_seed(20240611);
    size_t n = strlen(fuzz_seed);
    for (int iter = 0; iter < 3000; iter++) {
        g_autofree char *t = g_strdup(fuzz_seed);
        int edits = g_rand_int_range(rng, 1, 4);
        for (int e = 0; e < edits; e++) {
            size_t pos = (size_t)g_rand_int_range(rng, 0, (gint32)n);
            t[pos] = alphabet[g_rand_int_range(rng, 0, (gint32)(sizeof alphabet - 1))];
        }
        load_any(t);
    }
    g_rand_free(rng);
}

Test(scenario_robust, large_rank_count)
{
    Scenario *s = load_ok("kind: program\nranks: 1048576\n"
                          "groups: {tp0: \"0-7\"}\n"
                          "programs:\n"
                          "  0-7: [{op: all_reduce, group: tp0, count: 1}]\n"
                          "  \"*\": [{op: compute, name: idle, us: 1}]\n");
    cr_assert_eq(s->program->n_ranks, 1048576);
    cr_assert_eq(s->program->lists->len, 2);
    cr_assert_eq(ops_of(s, 1048575)->ops[0].kind, SCHED_OP_COMPUTE);
    scenario_free(s);
}
