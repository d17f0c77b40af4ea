/* src/input/scenario-settings.h — the run settings every kind reads after its
 * program: algorithms, contention, mismatch policy, watchdog, straggler threshold, faults, and
 * the final consistency check.
 * Part of the scenario loader (src/input/scenario-common.h lists its layers); every function
 * that returns bool fails by setting ld->doc.error and returning false.
 */
#ifndef SRC_SCENARIO_SETTINGS_H
#define SRC_SCENARIO_SETTINGS_H

#include "scenario-common.h"

/* What follows the program: algorithms, contention, mismatch policy, watchdog, straggler
 * threshold, faults (op names checked against ld->prog), and the final consistency check.
 * `what` names the program's origin in the safety net's message. */
bool scenario_load_run_settings(Loader *ld, const YamlDocNode *root, Scenario *s, const char *what);

#endif
