/* src/input/scenario-error.c — the SCENARIO_ERROR domain (src/input/scenario-error.h): an
 * extended GError domain whose private part says what kind of content error it is. */
#include "scenario-error.h"

typedef struct {
    bool unknown_key; /* the error names a key the loader does not know */
} ScenarioErrorPrivate;

static void scenario_error_private_init(ScenarioErrorPrivate *p)
{
    p->unknown_key = false;
}

static void scenario_error_private_copy(const ScenarioErrorPrivate *src, ScenarioErrorPrivate *dst)
{
    dst->unknown_key = src->unknown_key;
}

static void scenario_error_private_clear(ScenarioErrorPrivate *p)
{
    (void)p;
}

G_DEFINE_EXTENDED_ERROR(ScenarioError, scenario_error)

void scenario_error_mark_unknown_key(GError *error)
{
    if (error && error->domain == SCENARIO_ERROR)
        scenario_error_get_private(error)->unknown_key = true;
}

bool scenario_error_is_unknown_key(const GError *error)
{
    return error && error->domain == SCENARIO_ERROR &&
           scenario_error_get_private(error)->unknown_key;
}
