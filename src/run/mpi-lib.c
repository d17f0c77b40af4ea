/* src/run/mpi-lib.c — the MPI library loaded on first use; see mpi-lib.h. */
#include "mpi-lib.h"

#include "../util/dynlib.h"

#include <gio/gio.h>
#include <gmodule.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Which library to open, and what to tell a user who lacks it. A build may define
 * RANKSIM_MPI_SONAME (a string literal) to open another one, e.g. the full path of the libmpi.so
 * of an MPI installed outside the loader's path. */
#if defined(OPEN_MPI)
/* Open MPI's ABI soname since 3.0 (3.x, 4.x and 5.x all ship libmpi.so.40); Debian's package
 * libopenmpi3 holds it (4.1 in bookworm), openmpi-bin holds mpirun. */
#ifndef RANKSIM_MPI_SONAME
#define RANKSIM_MPI_SONAME "libmpi.so.40"
#endif
#define MPI_WHICH "Open MPI"
#define MPI_INSTALL "install Debian's libopenmpi3 / openmpi-bin"
#else
/* Not tested here. MPICH and the MPIs that share its ABI (Intel MPI, MVAPICH) name their
 * library libmpi.so.12 (the MPICH ABI Compatibility Initiative, MPICH 3.1 on), and their
 * predefined handles are integer constants, so the macros below are used as they are. For an
 * MPI whose library has another name, set RANKSIM_MPI_SONAME; for one whose handles are
 * link-time objects like Open MPI's, add its object names as the OPEN_MPI branch of
 * load_handles() does. */
#ifndef RANKSIM_MPI_SONAME
#define RANKSIM_MPI_SONAME "libmpi.so.12"
#endif
#define MPI_WHICH "MPI"
#define MPI_INSTALL "install the MPI ranksim was built with (Debian: libmpich12 / mpich)"
#endif

/* The table's function types must be those <mpi.h> declares (checked without referencing the
 * functions, which would link libmpi again). */
#if defined(__GNUC__)
#define SAME_TYPE(field, fn)                                                                     \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((MpiLib *)0)->field),               \
                                                __typeof__(&fn)),                                \
                   "MpiLib." #field " is not the type of " #fn)
SAME_TYPE(init_thread, MPI_Init_thread);
SAME_TYPE(finalize, MPI_Finalize);
SAME_TYPE(comm_set_errhandler, MPI_Comm_set_errhandler);
SAME_TYPE(comm_rank, MPI_Comm_rank);
SAME_TYPE(comm_size, MPI_Comm_size);
SAME_TYPE(send, MPI_Send);
SAME_TYPE(recv, MPI_Recv);
SAME_TYPE(iprobe, MPI_Iprobe);
#endif

/* Each function entry and the symbol that fills it. */
static const DynlibSymbol functions[] = {
    {"MPI_Init_thread", offsetof(MpiLib, init_thread), false},
    {"MPI_Finalize", offsetof(MpiLib, finalize), false},
    {"MPI_Comm_set_errhandler", offsetof(MpiLib, comm_set_errhandler), false},
    {"MPI_Comm_rank", offsetof(MpiLib, comm_rank), false},
    {"MPI_Comm_size", offsetof(MpiLib, comm_size), false},
    {"MPI_Send", offsetof(MpiLib, send), false},
    {"MPI_Recv", offsetof(MpiLib, recv), false},
    {"MPI_Iprobe", offsetof(MpiLib, iprobe), false},
};

/* What the one load gave: the table, or why there is none. */
typedef struct {
    MpiLib lib;
    char *why; /* NULL: loaded */
} Loaded;

/* The address of `symbol` in `m`, or NULL with l->why set. */
static gpointer need(GModule *m, const char *symbol, Loaded *l)
{
    gpointer p = NULL;
    if (!g_module_symbol(m, symbol, &p) || !p) {
        l->why = g_strdup_printf("cannot use %s (%s): it has no %s; %s", MPI_WHICH,
                                 RANKSIM_MPI_SONAME, symbol, MPI_INSTALL);
        return NULL;
    }
    return p;
}

/* The predefined handles; false with l->why set when one is missing. */
static bool load_handles(GModule *m, Loaded *l)
{
#if defined(OPEN_MPI)
    /* mpi.h: MPI_COMM_WORLD is OMPI_PREDEFINED_GLOBAL(MPI_Comm, ompi_mpi_comm_world), i.e.
     * (MPI_Comm)&ompi_mpi_comm_world; likewise the datatypes and the error handler. */
    gpointer world = need(m, "ompi_mpi_comm_world", l);
    gpointer byte = world ? need(m, "ompi_mpi_byte", l) : NULL;
    gpointer u32 = byte ? need(m, "ompi_mpi_uint32_t", l) : NULL;
    gpointer ret = u32 ? need(m, "ompi_mpi_errors_return", l) : NULL;
    if (!ret)
        return false;
    l->lib.comm_world = (MPI_Comm)world;
    l->lib.byte = (MPI_Datatype)byte;
    l->lib.uint32 = (MPI_Datatype)u32;
    l->lib.errors_return = (MPI_Errhandler)ret;
#else
    (void)m;
    l->lib.comm_world = MPI_COMM_WORLD;
    l->lib.byte = MPI_BYTE;
    l->lib.uint32 = MPI_UINT32_T;
    l->lib.errors_return = MPI_ERRORS_RETURN;
#endif
    return true;
}

static gpointer load(gpointer data)
{
    Loaded *l = data;
    /* GLOBAL binding (no G_MODULE_BIND_LOCAL): Open MPI's components need libmpi's symbols in
     * the global scope (mpi-lib.h). */
    GModule *m = g_module_open(RANKSIM_MPI_SONAME, G_MODULE_BIND_LAZY);
    if (!m) {
        l->why = g_strdup_printf("cannot load %s (%s): %s; %s", MPI_WHICH, RANKSIM_MPI_SONAME,
                                 g_module_error(), MPI_INSTALL);
        return l;
    }
    const char *missing = dynlib_fill(m, functions, G_N_ELEMENTS(functions), &l->lib);
    if (missing) {
        l->why = g_strdup_printf("cannot use %s (%s): it has no %s; %s", MPI_WHICH,
                                 RANKSIM_MPI_SONAME, missing, MPI_INSTALL);
        g_module_close(m);
        return l;
    }
    if (!load_handles(m, l)) {
        g_module_close(m);
        return l;
    }
    g_module_make_resident(m);
    return l;
}

const MpiLib *mpi_lib(GError **error)
{
    static GOnce once = G_ONCE_INIT;
    static Loaded loaded; /* written once, by load(), under `once` */
    const Loaded *l = g_once(&once, load, &loaded);
    if (l->why) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s", l->why);
        return NULL;
    }
    return &l->lib;
}
