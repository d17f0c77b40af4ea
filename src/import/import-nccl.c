/* src/import/import-nccl.c — NCCL_DEBUG=INFO logs (subsystems INIT and COLL) read into an ImportSet.
 *
 * Input: one log per process (NCCL_DEBUG_FILE=nccl.%h.%p, or each rank's stdout), or one log
 * with the lines of many processes interleaved (torchrun, vLLM), in any mix. NCCL prefixes
 * every line with "HOST:PID:TID [DEV] NCCL INFO " (WARN: "... [DEV] FILE:LINE NCCL WARN ");
 * launchers may put more in front ("(VllmWorker rank=2 pid=1234) ", "[1,2]<stdout>:"), so the
 * prefix is found by its shape, backwards from "NCCL INFO", not at the start of the line. A
 * default NCCL_DEBUG_TIMESTAMP_FORMAT stamp "[%F %T] " just before HOST gives created_ns (a
 * local wall-clock time read as UTC: comparable across the ranks of one site, not absolute).
 * Facts: ../shared/reference/postmortem.md (d).
 *
 * Lines that matter:
 *   Init:  "[Rank R] FUNC comm PTR rank R nranks N cudaDev D nvmlDev D busId B commId 0xID -
 *          Init START" and "FUNC comm PTR ... commId 0xID - Init COMPLETE" (older: without FUNC,
 *          without commId; RCCL: more fields before " - Init"); splits print "parent PTR
 *          [childCount C] color C key K" (newest NCCL: instead of commId).
 *   COLL:  "OP: opCount HEX sendbuff PTR recvbuff PTR count N datatype D op O root R comm PTR
 *          [nranks=N] stream PTR" — printed at enqueue, never at completion. Send/Recv print
 *          the peer (a comm rank) as root.
 *   "NCCL version 2.21.5+cuda12.4", prefixed or bare (older NCCL printed it with printf).
 *
 * Rules (each one checked in tests/src/import/test-import-nccl.c):
 *   - Files are read in path order (the same path twice: by their bytes), so any order of the
 *     same files gives the same set, the same warnings and the same message.
 *   - A process is HOST:PID. The same process in two files: the same NCCL lines (compared
 *     line by line, prefixes in front of HOST ignored) -> read once, with a warning; other
 *     lines -> refused as logs of different jobs (a reused pid) or a partial copy.
 *   - Within a process a comm pointer names the communicator of its latest Init line (START
 *     opens an instance, COMPLETE closes it or opens one when its START is missing; pointers
 *     are reused after ncclCommDestroy). A COLL line whose pointer has no Init line before it
 *     in its process is skipped when the process printed Init lines (all such lines are counted
 *     in one warning); a process that printed none (COLL lines quoted around a hang) has its
 *     communicators joined across such processes by join_orphans: by [nranks=N], one per
 *     process, else by the (op, count, datatype) of their first call; comm ranks from the
 *     devices on one host, else (host, device, pid) order (said to be a guess); seq from
 *     opCount where every member's lines step it by one (NCCL < 2.12), else positions. What
 *     stays ambiguous is skipped and warned. The group is `inferred`, its size nranks.
 *   - A COLL line without its prefix belongs to the process whose prefixed lines use its comm
 *     pointer, else to a process "?:0xPTR" that has no device and so no rank (skipped, warned).
 *     When a prefix's text is another whole prefix (two processes wrote into one line), the
 *     line is the second one's.
 *   - Excerpts (import-logs.c, src/import/import-private.h): a process may continue in the next
 *     file, and a malformed line is damage (skipped, counted) rather than a refusal.
 *   - Across processes a communicator is its commId. A split printing no commId is (the
 *     parent's identity, childCount, color); it is named "comm 0xPARENT/color C". One that
 *     cannot be resolved (no Init line for its parent; or no commId at all, older NCCL) is
 *     warned about and its COLL lines skipped. Members are placed by their printed rank (what
 *     ncclCommSplit computed); their (key, parent rank) order is checked against it.
 *   - Every member of a communicator prints the same nranks; a comm rank held by two
 *     processes is refused ("rank present twice"), and so is a process holding two ranks of
 *     one communicator (one process driving several GPUs: not supported).
 *   - Global ranks: the rank in the largest communicator that every process (with an Init
 *     line) is a member of (ties: one with a commId, then the first initialized); the set's
 *     size is its nranks, and ranks without a log are absent. Processes without any Init
 *     line are then left out (warned). Without such a communicator: when each file holds one
 *     process, the last number in each file's name (if distinct and below 2 x files + 8;
 *     otherwise they are pids or node numbers); else (HOST, PID) order. Both warned.
 *   - Logs of different jobs: processes fall apart into groups no communicator joins, and
 *     two of them each hold a communicator of the largest size seen (two "worlds", two
 *     processes claiming the same rank with different commIds) -> refused. Two communicators
 *     spanning the same processes with different commIds are no evidence: vLLM creates one
 *     for the c10d group and one for PyNccl.
 *   - Each COLL line of a placed process is an ImportEntry: seq = its position among its
 *     process's calls on that communicator (from 1; never opCount, which is no sequence
 *     number), order = its line number (a process logged in two files: continued past the first
 *     file's), count = input elements (AllGather: the printed send
 *     count; ReduceScatter: printed recv count x nranks; AlltoAll: count x nranks), count_out
 *     the output; Reduce becomes an all-reduce named "Reduce" (one warning); Gather, Scatter,
 *     AlltoAllv and other ops are counted in seq but not recorded (one warning each).
 *   - Refused (IMPORT_ERROR_INVALID, "FILE:LINE: ..."): a malformed COLL or Init line (a
 *     truncated last line without its newline is skipped with a warning), counts or ranks
 *     that do not fit (count >= 2^64, count x nranks >= 2^64, nranks > NCCL_MAX_RANKS), a
 *     root outside the communicator, a file without any NCCL INFO line.
 *
 * Costs: one pass over each file's bytes (memmem for "NCCL ", bounded backward checks of the
 * prefix, so lines of any length and binary junk cost linear time); a hash table per file for
 * processes, per process for comm pointers, one for commIds; an array of parsed calls per
 * process, turned into entries once ranks are known. Measured (tests/src, cost::ranks_1024):
 * 1,024 ranks x 200 calls, 41 MB of logs, in 0.25 s on one core; linear in the bytes.
 */
#include "import.h"

#include <string.h>

#include "import-private.h"

/* Largest nranks accepted: far above any job, small enough that the absent ranks of a
 * forged "nranks" stay cheap. */
#define NCCL_MAX_RANKS (1 << 17)
#define HOST_MAX 255        /* hostname length (HOST_NAME_MAX is 64; FQDNs up to 255) */
#define QUOTE_MAX 160       /* bytes of a line quoted in a message */
#define WARN_FILE_TOKEN 256 /* "FILE:LINE" of a WARN prefix */
#define OP_NAME_MAX 32

typedef enum {
    OP_ALL_GATHER,
    OP_ALL_REDUCE,
    OP_REDUCE_SCATTER,
    OP_BROADCAST,
    OP_REDUCE,
    OP_SEND,
    OP_RECV,
    OP_ALL_TO_ALL,
    OP_OTHER, /* counted in seq, not recorded */
} NcclOp;

static const struct {
    const char *name;
    NcclOp op;
} op_names[] = {
    {"AllGather", OP_ALL_GATHER},
    {"AllReduce", OP_ALL_REDUCE},
    {"ReduceScatter", OP_REDUCE_SCATTER},
    {"Broadcast", OP_BROADCAST},
    {"Reduce", OP_REDUCE},
    {"Send", OP_SEND},
    {"Recv", OP_RECV},
    {"AlltoAll", OP_ALL_TO_ALL},
    {"AllToAll", OP_ALL_TO_ALL},
};

/* ncclDataType_t (nccl.h.in): name, ranksim's dtype (a same-width stand-in when not known). */
static const struct {
    const char *name;
    SchedDtype dtype;
    bool known;
} dtypes[] = {
    {"Int8", SCHED_DTYPE_INT8, true},      {"Uint8", SCHED_DTYPE_INT8, false},
    {"Int32", SCHED_DTYPE_INT32, true},    {"Uint32", SCHED_DTYPE_INT32, false},
    {"Int64", SCHED_DTYPE_FP32, false},    {"Uint64", SCHED_DTYPE_FP32, false},
    {"Float16", SCHED_DTYPE_FP16, true},   {"Float32", SCHED_DTYPE_FP32, true},
    {"Float64", SCHED_DTYPE_FP32, false},  {"Bfloat16", SCHED_DTYPE_BF16, true},
    {"Float8e4m3", SCHED_DTYPE_FP8, true}, {"Float8e5m2", SCHED_DTYPE_FP8, true},
};

/* One COLL line, kept until ranks are known. */
typedef struct {
    uint32_t line;
    uint8_t op;       /* NcclOp */
    uint8_t name;     /* index into op_names (not OP_OTHER) */
    int32_t datatype; /* as printed */
    uint64_t count;   /* as printed (per rank) */
    int32_t root;     /* as printed: a comm rank */
    uint32_t local;   /* index into Proc.comms */
    int64_t ts_ns;    /* -1 when the line has no timestamp */
    char *other_name; /* OP_OTHER: the op's name; owned */
    guint file;       /* index into the caller's arrays (a process may span excerpts) */
    uint64_t opcount; /* as printed (hex) */
    uint64_t stream;  /* the CUDA stream it was launched on, as printed */
} Call;

/* One communicator instance of one process (one Init START/COMPLETE pair). */
typedef struct {
    uint64_t ptr;
    int32_t rank, nranks;
    bool has_id;
    uint64_t id;
    bool has_parent;
    uint64_t parent_ptr;
    int32_t parent_local; /* the parent's instance in this process, -1 unknown */
    bool has_child_count;
    int32_t child_count;
    bool has_key;
    int32_t color, key;
    bool complete;
    uint32_t line;  /* its first Init line */
    char *func;     /* "ncclCommInitRankConfig", NULL when not printed; owned */
    int32_t comm;   /* index into Reader.comms, -1 unresolved */
    uint64_t seq;   /* calls so far (while the set is built) */
    uint64_t calls; /* its COLL lines */
    bool orphan;    /* opened by a COLL line: no Init line for its pointer in its process */
    char *join_id;  /* orphan joined across processes (join_orphans): identity, name; owned */
    char *join_name;
    uint64_t first_sig; /* orphan: (op, count, datatype) of its first call, hashed */
    guint first_file;   /* orphan: the file of its first call */
} LocalComm;

typedef struct {
    char *key; /* "HOST:PID" */
    char *host;
    uint64_t pid;
    guint file;      /* index into the caller's arrays */
    guint file_rank; /* the file's position in read (path) order */
    uint32_t first_line;
    GArray *comms;      /* LocalComm */
    GHashTable *by_ptr; /* uint64_t* ptr -> current instance (index + 1) */
    GArray *calls;      /* Call */
    GArray *hashes;     /* uint64_t per NCCL line: the same process in two files */
    GArray *hash_lines; /* uint32_t line of each hash */
    char *version;      /* "2.21.5+cuda12.4", NULL unknown */
    int32_t global;     /* -1 until placed */
    bool dropped;       /* a copy of the same process read from another file */
    guint root;         /* union-find over shared communicators */
    int32_t dev;        /* [DEV] of its prefix, -1 unknown (a line without the prefix) */
    bool any_init;      /* printed an Init line */
} Proc;

typedef struct {
    int32_t comm_rank;
    guint proc;     /* index into Reader.procs */
    uint32_t local; /* index into the process's comms */
} Member;

typedef struct {
    char *identity; /* "0xID", or PARENT "/" CHILDCOUNT "/" COLOR */
    char *name;     /* "comm 0xID", "comm 0xPARENT/color C" */
    char *desc;     /* the Init function, may be NULL */
    int32_t nranks;
    bool split;      /* identified through its parent */
    bool joined;     /* joined without Init lines (join_orphans): members inferred */
    bool by_opcount; /* joined, and every member's lines step opCount by one per call: seq
                        is opCount - op_min + 1 (NCCL before 2.12 counted every call) */
    uint64_t op_min;
    GArray *members; /* Member */
    int32_t group;   /* index into ImportSet.groups, -1 not created */
} Comm;

typedef struct NcclReader {
    ImportSet *s;
    const char *const *paths;
    GPtrArray *procs;         /* Proc* */
    GPtrArray *comms;         /* Comm* */
    GHashTable *comm_by_id;   /* identity -> index + 1 */
    GHashTable *comm_by_name; /* name -> identity (borrowed) */
    /* warnings, counted and given once */
    uint64_t no_init; /* COLL lines without an Init line for their pointer */
    char *no_init_first;
    uint64_t unresolved_lines; /* COLL lines of unresolved communicators */
    guint unresolved_comms;
    char *unresolved_first;
    uint64_t reduce;
    char *reduce_first;
    GHashTable *other_ops; /* op name -> uint64_t* count */
    uint64_t unknown_peer;
    char *unknown_peer_first;
    guint truncated;
    char *truncated_first;
    /* text logs (src/import/import-logs.c): excerpts of one log may span files, so processes
     * are one table for the whole read; lines without the NCCL prefix are read */
    bool excerpts;
    GHashTable *all_procs;  /* "HOST:PID" -> Proc* (borrowed), excerpts only */
    GHashTable *ptr_owner;  /* comm pointer -> Proc* of a prefixed COLL line, excerpts only */
    uint64_t coll_lines;    /* COLL lines read */
    uint64_t bare_lines;    /* COLL lines without the HOST:PID:TID [DEV] prefix */
    guint joined;           /* communicators joined without Init lines */
    guint unjoined;         /* ... that could not be */
    uint64_t bare_unplaced; /* bare COLL lines whose process is unknown */
    uint64_t damaged;       /* malformed NCCL lines skipped (excerpts) */
    char *damaged_first;
    char *bare_first;
    char *unjoined_first;
    GPtrArray *join_notes;  /* char*: how each was joined */
} Reader;

/* ---- small helpers ---- */

static bool fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, IMPORT_ERROR, IMPORT_ERROR_INVALID, m);
    g_free(m);
    return false;
}

/* A line for a message: at most QUOTE_MAX bytes, non-printable bytes as \xHH. */
static char *quote(const char *p, gsize n)
{
    GString *q = g_string_sized_new(MIN(n, QUOTE_MAX) + 8);
    gsize i;
    for (i = 0; i < n && i < QUOTE_MAX; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\')
            g_string_append_printf(q, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            g_string_append_c(q, (char)c);
        else
            g_string_append_printf(q, "\\x%02x", c);
    }
    if (i < n)
        g_string_append(q, "...");
    return g_string_free(q, FALSE);
}

static const char *basename_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static bool is_host_char(char c)
{
    return g_ascii_isalnum(c) || c == '-' || c == '.' || c == '_';
}

static uint64_t fnv1a(const char *p, gsize n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (gsize i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* A token: bytes up to the next space. */
typedef struct {
    const char *p;
    gsize n;
} Tok;

static bool tok_next(const char **cur, const char *end, Tok *t)
{
    const char *p = *cur;
    while (p < end && *p == ' ')
        p++;
    if (p >= end)
        return false;
    const char *q = p;
    while (q < end && *q != ' ')
        q++;
    t->p = p;
    t->n = (gsize)(q - p);
    *cur = q;
    return true;
}

static bool tok_is(Tok t, const char *lit)
{
    gsize n = strlen(lit);
    return t.n == n && memcmp(t.p, lit, n) == 0;
}

static bool parse_u64(const char *p, gsize n, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (gsize i = 0; i < n; i++) {
        if (!g_ascii_isdigit(p[i]))
            return false;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool parse_i32(const char *p, gsize n, int32_t *out)
{
    bool neg = n > 0 && p[0] == '-';
    uint64_t v;
    if (!parse_u64(p + neg, n - neg, &v) || v > (neg ? UINT64_C(2147483648) : INT32_MAX))
        return false;
    *out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
    return true;
}

/* "0x" + 1..16 hex digits. */
static bool parse_hex(const char *p, gsize n, uint64_t *out)
{
    if (n < 3 || n > 18 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
        return false;
    uint64_t v = 0;
    for (gsize i = 2; i < n; i++) {
        if (!g_ascii_isxdigit(p[i]))
            return false;
        v = v << 4 | (uint64_t)g_ascii_xdigit_value(p[i]);
    }
    *out = v;
    return true;
}

/* %p: "0x..." or "(nil)". */
static bool parse_ptr(Tok t, uint64_t *out)
{
    if (tok_is(t, "(nil)")) {
        *out = 0;
        return true;
    }
    return parse_hex(t.p, t.n, out);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* "[YYYY-MM-DD HH:MM:SS] " (22 bytes) as ns since the epoch, or -1 (no stamp, or a year
 * outside 1970..2261). */
static int64_t parse_stamp(const char *p)
{
    static const char shape[] = "[dddd-dd-dd dd:dd:dd] ";
    unsigned v[6] = {0};
    int k = 0;
    for (int i = 0; i < 22; i++) {
        if (shape[i] == 'd') {
            if (!g_ascii_isdigit(p[i]))
                return -1;
            v[k] = v[k] * 10 + (unsigned)(p[i] - '0');
        } else {
            if (p[i] != shape[i])
                return -1;
            if (i > 0 && shape[i - 1] == 'd')
                k++;
        }
    }
    /* int64 ns reach 2262-04-11 */
    if (v[0] < 1970 || v[0] > 2261 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 ||
        v[4] > 59 || v[5] > 60)
        return -1;
    int64_t days = days_from_civil(v[0], v[1], v[2]);
    return ((days * 24 + v[3]) * 60 + v[4]) * INT64_C(60000000000) + v[5] * INT64_C(1000000000);
}

/* ---- the prefix ---- */

typedef struct {
    const char *host; /* HOST:PID starts here (the line hash covers host..end) */
    gsize host_len;
    const char *pid;
    gsize pid_len;
    const char *payload; /* after "NCCL INFO " */
    bool warn;
    int64_t ts_ns;
    int32_t dev; /* [DEV] */
} Prefix;

/* Finds "HOST:PID:TID [DEV] NCCL INFO " (or "... [DEV] FILE:LINE NCCL WARN ") anywhere in the
 * line. When a prefix's text is another whole prefix (two processes wrote into one line, the
 * first one's text lost: nccl#147), the text is the second one's and so is the line. Each
 * candidate "NCCL " costs a bounded backward walk. */
static bool find_prefix(const char *line, const char *end, Prefix *px)
{
    const char *from = line;
    bool found = false;
    while (from < end) {
        const char *m = memmem(from, (gsize)(end - from), "NCCL ", 5);
        if (!m)
            return found;
        from = m + 1;
        gsize rest = (gsize)(end - m);
        bool info = rest >= 9 && memcmp(m + 5, "INFO", 4) == 0 && (rest == 9 || m[9] == ' ');
        bool warn =
            !info && rest >= 9 && memcmp(m + 5, "WARN", 4) == 0 && (rest == 9 || m[9] == ' ');
        if (!info && !warn)
            continue;
        if (m == line || m[-1] != ' ')
            continue;
        const char *q = m - 1; /* the space before NCCL */
        if (warn) {
            const char *t = q;
            int n = 0;
            while (t > line && t[-1] != ' ' && n < WARN_FILE_TOKEN) {
                t--;
                n++;
            }
            if (n == 0 || n >= WARN_FILE_TOKEN || t == line)
                continue;
            q = t - 1;
        }
        if (q == line || q[-1] != ']')
            continue;
        const char *d = q - 1; /* ']' */
        int n = 0;
        while (d > line && g_ascii_isdigit(d[-1]) && n < 11) {
            d--;
            n++;
        }
        if (n == 0 || d == line || d[-1] != '[')
            continue;
        int32_t dev = -1;
        if (!parse_i32(d, (gsize)n, &dev))
            dev = -1;
        d--; /* '[' */
        if (d == line || d[-1] != ' ')
            continue;
        const char *t = d - 1; /* the space before [DEV]; TID ends here */
        n = 0;
        while (t > line && g_ascii_isdigit(t[-1]) && n < 21) {
            t--;
            n++;
        }
        if (n == 0 || n > 20 || t == line || t[-1] != ':')
            continue;
        const char *pe = t - 1; /* ':' after PID */
        const char *p = pe;
        n = 0;
        while (p > line && g_ascii_isdigit(p[-1]) && n < 21) {
            p--;
            n++;
        }
        if (n == 0 || n > 20 || p == line || p[-1] != ':')
            continue;
        const char *he = p - 1; /* ':' after HOST */
        const char *h = he;
        n = 0;
        while (h > line && is_host_char(h[-1]) && n <= HOST_MAX) {
            h--;
            n++;
        }
        if (n == 0 || n > HOST_MAX)
            continue;
        if (found && h != px->payload)
            return true; /* text after the first prefix: the line is the first one's */
        px->host = h;
        px->host_len = (gsize)(he - h);
        px->pid = p;
        px->pid_len = (gsize)(pe - p);
        px->warn = warn;
        px->payload = info ? (rest == 9 ? end : m + 10) : NULL;
        px->ts_ns = h - line >= 22 ? parse_stamp(h - 22) : -1;
        px->dev = dev;
        found = true;
    }
    return found;
}

/* ---- per-line parsing ---- */

static void proc_free(gpointer data)
{
    Proc *p = data;
    for (guint i = 0; i < p->comms->len; i++) {
        LocalComm *lc = &g_array_index(p->comms, LocalComm, i);
        g_free(lc->func);
        g_free(lc->join_id);
        g_free(lc->join_name);
    }
    for (guint i = 0; i < p->calls->len; i++)
        g_free(g_array_index(p->calls, Call, i).other_name);
    g_array_unref(p->comms);
    g_array_unref(p->calls);
    g_array_unref(p->hashes);
    g_array_unref(p->hash_lines);
    g_hash_table_unref(p->by_ptr);
    g_free(p->key);
    g_free(p->host);
    g_free(p->version);
    g_free(p);
}

static void comm_free(gpointer data)
{
    Comm *c = data;
    g_free(c->identity);
    g_free(c->name);
    g_free(c->desc);
    g_array_unref(c->members);
    g_free(c);
}

static Proc *proc_new(const Prefix *px, guint file, guint file_rank, uint32_t line)
{
    Proc *p = g_new0(Proc, 1);
    p->host = g_strndup(px->host, px->host_len);
    g_autofree char *pid = g_strndup(px->pid, px->pid_len);
    p->key = g_strdup_printf("%s:%s", p->host, pid);
    if (!parse_u64(px->pid, px->pid_len, &p->pid))
        p->pid = UINT64_MAX;
    p->file = file;
    p->file_rank = file_rank;
    p->first_line = line;
    p->comms = g_array_new(FALSE, TRUE, sizeof(LocalComm));
    p->by_ptr = g_hash_table_new_full(import_hash_u64, g_int64_equal, g_free, NULL);
    p->calls = g_array_new(FALSE, TRUE, sizeof(Call));
    p->hashes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    p->hash_lines = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    p->global = -1;
    p->dev = px->dev;
    return p;
}

static int32_t proc_current(const Proc *p, uint64_t ptr)
{
    gint64 k = (gint64)ptr;
    return GPOINTER_TO_INT(g_hash_table_lookup(p->by_ptr, &k)) - 1;
}

static void proc_set_current(Proc *p, uint64_t ptr, guint index)
{
    gint64 *k = g_new(gint64, 1);
    *k = (gint64)ptr;
    g_hash_table_replace(p->by_ptr, k, GINT_TO_POINTER((gint)index + 1));
}

/* The version token after "NCCL version " (digits first, up to a space), or NULL. */
static char *version_token(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && *q != ' ' && q - p < 64)
        q++;
    if (q == p || !g_ascii_isdigit(*p))
        return NULL;
    for (const char *c = p; c < q; c++)
        if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
            return NULL;
    return g_strndup(p, (gsize)(q - p));
}

typedef struct {
    uint64_t ptr;
    bool has_ptr;
    int32_t rank, nranks;
    bool has_rank, has_nranks;
    bool has_id;
    uint64_t id;
    bool has_parent;
    uint64_t parent;
    bool has_child_count;
    int32_t child_count;
    bool has_color, has_key;
    int32_t color, key;
    Tok func;
    bool complete;
} InitLine;

/* Whether `payload` is an Init START/COMPLETE line; *why set when it is one but malformed. */
static bool init_parse(const char *p, const char *end, InitLine *il, const char **why)
{
    const char *e = end;
    while (e > p && e[-1] == ' ')
        e--;
    static const char start[] = "Init START", complete[] = "Init COMPLETE";
    gsize ns = sizeof start - 1, nc = sizeof complete - 1;
    memset(il, 0, sizeof *il);
    if ((gsize)(e - p) >= nc && memcmp(e - nc, complete, nc) == 0) {
        il->complete = true;
        e -= nc;
    } else if ((gsize)(e - p) >= ns && memcmp(e - ns, start, ns) == 0) {
        e -= ns;
    } else {
        return false;
    }
    *why = NULL;
    const char *cur = p;
    Tok t;
    bool first = true, any_comm = false;
    while (tok_next(&cur, e, &t)) {
        if (first && tok_is(t, "[Rank")) { /* "[Rank R] FUNC ..." */
            Tok r;
            if (!tok_next(&cur, e, &r))
                break;
            continue;
        }
        if (first && t.n > 4 && memcmp(t.p, "nccl", 4) == 0 && t.n < 64) {
            il->func = t;
            first = false;
            continue;
        }
        first = false;
        Tok v;
        const char *save = cur;
        bool known = tok_is(t, "comm") || tok_is(t, "rank") || tok_is(t, "nranks") ||
                     tok_is(t, "commId") || tok_is(t, "parent") || tok_is(t, "childCount") ||
                     tok_is(t, "color") || tok_is(t, "key");
        if (!known)
            continue;
        if (!tok_next(&cur, e, &v)) {
            cur = save;
            if (tok_is(t, "comm"))
                any_comm = true;
            *why = "a field without its value";
            break;
        }
        if (tok_is(t, "comm") && !il->has_ptr) {
            any_comm = true;
            if (!parse_ptr(v, &il->ptr) || il->ptr == 0) {
                *why = "comm is not a pointer";
                break;
            }
            il->has_ptr = true;
        } else if (tok_is(t, "rank") && !il->has_rank) {
            if (!parse_i32(v.p, v.n, &il->rank)) {
                *why = "rank is not a number";
                break;
            }
            il->has_rank = true;
        } else if (tok_is(t, "nranks") && !il->has_nranks) {
            if (!parse_i32(v.p, v.n, &il->nranks)) {
                *why = "nranks is not a number";
                break;
            }
            il->has_nranks = true;
        } else if (tok_is(t, "commId") && !il->has_id) {
            if (!parse_hex(v.p, v.n, &il->id)) {
                *why = "commId is not a 64-bit hex number";
                break;
            }
            il->has_id = true;
        } else if (tok_is(t, "parent") && !il->has_parent) {
            if (!parse_ptr(v, &il->parent)) {
                *why = "parent is not a pointer";
                break;
            }
            il->has_parent = il->parent != 0;
        } else if (tok_is(t, "childCount") && !il->has_child_count) {
            if (!parse_i32(v.p, v.n, &il->child_count)) {
                *why = "childCount is not a number";
                break;
            }
            il->has_child_count = true;
        } else if (tok_is(t, "color") && !il->has_color) {
            if (!parse_i32(v.p, v.n, &il->color)) {
                *why = "color is not a number";
                break;
            }
            il->has_color = true;
        } else if (tok_is(t, "key") && !il->has_key) {
            gsize n = v.n;
            if (n > 1 && v.p[n - 1] == '-') /* "key %d- Init START" */
                n--;
            if (!parse_i32(v.p, n, &il->key)) {
                *why = "key is not a number";
                break;
            }
            il->has_key = true;
        }
    }
    if (!any_comm && !*why)
        return false; /* "... Init START" of something else */
    if (*why)
        return true;
    if (!il->has_rank || !il->has_nranks)
        *why = "no \"rank R nranks N\"";
    else if (il->nranks < 1 || il->nranks > NCCL_MAX_RANKS)
        *why = "nranks out of range (1 to 131072)";
    else if (il->rank < 0 || il->rank >= il->nranks)
        *why = "rank is not below nranks";
    else if (il->has_parent && !il->has_id && !il->has_color)
        *why = "a split without its color";
    return true;
}

typedef struct {
    Tok name;
    NcclOp op;
    uint8_t name_index;
    uint64_t count;
    int32_t datatype, redop, root, nranks;
    uint64_t comm;
    uint64_t opcount;
    uint64_t stream;
} CollLine;

/* Whether `payload` is an enqueue line ("Op: opCount ..."); *why set when malformed. */
static bool coll_parse(const char *p, const char *end, CollLine *cl, const char **why)
{
    const char *q = p;
    while (q < end && g_ascii_isalpha(*q) && q - p <= OP_NAME_MAX)
        q++;
    static const char oc[] = ": opCount";
    gsize n = sizeof oc - 1;
    if (q == p || q - p > OP_NAME_MAX || (gsize)(end - q) < n || memcmp(q, oc, n) != 0 ||
        ((gsize)(end - q) > n && q[n] != ' '))
        return false;
    memset(cl, 0, sizeof *cl);
    cl->name = (Tok){p, (gsize)(q - p)};
    cl->op = OP_OTHER;
    for (guint i = 0; i < G_N_ELEMENTS(op_names); i++)
        if (tok_is(cl->name, op_names[i].name)) {
            cl->op = op_names[i].op;
            cl->name_index = (uint8_t)i;
        }
    const char *cur = q + n;
    Tok t;
    uint64_t u;
#define EXPECT(lit)                                                                                \
    do {                                                                                           \
        if (!tok_next(&cur, end, &t) || !tok_is(t, lit)) {                                         \
            *why = "expected \"" lit "\"";                                                         \
            return true;                                                                           \
        }                                                                                          \
    } while (0)
#define VALUE(what)                                                                                \
    do {                                                                                           \
        if (!tok_next(&cur, end, &t)) {                                                            \
            *why = "no value for " what;                                                           \
            return true;                                                                           \
        }                                                                                          \
    } while (0)
    *why = NULL;
    VALUE("opCount");
    for (gsize i = 0; i < t.n; i++)
        if (!g_ascii_isxdigit(t.p[i])) {
            *why = "opCount is not hexadecimal";
            return true;
        }
    if (t.n > 16) {
        *why = "opCount does not fit in 64 bits";
        return true;
    }
    for (gsize i = 0; i < t.n; i++)
        cl->opcount = cl->opcount << 4 | (uint64_t)g_ascii_xdigit_value(t.p[i]);
    EXPECT("sendbuff");
    VALUE("sendbuff");
    if (!parse_ptr(t, &u)) {
        *why = "sendbuff is not a pointer";
        return true;
    }
    EXPECT("recvbuff");
    VALUE("recvbuff");
    if (!parse_ptr(t, &u)) {
        *why = "recvbuff is not a pointer";
        return true;
    }
    EXPECT("count");
    VALUE("count");
    if (!parse_u64(t.p, t.n, &cl->count)) {
        bool digits = t.n > 0;
        for (gsize i = 0; i < t.n; i++)
            digits = digits && g_ascii_isdigit(t.p[i]);
        *why = digits ? "count does not fit in 64 bits" : "count is not a number";
        return true;
    }
    EXPECT("datatype");
    VALUE("datatype");
    if (!parse_i32(t.p, t.n, &cl->datatype)) {
        *why = "datatype is not a number";
        return true;
    }
    EXPECT("op");
    VALUE("op");
    if (!parse_i32(t.p, t.n, &cl->redop)) {
        *why = "op is not a number";
        return true;
    }
    EXPECT("root");
    VALUE("root");
    if (!parse_i32(t.p, t.n, &cl->root)) {
        *why = "root is not a number";
        return true;
    }
    EXPECT("comm");
    VALUE("comm");
    if (!parse_ptr(t, &cl->comm)) {
        *why = "comm is not a pointer";
        return true;
    }
    VALUE("[nranks=N]");
    if (t.n < 10 || memcmp(t.p, "[nranks=", 8) != 0 || t.p[t.n - 1] != ']' ||
        !parse_i32(t.p + 8, t.n - 9, &cl->nranks)) {
        *why = "expected \"[nranks=N]\"";
        return true;
    }
    EXPECT("stream");
    VALUE("stream");
    if (!parse_ptr(t, &cl->stream)) {
        *why = "stream is not a pointer";
        return true;
    }
#undef EXPECT
#undef VALUE
    return true;
}

/* ---- reading one file ---- */

typedef struct NcclFile {
    Reader *r;
    guint file;
    guint file_rank;
    const char *path;
    GHashTable *procs;  /* "HOST:PID" -> Proc* (borrowed from r->procs) */
    char *bare_version; /* a bare "NCCL version ..." line of this file */
    bool any_info;
    Proc *last; /* the process of the previous NCCL line: most lines repeat it */
    bool damaged; /* the line being read was malformed (excerpts) */
} FileState;

static void note_first(char **slot, const char *path, uint32_t line)
{
    if (!*slot)
        *slot = g_strdup_printf("%s:%u", path, line);
}

static void read_init(Proc *p, const InitLine *il, uint32_t line)
{
    p->any_init = true;
    int32_t cur = proc_current(p, il->ptr);
    if (il->complete && cur >= 0) {
        LocalComm *lc = &g_array_index(p->comms, LocalComm, cur);
        bool same = !lc->complete && lc->rank == il->rank && lc->nranks == il->nranks &&
                    (!lc->has_id || !il->has_id || lc->id == il->id) &&
                    (!lc->has_parent || !il->has_parent || lc->parent_ptr == il->parent);
        if (same) {
            lc->complete = true;
            if (!lc->has_id && il->has_id) {
                lc->has_id = true;
                lc->id = il->id;
            }
            if (!lc->has_parent && il->has_parent) {
                lc->has_parent = true;
                lc->parent_ptr = il->parent;
                lc->parent_local = proc_current(p, il->parent);
                lc->color = il->color;
                lc->has_key = il->has_key;
                lc->key = il->key;
            }
            if (!lc->has_child_count && il->has_child_count) {
                lc->has_child_count = true;
                lc->child_count = il->child_count;
            }
            if (!lc->func && il->func.n)
                lc->func = g_strndup(il->func.p, il->func.n);
            return;
        }
    }
    LocalComm lc = {0};
    lc.ptr = il->ptr;
    lc.rank = il->rank;
    lc.nranks = il->nranks;
    lc.has_id = il->has_id;
    lc.id = il->id;
    lc.has_parent = il->has_parent;
    lc.parent_ptr = il->parent;
    lc.parent_local = il->has_parent ? proc_current(p, il->parent) : -1;
    lc.has_child_count = il->has_child_count;
    lc.child_count = il->child_count;
    lc.has_key = il->has_key;
    lc.color = il->color;
    lc.key = il->key;
    lc.complete = il->complete;
    lc.line = line;
    lc.func = il->func.n ? g_strndup(il->func.p, il->func.n) : NULL;
    lc.comm = -1;
    g_array_append_val(p->comms, lc);
    proc_set_current(p, il->ptr, p->comms->len - 1);
}

static bool read_coll(FileState *fs, Proc *p, const CollLine *cl, uint32_t line, int64_t ts,
                      const char *lp, gsize ln, GError **error)
{
    int32_t cur = proc_current(p, cl->comm);
    if (cur >= 0 && g_array_index(p->comms, LocalComm, cur).orphan &&
        g_array_index(p->comms, LocalComm, cur).nranks != cl->nranks)
        cur = -1; /* an excerpt: the pointer reused by a communicator of another size */
    if (cur < 0) {
        /* no Init line for it (yet): an orphan, joined across processes by what its lines
         * carry when the process has no Init line at all (join_orphans), else skipped */
        LocalComm o = {.ptr = cl->comm,
                       .rank = -1,
                       .nranks = cl->nranks,
                       .line = line,
                       .comm = -1,
                       .parent_local = -1,
                       .orphan = true,
                       .first_file = fs->file,
                       .first_sig = (uint64_t)cl->op << 56 ^
                                    cl->count * UINT64_C(0x9e3779b97f4a7c15) ^
                                    (uint64_t)(uint32_t)cl->datatype};
        if (cl->nranks < 1 || cl->nranks > NCCL_MAX_RANKS) {
            g_autofree char *q = quote(lp, ln);
            return fail(error, "%s:%u: [nranks=%d] is out of range (1 to 131072): \"%s\"",
                        fs->path, line, cl->nranks, q);
        }
        g_array_append_val(p->comms, o);
        proc_set_current(p, cl->comm, p->comms->len - 1);
        cur = (int32_t)p->comms->len - 1;
    }
    LocalComm *lc = &g_array_index(p->comms, LocalComm, cur);
    lc->calls++;
    fs->r->coll_lines++;
    if (cl->nranks != lc->nranks) {
        g_autofree char *q = quote(lp, ln);
        return fail(error,
                    "%s:%u: [nranks=%d] but comm 0x%" G_GINT64_MODIFIER "x was initialized "
                    "with %d ranks (line %u): \"%s\"",
                    fs->path, line, cl->nranks, cl->comm, lc->nranks, lc->line, q);
    }
    bool rooted =
        cl->op == OP_BROADCAST || cl->op == OP_REDUCE || cl->op == OP_SEND || cl->op == OP_RECV;
    if (rooted && (cl->root < 0 || cl->root >= lc->nranks)) {
        g_autofree char *q = quote(lp, ln);
        bool p2p = cl->op == OP_SEND || cl->op == OP_RECV;
        return fail(error, "%s:%u: %s %d is not a rank of the %d-rank communicator: \"%s\"",
                    fs->path, line, p2p ? "peer (printed as root)" : "root", cl->root, lc->nranks,
                    q);
    }
    if (cl->count > 0 &&
        (cl->op == OP_ALL_GATHER || cl->op == OP_REDUCE_SCATTER || cl->op == OP_ALL_TO_ALL) &&
        cl->count > UINT64_MAX / (uint64_t)lc->nranks) {
        g_autofree char *q = quote(lp, ln);
        return fail(error,
                    "%s:%u: count %" G_GUINT64_FORMAT " x %d ranks does not fit in 64 "
                    "bits: \"%s\"",
                    fs->path, line, cl->count, lc->nranks, q);
    }
    Call c = {0};
    c.line = line;
    c.op = (uint8_t)cl->op;
    c.name = cl->name_index;
    c.datatype = cl->datatype;
    c.count = cl->count;
    c.root = cl->root;
    c.local = (uint32_t)cur;
    c.ts_ns = ts;
    c.file = fs->file;
    c.opcount = cl->opcount;
    c.stream = cl->stream;
    if (cl->op == OP_OTHER)
        c.other_name = g_strndup(cl->name.p, cl->name.n);
    g_array_append_val(p->calls, c);
    return true;
}

/* The process of a prefixed line, found or created in the file's (or, for excerpts, the read's)
 * table. */
static Proc *line_proc(FileState *fs, const Prefix *px, uint32_t line)
{
    gsize kn = px->host_len + 1 + px->pid_len;
    Proc *p = fs->last;
    if (p && kn == strlen(p->key) && memcmp(p->key, px->host, kn) == 0)
        return p;
    char key[HOST_MAX + 32];
    g_snprintf(key, sizeof key, "%.*s:%.*s", (int)px->host_len, px->host, (int)px->pid_len,
               px->pid);
    p = g_hash_table_lookup(fs->procs, key);
    if (!p) {
        p = proc_new(px, fs->file, fs->file_rank, line);
        g_ptr_array_add(fs->r->procs, p);
        g_hash_table_insert(fs->procs, p->key, p);
    }
    fs->last = p;
    return p;
}

#define PTR_AMBIGUOUS ((gpointer)1)

/* A COLL line without the "HOST:PID:TID [DEV] NCCL INFO" prefix (maintainers quote them bare):
 * its process is the one whose prefixed COLL lines use the same comm pointer, else a process of
 * its own, "?:0xPTR", without a device. A malformed bare line is not one (ignored). */
static int bare_coll(FileState *fs, const char *lp, const char *le, uint32_t line,
                     GError **error)
{
    const char *m = memmem(lp, (gsize)(le - lp), ": opCount ", 10);
    if (!m)
        return 0;
    const char *b = m;
    while (b > lp && g_ascii_isalpha(b[-1]) && m - b <= OP_NAME_MAX)
        b--;
    CollLine cl;
    const char *why = NULL;
    if (b == m || !coll_parse(b, le, &cl, &why) || why)
        return 0;
    Reader *r = fs->r;
    gint64 k = (gint64)cl.comm;
    Proc *p = g_hash_table_lookup(r->ptr_owner, &k);
    if (!p || p == PTR_AMBIGUOUS) {
        char key[64];
        g_snprintf(key, sizeof key, "?:0x%" G_GINT64_MODIFIER "x", cl.comm);
        p = g_hash_table_lookup(fs->procs, key);
        if (!p) {
            Prefix px = {.host = "?", .host_len = 1, .pid = key + 2, .pid_len = strlen(key + 2),
                         .dev = -1};
            p = proc_new(&px, fs->file, fs->file_rank, line);
            g_ptr_array_add(r->procs, p);
            g_hash_table_insert(fs->procs, p->key, p);
        }
    }
    r->bare_lines++;
    return read_coll(fs, p, &cl, line, -1, b, (gsize)(le - b), error) ? 1 : -1;
}

/* A malformed line: refused, or skipped with a warning when it is the file's last and has no
 * newline (a truncated copy). */
static bool malformed(FileState *fs, const char *what, const char *why, const Prefix *px,
                      const char *le, uint32_t line, bool last_unterminated, GError **error)
{
    if (last_unterminated) {
        fs->r->truncated++;
        note_first(&fs->r->truncated_first, fs->path, line);
        return true;
    }
    if (fs->r->excerpts) { /* a pasted excerpt: a cut or hard-wrapped line, the caller's */
        fs->damaged = true;
        return true;
    }
    g_autofree char *q = quote(px->host, (gsize)(le - px->host));
    return fail(error, "%s:%u: a malformed %s line (%s): \"%s\"", fs->path, line, what, why, q);
}

int import_nccl_line(FileState *fs, const char *lp, const char *le, uint32_t line,
                     bool last_unterminated, GError **error)
{
    Reader *r = fs->r;
    Prefix px = {0};
    if (!find_prefix(lp, le, &px)) {
        const char *v = memmem(lp, (gsize)(le - lp), "NCCL version ", 13);
        if (v && !fs->bare_version)
            fs->bare_version = version_token(v + 13, le);
        return bare_coll(fs, lp, le, line, error);
    }
    Proc *p = line_proc(fs, &px, line);
    uint64_t h = fnv1a(px.host, (gsize)(le - px.host));
    g_array_append_val(p->hashes, h);
    g_array_append_val(p->hash_lines, line);
    if (px.warn)
        return 2;
    fs->any_info = true;
    const char *pl = px.payload;
    InitLine il;
    CollLine cl;
    const char *why = NULL;
    bool ok = true;
    fs->damaged = false;
    if ((gsize)(le - pl) > 13 && memcmp(pl, "NCCL version ", 13) == 0) {
        if (!p->version)
            p->version = version_token(pl + 13, le);
    } else if (coll_parse(pl, le, &cl, &why)) {
        if (why) {
            ok = malformed(fs, "COLL", why, &px, le, line, last_unterminated, error);
        } else {
            {
                gint64 *k = g_new(gint64, 1);
                *k = (gint64)cl.comm;
                Proc *o = g_hash_table_lookup(r->ptr_owner, k);
                if (!o)
                    g_hash_table_insert(r->ptr_owner, k, p);
                else {
                    if (o != p)
                        g_hash_table_insert(r->ptr_owner, g_memdup2(k, sizeof *k), PTR_AMBIGUOUS);
                    g_free(k);
                }
            }
            ok = read_coll(fs, p, &cl, line, px.ts_ns, px.host, (gsize)(le - px.host), error);
        }
    } else if (init_parse(pl, le, &il, &why)) {
        if (why)
            ok = malformed(fs, "Init", why, &px, le, line, last_unterminated, error);
        else
            read_init(p, &il, line);
    }
    return !ok ? -1 : fs->damaged ? 3 : 1;
}

void import_nccl_damaged(FileState *fs, uint32_t line)
{
    fs->r->damaged++;
    note_first(&fs->r->damaged_first, fs->path, line);
}

FileState *import_nccl_file_begin(Reader *r, guint file, guint file_rank, const char *path)
{
    FileState *fs = g_new0(FileState, 1);
    *fs = (FileState){.r = r, .file = file, .file_rank = file_rank, .path = path};
    fs->procs = r->excerpts ? g_hash_table_ref(r->all_procs)
                            : g_hash_table_new(g_str_hash, g_str_equal);
    return fs;
}

/* Ends a file: a bare "NCCL version" line gives its processes their version. */
void import_nccl_file_end(FileState *fs)
{
    if (fs->bare_version) {
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, fs->procs);
        while (g_hash_table_iter_next(&it, &k, &v)) {
            Proc *p = v;
            if (!p->version)
                p->version = g_strdup(fs->bare_version);
        }
    }
    g_free(fs->bare_version);
    g_hash_table_unref(fs->procs);
    g_free(fs);
}

static bool read_file(Reader *r, guint file, guint file_rank, const char *path, const char *data,
                      gsize len, GError **error)
{
    FileState *fs = import_nccl_file_begin(r, file, file_rank, path);
    bool ok = true;
    const char *end = data + len;
    uint32_t line = 0;
    for (const char *lp = data; ok && lp < end;) {
        const char *nl = memchr(lp, '\n', (gsize)(end - lp));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (line < UINT32_MAX)
            line++;
        while (le > lp && (le[-1] == '\r'))
            le--;
        ok = import_nccl_line(fs, lp, le, line, !nl && next == end, error) >= 0;
        lp = next;
    }
    if (ok && !fs->any_info)
        ok = fail(error,
                  "%s: no NCCL INFO line: not an NCCL_DEBUG=INFO log (run with NCCL_DEBUG=INFO "
                  "NCCL_DEBUG_SUBSYS=INIT,COLL; lines look like \"HOST:PID:TID [DEV] NCCL INFO "
                  "...\")",
                  path);
    import_nccl_file_end(fs);
    return ok;
}

/* ---- the same process in two files ---- */

static int cmp_proc_key(gconstpointer a, gconstpointer b)
{
    const Proc *x = *(Proc *const *)a, *y = *(Proc *const *)b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->file_rank > y->file_rank) - (x->file_rank < y->file_rank);
}

static bool dedup_procs(Reader *r, GError **error)
{
    g_autoptr(GPtrArray) by_key = g_ptr_array_sized_new(r->procs->len); /* borrowed */
    for (guint i = 0; i < r->procs->len; i++)
        g_ptr_array_add(by_key, g_ptr_array_index(r->procs, i));
    g_ptr_array_sort(by_key, cmp_proc_key);
    for (guint i = 0; i < by_key->len;) {
        const Proc *keep = g_ptr_array_index(by_key, i);
        guint j = i + 1;
        for (; j < by_key->len; j++) {
            Proc *b = g_ptr_array_index(by_key, j);
            if (strcmp(keep->key, b->key) != 0)
                break;
            guint n = MIN(keep->hashes->len, b->hashes->len), k = 0;
            while (k < n && g_array_index(keep->hashes, uint64_t, k) ==
                                g_array_index(b->hashes, uint64_t, k))
                k++;
            if (k < n || keep->hashes->len != b->hashes->len) {
                const char *pa = r->paths[keep->file], *pb = r->paths[b->file];
                g_autofree char *wa =
                    k < keep->hashes->len
                        ? g_strdup_printf("%s:%u", pa, g_array_index(keep->hash_lines, uint32_t, k))
                        : g_strdup_printf("the end of %s", pa);
                g_autofree char *wb =
                    k < b->hashes->len
                        ? g_strdup_printf("%s:%u", pb, g_array_index(b->hash_lines, uint32_t, k))
                        : g_strdup_printf("the end of %s", pb);
                return fail(error,
                            "%s: process %s is also in %s with other lines (they differ at %s "
                            "and %s): logs of different jobs mixed (a reused pid), or one file "
                            "is a partial copy of the other",
                            pb, b->key, pa, wb, wa);
            }
            b->dropped = true;
            import_set_warn(r->s, "%s: process %s is also in %s with the same lines: read once",
                            r->paths[b->file], b->key, r->paths[keep->file]);
        }
        i = j;
    }
    return true;
}

/* ---- communicators across processes ---- */

static guint uf_find(GPtrArray *procs, guint i)
{
    Proc *p = g_ptr_array_index(procs, i);
    while (p->root != i) {
        Proc *up = g_ptr_array_index(procs, p->root);
        p->root = up->root; /* path halving */
        i = p->root;
        p = g_ptr_array_index(procs, i);
    }
    return i;
}

static void uf_union(GPtrArray *procs, guint a, guint b)
{
    a = uf_find(procs, a);
    b = uf_find(procs, b);
    if (a == b)
        return;
    Proc *pa = g_ptr_array_index(procs, MAX(a, b));
    pa->root = MIN(a, b);
}

/* The communicator of a process's instance: found or created by identity. -1: unresolved. */
static int32_t local_identity(Reader *r, Proc *p, guint li, char **identity, char **name)
{
    LocalComm *lc = &g_array_index(p->comms, LocalComm, li);
    if (lc->orphan) {
        if (!lc->join_id)
            return -2; /* accounted for by join_orphans */
        *identity = g_strdup(lc->join_id);
        *name = g_strdup(lc->join_name);
        return 2;
    }
    if (lc->has_id && lc->id != 0) {
        *identity = g_strdup_printf("0x%" G_GINT64_MODIFIER "x", lc->id);
        *name = g_strdup_printf("comm 0x%" G_GINT64_MODIFIER "x", lc->id);
        return 0;
    }
    if (!lc->has_parent || lc->parent_local < 0 || (guint)lc->parent_local >= li)
        return -1;
    const LocalComm *parent = &g_array_index(p->comms, LocalComm, lc->parent_local);
    if (parent->comm < 0)
        return -1;
    const Comm *pc = g_ptr_array_index(r->comms, parent->comm);
    if (lc->has_child_count)
        *identity = g_strdup_printf("%s/%d/%d", pc->identity, lc->child_count, lc->color);
    else
        *identity = g_strdup_printf("%s/-/%d", pc->identity, lc->color);
    *name = g_strdup_printf("%s/color %d", pc->name, lc->color);
    return 1;
}

static int cmp_member(gconstpointer a, gconstpointer b)
{
    const Member *x = a, *y = b;
    if (x->comm_rank != y->comm_rank)
        return x->comm_rank < y->comm_rank ? -1 : 1;
    return (x->proc > y->proc) - (x->proc < y->proc);
}

static char *where(const Reader *r, const Proc *p, uint32_t line)
{
    return g_strdup_printf("%s (%s:%u)", p->key, r->paths[p->file], line);
}

static bool resolve_comms(Reader *r, GError **error)
{
    for (guint pi = 0; pi < r->procs->len; pi++) {
        Proc *p = g_ptr_array_index(r->procs, pi);
        if (p->dropped)
            continue;
        for (guint li = 0; li < p->comms->len; li++) {
            LocalComm *lc = &g_array_index(p->comms, LocalComm, li);
            char *identity = NULL, *name = NULL;
            int kind = local_identity(r, p, li, &identity, &name);
            if (kind == -2)
                continue;
            if (kind < 0) {
                r->unresolved_comms++;
                r->unresolved_lines += lc->calls;
                note_first(&r->unresolved_first, r->paths[p->file], lc->line);
                continue;
            }
            guint ci = GPOINTER_TO_UINT(g_hash_table_lookup(r->comm_by_id, identity));
            Comm *c;
            if (ci == 0) {
                c = g_new0(Comm, 1);
                c->identity = identity;
                const char *taken = g_hash_table_lookup(r->comm_by_name, name);
                if (taken && strcmp(taken, identity) != 0) {
                    char *n2 = g_strdup_printf("%s (split %d)", name, lc->child_count);
                    g_free(name);
                    name = n2;
                }
                c->name = name;
                c->desc = g_strdup(lc->func);
                c->nranks = lc->nranks;
                c->split = kind == 1;
                c->joined = kind == 2;
                c->members = g_array_new(FALSE, FALSE, sizeof(Member));
                c->group = -1;
                g_ptr_array_add(r->comms, c);
                ci = r->comms->len;
                g_hash_table_insert(r->comm_by_id, c->identity, GUINT_TO_POINTER(ci));
                g_hash_table_insert(r->comm_by_name, c->name, c->identity);
            } else {
                g_free(identity);
                g_free(name);
                c = g_ptr_array_index(r->comms, ci - 1);
            }
            lc->comm = (int32_t)(ci - 1);
            if (c->nranks != lc->nranks) {
                const Member *m0 = &g_array_index(c->members, Member, 0);
                const Proc *q = g_ptr_array_index(r->procs, m0->proc);
                const LocalComm *ql = &g_array_index(q->comms, LocalComm, m0->local);
                g_autofree char *wq = where(r, q, ql->line);
                return fail(error,
                            "%s:%u: %s says %s has %d ranks, but %s says %d: logs of "
                            "different jobs mixed, or a damaged log",
                            r->paths[p->file], lc->line, p->key, c->name, lc->nranks, wq,
                            c->nranks);
            }
            if (c->members->len) {
                const Member *last = &g_array_index(c->members, Member, c->members->len - 1);
                if (last->proc == pi) {
                    const LocalComm *ll = &g_array_index(p->comms, LocalComm, last->local);
                    if (ll->rank != lc->rank)
                        return fail(error,
                                    "%s:%u: process %s holds ranks %d (line %u) and %d of %s: "
                                    "one process driving several GPUs is not supported (one "
                                    "process is one rank)",
                                    r->paths[p->file], lc->line, p->key, ll->rank, ll->line,
                                    lc->rank, c->name);
                    continue; /* the same rank again (a re-created communicator) */
                }
            }
            Member m = {lc->rank, pi, li};
            g_array_append_val(c->members, m);
            uf_union(r->procs, pi, uf_find(r->procs, g_array_index(c->members, Member, 0).proc));
        }
    }
    /* a comm rank held twice */
    for (guint ci = 0; ci < r->comms->len; ci++) {
        Comm *c = g_ptr_array_index(r->comms, ci);
        g_array_sort(c->members, cmp_member);
        for (guint k = 0; k + 1 < c->members->len; k++) {
            const Member *a = &g_array_index(c->members, Member, k);
            const Member *b = &g_array_index(c->members, Member, k + 1);
            if (a->comm_rank != b->comm_rank)
                continue;
            const Proc *pa = g_ptr_array_index(r->procs, a->proc);
            const Proc *pb = g_ptr_array_index(r->procs, b->proc);
            g_autofree char *wa = where(r, pa, g_array_index(pa->comms, LocalComm, a->local).line);
            g_autofree char *wb = where(r, pb, g_array_index(pb->comms, LocalComm, b->local).line);
            return fail(error,
                        "%s:%u: rank %d is present twice: %s and %s both hold rank %d of %s "
                        "(%d ranks)",
                        r->paths[pb->file], g_array_index(pb->comms, LocalComm, b->local).line,
                        a->comm_rank, wa, wb, a->comm_rank, c->name, c->nranks);
        }
    }
    return true;
}

/* Splits: the printed ranks must follow (key, parent rank), as ncclCommSplit orders them. */
static void check_split_order(Reader *r)
{
    guint bad = 0;
    const Comm *first = NULL;
    for (guint ci = 0; ci < r->comms->len; ci++) {
        const Comm *c = g_ptr_array_index(r->comms, ci);
        if (!c->split)
            continue;
        int64_t prev_key = INT64_MIN, prev_prank = -1;
        bool ok = true;
        for (guint k = 0; k < c->members->len && ok; k++) { /* members sorted by comm rank */
            const Member *m = &g_array_index(c->members, Member, k);
            const Proc *p = g_ptr_array_index(r->procs, m->proc);
            const LocalComm *lc = &g_array_index(p->comms, LocalComm, m->local);
            if (!lc->has_key || lc->parent_local < 0)
                break;
            int64_t prank = g_array_index(p->comms, LocalComm, lc->parent_local).rank;
            ok = lc->key > prev_key || (lc->key == prev_key && prank > prev_prank);
            prev_key = lc->key;
            prev_prank = prank;
        }
        if (!ok) {
            bad++;
            if (!first)
                first = c;
        }
    }
    if (bad)
        import_set_warn(r->s,
                        "%u split communicators (first: %s) print ranks out of (key, parent "
                        "rank) order; their printed ranks are used",
                        bad, first->name);
}

/* Two groups of processes no communicator joins, each with a communicator of the largest size:
 * two jobs. */
static bool check_mixed(Reader *r, GError **error)
{
    int32_t w = 0;
    for (guint ci = 0; ci < r->comms->len; ci++)
        w = MAX(w, ((Comm *)g_ptr_array_index(r->comms, ci))->nranks);
    if (w < 2)
        return true;
    const Comm *a = NULL;
    guint ra = 0;
    for (guint ci = 0; ci < r->comms->len; ci++) {
        const Comm *c = g_ptr_array_index(r->comms, ci);
        if (c->nranks != w || !c->members->len)
            continue;
        guint rc = uf_find(r->procs, g_array_index(c->members, Member, 0).proc);
        if (!a) {
            a = c;
            ra = rc;
            continue;
        }
        if (rc == ra)
            continue;
        /* name two processes claiming the same rank, when there are */
        const Member *ma = &g_array_index(a->members, Member, 0);
        const Member *mb = &g_array_index(c->members, Member, 0);
        for (guint i = 0, j = 0; i < a->members->len && j < c->members->len;) {
            const Member *x = &g_array_index(a->members, Member, i);
            const Member *y = &g_array_index(c->members, Member, j);
            if (x->comm_rank == y->comm_rank) {
                ma = x;
                mb = y;
                break;
            }
            if (x->comm_rank < y->comm_rank)
                i++;
            else
                j++;
        }
        const Proc *pa = g_ptr_array_index(r->procs, ma->proc);
        const Proc *pb = g_ptr_array_index(r->procs, mb->proc);
        g_autofree char *wa = where(r, pa, g_array_index(pa->comms, LocalComm, ma->local).line);
        g_autofree char *wb = where(r, pb, g_array_index(pb->comms, LocalComm, mb->local).line);
        return fail(error,
                    "%s:%u: logs of different jobs mixed: %s holds rank %d of %s and %s holds "
                    "rank %d of %s, both %d-rank communicators, and no communicator joins "
                    "their processes (replicas without a shared communicator are separate "
                    "jobs to NCCL: import them one at a time)",
                    r->paths[pb->file], g_array_index(pb->comms, LocalComm, mb->local).line, wa,
                    ma->comm_rank, a->name, wb, mb->comm_rank, c->name, w);
    }
    return true;
}

/* ---- communicators without Init lines ---- */

typedef struct {
    guint proc;
    guint local;
} OrphanRef;

static int cmp_orphan_place(gconstpointer a, gconstpointer b, gpointer data)
{
    const Reader *r = data;
    const Proc *x = g_ptr_array_index(r->procs, ((const OrphanRef *)a)->proc);
    const Proc *y = g_ptr_array_index(r->procs, ((const OrphanRef *)b)->proc);
    int c = strcmp(x->host, y->host);
    if (c)
        return c;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static void unjoined(Reader *r, const GArray *refs)
{
    for (guint i = 0; i < refs->len; i++) {
        const OrphanRef *o = &g_array_index(refs, OrphanRef, i);
        const Proc *p = g_ptr_array_index(r->procs, o->proc);
        const LocalComm *lc = &g_array_index(p->comms, LocalComm, o->local);
        r->unjoined++;
        r->unresolved_lines += lc->calls;
        note_first(&r->unjoined_first, r->paths[lc->first_file], lc->line);
    }
}

/* One class of orphans, at most one per process, joined into one communicator. Comm ranks:
 * the devices when the members are on one host with distinct devices below nranks (one node:
 * the device is the local rank); else (host, device, pid) order, said to be a guess. A
 * process without a prefix (a bare line) has no device and stays out. */
static void join_class(Reader *r, GArray *refs, int32_t nranks, guint k, bool several)
{
    g_autoptr(GArray) placed = g_array_new(FALSE, FALSE, sizeof(OrphanRef));
    g_autoptr(GArray) bare = g_array_new(FALSE, FALSE, sizeof(OrphanRef));
    for (guint i = 0; i < refs->len; i++) {
        OrphanRef o = g_array_index(refs, OrphanRef, i);
        const Proc *p = g_ptr_array_index(r->procs, o.proc);
        g_array_append_val(p->dev < 0 ? bare : placed, o);
    }
    for (guint i = 0; i < bare->len; i++) {
        const OrphanRef *o = &g_array_index(bare, OrphanRef, i);
        Proc *p = g_ptr_array_index(r->procs, o->proc);
        const LocalComm *lc = &g_array_index(p->comms, LocalComm, o->local);
        r->bare_unplaced += lc->calls;
        note_first(&r->bare_first, r->paths[lc->first_file], lc->line);
        p->dropped = true; /* no rank: not a process of the set */
    }
    if (!placed->len || placed->len > (guint)nranks) {
        unjoined(r, placed);
        return;
    }
    g_array_sort_with_data(placed, cmp_orphan_place, r);
    bool by_dev = true;
    for (guint i = 0; i < placed->len && by_dev; i++) {
        const Proc *p = g_ptr_array_index(r->procs, g_array_index(placed, OrphanRef, i).proc);
        const Proc *p0 = g_ptr_array_index(r->procs, g_array_index(placed, OrphanRef, 0).proc);
        by_dev = strcmp(p->host, p0->host) == 0 && p->dev < nranks &&
                 (i == 0 || p->dev != ((const Proc *)g_ptr_array_index(
                                           r->procs, g_array_index(placed, OrphanRef, i - 1).proc))
                                          ->dev);
    }
    g_autofree char *id = g_strdup_printf("joined/%d/%u", nranks, k);
    g_autofree char *name = several ? g_strdup_printf("comm [nranks=%d] #%u", nranks, k + 1)
                                    : g_strdup_printf("comm [nranks=%d]", nranks);
    for (guint i = 0; i < placed->len; i++) {
        const OrphanRef *o = &g_array_index(placed, OrphanRef, i);
        Proc *p = g_ptr_array_index(r->procs, o->proc);
        LocalComm *lc = &g_array_index(p->comms, LocalComm, o->local);
        lc->rank = by_dev ? p->dev : (int32_t)i;
        lc->join_id = g_strdup(id);
        lc->join_name = g_strdup(name);
    }
    r->joined++;
    g_ptr_array_add(r->join_notes,
                    g_strdup_printf("%s: joined without Init lines from the COLL lines of %u "
                                    "processes by [nranks=%d]%s; its members are inferred",
                                    name, placed->len, nranks,
                                    by_dev ? ", comm ranks from their devices (one host)"
                                           : ", comm ranks in (host, device) order: a guess"));
}

/* Processes that printed no Init line at all (COLL lines quoted around a hang): their
 * communicators are joined across processes by [nranks=N], one per process; where a process
 * has several of one size, by the signature of their first call; what stays ambiguous is not
 * joined (warned). Orphans of processes with Init lines are skipped, as before. */
static void join_orphans(Reader *r)
{
    g_autoptr(GHashTable) buckets =
        g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
    g_autoptr(GArray) sizes = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint pi = 0; pi < r->procs->len; pi++) {
        Proc *p = g_ptr_array_index(r->procs, pi);
        for (guint li = 0; li < p->comms->len && !p->dropped; li++) {
            const LocalComm *lc = &g_array_index(p->comms, LocalComm, li);
            if (!lc->orphan || !lc->calls)
                continue;
            if (p->any_init) {
                r->no_init += lc->calls;
                note_first(&r->no_init_first, r->paths[lc->first_file], lc->line);
                continue;
            }
            GArray *b = g_hash_table_lookup(buckets, GINT_TO_POINTER(lc->nranks));
            if (!b) {
                b = g_array_new(FALSE, FALSE, sizeof(OrphanRef));
                g_hash_table_insert(buckets, GINT_TO_POINTER(lc->nranks), b);
                g_array_append_val(sizes, lc->nranks);
            }
            OrphanRef o = {pi, li};
            g_array_append_val(b, o);
        }
    }
    for (guint si = 0; si < sizes->len; si++) {
        int32_t n = g_array_index(sizes, int32_t, si);
        GArray *b = g_hash_table_lookup(buckets, GINT_TO_POINTER(n));
        bool dup = false;
        for (guint i = 1; i < b->len && !dup; i++)
            dup = g_array_index(b, OrphanRef, i).proc == g_array_index(b, OrphanRef, i - 1).proc;
        if (!dup) {
            join_class(r, b, n, 0, false);
            continue;
        }
        /* several per process: classes by the first call's signature, in first-seen order */
        g_autoptr(GArray) sigs = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        g_autoptr(GHashTable) classes = g_hash_table_new_full(
            import_hash_u64, g_int64_equal, g_free, (GDestroyNotify)g_array_unref);
        for (guint i = 0; i < b->len; i++) {
            const OrphanRef *o = &g_array_index(b, OrphanRef, i);
            const Proc *op = g_ptr_array_index(r->procs, o->proc);
            gint64 sg = (gint64)g_array_index(op->comms, LocalComm, o->local).first_sig;
            GArray *c = g_hash_table_lookup(classes, &sg);
            if (!c) {
                c = g_array_new(FALSE, FALSE, sizeof(OrphanRef));
                g_hash_table_insert(classes, g_memdup2(&sg, sizeof sg), c);
                g_array_append_val(sigs, sg);
            }
            g_array_append_val(c, *o);
        }
        for (guint ci = 0; ci < sigs->len; ci++) {
            gint64 sg = g_array_index(sigs, gint64, ci);
            GArray *c = g_hash_table_lookup(classes, &sg);
            bool cdup = false;
            for (guint i = 1; i < c->len && !cdup; i++)
                cdup = g_array_index(c, OrphanRef, i).proc ==
                       g_array_index(c, OrphanRef, i - 1).proc;
            if (cdup)
                unjoined(r, c);
            else
                join_class(r, c, n, ci, true);
        }
    }
}

/* Joined communicators: seq from opCount when every member's lines step it by one per call
 * (NCCL before 2.12 counted every call, so an excerpt's calls line up across ranks by it). */
static void check_opcounts(Reader *r)
{
    for (guint ci = 0; ci < r->comms->len; ci++) {
        Comm *c = g_ptr_array_index(r->comms, ci);
        c->by_opcount = c->joined;
        c->op_min = UINT64_MAX;
    }
    for (guint pi = 0; pi < r->procs->len; pi++) {
        const Proc *p = g_ptr_array_index(r->procs, pi);
        if (p->dropped)
            continue;
        g_autofree uint64_t *prev = g_new0(uint64_t, p->comms->len + 1);
        g_autofree bool *seen = g_new0(bool, p->comms->len + 1);
        for (guint i = 0; i < p->calls->len; i++) {
            const Call *call = &g_array_index(p->calls, Call, i);
            const LocalComm *lc = &g_array_index(p->comms, LocalComm, call->local);
            if (lc->comm < 0)
                continue;
            Comm *c = g_ptr_array_index(r->comms, lc->comm);
            if (!c->by_opcount)
                continue;
            if (seen[call->local] && call->opcount != prev[call->local] + 1)
                c->by_opcount = false;
            seen[call->local] = true;
            prev[call->local] = call->opcount;
            c->op_min = MIN(c->op_min, call->opcount);
        }
    }
    for (guint ci = 0; ci < r->comms->len; ci++) {
        const Comm *c = g_ptr_array_index(r->comms, ci);
        if (c->by_opcount)
            g_ptr_array_add(r->join_notes,
                            g_strdup_printf("%s: its calls are numbered by opCount (every "
                                            "member's lines step it by one per call)",
                                            c->name));
    }
}

/* ---- global ranks ---- */

static int cmp_proc_host_pid(gconstpointer a, gconstpointer b)
{
    const Proc *x = *(Proc *const *)a, *y = *(Proc *const *)b;
    int c = strcmp(x->host, y->host);
    if (c)
        return c;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The last run of digits in the file's basename, or -1. */
static int64_t name_number(const char *path)
{
    const char *b = basename_of(path);
    const char *e = b + strlen(b);
    while (e > b && !g_ascii_isdigit(e[-1]))
        e--;
    const char *s = e;
    while (s > b && g_ascii_isdigit(s[-1]))
        s--;
    uint64_t v;
    if (s == e || !parse_u64(s, (gsize)(e - s), &v) || v >= NCCL_MAX_RANKS)
        return -1;
    return (int64_t)v;
}

static bool has_comm(const Proc *p)
{
    for (guint i = 0; i < p->comms->len; i++)
        if (g_array_index(p->comms, LocalComm, i).comm >= 0)
            return true;
    return false;
}

/* Sets Proc.global for the processes that are in the set; returns the set's size. */
static int32_t place_ranks(Reader *r, const Comm **world_out)
{
    g_autoptr(GPtrArray) live = g_ptr_array_new(); /* Proc*: not dropped */
    guint with_comm = 0;
    for (guint i = 0; i < r->procs->len; i++) {
        Proc *p = g_ptr_array_index(r->procs, i);
        if (p->dropped)
            continue;
        g_ptr_array_add(live, p);
        with_comm += has_comm(p);
    }
    const Comm *world = NULL;
    for (guint ci = 0; ci < r->comms->len && with_comm; ci++) {
        const Comm *c = g_ptr_array_index(r->comms, ci);
        if (c->members->len != with_comm)
            continue;
        /* ties: a commId over a split, then the first initialized (the world comes first) */
        if (!world || c->nranks > world->nranks ||
            (c->nranks == world->nranks && world->split && !c->split))
            world = c;
    }
    *world_out = world;
    if (world) {
        guint strays = 0;
        const Proc *first = NULL;
        for (guint k = 0; k < world->members->len; k++) {
            const Member *m = &g_array_index(world->members, Member, k);
            ((Proc *)g_ptr_array_index(r->procs, m->proc))->global = m->comm_rank;
        }
        for (guint i = 0; i < live->len; i++) {
            const Proc *p = g_ptr_array_index(live, i);
            if (p->global < 0) {
                strays++;
                if (!first)
                    first = p;
            }
        }
        if (strays)
            import_set_warn(r->s,
                            "%u processes printed no communicator Init line and are left out "
                            "(first: %s in %s:%u)",
                            strays, first->key, r->paths[first->file], first->first_line);
        return world->nranks;
    }
    guint n = live->len;
    /* one file per process, numbers in the names */
    g_autoptr(GHashTable) files = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autoptr(GHashTable) numbers = g_hash_table_new(g_direct_hash, g_direct_equal);
    bool by_name = n > 0;
    int64_t max = -1;
    for (guint i = 0; i < n && by_name; i++) {
        const Proc *p = g_ptr_array_index(live, i);
        int64_t k = name_number(r->paths[p->file]);
        if (k < 0 || g_hash_table_contains(files, GUINT_TO_POINTER(p->file + 1)) ||
            g_hash_table_contains(numbers, GINT_TO_POINTER((gint)k + 1)))
            by_name = false;
        g_hash_table_add(files, GUINT_TO_POINTER(p->file + 1));
        g_hash_table_add(numbers, GINT_TO_POINTER((gint)k + 1));
        max = MAX(max, k);
    }
    if (by_name && max < 2 * (int64_t)n + 8) {
        for (guint i = 0; i < n; i++) {
            Proc *p = g_ptr_array_index(live, i);
            p->global = (int32_t)name_number(r->paths[p->file]);
        }
        import_set_warn(r->s,
                        "no communicator spans all %u processes: global ranks taken from the "
                        "last number in each file's name",
                        n);
        return (int32_t)max + 1;
    }
    g_ptr_array_sort(live, cmp_proc_host_pid);
    for (guint i = 0; i < n; i++)
        ((Proc *)g_ptr_array_index(live, i))->global = (int32_t)i;
    if (n > 1)
        import_set_warn(r->s,
                        "no communicator spans all %u processes and the file names give no "
                        "ranks: global ranks assigned in (host, pid) order",
                        n);
    return (int32_t)n;
}

/* ---- the set ---- */

static int32_t comm_global(const Reader *r, const Comm *c, const Comm *world, int32_t comm_rank)
{
    if (c == world)
        return comm_rank;
    guint lo = 0, hi = c->members->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        const Member *m = &g_array_index(c->members, Member, mid);
        if (m->comm_rank < comm_rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < c->members->len) {
        const Member *m = &g_array_index(c->members, Member, lo);
        if (m->comm_rank == comm_rank)
            return ((const Proc *)g_ptr_array_index(r->procs, m->proc))->global;
    }
    return -1;
}

static void make_group(Reader *r, Comm *c, const Comm *world, guint *incomplete,
                       const Comm **first_incomplete)
{
    if (c->group >= 0)
        return;
    g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
    if (c == world) {
        for (int32_t k = 0; k < c->nranks; k++)
            g_array_append_val(ranks, k);
    } else {
        for (guint k = 0; k < c->members->len; k++) {
            const Member *m = &g_array_index(c->members, Member, k);
            int32_t g = ((const Proc *)g_ptr_array_index(r->procs, m->proc))->global;
            if (g >= 0)
                g_array_append_val(ranks, g);
        }
        if (ranks->len < (guint)c->nranks) {
            (*incomplete)++;
            if (!*first_incomplete)
                *first_incomplete = c;
        }
    }
    c->group = (int32_t)import_set_group(r->s, c->name, c->desc, (const int32_t *)ranks->data,
                                         ranks->len, false);
    if (c->joined) {
        ImportGroup *g = g_ptr_array_index(r->s->groups, (guint)c->group);
        g->inferred = true;
        g->size = (uint32_t)c->nranks;
    }
}

static void add_entries(Reader *r, Proc *p, ImportRank *ir, const Comm *world)
{
    /* A process's calls come file by file (two excerpts of one log: the second file's lines
     * start at 1 again): `order` is the line within the first file, then continues past it, so
     * a rank's entries stay in order. */
    uint64_t file_base = 0, last_order = 0;
    guint cur_file = G_MAXUINT;
    for (guint i = 0; i < p->calls->len; i++) {
        const Call *c = &g_array_index(p->calls, Call, i);
        if (c->file != cur_file) {
            if (cur_file != G_MAXUINT)
                file_base = last_order;
            cur_file = c->file;
        }
        const char *path = r->paths[c->file];
        LocalComm *lc = &g_array_index(p->comms, LocalComm, c->local);
        if (lc->comm < 0)
            continue; /* counted in resolve_comms */
        uint64_t seq = ++lc->seq;
        const Comm *jc = g_ptr_array_index(r->comms, lc->comm);
        if (jc->by_opcount)
            seq = c->opcount - jc->op_min + 1;
        if (c->op == OP_OTHER) {
            uint64_t *n = g_hash_table_lookup(r->other_ops, c->other_name);
            if (!n) {
                n = g_new0(uint64_t, 1);
                g_hash_table_insert(r->other_ops, g_strdup(c->other_name), n);
            }
            (*n)++;
            continue;
        }
        const Comm *cm = g_ptr_array_index(r->comms, lc->comm);
        uint64_t nr = (uint64_t)cm->nranks;
        ImportEntry e = {0};
        e.group = (uint32_t)cm->group;
        e.seq = seq;
        e.order = MAX(file_base + c->line, last_order);
        last_order = e.order;
        e.root = -1;
        e.peer = -1;
        e.count = c->count;
        e.count_out = c->count;
        e.stream = c->stream;
        switch ((NcclOp)c->op) {
        case OP_ALL_GATHER:
            e.kind = SCHED_OP_ALL_GATHER;
            e.count_out = c->count * nr; /* checked in read_coll */
            break;
        case OP_REDUCE_SCATTER:
            e.kind = SCHED_OP_REDUCE_SCATTER;
            e.count = c->count * nr;
            break;
        case OP_ALL_TO_ALL:
            e.kind = SCHED_OP_ALL_TO_ALL;
            e.count = e.count_out = c->count * nr;
            break;
        case OP_ALL_REDUCE:
            e.kind = SCHED_OP_ALL_REDUCE;
            break;
        case OP_REDUCE:
            e.kind = SCHED_OP_ALL_REDUCE;
            r->reduce++;
            note_first(&r->reduce_first, path, c->line);
            break;
        case OP_BROADCAST:
            e.kind = SCHED_OP_BROADCAST;
            e.root = comm_global(r, cm, world, c->root);
            break;
        case OP_SEND:
        case OP_RECV:
            e.kind = c->op == OP_SEND ? SCHED_OP_SEND : SCHED_OP_RECV;
            e.peer = comm_global(r, cm, world, c->root);
            if (c->op == OP_SEND)
                e.count_out = 0;
            break;
        case OP_OTHER:
            g_assert_not_reached();
        }
        if ((c->op == OP_BROADCAST && e.root < 0) ||
            ((c->op == OP_SEND || c->op == OP_RECV) && e.peer < 0)) {
            r->unknown_peer++;
            note_first(&r->unknown_peer_first, path, c->line);
        }
        e.name = g_intern_string(op_names[c->name].name);
        if (c->datatype >= 0 && (guint)c->datatype < G_N_ELEMENTS(dtypes)) {
            e.dtype = dtypes[c->datatype].dtype;
            e.dtype_known = dtypes[c->datatype].known;
            e.dtype_name = g_intern_string(dtypes[c->datatype].name);
        } else {
            e.dtype = SCHED_DTYPE_FP32;
            e.dtype_known = false;
            char num[16];
            g_snprintf(num, sizeof num, "%d", c->datatype);
            e.dtype_name = import_set_string(r->s, num);
        }
        e.state = IMPORT_STATE_UNKNOWN;
        e.created_ns = c->ts_ns;
        e.completed_ns = -1;
        e.source = g_strdup_printf("%s:%u", path, c->line);
        g_array_append_val(ir->entries, e);
    }
}

static int cmp_str_ptr(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *short_version(const char *v)
{
    const char *plus = strchr(v, '+');
    return plus ? g_strndup(v, (gsize)(plus - v)) : g_strdup(v);
}

static void build_set(Reader *r, int32_t n_ranks, const Comm *world)
{
    ImportSet *s = r->s;
    g_autoptr(GPtrArray) placed = g_ptr_array_new(); /* Proc* by global rank */
    for (guint i = 0; i < r->procs->len; i++) {
        Proc *p = g_ptr_array_index(r->procs, i);
        if (!p->dropped && p->global >= 0)
            g_ptr_array_add(placed, p);
    }
    /* groups: in the order the processes (by global rank) first use them */
    g_autoptr(GPtrArray) by_rank = g_ptr_array_new();
    g_ptr_array_set_size(by_rank, (guint)n_ranks);
    for (guint i = 0; i < placed->len; i++) {
        Proc *p = g_ptr_array_index(placed, i);
        g_ptr_array_index(by_rank, (guint)p->global) = p;
    }
    guint incomplete = 0;
    const Comm *first_incomplete = NULL;
    for (guint g = 0; g < by_rank->len; g++) {
        Proc *p = g_ptr_array_index(by_rank, g);
        if (!p)
            continue;
        for (guint li = 0; li < p->comms->len; li++) {
            const LocalComm *lc = &g_array_index(p->comms, LocalComm, li);
            if (lc->comm >= 0)
                make_group(r, g_ptr_array_index(r->comms, lc->comm), world, &incomplete,
                           &first_incomplete);
        }
    }
    if (incomplete)
        import_set_warn(s,
                        "%u communicators have members without a log (first: %s, %d ranks, %u "
                        "logs): their groups list the ranks seen",
                        incomplete, first_incomplete->name, first_incomplete->nranks,
                        first_incomplete->members->len);
    GHashTable *versions = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    if (n_ranks > 0)
        import_set_rank(s, n_ranks - 1);
    for (guint g = 0; g < by_rank->len; g++) {
        Proc *p = g_ptr_array_index(by_rank, g);
        if (!p)
            continue;
        ImportRank *ir = import_set_rank(s, (int32_t)g);
        ir->present = true;
        ir->path = g_strdup(r->paths[p->file]);
        ir->version = g_strdup(p->version);
        for (guint li = 0; li < p->comms->len && !ir->evidence; li++)
            if (g_array_index(p->comms, LocalComm, li).join_id)
                ir->evidence = g_strdup("NCCL COLL lines, no Init lines");
        if (p->version)
            g_hash_table_add(versions, short_version(p->version));
        add_entries(r, p, ir, world);
    }
    guint nv = g_hash_table_size(versions);
    if (nv == 1) {
        GHashTableIter it;
        gpointer k;
        g_hash_table_iter_init(&it, versions);
        g_hash_table_iter_next(&it, &k, NULL);
        s->format_detail = g_strdup_printf("NCCL %s INFO logs", (const char *)k);
    } else if (nv > 1) {
        g_autoptr(GString) list = g_string_new(NULL);
        g_autoptr(GPtrArray) sorted = g_ptr_array_new();
        GHashTableIter it;
        gpointer k;
        g_hash_table_iter_init(&it, versions);
        while (g_hash_table_iter_next(&it, &k, NULL))
            g_ptr_array_add(sorted, k);
        g_ptr_array_sort(sorted, cmp_str_ptr);
        for (guint i = 0; i < nv; i++)
            g_string_append_printf(list, "%s%s", i ? ", " : "",
                                   (const char *)g_ptr_array_index(sorted, i));
        s->format_detail = g_strdup_printf("NCCL INFO logs (versions %s)", list->str);
        import_set_warn(s, "the processes run different NCCL versions: %s", list->str);
    } else {
        s->format_detail = g_strdup("NCCL INFO logs");
    }
    g_hash_table_unref(versions);
}

static void give_warnings(Reader *r)
{
    ImportSet *s = r->s;
    if (r->truncated)
        import_set_warn(s, "%u truncated last lines skipped (first: %s)", r->truncated,
                        r->truncated_first);
    if (r->no_init)
        import_set_warn(s,
                        "%" G_GUINT64_FORMAT " COLL lines skipped: their comm pointer has no "
                        "Init line before them in their process (first: %s; log with "
                        "NCCL_DEBUG_SUBSYS=INIT,COLL from the start)",
                        r->no_init, r->no_init_first);
    if (r->unresolved_comms)
        import_set_warn(s,
                        "%u communicators could not be identified across processes (a split "
                        "whose parent has no Init line, or no commId printed; first: %s): "
                        "their %" G_GUINT64_FORMAT " COLL lines skipped",
                        r->unresolved_comms, r->unresolved_first, r->unresolved_lines);
    if (r->reduce)
        import_set_warn(s,
                        "%" G_GUINT64_FORMAT " Reduce calls recorded as all-reduce, named "
                        "\"Reduce\" (first: %s)",
                        r->reduce, r->reduce_first);
    if (g_hash_table_size(r->other_ops)) {
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, r->other_ops);
        while (g_hash_table_iter_next(&it, &k, &v))
            g_ptr_array_add(names, k);
        g_ptr_array_sort(names, cmp_str_ptr);
        for (guint i = 0; i < names->len && i < 16; i++) {
            const char *name = g_ptr_array_index(names, i);
            const uint64_t *n = g_hash_table_lookup(r->other_ops, name);
            import_set_warn(s,
                            "%" G_GUINT64_FORMAT " %s calls not recorded (an op ranksim does "
                            "not model; counted in seq)",
                            *n, name);
        }
    }
    if (r->unknown_peer)
        import_set_warn(s,
                        "%" G_GUINT64_FORMAT " broadcast roots or send/recv peers have no log, "
                        "so no global rank: -1 (first: %s)",
                        r->unknown_peer, r->unknown_peer_first);
}

typedef struct {
    const char *const *paths;
    const GBytes *const *data;
} FileOrder;

/* Files by path, then (the same path twice) by their bytes: any order of the same files reads
 * the same. */
static int cmp_file(gconstpointer a, gconstpointer b, gpointer data)
{
    const FileOrder *fo = data;
    guint x = *(const guint *)a, y = *(const guint *)b;
    int c = strcmp(fo->paths[x], fo->paths[y]);
    if (c)
        return c;
    gsize nx = 0, ny = 0;
    const void *dx = fo->data[x] ? g_bytes_get_data((GBytes *)fo->data[x], &nx) : NULL;
    const void *dy = fo->data[y] ? g_bytes_get_data((GBytes *)fo->data[y], &ny) : NULL;
    c = nx && ny ? memcmp(dx, dy, MIN(nx, ny)) : 0;
    return c ? c : (nx > ny) - (nx < ny);
}

GArray *import_file_order(const char *const *paths, const GBytes *const *data, guint n)
{
    GArray *order = g_array_sized_new(FALSE, FALSE, sizeof(guint), n);
    for (guint i = 0; i < n; i++)
        g_array_append_val(order, i);
    FileOrder fo = {paths, data};
    g_array_sort_with_data(order, cmp_file, &fo);
    return order;
}

Reader *import_nccl_reader_new(ImportSet *s, const char *const *paths, bool excerpts)
{
    Reader *r = g_new0(Reader, 1);
    *r = (Reader){.s = s, .paths = paths, .excerpts = excerpts};
    r->procs = g_ptr_array_new_with_free_func(proc_free);
    r->comms = g_ptr_array_new_with_free_func(comm_free);
    r->comm_by_id = g_hash_table_new(g_str_hash, g_str_equal);
    r->comm_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    r->other_ops = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    r->join_notes = g_ptr_array_new_with_free_func(g_free);
    if (excerpts)
        r->all_procs = g_hash_table_new(g_str_hash, g_str_equal);
    r->ptr_owner = g_hash_table_new_full(import_hash_u64, g_int64_equal, g_free, NULL);
    return r;
}

void import_nccl_reader_free(Reader *r)
{
    if (!r)
        return;
    g_ptr_array_unref(r->procs);
    g_ptr_array_unref(r->comms);
    g_hash_table_unref(r->comm_by_id);
    g_hash_table_unref(r->comm_by_name);
    g_hash_table_unref(r->other_ops);
    g_ptr_array_unref(r->join_notes);
    if (r->all_procs)
        g_hash_table_unref(r->all_procs);
    g_hash_table_unref(r->ptr_owner);
    g_free(r->no_init_first);
    g_free(r->unresolved_first);
    g_free(r->reduce_first);
    g_free(r->unknown_peer_first);
    g_free(r->truncated_first);
    g_free(r->unjoined_first);
    g_free(r->bare_first);
    g_free(r->damaged_first);
    g_free(r);
}

uint64_t import_nccl_reader_coll_lines(const Reader *r)
{
    return r->coll_lines;
}

int32_t import_nccl_reader_largest(const Reader *r)
{
    int32_t w = 0;
    for (guint i = 0; i < r->comms->len; i++)
        w = MAX(w, ((const Comm *)g_ptr_array_index(r->comms, i))->nranks);
    return w;
}

static void join_warnings(Reader *r)
{
    for (guint i = 0; i < r->join_notes->len; i++)
        import_set_warn(r->s, "%s", (const char *)g_ptr_array_index(r->join_notes, i));
    if (r->unjoined)
        import_set_warn(r->s,
                        "%u communicators seen only in COLL lines could not be joined across "
                        "processes (several of one size in a process with the same first call, "
                        "or more processes than [nranks=N]; first: %s): their COLL lines "
                        "skipped; the Init lines (NCCL_DEBUG_SUBSYS=INIT,COLL) would join them",
                        r->unjoined, r->unjoined_first);
    if (r->damaged)
        import_set_warn(r->s,
                        "%" G_GUINT64_FORMAT " malformed NCCL lines (cut or hard-wrapped in the "
                        "paste) skipped (first: %s)",
                        r->damaged, r->damaged_first);
    if (r->bare_unplaced)
        import_set_warn(r->s,
                        "%" G_GUINT64_FORMAT " COLL lines lost their HOST:PID:TID [DEV] prefix "
                        "and use a comm pointer no prefixed line uses: their process, so their "
                        "rank, is unknown; skipped (first: %s)",
                        r->bare_unplaced, r->bare_first);
}

bool import_nccl_reader_finish(Reader *r, bool build, GError **error)
{
    for (guint i = 0; i < r->procs->len; i++)
        ((Proc *)g_ptr_array_index(r->procs, i))->root = i;
    if (!dedup_procs(r, error))
        return false;
    join_orphans(r);
    if (!resolve_comms(r, error) || !check_mixed(r, error))
        return false;
    check_opcounts(r);
    if (!build)
        return true;
    check_split_order(r);
    const Comm *world = NULL;
    int32_t n_ranks = place_ranks(r, &world);
    build_set(r, n_ranks, world);
    give_warnings(r);
    join_warnings(r);
    return true;
}

bool import_nccl_files(ImportSet *s, const char *const *paths, const GBytes *const *data, guint n,
                       GError **error)
{
    g_return_val_if_fail(s != NULL, false);
    g_return_val_if_fail(n == 0 || (paths != NULL && data != NULL), false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    if (n == 0)
        return fail(error, "nothing to import: no NCCL log given");
    Reader *r = import_nccl_reader_new(s, paths, false);
    /* files in path order: the set does not depend on the order they were given in */
    g_autoptr(GArray) order = import_file_order(paths, data, n);
    bool ok = true;
    for (guint k = 0; k < n && ok; k++) {
        guint i = g_array_index(order, guint, k);
        gsize len = 0;
        const char *bytes = data[i] ? g_bytes_get_data((GBytes *)data[i], &len) : NULL;
        ok = read_file(r, i, k, paths[i], bytes ? bytes : "", bytes ? len : 0, error);
    }
    ok = ok && import_nccl_reader_finish(r, true, error);
    import_nccl_reader_free(r);
    return ok;
}
