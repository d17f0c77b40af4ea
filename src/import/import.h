/* src/import/import.h — what a real hang left behind, read into one neutral form.
 *
 * The readers (src/import/import-fr.c for PyTorch / torch_npu Flight Recorder dumps, pickle or JSON;
 * src/import/import-nccl.c for NCCL_DEBUG=INFO logs; src/import/import-logs.c for the text hang
 * reports hold: watchdog, NCCL, CANN and vLLM lines) each fill an ImportSet: the job's groups with
 * their global ranks, and per rank the collective calls it recorded, in the order it made them.
 * src/cli/cmd-import.c turns a set into a run (sched_diagnose_record judges its record; store.c stores it).
 *
 * Formats and rules: doc/import.md. Facts: ../shared/reference/postmortem.md.
 */
#ifndef SRC_IMPORT_H
#define SRC_IMPORT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../sched/engine.h"

#define IMPORT_ERROR (import_error_quark())
GQuark import_error_quark(void);

typedef enum {
    IMPORT_ERROR_INVALID = 0, /* the input is not what it claims (exit 2) */
    IMPORT_ERROR_IO,          /* could not read (exit 2: the user's path) */
} ImportErrorCode;

/* The largest world an import accepts: global ranks are 0 .. IMPORT_MAX_RANKS - 1 (a rank
 * number beyond it in a file name, pg_config or log is refused, so a hostile file cannot make
 * the import allocate for billions of ranks). */
#define IMPORT_MAX_RANKS 65536

typedef enum {
    IMPORT_FORMAT_AUTO = 0,
    IMPORT_FORMAT_FR,   /* PyTorch Flight Recorder: pickle or JSON */
    IMPORT_FORMAT_NCCL, /* NCCL_DEBUG=INFO with INIT and COLL */
    IMPORT_FORMAT_HCCL, /* torch_npu's HCCL flight recorder (the pre-2.5 FR schema) */
    IMPORT_FORMAT_WATCHDOG, /* PyTorch / torch_npu watchdog and PG-status lines */
    IMPORT_FORMAT_CANN,     /* Ascend CANN / HCCL error lines (EI0002 ...) */
    IMPORT_FORMAT_VLLM,     /* vLLM's own hang symptoms only */
    IMPORT_FORMAT_LOGS,     /* text logs holding several of the line shapes above (and NCCL's) */
    IMPORT_FORMAT_INSPECTOR, /* NCCL Inspector plugin per-collective JSON, NCCL RAS JSON */
} ImportFormat;

typedef enum {
    IMPORT_STATE_COMPLETED = 0, /* its completion was seen */
    IMPORT_STATE_STARTED,       /* started on the device, not completed */
    IMPORT_STATE_SCHEDULED,     /* enqueued only */
    IMPORT_STATE_UNKNOWN,       /* the format does not say (NCCL logs: enqueue lines only) */
} ImportState;

/* One recorded call of one rank. */
typedef struct {
    uint32_t group; /* index into ImportSet.groups */
    uint64_t seq;   /* the group's sequence number as recorded (FR collective_seq_id or
                       p2p_seq_id; NCCL: the call's position on its communicator, from 1) */
    uint64_t order; /* position in the rank's own record (FR record_id; NCCL line number) */
    SchedOpKind kind;
    SchedDtype dtype;
    bool dtype_known;       /* false: a dtype ranksim has no name for (dtype_name says which) */
    uint64_t count;         /* this rank's input elements (numel of the inputs) */
    uint64_t count_out;     /* this rank's output elements, 0 when not recorded */
    int32_t root;           /* broadcast/gather root as a global rank, or -1 */
    int32_t peer;           /* send/recv: the other global rank, or -1 */
    const char *name;       /* as recorded: profiling_name ("nccl:_all_gather_base") or the NCCL
                               op name ("AllGather"); owned by the set (ImportSet.strings) */
    const char *dtype_name; /* as recorded ("Float", "Float32"), owned by the set, may be NULL */
    ImportState state;
    int64_t created_ns;   /* enqueue time on the rank's clock (epoch ns), -1 unknown */
    int64_t completed_ns; /* completion time, -1 unknown or not completed */
    int64_t timeout_ms;   /* the collective timeout recorded with it, 0 unknown */
    char *source;         /* "FILE:LINE" for messages, owned; may be NULL */
    uint64_t stream;      /* the stream it was launched on (NCCL COLL: `stream 0x...`), 0 not
                             recorded. Calls of one rank on one known stream run in order
                             (import-run.c: a call completes only after those before it) */
} ImportEntry;

/* A line that says something about the hang without being a call of a rank's record: NCCL's
 * WARN lines, Ascend's EI0002 wait-for edges, vLLM's own messages, a watchdog's verdict. The
 * diagnosis quotes it (its own diagnostic, `source` and `text` in the message). */
typedef enum {
    IMPORT_FINDING_WARN = 0, /* NCCL WARN: "Mismatched collective detected ... around rank N",
                                "collective mismatch error, local size X remote size Y",
                                "message truncated" */
    IMPORT_FINDING_WAIT_EDGE, /* `rank` waits for `peer` (EI0002 "has not received the Notify
                                 record from remote rank: [P]"): an edge of the wait-for graph */
    IMPORT_FINDING_SYMPTOM,   /* evidence of a hang that names no collective: vLLM's "No
                                 available shared memory broadcast block found", RPC
                                 timeouts, "Worker proc ... died unexpectedly" */
    IMPORT_FINDING_TIMEOUT,   /* a watchdog said this rank's head-of-line call timed out */
} ImportFindingKind;

typedef struct {
    ImportFindingKind kind;
    int32_t rank;      /* the global rank whose log holds the line, -1 unknown */
    int32_t peer;      /* the other rank it names (the waited-for rank, "around rank N"), -1 */
    int32_t group;     /* index into ImportSet.groups when the line names one, -1 */
    uint64_t seq;      /* the call's sequence number when the line names one, 0 */
    const char *what;  /* a short static tag: "mismatch", "size", "truncated", "notify",
                          "shm_broadcast", "rpc_timeout", "worker_died", "watchdog" ... */
    const char *text;  /* the line as found, prefixes removed; owned by the set (strings) */
    char *source;      /* "FILE:LINE", owned */
} ImportFinding;

/* What a process group's watchdog (or FR pg_status) said of it on one rank: the calls enqueued,
 * started and completed so far, by the PG's own sequence numbers; 0 = not said. */
typedef struct {
    uint32_t group;          /* index into ImportSet.groups */
    uint64_t last_enqueued;
    uint64_t last_started;
    uint64_t last_completed;
    char *source;            /* "FILE:LINE", owned; may be NULL */
} ImportPgStatus;

typedef struct {
    char *name;    /* as the dumps name it: the PG name ("0", "3", "tp:0"), or
                      "comm 0x<commId>" for NCCL */
    char *desc;    /* PG desc or NULL */
    GArray *ranks; /* int32_t global ranks, in group order */
    bool p2p;      /* a channel whose seq counts p2p calls (FR p2p_seq_id) */
    uint32_t size; /* members the evidence says the group has ([nranks=N], NumelOut/NumelIn,
                      pg_config); 0 = ranks->len is the whole group */
    bool inferred; /* `ranks` were inferred (joined without Init lines or pg_config, from what
                      the lines carry): the import says so */
} ImportGroup;

typedef struct {
    int32_t rank;
    bool present;      /* a dump / log of this rank was read */
    char *path;        /* the file it came from, NULL when absent */
    char *version;     /* FR version string / NCCL version, may be NULL */
    GArray *entries;   /* ImportEntry, ordered by `order` */
    bool truncated;    /* the ring buffer dropped older entries (FR: first record_id > 0) */
    int8_t head_check; /* FR pg_status on the oldest entry that did not complete: 1 it is the
                          PG's next after its last completed (the blocking point for sure),
                          -1 calls between were dropped, 0 not known */
    GArray *pg_status; /* ImportPgStatus: what its watchdog / pg_status said per group; may be
                          empty */
    char *evidence;    /* one phrase naming what was read of it ("watchdog lines, PG 2",
                          "NCCL COLL lines, no Init", "Flight Recorder dump"), owned; NULL:
                          the format's own name */
} ImportRank;

typedef struct {
    ImportFormat format; /* what was read */
    char *format_detail; /* "Flight Recorder pickle, version 2.10", "NCCL 2.21.5 INFO logs" */
    GPtrArray *groups;   /* ImportGroup* */
    GPtrArray *ranks;    /* ImportRank*, index = global rank, 0..n_ranks-1 */
    GPtrArray *warnings; /* char*: read with a warning (unknown version, ...) */
    GPtrArray *paths;    /* char*: the files read, in read order */
    GArray *findings;    /* ImportFinding: lines that are evidence without being calls */
    GPtrArray *strings;  /* GStringChunk*: the names read from the files (op and dtype names),
                            owned by the set. Never g_intern_string: GLib's intern table lives
                            for the process and leaks its old arrays as it grows, so a process
                            importing many files would grow without bound. */
    GHashTable *group_index; /* the groups by (p2p, name, ranks) -> index + 1 (import.c) */
    GHashTable *group_names; /* the first group of each (p2p, name) -> index + 1 */
    uint64_t group_probes;   /* group keys compared by the lookups so far: about one per
                                lookup with a good hash (tests check it stays linear) */
} ImportSet;

/* The hash for GHashTables keyed by a 64-bit integer (gint64 *, with g_int64_equal): every bit
 * mixed (MurmurHash3's 64-bit finaliser, Appleby, public domain). GLib's g_int64_hash folds the
 * two halves, and keys built as (group << k) | seq then crowd a few of GLib's buckets: 10^5 of
 * them took 220 s to insert, 0.27 s with this. */
guint import_hash_u64(gconstpointer key);

/* A copy of `str` that lives as long as the set (deduplicated in the set's own chunk). */
const char *import_set_string(ImportSet *s, const char *str);

ImportSet *import_set_new(ImportFormat format);
void import_set_free(ImportSet *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ImportSet, import_set_free)

/* The group with this name and exactly these ranks (in order), created if absent. One hash
 * lookup: any number of groups costs linear time. */
uint32_t import_set_group(ImportSet *s, const char *name, const char *desc, const int32_t *ranks,
                          uint32_t n, bool p2p);
/* The first group created with this name (and p2p flag), or -1: one hash lookup. */
int64_t import_set_group_named(ImportSet *s, const char *name, bool p2p);
/* The rank's slot, created (absent) if needed; ranks in between are created absent. */
ImportRank *import_set_rank(ImportSet *s, int32_t rank);
void import_entry_clear(ImportEntry *e);
void import_set_warn(ImportSet *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Reads PATHS (files or directories; a directory's regular files, sorted by name) in `format`
 * (AUTO: by content). Returns NULL with `error` (IMPORT_ERROR) naming the file and what is
 * wrong: a truncated or forbidden pickle, JSON of another schema, logs of different jobs, a
 * rank present twice, nothing to read. */
ImportSet *import_read(const char *const *paths, guint n_paths, ImportFormat format,
                       GError **error);
/* import_read, calling `progress(data, files read, files)` about every 100 ms while the files
 * are read and parsed (from the calling thread; `progress` may be NULL). */
typedef void (*ImportProgressFn)(void *data, guint done, guint total);

/* Streaming a set of Flight Recorder JSON dumps (import_read_stream): `begin` once, with the
 * new set and its earliest enqueue as the dumps' prefixes show it, before the first merge;
 * `rank` after each dump is merged (file order), with its rank; `progress` as dumps finish.
 * A callback that fails sets `error` (begin returns false), which ends the read. */
typedef struct {
    bool (*begin)(void *user, const ImportSet *s, int64_t t0, GError **error);
    void (*rank)(void *user, const ImportSet *s, int32_t rank, GError **error);
    ImportProgressFn progress;
} ImportStreamFns;

/* Reads like import_read_progress, merging each dump as soon as it and those before it are
 * parsed and calling fns->rank, so its records can be stored while later dumps parse. Only
 * for two or more JSON dumps whose first 64 KiB show an enqueue time; otherwise it reads the
 * ordinary way (no callback but progress) and *streamed is false. Same set, same errors. */
ImportSet *import_read_stream(const char *const *paths, guint n_paths, ImportFormat format,
                              const ImportStreamFns *fns, void *user, bool *streamed,
                              GError **error);
ImportSet *import_read_progress(const char *const *paths, guint n_paths, ImportFormat format,
                                ImportProgressFn progress, void *data, GError **error);

/* The Flight Recorder reader in two steps, so that dumps parse in parallel: import_fr_parse
 * reads one dump's bytes into a private FrDump (thread-safe; NULL with the error; JSON is
 * parsed in place, so `data` is left altered, into `scratch` when given — a lite document
 * reused from dump to dump by one thread — else a document of its own), and
 * import_fr_merge adds it to the set (in file order, on one thread). */
typedef struct FrDump FrDump;
struct LiteDoc;
FrDump *import_fr_parse(const char *path, guint8 *data, gsize len, struct LiteDoc *scratch,
                        GError **error);
bool import_fr_merge(ImportSet *s, FrDump *d, bool hccl, GError **error);
void import_fr_dump_free(FrDump *d);
int32_t import_fr_dump_rank(const FrDump *d);
/* Both, for one file's bytes. */
bool import_fr_file(ImportSet *s, const char *path, guint8 *data, gsize len, bool hccl,
                    GError **error);
/* NCCL logs are read as a whole (communicators are joined across files). */
bool import_nccl_files(ImportSet *s, const char *const *paths, const GBytes *const *data, guint n,
                       GError **error);

/* Text logs as hang reports hold them (src/import/import-logs.c: PyTorch / torch_npu watchdog
 * and PG-status lines, NCCL INFO and WARN lines with or without Init lines, Ascend CANN errors,
 * vLLM's hang messages, behind any launcher prefix), read in one pass over each file, in path
 * order; the same bytes twice are read once. `want` is --format (AUTO, NCCL, WATCHDOG, CANN,
 * VLLM, LOGS; it names the set's format only for LOGS: else the lines seen decide).
 * `excerpts`: the files are pieces of one log (a process continues in the next file), as for
 * any import holding a non-NCCL line. Fails (IMPORT_ERROR_INVALID) on NCCL logs of different
 * jobs, a rank present twice, a malformed NCCL line outside excerpts, or when nothing at all was
 * read (the message names what each reader needs: IMPORT_LOGS_NEEDS). */
bool import_logs_files(ImportSet *s, const char *const *paths, const GBytes *const *data, guint n,
                       ImportFormat want, bool excerpts, GError **error);
#define IMPORT_LOGS_NEEDS                                                                          \
    "no Flight Recorder dump (a pickle, or JSON with \"pg_config\" and \"entries\"), no "         \
    "NCCL_DEBUG=INFO line (\"HOST:PID:TID [DEV] NCCL INFO ...\", \"OP: opCount ... comm 0x... "   \
    "[nranks=N]\"), no PyTorch or torch_npu watchdog line (\"Watchdog caught collective "          \
    "operation timeout: WorkNCCL(...)\", a PG-status line), no Ascend CANN error (EI0002 "         \
    "\"Notify record from remote rank\"), no vLLM hang message (\"No available shared memory "    \
    "broadcast block found\", \"died unexpectedly\"); give --format "                            \
    "fr|nccl|hccl|watchdog|cann|vllm|logs|inspector to say which"

/* NCCL Inspector plugin JSON (src/import/import-inspector.c): every file's records at once
 * (processes are joined across files by host:pid and communicator id). */
bool import_inspector_files(ImportSet *s, const char *const *paths, const GBytes *const *data,
                            guint n, GError **error);
/* Whether bytes look like NCCL Inspector records ("header" with "n_ranks", and "coll_perf" or
 * "p2p_perf", in the first 64 KiB). */
bool import_looks_inspector(const guint8 *data, gsize len);
/* Whether bytes look like NCCL RAS JSON status ("communicators" with "collective_counts" or
 * "missing_ranks"); import_inspector_files reads those too. */
bool import_looks_ras(const guint8 *data, gsize len);

/* Whether bytes look like a Flight Recorder dump (a pickle, or JSON with "pg_config"), an
 * NCCL log ("NCCL INFO" lines), a text log any reader of import-logs.c reads (a marker of one
 * of its shapes anywhere: the hang's lines are at the end of a long log), or one holding a
 * shape other than NCCL's in its first or last 4 MiB. Linear in `len`. */
bool import_looks_fr(const guint8 *data, gsize len);
bool import_looks_nccl(const guint8 *data, gsize len);
bool import_looks_logs(const guint8 *data, gsize len);
bool import_looks_logs_not_nccl(const guint8 *data, gsize len);

/* ---- from a set to a run (src/import/import-run.c) ---- */

/* What the evidence supports (import-verdict.c; doc/import.md "Outcomes"): */
typedef enum {
    IMPORT_VERDICT_HEALTHY = 0,  /* every rank of every group left calls and every call was
                                    seen to complete; nothing else says hang: exit 0, "ok" */
    IMPORT_VERDICT_HANG,         /* a hang or mismatch with its culprit or candidates: exit 3,
                                    "failed" */
    IMPORT_VERDICT_INCONCLUSIVE, /* neither shown nor ruled out (ranks or members without lines,
                                    enqueue-only logs, symptoms naming no collective): exit 4,
                                    "inconclusive", with what is missing and what to collect */
} ImportVerdict;

/* The run status word of a verdict: "ok", "failed", "inconclusive". */
const char *import_verdict_status(ImportVerdict v);

typedef struct {
    SchedProgram *program; /* the set's groups (p2p channels named "NAME p2p") and op names;
                              every rank's op list is empty */
    GArray *records;       /* SchedRecord: every recorded call up to each rank's blocking point,
                              and completed ones after it; times relative to t0_ns */
    SchedOutcome *outcome; /* the diagnosis of its record (sched_diagnose_record) */
    GPtrArray *notes;      /* char*: what the record does not show or could not decide */
    int64_t t0_ns;         /* the recorded epoch time of time 0 (-1: untimed) */
    bool timed;            /* false: the format has no times; a call's time is its position
                              (1 us per call) */
    ImportVerdict verdict; /* what the outcome's findings amount to */
} ImportRun;

/* Adds the set's findings (WARN lines, wait-for edges, symptoms) to run->outcome as
 * diagnostics of their own, the culprit candidates when the record does not determine one, and
 * sets run->verdict (an `inconclusive` diagnostic replaces `no_hang` when something is
 * missing). Called by import_run_builder_finish; never fails. */
void import_verdict_apply(ImportRun *run, const ImportSet *s);

/* Decides each rank's state from its record (FR: its oldest entry that did not complete is its
 * blocking point, entries queued after it are not arrivals; NCCL logs: an instance is complete
 * when every member called it with the same signature), diagnoses its record (sched/record.h) and
 * lays the calls out as records. Never fails. */
ImportRun *import_run_build(const ImportSet *s);

/* The same, a rank at a time, for a set still being merged (`ranksim import` stores each rank's
 * calls while later dumps parse): import_run_builder_new with the set's earliest enqueue time
 * `t0` (-1: untimed) and whether the set is NCCL logs (their completion rule needs every rank:
 * then the set must be complete); import_run_builder_rank appends rank r's records to `out`
 * once its entries are final (each rank once); import_run_builder_finish diagnoses the whole
 * set, which must be complete by then, and frees the builder (its run's records are empty).
 * Record order and name ids follow the order ranks are given. */
typedef struct ImportRunBuilder ImportRunBuilder;
ImportRunBuilder *import_run_builder_new(const ImportSet *s, int64_t t0, bool nccl);
void import_run_builder_rank(ImportRunBuilder *b, uint32_t r, GArray *out);
/* The earliest enqueue time seen so far, -1 when none. */
int64_t import_run_builder_min_created(const ImportRunBuilder *b);
ImportRun *import_run_builder_finish(ImportRunBuilder *b);
void import_run_builder_free(ImportRunBuilder *b);
void import_run_free(ImportRun *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ImportRun, import_run_free)

#endif
