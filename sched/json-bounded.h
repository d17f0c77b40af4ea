/* sched/json-bounded.h — the one way ranksim parses JSON text: json-glib behind a nesting limit.
 *
 * json-glib's parser recurses once per nesting level, so 100,000 opening brackets (200 KB) in a
 * config.json, a request trace line, a --compilation-config value or a stored diagnosis
 * overflow the stack. Every JSON entry point (model configs, the catalog, request traces, vLLM
 * arguments, stored details and reports, Inspector exports) goes through sched_json_load or
 * sched_json_from_string, which first scan the text once (O(len), no allocation) and refuse it
 * when an integer is beyond int64 (json-glib would change it silently) or a bracket opens
 * deeper than SCHED_JSON_MAX_DEPTH, the YAML reader's limit
 * (src/input/yamldoc.h YAMLDOC_MAX_DEPTH): no document ranksim reads nests a tenth as deep.
 *
 * Failure: a JSON_PARSER_ERROR worded as json-glib words its own, "<data>:LINE:COL: Parse
 * error: ...", so callers that rename "<data>" keep working; always one line (json-glib's
 * own messages quote the input, newlines included: those are escaped).
 * Lives in sched/, the lowest layer that parses JSON (sched/diagnose-detail.c), so model/ and
 * every wing of src/ can share it.
 */
#ifndef SCHED_JSON_BOUNDED_H
#define SCHED_JSON_BOUNDED_H

#include <json-glib/json-glib.h>
#include <stdbool.h>

#define SCHED_JSON_MAX_DEPTH 64 /* arrays and objects, one inside another (YAMLDOC_MAX_DEPTH) */

/* Whether `text` (`len` bytes, -1: NUL-terminated) nests no deeper than SCHED_JSON_MAX_DEPTH,
 * counting brackets outside strings, and holds no integer beyond int64 (json-glib reads
 * 99999999999999999999999 as -1 without a word; a float such as 1e23 is fine). Returns false
 * with the error at the first bracket too deep or the first such integer. Malformed text is
 * left to the parser. */
bool sched_json_precheck(const char *text, gssize len, GError **error);

/* json_parser_load_from_data after the precheck. Same contract otherwise. */
bool sched_json_load(JsonParser *parser, const char *text, gssize len, GError **error);

/* json_from_string after the precheck: the root (caller frees) or NULL with the error (an
 * empty text gives NULL without an error, as json_from_string does). */
JsonNode *sched_json_from_string(const char *text, GError **error);

#endif
