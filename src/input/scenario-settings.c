/* src/input/scenario-settings.c — the run settings every kind shares, read after the program
 * (src/input/scenario-settings.h): collective algorithms, contention, the mismatch policy, the
 * watchdog, the straggler threshold, then `faults:` (whose op names need the program), and the
 * final consistency check of the program (sched_program_validate) as a safety net.
 *
 * Costs: O(keys), plus the faults' (scenario-faults.h) and the validation's (sched/program.h).
 */
#include "scenario-settings.h"

#include "scenario-faults.h"
#include "scenario-hardware.h"

static bool get_seconds_ns(Loader *ld, const YamlDocNode *map, const char *key, int64_t *out)
{
    const YamlDocNode *n = yamldoc_map_get(map, key);
    return !n || scenario_seconds_to_ns(ld, n, key, out);
}

bool scenario_load_run_settings(Loader *ld, const YamlDocNode *root, Scenario *s, const char *what)
{
    const YamlDocNode *n;
    if ((n = yamldoc_map_get(root, "collective_algorithm")) && !scenario_load_algorithms(ld, n, s))
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
        s->watchdog_given = yamldoc_map_get(n, "collective_timeout_s") != NULL;
    }
    if (!get_seconds_ns(ld, root, "straggler_threshold_s", &s->straggler_threshold_ns))
        return false;

    if ((n = yamldoc_map_get(root, "faults")) && !scenario_load_faults(ld, n, s))
        return false;

    g_autoptr(GError) verr = NULL;
    if (!sched_program_validate(s->program, &verr))
        return yamldoc_fail(&ld->doc, root, NULL, "%s is inconsistent: %s", what, verr->message);
    return true;
}
