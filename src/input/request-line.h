/* src/input/request-line.h — the common line of a JSON-lines request trace read without a JSON
 * parser: one flat object whose every value is a number, such as
 * {"arrival_s": 0.25, "prompt": 1024, "output": 128}.
 *
 * ranksim's own trace reader (src/input/scenario-requests.c) parses each line with json-glib
 * (sched/json-bounded.h), which costs microseconds a line: a 10^6-line trace spent seconds
 * there. This reader takes only the shape it can read exactly as that path reads it, and gives
 * up on everything else, so the caller parses that line with json-glib as before: every error
 * message and every other line's result stay json-glib's.
 *
 * Taken: optional JSON whitespace (space, tab, CR), '{', members separated by ',', '}', nothing
 * after it. A member is a key of printable ASCII without escapes and not empty, ':', and a
 * number of JSON's grammar (RFC 8259 section 6). Given up on (returns false): any other value
 * (string, true, false, null, array, object), an escape, a control or non-ASCII byte or an
 * empty key, a key of `keys` given twice, an integer of more than 15 digits, a number beyond
 * JSON's grammar (leading zeros, '+', '.5', '1.', hex) or one g_ascii_strtod reports out of
 * range (1e400, 1e-400, subnormals), a fraction or an exponent of 19 digits or more (leading
 * zeros aside: sched_json_precheck reads those digits as an integer and refuses the line), a
 * missing or trailing comma, trailing text.
 *
 * Values: what json-glib's value becomes once the trace reader has printed it and read it back
 * with g_ascii_strtod: an integer (json-glib's int64) is exact (at most 15 digits), "-0" gives
 * +0 as the int64 0 does; any other number is the correctly rounded double of its decimal text
 * (Clinger's fast path, W. D. Clinger, "How to read floating point numbers accurately", PLDI
 * 1990: at most 15 significant digits and a power of ten up to 10^22 are both exact doubles, so
 * one multiplication or division rounds correctly; otherwise g_ascii_strtod of the text), which
 * is json-glib's double, and g_ascii_dtostr prints a double so that it reads back unchanged.
 * tests/src/input/test-request-line.c checks this against json-glib line by line.
 *
 * Costs: O(line) time, no allocation; the line is only read.
 */
#ifndef SRC_REQUEST_LINE_H
#define SRC_REQUEST_LINE_H

#include <glib.h>
#include <stdbool.h>

#define REQUEST_LINE_MAX_KEYS 8

/* Reads `line` (NUL-terminated) as above: the value of keys[k] (k < n <= REQUEST_LINE_MAX_KEYS)
 * into v[k] with has[k] true, has[k] false when absent; other keys are skipped. False when the
 * line is not of that shape (v and has are then unspecified). */
bool request_line_read(const char *line, const char *const *keys, guint n, double *v, bool *has);

#endif
