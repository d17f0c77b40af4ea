/* tests/fuzz/fuzz-scenario.c — libFuzzer target: a scenario file (YAML: kind program, kind
 * model, a vLLM eval config) loaded, checked for its total work, simulated, and reported the
 * way `ranksim run` does (text report, JSON report with memory, explain text and DOT).
 *
 * Bounded work per input: a scenario whose rank-ops (repeats expanded) exceed
 * FUZZ_MAX_RANK_OPS is refused by runner_check_work, as `run --max-rank-ops` would, and not
 * simulated. A scenario without a workload gets `--prefill 128`, one without hardware
 * `--hardware h100` (both only used when the file says nothing), so eval configs load too.
 */
#include "fuzz-common.h"

#include "../../src/output/explain.h"
#include "../../src/output/report.h"
#include "../../src/run/runner.h"
#include "../../src/input/scenario.h"

static GArray *prefill;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    prefill = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t n = 128;
    g_array_append_val(prefill, n);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    ScenarioExtras extras = {.hardware = "h100", .prefill = prefill,
                             .max_rank_ops = FUZZ_MAX_RANK_OPS};
    GError *err = NULL;
    Scenario *sc = runner_load_string(text, "fuzz.yaml", &extras, &err);
    fuzz_check_error("runner_load_string", sc != NULL, err);
    if (!sc) {
        g_error_free(err);
        return 0;
    }
    bool ok = runner_check_work(sc, FUZZ_MAX_RANK_OPS, &err);
    fuzz_check_error("runner_check_work", ok, err);
    if (!ok) {
        g_error_free(err);
        scenario_free(sc);
        return -1; /* too big to simulate: keep it out of the corpus */
    }
    RunnerResult *r = runner_simulate(sc, SCHED_TIMELINE_NONE, NULL, NULL, NULL, NULL);
    if ((r->exit_code == 3) != r->outcome->failed) {
        fprintf(stderr, "fuzz: exit code %d for an outcome failed=%d\n", r->exit_code,
                r->outcome->failed);
        abort();
    }
    g_autofree char *hw = runner_hardware_line(sc);
    StoreRunInfo rr = {.id = -1,
                       .name = sc->name,
                       .kind = sc->kind,
                       .path = sc->path,
                       .status = r->status,
                       .exit_code = r->exit_code,
                       .hardware = hw,
                       .not_simulated = sc->ignored_flags};
    report_text(fuzz_devnull, &rr, r->outcome);
    if (r->memory)
        report_memory_text(fuzz_devnull, r->memory, true);
    g_free(report_json_with_memory(&rr, r->outcome, r->memory, true));
    explain_text(fuzz_devnull, sc->name, r->outcome);
    g_free(explain_dot(sc->name, r->outcome));
    runner_result_free(r);
    scenario_free(sc);
    return 0;
}
