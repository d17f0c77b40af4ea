/* src/run/sweep-mpi.c — dealing a sweep's variants to MPI processes; see sweep-mpi.h.
 *
 * Messages (tags below), all on MPI_COMM_WORLD:
 *   worker -> 0  READY   (empty)                 first request
 *   worker -> 0  ALIVE   (empty)                 every SWEEP_MPI_ALIVE_S while computing
 *   worker -> 0  RESULT  (u32 index, u64 bytes)  then the bytes in CHUNK messages of at most
 *                                                CHUNK_BYTES (MPI counts are ints); asks for
 *                                                the next variant
 *   0 -> worker  WORK    (u32 index)
 *   0 -> worker  STOP    (empty)
 * A worker's messages reach rank 0 in the order sent (MPI's non-overtaking rule for one
 * sender and one communicator), so a RESULT's chunks directly follow it.
 * Integers travel in the sender's byte order: the ranks of one job run the same binary on
 * one kind of machine (a heterogeneous job is not supported).
 * MPI itself is loaded when the sweep starts (mpi-lib.h): every MPI function and predefined
 * handle comes from the MpiLib table, never from <mpi.h>'s link-time names, which would make
 * the binary link libmpi again (the link fails if one is used).
 */
#include "sweep-mpi.h"

#include "mpi-lib.h"

#include <string.h>

G_DEFINE_QUARK(ranksim-sweep-mpi-error-quark, sweep_mpi_error)

enum {
    TAG_READY = 1,
    TAG_ALIVE,
    TAG_RESULT,
    TAG_CHUNK,
    TAG_WORK,
    TAG_STOP,
};

#define CHUNK_BYTES ((gsize)1 << 30)
#define HEADER_BYTES 12 /* u32 index, u64 size */
#define IDLE_SLEEP_US 1000

struct SweepMpi {
    const MpiLib *mpi; /* loaded, never freed */
    int rank;
    int size;
};

bool sweep_mpi_available(void)
{
    return true;
}

SweepMpi *sweep_mpi_start(int *argc, char ***argv, GError **error)
{
    g_autoptr(GError) why = NULL;
    const MpiLib *mpi = mpi_lib(&why);
    if (!mpi) {
        g_set_error(error, SWEEP_MPI_ERROR, SWEEP_MPI_ERROR_UNAVAILABLE, "--mpi: %s",
                    why->message);
        return NULL;
    }
    int provided = 0;
    if (mpi->init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        g_set_error(error, SWEEP_MPI_ERROR, SWEEP_MPI_ERROR_FAILED,
                    "--mpi: MPI_Init_thread failed; run under mpirun (e.g. mpirun -np 4 "
                    "ranksim sweep --mpi ...)");
        return NULL;
    }
    /* A failed send or receive returns its code instead of aborting the job. */
    mpi->comm_set_errhandler(mpi->comm_world, mpi->errors_return);
    SweepMpi *m = g_new0(SweepMpi, 1);
    m->mpi = mpi;
    mpi->comm_rank(mpi->comm_world, &m->rank);
    mpi->comm_size(mpi->comm_world, &m->size);
    return m;
}

int sweep_mpi_rank(const SweepMpi *m)
{
    return m->rank;
}

int sweep_mpi_size(const SweepMpi *m)
{
    return m->size;
}

void sweep_mpi_finish(SweepMpi *m)
{
    if (!m)
        return;
    m->mpi->finalize();
    g_free(m);
}

/* ---- the worker ---- */

typedef struct {
    const SweepMpiHandlers *h;
    guint index;
    GAsyncQueue *done; /* the result, GBytes* */
} WorkerJob;

static gpointer worker_thread(gpointer p)
{
    WorkerJob *j = p;
    g_async_queue_push(j->done, j->h->work(j->index, j->h->data));
    return NULL;
}

/* Sends `result` of `index` to rank 0: the header, then the chunks. */
static void send_result(const MpiLib *mpi, guint index, GBytes *result)
{
    gsize len = 0;
    const guint8 *bytes = g_bytes_get_data(result, &len);
    guint8 head[HEADER_BYTES];
    guint32 i32 = index;
    guint64 n64 = len;
    memcpy(head, &i32, 4);
    memcpy(head + 4, &n64, 8);
    mpi->send(head, HEADER_BYTES, mpi->byte, 0, TAG_RESULT, mpi->comm_world);
    for (gsize off = 0; off < len; off += CHUNK_BYTES) {
        gsize n = MIN(CHUNK_BYTES, len - off);
        mpi->send(bytes + off, (int)n, mpi->byte, 0, TAG_CHUNK, mpi->comm_world);
    }
}

/* Computes `index` on a thread while this one says it is alive; then sends the result. */
static void work_one(const MpiLib *mpi, guint index, const SweepMpiHandlers *h)
{
    WorkerJob j = {.h = h, .index = index, .done = g_async_queue_new()};
    GThread *t = g_thread_new("ranksim-variant", worker_thread, &j);
    GBytes *result = NULL;
    while (!(result = g_async_queue_timeout_pop(j.done, SWEEP_MPI_ALIVE_S * G_USEC_PER_SEC)))
        mpi->send(NULL, 0, mpi->byte, 0, TAG_ALIVE, mpi->comm_world);
    g_thread_join(t);
    g_async_queue_unref(j.done);
    send_result(mpi, index, result);
    g_bytes_unref(result);
}

void sweep_mpi_work(SweepMpi *m, const SweepMpiHandlers *h)
{
    g_return_if_fail(m->rank > 0);
    const MpiLib *mpi = m->mpi;
    mpi->send(NULL, 0, mpi->byte, 0, TAG_READY, mpi->comm_world);
    for (;;) {
        guint32 index = 0;
        MPI_Status st;
        if (mpi->recv(&index, 1, mpi->uint32, 0, MPI_ANY_TAG, mpi->comm_world, &st) !=
                MPI_SUCCESS ||
            st.MPI_TAG != TAG_WORK)
            return;
        work_one(mpi, index, h);
    }
}

/* ---- the dealer ---- */

typedef enum {
    W_NEW = 0, /* not heard from yet */
    W_WAITING, /* asked for a variant */
    W_BUSY,    /* computing `index` */
    W_STOPPED, /* told to stop */
    W_DEAD,    /* silent too long while busy */
} WorkerState;

typedef struct {
    WorkerState state;
    guint index;     /* W_BUSY (and W_DEAD): the variant it holds */
    gint64 seen_us;  /* monotonic time of its last message */
} Worker;

typedef struct {
    SweepMpi *m;
    Worker *w; /* [size]; [0] unused */
    guint lo, hi, next;
    GQueue redeal;  /* GUINT_TO_POINTER(index): variants of dead workers */
    guint8 *delivered; /* [hi - lo] */
    bool stopped;   /* poll said stop: nothing more is dealt */
    const SweepMpiHandlers *h;
    SweepMpiStats stats;
} Dealer;

static void deliver(Dealer *d, guint index, GBytes *bytes)
{
    if (index < d->lo || index >= d->hi || d->delivered[index - d->lo])
        return; /* a re-dealt variant's second result, or garbage */
    d->delivered[index - d->lo] = 1;
    d->h->result(index, bytes, d->h->data);
}

/* The next variant to deal, or FALSE when none is left (or dealing stopped). */
static bool take_next(Dealer *d, guint *index)
{
    if (d->stopped)
        return false;
    while (!g_queue_is_empty(&d->redeal)) {
        *index = GPOINTER_TO_UINT(g_queue_pop_head(&d->redeal));
        if (!d->delivered[*index - d->lo])
            return true;
    }
    if (d->next >= d->hi)
        return false;
    *index = d->next++;
    return true;
}

/* Receives a RESULT (its header already probed as `st`) and its chunks from that worker. */
static void receive_result(Dealer *d, const MPI_Status *st)
{
    const MpiLib *mpi = d->m->mpi;
    guint8 head[HEADER_BYTES] = {0};
    mpi->recv(head, HEADER_BYTES, mpi->byte, st->MPI_SOURCE, TAG_RESULT, mpi->comm_world,
              MPI_STATUS_IGNORE);
    guint32 index = 0;
    guint64 len = 0;
    memcpy(&index, head, 4);
    memcpy(&len, head + 4, 8);
    guint8 *buf = g_malloc(MAX(len, 1));
    for (guint64 off = 0; off < len; off += CHUNK_BYTES) {
        gsize n = (gsize)MIN(CHUNK_BYTES, len - off);
        mpi->recv(buf + off, (int)n, mpi->byte, st->MPI_SOURCE, TAG_CHUNK, mpi->comm_world,
                  MPI_STATUS_IGNORE);
    }
    g_autoptr(GBytes) bytes = g_bytes_new_take(buf, (gsize)len);
    deliver(d, index, bytes);
}

/* Handles one message from a worker (probed as `st`). */
static void on_message(Dealer *d, const MPI_Status *st)
{
    Worker *w = &d->w[st->MPI_SOURCE];
    w->seen_us = g_get_monotonic_time();
    switch (st->MPI_TAG) {
    case TAG_RESULT:
        receive_result(d, st);
        w->state = W_WAITING;
        return;
    case TAG_READY:
        w->state = W_WAITING;
        break;
    case TAG_ALIVE:
        if (w->state == W_DEAD) /* it was only slow; its variant may come twice */
            w->state = W_BUSY;
        break;
    default:
        break;
    }
    const MpiLib *mpi = d->m->mpi;
    mpi->recv(NULL, 0, mpi->byte, st->MPI_SOURCE, st->MPI_TAG, mpi->comm_world,
              MPI_STATUS_IGNORE);
}

/* Reads every message waiting; returns how many. */
static guint drain(Dealer *d)
{
    const MpiLib *mpi = d->m->mpi;
    guint n = 0;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (mpi->iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, mpi->comm_world, &flag, &st) !=
                MPI_SUCCESS ||
            !flag)
            return n;
        if (st.MPI_SOURCE > 0 && st.MPI_SOURCE < d->m->size)
            on_message(d, &st);
        else /* not a worker's: consume it */
            mpi->recv(NULL, 0, mpi->byte, st.MPI_SOURCE, st.MPI_TAG, mpi->comm_world,
                      MPI_STATUS_IGNORE);
        n++;
    }
}

/* Gives every waiting worker a variant, or STOP when none is left. */
static void deal(Dealer *d)
{
    const MpiLib *mpi = d->m->mpi;
    for (int r = 1; r < d->m->size; r++) {
        Worker *w = &d->w[r];
        if (w->state != W_WAITING)
            continue;
        guint index;
        if (take_next(d, &index)) {
            guint32 i32 = index;
            mpi->send(&i32, 1, mpi->uint32, r, TAG_WORK, mpi->comm_world);
            w->state = W_BUSY;
            w->index = index;
        } else {
            mpi->send(NULL, 0, mpi->byte, r, TAG_STOP, mpi->comm_world);
            w->state = W_STOPPED;
        }
    }
}

/* Declares dead the busy workers silent for SWEEP_MPI_DEAD_S (their variants are dealt
 * again) and those never heard from in that time. */
static void check_dead(Dealer *d)
{
    gint64 now = g_get_monotonic_time();
    for (int r = 1; r < d->m->size; r++) {
        Worker *w = &d->w[r];
        if ((w->state != W_BUSY && w->state != W_NEW) ||
            now - w->seen_us < SWEEP_MPI_DEAD_S * G_USEC_PER_SEC)
            continue;
        bool held = w->state == W_BUSY;
        w->state = W_DEAD;
        if (!held) /* never asked for work (it could not start): nothing to deal again */
            continue;
        d->stats.died++;
        if (d->h->dead)
            d->h->dead(r, w->index, d->h->data);
        if (!d->delivered[w->index - d->lo]) {
            g_queue_push_tail(&d->redeal, GUINT_TO_POINTER(w->index));
            d->stats.redealt++;
        }
    }
}

/* Workers that may still send or wait: not stopped, not dead. */
static guint live_workers(const Dealer *d, bool busy_only)
{
    guint n = 0;
    for (int r = 1; r < d->m->size; r++) {
        WorkerState s = d->w[r].state;
        n += busy_only ? s == W_BUSY : (s != W_STOPPED && s != W_DEAD);
    }
    return n;
}

/* With no worker left to deal to, rank 0 computes one variant itself. */
static bool work_alone(Dealer *d)
{
    guint index;
    if (live_workers(d, false) > 0 || !take_next(d, &index))
        return false;
    g_autoptr(GBytes) bytes = d->h->work(index, d->h->data);
    d->stats.by_rank0++;
    deliver(d, index, bytes);
    return true;
}

void sweep_mpi_deal(SweepMpi *m, guint lo, guint hi, const SweepMpiHandlers *h,
                    SweepMpiStats *stats)
{
    g_return_if_fail(m->rank == 0 && lo <= hi);
    Dealer d = {
        .m = m,
        .w = g_new0(Worker, m->size),
        .lo = lo,
        .hi = hi,
        .next = lo,
        .delivered = g_new0(guint8, MAX(hi - lo, 1)),
        .h = h,
        .stats = {.workers = (guint)m->size - 1},
    };
    g_queue_init(&d.redeal);
    gint64 t0 = g_get_monotonic_time();
    for (int r = 1; r < m->size; r++)
        d.w[r].seen_us = t0;
    for (;;) {
        if (!d.stopped && h->poll(h->data))
            d.stopped = true;
        guint got = drain(&d);
        deal(&d);
        check_dead(&d);
        if (work_alone(&d))
            continue;
        bool left = !d.stopped && (d.next < d.hi || !g_queue_is_empty(&d.redeal));
        if (!left && live_workers(&d, true) == 0)
            break;
        if (!got)
            g_usleep(IDLE_SLEEP_US);
    }
    /* Those not heard from yet (or waiting) are told to stop; the dead are not written to. */
    for (int r = 1; r < m->size; r++)
        if (d.w[r].state == W_NEW || d.w[r].state == W_WAITING)
            m->mpi->send(NULL, 0, m->mpi->byte, r, TAG_STOP, m->mpi->comm_world);
    if (stats)
        *stats = d.stats;
    g_queue_clear(&d.redeal);
    g_free(d.delivered);
    g_free(d.w);
}

void sweep_mpi_stop_all(SweepMpi *m)
{
    g_return_if_fail(m->rank == 0);
    for (int r = 1; r < m->size; r++)
        m->mpi->send(NULL, 0, m->mpi->byte, r, TAG_STOP, m->mpi->comm_world);
}
