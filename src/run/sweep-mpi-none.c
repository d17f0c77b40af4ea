/* src/run/sweep-mpi-none.c — sweep-mpi.h for a ranksim built without MPI (meson found no
 * Open MPI, or -Dmpi=disabled): sweep_mpi_start says what to install; nothing else is ever
 * reached, since there is no SweepMpi to pass. */
#include "sweep-mpi.h"

G_DEFINE_QUARK(ranksim-sweep-mpi-error-quark, sweep_mpi_error)

bool sweep_mpi_available(void)
{
    return false;
}

SweepMpi *sweep_mpi_start(int *argc, char ***argv, GError **error)
{
    (void)argc;
    (void)argv;
    g_set_error(error, SWEEP_MPI_ERROR, SWEEP_MPI_ERROR_UNAVAILABLE,
                "--mpi: this ranksim was built without MPI; install Open MPI (Debian: apt-get "
                "install libopenmpi-dev openmpi-bin) and rebuild (meson setup --reconfigure "
                "BUILD -Dmpi=enabled), or split the sweep with --shard K/N");
    return NULL;
}

int sweep_mpi_rank(const SweepMpi *m)
{
    (void)m;
    g_assert_not_reached();
}

int sweep_mpi_size(const SweepMpi *m)
{
    (void)m;
    g_assert_not_reached();
}

void sweep_mpi_work(SweepMpi *m, const SweepMpiHandlers *h)
{
    (void)m;
    (void)h;
    g_assert_not_reached();
}

void sweep_mpi_deal(SweepMpi *m, guint lo, guint hi, const SweepMpiHandlers *h,
                    SweepMpiStats *stats)
{
    (void)m, (void)lo, (void)hi, (void)h, (void)stats;
    g_assert_not_reached();
}

void sweep_mpi_stop_all(SweepMpi *m)
{
    (void)m;
    g_assert_not_reached();
}

void sweep_mpi_finish(SweepMpi *m)
{
    (void)m;
}
