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
#include <stdbool.h>

#define SCENARIO_ERROR (scenario_error_quark())
GQuark scenario_error_quark(void);

typedef enum {
    SCENARIO_ERROR_IO,      /* file unreadable */
    SCENARIO_ERROR_SYNTAX,  /* malformed YAML */
    SCENARIO_ERROR_INVALID, /* well-formed YAML, wrong content */
} ScenarioErrorCode;

/* An unknown key is a SCENARIO_ERROR_INVALID like any other content error (the exit code and
 * the tests rest on that code); the error's private part tells it apart, for callers that
 * must (a sweep's --vary of a key that does not exist is a usage error of its own). The
 * mark survives g_prefix_error and g_propagate_error, not a message copied into a new error. */
void scenario_error_mark_unknown_key(GError *error);
bool scenario_error_is_unknown_key(const GError *error);

#endif
