/* src/input/scenario-faults.h — `faults:`, the injected failures of a run
 * (rank faults and link faults).
 * Part of the scenario loader (src/input/scenario-common.h lists its layers); every function
 * that returns bool fails by setting ld->doc.error and returning false.
 */
#ifndef SRC_SCENARIO_FAULTS_H
#define SRC_SCENARIO_FAULTS_H

#include "scenario-common.h"

/* `faults:` (the list node) into s->faults and s->link_faults; needs ld->prog and the
 * placement. */
bool scenario_load_faults(Loader *ld, const YamlDocNode *list, Scenario *s);

#endif
