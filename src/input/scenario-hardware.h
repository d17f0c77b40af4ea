/* src/input/scenario-hardware.h — where a scenario runs: `hardware:` (or
 * --hardware), `nodes:` and `collective_algorithm:`.
 * Part of the scenario loader (src/input/scenario-common.h lists its layers); every function
 * that returns bool fails by setting ld->doc.error and returning false.
 */
#ifndef SRC_SCENARIO_HARDWARE_H
#define SRC_SCENARIO_HARDWARE_H

#include "scenario-common.h"

/* `hardware:` then `nodes:` (the node check needs the devices per node), for ld->n_ranks. */
bool scenario_load_placement(Loader *ld, const YamlDocNode *root, Scenario *s);
/* The nodes the run uses: `nodes:`, or the fewest that hold every rank. */
uint32_t scenario_effective_nodes(const Loader *ld, const Scenario *s);
/* `collective_algorithm:` into s->algo. */
bool scenario_load_algorithms(Loader *ld, const YamlDocNode *m, Scenario *s);

#endif
