/* tests/src/output/test-cairo-lib.c — cairo is loaded when a picture is drawn, not when ranksim
 * starts (src/output/cairo-lib.h): every function of the table is found in libcairo.so.2, a
 * second call gives the same table (the two clean-up entries may be NULL elsewhere; Debian's
 * cairo has them), and the ranksim binary does not name libcairo among the
 * libraries the dynamic loader maps at start (its ELF DT_NEEDED entries, read with ldd). */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>

#include "../../../src/output/cairo-lib.h"

Test(cairo_lib, every_function_is_found_once)
{
    g_autoptr(GError) err = NULL;
    const CairoLib *a = cairo_lib(&err);
    cr_assert_not_null(a, "%s", err ? err->message : "");
    void *fns[sizeof(CairoLib) / sizeof(void (*)(void))];
    cr_assert_eq(sizeof fns, sizeof(CairoLib));
    memcpy(fns, a, sizeof fns);
    for (size_t i = 0; i < G_N_ELEMENTS(fns); i++)
        cr_assert_not_null(fns[i], "entry %zu", i);
    cr_assert_eq(cairo_lib(NULL), a);
    cr_assert_str_eq(a->status_to_string(CAIRO_STATUS_SUCCESS), "no error has occurred");
}

Test(cairo_lib, ranksim_does_not_map_cairo_at_start)
{
    g_autofree char *out = NULL;
    int status = 0;
    const char *argv[] = {"ldd", RANKSIM_BINARY, NULL};
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                      NULL, NULL, &out, NULL, &status, NULL))
        cr_skip_test("ldd is not available");
    cr_assert_not_null(strstr(out, "libglib-2.0"), "%s", out);
    cr_assert_null(strstr(out, "libcairo"), "%s", out);
    cr_assert_null(strstr(out, "libfontconfig"), "%s", out);
}
