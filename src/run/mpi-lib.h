/* src/run/mpi-lib.h — the MPI library, loaded when `sweep --mpi` starts, not when ranksim does.
 *
 * Linking Open MPI made every ranksim process map it and the 6 libraries it pulls in
 * (libopen-rte, libopen-pal, libhwloc, libevent_core, libevent_pthreads, libudev): ~1.7 ms of a
 * ~9 ms `ranksim --version`, paid by every run for a library only `sweep --mpi` uses. The
 * sweep's dealer (sweep-mpi.c) takes MPI's functions and predefined handles from this table
 * instead, filled on first use from the library's soname. <mpi.h> still gives the types and the
 * integer constants at build time (MPI_SUCCESS, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_STATUS_IGNORE,
 * MPI_THREAD_FUNNELED), so the build still needs the headers (Debian's libopenmpi-dev); the
 * handles that are link-time objects (Open MPI's MPI_COMM_WORLD is the address of
 * `ompi_mpi_comm_world`, ...) come from the table, never from the macros, or the binary would
 * need libmpi at link time again.
 *
 * Binding: libmpi is opened with GLOBAL binding (RTLD_GLOBAL, not G_MODULE_BIND_LOCAL) and made
 * resident. Open MPI loads its MCA components (mca_*.so) with dlopen during MPI_Init, and they
 * rely on libmpi's symbols, so Open MPI's documentation ("Dynamically loading libmpi at
 * runtime", 5.0) requires RTLD_GLOBAL. Not every component names libmpi as a dependency
 * (Debian's 4.1 mca_pml_ob1.so needs only libc), so opened locally, MPI_Init works or not
 * depending on which components it picks (a 2-process sweep here happened to work). Never
 * unloaded: MPI keeps threads and handlers after MPI_Finalize.
 *
 * Loaded once per process (the first call's outcome, success or failure, is kept); thread-safe.
 * Costs: ~2-3 ms of dynamic loading on the first call; nothing afterwards.
 */
#ifndef SRC_RUN_MPI_LIB_H
#define SRC_RUN_MPI_LIB_H

#include <glib.h>
#include <mpi.h>

typedef struct {
    int (*init_thread)(int *argc, char ***argv, int required, int *provided);
    int (*finalize)(void);
    int (*comm_set_errhandler)(MPI_Comm comm, MPI_Errhandler handler);
    int (*comm_rank)(MPI_Comm comm, int *rank);
    int (*comm_size)(MPI_Comm comm, int *size);
    int (*send)(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
    int (*recv)(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                MPI_Status *status);
    int (*iprobe)(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
    /* the predefined handles sweep-mpi.c uses, as MPI_COMM_WORLD etc. would give them */
    MPI_Comm comm_world;
    MPI_Datatype byte;
    MPI_Datatype uint32; /* MPI_UINT32_T */
    MPI_Errhandler errors_return;
} MpiLib;

/* MPI's functions and handles, loaded on the first call; never freed. NULL with `error`
 * (G_IO_ERROR_NOT_FOUND, one line naming the library and the Debian package to install) when
 * the library cannot be loaded or lacks a symbol. */
const MpiLib *mpi_lib(GError **error);

#endif
