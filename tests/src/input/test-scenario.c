/* tests/src/input/test-scenario.c — the scenario loader: good files load into the right program and
 * settings; every class of bad input gives one SCENARIO_ERROR whose one-line message names the
 * file, the line and the key. Robustness: truncated and mutated files never crash or leak. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "../../../src/input/scenario.h"

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
    /* without kind: a model scenario, whose keys are listed */
    g_autofree char *msg = load_fail_set("zzzzzzz: 1\n", NULL, SCENARIO_ERROR_INVALID);
    assert_has(msg, "t.yaml:1: key 'zzzzzzz': unknown key");
    assert_has(msg, "valid: name, kind, description, model, parallel, engine, workload");
    assert_lacks(msg, "did you mean");
    g_autofree char *msg2 =
        load_fail_set("kind: program\nzzzzzzz: 1\n", NULL, SCENARIO_ERROR_INVALID);
    assert_has(msg2, "t.yaml:2: key 'zzzzzzz': unknown key");
    assert_has(msg2, "valid: name, kind, description, ranks, groups, programs");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                   "watchdog:\n  collective_timeout: 5\n",
                   "t.yaml:5", "collective_timeout", "did you mean 'collective_timeout_s'?");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\n"
                   "hardware: {preset: h100, bandwidth: 5}\n",
                   "t.yaml:4", "bandwidth",
                   "unknown key in hardware; valid: preset, file, calibration, name");
}

Test(scenario_errors, kind_missing_means_model)
{
    /* an old program file without kind: reads as kind: model and says what to write */
    expect_invalid("name: t\nranks: 1\nprograms: {\"0\": []}\n", "t.yaml:2", "ranks",
                   "not valid for kind: model (the default when kind: is left out)");
    expect_invalid("name: t\nranks: 1\nprograms: {\"0\": []}\n", "t.yaml:2", "ranks",
                   "write kind: program for hand-written programs");
    expect_invalid("name: t\nkind: model\n", "t.yaml:1", "model",
                   "missing; a model scenario (kind: model, the default) needs model: a preset "
                   "(");
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
    expect_invalid(
        y1, "t.yaml:4", "hardware",
        "unknown hardware preset 'h1000'; did you mean 'h100'? (valid: h100, h200, "
        "b200, gb200, b300, gb300, a100-80gb, a100, a100-40gb, h20, h20-141g, h800, h100-pcie, l40s, rtx4090, mi300x, mi325x, "
        "mi355x, gaudi3, ascend-910b, ascend-910c)");
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

/* ==== kind: model ==== */

/* The issue's example: GLM-5.2 on B200, TP1 x PCP4 with DCP4, a prefill then a decode step. */
static const char glm_yaml[] =
    "name: glm5.2-b200-tp1-pcp4-dcp4\n"
    "model: glm-5.2\n"
    "hardware: b200\n"
    "parallel: {tensor_parallel_size: 1, prefill_context_parallel_size: 4, "
    "decode_context_parallel_size: 4,\n"
    "           dcp_comm_backend: ag_rs, enable_expert_parallel: true}\n"
    "engine: {vllm_without: [sparse_mla_backend_combination_check],\n"
    "         attention_backend: FLASHINFER_MLA_SPARSE, quantization: nvfp4, kv_cache_dtype: "
    "fp8,\n"
    "         gpu_memory_utilization: 0.96, max_num_batched_tokens: 4096, max_model_len: 4096, "
    "cudagraph_mode: PIECEWISE}\n"
    "workload:\n"
    "  steps:\n"
    "    - {prefill: [633]}\n"
    "    - {decode: [633, 633]}\n";

/* Lines 1-2; tests add parallel/engine/workload from line 3 on. */
#define MODEL_HEAD "model: glm-5.2\nhardware: b200\n"
#define DECODE_STEP "workload: {steps: [{decode: [100]}]}\n"

static const ModelBatch *batch_of(const Scenario *s, guint step, guint dp)
{
    const ModelStep *st = g_ptr_array_index(s->workload->steps, step);
    return g_ptr_array_index(st->per_dp, dp);
}

static uint32_t len_at(const GArray *a, guint i)
{
    return g_array_index(a, uint32_t, i);
}

/* A load with extras; `display` names the file. */
static Scenario *load_x_ok(const char *yaml, const char *display, const ScenarioExtras *x)
{
    GError *err = NULL;
    Scenario *s = scenario_load_string_extras(yaml, display, x, &err);
    cr_assert_not_null(s, "unexpected error: %s", err ? err->message : "(none)");
    return s;
}

static char *load_x_fail(const char *yaml, const char *display, const ScenarioExtras *x, int code)
{
    GError *err = NULL;
    Scenario *s = scenario_load_string_extras(yaml, display, x, &err);
    cr_assert_null(s, "expected an error for:\n%s", yaml);
    cr_assert_eq(err->domain, SCENARIO_ERROR);
    cr_assert_eq(err->code, code, "code %d (wanted %d): %s", err->code, code, err->message);
    cr_assert_null(strchr(err->message, '\n'), "multi-line message: %s", err->message);
    char *msg = g_strdup(err->message);
    g_error_free(err);
    return msg;
}

static bool has_ignored(const Scenario *s, const char *text)
{
    for (guint i = 0; i < s->ignored_flags->len; i++)
        if (strcmp(g_ptr_array_index(s->ignored_flags, i), text) == 0)
            return true;
    return false;
}

/* Whether `rank` runs an op named `name`. */
static bool rank_has_op(const Scenario *s, uint32_t rank, const char *name)
{
    const SchedOpList *l = ops_of(s, rank);
    for (uint32_t i = 0; i < l->len; i++)
        if (l->ops[i].kind != SCHED_OP_REPEAT && strcmp(op_name(s, &l->ops[i]), name) == 0)
            return true;
    return false;
}

Test(scenario_model, issue_example_loads)
{
    Scenario *s = load_ok(glm_yaml);
    cr_assert_str_eq(s->kind, "model");
    cr_assert_str_eq(s->name, "glm5.2-b200-tp1-pcp4-dcp4");
    cr_assert_str_eq(s->model_source, "preset glm-5.2");
    cr_assert_str_eq(s->arch->name, "glm-5.2");
    cr_assert_str_eq(s->hardware.name, "b200");
    const ModelParallel *par = &s->plan->par;
    cr_assert_eq(par->tensor_parallel_size, 1);
    cr_assert_eq(par->prefill_context_parallel_size, 4);
    cr_assert_eq(par->decode_context_parallel_size, 4);
    cr_assert_eq(par->data_parallel_size, 1);
    cr_assert_eq(par->dcp_comm_backend, MODEL_DCP_AG_RS);
    cr_assert(par->enable_expert_parallel);
    cr_assert_not(par->enable_sequence_parallel);
    cr_assert_eq(s->plan->world, 4);
    cr_assert_eq(s->program->n_ranks, 4);
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_FLASHINFER_MLA_SPARSE);
    cr_assert_eq(s->engine.quantization, MODEL_QUANT_NVFP4);
    cr_assert_eq(s->engine.kv_cache_dtype, SCHED_DTYPE_FP8);
    cr_assert_eq(s->engine.gpu_memory_utilization, 0.96);
    cr_assert_eq(s->engine.max_num_batched_tokens, 4096);
    cr_assert_eq(s->engine.max_model_len, 4096);
    /* vLLM's default on a device with >= 70 GiB (B200), min(1024, max_num_batched_tokens) */
    cr_assert_eq(s->engine.max_num_seqs, 1024);
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_PIECEWISE);
    cr_assert_eq(s->workload->steps->len, 2);
    const ModelBatch *b0 = batch_of(s, 0, 0), *b1 = batch_of(s, 1, 0);
    cr_assert_eq(b0->prefill->len, 1);
    cr_assert_eq(len_at(b0->prefill, 0), 633);
    cr_assert_eq(b0->decode->len, 0);
    cr_assert_eq(b1->decode->len, 2);
    cr_assert_eq(len_at(b1->decode, 1), 633);
    cr_assert_not_null(s->cost);
    cr_assert_null(s->op_profile);
    cr_assert_not_null(s->findings);
    cr_assert_eq(s->ignored_flags->len, 0);
    cr_assert(rank_has_op(s, 0, "input_layernorm"));
    SchedConfig cfg = scenario_engine_config(s);
    cr_assert_eq(cfg.fabric.n_ranks, 4);
    scenario_free(s);
}

Test(scenario_model, kind_defaults_to_model_and_vllm_defaults)
{
    Scenario *s = load_ok("model: llama-3.1-70b\n" DECODE_STEP);
    cr_assert_str_eq(s->kind, "model");
    cr_assert_str_eq(s->name, "t");
    cr_assert_str_eq(s->hardware.name, "h100");
    cr_assert_eq(s->plan->world, 1);
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_AUTO);
    cr_assert_eq(s->engine.quantization, MODEL_QUANT_BF16);
    cr_assert_eq(s->engine.kv_cache_dtype, SCHED_DTYPE_BF16);
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_FULL_AND_PIECEWISE);
    scenario_free(s);
    s = load_ok("kind: model\nmodel: llama-3.1-70b\n" DECODE_STEP);
    cr_assert_str_eq(s->kind, "model");
    scenario_free(s);
}

Test(scenario_model, set_parallel_and_engine_keys)
{
    const char *ov[] = {"parallel.tensor_parallel_size=2", "engine.max_num_seqs=8", NULL};
    Scenario *s = load_ok_set(glm_yaml, ov);
    cr_assert_eq(s->plan->par.tensor_parallel_size, 2);
    cr_assert_eq(s->plan->world, 8);
    cr_assert_eq(s->program->n_ranks, 8);
    cr_assert_eq(s->engine.max_num_seqs, 8);
    cr_assert_str_eq(s->text, glm_yaml);
    scenario_free(s);

    /* creating parallel: in a file without one; values are parsed like file content */
    const char *ov2[] = {"parallel.tensor_parallel_size=8", "parallel.enable_expert_parallel=true",
                         "engine.attention_backend=flashmla_sparse", NULL};
    s = load_ok_set(MODEL_HEAD DECODE_STEP, ov2);
    cr_assert_eq(s->plan->world, 8);
    cr_assert(s->plan->par.enable_expert_parallel);
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_FLASHMLA_SPARSE);
    scenario_free(s);

    const char *ov3[] = {"parallel.tensor_parallel_size=two", NULL};
    expect_invalid_set(glm_yaml, ov3, "t.yaml: --set parallel.tensor_parallel_size",
                       "tensor_parallel_size", "expected a number, got 'two'; valid: 1..1048576");
}

Test(scenario_model, workload_forms)
{
    /* mixed batch; per_dp_rank shorter than DP is padded with empty batches */
    Scenario *s =
        load_ok("model: deepseek-v3\nhardware: h200\n"
                "parallel: {tensor_parallel_size: 2, data_parallel_size: 4, "
                "enable_expert_parallel: true}\n"
                "workload:\n"
                "  steps:\n"
                "    - {prefill: [100, 200], decode: [50]}\n"
                "    - per_dp_rank: [{decode: [10]}, {}, {prefill: [7], decode: [3, 4]}]\n");
    cr_assert_eq(s->plan->world, 8);
    cr_assert_eq(s->workload->steps->len, 2);
    const ModelStep *st0 = g_ptr_array_index(s->workload->steps, 0);
    cr_assert_eq(st0->per_dp->len, 1); /* the same batch on every DP rank */
    cr_assert_eq(batch_of(s, 0, 0)->prefill->len, 2);
    cr_assert_eq(batch_of(s, 0, 0)->decode->len, 1);
    const ModelStep *st1 = g_ptr_array_index(s->workload->steps, 1);
    cr_assert_eq(st1->per_dp->len, 4);
    cr_assert_eq(len_at(batch_of(s, 1, 0)->decode, 0), 10);
    cr_assert_eq(batch_of(s, 1, 1)->decode->len, 0);
    cr_assert_eq(len_at(batch_of(s, 1, 2)->prefill, 0), 7);
    cr_assert_eq(batch_of(s, 1, 3)->prefill->len + batch_of(s, 1, 3)->decode->len, 0);
    scenario_free(s);
}

/* A prefill entry {tokens: N, cached: C} continues a prompt whose first C tokens are in the KV
 * cache (a later chunk of a chunked prefill); a plain length stays a fresh prompt. */
Test(scenario_model, prefill_with_cached_context)
{
    Scenario *s = load_ok("model: llama-3.1-8b\nhardware: h100\n"
                          "engine: {max_model_len: 16384}\n"
                          "workload:\n  steps:\n"
                          "    - {prefill: [{tokens: 2048, cached: 8192}, 100, {tokens: 7}]}\n"
                          "    - per_dp_rank: [{prefill: [{cached: 0, tokens: 5}], "
                          "decode: [9]}]\n");
    const ModelBatch *b = batch_of(s, 0, 0);
    cr_assert_eq(b->prefill->len, 3);
    cr_assert_eq(len_at(b->prefill, 0), 2048);
    cr_assert_eq(model_batch_prefill_ctx(b, 0), 8192);
    cr_assert_eq(len_at(b->prefill, 1), 100);
    cr_assert_eq(model_batch_prefill_ctx(b, 1), 0);
    cr_assert_eq(len_at(b->prefill, 2), 7);
    cr_assert_eq(model_batch_prefill_ctx(b, 2), 0);
    cr_assert_eq(len_at(batch_of(s, 1, 0)->prefill, 0), 5);
    cr_assert_eq(model_batch_prefill_ctx(batch_of(s, 1, 0), 0), 0);
    scenario_free(s);

    /* on the command line: --prefill 2048@8192 (cli_workload_parse) */
    g_autoptr(GArray) pf = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_autoptr(GArray) pc = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t n = 2048, c = 8192, n2 = 64;
    g_array_append_val(pf, n);
    g_array_append_val(pc, c);
    g_array_append_val(pf, n2); /* no ctx entry: a fresh prompt */
    ScenarioExtras x = {.hardware = "h100", .prefill = pf, .prefill_ctx = pc};
    s = load_x_ok("model: llama-3.1-8b\nengine: {max_model_len: 16384}\n", "t.yaml", &x);
    b = batch_of(s, 0, 0);
    cr_assert_eq(len_at(b->prefill, 0), 2048);
    cr_assert_eq(model_batch_prefill_ctx(b, 0), 8192);
    cr_assert_eq(len_at(b->prefill, 1), 64);
    cr_assert_eq(model_batch_prefill_ctx(b, 1), 0);
    scenario_free(s);
    /* too long with its context: the flag is named */
    uint32_t big = 9000;
    g_array_index(pc, uint32_t, 0) = big;
    g_autofree char *m = load_x_fail("model: llama-3.1-8b\nengine: {max_model_len: 10000}\n",
                                     "t.yaml", &x, SCENARIO_ERROR_INVALID);
    assert_has(m, "t.yaml: --prefill 2048@9000: a prompt of 11048 tokens (9000 cached + 2048 "
                  "new) is longer than max_model_len=10000");
}

/* The chunk that continues a prompt attends to the cached tokens too: the same 2,048 new tokens
 * take longer in attention after 8,192 cached ones than as a fresh prompt, and the linears
 * (which see only the new tokens) take the same time. */
static double op_ns(const Scenario *s, const char *name)
{
    const SchedOpList *l = ops_of(s, 0);
    double ns = 0;
    for (uint32_t i = 0; i < l->len; i++)
        if (strcmp(op_name(s, &l->ops[i]), name) == 0)
            ns += (double)l->ops[i].dur_ns;
    return ns;
}

Test(scenario_model, cached_context_lengthens_attention)
{
    const char *head = "model: llama-3.1-8b\nhardware: h100\nengine: {max_model_len: 16384}\n";
    g_autofree char *fresh =
        g_strconcat(head, "workload: {steps: [{prefill: [2048]}]}\n", NULL);
    g_autofree char *cont =
        g_strconcat(head, "workload: {steps: [{prefill: [{tokens: 2048, cached: 8192}]}]}\n",
                    NULL);
    Scenario *a = load_ok(fresh), *b = load_ok(cont);
    double attn_a = op_ns(a, "attention"), attn_b = op_ns(b, "attention");
    cr_assert_gt(attn_a, 0);
    /* causal work grows from l^2/2 to l*C + l^2/2 (9x here); at least 3x */
    cr_assert_gt(attn_b, 3 * attn_a, "attention %.0f ns after 8192 cached, %.0f fresh", attn_b,
                 attn_a);
    cr_assert_eq(op_ns(a, "q_proj"), op_ns(b, "q_proj"));
    cr_assert_eq(op_ns(a, "mlp"), op_ns(b, "mlp"));
    scenario_free(a);
    scenario_free(b);
}

Test(scenario_model, command_line_extras)
{
    g_autoptr(GArray) pf = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_autoptr(GArray) dc = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t n = 633, ctx = 1000;
    g_array_append_val(pf, n);
    for (int i = 0; i < 3; i++) /* --decode 3:1000 */
        g_array_append_val(dc, ctx);
    ScenarioExtras x = {.hardware = "h200", .prefill = pf, .decode = dc};

    /* no workload and no hardware in the file: both come from the command line, one step */
    Scenario *s = load_x_ok("model: glm-5.2\n", "t.yaml", &x);
    cr_assert_str_eq(s->hardware.name, "h200");
    cr_assert_str_eq(s->hardware_source, "preset h200");
    cr_assert_eq(s->workload->steps->len, 1);
    const ModelBatch *b = batch_of(s, 0, 0);
    cr_assert_eq(b->prefill->len, 1);
    cr_assert_eq(len_at(b->prefill, 0), 633);
    cr_assert_eq(b->decode->len, 3);
    cr_assert_eq(len_at(b->decode, 2), 1000);
    cr_assert_eq(s->ignored_flags->len, 0);
    scenario_free(s);

    /* the command line overrides the file's hardware and workload, and says so (a Blackwell
     * part: the file names FLASHINFER_MLA_SPARSE) */
    ScenarioExtras xb = x;
    xb.hardware = "gb200";
    s = load_x_ok(glm_yaml, "t.yaml", &xb);
    cr_assert_str_eq(s->hardware.name, "gb200");
    cr_assert_eq(s->workload->steps->len, 1);
    cr_assert_eq(len_at(batch_of(s, 0, 0)->prefill, 0), 633);
    /* overrides are simulated: notes of their own, not "not simulated" (issue 28, item 10) */
    cr_assert_eq(s->override_notes->len, 2);
    cr_assert(strstr(g_ptr_array_index(s->override_notes, 0),
                     "--hardware gb200 replaces the scenario's hardware ('"));
    cr_assert(strstr(g_ptr_array_index(s->override_notes, 1),
                     "--prefill/--decode replace the scenario's workload (line "));
    cr_assert(!has_ignored(s, "--hardware gb200 replaces"));
    cr_assert(!has_ignored(s, "--prefill/--decode replace"));
    scenario_free(s);

    /* extras with a program scenario: hardware used, workload noted */
    s = load_x_ok("kind: program\nranks: 2\nprograms: {\"*\": []}\n", "t.yaml", &x);
    cr_assert_str_eq(s->hardware.name, "h200");
    cr_assert_null(s->plan);
    cr_assert_null(s->findings);
    cr_assert(has_ignored(s, "--prefill/--decode (a kind: program scenario has no workload)"));
    scenario_free(s);

    /* bad extras: the message names the flag instead of a line */
    ScenarioExtras bad_hw = {.hardware = "h1000", .prefill = pf};
    g_autofree char *m1 =
        load_x_fail("model: glm-5.2\n", "t.yaml", &bad_hw, SCENARIO_ERROR_INVALID);
    assert_has(m1, "t.yaml: --hardware h1000: unknown hardware preset 'h1000'; did you mean "
                   "'h100'?");
    ScenarioExtras missing_hw = {.hardware = "/nonexistent/hw.yaml", .prefill = pf};
    g_autofree char *m2 = load_x_fail("model: glm-5.2\n", "t.yaml", &missing_hw, SCENARIO_ERROR_IO);
    assert_has(m2, "t.yaml: --hardware /nonexistent/hw.yaml: cannot read hardware file");
    g_autoptr(GArray) long_pf = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t too_long = 9000, zero = 0;
    g_array_append_val(long_pf, too_long);
    ScenarioExtras xl = {.prefill = long_pf};
    g_autofree char *m3 = load_x_fail("model: glm-5.2\nengine: {max_model_len: 8192}\n", "t.yaml",
                                      &xl, SCENARIO_ERROR_INVALID);
    assert_has(m3, "t.yaml: --prefill 9000: a prompt of 9000 tokens is longer than "
                   "max_model_len=8192");
    /* without max_model_len: the model's own (202,752 for GLM-5.2); the scheduler's token
     * budget (8192 on the default h100) is what 9000 tokens in one step exceed */
    g_autofree char *m3b = load_x_fail("model: glm-5.2\n", "t.yaml", &xl, SCENARIO_ERROR_INVALID);
    assert_has(m3b, "9000 tokens in one batch exceed max_num_batched_tokens=8192");
    g_array_index(long_pf, uint32_t, 0) = zero;
    g_autofree char *m4 = load_x_fail("model: glm-5.2\n", "t.yaml", &xl, SCENARIO_ERROR_INVALID);
    assert_has(m4, "t.yaml: --prefill 0: prompt length out of range; valid: 1..10000000");
    g_autoptr(GArray) big_dc = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t c100 = 100;
    for (int i = 0; i < 1100; i++) /* --decode 1100:100 */
        g_array_append_val(big_dc, c100);
    ScenarioExtras xd = {.decode = big_dc};
    g_autofree char *m5 = load_x_fail("model: glm-5.2\n", "t.yaml", &xd, SCENARIO_ERROR_INVALID);
    /* vLLM's max_num_seqs on a device with >= 70 GiB (the default h100): 1024 */
    assert_has(m5, "t.yaml: --prefill/--decode: 1100 sequences in one batch exceed "
                   "max_num_seqs=1024");
    g_autoptr(GArray) long_dc = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t c9000 = 9000;
    g_array_append_val(long_dc, c9000);
    ScenarioExtras xc = {.decode = long_dc};
    g_autofree char *m6 = load_x_fail("model: glm-5.2\nengine: {max_model_len: 8192}\n", "t.yaml",
                                      &xc, SCENARIO_ERROR_INVALID);
    assert_has(m6, "t.yaml: --decode (context 9000): a decode context of 9000 tokens is longer "
                   "than max_model_len=8192");
}

/* The preset's config.json, copied into `dir`/`rel`. */
static void copy_preset(const char *dir, const char *rel, const char *preset)
{
    g_autofree char *src = g_strdup_printf("%s/model/presets/%s.json", RANKSIM_SOURCE_DIR, preset);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(src, &text, NULL, NULL), "cannot read %s", src);
    write_file(dir, rel, text);
}

Test(scenario_model, config_json_and_op_profile_relative_to_the_scenario)
{
    g_autofree char *dir = g_dir_make_tmp("ranksim-model-XXXXXX", NULL);
    cr_assert_not_null(dir);
    copy_preset(dir, "models/llama/config.json", "llama-3.1-70b");
    write_file(dir, "prof/ops.csv",
               "op,rows,seconds\nattention, 1, 0.0002\nattention, 64, 0.001\n");
    write_file(dir, "prof/bad.csv", "op,rows,seconds\nattention, 0, 0.0002\n");
    write_file(dir, "scn/file.yaml",
               "model: ../models/llama/config.json\nengine: {op_profile: ../prof/ops.csv, "
               "compute_efficiency: 0.5, memory_efficiency: 0.8, launch_us: 3}\n" DECODE_STEP);
    write_file(dir, "scn/folder.yaml", "model: ../models/llama/\n" DECODE_STEP);
    write_file(dir, "scn/nofile.yaml", "model: ./nope/config.json\n" DECODE_STEP);
    write_file(dir, "scn/badprof.yaml",
               "model: ../models/llama\nengine:\n  op_profile: ../prof/bad.csv\n" DECODE_STEP);
    write_file(dir, "scn/noprof.yaml",
               "model: llama-3.1-70b\nengine:\n  op_profile: none.csv\n" DECODE_STEP);

    GError *err = NULL;
    g_autofree char *f = g_build_filename(dir, "scn", "file.yaml", NULL);
    Scenario *s = scenario_load(f, NULL, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    g_autofree char *want = g_build_filename(dir, "scn", "../models/llama/config.json", NULL);
    cr_assert_str_eq(s->model_source, want);
    cr_assert_eq(s->arch->num_layers, 80);
    g_autofree char *want_prof = g_build_filename(dir, "scn", "../prof/ops.csv", NULL);
    cr_assert_str_eq(s->op_profile, want_prof);
    cr_assert(model_cost_is_profiled(s->cost, "attention"));
    scenario_free(s);

    g_autofree char *fo = g_build_filename(dir, "scn", "folder.yaml", NULL);
    s = scenario_load(fo, NULL, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert(g_str_has_suffix(s->model_source, "config.json"), "%s", s->model_source);
    scenario_free(s);

    g_autofree char *nf = g_build_filename(dir, "scn", "nofile.yaml", NULL);
    s = scenario_load(nf, NULL, &err);
    cr_assert_null(s);
    cr_assert_eq(err->code, SCENARIO_ERROR_IO, "%s", err->message);
    g_autofree char *p1 = g_strdup_printf("%s:1: key 'model': cannot read model config", nf);
    cr_assert(g_str_has_prefix(err->message, p1), "%s", err->message);
    g_clear_error(&err);

    g_autofree char *bp = g_build_filename(dir, "scn", "badprof.yaml", NULL);
    s = scenario_load(bp, NULL, &err);
    cr_assert_null(s);
    cr_assert_eq(err->code, SCENARIO_ERROR_INVALID, "%s", err->message);
    g_autofree char *p2 = g_strdup_printf("%s:3: key 'op_profile': ", bp);
    cr_assert(g_str_has_prefix(err->message, p2), "%s", err->message);
    assert_has(err->message, "bad.csv:2: column 'rows'");
    g_clear_error(&err);

    g_autofree char *np = g_build_filename(dir, "scn", "noprof.yaml", NULL);
    s = scenario_load(np, NULL, &err);
    cr_assert_null(s);
    cr_assert_eq(err->code, SCENARIO_ERROR_IO, "%s", err->message);
    g_autofree char *p3 = g_strdup_printf("%s:3: key 'op_profile': cannot read op profile", np);
    cr_assert(g_str_has_prefix(err->message, p3), "%s", err->message);
    g_clear_error(&err);
    remove_tree(dir);
}

Test(scenario_model, faults_name_lowered_ops)
{
    Scenario *s = load_ok(MODEL_HEAD "parallel: {tensor_parallel_size: 2}\n" DECODE_STEP "faults:\n"
                                     "  - {rank: 1, kind: delay, op: input_layernorm, "
                                     "occurrence: 3, seconds: 2}\n"
                                     "  - {kind: link, tier: nvlink, node: 0, factor: 0.5}\n"
                                     "watchdog: {collective_timeout_s: 30}\n"
                                     "on_mismatch: abort\n");
    cr_assert_eq(s->faults->len, 1);
    const SchedFault *f = &g_array_index(s->faults, SchedFault, 0);
    cr_assert_eq(f->rank, 1);
    cr_assert_str_eq(sched_program_name_str(s->program, (uint32_t)f->op_name), "input_layernorm");
    cr_assert_eq(f->occurrence, 3);
    cr_assert_eq(s->link_faults->len, 1);
    cr_assert_eq(s->collective_timeout_ns, INT64_C(30000000000));
    cr_assert_eq(s->on_mismatch, SCHED_MISMATCH_ABORT);
    scenario_free(s);

    expect_invalid(MODEL_HEAD DECODE_STEP "faults: [{rank: 0, kind: skip, op: input_layernom}]\n",
                   "t.yaml:4", "op", "did you mean 'input_layernorm'?");
    expect_invalid(MODEL_HEAD DECODE_STEP "faults: [{rank: 1, kind: skip, op: o_proj}]\n",
                   "t.yaml:4", "rank", "1 is out of range; valid: 0..0");
}

/* ---- kind: model, bad input ---- */

Test(scenario_model_errors, program_keys_and_model_keys)
{
    expect_invalid(MODEL_HEAD "ranks: 4\n", "t.yaml:3", "ranks", "not valid for kind: model");
    expect_invalid(MODEL_HEAD "groups: {tp: [0]}\n", "t.yaml:3", "groups",
                   "not valid for kind: model");
    expect_invalid("kind: program\nranks: 1\nprograms: {\"0\": []}\nparallel: {}\n", "t.yaml:4",
                   "parallel", "not valid for kind: program (it belongs to kind: model)");
    expect_invalid(MODEL_HEAD "paralel: {}\n", "t.yaml:3", "paralel",
                   "unknown key in the scenario; did you mean 'parallel'?");
}

Test(scenario_model_errors, model_key)
{
    expect_invalid("model: glm-5.3\n" DECODE_STEP, "t.yaml:1", "model",
                   "unknown model preset 'glm-5.3'; did you mean 'glm-5.2'? (valid: ");
    /* The list is model_arch_preset_names(): sorted, growing as presets are added. */
    expect_invalid("model: glm-5.3\n" DECODE_STEP, "t.yaml:1", "model", model_arch_preset_names());
    expect_invalid("model: glm-5.3\n" DECODE_STEP, "t.yaml:1", "model",
                   "); or the path of a Hugging Face config.json");
    expect_invalid("model: [glm-5]\n" DECODE_STEP, "t.yaml:1", "model",
                   "expected a string, got a list");
    g_autofree char *msg =
        load_fail_set("model: ./no/such/config.json\n" DECODE_STEP, NULL, SCENARIO_ERROR_IO);
    assert_has(msg, "t.yaml:1: key 'model': cannot read model config 'no/such/config.json': no "
                    "such file");
}

Test(scenario_model_errors, parallel_keys)
{
    expect_invalid(MODEL_HEAD "parallel: {tensr_parallel_size: 2}\n" DECODE_STEP, "t.yaml:3",
                   "tensr_parallel_size",
                   "unknown key in parallel; did you mean 'tensor_parallel_size'?");
    expect_invalid(MODEL_HEAD "parallel: {tensor_parallel_size: 0}\n" DECODE_STEP, "t.yaml:3",
                   "tensor_parallel_size", "0 is out of range; valid: 1..1048576");
    expect_invalid(MODEL_HEAD "parallel: {dcp_comm_backend: a2c}\n" DECODE_STEP, "t.yaml:3",
                   "dcp_comm_backend", "did you mean 'a2a'? (valid: ag_rs, a2a)");
    expect_invalid(MODEL_HEAD "parallel: {enable_expert_parallel: yes}\n" DECODE_STEP, "t.yaml:3",
                   "enable_expert_parallel", "expected true or false");
    expect_invalid(MODEL_HEAD "parallel: {pipeline_parallel_size: 2, "
                              "prefill_context_parallel_size: 2}\n" DECODE_STEP,
                   "t.yaml:3", "parallel", "MRV2 PCP does not support PP yet.");
    expect_invalid(MODEL_HEAD "parallel: {pipeline_parallel_size: 2, pp_layer_partition: "
                              "\"1,2,3\"}\n" DECODE_STEP,
                   "t.yaml:3", "pp_layer_partition", "len(partitions)=3 does not match pp_size=2.");
    expect_invalid(MODEL_HEAD "parallel: {pipeline_parallel_size: 2, pp_layer_partition: "
                              "\"1,x\"}\n" DECODE_STEP,
                   "t.yaml:3", "pp_layer_partition", "Invalid partition string: 1,x");
    expect_invalid(MODEL_HEAD "parallel: {pipeline_parallel_size: 2, pp_layer_partition: "
                              "\"1,2\"}\n" DECODE_STEP,
                   "t.yaml:3", "parallel", "sum(partitions)=3 does not match num_hidden_layers=");
    expect_invalid(MODEL_HEAD "parallel: 4\n" DECODE_STEP, "t.yaml:3", "parallel",
                   "expected a mapping, got '4'");
    expect_invalid(MODEL_HEAD "parallel: {tensor_parallel_size: 1024, data_parallel_size: 1024, "
                              "prefill_context_parallel_size: 2}\n" DECODE_STEP,
                   "t.yaml:3", "parallel", "= 2097152 ranks; valid: at most 1048576");
}

Test(scenario_model_errors, vllm_rules_surface_at_parallel)
{
    /* vLLM's own messages, at the line of parallel: */
    expect_invalid(MODEL_HEAD "parallel:\n  prefill_context_parallel_size: 2\n"
                              "  data_parallel_size: 2\n" DECODE_STEP,
                   "t.yaml:3", "parallel", "PCP does not support data parallelism yet.");
    expect_invalid(MODEL_HEAD "engine: {}\nparallel: {tensor_parallel_size: 2, "
                              "decode_context_parallel_size: 4}\n" DECODE_STEP,
                   "t.yaml:4", "parallel", "must be divisible by");
    /* the same rule broken by --set still points at parallel: */
    const char *ov[] = {"parallel.data_parallel_size=2", NULL};
    expect_invalid_set(glm_yaml, ov, "t.yaml:4", "parallel",
                       "PCP does not support data parallelism yet.");
    /* without a parallel: key, the defaults are used and errors name it at line 1 */
    expect_invalid("model: llama-3.1-70b\n" DECODE_STEP "engine: {attention_backend: FLASHMLA}\n",
                   "t.yaml:3", "engine",
                   "attention backend FLASHMLA is a dense MLA kernel; llama-3.1-70b uses "
                   "grouped-query attention (valid for it on h100: FLASH_ATTN, FLASHINFER, "
                   "TRITON_ATTN, FLEX_ATTENTION, AUTO)");
}

Test(scenario_model_errors, engine_values)
{
    g_autofree char *msg =
        load_fail_set(MODEL_HEAD "engine: {attention_backend: FLASHMLA_SPARS}\n" DECODE_STEP, NULL,
                      SCENARIO_ERROR_INVALID);
    assert_has(msg, "t.yaml:3: key 'attention_backend': unknown attention backend "
                    "'FLASHMLA_SPARS'; did you mean 'FLASHMLA_SPARSE'? (valid: AUTO, "
                    "FLASHINFER_MLA_SPARSE, FLASHMLA_SPARSE, FLASHMLA, FLASHINFER_MLA, TRITON_MLA, "
                    "FLASH_ATTN, ASCEND, CUTLASS_MLA, FLASH_ATTN_MLA, FLASHINFER, TRITON_ATTN, "
                    "FLEX_ATTENTION, ROCM_ATTN, ROCM_AITER_FA, ROCM_AITER_UNIFIED_ATTN, "
                    "ROCM_AITER_MLA, ROCM_AITER_TRITON_MLA, ROCM_AITER_MLA_SPARSE, HPU_ATTN)");
    expect_invalid(MODEL_HEAD "engine: {attention_backend: cutlass}\n" DECODE_STEP, "t.yaml:3",
                   "attention_backend",
                   "valid: AUTO, FLASHINFER_MLA_SPARSE, FLASHMLA_SPARSE, FLASHMLA, "
                   "FLASHINFER_MLA, TRITON_MLA, FLASH_ATTN, ASCEND");
    expect_invalid(MODEL_HEAD "engine:\n  gpu_memory_utilization: 1.5\n" DECODE_STEP, "t.yaml:4",
                   "gpu_memory_utilization", "1.5 is out of range; valid: a number > 0 and <= 1");
    expect_invalid(MODEL_HEAD "engine:\n  gpu_memory_utilization: 0\n" DECODE_STEP, "t.yaml:4",
                   "gpu_memory_utilization", "out of range");
    expect_invalid(MODEL_HEAD "engine: {quantization: int3}\n" DECODE_STEP, "t.yaml:3",
                   "quantization", "valid: bf16, fp8, w8a8, w4a8, nvfp4, none");
    expect_invalid(MODEL_HEAD "engine: {kv_cache_dtype: fp16}\n" DECODE_STEP, "t.yaml:3",
                   "kv_cache_dtype", "unknown KV cache dtype 'fp16'");
    expect_invalid(MODEL_HEAD "engine: {cudagraph_mode: FULL_DECODE_ONLY}\n" DECODE_STEP,
                   "t.yaml:3", "cudagraph_mode", "not modelled; FULL is the closest");
    expect_invalid(MODEL_HEAD "engine: {max_model_len: 0}\n" DECODE_STEP, "t.yaml:3",
                   "max_model_len", "valid: 1..10000000");
    expect_invalid(MODEL_HEAD "engine: {launch_us: -1}\n" DECODE_STEP, "t.yaml:3", "launch_us",
                   "out of range");
    expect_invalid(MODEL_HEAD "engine: {compute_efficiency: 2}\n" DECODE_STEP, "t.yaml:3",
                   "compute_efficiency", "out of range");
    expect_invalid(MODEL_HEAD "engine: {backend: FLASHMLA}\n" DECODE_STEP, "t.yaml:3", "backend",
                   "unknown key in engine");
    /* accepted spellings */
    Scenario *s =
        load_ok(MODEL_HEAD "engine: {attention_backend: flashmla_sparse, quantization: "
                           "null, kv_cache_dtype: fp8_e4m3, cudagraph_mode: full}\n" DECODE_STEP);
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_FLASHMLA_SPARSE);
    cr_assert_eq(s->engine.quantization, MODEL_QUANT_BF16);
    cr_assert_eq(s->engine.kv_cache_dtype, SCHED_DTYPE_FP8);
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_FULL);
    scenario_free(s);
    s = load_ok(MODEL_HEAD "engine: {quantization: none, kv_cache_dtype: auto}\n" DECODE_STEP);
    cr_assert_eq(s->engine.quantization, MODEL_QUANT_BF16);
    cr_assert_eq(s->engine.kv_cache_dtype, SCHED_DTYPE_BF16);
    scenario_free(s);
}

Test(scenario_model_errors, workload_problems)
{
    /* no workload: start-up only (memory plan, vLLM's start-up lines), said in a note */
    Scenario *none = load_ok(MODEL_HEAD);
    cr_assert_eq(none->workload->steps->len, 0);
    cr_assert_eq(none->ignored_flags->len, 1);
    cr_assert(strstr(g_ptr_array_index(none->ignored_flags, 0), "no workload: start-up only"));
    scenario_free(none);
    expect_invalid(MODEL_HEAD "workload: {}\n", "t.yaml:3", "steps", "missing");
    expect_invalid(MODEL_HEAD "workload: {steps: []}\n", "t.yaml:3", "steps",
                   "empty list; give at least one step");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefill: []}\n", "t.yaml:5", "steps",
                   "step 1 is empty");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {decode: [1]}\n    - {}\n", "t.yaml:6",
                   "steps", "step 2 is empty");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefill: [0]}\n", "t.yaml:5", "prefill",
                   "0 is out of range; valid: 1..10000000");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {decode: [20000000]}\n", "t.yaml:5",
                   "decode", "out of range; valid: 1..10000000");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {decode: 5}\n", "t.yaml:5", "decode",
                   "expected a list, got '5'");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefil: [5]}\n", "t.yaml:5", "prefil",
                   "did you mean 'prefill'?");
    /* engine limits, with the line of the length or the step */
    expect_invalid(MODEL_HEAD "engine: {max_model_len: 1000}\n"
                              "workload:\n  steps:\n    - prefill: [500,\n        1001]\n",
                   "t.yaml:7", "prefill",
                   "a prompt of 1001 tokens is longer than max_model_len=1000");
    expect_invalid(MODEL_HEAD "engine: {max_model_len: 1000}\n"
                              "workload:\n  steps:\n    - {decode: [1000, 1001]}\n",
                   "t.yaml:6", "decode",
                   "a decode context of 1001 tokens is longer than max_model_len=1000");
    expect_invalid(MODEL_HEAD "engine: {max_num_batched_tokens: 1000}\n"
                              "workload:\n  steps:\n    - {decode: [5]}\n"
                              "    - {prefill: [600, 600]}\n",
                   "t.yaml:7", "steps",
                   "step 2: 1200 tokens in one batch exceed max_num_batched_tokens=1000");
    expect_invalid(MODEL_HEAD "engine: {max_num_seqs: 2}\n"
                              "workload:\n  steps:\n    - {decode: [5, 5, 5]}\n",
                   "t.yaml:6", "steps", "3 sequences in one batch exceed max_num_seqs=2");
    /* {tokens: N, cached: C} entries */
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefill: [{tokens: 5, cached: -1}]}\n",
                   "t.yaml:5", "cached", "-1 is out of range; valid: 0..10000000");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefill: [{tokens: 0, cached: 5}]}\n",
                   "t.yaml:5", "tokens", "0 is out of range; valid: 1..10000000");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefill: [{cached: 5}]}\n",
                   "t.yaml:5", "tokens", "missing; valid: a prompt length (a fresh prompt), or "
                   "{tokens: N, cached: C}");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefill: [{tokens: 5, cache: 5}]}\n",
                   "t.yaml:5", "cache", "did you mean 'cached'?");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefill: [[5, 6]]}\n", "t.yaml:5",
                   "prefill", "expected an entry, got a list");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n    - {prefill: [{tokens: x}]}\n",
                   "t.yaml:5", "tokens", "expected a number, got 'x'");
    expect_invalid(MODEL_HEAD "engine: {max_model_len: 1000}\n"
                              "workload:\n  steps:\n    - prefill:\n"
                              "        - {tokens: 500,\n           cached: 501}\n",
                   "t.yaml:8", "cached",
                   "a prompt of 1001 tokens (501 cached + 500 new) is longer than "
                   "max_model_len=1000; valid: cached + tokens <= 1000");
    /* the step's token budget counts the new tokens only */
    Scenario *ok = load_ok(MODEL_HEAD "engine: {max_num_batched_tokens: 1000}\n"
                                      "workload:\n  steps:\n"
                                      "    - {prefill: [{tokens: 1000, cached: 4000}]}\n");
    scenario_free(ok);
}

Test(scenario_model_errors, per_dp_rank_problems)
{
    /* longer than DP */
    expect_invalid(MODEL_HEAD "parallel: {data_parallel_size: 2}\n"
                              "workload:\n  steps:\n"
                              "    - per_dp_rank: [{decode: [1]}, {decode: [2]}, {decode: [3]}]\n",
                   "t.yaml:6", "per_dp_rank",
                   "3 batches for 2 DP ranks (data_parallel_size=2); valid: at most 2");
    expect_invalid(MODEL_HEAD "workload:\n  steps:\n"
                              "    - per_dp_rank: [{decode: [1]}, {decode: [2]}]\n",
                   "t.yaml:5", "per_dp_rank", "2 batches for 1 DP rank");
    expect_invalid(MODEL_HEAD "parallel: {data_parallel_size: 2}\n"
                              "workload:\n  steps:\n"
                              "    - {decode: [1], per_dp_rank: [{decode: [2]}]}\n",
                   "t.yaml:6", "decode", "move decode into the per_dp_rank entries");
    expect_invalid(MODEL_HEAD "parallel: {data_parallel_size: 2}\n"
                              "workload:\n  steps:\n    - per_dp_rank: [{}, {}]\n",
                   "t.yaml:6", "steps", "step 1 is empty");
    expect_invalid(MODEL_HEAD "parallel: {data_parallel_size: 2}\n"
                              "workload:\n  steps:\n    - per_dp_rank: []\n",
                   "t.yaml:6", "per_dp_rank", "empty list");
    expect_invalid(MODEL_HEAD "parallel: {data_parallel_size: 2}\n"
                              "workload:\n  steps:\n"
                              "    - per_dp_rank: [{per_dp_rank: []}]\n",
                   "t.yaml:6", "per_dp_rank", "not valid for a per_dp_rank batch");
    expect_invalid(MODEL_HEAD "parallel: {data_parallel_size: 2}\n"
                              "engine: {max_num_seqs: 1}\n"
                              "workload:\n  steps:\n"
                              "    - per_dp_rank: [{decode: [1]}, {decode: [2, 2]}]\n",
                   "t.yaml:7", "per_dp_rank", "step 1, DP rank 1: 2 sequences in one batch");
}

/* ==== vLLM eval configs ==== */

/* vllm-project/vllm tests/evals/gsm8k/configs/GLM-5.2-NVFP4-TP1-PCP4-DCP4-EP.yaml */
static const char glm_eval[] =
    "model_name: \"nvidia/GLM-5.2-NVFP4\"\n"
    "accuracy_threshold: 0.90\n"
    "num_questions: 1319\n"
    "num_fewshot: 5\n"
    "max_concurrency: 100\n"
    "# Preserve KV-cache headroom after CUDA graph memory profiling and bound the\n"
    "# DCP-aware FlashInfer workspace to 2.39 GiB at the 4,096-token scheduler cap.\n"
    "server_args: >-\n"
    "  --compilation-config '{\"cudagraph_mode\":\"PIECEWISE\"}'\n"
    "  --gpu-memory-utilization 0.96\n"
    "  --max-model-len 4096\n"
    "  --max-num-batched-tokens 4096\n"
    "  --safetensors-load-strategy prefetch\n"
    "  --moe-backend flashinfer_cutlass\n"
    "  --prefill-context-parallel-size 4\n"
    "  --decode-context-parallel-size 4\n"
    "  --dcp-comm-backend ag_rs\n"
    "  --enable-expert-parallel\n"
    "  --kv-cache-dtype fp8\n"
    "env:\n"
    "  PYTORCH_CUDA_ALLOC_CONF: \"expandable_segments:True\"\n"
    "  VLLM_LOGGING_LEVEL: \"DEBUG\"\n"
    "  VLLM_USE_V2_MODEL_RUNNER: \"1\"\n";

#define GLM_EVAL_FILE "configs/GLM-5.2-NVFP4-TP1-PCP4-DCP4-EP.yaml"

/* Extras with --hardware and one --prefill (static storage; not thread-safe, tests run -j1). */
static const ScenarioExtras *eval_extras(const char *hardware, uint32_t prefill)
{
    static ScenarioExtras x;
    static GArray *pf;
    if (!pf)
        pf = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_array_set_size(pf, 0);
    g_array_append_val(pf, prefill);
    x = (ScenarioExtras){.hardware = hardware, .prefill = pf};
    return &x;
}

/* An eval config of `model_name` and `server_args`, loaded with b200 and a 100-token prefill. */
static Scenario *eval_ok(const char *model_name, const char *server_args)
{
    g_autofree char *yaml =
        g_strdup_printf("model_name: %s\nserver_args: >-\n  %s\n", model_name, server_args);
    return load_x_ok(yaml, "e.yaml", eval_extras("b200", 100));
}

static void eval_invalid(const char *yaml, const char *loc, const char *key, const char *also)
{
    g_autofree char *msg =
        load_x_fail(yaml, "e.yaml", eval_extras("b200", 100), SCENARIO_ERROR_INVALID);
    g_autofree char *prefix = g_strdup_printf("%s: ", loc);
    cr_assert(g_str_has_prefix(msg, prefix), "expected prefix \"%s\" in: %s", prefix, msg);
    if (key) {
        g_autofree char *k = g_strdup_printf("key '%s'", key);
        assert_has(msg, k);
    }
    if (also)
        assert_has(msg, also);
}

/* The format the scenario's weights take for the tensors that dominate them (routed experts of
 * a MoE model, else the dense MLP), in the layer after the first dense ones. */
static ModelWeightKind main_format(const Scenario *s)
{
    const ModelArch *a = s->arch;
    uint32_t l = 0;
    while (a->moe && l + 1 < a->num_layers && !model_arch_layer_is_moe(a, l))
        l++;
    return model_quant_format(&a->quant, (int32_t)l,
                              a->moe ? MODEL_ROLE_EXPERT : MODEL_ROLE_DENSE_MLP)
        ->kind;
}

Test(scenario_eval, glm_pcp_dcp_config_loads)
{
    Scenario *s = load_x_ok(glm_eval, GLM_EVAL_FILE, eval_extras("b200", 633));
    cr_assert_str_eq(s->kind, "model");
    cr_assert_str_eq(s->name, "GLM-5.2-NVFP4-TP1-PCP4-DCP4-EP");
    cr_assert(g_str_has_prefix(s->model_source, "preset glm-5.2 ("), "%s", s->model_source);
    cr_assert_str_eq(s->hardware.name, "b200");
    const ModelParallel *par = &s->plan->par;
    cr_assert_eq(par->tensor_parallel_size, 1);
    cr_assert_eq(par->prefill_context_parallel_size, 4);
    cr_assert_eq(par->decode_context_parallel_size, 4);
    cr_assert_eq(par->dcp_comm_backend, MODEL_DCP_AG_RS);
    cr_assert(par->enable_expert_parallel);
    cr_assert_eq(s->plan->world, 4);
    cr_assert_eq(main_format(s), MODEL_WFMT_NVFP4); /* nvidia/GLM-5.2-NVFP4 in the catalog */
    cr_assert_eq(s->engine.kv_cache_dtype, SCHED_DTYPE_FP8);
    cr_assert_eq(s->engine.gpu_memory_utilization, 0.96);
    cr_assert_eq(s->engine.max_model_len, 4096);
    cr_assert_eq(s->engine.max_num_batched_tokens, 4096);
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_PIECEWISE);
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_AUTO);
    cr_assert_eq(s->workload->steps->len, 1);
    cr_assert_eq(len_at(batch_of(s, 0, 0)->prefill, 0), 633);
    /* flags that change nothing in a simulation are dropped; others are reported */
    /* every flag and env variable that changes nothing here is listed with its reason */
    cr_assert_eq(s->ignored_flags->len, 2);
    cr_assert_eq(s->engine.moe_backend, MODEL_MOE_FLASHINFER_CUTLASS);
    cr_assert(s->engine.v2_model_runner);
    cr_assert(has_ignored(s, "env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the "
                             "allocator's settings: fragmentation is not modelled)"));
    cr_assert(has_ignored(s, "env VLLM_LOGGING_LEVEL=DEBUG (logging only)"));
    cr_assert_str_eq(s->text, glm_eval);
    scenario_free(s);
}

Test(scenario_eval, hardware_required_workload_optional)
{
    g_autofree char *m1 =
        load_x_fail(glm_eval, "e.yaml", eval_extras(NULL, 633), SCENARIO_ERROR_INVALID);
    cr_assert(g_str_has_prefix(m1, "e.yaml:1: an eval config names no hardware; pass --hardware "
                                   "NAME (h100, h200, b200"),
              "%s", m1);
    g_autofree char *m2 = load_x_fail(glm_eval, "e.yaml", NULL, SCENARIO_ERROR_INVALID);
    assert_has(m2, "an eval config names no hardware");
    /* hardware alone: start-up only (no workload is needed to ask whether it starts) */
    ScenarioExtras hw_only = {.hardware = "b200"};
    Scenario *m3 = load_x_ok(glm_eval, "e.yaml", &hw_only);
    cr_assert_eq(m3->workload->steps->len, 0);
    scenario_free(m3);
    /* hardware: from --set counts */
    const char *ov[] = {"hardware=h200", NULL};
    ScenarioExtras x = *eval_extras(NULL, 100);
    x.overrides = ov;
    Scenario *s = load_x_ok(glm_eval, "e.yaml", &x);
    cr_assert_str_eq(s->hardware.name, "h200");
    scenario_free(s);
}

Test(scenario_eval, model_name_mapping)
{
    /* model_name -> the catalog's preset and the checkpoint's formats (model/catalog.h) */
    static const struct {
        const char *model_name, *preset;
        ModelWeightKind fmt;
    } cases[] = {
        {"nvidia/GLM-5.2-NVFP4", "glm-5.2", MODEL_WFMT_NVFP4},
        {"zai-org/GLM-5", "glm-5", MODEL_WFMT_BF16},
        {"zai-org/GLM-5-FP8", "glm-5", MODEL_WFMT_FP8_BLOCK},
        {"deepseek-ai/DeepSeek-V3.2", "deepseek-v3.2", MODEL_WFMT_FP8_BLOCK},
        {"deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-v3.2", MODEL_WFMT_FP8_BLOCK},
        {"nvidia/DeepSeek-V3.2-NVFP4", "deepseek-v3.2", MODEL_WFMT_NVFP4},
        {"deepseek-ai/DeepSeek-V3-0324", "deepseek-v3", MODEL_WFMT_FP8_BLOCK},
        {"deepseek-ai/DeepSeek-R1", "deepseek-v3", MODEL_WFMT_FP8_BLOCK},
        {"meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b", MODEL_WFMT_BF16},
        {"Qwen/Qwen3-235B-A22B", "qwen3-235b-a22b", MODEL_WFMT_BF16},
        {"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "qwen3-235b-a22b", MODEL_WFMT_FP8_BLOCK},
        {"Eco-Tech/GLM-5.2-w8a8", "glm-5.2", MODEL_WFMT_INT8_CHANNEL},
        {"openai/gpt-oss-120b", "gpt-oss-120b", MODEL_WFMT_MXFP4},
        /* the preset carries the released mxfp4; a BF16 export resets it, a name's other
         * format replaces it */
        {"unsloth/gpt-oss-120b-BF16", "gpt-oss-120b", MODEL_WFMT_BF16},
        {"mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b", MODEL_WFMT_BF16},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        /* vLLM refuses Qwen3-235B-A22B's FP8 experts split by 8 (1536 / 8 = 192, not a
         * multiple of the 128 block, model/quant-shape.h): that one at TP4 */
        bool fp8_qwen = strstr(cases[i].model_name, "Qwen3-235B") &&
                        cases[i].fmt == MODEL_WFMT_FP8_BLOCK;
        Scenario *s = eval_ok(cases[i].model_name,
                              fp8_qwen ? "--tensor-parallel-size 4" : "--tensor-parallel-size 8");
        g_autofree char *want = g_strdup_printf("preset %s (", cases[i].preset);
        cr_assert(g_str_has_prefix(s->model_source, want), "%s: %s", cases[i].model_name,
                  s->model_source);
        cr_assert_eq(main_format(s), cases[i].fmt, "%s: format %d", cases[i].model_name,
                     main_format(s));
        cr_assert_not(s->engine.quantization_override, "%s", cases[i].model_name);
        scenario_free(s);
    }
    /* DeepSeek-V4-Flash: the preset's fp8 block linears around MXFP4 experts; a -NVFP4 name
     * replaces them with ranksim's nvfp4 scheme */
    Scenario *s = eval_ok("deepseek-ai/DeepSeek-V4-Flash", "-tp 8 --kv-cache-dtype fp8");
    cr_assert_eq(main_format(s), MODEL_WFMT_MXFP4);
    cr_assert_eq(model_quant_format(&s->arch->quant, 3, MODEL_ROLE_ATTN_O)->kind,
                 MODEL_WFMT_FP8_BLOCK);
    scenario_free(s);
    s = eval_ok("amd/DeepSeek-V4-Flash-NVFP4", "-tp 8 --kv-cache-dtype fp8");
    cr_assert_eq(main_format(s), MODEL_WFMT_NVFP4);
    cr_assert_str_eq(s->arch->quant.source, "model name");
    scenario_free(s);
    /* --quantization names the checkpoint's method (a kernel variant counts): its formats stay */
    s = eval_ok("nvidia/GLM-5.2-NVFP4", "-tp 8 --quantization modelopt_fp4");
    cr_assert_not(s->engine.quantization_override);
    cr_assert_eq(main_format(s), MODEL_WFMT_NVFP4);
    scenario_free(s);
    /* another method than the checkpoint's: vLLM's error */
    eval_invalid("model_name: nvidia/GLM-5.2-NVFP4\nserver_args: -tp 8 --quantization fp8\n",
                 "e.yaml:2", "server_args",
                 "Quantization method specified in the model config (modelopt) does not match "
                 "the quantization method specified in the `quantization` argument (fp8)");
    /* an unquantized checkpoint quantized online: ranksim's scheme of that name, with a note */
    s = eval_ok("zai-org/GLM-5.2", "-tp 8 -q fp8");
    cr_assert(s->engine.quantization_override);
    cr_assert_eq(s->engine.quantization, MODEL_QUANT_FP8);
    bool noted = false;
    for (guint i = 0; i < s->ignored_flags->len; i++)
        noted = noted || strstr(g_ptr_array_index(s->ignored_flags, i), "quantized online");
    cr_assert(noted);
    scenario_free(s);
    eval_invalid("model_name: zai-org/GLM-5.2\nserver_args: -tp 8 --quantization awq\n", "e.yaml:2",
                 "server_args", "the checkpoint has no quantization_config");
    s = eval_ok("zai-org/GLM-5.2", "-tp 8 --quantization ascend");
    cr_assert_eq(s->engine.quantization, MODEL_QUANT_W8A8);
    scenario_free(s);

    /* unknown: the presets and the way out */
    eval_invalid("model_name: mistralai/Mistral-Large-Instruct-2411\n", "e.yaml:1", "model_name",
                 "no built-in model matches 'mistralai/Mistral-Large-Instruct-2411' (read as "
                 "'mistral-large')");
    eval_invalid("model_name: mistralai/Mistral-Large-Instruct-2411\n", "e.yaml:1", "model_name",
                 "write a model scenario with model: path/to/config.json");
    eval_invalid("model_name: 42\n", "e.yaml:1", "model_name", "no built-in model matches '42'");
    /* a model: key (e.g. from --set) names the architecture instead */
    s = load_x_ok("model_name: mistralai/Mistral-Large-Instruct-2411\nmodel: llama-3.1-70b\n",
                  "e.yaml", eval_extras("b200", 100));
    cr_assert_str_eq(s->model_source, "preset llama-3.1-70b");
    scenario_free(s);
}

Test(scenario_eval, server_args_variants)
{
    Scenario *s =
        eval_ok("zai-org/GLM-5.2", "--tensor-parallel-size=2 -dp 2 --enable_expert_parallel "
                                   "--max-model-len=4k --max-num-seqs 64 -O0");
    cr_assert_eq(s->plan->par.tensor_parallel_size, 2);
    cr_assert_eq(s->plan->par.data_parallel_size, 2);
    cr_assert(s->plan->par.enable_expert_parallel);
    cr_assert_eq(s->engine.max_model_len, 4000);
    cr_assert_eq(s->engine.max_num_seqs, 64);
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_NONE);
    cr_assert_eq(s->ignored_flags->len, 0);
    scenario_free(s);

    s = eval_ok("zai-org/GLM-5.2", "-tp 8 -O 1 --max-model-len 8K");
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_PIECEWISE);
    cr_assert_eq(s->engine.max_model_len, 8192);
    scenario_free(s);

    /* --enforce-eager wins over a compilation config; -cc.KEY=VALUE; pass_config.enable_sp */
    s = eval_ok("zai-org/GLM-5.2", "-tp 8 --enforce-eager -cc.cudagraph_mode=FULL");
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_NONE);
    scenario_free(s);
    s = eval_ok("zai-org/GLM-5.2", "-tp 8 -cc.cudagraph_mode=FULL");
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_FULL);
    scenario_free(s);
    s = eval_ok("zai-org/GLM-5.2",
                "-tp 8 --compilation-config '{\"pass_config\": {\"enable_sp\": true}, "
                "\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}'");
    cr_assert(s->plan->par.enable_sequence_parallel);
    cr_assert_eq(s->engine.cudagraph_mode, MODEL_CUDAGRAPH_FULL);
    cr_assert(has_ignored(s, "cudagraph_mode FULL_DECODE_ONLY (simulated as FULL)"));
    scenario_free(s);

    /* attention backend: flag, JSON config, dotted config, environment */
    s = eval_ok("zai-org/GLM-5.2", "-tp 8 --attention-backend flashmla_sparse");
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_FLASHMLA_SPARSE);
    scenario_free(s);
    s = eval_ok("zai-org/GLM-5.2",
                "-tp 8 --attention-config '{\"backend\":\"FLASHINFER_MLA_SPARSE\"}'");
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_FLASHINFER_MLA_SPARSE);
    scenario_free(s);
    s = eval_ok("zai-org/GLM-5.2", "-tp 8 -ac.backend=FLASHMLA_SPARSE");
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_FLASHMLA_SPARSE);
    scenario_free(s);
    s = load_x_ok("model_name: zai-org/GLM-5.2\nserver_args: -tp 8\n"
                  "env: {VLLM_ATTENTION_BACKEND: FLASHMLA_SPARSE}\n",
                  "e.yaml", eval_extras("b200", 100));
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_FLASHMLA_SPARSE);
    scenario_free(s);
    s = load_x_ok("model_name: zai-org/GLM-5.2\n"
                  "server_args: -tp 8 --attention-backend FLASHINFER_MLA_SPARSE\n"
                  "env: {VLLM_ATTENTION_BACKEND: FLASHMLA_SPARSE}\n",
                  "e.yaml", eval_extras("b200", 100));
    cr_assert_eq(s->engine.attention_backend, MODEL_BACKEND_FLASHINFER_MLA_SPARSE);
    scenario_free(s);

    /* DCP knobs, PCP short form, DP via -dp with a per-rank-agnostic workload */
    s = eval_ok("zai-org/GLM-5.2", "-tp 4 -dcp 2 --dcp-comm-backend=a2a "
                                   "--cp-kv-cache-interleave-size 64 --kv-cache-dtype auto");
    cr_assert_eq(s->plan->par.decode_context_parallel_size, 2);
    cr_assert_eq(s->plan->par.dcp_comm_backend, MODEL_DCP_A2A);
    cr_assert_eq(s->plan->par.cp_kv_cache_interleave_size, 64);
    cr_assert_eq(s->engine.kv_cache_dtype, SCHED_DTYPE_BF16);
    scenario_free(s);

    /* unknown flags, with or without a value, and stray words are reported, never fatal */
    s = eval_ok("deepseek-ai/DeepSeek-V3.2",
                "-tp 8 --speculative-config '{\"method\":\"mtp\"}' --no-enable-prefix-caching "
                "--block-size=64 --trust-remote-code --port 8000 stray");
    /* --speculative-config with MTP is simulated (the MTP layers' weights are loaded) */
    cr_assert_eq(s->engine.speculative_method, MODEL_SPEC_MTP);
    cr_assert_eq(s->engine.num_speculative_tokens, 1);
    cr_assert_eq(s->ignored_flags->len, 2);
    cr_assert(!s->engine.enable_prefix_caching); /* --no-enable-prefix-caching */
    cr_assert(has_ignored(s, "--block-size=64 (the KV block size: ranksim takes the attention "
                             "backend's)"));
    cr_assert(has_ignored(s, "stray (not a flag; ignored)"));
    scenario_free(s);
    /* a draft model is noted */
    s = eval_ok(
        "deepseek-ai/DeepSeek-V3.2",
        "-tp 8 --speculative-config '{\"method\":\"eagle3\",\"num_speculative_tokens\":2}'");
    cr_assert_eq(s->engine.speculative_method, MODEL_SPEC_EAGLE);
    cr_assert_eq(s->ignored_flags->len, 1);
    scenario_free(s);

    /* top-level max_model_len (lm-eval configs) is the default; other keys are noted */
    s = load_x_ok("model_name: deepseek-ai/DeepSeek-V3.2\nmax_model_len: 2048\n"
                  "server_args: -tp 8\nlimit: 250\ntasks: [gsm8k]\n",
                  "e.yaml", eval_extras("b200", 100));
    cr_assert_eq(s->engine.max_model_len, 2048);
    cr_assert(has_ignored(s, "eval config key 'limit'"));
    cr_assert(has_ignored(s, "eval config key 'tasks'"));
    scenario_free(s);

    /* no server_args at all: vLLM's defaults */
    s = load_x_ok("model_name: meta-llama/Meta-Llama-3.1-70B-Instruct\n", "e.yaml",
                  eval_extras("b200", 100));
    cr_assert_eq(s->plan->world, 1);
    scenario_free(s);
}

Test(scenario_eval, set_overrides_on_eval_configs)
{
    const char *ov[] = {"parallel.tensor_parallel_size=2", "engine.max_num_seqs=16", NULL};
    ScenarioExtras x = *eval_extras("b200", 100);
    x.overrides = ov;
    Scenario *s = load_x_ok(glm_eval, "e.yaml", &x);
    cr_assert_eq(s->plan->par.tensor_parallel_size, 2);
    cr_assert_eq(s->plan->par.prefill_context_parallel_size, 4); /* from server_args */
    cr_assert_eq(s->plan->world, 8);
    cr_assert_eq(s->engine.max_num_seqs, 16);
    scenario_free(s);
}

Test(scenario_eval, bad_server_args)
{
    const char *head = "model_name: zai-org/GLM-5.2\n";
    g_autofree char *y1 = g_strdup_printf("%sserver_args: --tensor-parallel-size two\n", head);
    eval_invalid(y1, "e.yaml:2", "server_args",
                 "--tensor-parallel-size: expected an integer, got 'two'; valid: 1..1048576");
    g_autofree char *y2 = g_strdup_printf("%sserver_args: -tp 8 --max-model-len\n", head);
    eval_invalid(y2, "e.yaml:2", "server_args", "--max-model-len: needs a value");
    g_autofree char *y3 = g_strdup_printf("%sserver_args: -tp 8 --enforce-eager=true\n", head);
    eval_invalid(y3, "e.yaml:2", "server_args", "--enforce-eager: takes no value");
    g_autofree char *y4 =
        g_strdup_printf("%sserver_args: -tp 8 --compilation-config '{\"cudagraph_mode\n", head);
    eval_invalid(y4, "e.yaml:2", "server_args", "cannot split it like a shell command line");
    g_autofree char *y5 =
        g_strdup_printf("%sserver_args: -tp 8 --compilation-config '{cudagraph_mode}'\n", head);
    eval_invalid(y5, "e.yaml:2", "server_args", "--compilation-config: not valid JSON");
    g_autofree char *y6 = g_strdup_printf("%sserver_args: -tp 8 -pp 2 -pcp 2\n", head);
    eval_invalid(y6, "e.yaml:2", "server_args", "MRV2 PCP does not support PP yet.");
    g_autofree char *y7 =
        g_strdup_printf("%sserver_args: -tp 8 --attention-backend ROCM_AITER_MLA\n", head);
    eval_invalid(y7, "e.yaml:2", "server_args",
                 "attention backend ROCM_AITER_MLA is a dense MLA kernel; glm-5.2 uses sparse "
                 "MLA (a DSA indexer) (valid for it on b200: FLASHINFER_MLA_SPARSE, "
                 "FLASHMLA_SPARSE, AUTO)");
    g_autofree char *y7b =
        g_strdup_printf("%sserver_args: -tp 8 --attention-backend ROCM_AITR\n", head);
    eval_invalid(y7b, "e.yaml:2", "server_args",
                 "--attention-backend: unknown attention backend 'ROCM_AITR'");
    g_autofree char *y8 =
        g_strdup_printf("%sserver_args: -tp 8 --gpu-memory-utilization 1.2\n", head);
    eval_invalid(y8, "e.yaml:2", "server_args",
                 "--gpu-memory-utilization: 1.2 is out of range; valid: a number > 0 and <= 1");
    g_autofree char *y9 =
        g_strdup_printf("%sserver_args: -tp 8 -cc.cudagraph_mode=SOMETIMES\n", head);
    eval_invalid(y9, "e.yaml:2", "server_args", "unknown cudagraph_mode 'SOMETIMES'");
    g_autofree char *y10 = g_strdup_printf("%sserver_args: -tp 8 --quantization gguf\n", head);
    eval_invalid(y10, "e.yaml:2", "server_args", "quantization 'gguf' is not modelled");
    g_autofree char *y11 = g_strdup_printf("%sserver_args: [-tp, 8]\n", head);
    eval_invalid(y11, "e.yaml:2", "server_args", "expected a string, got a list");
    /* vLLM's validation errors surface at server_args */
    g_autofree char *y12 = g_strdup_printf("%sserver_args: -tp 2 -pcp 2 -dp 2\n", head);
    eval_invalid(y12, "e.yaml:2", "server_args", "PCP does not support data parallelism yet.");
    g_autofree char *y13 = g_strdup_printf("%sserver_args: -tp 8 -O 7\n", head);
    eval_invalid(y13, "e.yaml:2", "server_args", "-O: expected an optimization level, got '7'");
    g_autofree char *y14 = g_strdup_printf("%senv: {VLLM_ATTENTION_BACKEND: FOO}\n", head);
    eval_invalid(y14, "e.yaml:2", "VLLM_ATTENTION_BACKEND", "unknown attention backend 'FOO'");
}

Test(scenario_eval, bad_keys)
{
    eval_invalid("model_name: zai-org/GLM-5.2\nserver_arg: -tp 8\n", "e.yaml:2", "server_arg",
                 "unknown key in a vLLM eval config; did you mean 'server_args'?");
    eval_invalid("model_name: zai-org/GLM-5.2\nranks: 8\n", "e.yaml:2", "ranks",
                 "not valid in a vLLM eval config");
    eval_invalid("model_name: zai-org/GLM-5.2\nkind: program\n", "e.yaml:2", "kind",
                 "a vLLM eval config (model_name:) is a model scenario");
    eval_invalid("model_name: [a]\n", "e.yaml:1", "model_name", "expected a string, got a list");
    eval_invalid("model_name: zai-org/GLM-5.2\nenv: [a]\n", "e.yaml:2", "env",
                 "expected a mapping, got a list");
}

/* ---- robustness of the model loaders ---- */

static void load_any_x(const char *text, const ScenarioExtras *x)
{
    GError *err = NULL;
    Scenario *s = scenario_load_string_extras(text, "t.yaml", x, &err);
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

static const char model_fuzz_seed[] =
    "model: glm-5.2\nhardware: b200\n"
    "parallel: {tensor_parallel_size: 2, prefill_context_parallel_size: 2, "
    "decode_context_parallel_size: 2, enable_expert_parallel: true}\n"
    "engine: {attention_backend: FLASHMLA_SPARSE, quantization: nvfp4, kv_cache_dtype: fp8,\n"
    "         max_num_batched_tokens: 4096, max_model_len: 4096}\n"
    "workload:\n  steps:\n    - {prefill: [633, 20]}\n    - {decode: [633, 1], prefill: [5]}\n"
    "faults: [{rank: 1, kind: delay, op: input_layernorm, seconds: 1}]\n";

static const char eval_fuzz_seed[] =
    "model_name: \"nvidia/GLM-5.2-NVFP4\"\nnum_fewshot: 5\n"
    "server_args: >-\n"
    "  --compilation-config '{\"cudagraph_mode\":\"PIECEWISE\"}' -tp 2\n"
    "  --max-model-len=4096 --prefill-context-parallel-size 2 -dcp 2 --moe-backend x\n"
    "  --enable-expert-parallel --kv-cache-dtype fp8\n"
    "env: {VLLM_ATTENTION_BACKEND: FLASHMLA_SPARSE}\n";

static void fuzz(const char *seed, const ScenarioExtras *x, int iters, guint32 rng_seed)
{
    size_t n = strlen(seed);
    for (size_t len = 0; len < n; len += 3) {
        g_autofree char *t = g_strndup(seed, len);
        load_any_x(t, x);
    }
    static const char alphabet[] = " \n\t:-,[]{}\"'*&!#|>%@`0123456789abcz.~=_\xc3\xff";
    GRand *rng = g_rand_new_with_seed(rng_seed);
    for (int iter = 0; iter < iters; iter++) {
        g_autofree char *t = g_strdup(seed);
        int edits = g_rand_int_range(rng, 1, 4);
        for (int e = 0; e < edits; e++) {
            size_t pos = (size_t)g_rand_int_range(rng, 0, (gint32)n);
            t[pos] = alphabet[g_rand_int_range(rng, 0, (gint32)(sizeof alphabet - 1))];
        }
        load_any_x(t, x);
    }
    g_rand_free(rng);
}

Test(scenario_robust, model_truncations_and_mutations)
{
    fuzz(model_fuzz_seed, NULL, 600, 20240612);
}

Test(scenario_robust, eval_truncations_and_mutations)
{
    fuzz(eval_fuzz_seed, eval_extras("b200", 100), 600, 20240613);
}

/* Found by the scenario fuzzer (tests/fuzz/regress/scenario/eval-empty-kind.yaml): an eval
 * config whose kind: is empty set its error twice (a GLib warning over the first). One error,
 * at kind:. */
Test(scenario_eval, empty_kind_is_one_error)
{
    /* GLib warns when an error is set over another: make that warning fail the test */
    g_log_set_always_fatal(G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL);
    GError *err = NULL;
    Scenario *s = scenario_load_string("model_name: \"opentre-ptuoss-20b\"\naccurho@: ereaep;\n"
                                       "kind: \n",
                                       "e.yaml", NULL, &err);
    cr_assert_null(s);
    cr_assert_not_null(err);
    cr_assert(strstr(err->message, "e.yaml:3: key 'kind'"), "%s", err->message);
    g_error_free(err);
}

/* Found by the scenario fuzzer (tests/fuzz/regress/scenario/eval-16384-ranks.yaml): an eval
 * config with PCP 8192 x TP 2 lowered 16,384 ranks for seconds before the work limit was
 * checked. With a limit the loader refuses it before lowering, naming the lower bound. */
Test(scenario_eval, work_limit_is_checked_before_lowering)
{
    GError *err = NULL;
    g_autoptr(GArray) pf = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t n = 128;
    g_array_append_val(pf, n);
    ScenarioExtras x = {.hardware = "h100", .prefill = pf, .max_rank_ops = 100000};
    Scenario *s = scenario_load_string_extras(
        "model_name: Qwen/Qwen3-8B\n"
        "server_args: --prefill-context-parallel-size 8192 --tensor-parallel-size 2\n",
        "e.yaml", &x, &err);
    cr_assert_null(s);
    cr_assert(strstr(err->message, "--max-rank-ops: 16384 ranks x 1 steps x 36 layers is at least"),
              "%s", err->message);
    g_clear_error(&err);
    /* without a limit it loads (PCP on an MLA model: vLLM's PCP supports MLA models only) */
    x.max_rank_ops = 0;
    s = scenario_load_string_extras(
        "model_name: RedHatAI/DeepSeek-Coder-V2-Lite-Instruct-FP8\nserver_args: -tp 2 -pcp 2\n",
        "e.yaml", &x, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    scenario_free(s);
}

/* vLLM's context-parallel rules that need the model, the engine or the backend, each refused in
 * vLLM's words (doc/parallel-plan.md rules 16-19). */
Test(scenario_eval, context_parallel_rules_in_vllms_words)
{
    static const struct {
        const char *text;
        const char *words;
    } cases[] = {
        {"model_name: Qwen/Qwen3-8B\nserver_args: -pcp 2\n",
         "\"MRV2 PCP currently supports MLA models only.\""},
        {"model_name: RedHatAI/DeepSeek-Coder-V2-Lite-Instruct-FP8\nserver_args: -tp 2 -pcp 2 "
         "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":3}'\n",
         "\"MRV2 PCP does not support speculative decoding yet.\""},
        {"model_name: RedHatAI/DeepSeek-Coder-V2-Lite-Instruct-FP8\nserver_args: -tp 2 -dcp 2 "
         "--cp-kv-cache-interleave-size 3\n",
         "\"Block_size(64) should be greater than or equal to and divisible by "
         "cp_kv_cache_interleave_size (3).\""},
        {"model_name: openai/gpt-oss-20b\nserver_args: -tp 16 -dcp 2\n",
         "\"DCP not support sliding window attn now.\""},
        {"model_name: RedHatAI/DeepSeek-Coder-V2-Lite-Instruct-FP8\nserver_args: -tp 2 -pcp 2 "
         "--compilation-config '{\"pass_config\":{\"enable_sp\":true}}'\n",
         "\"Model Runner V2 does not yet support: sequence parallelism\""},
        {"model_name: Qwen/Qwen3-30B-A3B\nserver_args: -tp 2 --enable-eplb\n",
         "\"enable_expert_parallel must be True to use EPLB.\""},
        {"model_name: Qwen/Qwen3-30B-A3B\nserver_args: --enable-eplb --enable-expert-parallel\n",
         "\"EPLB requires tensor, prefill-context, or data parallelism, but got TP=1, PCP=1, "
         "DP=1.\""},
    };
    g_autoptr(GArray) pf = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t n = 128;
    g_array_append_val(pf, n);
    ScenarioExtras x = {.hardware = "h100", .prefill = pf};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        GError *err = NULL;
        Scenario *s = scenario_load_string_extras(cases[i].text, "e.yaml", &x, &err);
        cr_assert_null(s, "case %zu loaded", i);
        cr_assert_not_null(strstr(err->message, cases[i].words), "case %zu: %s", i, err->message);
        g_clear_error(&err);
    }
    /* the valid neighbours load: DCP with interleave 16, PCP on an MLA model */
    static const char *const ok[] = {
        "model_name: RedHatAI/DeepSeek-Coder-V2-Lite-Instruct-FP8\nserver_args: -tp 2 -dcp 2 "
        "--cp-kv-cache-interleave-size 16\n",
        "model_name: RedHatAI/DeepSeek-Coder-V2-Lite-Instruct-FP8\nserver_args: -pcp 2\n"};
    for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
        GError *err = NULL;
        Scenario *s = scenario_load_string_extras(ok[i], "e.yaml", &x, &err);
        cr_assert_not_null(s, "%s", err ? err->message : "");
        scenario_free(s);
    }
}

/* Issue 27: a request workload is served before it is lowered, so the work limit is checked
 * first on the fewest steps its requests can take. workload.poisson at its ceiling (10^7) is
 * refused before its arrivals are drawn (the loader holds no request: it never made them), a
 * trace of the same size after reading, neither served; a small one loads. */
Test(scenario_requests, served_work_is_checked_before_serving)
{
    static const char *const yaml =
        "name: p\nmodel: llama-3.1-70b\nhardware: h100\nparallel: {tensor_parallel_size: 4}\n"
        "engine: {max_model_len: 8192}\n"
        "workload:\n  poisson: {count: %d, rate_per_s: 4, prompt: 1024, output: 128}\n";
    ScenarioExtras x = {.max_rank_ops = UINT64_C(1000000000)};
    GError *err = NULL;
    g_autofree char *big = g_strdup_printf(yaml, 10000000);
    Scenario *s = scenario_load_string_extras(big, "p.yaml", &x, &err);
    cr_assert_null(s);
    cr_assert(strstr(err->message, "--max-rank-ops: 10000000 requests (1280000000 output tokens) "
                                   "need at least 1250000 steps"),
              "%s", err->message);
    cr_assert(strstr(err->message, "nothing was served"), "%s", err->message);
    g_clear_error(&err);
    g_autofree char *small = g_strdup_printf(yaml, 1000);
    s = scenario_load_string_extras(small, "p.yaml", &x, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_eq(s->requests->len, 1000);
    scenario_free(s);
    /* without a limit the ceiling alone applies: over it, one line naming the key */
    x.max_rank_ops = 0;
    g_autofree char *over = g_strdup_printf(yaml, 10000001);
    s = scenario_load_string_extras(over, "p.yaml", &x, &err);
    cr_assert_null(s);
    cr_assert(strstr(err->message, "p.yaml:7: key 'count'"), "%s", err->message);
    g_clear_error(&err);
}
