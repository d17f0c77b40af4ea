/* src/input/scenario-error.c — the SCENARIO_ERROR domain (src/input/scenario-error.h). */
#include "scenario-error.h"

G_DEFINE_QUARK(ranksim - scenario - error - quark, scenario_error)
