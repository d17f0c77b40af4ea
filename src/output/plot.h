/* src/output/plot.h — a picture of a stored run's time line (`ranksim plot`), drawn with cairo.
 *
 * One lane per rank — ranks whose time lines are identical share a lane labelled with their
 * range, so a 1,024-rank run stays readable — with compute, communication (the collective's
 * transfer after its last member arrived), waiting (arrived, others not yet) and blocked (a
 * collective that never completed, drawn to the watchdog's deadline or the run's end) in
 * distinct colours. The culprit ranks' lanes are marked, the instance the hang starts from is
 * a dashed line with each rank's element count, and a time axis runs along the bottom. The
 * format follows the file name: .png, .svg or .pdf. doc/cli.md has the picture's legend.
 */
#ifndef SRC_PLOT_H
#define SRC_PLOT_H

#include <glib.h>
#include <stdbool.h>

#include "../store/store.h"

/* Draws run `r` (its outcome `o`) of store `st` into `path` (written through a temporary file and renamed);
 * `width` in pixels for PNG (points for SVG / PDF), at least 800. Returns false with `error`
 * (G_IO_ERROR for an unwritable file or an unknown extension). */
bool plot_write(Store *st, const StoreRunInfo *r, const SchedOutcome *o, const char *path,
                int width, GError **error);

#endif
