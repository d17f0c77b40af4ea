/* src/input/scenario-error.h — the error domain of everything a user writes for a run: scenario
 * files, hardware files, the vLLM version keys, the YAML under them (src/input/yamldoc.h).
 *
 * One GError in SCENARIO_ERROR per failed load, whose message is one line a user can act on
 * ("FILE:LINE: key 'KEY': problem; what would be valid"). The command line maps the domain to
 * exit code 2. This module depends on nothing, so every loader of src/input/ can use it.
 */
#ifndef SRC_SCENARIO_ERROR_H
#define SRC_SCENARIO_ERROR_H

#include <glib.h>

#define SCENARIO_ERROR (scenario_error_quark())
GQuark scenario_error_quark(void);

typedef enum {
    SCENARIO_ERROR_IO,      /* file unreadable */
    SCENARIO_ERROR_SYNTAX,  /* malformed YAML */
    SCENARIO_ERROR_INVALID, /* well-formed YAML, wrong content */
} ScenarioErrorCode;

#endif
