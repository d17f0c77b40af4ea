/* tests/fuzz/fuzz-hardware.c — libFuzzer target: a hardware file (YAML, doc/hardware-format.md)
 * loaded with hardware_load_string, then used: the roofline cost of a few ops
 * (model_cost_new / model_cost_op_ns) and a fixed 16-rank program over it — all-reduce,
 * all-gather, reduce-scatter, all-to-all, broadcast over the world and over pairs, a
 * point-to-point ring, a barrier — simulated on the loaded fabric, with and without contention.
 * Valid hardware must give a simulation that ends (a `time` error at worst), never an abort.
 */
#include "fuzz-common.h"

#include "../../model/cost.h"
#include "../../sched/engine.h"
#include "../../src/input/hardware.h"

#define N_RANKS 16

static SchedProgram *program;

static SchedProgram *build_program(void)
{
    SchedProgram *p = sched_program_new(N_RANKS);
    int32_t all[N_RANKS];
    for (int32_t r = 0; r < N_RANKS; r++)
        all[r] = r;
    int32_t world = sched_program_add_group(p, "world", all, N_RANKS);
    int32_t pair[N_RANKS / 2];
    for (int32_t i = 0; i < N_RANKS / 2; i++) {
        char name[16];
        g_snprintf(name, sizeof name, "pair%d", i);
        /* partners 0-8, 1-9, ...: across nodes when devices_per_node <= 8 */
        pair[i] = sched_program_add_group(p, name, (int32_t[]){i, i + N_RANKS / 2}, 2);
    }
    uint32_t fwd = sched_program_name(p, "fwd"), ar = sched_program_name(p, "all_reduce"),
             ag = sched_program_name(p, "all_gather"), rs = sched_program_name(p, "reduce_scatter"),
             a2a = sched_program_name(p, "all_to_all"), bc = sched_program_name(p, "broadcast"),
             bar = sched_program_name(p, "barrier"), tx = sched_program_name(p, "send"),
             rx = sched_program_name(p, "recv");
    for (int32_t r = 0; r < N_RANKS; r++) {
        int32_t pg = pair[r % (N_RANKS / 2)];
        SchedOp ops[16];
        uint32_t n = 0;
        ops[n++] = sched_op_compute(fwd, 1000 + r, 128);
        ops[n++] = sched_op_collective(SCHED_OP_ALL_REDUCE, ar, world, 1u << 20, SCHED_DTYPE_BF16);
        ops[n++] = sched_op_collective(SCHED_OP_ALL_GATHER, ag, pg, 4096, SCHED_DTYPE_FP32);
        ops[n++] = sched_op_collective(SCHED_OP_REDUCE_SCATTER, rs, world, 1u << 16,
                                       SCHED_DTYPE_FP8);
        ops[n++] = sched_op_collective(SCHED_OP_ALL_TO_ALL, a2a, world, 1u << 18, SCHED_DTYPE_BF16);
        SchedOp b = sched_op_collective(SCHED_OP_BROADCAST, bc, world, 1u << 12, SCHED_DTYPE_INT8);
        b.root = 3;
        ops[n++] = b;
        ops[n++] = sched_op_repeat(2, 1, -1);
        ops[n++] = sched_op_collective(SCHED_OP_ALL_REDUCE, ar, pg, 1u << 24, SCHED_DTYPE_FP16);
        /* a ring: even ranks send first, odd ranks receive first */
        SchedOp s = sched_op_p2p(SCHED_OP_SEND, tx, (r + 1) % N_RANKS, 1u << 14, SCHED_DTYPE_BF16);
        SchedOp v = sched_op_p2p(SCHED_OP_RECV, rx, (r + N_RANKS - 1) % N_RANKS, 1u << 14,
                                 SCHED_DTYPE_BF16);
        ops[n++] = r % 2 ? v : s;
        ops[n++] = r % 2 ? s : v;
        ops[n++] = sched_op_collective(SCHED_OP_BARRIER, bar, world, 0, SCHED_DTYPE_BF16);
        sched_program_set_ops(p, (uint32_t)r, ops, n);
    }
    GError *err = NULL;
    if (!sched_program_validate(p, &err)) {
        fprintf(stderr, "fuzz: the fixed program is invalid: %s\n", err->message);
        abort();
    }
    return p;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    program = build_program();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memchr(data, 0, size))
        return 0;
    NetHardware hw;
    GError *err = NULL;
    bool ok = hardware_load_string((const char *)data, (gssize)size, "fuzz.yaml", &hw, &err);
    fuzz_check_error("hardware_load_string", ok, err);
    if (!ok) {
        g_error_free(err);
        return 0;
    }
    char why[256];
    if (!net_hardware_check(&hw, why, sizeof why)) {
        fprintf(stderr, "fuzz: loaded hardware fails net_hardware_check: %s\n", why);
        abort();
    }
    ModelCost *cost = model_cost_new(&hw, NULL);
    for (int d = 0; d < NET_PEAK_COUNT; d++) {
        (void)model_cost_op_ns(cost, "mlp", 4096, 1e12, 1e9, (NetPeakDtype)d);
        (void)model_cost_op_ns(cost, "attention", 1, 1.0, 1.0, (NetPeakDtype)d);
    }
    model_cost_free(cost);
    for (int contention = 0; contention < 2; contention++) {
        SchedConfig cfg = sched_config_default();
        cfg.timeline = SCHED_TIMELINE_NONE;
        cfg.fabric.hw = &hw;
        cfg.fabric.n_ranks = N_RANKS;
        cfg.fabric.contention = contention;
        sched_outcome_free(sched_engine_run(program, &cfg));
    }
    return 0;
}
