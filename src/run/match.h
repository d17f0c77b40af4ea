/* src/run/match.h — `ranksim match`'s use case: confront a hypothesis (a scenario) with the
 * evidence (an imported run). The scenario is simulated and stored (so `diff` can compare), its
 * collectives are aligned with the imported ones group by group, and the verdict says whether
 * the simulation reproduces the real hang — same group, same instance, same sizes per rank,
 * same culprits — or where the two first diverge. Prints nothing: src/cli/cmd-match.c does.
 *
 * Alignment (doc/import.md): an imported group pairs with a simulated group of the same
 * members; the imported sequence numbers count the start-up collectives too (warm-up, profile
 * run, graph capture), so simulated seq s stands for imported seq s + offset. The pairing and
 * offset are the ones under which the most (rank, instance) signatures agree; when both runs
 * hang in paired groups, the offset that lines the two hangs up is preferred if it agrees as
 * well as the best. Groups without a counterpart are listed, not judged.
 *
 * Costs: the imported run's collective rows and the simulation's records are held in memory
 * (one hash entry per call); pairing scores at most 16 offsets per group pair.
 * Errors: MATCH_ERROR, INVALID for what the user gave (not an imported run, a scenario that
 * does not load), FAILED when the database cannot be read or written; messages as the
 * underlying module wrote them.
 */
#ifndef SRC_RUN_MATCH_H
#define SRC_RUN_MATCH_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../store/store.h"

#define MATCH_ERROR (match_error_quark())
GQuark match_error_quark(void);

typedef enum {
    MATCH_ERROR_INVALID, /* not an imported run, an unknown run, a bad scenario (exit 2) */
    MATCH_ERROR_FAILED,  /* the database cannot be read or written (exit 1) */
} MatchErrorCode;

/* The imported side, read from the database (groups, calls, hang). */
typedef struct MatchImport MatchImport;

/* Reads imported run `id` of `st`. NULL with MATCH_ERROR when it is missing, not an import
 * (INVALID) or cannot be read (FAILED). The store is no longer needed afterwards. */
MatchImport *match_import_load(Store *st, int64_t id, GError **error);
void match_import_free(MatchImport *imp);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(MatchImport, match_import_free)

/* The hypothesis: a scenario and what the command line changed in it. */
typedef struct {
    const char *scenario_path;
    const char *const *sets; /* NULL-terminated "dotted.key=value" (--set), may be NULL */
    const char *hardware;    /* --hardware NAME|FILE, may be NULL */
    const char *db_path;     /* where the simulated run is stored */
} MatchRequest;

/* An imported group that has calls, and what it was paired with. */
typedef struct {
    char *dump_group; /* the imported group's name */
    char *sim_group;  /* the paired simulated group, NULL: none agrees with it */
    uint64_t offset;  /* imported seq = simulated seq + offset */
    int64_t agreeing; /* the pairing's score: agreeing minus disagreeing calls */
    bool hang;        /* the group the imported run hangs in */
} MatchPair;

/* The verdict; strings owned (free with match_verdict_free). */
typedef struct {
    int64_t imported_run, simulated_run; /* run ids */
    char *imported_name;                 /* the imported run's name ("" when none) */
    char *scenario_name;
    bool reproduced, same_group, same_instance, same_sizes, same_culprits;
    char *reason;     /* why it is not reproduced ("" when it is) */
    GPtrArray *pairs; /* MatchPair*, the imported groups with calls, in order */
    /* the imported run's hang */
    bool dump_hang;
    char *dump_hang_kind;  /* "mismatch" | "deadlock" | "timeout", NULL without a hang */
    char *dump_hang_group; /* NULL when the hang names no group */
    uint64_t dump_hang_seq;
    char *dump_culprits;     /* "0-3", "none" */
    guint n_dump_culprits;
    char *culprit_call;      /* the first culprit's call at the hang, NULL: none */
    /* the simulation's hang */
    bool sim_hang;
    char *sim_hang_kind;
    char *sim_hang_group; /* NULL when the hang names no group */
    uint64_t sim_hang_seq;
    char *sim_culprits;
    /* the pairing of the hang's group: the simulated group and offset (NULL / 0 when none) */
    char *paired_group;
    uint64_t paired_offset;
    /* where the paired hang group first diverges */
    bool diverges;
    uint64_t divergence_seq; /* imported seq */
    int32_t divergence_rank;
    char *divergence_dump, *divergence_sim; /* each side's call there */
} MatchVerdict;

/* Loads the scenario of `req`, simulates it (time line `collectives`), stores it in
 * req->db_path, aligns it with `imp` and judges. NULL with MATCH_ERROR_INVALID (the scenario)
 * or MATCH_ERROR_FAILED (storing). */
MatchVerdict *match_simulate(const MatchImport *imp, const MatchRequest *req, GError **error);
void match_verdict_free(MatchVerdict *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(MatchVerdict, match_verdict_free)

#endif
