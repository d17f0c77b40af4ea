/* src/output/cairo-lib.h — cairo, loaded when a picture is drawn, not when ranksim starts.
 *
 * Linking cairo made every ranksim process map it and the 17 libraries it pulls in (fontconfig,
 * freetype, pixman, X11, ...): 11.6 ms of dynamic loading at each start, for a library only
 * `plot` uses — a third of a 1,024-rank run's CPU time (doc/performance.md). The plotter takes
 * cairo's functions from this table instead, filled on first use from libcairo.so.2 (Debian's
 * libcairo2; cairo's headers give the types at build time). Loaded once per process and never
 * unloaded; thread-safe.
 */
#ifndef SRC_OUTPUT_CAIRO_LIB_H
#define SRC_OUTPUT_CAIRO_LIB_H

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <glib.h>

typedef struct {
    cairo_surface_t *(*image_surface_create)(cairo_format_t, int, int);
    cairo_surface_t *(*svg_surface_create_for_stream)(cairo_write_func_t, void *, double, double);
    cairo_surface_t *(*pdf_surface_create_for_stream)(cairo_write_func_t, void *, double, double);
    cairo_status_t (*surface_write_to_png_stream)(cairo_surface_t *, cairo_write_func_t, void *);
    void (*surface_finish)(cairo_surface_t *);
    cairo_status_t (*surface_status)(cairo_surface_t *);
    void (*surface_destroy)(cairo_surface_t *);
    cairo_t *(*create)(cairo_surface_t *);
    void (*destroy)(cairo_t *);
    void (*set_source_rgb)(cairo_t *, double, double, double);
    void (*rectangle)(cairo_t *, double, double, double, double);
    void (*fill)(cairo_t *);
    void (*paint)(cairo_t *);
    void (*select_font_face)(cairo_t *, const char *, cairo_font_slant_t, cairo_font_weight_t);
    void (*set_font_size)(cairo_t *, double);
    void (*move_to)(cairo_t *, double, double);
    void (*line_to)(cairo_t *, double, double);
    void (*show_text)(cairo_t *, const char *);
    void (*set_line_width)(cairo_t *, double);
    void (*set_dash)(cairo_t *, const double *, int, double);
    void (*stroke)(cairo_t *);
    const char *(*status_to_string)(cairo_status_t);
    /* cache clean-up for a leak checker; NULL when the library lacks them */
    void (*debug_reset_static_data)(void);
    void (*fc_fini)(void); /* fontconfig's FcFini, from cairo's own dependencies */
} CairoLib;

/* cairo's functions, loaded on the first call; NULL with `error` (G_IO_ERROR_NOT_FOUND, one
 * line naming the library and the package) when it cannot be loaded. */
const CairoLib *cairo_lib(GError **error);

#endif
