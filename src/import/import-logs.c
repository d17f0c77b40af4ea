/* src/import/import-logs.c — the text real hang reports hold, read in one pass over each file.
 *
 * What people paste when a job hangs (issue 24; facts: ../shared/reference/postmortem.md (c)-(e)):
 *   - PyTorch's watchdog verdict, "[rankG]:[E1202 ...] [PG ID 2 PG GUID 9 Rank 3] Watchdog caught
 *     collective operation timeout: WorkNCCL(SeqNum=N, OpType=T, NumelIn=I, NumelOut=O,
 *     Timeout(ms)=M)" (older: "[Rank 3] Watchdog caught ...", no NumelIn/NumelOut; torch_npu:
 *     WorkHCCL(...)). Each is the rank's head-of-line call on that PG: an ImportEntry, state
 *     STARTED, plus an IMPORT_FINDING_TIMEOUT.
 *   - The PG-status line in its three wordings ("Timeout at NCCL work: N, last enqueued NCCL
 *     work: X, last completed NCCL work: Y."; "Exception (either an error or timeout) detected
 *     by watchdog at work: N, ..."; "failure detected by watchdog at work sequence id: N PG
 *     status: last enqueued work: X, last completed work: Y"), and the idle ranks' "Received a
 *     dump signal ... from  rank R ... Last enqueued NCCL work: X, last completed NCCL work:
 *     Y." (PG 0's counters): an ImportPgStatus each. A verdict without a PG in its own line
 *     takes the PG of its rank's status line at the same work; else that of other ranks'
 *     verdicts of the same call (seq, OpType, numels) when they name one PG (warned).
 *   - NCCL_DEBUG=INFO lines go to import-nccl.c (import-private.h), which joins communicators
 *     quoted without Init lines; NCCL's WARN lines ("Mismatched collective detected ... around
 *     rank N", "collective mismatch error, local size X remote size Y", "message truncated")
 *     are IMPORT_FINDING_WARN.
 *   - Ascend CANN EI0002 ("The Notify register has not received the Notify record from remote
 *     rank: [P] ... tag[OP_GROUP] ... group:[G] ... rankSize[S], rankId[R]"): a wait-for edge R
 *     -> P (IMPORT_FINDING_WAIT_EDGE) with the group from `group:` or the tag. Its fields may
 *     span the next lines: up to LOGS_WRAP_LINES are joined. EI0005 (arguments inconsistent
 *     between ranks) is a WARN; "hccl fftsplus task timeout" a SYMPTOM.
 *   - vLLM's own messages: "No available shared memory broadcast block found in N seconds",
 *     "RPC call to M timed out", "Worker proc ... died unexpectedly", "EngineCore encountered
 *     a fatal error": IMPORT_FINDING_SYMPTOM, one per (message, emitter), repeats counted.
 *
 * Prefixes and damage: every shape is found by its words anywhere in the line, so torchrun's
 * interleaving, Ray's "(RayWorkerWrapper pid=..., ip=...)", timestamps and progress bars in
 * front cost nothing. Before that the line is cleaned (clean_line): ANSI colour codes, whole or
 * with their ESC lost ("[0m"), are dropped, CRs become spaces, a log viewer's line number
 * ("  123 | ", "123<TAB>") is cut; srun's "11: ", mpirun's "[1,11]<stdout>:" and vLLM's
 * "(VllmWorker rank=2 pid=...)" give a rank label. A verdict or status line cut before its end
 * (hard-wrapped at a fixed width) is joined with the lines after it, without a separator, up
 * to LOGS_WRAP_LINES lines and LOGS_WRAP_BYTES bytes. The same bytes given twice are read once;
 * in `excerpts` mode (any non-NCCL line, or --format logs) a process may continue in the next
 * file (two excerpts of one log).
 *
 * The global rank: "[rankG]:" (torch's own log prefix), else the launcher's label, else the
 * "[Rank R]" of the line (the rank inside the PG: the global rank on PG 0, a guess elsewhere,
 * warned). File names are never used. Groups seen only in watchdog lines list the ranks seen
 * (ImportGroup.inferred) with their size where the numels say it (reduce-scatter: NumelIn /
 * NumelOut; all-gather: NumelOut / NumelIn) or, for PG 0 (the default group, the world), the
 * largest NCCL communicator the logs initialized.
 *
 * Costs: one pass over each file's bytes; per line a copy into a reused buffer and a bounded
 * number of memmem calls for the markers (linear in the line); hash tables for pairing. Hostile
 * input: every number is range-checked, quoted text is capped at LOGS_QUOTE_MAX bytes and made
 * valid UTF-8, findings are capped at LOGS_MAX_FINDINGS (the rest counted in a warning).
 */
#include "import.h"

#include <stdlib.h>
#include <string.h>

#include "import-private.h"

#define LOGS_WRAP_LINES 8     /* continuation lines joined to a cut line */
#define LOGS_WRAP_BYTES 4096  /* at most this long once joined */
#define LOGS_QUOTE_MAX 400    /* bytes of a line kept as a finding's text */
#define LOGS_MAX_FINDINGS 4096
#define LOGS_MAX_RECORDS 65536 /* verdicts and status lines kept */
#define LOGS_NAME_MAX 64       /* a PG name, OpType, group tag */

enum { SEEN_NCCL = 1, SEEN_WATCHDOG = 2, SEEN_CANN = 4, SEEN_VLLM = 8 };

/* A watchdog verdict ("Watchdog caught collective operation timeout: WorkNCCL(...)"). */
typedef struct {
    int32_t global;  /* -1 unknown */
    int32_t pg_rank; /* the line's [Rank R], -1 */
    char *pg;        /* the PG's name, NULL when the line names none; owned */
    char *desc;      /* owned, may be NULL */
    uint64_t seq;
    char *op; /* OpType; owned */
    bool numel;
    uint64_t numel_in, numel_out;
    int64_t timeout_ms;
    bool dup; /* the same verdict quoted again (what(), "terminated with exception") */
    bool pg_inferred; /* its PG taken from other ranks' verdicts of the same call */
    bool rank_guessed; /* its global rank is its rank inside a PG other than 0 */
    bool hccl;         /* torch_npu's WorkHCCL */
    guint file;
    uint32_t line;
    const char *text; /* owned by the set */
} Verdict;

/* A PG-status line, or a dump signal (PG 0's counters). */
typedef struct {
    int32_t global, pg_rank;
    char *pg, *desc; /* owned */
    uint64_t at;     /* the work it names; 0 for a dump signal */
    int64_t enq, done;
    bool dump;
    guint file;
    uint32_t line;
} Status;

/* A finding whose group is named by text until the groups exist. */
typedef struct {
    ImportFinding f;
    char *group_name; /* owned, NULL none */
    uint32_t size;    /* the group's size the line gives, 0 */
} Pending;

typedef struct {
    ImportSet *s;
    const char *const *paths;
    const char *first_path; /* in read order */
    NcclReader *nccl;
    NcclFile *nf; /* the file being read */
    guint file;
    unsigned seen;
    GArray *verdicts; /* Verdict */
    GArray *statuses; /* Status */
    GArray *pending;  /* Pending */
    GHashTable *repeats; /* "what|emitter" -> count (vLLM messages folded) */
    uint64_t folded;
    uint64_t dropped_findings, dropped_records, cut_lines;
    guint pg_rank_guess;
    GString *held;    /* a line waiting for its continuation */
    guint held_lines; /* lines joined into it */
    uint32_t held_line;
    int32_t held_label;
    bool held_cut; /* its shape was cut (else: it only may have been wrapped) */
    bool held_nccl; /* a malformed NCCL line (import_nccl_line said 3) */
    uint64_t warn_lines, cann_lines, vllm_lines, wd_lines;
} Logs;

/* ---- small helpers ---- */

static const char *find(const char *p, const char *e, const char *lit)
{
    gsize n = strlen(lit);
    return p && e && e > p ? memmem(p, (gsize)(e - p), lit, n) : NULL;
}

/* Digits at p as a number below `max`; the end in *end. */
static bool read_u64(const char *p, const char *e, uint64_t max, uint64_t *out, const char **end)
{
    uint64_t v = 0;
    const char *q = p;
    while (q < e && g_ascii_isdigit(*q) && q - p < 20) {
        unsigned d = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        q++;
    }
    if (q == p || v > max || (q < e && g_ascii_isdigit(*q)))
        return false;
    *out = v;
    if (end)
        *end = q;
    return true;
}

/* "-1" or digits, after optional spaces. */
static bool read_i64(const char *p, const char *e, int64_t *out, const char **end)
{
    while (p < e && *p == ' ')
        p++;
    bool neg = p < e && *p == '-';
    uint64_t v;
    if (!read_u64(p + neg, e, INT64_MAX, &v, end))
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

/* The number after the first `lit` at or after p. */
static bool number_after(const char *p, const char *e, const char *lit, int64_t *out)
{
    const char *m = find(p, e, lit);
    return m && read_i64(m + strlen(lit), e, out, NULL);
}

/* A short token [p, q) as an owned string: printable ASCII only, at most LOGS_NAME_MAX. */
static char *name_dup(const char *p, const char *q)
{
    if (q <= p || q - p > LOGS_NAME_MAX)
        return NULL;
    for (const char *c = p; c < q; c++)
        if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
            return NULL;
    return g_strndup(p, (gsize)(q - p));
}

/* The line as a finding's text: trimmed, capped, valid UTF-8, owned by the set. */
static const char *set_text(ImportSet *s, const char *p, const char *e)
{
    while (p < e && *p == ' ')
        p++;
    while (e > p && e[-1] == ' ')
        e--;
    gsize n = MIN((gsize)(e - p), (gsize)LOGS_QUOTE_MAX);
    g_autofree char *v = g_utf8_make_valid(p, (gssize)n);
    for (char *c = v; *c; c++)
        if ((unsigned char)*c < 0x20)
            *c = ' ';
    if ((gsize)(e - p) > n) {
        g_autofree char *w = g_strconcat(v, "...", NULL);
        return import_set_string(s, w);
    }
    return import_set_string(s, v);
}

static char *where(const Logs *L, guint file, uint32_t line)
{
    return g_strdup_printf("%s:%u", L->paths[file], line);
}

/* A phrase quoted in prose (Markdown's `...`, as READMEs and issue text quote log lines) is not
 * a log line: the byte before it is a backtick. */
static bool in_prose(const char *p, const char *m)
{
    return m > p && m[-1] == '`';
}

/* ---- cleaning a line ---- */

/* An ANSI SGR code at p ("ESC[1;32m", or "[1;32m" with its ESC lost): its length, else 0. */
static gsize ansi_len(const char *p, const char *e)
{
    const char *q = p;
    bool esc = q < e && *q == '\x1b';
    q += esc;
    if (q >= e || *q != '[')
        return esc ? 1 : 0; /* a lone ESC is dropped too */
    q++;
    int digits = 0;
    while (q < e && (g_ascii_isdigit(*q) || *q == ';') && q - p < 16)
        digits += g_ascii_isdigit(*q++) != 0;
    if (q < e && *q == 'm' && (esc || digits > 0))
        return (gsize)(q + 1 - p);
    return esc ? 1 : 0;
}

/* A leading rank label: srun's "11: ", mpirun's "[1,11]<stdout>:" (both cut), vLLM's
 * "(VllmWorker rank=2 pid=...)" (kept); a log viewer's "  123 | " or "123<TAB>" (cut). */
static const char *strip_leading(const char *p, const char *e, int32_t *label)
{
    const char *q = p;
    while (q < e && *q == ' ')
        q++;
    const char *d = q;
    uint64_t v;
    const char *de = NULL;
    if (read_u64(d, e, 9999999, &v, &de)) {
        const char *t = de;
        while (t < e && *t == ' ')
            t++;
        if (t < e && (*t == '|' || *t == '\t'))
            return t + 1; /* a viewer's line number */
        if (de + 1 < e && de[0] == ':' && de[1] == ' ' && v < IMPORT_MAX_RANKS) {
            *label = (int32_t)v; /* srun --label */
            return de + 2;
        }
    }
    if (q < e && *q == '[') {
        uint64_t job, r;
        const char *c1 = NULL, *c2 = NULL;
        if (read_u64(q + 1, e, UINT32_MAX, &job, &c1) && c1 < e && *c1 == ',' &&
            read_u64(c1 + 1, e, IMPORT_MAX_RANKS - 1, &r, &c2) && c2 < e && *c2 == ']') {
            const char *t = c2 + 1;
            if (t < e && *t == '<') {
                const char *gt = memchr(t, '>', (gsize)MIN(e - t, 16));
                if (gt && gt + 1 < e && gt[1] == ':') {
                    *label = (int32_t)r;
                    return gt + 2;
                }
            }
        }
    }
    if (q < e && *q == '(') {
        const char *close = memchr(q, ')', (gsize)MIN(e - q, 200));
        const char *rk = close ? find(q, close, " rank=") : NULL;
        uint64_t r;
        if (rk && read_u64(rk + 6, close, IMPORT_MAX_RANKS - 1, &r, NULL))
            *label = (int32_t)r;
    }
    return p;
}

/* Copies [lp, le) into `buf` without colour codes and NULs, CRs as spaces; returns the label. */
static int32_t clean_line(GString *buf, const char *lp, const char *le)
{
    g_string_truncate(buf, 0);
    for (const char *p = lp; p < le;) {
        if (*p == '\x1b' || *p == '[') {
            gsize n = ansi_len(p, le);
            if (n) {
                p += n;
                continue;
            }
        }
        char c = *p++;
        if (c == '\r' || c == '\0')
            c = ' ';
        g_string_append_c(buf, c);
    }
    int32_t label = -1;
    const char *e = buf->str + buf->len;
    const char *s = strip_leading(buf->str, e, &label);
    if (s != buf->str)
        g_string_erase(buf, 0, s - buf->str);
    return label;
}

/* ---- who wrote the line ---- */

/* "[rankG]:" anywhere (torch's log prefix), -1 when absent. */
static int32_t torch_rank(const char *p, const char *e)
{
    for (const char *m = p; (m = find(m, e, "[rank"));) {
        uint64_t v;
        const char *q = NULL;
        if (read_u64(m + 5, e, IMPORT_MAX_RANKS - 1, &v, &q) && q + 1 < e && q[0] == ']' &&
            q[1] == ':')
            return (int32_t)v;
        m += 5;
    }
    return -1;
}

typedef struct {
    char *pg, *desc; /* owned */
    int32_t rank;    /* Rank R inside the PG, -1 */
} PgPrefix;

/* The last "[PG ID i PG GUID u(desc) Rank r]", "[PG u (desc) Rank r]" or "[PG u Rank r]"
 * before `before`, else the last "[Rank r]" (pg NULL). */
static PgPrefix pg_prefix(const char *p, const char *before)
{
    PgPrefix x = {.rank = -1};
    const char *last = NULL;
    for (const char *m = p; (m = find(m, before, "[PG "));)
        last = m++;
    uint64_t v;
    if (last) {
        const char *q = last + 4;
        const char *close = memchr(q, ']', (gsize)MIN(before - q, 400));
        if (close) {
            const char *name = q;
            if (close - q > 3 && memcmp(q, "ID ", 3) == 0) {
                const char *g = find(q, close, " PG GUID ");
                name = g ? g + 9 : close;
            }
            const char *ne = name;
            while (ne < close && *ne != ' ' && *ne != '(')
                ne++;
            x.pg = name_dup(name, ne);
            const char *op = ne;
            while (op < close && *op == ' ')
                op++;
            if (op < close && *op == '(') {
                const char *cp = memchr(op, ')', (gsize)(close - op));
                if (cp)
                    x.desc = name_dup(op + 1, cp);
            }
            const char *rk = find(ne, close, "Rank ");
            if (rk && read_u64(rk + 5, close, IMPORT_MAX_RANKS - 1, &v, NULL))
                x.rank = (int32_t)v;
            if (x.desc && (strcmp(x.desc, "undefined") == 0 || !*x.desc))
                g_clear_pointer(&x.desc, g_free);
            return x;
        }
    }
    const char *lr = NULL;
    for (const char *m = p; (m = find(m, before, "[Rank "));)
        lr = m++;
    if (lr && read_u64(lr + 6, before, IMPORT_MAX_RANKS - 1, &v, NULL))
        x.rank = (int32_t)v;
    return x;
}

/* After torch's "[rankG]:" and glog's "[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] ". */
static const char *message_start(const char *p, const char *e)
{
    const char *q = p;
    if (torch_rank(p, MIN(e, p + 16)) >= 0) {
        const char *c = find(p, MIN(e, p + 16), "]:");
        q = c ? c + 2 : q;
    }
    if (e - q > 3 && q[0] == '[' && strchr("EWIF", q[1]) && g_ascii_isdigit(q[2])) {
        const char *c = memchr(q, ']', (gsize)MIN(e - q, 120));
        if (c)
            q = c + 1;
    }
    return q;
}

/* ---- the line shapes ---- */

typedef enum { SHAPE_NONE = 0, SHAPE_READ, SHAPE_CUT } Shape;

static void add_finding(Logs *L, ImportFindingKind kind, int32_t rank, int32_t peer,
                        const char *what, const char *p, const char *e, uint32_t line,
                        char *group_name, uint32_t size)
{
    if (L->pending->len >= LOGS_MAX_FINDINGS) {
        L->dropped_findings++;
        g_free(group_name);
        return;
    }
    Pending pd = {.f = {.kind = kind,
                        .rank = rank,
                        .peer = peer,
                        .group = -1,
                        .what = what,
                        .text = set_text(L->s, p, e),
                        .source = where(L, L->file, line)},
                  .group_name = group_name,
                  .size = size};
    g_array_append_val(L->pending, pd);
}

/* "WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=5, NumelOut=6, Timeout(ms)=6)" */
static Shape read_work(const char *p, const char *e, Verdict *v)
{
    const char *q = p;
    while (q < e && g_ascii_isupper(*q) && q - p < 8)
        q++;
    if (q >= e || *q != '(')
        return SHAPE_NONE;
    q++;
    bool have_seq = false;
    for (;;) {
        while (q < e && (*q == ' ' || *q == ','))
            q++;
        if (q >= e)
            return SHAPE_CUT;
        if (*q == ')')
            break;
        const char *eq = memchr(q, '=', (gsize)MIN(e - q, 32));
        if (!eq)
            return e - q < 32 ? SHAPE_CUT : SHAPE_NONE;
        const char *ve = eq + 1;
        while (ve < e && *ve != ',' && *ve != ')' && ve - eq < 80)
            ve++;
        if (ve >= e)
            return SHAPE_CUT;
        gsize kn = (gsize)(eq - q);
        uint64_t u;
        if (kn == 6 && memcmp(q, "SeqNum", 6) == 0) {
            if (!read_u64(eq + 1, ve, INT64_MAX, &v->seq, NULL) || v->seq == 0)
                return SHAPE_NONE; /* torch counts from 1 */
            have_seq = true;
        } else if (kn == 6 && memcmp(q, "OpType", 6) == 0) {
            g_free(v->op);
            v->op = name_dup(eq + 1, ve);
        } else if (kn == 7 && memcmp(q, "NumelIn", 7) == 0 && read_u64(eq + 1, ve, INT64_MAX, &u, NULL)) {
            v->numel_in = u;
            v->numel = true;
        } else if (kn == 8 && memcmp(q, "NumelOut", 8) == 0 &&
                   read_u64(eq + 1, ve, INT64_MAX, &u, NULL)) {
            v->numel_out = u;
        } else if (kn == 11 && memcmp(q, "Timeout(ms)", 11) == 0 &&
                   read_u64(eq + 1, ve, INT64_MAX, &u, NULL)) {
            v->timeout_ms = (int64_t)u;
        }
        q = ve;
    }
    return have_seq && v->op ? SHAPE_READ : SHAPE_NONE;
}

static Shape read_verdict(Logs *L, const char *p, const char *e, int32_t label, uint32_t line)
{
    static const char mk[] = "Watchdog caught collective operation timeout: Work";
    const char *m = find(p, e, mk);
    if (!m || in_prose(p, m))
        return SHAPE_NONE;
    Verdict v = {.global = torch_rank(p, m), .file = L->file, .line = line};
    v.hccl = e - m > (gssize)sizeof mk && m[sizeof mk - 1] == 'H';
    Shape sh = read_work(m + sizeof mk - 1, e, &v);
    if (sh != SHAPE_READ) {
        g_free(v.op);
        return sh;
    }
    if (v.global < 0)
        v.global = label;
    PgPrefix x = pg_prefix(p, m);
    v.pg = g_steal_pointer(&x.pg);
    v.desc = g_steal_pointer(&x.desc);
    v.pg_rank = x.rank;
    v.text = set_text(L->s, message_start(p, e), e);
    L->wd_lines++;
    if (L->verdicts->len >= LOGS_MAX_RECORDS) {
        L->dropped_records++;
        g_free(v.op);
        g_free(v.pg);
        g_free(v.desc);
        return SHAPE_READ;
    }
    g_array_append_val(L->verdicts, v);
    return SHAPE_READ;
}

/* The three wordings of the PG-status line. */
static Shape read_status(Logs *L, const char *p, const char *e, int32_t label, uint32_t line)
{
    static const char *const at[] = {
        "detected by watchdog at work sequence id: ", /* before "at work: " (newest) */
        "detected by watchdog at work: ",             /* ~2.5-2.7 */
        "Timeout at NCCL work: ",                     /* ~2.3-2.4 */
        "Timeout at HCCL work: ",
    };
    const char *m = NULL;
    gsize ml = 0;
    for (guint i = 0; i < G_N_ELEMENTS(at) && !m; i++)
        if ((m = find(p, e, at[i])))
            ml = strlen(at[i]);
    if (!m)
        return SHAPE_NONE;
    Status st = {.global = torch_rank(p, m), .file = L->file, .line = line, .enq = -1, .done = -1};
    uint64_t n;
    const char *ne = NULL;
    if (!read_u64(m + ml, e, INT64_MAX, &n, &ne))
        return ne == NULL && m + ml >= e ? SHAPE_CUT : SHAPE_NONE;
    st.at = n;
    const char *le = find(ne, e, "last enqueued");
    const char *lc = le ? find(le, e, "last completed") : NULL;
    const char *c1 = le ? find(le, e, ": ") : NULL;
    const char *c2 = lc ? find(lc, e, ": ") : NULL;
    if (!c1 || !c2 || !read_i64(c1 + 2, e, &st.enq, NULL) || !read_i64(c2 + 2, e, &st.done, NULL))
        return e - ne < 160 ? SHAPE_CUT : SHAPE_NONE;
    if (st.global < 0)
        st.global = label;
    PgPrefix x = pg_prefix(p, m);
    st.pg = g_steal_pointer(&x.pg);
    st.desc = g_steal_pointer(&x.desc);
    st.pg_rank = x.rank;
    L->wd_lines++;
    if (L->statuses->len >= LOGS_MAX_RECORDS) {
        L->dropped_records++;
        g_free(st.pg);
        g_free(st.desc);
        return SHAPE_READ;
    }
    g_array_append_val(L->statuses, st);
    return SHAPE_READ;
}

/* "Received a dump signal due to a collective timeout from  rank R and ... Last enqueued NCCL
 * work: X, last completed NCCL work: Y." — X, Y are PG 0's (postmortem.md (c)). */
static Shape read_dump_signal(Logs *L, const char *p, const char *e, int32_t label,
                              uint32_t line)
{
    const char *m = find(p, e, "Received a dump signal");
    if (!m)
        return SHAPE_NONE;
    int64_t from = -1, enq = -1, done = -1;
    const char *fr = find(m, e, "from ");
    if (fr) {
        const char *q = fr + 5;
        while (q < e && *q == ' ')
            q++;
        if (e - q > 5 && memcmp(q, "rank ", 5) == 0)
            read_i64(q + 5, e, &from, NULL);
    }
    bool counters = number_after(m, e, "ast enqueued NCCL work:", &enq) &&
                    number_after(m, e, "ast completed NCCL work:", &done);
    if (!counters && e - m < 400)
        return SHAPE_CUT;
    int32_t rank = torch_rank(p, m);
    if (rank < 0)
        rank = label;
    L->wd_lines++;
    add_finding(L, IMPORT_FINDING_SYMPTOM, rank,
                from >= 0 && from < IMPORT_MAX_RANKS ? (int32_t)from : -1, "dump_signal", m, e,
                line, NULL, 0);
    if (counters && L->statuses->len < LOGS_MAX_RECORDS) {
        Status st = {.global = rank,
                     .pg_rank = rank,
                     .pg = g_strdup("0"),
                     .enq = enq,
                     .done = done,
                     .dump = true,
                     .file = L->file,
                     .line = line};
        g_array_append_val(L->statuses, st);
    }
    return SHAPE_READ;
}

/* NCCL's WARN lines that say something about the hang. */
static Shape read_nccl_warn(Logs *L, const char *p, const char *e, int32_t label, uint32_t line)
{
    const char *m;
    int64_t peer = -1;
    const char *what = NULL;
    if ((m = find(p, e, "Mismatched collective detected"))) {
        what = "mismatch";
        number_after(m, e, "around rank ", &peer);
    } else if ((m = find(p, e, "collective mismatch error"))) {
        what = "size";
    } else if ((m = find(p, e, "message truncated")) && find(p, e, "NCCL")) {
        what = "truncated";
    } else {
        return SHAPE_NONE;
    }
    if (in_prose(p, m))
        return SHAPE_NONE;
    int32_t rank = torch_rank(p, e);
    L->warn_lines++;
    add_finding(L, IMPORT_FINDING_WARN, rank >= 0 ? rank : label,
                peer >= 0 && peer < IMPORT_MAX_RANKS ? (int32_t)peer : -1, what, p, e, line, NULL,
                0);
    return SHAPE_READ;
}

/* "xxx[" VALUE "]" after `key`: the bytes inside, bounded. */
static char *bracketed(const char *p, const char *e, const char *key)
{
    const char *m = find(p, e, key);
    if (!m)
        return NULL;
    const char *v = m + strlen(key);
    const char *c = memchr(v, ']', (gsize)MIN(e - v, 256));
    return c ? name_dup(v, c) : NULL;
}

/* Ascend CANN: EI0002's wait-for edge, EI0005, the fftsplus task timeout. */
static Shape read_cann(Logs *L, const char *p, const char *e, int32_t label, uint32_t line,
                       bool final)
{
    const char *m = find(p, e, "has not received the Notify record from remote rank");
    if (m && in_prose(p, m))
        return SHAPE_NONE;
    if (!m) {
        if ((m = find(p, e, "EI0005"))) {
            L->cann_lines++;
            add_finding(L, IMPORT_FINDING_WARN, label, -1, "cann_args", m, e, line, NULL, 0);
            return SHAPE_READ;
        }
        if ((m = find(p, e, "fftsplus task timeout"))) {
            L->cann_lines++;
            add_finding(L, IMPORT_FINDING_SYMPTOM, label, -1, "cann_timeout", m, e, line, NULL,
                        0);
            return SHAPE_READ;
        }
        return SHAPE_NONE;
    }
    const char *ri = find(m, e, "rankId[");
    if (!ri && !final)
        return SHAPE_CUT; /* its group information follows on the next lines */
    int64_t peer = -1, rank = -1, size = 0;
    const char *rr = find(m, e, "remote rank: [");
    if (rr)
        read_i64(rr + 14, e, &peer, NULL);
    if (ri)
        read_i64(ri + 7, e, &rank, NULL);
    number_after(m, e, "rankSize[", &size);
    int32_t tr = torch_rank(p, e);
    char *group = bracketed(m, e, "group:[");
    if (!group) {
        g_autofree char *tag = bracketed(m, e, "tag[");
        const char *us = tag ? strchr(tag, '_') : NULL;
        group = us && us[1] ? g_strdup(us + 1) : NULL; /* "AllReduce_group_name_1654" */
    }
    L->cann_lines++;
    const char *code = find(p, m, "EI0002");
    add_finding(L, IMPORT_FINDING_WAIT_EDGE,
                tr >= 0 ? tr : rank >= 0 && rank < IMPORT_MAX_RANKS ? (int32_t)rank : label,
                peer >= 0 && peer < IMPORT_MAX_RANKS ? (int32_t)peer : -1, "notify",
                code ? code : m, e, line,
                group, size > 0 && size < IMPORT_MAX_RANKS ? (uint32_t)size : 0);
    return SHAPE_READ;
}

/* vLLM's messages: one finding per (message, emitter), repeats counted. */
static Shape read_vllm(Logs *L, const char *p, const char *e, int32_t label, uint32_t line)
{
    const char *m, *what;
    if ((m = find(p, e, "No available shared memory broadcast block found")))
        what = "shm_broadcast";
    else if ((m = find(p, e, "RPC call to ")) && find(m, e, " timed out"))
        what = "rpc_timeout";
    else if ((m = find(p, e, "died unexpectedly")) &&
             (find(p, m, "Worker") || find(p, m, "Engine core process")))
        what = "worker_died";
    else if ((m = find(p, e, "EngineCore encountered a fatal error")) ||
             (m = find(p, e, "EngineDeadError")))
        what = "engine_dead";
    else
        return SHAPE_NONE;
    if (in_prose(p, m))
        return SHAPE_NONE;
    /* the emitter: "(EngineCore_DP1 pid=1455)" in front, if any */
    const char *o = memchr(p, '(', (gsize)MIN(m - p, 200));
    const char *c = o ? memchr(o, ')', (gsize)(m - o)) : NULL;
    g_autofree char *key = g_strdup_printf("%s|%.*s", what, c ? (int)MIN(c - o, 120) : 0,
                                           c ? o : "");
    L->vllm_lines++;
    gpointer n = g_hash_table_lookup(L->repeats, key);
    if (n) {
        g_hash_table_insert(L->repeats, g_steal_pointer(&key), GSIZE_TO_POINTER(GPOINTER_TO_SIZE(n) + 1));
        L->folded++;
        return SHAPE_READ;
    }
    g_hash_table_insert(L->repeats, g_steal_pointer(&key), GSIZE_TO_POINTER(1));
    int32_t rank = torch_rank(p, e);
    int64_t dead = -1; /* the worker that died, as vLLM names it: "rank=3", "VllmWorker-2" */
    if (strcmp(what, "worker_died") == 0 && !number_after(p, m, "rank=", &dead))
        number_after(p, m, "Worker-", &dead);
    add_finding(L, IMPORT_FINDING_SYMPTOM, rank >= 0 ? rank : label,
                dead >= 0 && dead < IMPORT_MAX_RANKS ? (int32_t)dead : -1, what, p, e, line, NULL,
                0);
    return SHAPE_READ;
}

/* Every non-NCCL shape of one (cleaned, possibly joined) line. `final`: no more lines will be
 * joined to it. */
static Shape read_shapes(Logs *L, const char *p, const char *e, int32_t label, uint32_t line,
                         bool final)
{
    Shape sh;
    if ((sh = read_verdict(L, p, e, label, line)) != SHAPE_NONE) {
        L->seen |= SEEN_WATCHDOG;
        return sh;
    }
    if ((sh = read_status(L, p, e, label, line)) != SHAPE_NONE ||
        (sh = read_dump_signal(L, p, e, label, line)) != SHAPE_NONE) {
        L->seen |= SEEN_WATCHDOG;
        return sh;
    }
    if (find(p, e, "watchdog got stuck for")) {
        L->seen |= SEEN_WATCHDOG;
        int32_t r = torch_rank(p, e);
        add_finding(L, IMPORT_FINDING_SYMPTOM, r >= 0 ? r : label, -1, "heartbeat", p, e, line,
                    NULL, 0);
        return SHAPE_READ;
    }
    if ((sh = read_nccl_warn(L, p, e, label, line)) != SHAPE_NONE) {
        L->seen |= SEEN_NCCL;
        return sh;
    }
    if ((sh = read_cann(L, p, e, label, line, final)) != SHAPE_NONE) {
        L->seen |= SEEN_CANN;
        return sh;
    }
    if ((sh = read_vllm(L, p, e, label, line)) != SHAPE_NONE)
        L->seen |= SEEN_VLLM;
    return sh;
}

/* A line that starts a new log record cannot continue a cut one. */
static bool starts_record(const char *p, const char *e)
{
    return torch_rank(p, MIN(e, p + 24)) >= 0 || find(p, e, "NCCL INFO") || find(p, e, "NCCL WARN") ||
           find(p, e, "Watchdog caught");
}

/* Whether the line ends with the start (4 bytes or more) of a marker: hard-wrapped mid-word. */
static bool ends_in_marker(const char *p, const char *e)
{
    static const char *const marks[] = {
        "Watchdog caught collective operation timeout: Work", "detected by watchdog at work",
        "Timeout at NCCL work", "Received a dump signal",
        "has not received the Notify record from remote rank",
        "No available shared memory broadcast block found",
    };
    for (guint i = 0; i < G_N_ELEMENTS(marks); i++) {
        gsize n = strlen(marks[i]);
        for (gsize k = MIN(n - 1, (gsize)(e - p)); k >= 4; k--)
            if (e[-(gssize)k] == marks[i][0] && memcmp(e - k, marks[i], k) == 0)
                return true;
    }
    return false;
}

/* A line that produced nothing but may have been wrapped: torch's prefix without its message,
 * or a marker cut at its end. */
static bool maybe_wrapped(const char *p, const char *e)
{
    return torch_rank(p, e) >= 0 || find(p, e, "[PG ") || find(p, e, "[Rank ") ||
           ends_in_marker(p, e);
}

static void hold(Logs *L, const GString *buf, uint32_t line, int32_t label, bool cut)
{
    g_string_assign(L->held, buf->str);
    L->held_line = line;
    L->held_label = label;
    L->held_lines = 1;
    L->held_cut = cut;
    L->held_nccl = false;
}

/* Ends the held line: read as it is (CANN) or, when its shape was cut, counted. */
static void flush_held(Logs *L)
{
    if (!L->held->len)
        return;
    if (L->held_nccl) {
        import_nccl_damaged(L->nf, L->held_line);
    } else if (L->held_cut) { /* one held only as possibly wrapped read as nothing already */
        Shape sh = read_shapes(L, L->held->str, L->held->str + L->held->len, L->held_label,
                               L->held_line, true);
        L->cut_lines += sh != SHAPE_READ;
    }
    g_string_truncate(L->held, 0);
    L->held_lines = 0;
}

/* The held line continued by this one (a fixed-width wrap joins without a separator): true
 * when the joined text was read or is still cut (held on). */
static bool continue_held(Logs *L, const char *p, const char *e, gsize n)
{
    if (starts_record(p, e) || L->held_lines >= LOGS_WRAP_LINES ||
        L->held->len + n > LOGS_WRAP_BYTES) {
        flush_held(L);
        return false;
    }
    gsize before = L->held->len;
    g_string_append_len(L->held, p, (gssize)n);
    L->held_lines++;
    if (L->held_nccl) { /* an NCCL line wrapped: read the joined text again */
        int k = import_nccl_line(L->nf, L->held->str, L->held->str + L->held->len, L->held_line,
                                 false, NULL);
        if (k == 3)
            return true;
        g_string_truncate(L->held, before);
        if (k == 1) {
            g_string_truncate(L->held, 0);
            L->held_lines = 0;
            return true;
        }
        flush_held(L);
        return false;
    }
    Shape sh = read_shapes(L, L->held->str, L->held->str + L->held->len, L->held_label,
                           L->held_line, false);
    if (sh == SHAPE_CUT) {
        L->held_cut = true;
        return true;
    }
    if (sh == SHAPE_NONE && !L->held_cut &&
        ends_in_marker(L->held->str, L->held->str + L->held->len)) {
        return true; /* a marker cut again: wait for the next line */
    }
    if (sh == SHAPE_NONE && L->held_cut) {
        /* what it holds stays cut: count it once, read this line alone */
        g_string_truncate(L->held, before);
        flush_held(L);
        return false;
    }
    g_string_truncate(L->held, 0);
    L->held_lines = 0;
    return sh == SHAPE_READ;
}

/* One raw line of a file. */
static bool read_line(Logs *L, GString *buf, const char *lp, const char *le, uint32_t line,
                      bool last_unterminated, GError **error)
{
    int32_t label = clean_line(buf, lp, le);
    const char *p = buf->str, *e = buf->str + buf->len;
    if (L->held->len && continue_held(L, p, e, buf->len))
        return true;
    int k = import_nccl_line(L->nf, p, e, line, last_unterminated, error);
    if (k < 0)
        return false;
    if (k == 3) {
        hold(L, buf, line, label, true);
        L->held_nccl = true;
        return true;
    }
    if (k == 1) {
        L->seen |= SEEN_NCCL;
        return true;
    }
    Shape sh = read_shapes(L, p, e, label, line, false);
    if (sh == SHAPE_CUT)
        hold(L, buf, line, label, true);
    else if (sh == SHAPE_NONE && k == 0 && maybe_wrapped(p, e))
        hold(L, buf, line, label, false);
    return true;
}

static bool read_file(Logs *L, guint file, guint file_rank, const char *data, gsize len,
                      GError **error)
{
    L->file = file;
    L->nf = import_nccl_file_begin(L->nccl, file, file_rank, L->paths[file]);
    g_autoptr(GString) buf = g_string_sized_new(256);
    bool ok = true;
    const char *end = data + len;
    uint32_t line = 0;
    for (const char *lp = data; ok && lp < end;) {
        const char *nl = memchr(lp, '\n', (gsize)(end - lp));
        const char *le = nl ? nl : end;
        if (line < UINT32_MAX)
            line++;
        ok = read_line(L, buf, lp, le, line, !nl, error);
        lp = nl ? nl + 1 : end;
    }
    flush_held(L);
    import_nccl_file_end(L->nf);
    L->nf = NULL;
    return ok;
}

/* ---- from the lines to the set ---- */

/* A group as the lines show it: its name, the ranks seen, the size the numbers give. */
typedef struct {
    char *name, *desc;
    GHashTable *ranks; /* int32 + 1 set */
    uint32_t size;
    bool size_conflict;
    int32_t index; /* into ImportSet.groups, -1 not created */
} PgAcc;

static void pg_acc_free(gpointer data)
{
    PgAcc *a = data;
    g_free(a->name);
    g_free(a->desc);
    g_hash_table_unref(a->ranks);
    g_free(a);
}

static PgAcc *pg_acc(GHashTable *t, GPtrArray *order, const char *name, const char *desc)
{
    PgAcc *a = g_hash_table_lookup(t, name);
    if (!a) {
        a = g_new0(PgAcc, 1);
        a->name = g_strdup(name);
        a->ranks = g_hash_table_new(g_direct_hash, g_direct_equal);
        a->index = -1;
        g_hash_table_insert(t, a->name, a);
        g_ptr_array_add(order, a);
    }
    if (!a->desc && desc)
        a->desc = g_strdup(desc);
    return a;
}

static void pg_acc_size(PgAcc *a, uint32_t size)
{
    if (!size)
        return;
    if (a->size && a->size != size)
        a->size_conflict = true;
    a->size = MAX(a->size, size);
}

/* The size a verdict's numels give (postmortem.md (c): reduce-scatter in = n x out, all-gather
 * out = n x in), 0 when they say nothing. */
static uint32_t numel_size(const Verdict *v)
{
    if (!v->numel || !v->numel_in || !v->numel_out)
        return 0;
    uint64_t a = 0;
    if (strstr(v->op, "REDUCE_SCATTER") && v->numel_in % v->numel_out == 0)
        a = v->numel_in / v->numel_out;
    else if (strstr(v->op, "ALLGATHER") && v->numel_out % v->numel_in == 0)
        a = v->numel_out / v->numel_in;
    return a > 1 && a <= IMPORT_MAX_RANKS ? (uint32_t)a : 0;
}

static SchedOpKind op_kind(const char *op)
{
    static const struct {
        const char *word;
        SchedOpKind kind;
    } t[] = {
        {"REDUCE_SCATTER", SCHED_OP_REDUCE_SCATTER}, {"ALLGATHER", SCHED_OP_ALL_GATHER},
        {"ALLTOALL", SCHED_OP_ALL_TO_ALL},           {"ALLREDUCE", SCHED_OP_ALL_REDUCE},
        {"BROADCAST", SCHED_OP_BROADCAST},           {"BARRIER", SCHED_OP_BARRIER},
        {"SEND", SCHED_OP_SEND},                     {"RECV", SCHED_OP_RECV},
        {"COALESCED", SCHED_OP_ALL_REDUCE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(t); i++)
        if (strstr(op, t[i].word))
            return t[i].kind;
    return SCHED_OP_BROADCAST; /* GATHER, SCATTER, REDUCE: rooted, compared by input count
                                  like a broadcast (as import-fr.c does), the name kept */
}

/* Ranks: "[rankG]:" or a launcher label, else the line's rank inside its PG (the global rank on
 * PG 0, a guess on others: counted for a warning). */
static void resolve_ranks(Logs *L)
{
    for (guint i = 0; i < L->verdicts->len; i++) {
        Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        if (v->global < 0 && v->pg_rank >= 0) {
            v->global = v->pg_rank;
            v->rank_guessed = !v->pg || strcmp(v->pg, "0") != 0;
        }
    }
    for (guint i = 0; i < L->statuses->len; i++) {
        Status *st = &g_array_index(L->statuses, Status, i);
        if (st->global < 0 && st->pg_rank >= 0) {
            st->global = st->pg_rank;
            L->pg_rank_guess += !st->pg || strcmp(st->pg, "0") != 0;
        }
    }
}

#define AMBIGUOUS ((gpointer)1)

/* Verdicts: duplicates marked, PGs from status lines, then from other ranks' verdicts of the
 * same call when those name exactly one PG. */
static void pair_verdicts(Logs *L)
{
    g_autoptr(GHashTable) st = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < L->statuses->len; i++) {
        Status *s = &g_array_index(L->statuses, Status, i);
        if (!s->dump && s->pg)
            g_hash_table_insert(st, g_strdup_printf("%u|%d|%" G_GUINT64_FORMAT, s->file,
                                                    s->global, s->at), s);
    }
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < L->verdicts->len; i++) {
        Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        if (!v->pg) {
            g_autofree char *k =
                g_strdup_printf("%u|%d|%" G_GUINT64_FORMAT, v->file, v->global, v->seq);
            Status *s = g_hash_table_lookup(st, k);
            if (s) {
                v->pg = g_strdup(s->pg);
                v->desc = g_strdup(s->desc);
            }
        }
        char *k = g_strdup_printf("%d|%d|%" G_GUINT64_FORMAT "|%s", v->global, v->pg_rank, v->seq,
                                  v->op);
        Verdict *first = g_hash_table_lookup(seen, k);
        if (!first) {
            g_hash_table_insert(seen, k, GUINT_TO_POINTER(i + 1));
            continue;
        }
        g_free(k);
        v->dup = true;
    }
    /* a duplicate may carry the PG its first quote lacked */
    g_hash_table_remove_all(seen);
    for (guint i = 0; i < L->verdicts->len; i++) {
        Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        char *k = g_strdup_printf("%d|%d|%" G_GUINT64_FORMAT "|%s", v->global, v->pg_rank, v->seq,
                                  v->op);
        guint fi = GPOINTER_TO_UINT(g_hash_table_lookup(seen, k));
        if (!fi) {
            g_hash_table_insert(seen, k, GUINT_TO_POINTER(i + 1));
            continue;
        }
        g_free(k);
        Verdict *f = &g_array_index(L->verdicts, Verdict, fi - 1);
        if (!f->pg && v->pg) {
            f->pg = g_strdup(v->pg);
            f->desc = g_strdup(v->desc);
        }
    }
    g_autoptr(GHashTable) call = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < L->verdicts->len; i++) {
        const Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        if (v->dup || !v->pg)
            continue;
        char *k = g_strdup_printf("%" G_GUINT64_FORMAT "|%s|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT,
                                  v->seq, v->op, v->numel_in, v->numel_out);
        const char *had = g_hash_table_lookup(call, k);
        if (had && strcmp(had, v->pg) != 0)
            g_hash_table_insert(call, k, g_strdup(""));
        else if (!had)
            g_hash_table_insert(call, k, g_strdup(v->pg));
        else
            g_free(k);
    }
    for (guint i = 0; i < L->verdicts->len; i++) {
        Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        if (v->dup || v->pg)
            continue;
        g_autofree char *k =
            g_strdup_printf("%" G_GUINT64_FORMAT "|%s|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT,
                            v->seq, v->op, v->numel_in, v->numel_out);
        const char *pg = g_hash_table_lookup(call, k);
        if (pg && *pg) {
            v->pg = g_strdup(pg);
            v->pg_inferred = true;
        }
    }
}

static int cmp_i32(gconstpointer a, gconstpointer b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Creates the groups: the ranks seen, sorted; PG 0 (the default group) is the world when the
 * NCCL lines initialized a communicator that large. */
static void make_groups(Logs *L, GPtrArray *order, int32_t world)
{
    for (guint i = 0; i < order->len; i++) {
        PgAcc *a = g_ptr_array_index(order, i);
        g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(int32_t));
        GHashTableIter it;
        gpointer k;
        int32_t max = -1;
        g_hash_table_iter_init(&it, a->ranks);
        while (g_hash_table_iter_next(&it, &k, NULL)) {
            int32_t r = GPOINTER_TO_INT(k) - 1;
            g_array_append_val(ranks, r);
            max = MAX(max, r);
        }
        g_array_sort(ranks, cmp_i32);
        bool pg0 = strcmp(a->name, "0") == 0;
        if (pg0 && world > 0 && max < world) {
            g_array_set_size(ranks, 0);
            for (int32_t r = 0; r < world; r++)
                g_array_append_val(ranks, r);
            a->size = (uint32_t)world;
            a->size_conflict = false;
        }
        a->index = (int32_t)import_set_group(L->s, a->name, a->desc, (const int32_t *)ranks->data,
                                             ranks->len, false);
        ImportGroup *g = g_ptr_array_index(L->s->groups, (guint)a->index);
        if (ranks->len) /* every member is a rank of the set, absent until a line of it is read */
            import_set_rank(L->s, g_array_index(ranks, int32_t, ranks->len - 1));
        g->inferred = true;
        g->size = a->size_conflict ? 0 : a->size;
        if (a->size_conflict)
            import_set_warn(L->s, "group %s: its lines give different sizes; size left unknown",
                            a->name);
    }
}

static void add_evidence(ImportRank *r, const char *phrase)
{
    if (r->evidence && strstr(r->evidence, phrase))
        return;
    char *e = r->evidence ? g_strdup_printf("%s; %s", r->evidence, phrase) : g_strdup(phrase);
    g_free(r->evidence);
    r->evidence = e;
}

static ImportRank *present_rank(Logs *L, int32_t global, guint file)
{
    ImportRank *r = import_set_rank(L->s, global);
    r->present = true;
    if (!r->path)
        r->path = g_strdup(L->paths[file]);
    return r;
}

static void add_verdicts(Logs *L, GHashTable *accs)
{
    for (guint i = 0; i < L->verdicts->len; i++) {
        const Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        if (v->dup || v->global < 0)
            continue;
        const PgAcc *a = g_hash_table_lookup(accs, v->pg ? v->pg : "?");
        ImportRank *r = present_rank(L, v->global, v->file);
        ImportEntry e = {.group = (uint32_t)a->index,
                         .seq = v->seq,
                         .order = v->line,
                         .kind = op_kind(v->op),
                         .dtype = SCHED_DTYPE_FP32,
                         .dtype_known = false,
                         .count = v->numel_in,
                         .count_out = v->numel_out,
                         .root = -1,
                         .peer = -1,
                         .name = import_set_string(L->s, v->op),
                         .state = IMPORT_STATE_STARTED,
                         .created_ns = -1,
                         .completed_ns = -1,
                         .timeout_ms = v->timeout_ms,
                         .source = where(L, v->file, v->line)};
        g_array_append_val(r->entries, e);
        g_autofree char *ev = g_strdup_printf("watchdog timeout on PG %s", a->name);
        add_evidence(r, ev);
        ImportFinding f = {.kind = IMPORT_FINDING_TIMEOUT,
                           .rank = v->global,
                           .peer = -1,
                           .group = a->index,
                           .seq = v->seq,
                           .what = "watchdog",
                           .text = v->text,
                           .source = where(L, v->file, v->line)};
        g_array_append_val(L->s->findings, f);
    }
}

static int cmp_entry_order(gconstpointer a, gconstpointer b)
{
    const ImportEntry *x = a, *y = b;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Each rank's entries by line (NCCL's and the watchdog's of one log interleave). */
static void sort_entries(ImportSet *s)
{
    for (guint i = 0; i < s->ranks->len; i++) {
        ImportRank *r = g_ptr_array_index(s->ranks, i);
        bool sorted = true;
        for (guint k = 1; k < r->entries->len && sorted; k++)
            sorted = cmp_entry_order(&g_array_index(r->entries, ImportEntry, k - 1),
                                     &g_array_index(r->entries, ImportEntry, k)) <= 0;
        if (!sorted)
            g_array_sort(r->entries, cmp_entry_order);
    }
}

static void add_statuses(Logs *L, GHashTable *accs)
{
    for (guint i = 0; i < L->statuses->len; i++) {
        const Status *st = &g_array_index(L->statuses, Status, i);
        if (st->global < 0)
            continue;
        const PgAcc *a = g_hash_table_lookup(accs, st->pg ? st->pg : "?");
        ImportRank *r = present_rank(L, st->global, st->file);
        ImportPgStatus ps = {.group = (uint32_t)a->index,
                             .last_enqueued = st->enq > 0 ? (uint64_t)st->enq : 0,
                             .last_completed = st->done > 0 ? (uint64_t)st->done : 0,
                             .source = where(L, st->file, st->line)};
        g_array_append_val(r->pg_status, ps);
        add_evidence(r, st->dump ? "dump signal (PG 0 counters)" : "PG-status line");
    }
}

/* Pending findings into the set, their group named by text created (CANN: "hccl NAME"). */
static void add_findings(Logs *L, GHashTable *accs, GPtrArray *order)
{
    for (guint i = 0; i < L->pending->len; i++) {
        Pending *pd = &g_array_index(L->pending, Pending, i);
        if (!pd->group_name)
            continue;
        g_autofree char *n = g_strdup_printf("hccl %s", pd->group_name);
        PgAcc *a = pg_acc(accs, order, n, NULL);
        pg_acc_size(a, pd->size);
        if (pd->f.rank >= 0)
            g_hash_table_add(a->ranks, GINT_TO_POINTER(pd->f.rank + 1));
        if (pd->f.peer >= 0)
            g_hash_table_add(a->ranks, GINT_TO_POINTER(pd->f.peer + 1));
    }
}

static void commit_findings(Logs *L, GHashTable *accs)
{
    for (guint i = 0; i < L->pending->len; i++) {
        Pending *pd = &g_array_index(L->pending, Pending, i);
        ImportFinding f = pd->f;
        pd->f.source = NULL;
        if (pd->group_name) {
            g_autofree char *n = g_strdup_printf("hccl %s", pd->group_name);
            const PgAcc *a = g_hash_table_lookup(accs, n);
            f.group = a ? a->index : -1;
        }
        g_array_append_val(L->s->findings, f);
    }
}

static void accumulate(Logs *L, GHashTable *accs, GPtrArray *order)
{
    for (guint i = 0; i < L->verdicts->len; i++) {
        const Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        if (v->dup || v->global < 0)
            continue;
        PgAcc *a = pg_acc(accs, order, v->pg ? v->pg : "?", v->pg ? v->desc : "no line named it");
        g_hash_table_add(a->ranks, GINT_TO_POINTER(v->global + 1));
        pg_acc_size(a, numel_size(v));
    }
    for (guint i = 0; i < L->statuses->len; i++) {
        const Status *st = &g_array_index(L->statuses, Status, i);
        if (st->global < 0)
            continue;
        PgAcc *a = pg_acc(accs, order, st->pg ? st->pg : "?", st->desc);
        g_hash_table_add(a->ranks, GINT_TO_POINTER(st->global + 1));
    }
}

static void logs_warnings(Logs *L)
{
    ImportSet *s = L->s;
    guint inferred = 0, unnamed = 0, unranked = 0;
    for (guint i = 0; i < L->verdicts->len; i++) {
        const Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        inferred += !v->dup && v->pg_inferred;
        unnamed += !v->dup && !v->pg;
        unranked += !v->dup && v->global < 0;
        L->pg_rank_guess += !v->dup && v->rank_guessed;
    }
    if (inferred)
        import_set_warn(s,
                        "%u watchdog lines name no PG and have no PG-status line: their PG is "
                        "that of other ranks' lines for the same call (SeqNum, OpType, numels)",
                        inferred);
    if (unnamed)
        import_set_warn(s,
                        "%u watchdog lines name no PG and nothing else does: their calls are in "
                        "a group named \"?\" (the PG-status line that follows each names it)",
                        unnamed);
    if (unranked)
        import_set_warn(s,
                        "%u watchdog lines have no rank (no \"[rankG]:\" prefix, no \"[Rank "
                        "R]\"): not read",
                        unranked);
    if (L->pg_rank_guess)
        import_set_warn(s,
                        "%u lines have no \"[rankG]:\" prefix or launcher label: their \"[Rank "
                        "R]\" (the rank inside the PG) is taken as the global rank",
                        L->pg_rank_guess);
    if (L->cut_lines)
        import_set_warn(s,
                        "%" G_GUINT64_FORMAT " lines cut before their end (and not continued on "
                        "the next lines) skipped",
                        L->cut_lines);
    if (L->folded)
        import_set_warn(s,
                        "%" G_GUINT64_FORMAT " repeats of vLLM messages folded into the first "
                        "one of each process",
                        L->folded);
    if (L->dropped_findings || L->dropped_records)
        import_set_warn(s,
                        "more than %d findings or %d watchdog lines: %" G_GUINT64_FORMAT
                        " not kept",
                        LOGS_MAX_FINDINGS, LOGS_MAX_RECORDS,
                        L->dropped_findings + L->dropped_records);
}

static void format_of(Logs *L, ImportFormat want, bool nccl_built)
{
    ImportSet *s = L->s;
    unsigned k = L->seen;
    s->format = k == SEEN_NCCL       ? IMPORT_FORMAT_NCCL
                : k == SEEN_WATCHDOG ? IMPORT_FORMAT_WATCHDOG
                : k == SEEN_CANN     ? IMPORT_FORMAT_CANN
                : k == SEEN_VLLM     ? IMPORT_FORMAT_VLLM
                                     : IMPORT_FORMAT_LOGS;
    if (want == IMPORT_FORMAT_LOGS)
        s->format = IMPORT_FORMAT_LOGS;
    g_autoptr(GString) d = g_string_new(nccl_built && s->format_detail ? s->format_detail : "");
    g_free(s->format_detail);
    bool hccl = false;
    for (guint i = 0; i < L->verdicts->len && !hccl; i++)
        hccl = g_array_index(L->verdicts, Verdict, i).hccl;
    if (L->wd_lines)
        g_string_append_printf(d, "%s%s watchdog lines (%" G_GUINT64_FORMAT ")",
                               d->len ? ", " : "", hccl ? "torch_npu (HCCL)" : "PyTorch",
                               L->wd_lines);
    if (!nccl_built && (k & SEEN_NCCL) && import_nccl_reader_coll_lines(L->nccl) == 0 &&
        import_nccl_reader_largest(L->nccl) > 0)
        g_string_append_printf(d, "%sNCCL Init lines (no COLL line)", d->len ? ", " : "");
    if (L->warn_lines)
        g_string_append_printf(d, "%sNCCL WARN lines (%" G_GUINT64_FORMAT ")", d->len ? ", " : "",
                               L->warn_lines);
    if (L->cann_lines)
        g_string_append_printf(d, "%sAscend CANN errors (%" G_GUINT64_FORMAT ")",
                               d->len ? ", " : "", L->cann_lines);
    if (L->vllm_lines)
        g_string_append_printf(d, "%svLLM messages (%" G_GUINT64_FORMAT ")", d->len ? ", " : "",
                               L->vllm_lines);
    s->format_detail = g_string_free(g_steal_pointer(&d), FALSE);
}

static bool build(Logs *L, ImportFormat want, GError **error)
{
    bool coll = import_nccl_reader_coll_lines(L->nccl) > 0;
    if (!import_nccl_reader_finish(L->nccl, coll, error))
        return false;
    if (!coll && import_nccl_reader_largest(L->nccl) > 0)
        import_set_warn(L->s,
                        "the NCCL lines hold Init lines but no COLL line: they name "
                        "communicators, not calls (NCCL_DEBUG_SUBSYS=INIT,COLL logs the calls)");
    resolve_ranks(L);
    pair_verdicts(L);
    g_autoptr(GHashTable) accs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, pg_acc_free);
    g_autoptr(GPtrArray) order = g_ptr_array_new();
    accumulate(L, accs, order);
    add_findings(L, accs, order);
    make_groups(L, order, import_nccl_reader_largest(L->nccl));
    add_verdicts(L, accs);
    sort_entries(L->s);
    add_statuses(L, accs);
    commit_findings(L, accs);
    logs_warnings(L);
    format_of(L, want, coll);
    if (!L->seen) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID, "%s: nothing read: %s",
                    L->first_path, IMPORT_LOGS_NEEDS);
        return false;
    }
    return true;
}

static void logs_clear(Logs *L)
{
    for (guint i = 0; i < L->verdicts->len; i++) {
        Verdict *v = &g_array_index(L->verdicts, Verdict, i);
        g_free(v->pg);
        g_free(v->desc);
        g_free(v->op);
    }
    for (guint i = 0; i < L->statuses->len; i++) {
        Status *st = &g_array_index(L->statuses, Status, i);
        g_free(st->pg);
        g_free(st->desc);
    }
    for (guint i = 0; i < L->pending->len; i++) {
        Pending *pd = &g_array_index(L->pending, Pending, i);
        g_free(pd->f.source);
        g_free(pd->group_name);
    }
    g_array_unref(L->verdicts);
    g_array_unref(L->statuses);
    g_array_unref(L->pending);
    g_hash_table_unref(L->repeats);
    g_string_free(L->held, TRUE);
    import_nccl_reader_free(L->nccl);
}

bool import_logs_files(ImportSet *s, const char *const *paths, const GBytes *const *data, guint n,
                       ImportFormat want, bool excerpts, GError **error)
{
    g_return_val_if_fail(s != NULL, false);
    g_return_val_if_fail(n == 0 || (paths != NULL && data != NULL), false);
    g_return_val_if_fail(error == NULL || *error == NULL, false);
    if (n == 0) {
        g_set_error(error, IMPORT_ERROR, IMPORT_ERROR_INVALID, "nothing to import: no log given");
        return false;
    }
    Logs L = {.s = s, .paths = paths};
    L.nccl = import_nccl_reader_new(s, paths, excerpts);
    L.verdicts = g_array_new(FALSE, TRUE, sizeof(Verdict));
    L.statuses = g_array_new(FALSE, TRUE, sizeof(Status));
    L.pending = g_array_new(FALSE, TRUE, sizeof(Pending));
    L.repeats = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    L.held = g_string_new(NULL);
    /* path order, as import-nccl.c reads: the set does not depend on the order given */
    g_autoptr(GArray) ord = import_file_order(paths, data, n);
    g_autoptr(GHashTable) digests = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    bool ok = true;
    for (guint k = 0; k < n && ok; k++) {
        guint i = g_array_index(ord, guint, k);
        gsize len = 0;
        const char *bytes = data[i] ? g_bytes_get_data((GBytes *)data[i], &len) : NULL;
        char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)(bytes ? bytes : ""),
                                                bytes ? len : 0);
        const char *twin = g_hash_table_lookup(digests, sum);
        if (twin) {
            import_set_warn(s, "%s: the same bytes as %s: read once", paths[i], twin);
            g_free(sum);
            continue;
        }
        g_hash_table_insert(digests, sum, (gpointer)paths[i]);
        if (!L.first_path)
            L.first_path = paths[i];
        ok = read_file(&L, i, k, bytes ? bytes : "", bytes ? len : 0, error);
    }
    ok = ok && build(&L, want, error);
    logs_clear(&L);
    return ok;
}

/* ---- recognising a text log ---- */

static const char *const markers[] = {
    "NCCL INFO", "NCCL WARN", ": opCount ", "Watchdog caught collective operation timeout",
    "detected by watchdog at work", "Timeout at NCCL work", "Timeout at HCCL work",
    "Received a dump signal", "watchdog got stuck for", "Notify record from remote rank",
    "EI0002", "EI0005", "fftsplus task timeout",
    "No available shared memory broadcast block found", "died unexpectedly",
    "EngineCore encountered a fatal error",
};

bool import_looks_logs(const guint8 *data, gsize len)
{
    if (!data)
        return false;
    for (guint i = 0; i < G_N_ELEMENTS(markers); i++)
        if (memmem(data, len, markers[i], strlen(markers[i])))
            return true;
    return false;
}

/* Only the first and last LOGS_PEEK bytes are looked at (a hang's own lines are at the end
 * of a long log): a bound on the cost of a decision that only chooses excerpt reading. */
#define LOGS_PEEK ((gsize)4 << 20)

bool import_looks_logs_not_nccl(const guint8 *data, gsize len)
{
    if (!data)
        return false;
    gsize head = MIN(len, LOGS_PEEK), tail = len > 2 * LOGS_PEEK ? LOGS_PEEK : len - head;
    for (guint i = 3; i < G_N_ELEMENTS(markers); i++) {
        gsize n = strlen(markers[i]);
        if (memmem(data, head, markers[i], n) ||
            (tail && memmem(data + len - tail, tail, markers[i], n)))
            return true;
    }
    return false;
}
