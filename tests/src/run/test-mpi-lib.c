/* tests/src/run/test-mpi-lib.c — MPI is loaded when `sweep --mpi` starts, not when ranksim
 * starts (src/run/mpi-lib.h): every function and predefined handle of the table is found in
 * libmpi, a second call gives the same table, the library is bound globally (Open MPI's
 * components resolve its symbols from the global scope), and the ranksim binary does not name
 * libmpi among the libraries the dynamic loader maps at start (its DT_NEEDED entries, read with
 * ldd). In a build without MPI (-Dmpi=disabled) only the last holds; the others skip. No MPI
 * function is called: MPI_Init belongs to mpirun's processes (tests/e2e/sweep-mpi.sh). */
#include <criterion/criterion.h>
#include <glib.h>
#include <stddef.h>
#include <string.h>

#if RANKSIM_HAVE_MPI
#include <gmodule.h>

#include "../../../src/run/mpi-lib.h"

Test(mpi_lib, every_entry_is_found_once)
{
    g_autoptr(GError) err = NULL;
    const MpiLib *a = mpi_lib(&err);
    cr_assert_not_null(a, "%s", err ? err->message : "");
    const size_t nfn = offsetof(MpiLib, comm_world) / sizeof(void (*)(void));
    cr_assert_eq(nfn, 8, "the table's functions come before its handles");
    void *fns[8];
    memcpy(fns, a, sizeof fns);
    for (size_t i = 0; i < nfn; i++)
        cr_assert_not_null(fns[i], "function %zu", i);
    /* a handle is a pointer (Open MPI) or a non-zero integer (MPICH): never 0 */
    cr_assert(a->comm_world != (MPI_Comm)0);
    cr_assert(a->byte != (MPI_Datatype)0);
    cr_assert(a->uint32 != (MPI_Datatype)0);
    cr_assert(a->byte != a->uint32);
    cr_assert(a->errors_return != (MPI_Errhandler)0);
    cr_assert_eq(mpi_lib(NULL), a);
}

Test(mpi_lib, bound_globally)
{
    const MpiLib *a = mpi_lib(NULL);
    cr_assert_not_null(a);
    /* the process's global scope (what a component dlopen-ed later resolves against) has
     * libmpi's MPI_Send, and it is the table's */
    GModule *self = g_module_open(NULL, 0);
    cr_assert_not_null(self);
    gpointer send = NULL;
    cr_assert(g_module_symbol(self, "MPI_Send", &send) && send,
              "MPI_Send is not in the global scope: libmpi was opened locally");
    void *table_send = NULL;
    memcpy(&table_send, &a->send, sizeof table_send);
    cr_assert_eq(send, table_send);
#if defined(OPEN_MPI)
    gpointer world = NULL;
    cr_assert(g_module_symbol(self, "ompi_mpi_comm_world", &world));
    cr_assert_eq((MPI_Comm)world, a->comm_world);
#endif
    g_module_close(self);
}
#else
Test(mpi_lib, skipped)
{
    cr_skip_test("built without MPI (-Dmpi=disabled or no Open MPI found)");
}
#endif

Test(mpi_lib, ranksim_does_not_map_mpi_at_start)
{
    g_autofree char *out = NULL;
    int status = 0;
    const char *argv[] = {"ldd", RANKSIM_BINARY, NULL};
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                      NULL, NULL, &out, NULL, &status, NULL))
        cr_skip_test("ldd is not available");
    cr_assert_not_null(strstr(out, "libglib-2.0"), "%s", out);
    cr_assert_null(strstr(out, "libmpi"), "%s", out);
    cr_assert_null(strstr(out, "libopen-pal"), "%s", out);
}
