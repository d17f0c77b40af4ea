/* src/output/cairo-lib.c — cairo loaded on first use; see cairo-lib.h. */
#include "cairo-lib.h"

#include "../util/dynlib.h"

#include <gio/gio.h>
#include <gmodule.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The library's soname (cairo's ABI 2, every release since 2005). */
#define CAIRO_SONAME "libcairo.so.2"

/* Each table entry and the symbol that fills it; an optional one (cache clean-up only) may be
 * missing, its entry NULL. */
static const DynlibSymbol entries[] = {
    {"cairo_image_surface_create", offsetof(CairoLib, image_surface_create), false},
    {"cairo_svg_surface_create_for_stream", offsetof(CairoLib, svg_surface_create_for_stream),
     false},
    {"cairo_pdf_surface_create_for_stream", offsetof(CairoLib, pdf_surface_create_for_stream),
     false},
    {"cairo_surface_write_to_png_stream", offsetof(CairoLib, surface_write_to_png_stream), false},
    {"cairo_surface_finish", offsetof(CairoLib, surface_finish), false},
    {"cairo_surface_status", offsetof(CairoLib, surface_status), false},
    {"cairo_surface_destroy", offsetof(CairoLib, surface_destroy), false},
    {"cairo_create", offsetof(CairoLib, create), false},
    {"cairo_destroy", offsetof(CairoLib, destroy), false},
    {"cairo_set_source_rgb", offsetof(CairoLib, set_source_rgb), false},
    {"cairo_rectangle", offsetof(CairoLib, rectangle), false},
    {"cairo_fill", offsetof(CairoLib, fill), false},
    {"cairo_paint", offsetof(CairoLib, paint), false},
    {"cairo_select_font_face", offsetof(CairoLib, select_font_face), false},
    {"cairo_set_font_size", offsetof(CairoLib, set_font_size), false},
    {"cairo_move_to", offsetof(CairoLib, move_to), false},
    {"cairo_line_to", offsetof(CairoLib, line_to), false},
    {"cairo_show_text", offsetof(CairoLib, show_text), false},
    {"cairo_set_line_width", offsetof(CairoLib, set_line_width), false},
    {"cairo_set_dash", offsetof(CairoLib, set_dash), false},
    {"cairo_stroke", offsetof(CairoLib, stroke), false},
    {"cairo_status_to_string", offsetof(CairoLib, status_to_string), false},
    {"cairo_debug_reset_static_data", offsetof(CairoLib, debug_reset_static_data), true},
    {"FcFini", offsetof(CairoLib, fc_fini), true}, /* absent from a cairo built without it */
};

/* What the one load gave: the table, or why there is none. */
typedef struct {
    CairoLib lib;
    char *why; /* NULL: loaded */
} Loaded;

static gpointer load(gpointer data)
{
    Loaded *l = data;
    GModule *m = g_module_open(CAIRO_SONAME, G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
    if (!m) {
        l->why = g_strdup_printf("cannot load cairo (%s): %s; install Debian's libcairo2",
                                 CAIRO_SONAME, g_module_error());
        return l;
    }
    const char *missing = dynlib_fill(m, entries, G_N_ELEMENTS(entries), &l->lib);
    if (missing) {
        l->why = g_strdup_printf("%s has no %s: cairo 1.10 or newer is needed", CAIRO_SONAME,
                                 missing);
        g_module_close(m);
        return l;
    }
    g_module_make_resident(m);
    return l;
}

const CairoLib *cairo_lib(GError **error)
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
