/* src/scenario.h — loads a scenario file (YAML) into an immutable Scenario.
 *
 * Only `kind: program` (hand-written per-rank schedules) exists so far; `kind: model` arrives
 * with the lowering. Every user error is reported as one GError in SCENARIO_ERROR whose message
 * names the file, the line, the key and what would be valid, e.g.
 *   "scenarios/x.yaml:7: key 'grups': unknown key; did you mean 'groups'? (valid: name, kind, ...)"
 * The caller maps SCENARIO_ERROR to exit code 2. Loading never aborts on bad input.
 */
#ifndef SRC_SCENARIO_H
#define SRC_SCENARIO_H

#include <glib.h>

#include "../sched/engine.h"
#include "../net/fabric.h"
#include "../sched/program.h"

#define SCENARIO_ERROR (scenario_error_quark())
GQuark scenario_error_quark(void);

typedef enum {
    SCENARIO_ERROR_IO,      /* file unreadable */
    SCENARIO_ERROR_SYNTAX,  /* malformed YAML */
    SCENARIO_ERROR_INVALID, /* well-formed YAML, wrong content */
} ScenarioErrorCode;

typedef struct {
    char *path;      /* as given, or "<string>" */
    char *text;      /* the file's full contents (stored with the run) */
    char *name;      /* `name:`, or the file's basename without extension */
    char *kind;      /* "program" */
    SchedProgram *program;
    SchedMismatchPolicy on_mismatch;
    int64_t collective_timeout_ns;  /* default 600 s; 0 = watchdog off */
    int64_t straggler_threshold_ns; /* default 10 s; 0 = off */
    NetHardware hardware;           /* `hardware:` preset or file plus overrides; default h100 */
    char *hardware_source;          /* "preset h100" or the hardware file's path */
    uint32_t nodes;                 /* `nodes:`; 0 = the fewest that hold all ranks */
    NetAlgo algo[NET_COLL_KIND_COUNT]; /* `collective_algorithm:`; NET_ALGO_AUTO by default */
    bool contention;                /* `contention:`; default true */
    GArray *faults;                 /* SchedFault, op names interned in `program` */
    GArray *link_faults;            /* NetLinkFault from faults of kind `link` */
} Scenario;

/* Loads and validates `path`. `overrides` is a NULL-terminated list of "dotted.key=value"
 * strings (from --set) applied to the YAML tree before validation, or NULL. Returns NULL and
 * sets `error` on any problem. Caller owns the result. */
Scenario *scenario_load(const char *path, const char *const *overrides, GError **error);
/* Same, from text already in memory; `display_name` stands in for the path in messages. */
Scenario *scenario_load_string(const char *text, const char *display_name,
                               const char *const *overrides, GError **error);
void scenario_free(Scenario *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Scenario, scenario_free)

/* Fills an engine configuration from the scenario (hardware and faults borrowed from `s`). */
SchedConfig scenario_engine_config(const Scenario *s);

#endif
