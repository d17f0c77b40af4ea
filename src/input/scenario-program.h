/* src/input/scenario-program.h — `kind: program`: hand-written per-rank schedules.
 * Part of the scenario loader (src/input/scenario-common.h lists its layers); every function
 * that returns bool fails by setting ld->doc.error and returning false.
 */
#ifndef SRC_SCENARIO_PROGRAM_H
#define SRC_SCENARIO_PROGRAM_H

#include "scenario-common.h"

bool scenario_interpret_program(Loader *ld, const YamlDocNode *root, Scenario *s);

#endif
