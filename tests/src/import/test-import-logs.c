/* tests/src/import/test-import-logs.c — the text hang reports hold, read into an ImportSet
 * (src/import/import-logs.c, and import-nccl.c for NCCL lines without Init lines).
 *
 * Inline fixtures, written after the shapes in ../shared/reference/postmortem.md (c)-(e), for
 * every line shape: watchdog verdicts (new and old forms, WorkHCCL), the three PG-status
 * wordings, dump signals, NCCL COLL lines without Init lines (joined by nranks, by first-call
 * signature, with bare lines, old NCCL's opCount numbering), NCCL WARN lines, CANN EI0002 (one
 * line, spread over lines), vLLM's messages; prefixes and damage (ANSI codes whole and broken,
 * Ray, a viewer's line numbers, srun and mpirun labels, progress bars, hard-wrapped lines, two
 * excerpts of one log); a file none of these; hostile input. Then the real reports of
 * ../shared/real/hangs/ read through import_read (each test skips, naming the folder, when it
 * is absent) and what was extracted from each: ranks, groups, head-of-line seqs, findings.
 */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <string.h>

#include "../../../src/import/import.h"

#define HANGS RANKSIM_SOURCE_DIR "/../shared/real/hangs"

/* ---- helpers ---- */

/* Reads texts (name, text, name, text, ..., NULL) as files; the set, or NULL with *msg. */
static ImportSet *read_texts(ImportFormat want, bool excerpts, char **msg, ...)
{
    g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) data = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    va_list ap;
    va_start(ap, msg);
    const char *name;
    while ((name = va_arg(ap, const char *))) {
        const char *text = va_arg(ap, const char *);
        g_ptr_array_add(paths, g_strdup(name));
        g_ptr_array_add(data, g_bytes_new(text, strlen(text)));
    }
    va_end(ap);
    ImportSet *s = import_set_new(IMPORT_FORMAT_LOGS);
    GError *err = NULL;
    bool ok = import_logs_files(s, (const char *const *)paths->pdata,
                                (const GBytes *const *)data->pdata, paths->len, want, excerpts,
                                &err);
    cr_assert_eq(ok, err == NULL);
    if (!ok) {
        cr_assert_null(strchr(err->message, '\n'), "one line: %s", err->message);
        if (msg)
            *msg = g_strdup(err->message);
        g_error_free(err);
        import_set_free(s);
        return NULL;
    }
    return s;
}

static ImportSet *one(const char *text)
{
    char *msg = NULL;
    ImportSet *s = read_texts(IMPORT_FORMAT_AUTO, true, &msg, "job.log", text, NULL);
    cr_assert_not_null(s, "refused: %s", msg);
    return s;
}

static ImportRank *rank(const ImportSet *s, guint r)
{
    cr_assert_lt(r, s->ranks->len, "rank %u of %u", r, s->ranks->len);
    return g_ptr_array_index(s->ranks, r);
}

static const ImportEntry *entry(const ImportSet *s, guint r, guint i)
{
    ImportRank *k = rank(s, r);
    cr_assert_lt(i, k->entries->len, "rank %u has %u entries", r, k->entries->len);
    return &g_array_index(k->entries, ImportEntry, i);
}

static const ImportGroup *group(const ImportSet *s, guint g)
{
    cr_assert_lt(g, s->groups->len);
    return g_ptr_array_index(s->groups, g);
}

static const ImportPgStatus *status(const ImportSet *s, guint r, guint i)
{
    ImportRank *k = rank(s, r);
    cr_assert_lt(i, k->pg_status->len, "rank %u has %u status lines", r, k->pg_status->len);
    return &g_array_index(k->pg_status, ImportPgStatus, i);
}

static const ImportFinding *finding(const ImportSet *s, guint i)
{
    cr_assert_lt(i, s->findings->len, "%u findings", s->findings->len);
    return &g_array_index(s->findings, ImportFinding, i);
}

static guint count_findings(const ImportSet *s, ImportFindingKind kind, const char *what)
{
    guint n = 0;
    for (guint i = 0; i < s->findings->len; i++) {
        const ImportFinding *f = finding(s, i);
        n += f->kind == kind && (!what || strcmp(f->what, what) == 0);
    }
    return n;
}

static bool has_warning(const ImportSet *s, const char *part)
{
    for (guint i = 0; i < s->warnings->len; i++)
        if (strstr(g_ptr_array_index(s->warnings, i), part))
            return true;
    return false;
}

static guint present(const ImportSet *s)
{
    guint n = 0;
    for (guint i = 0; i < s->ranks->len; i++)
        n += rank(s, i)->present;
    return n;
}

#define WD(prefix, work)                                                                           \
    prefix "Watchdog caught collective operation timeout: " work                                   \
           " ran for 600061 milliseconds before timing out.\n"

/* ---- watchdog lines ---- */

Test(watchdog, newest_form_gives_the_head_of_line_call)
{
    ImportSet *s = one(WD("[rank3]:[E1202 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [PG ID 2 "
                          "PG GUID 9(tp) Rank 3] ",
                          "WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=800, "
                          "NumelOut=100, Timeout(ms)=600000)"));
    cr_assert_eq(s->ranks->len, 4);
    cr_assert_eq(present(s), 1);
    const ImportEntry *e = entry(s, 3, 0);
    cr_assert_eq(e->seq, 7753);
    cr_assert_eq(e->kind, SCHED_OP_REDUCE_SCATTER);
    cr_assert_eq(e->count, 800);
    cr_assert_eq(e->count_out, 100);
    cr_assert_eq(e->state, IMPORT_STATE_STARTED);
    cr_assert_eq(e->timeout_ms, 600000);
    cr_assert_str_eq(e->name, "_REDUCE_SCATTER_BASE");
    cr_assert_not(e->dtype_known);
    cr_assert_str_eq(e->source, "job.log:1");
    const ImportGroup *g = group(s, e->group);
    cr_assert_str_eq(g->name, "9");
    cr_assert_str_eq(g->desc, "tp");
    cr_assert(g->inferred);
    cr_assert_eq(g->size, 8, "RS: NumelIn / NumelOut");
    cr_assert_eq(s->findings->len, 1);
    const ImportFinding *f = finding(s, 0);
    cr_assert_eq(f->kind, IMPORT_FINDING_TIMEOUT);
    cr_assert_eq(f->rank, 3);
    cr_assert_eq(f->group, (int32_t)e->group);
    cr_assert_eq(f->seq, 7753);
    cr_assert(g_str_has_prefix(f->text, "[PG ID 2 PG GUID 9(tp) Rank 3] Watchdog caught"), "%s",
              f->text);
    cr_assert_eq(s->format, IMPORT_FORMAT_WATCHDOG);
    cr_assert(rank(s, 3)->evidence && strstr(rank(s, 3)->evidence, "watchdog"));
    import_set_free(s);
}

Test(watchdog, three_status_wordings_and_pairing)
{
    ImportSet *s = one(
        /* ~2.5-2.7: the verdict names no PG; the status line at the same work does */
        WD("[rank0]:[E1206 18:44:12.7 ProcessGroupNCCL.cpp:607] [Rank 0] ",
           "WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000)")
        "[rank0]:[E1206 18:44:12.7 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an "
        "error or timeout) detected by watchdog at work: 7753, last enqueued NCCL work: 7755, "
        "last completed NCCL work: 7752.\n"
        /* ~2.3-2.4 */
        "[rank1]:[E1206 18:44:12.7 ProcessGroupNCCL.cpp:1664] [PG 0 Rank 1] Timeout at NCCL work: "
        "1, last enqueued NCCL work: 1, last completed NCCL work: -1.\n"
        /* newest, with the double space of an empty desc */
        "[rank2]:[E822 16:31:16.1 ProcessGroupNCCL.cpp:2271] [PG ID 4 PG GUID 67 Rank 0]  failure "
        "detected by watchdog at work sequence id: 5730 PG status: last enqueued work: 6464, last "
        "completed work: 5729\n");
    const ImportEntry *e = entry(s, 0, 0);
    cr_assert_str_eq(group(s, e->group)->name, "1");
    const ImportPgStatus *p = status(s, 0, 0);
    cr_assert_eq(p->group, e->group);
    cr_assert_eq(p->last_enqueued, 7755);
    cr_assert_eq(p->last_completed, 7752);
    cr_assert_str_eq(p->source, "job.log:2");
    p = status(s, 1, 0);
    cr_assert_str_eq(group(s, p->group)->name, "0");
    cr_assert_eq(p->last_enqueued, 1);
    cr_assert_eq(p->last_completed, 0, "-1: nothing completed");
    p = status(s, 2, 0);
    cr_assert_str_eq(group(s, p->group)->name, "67");
    cr_assert_eq(p->last_enqueued, 6464);
    cr_assert_eq(p->last_completed, 5729);
    cr_assert_eq(rank(s, 2)->entries->len, 0);
    import_set_free(s);
}

Test(watchdog, dump_signal_gives_pg0_counters_and_a_symptom)
{
    ImportSet *s = one(
        "[rank5]:[E1202 10:00:00.1 ProcessGroupNCCL.cpp:1597] [PG ID 0 PG GUID 0(default_pg) Rank "
        "5] Received a dump signal due to a collective timeout from  rank 3 and we will try our "
        "best to dump the debug info. Last enqueued NCCL work: 77, last completed NCCL work: "
        "77.This is most likely caused by incorrect usages of collectives.\n");
    cr_assert(rank(s, 5)->present);
    cr_assert_eq(rank(s, 5)->entries->len, 0);
    const ImportPgStatus *p = status(s, 5, 0);
    cr_assert_str_eq(group(s, p->group)->name, "0");
    cr_assert_eq(p->last_enqueued, 77);
    cr_assert_eq(p->last_completed, 77);
    cr_assert_eq(count_findings(s, IMPORT_FINDING_SYMPTOM, "dump_signal"), 1);
    cr_assert_eq(finding(s, 0)->rank, 5);
    cr_assert_eq(finding(s, 0)->peer, 3);
    import_set_free(s);
}

Test(watchdog, older_forms_and_hccl)
{
    ImportSet *s = one(
        /* no [rankG]: on PG 0: [Rank R] is the global rank */
        WD("[E1202 10:00:00.1 ProcessGroupNCCL.cpp:475] [Rank 2] ",
           "WorkNCCL(SeqNum=12, OpType=ALLGATHER, Timeout(ms)=1800000)")
        "[E1202 10:00:00.1 ProcessGroupNCCL.cpp:900] [PG 0 Rank 2] Timeout at NCCL work: 12, last "
        "enqueued NCCL work: 12, last completed NCCL work: 11.\n"
        /* torch_npu: no numels; the what() quote of the same verdict is read once */
        WD("[rank1]:[E324 13:00:25.4 compiler_depend.ts:574] [Rank 1] ",
           "WorkHCCL(SeqNum=196, OpType=ALLREDUCE, Timeout(ms)=3600000)")
        "  what():  [Rank 1] HCCL watchdog thread terminated with exception: [Rank 1] Watchdog "
        "caught collective operation timeout: WorkHCCL(SeqNum=196, OpType=ALLREDUCE, "
        "Timeout(ms)=3600000) ran for 3600185 milliseconds before timing out.\n");
    const ImportEntry *e = entry(s, 2, 0);
    cr_assert_eq(e->seq, 12);
    cr_assert_eq(e->kind, SCHED_OP_ALL_GATHER);
    cr_assert_eq(e->count, 0);
    cr_assert_str_eq(group(s, e->group)->name, "0");
    cr_assert_eq(rank(s, 1)->entries->len, 1);
    e = entry(s, 1, 0);
    cr_assert_eq(e->seq, 196);
    cr_assert_eq(e->kind, SCHED_OP_ALL_REDUCE);
    cr_assert_eq(e->timeout_ms, 3600000);
    cr_assert_str_eq(group(s, e->group)->name, "?");
    cr_assert_eq(count_findings(s, IMPORT_FINDING_TIMEOUT, NULL), 2);
    cr_assert(strstr(s->format_detail, "torch_npu"), "%s", s->format_detail);
    import_set_free(s);
}

Test(watchdog, a_verdict_without_pg_takes_the_pg_of_the_same_call)
{
    ImportSet *s = one(WD("[rank0]:[E1 1.1 P.cpp:1] [Rank 0] ",
                          "WorkNCCL(SeqNum=9, OpType=BROADCAST, NumelIn=7, NumelOut=7, "
                          "Timeout(ms)=1)")
                       "[rank0]:[E1 1.1 P.cpp:2] [PG 3 Rank 0] Exception (either an error or "
                       "timeout) detected by watchdog at work: 9, last enqueued NCCL work: 9, last "
                       "completed NCCL work: 8.\n" WD("[rank6]:[E1 1.1 P.cpp:1] [Rank 1] ",
                                                      "WorkNCCL(SeqNum=9, OpType=BROADCAST, "
                                                      "NumelIn=7, NumelOut=7, Timeout(ms)=1)"));
    cr_assert_eq(entry(s, 6, 0)->group, entry(s, 0, 0)->group);
    cr_assert_str_eq(group(s, entry(s, 6, 0)->group)->name, "3");
    const int32_t want[] = {0, 6};
    const ImportGroup *g = group(s, entry(s, 0, 0)->group);
    cr_assert_eq(g->ranks->len, 2);
    cr_assert_arr_eq(g->ranks->data, want, sizeof want);
    cr_assert(has_warning(s, "their PG is that of other ranks' lines for the same call"));
    import_set_free(s);
}

/* ---- NCCL lines without Init lines ---- */

#define COLL(host, pid, dev, op, opc, count, dt, comm, n)                                          \
    host ":" pid ":" pid " [" dev "] NCCL INFO " op ": opCount " opc " sendbuff 0x1 recvbuff "     \
         "0x2 count " count " datatype " dt " op 0 root 0 comm " comm " [nranks=" n "] stream "  \
         "0x3\n"

Test(nccl, coll_without_init_joined_by_nranks_and_devices)
{
    char *msg = NULL;
    ImportSet *s = read_texts(
        IMPORT_FORMAT_AUTO, false, &msg, "r0.log",
        COLL("h", "100", "0", "AllReduce", "28c", "99", "7", "0x55a", "4")
            COLL("h", "100", "0", "AllReduce", "28d", "98", "7", "0x55a", "4"),
        "r2.log",
        COLL("h", "300", "2", "AllGather", "28c", "59", "0", "0x77b", "4")
            COLL("h", "300", "2", "AllGather", "28d", "15", "0", "0x77b", "4"),
        NULL);
    cr_assert_not_null(s, "%s", msg);
    cr_assert_eq(s->ranks->len, 4);
    cr_assert(rank(s, 0)->present && rank(s, 2)->present);
    cr_assert_not(rank(s, 1)->present || rank(s, 3)->present);
    cr_assert_eq(s->groups->len, 1);
    const ImportGroup *g = group(s, 0);
    cr_assert_str_eq(g->name, "comm [nranks=4]");
    cr_assert(g->inferred);
    cr_assert_eq(g->size, 4);
    cr_assert_eq(entry(s, 0, 0)->seq, 1, "seq from opCount 28c");
    cr_assert_eq(entry(s, 0, 1)->seq, 2);
    cr_assert_eq(entry(s, 2, 0)->kind, SCHED_OP_ALL_GATHER);
    cr_assert_eq(entry(s, 2, 0)->count, 59);
    cr_assert_eq(entry(s, 2, 0)->count_out, 59 * 4);
    cr_assert(has_warning(s, "joined without Init lines"));
    cr_assert_str_eq(rank(s, 2)->evidence, "NCCL COLL lines, no Init lines");
    cr_assert(has_warning(s, "numbered by opCount"));
    cr_assert_eq(s->format, IMPORT_FORMAT_NCCL);
    import_set_free(s);
}

Test(nccl, excerpt_positions_when_opcount_does_not_step)
{
    ImportSet *s = one(COLL("h", "1", "0", "AllReduce", "5", "8", "7", "0xa", "2")
                           COLL("h", "1", "0", "AllReduce", "5", "8", "7", "0xa", "2")
                               COLL("h", "2", "1", "AllReduce", "9", "8", "7", "0xb", "2"));
    cr_assert_eq(entry(s, 0, 1)->seq, 2, "positions, not opCount");
    cr_assert_eq(entry(s, 1, 0)->seq, 1);
    cr_assert_not(has_warning(s, "numbered by opCount"));
    import_set_free(s);
}

Test(nccl, several_of_one_size_split_by_first_call)
{
    /* vLLM: a c10d communicator and PyNccl's over the same ranks */
    ImportSet *s = one(COLL("h", "1", "0", "AllReduce", "0", "8", "7", "0xa", "2")
                           COLL("h", "1", "0", "AllGather", "0", "3", "9", "0xc", "2")
                               COLL("h", "2", "1", "AllGather", "0", "3", "9", "0xd", "2")
                                   COLL("h", "2", "1", "AllReduce", "0", "8", "7", "0xb", "2"));
    cr_assert_eq(s->groups->len, 2);
    cr_assert_eq(entry(s, 0, 0)->group, entry(s, 1, 1)->group);
    cr_assert_eq(entry(s, 0, 1)->group, entry(s, 1, 0)->group);
    cr_assert_neq(entry(s, 0, 0)->group, entry(s, 0, 1)->group);
    import_set_free(s);
}

Test(nccl, ambiguous_ones_are_not_joined)
{
    ImportSet *s = one(COLL("h", "1", "0", "AllReduce", "0", "8", "7", "0xa", "2")
                           COLL("h", "1", "0", "AllReduce", "0", "8", "7", "0xc", "2")
                               COLL("h", "2", "1", "AllReduce", "0", "8", "7", "0xb", "2"));
    cr_assert_eq(s->groups->len, 0);
    cr_assert(has_warning(s, "could not be joined"));
    import_set_free(s);
}

Test(nccl, bare_line_takes_its_process_by_pointer)
{
    ImportSet *s = one(
        COLL("lf", "10", "0", "Broadcast", "0", "53", "4", "0x7f0", "2")
            COLL("lf", "11", "1", "Broadcast", "0", "53", "4", "0x7f1", "2")
        "Broadcast: opCount 1 sendbuff 0x1 recvbuff 0x1 count 9 datatype 6 op 0 root 0 comm 0x7f1 "
        "[nranks=2] stream 0x2\n"
        /* two processes in one line: the text is the second one's */
        "lf:10:10 [0] NCCL INFO lf:10:10 [0] NCCL INFO Broadcast: opCount 1 sendbuff 0x1 recvbuff "
        "0x1 count 9 datatype 6 op 0 root 0 comm 0x7f0 [nranks=2] stream 0x2\n"
        "Broadcast: opCount 0 sendbuff 0x1 recvbuff 0x1 count 9 datatype 6 op 0 root 0 comm 0x999 "
        "[nranks=2] stream 0x2\n");
    cr_assert_eq(rank(s, 1)->entries->len, 2);
    cr_assert_eq(entry(s, 1, 1)->seq, 2);
    cr_assert_eq(entry(s, 1, 1)->count, 9);
    cr_assert_eq(rank(s, 0)->entries->len, 2);
    cr_assert(has_warning(s, "lost their HOST:PID:TID [DEV] prefix"));
    import_set_free(s);
}

Test(nccl, init_lines_only_give_no_calls)
{
    ImportSet *s = one("h:1:1 [0] NCCL INFO comm 0x10 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1 "
                       "commId 0xab - Init START\n"
                       "h:2:2 [1] NCCL INFO comm 0x20 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2 "
                       "commId 0xab - Init START\n" WD("[rank0]:[E1 1.1 P.cpp:1] [PG 0 Rank 0] ",
                                                       "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
                                                       "NumelIn=1, NumelOut=1, Timeout(ms)=1)"));
    cr_assert_eq(s->ranks->len, 2, "the world's ranks");
    cr_assert_not(rank(s, 1)->present, "an Init line is no call record");
    const ImportGroup *g = group(s, entry(s, 0, 0)->group);
    cr_assert_str_eq(g->name, "0");
    cr_assert_eq(g->ranks->len, 2, "PG 0 is the world the Init lines size");
    cr_assert_eq(g->size, 2);
    cr_assert(has_warning(s, "Init lines but no COLL line"));
    cr_assert_eq(s->format, IMPORT_FORMAT_LOGS);
    import_set_free(s);
}

/* ---- NCCL WARN, CANN, vLLM ---- */

Test(findings, nccl_warn_lines)
{
    ImportSet *s = one(
        "node-1:39719:39719 [3] init.cu:1197 NCCL WARN Mismatched collective detected, please "
        "check your collective calls at and around rank 11. You can use NCCL_DEBUG=INFO\n"
        "node-2:1:2 [0] transport/net_ib.cc:1000 NCCL WARN NET/IB : Got completion from peer "
        "10.0.0.2<1234> with error 12, opcode 0, len 0, vendor err 129 (Recv) collective "
        "mismatch error, local size 1024 remote size 2048\n"
        "node-2:1:2 [0] misc/socket.cc:50 NCCL WARN Net : Call to recv from 10.0.0.3 failed : "
        "message truncated\n");
    cr_assert_eq(s->findings->len, 3);
    cr_assert_str_eq(finding(s, 0)->what, "mismatch");
    cr_assert_eq(finding(s, 0)->peer, 11);
    cr_assert_str_eq(finding(s, 1)->what, "size");
    cr_assert(strstr(finding(s, 1)->text, "local size 1024 remote size 2048"));
    cr_assert_str_eq(finding(s, 2)->what, "truncated");
    cr_assert_str_eq(finding(s, 2)->source, "job.log:3");
    cr_assert_eq(present(s), 0, "a WARN line is no call record");
    import_set_free(s);
}

Test(findings, cann_ei0002_one_line_and_spread)
{
    ImportSet *s = one(
        "[ERROR] HCCL(1234,python):2024-01-01 EI0002: The wait execution of the Notify register "
        "times out. Reason: The Notify register has not received the Notify record from remote "
        "rank: [24]. base information: [streamID:[5], taskID[6], tag[AllReduce_group_name_1654], "
        "AlgType(level 0-1-2):[fullmesh-H-D-ring].] group information: [group:[group_name_1654], "
        "user define information[], rankSize[32], rankId[25]]\n"
        "EI0002: The wait execution of the Notify register times out. Reason: The Notify register "
        "has not received the Notify record from remote rank: [unknown].\n"
        "        base information: [streamID:[1], taskID[2], tag[Broadcast_10.0.0.1%eth0_60000_0], "
        "AlgType(level 0-1-2):[fullmesh-H-D-ring].]\n"
        "        group information: [group:[hccl_world_group], user define information[], "
        "rankSize[8], rankId[6].]\n");
    cr_assert_eq(count_findings(s, IMPORT_FINDING_WAIT_EDGE, "notify"), 2);
    const ImportFinding *f = finding(s, 0);
    cr_assert_eq(f->rank, 25);
    cr_assert_eq(f->peer, 24);
    cr_assert_geq(f->group, 0);
    cr_assert_str_eq(group(s, (guint)f->group)->name, "hccl group_name_1654");
    cr_assert_eq(group(s, (guint)f->group)->size, 32);
    f = finding(s, 1);
    cr_assert_eq(f->rank, 6);
    cr_assert_eq(f->peer, -1);
    cr_assert_str_eq(group(s, (guint)f->group)->name, "hccl hccl_world_group");
    cr_assert_eq(s->format, IMPORT_FORMAT_CANN);
    import_set_free(s);
}

Test(findings, vllm_symptoms_folded_per_process)
{
    ImportSet *s = one(
        "(EngineCore_DP1 pid=1455) INFO 05-28 14:44:28 [shm_broadcast.py:681] No available shared "
        "memory broadcast block found in 60 seconds. This typically happens when ...\n"
        "(EngineCore_DP0 pid=1454) INFO 05-28 14:45:27 [shm_broadcast.py:681] No available shared "
        "memory broadcast block found in 60 seconds. This typically happens when ...\n"
        "(EngineCore_DP1 pid=1455) INFO 05-28 14:45:28 [shm_broadcast.py:681] No available shared "
        "memory broadcast block found in 60 seconds. This typically happens when ...\n"
        "ERROR 05-28 14:50:00 [multiproc_executor.py:418] RPC call to execute_model timed out.\n"
        "ERROR 05-28 14:50:01 [multiproc_executor.py:311] Worker proc VllmWorker-2 died "
        "unexpectedly, shutting down executor.\n");
    cr_assert_eq(count_findings(s, IMPORT_FINDING_SYMPTOM, "shm_broadcast"), 2);
    cr_assert_eq(count_findings(s, IMPORT_FINDING_SYMPTOM, "rpc_timeout"), 1);
    cr_assert_eq(count_findings(s, IMPORT_FINDING_SYMPTOM, "worker_died"), 1);
    cr_assert_eq(finding(s, 3)->peer, 2, "the worker that died: VllmWorker-2");
    cr_assert(has_warning(s, "1 repeats of vLLM messages folded"));
    cr_assert_eq(s->format, IMPORT_FORMAT_VLLM);
    import_set_free(s);
}

/* ---- prefixes and damage ---- */

Test(damage, prefixes_colours_labels_and_wrapping)
{
    ImportSet *s = one(
        /* broken ANSI codes (ESC lost), Ray's prefix, a viewer's line number */
        "  12 | \x1b[36m(RayWorkerWrapper pid=4321, ip=10.0.0.2)\x1b[0m [rank1]:[E1 1.1 P.cpp:1] "
        "[1m[PG ID 1 PG GUID 5 Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=10)[0m ran for\n"
        /* srun's label gives the rank where torch's prefix is absent */
        "11: [E1 1.1 P.cpp:1] [PG ID 1 PG GUID 5 Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=10) ran\n"
        /* mpirun's label, a progress bar and a CR in front */
        "[1,6]<stdout>:Loading: 100%|#####| 4/4 [00:01<00:00]\r[E1 1.1 P.cpp:1] [PG ID 1 PG GUID 5 "
        "Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
        "OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=10) ran for 11 ms\n"
        /* hard-wrapped at 60 columns, mid-number */
        "2024-12-06 18:44:12,715 [rank7]:[E1 1.1 P.cpp:1] [PG ID 1 PG GUID 5 Rank 3] Watchdog caug\n"
        "ht collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLR\n"
        "EDUCE, NumelIn=2, NumelOut=2, Timeo\n"
        "ut(ms)=10) ran for 10 ms\n");
    cr_assert_eq(entry(s, 1, 0)->seq, 3);
    cr_assert_str_eq(group(s, entry(s, 1, 0)->group)->name, "5");
    cr_assert_eq(entry(s, 11, 0)->seq, 3);
    cr_assert_eq(entry(s, 6, 0)->seq, 4);
    cr_assert_eq(entry(s, 7, 0)->seq, 3);
    cr_assert_eq(entry(s, 7, 0)->kind, SCHED_OP_ALL_REDUCE);
    cr_assert_eq(entry(s, 7, 0)->timeout_ms, 10);
    cr_assert_eq(present(s), 4);
    for (guint i = 0; i < s->findings->len; i++)
        cr_assert_null(strchr(finding(s, i)->text, '\x1b'));
    cr_assert_not(has_warning(s, "taken as the global rank"));
    import_set_free(s);
}

Test(damage, a_wrapped_coll_line_is_joined)
{
    /* a COLL line wrapped at 80 columns, mid-token; a cut one with nothing after it */
    ImportSet *s = one(COLL("h", "1", "0", "AllReduce", "0", "8", "7", "0xa", "2")
                       "h:1:1 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count 9 dat\n"
                       "atype 7 op 0 root 0 comm 0xa [nra\n"
                       "nks=2] stream 0x3\n" COLL("h", "2", "1", "AllReduce", "0", "8", "7",
                                                   "0xb", "2")
                       "h:2:2 [1] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count\n");
    cr_assert_eq(rank(s, 0)->entries->len, 2);
    cr_assert_eq(entry(s, 0, 1)->count, 9);
    cr_assert_eq(entry(s, 0, 1)->seq, 2);
    cr_assert_str_eq(entry(s, 0, 1)->source, "job.log:2");
    cr_assert_eq(rank(s, 1)->entries->len, 1);
    cr_assert(has_warning(s, "1 malformed NCCL lines (cut or hard-wrapped in the paste) skipped "
                             "(first: job.log:6)"));
    import_set_free(s);
}

Test(damage, a_prefixed_line_that_was_not_wrapped)
{
    /* held as possibly wrapped, then not joined: the next line starts a record of its own */
    ImportSet *s = one("[rank0]:[W1 1.1 P.cpp:1] [PG ID 1 PG GUID 5 Rank 0] a warning\n"
                       "[rank0]:[E1 1.1 P.cpp:1] [PG ID 1 PG GUID 5 Rank 0] Watchdog caught "
                       "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, "
                       "NumelIn=2, NumelOut=2, Timeout(ms)=10) ran\n"
                       "[rank1]:[E1 1.1 P.cpp:1] [PG ID 1 PG GUID 5 Rank 1] Watchdog caught "
                       "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLRED\n"
                       "[rank2]:[E1 1.1 P.cpp:1] [PG ID 1 PG GUID 5 Rank 2] Watchdog caught "
                       "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, "
                       "NumelIn=2, NumelOut=2, Timeout(ms)=10) ran\n");
    cr_assert_eq(entry(s, 0, 0)->seq, 3);
    cr_assert_eq(entry(s, 2, 0)->seq, 3);
    cr_assert_eq(rank(s, 1)->entries->len, 0, "cut and not continued");
    cr_assert(has_warning(s, "1 lines cut before their end"));
    import_set_free(s);
}

Test(damage, two_excerpts_of_one_log)
{
    char *msg = NULL;
    const char *p1 = "h:1:1 [0] NCCL INFO comm 0x10 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1 "
                     "commId 0xab - Init START\n"
                     "h:2:2 [1] NCCL INFO comm 0x20 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2 "
                     "commId 0xab - Init START\n";
    const char *p2 = "h:1:1 [0] NCCL INFO comm 0x10 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1 "
                     "commId 0xab - Init COMPLETE\n" COLL("h", "1", "0", "AllReduce", "0", "8",
                                                          "7", "0x10", "2")
                         COLL("h", "2", "1", "AllReduce", "0", "8", "7", "0x20", "2")
                             WD("[rank0]:[E1 1.1 P.cpp:1] [PG 0 Rank 0] ",
                                "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                                "Timeout(ms)=1)");
    ImportSet *s = read_texts(IMPORT_FORMAT_AUTO, true, &msg, "part1.log", p1, "part2.log", p2,
                              "part3.log", p2, NULL);
    cr_assert_not_null(s, "%s", msg);
    cr_assert_eq(rank(s, 0)->entries->len, 2, "one COLL entry, one watchdog entry");
    cr_assert_eq(rank(s, 1)->entries->len, 1);
    cr_assert_str_eq(group(s, entry(s, 0, 0)->group)->name, "comm 0xab");
    cr_assert(has_warning(s, "the same bytes as"));
    import_set_free(s);
    /* the same two files outside excerpts: one process with other lines in two files */
    cr_assert_null(read_texts(IMPORT_FORMAT_NCCL, false, &msg, "part1.log", p1, "part2.log", p2,
                              NULL));
    cr_assert(strstr(msg, "logs of different jobs mixed"), "%s", msg);
    g_free(msg);
}

Test(damage, none_of_the_formats)
{
    char *msg = NULL;
    cr_assert_null(read_texts(IMPORT_FORMAT_WATCHDOG, true, &msg, "notes.txt",
                              "hello\nthe job hung, see `Watchdog caught collective operation "
                              "timeout: WorkNCCL(SeqNum=1, OpType=X)`\n",
                              NULL));
    cr_assert(g_str_has_prefix(msg, "notes.txt: nothing read: no Flight Recorder dump"), "%s",
              msg);
    cr_assert(strstr(msg, "--format fr|nccl|hccl|watchdog|cann|vllm|logs"));
    g_free(msg);
    /* through import_read: detection refuses it before reading */
    g_autofree char *dir = g_dir_make_tmp("ranksim-logs-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "x.txt", NULL);
    cr_assert(g_file_set_contents(path, "just text\n", -1, NULL));
    const char *paths[] = {path};
    GError *err = NULL;
    cr_assert_null(import_read(paths, 1, IMPORT_FORMAT_AUTO, &err));
    cr_assert(strstr(err->message, "x.txt: no Flight Recorder dump"), "%s", err->message);
    cr_assert_null(strchr(err->message, '\n'));
    g_error_free(err);
    g_unlink(path);
    g_rmdir(dir);
}

Test(damage, hostile_input_is_bounded)
{
    /* cut verdicts forever, long lines, junk bytes, huge numbers: no crash, linear time */
    GString *t = g_string_new(NULL);
    for (int i = 0; i < 20000; i++)
        g_string_append(t, "[rank1]:Watchdog caught collective operation timeout: WorkNCCL(SeqNum=");
    g_string_append_c(t, '\n');
    for (int i = 0; i < 2000; i++)
        g_string_append(t, "[rank99999999999999999999]: [PG ID 1 PG GUID \x01\xff Rank 9] Watchdog "
                           "caught collective operation timeout: WorkNCCL(SeqNum=99999999999999999"
                           "9999, OpType=A)\n\x1b[\x1b[[[[[m EI0002 remote rank: [-5] rankId[\n");
    for (int i = 0; i < 2000; i++)
        g_string_append(t, "Broadcast: opCount ffffffffffffffffff sendbuff 0x1 recvbuff 0x1 count "
                           "1 datatype 1 op 0 root 0 comm 0x1 [nranks=0] stream 0x1\n");
    char *msg = NULL;
    ImportSet *s = read_texts(IMPORT_FORMAT_AUTO, true, &msg, "junk.log", t->str, NULL);
    g_string_free(t, TRUE);
    if (s) {
        for (guint i = 0; i < s->ranks->len; i++)
            cr_assert_eq(rank(s, i)->entries->len, 0);
        import_set_free(s);
    }
    g_free(msg);
}

/* ---- the real reports (../shared/real/hangs/) ---- */

/* Reads FOLDER's files (relative to hangs/), or skips naming the folder when it is absent. */
static ImportSet *real(const char *folder, const char *const *files, guint n)
{
    g_autofree char *dir = g_build_filename(HANGS, folder, NULL);
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR))
        cr_skip_test("%s is absent (the shared real hang reports are not here)", dir);
    g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < n; i++)
        g_ptr_array_add(paths, g_build_filename(dir, files[i], NULL));
    GError *err = NULL;
    ImportSet *s = import_read((const char *const *)paths->pdata, n, IMPORT_FORMAT_AUTO, &err);
    cr_assert_not_null(s, "%s: %s", folder, err ? err->message : "");
    return s;
}

Test(real, llamafactory_6269)
{
    const char *f[] = {"pasted.log"};
    ImportSet *s = real("llamafactory-6269", f, 1);
    cr_assert_eq(present(s), 3);
    const int32_t ranks[] = {0, 3, 4};
    for (guint i = 0; i < 3; i++) {
        const ImportEntry *e = entry(s, (guint)ranks[i], 0);
        cr_assert_eq(e->seq, 7753);
        cr_assert_eq(e->kind, SCHED_OP_REDUCE_SCATTER);
        cr_assert_eq(e->count, 544997376);
        cr_assert_str_eq(group(s, e->group)->name, "1");
        cr_assert_eq(group(s, e->group)->size, 8);
    }
    cr_assert_eq(status(s, 0, 0)->last_enqueued, 7755);
    cr_assert_eq(status(s, 4, 0)->last_completed, 7752);
    cr_assert_eq(rank(s, 3)->pg_status->len, 0, "rank 3's status line is not in the excerpt");
    cr_assert_eq(count_findings(s, IMPORT_FINDING_TIMEOUT, "watchdog"), 3);
    import_set_free(s);
}

Test(real, nccl_147)
{
    const char *f[] = {"pasted.log"};
    ImportSet *s = real("nccl-147", f, 1);
    cr_assert_eq(s->ranks->len, 8);
    cr_assert_eq(s->groups->len, 1);
    cr_assert(group(s, 0)->inferred);
    cr_assert_eq(group(s, 0)->size, 8);
    const int32_t seen[] = {0, 1, 5, 7};
    for (guint i = 0; i < 4; i++)
        cr_assert(rank(s, (guint)seen[i])->present, "rank %d", seen[i]);
    cr_assert_eq(present(s), 4);
    cr_assert_eq(rank(s, 1)->entries->len, 2);
    cr_assert_eq(entry(s, 1, 1)->seq, 2);
    cr_assert_eq(entry(s, 7, 0)->count, 53, "the line two processes wrote is rank 7's");
    cr_assert_eq(entry(s, 0, 0)->count, 25503912);
    cr_assert(has_warning(s, "lost their HOST:PID:TID [DEV] prefix"));
    import_set_free(s);
}

Test(real, nccl_214)
{
    const char *f[] = {"pasted.log"};
    ImportSet *s = real("nccl-214", f, 1);
    cr_assert_eq(count_findings(s, IMPORT_FINDING_WARN, "mismatch"), 4);
    int32_t peers = 0;
    for (guint i = 0; i < s->findings->len; i++)
        peers += finding(s, i)->peer;
    cr_assert_eq(peers, 11 + 15 + 9 + 13);
    cr_assert_eq(present(s), 0, "no call was logged");
    import_set_free(s);
}

Test(real, rccl_429)
{
    const char *f[] = {"split/rank0.log", "split/rank2.log"};
    ImportSet *s = real("rccl-429", f, 2);
    cr_assert_eq(s->ranks->len, 4);
    cr_assert_eq(present(s), 2);
    cr_assert_eq(entry(s, 0, 0)->kind, SCHED_OP_ALL_REDUCE);
    cr_assert_eq(entry(s, 2, 0)->kind, SCHED_OP_ALL_GATHER);
    cr_assert_eq(entry(s, 2, 0)->seq, 1);
    cr_assert_eq(entry(s, 2, 1)->seq, 2);
    cr_assert_eq(entry(s, 0, 0)->group, entry(s, 2, 0)->group);
    cr_assert_eq(group(s, 0)->size, 4);
    import_set_free(s);
    /* the comment as published reads the same */
    const char *c[] = {"comment.txt"};
    s = real("rccl-429", c, 1);
    cr_assert_eq(present(s), 2);
    cr_assert_eq(entry(s, 2, 1)->count, 15360);
    import_set_free(s);
}

Test(real, vllm_23448)
{
    const char *f[] = {"pasted.log"};
    ImportSet *s = real("vllm-23448", f, 1);
    cr_assert_eq(entry(s, 0, 0)->seq, 5730);
    cr_assert_eq(entry(s, 3, 0)->seq, 5729);
    cr_assert_eq(entry(s, 0, 0)->kind, SCHED_OP_BROADCAST);
    cr_assert_str_eq(group(s, entry(s, 3, 0)->group)->name, "67");
    cr_assert_eq(entry(s, 0, 0)->group, entry(s, 3, 0)->group);
    cr_assert_eq(status(s, 0, 0)->last_completed, 5729);
    cr_assert_eq(status(s, 3, 0)->last_completed, 5728);
    cr_assert_eq(status(s, 3, 0)->last_enqueued, 6464);
    import_set_free(s);
}

Test(real, vllm_44185)
{
    const char *f[] = {"pasted.log"};
    ImportSet *s = real("vllm-44185", f, 1);
    cr_assert_eq(count_findings(s, IMPORT_FINDING_SYMPTOM, "shm_broadcast"), 2, "one per DP "
                                                                                 "engine");
    cr_assert_eq(present(s), 0);
    cr_assert_eq(s->format, IMPORT_FORMAT_VLLM);
    import_set_free(s);
}

static void check_8978(ImportSet *s)
{
    for (guint r = 0; r < 3; r++) {
        const ImportEntry *e = entry(s, r, 0);
        cr_assert_eq(e->seq, 1);
        cr_assert_eq(e->count, 128);
        const ImportGroup *g = group(s, e->group);
        cr_assert_str_eq(g->name, "0");
        cr_assert_str_eq(g->desc, "default_pg");
        cr_assert_eq(g->ranks->len, 4, "the world the Init lines name");
    }
    cr_assert_eq(status(s, 0, 0)->last_completed, 0);
    cr_assert_eq(present(s), 3);
}

Test(real, vllm_8978)
{
    const char *f[] = {"part1.log", "part2.log"};
    ImportSet *s = real("vllm-8978", f, 2);
    check_8978(s);
    import_set_free(s);
    const char *j[] = {"joined/pasted.log"};
    s = real("vllm-8978", j, 1);
    check_8978(s);
    import_set_free(s);
}

Test(real, vllm_ascend_382)
{
    const char *f[] = {"pasted.log"};
    ImportSet *s = real("vllm-ascend-382", f, 1);
    cr_assert_eq(present(s), 1);
    cr_assert_eq(rank(s, 1)->entries->len, 1);
    cr_assert_eq(entry(s, 1, 0)->seq, 196);
    cr_assert_eq(entry(s, 1, 0)->timeout_ms, 3600000);
    cr_assert_eq(count_findings(s, IMPORT_FINDING_TIMEOUT, NULL), 1);
    import_set_free(s);
}
